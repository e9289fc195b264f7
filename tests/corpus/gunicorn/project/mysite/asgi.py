"""The project's ASGI entry point, beside its WSGI one."""


class Handler:
    async def __call__(self, scope, receive, send):
        pass


application = Handler()

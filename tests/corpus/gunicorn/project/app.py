"""A Flask-shaped app module: an app factory (`app:create_app()`) and a module-level `app`."""

import os


def create_app(config_name="production"):
    def app(environ, start_response):
        body = f"{config_name} {environ['PATH_INFO']} pid={os.getpid()}".encode()
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    return app


app = create_app()

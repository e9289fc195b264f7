"""S13 app: Django (the `s13django` project) as a WSGI callable, `s13_django:app`. `/hello`
answers without Django (every server's readiness probe); everything else is Django's."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "s13django.settings")

from django.core.wsgi import get_wsgi_application  # noqa: E402

_django = get_wsgi_application()


def app(environ, start_response):
    if environ.get("PATH_INFO") == "/hello":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        return [b"hello"]
    return _django(environ, start_response)

"""A Django app configured with a database, never connected to: what `--threads auto` decides
from (python/sluicegate/thread_bounds.py). ``SGTEST_DJANGO_DB`` picks the database:
``postgresql`` (one connection per thread), ``pool`` (PostgreSQL through Django's connection
pool), ``sqlite``. ``GET /`` answers ``django ok`` without touching the database.
"""

import os

from django.conf import settings

_KIND = os.environ.get("SGTEST_DJANGO_DB", "postgresql")
_DATABASES = {
    "postgresql": {"ENGINE": "django.db.backends.postgresql", "NAME": "never_used"},
    "pool": {"ENGINE": "django.db.backends.postgresql", "NAME": "never_used",
             "OPTIONS": {"pool": True}},
    "sqlite": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
}

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="sluicegate-tests-not-secret",
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["*"],
        MIDDLEWARE=[],
        INSTALLED_APPS=[],
        DATABASES={"default": _DATABASES[_KIND]},
    )

import django  # noqa: E402

django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402


def index(request):
    return HttpResponse(b"django ok", content_type="text/plain")


urlpatterns = [path("", index)]

app = get_wsgi_application()

"""A Django site as deployed, configured in this one module: the admin with sessions,
authentication, messages and CSRF protection, over a SQLite database in the server's state
directory (migrated, with one superuser, when the module is imported). For the framework tests
over HTTP/2 (tests/test_frameworks_http2.py):

- ``/admin/``            Django's admin (``admin`` / ``ADMIN_PASSWORD``); its login form
                         carries ``csrfmiddlewaretoken`` and sets the ``csrftoken`` cookie;
- ``POST /upload``       multipart field ``file``: read whole by Django (a temporary file past
                         2.5 MB) → JSON {size, sha256} of what the app read (CSRF-exempt: an
                         API endpoint);
- ``GET /events?name=G`` server-sent events from a StreamingHttpResponse: one event, then it
                         waits for the test's gate G, then a second one.
"""

import hashlib
import os

from django.conf import settings

from tests.apps._state import STATE_DIR, wait_gate

ADMIN_PASSWORD = "not-a-secret-pass"

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="sluicegate-tests-not-secret",
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["*"],
        INSTALLED_APPS=[
            "django.contrib.admin",
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "django.contrib.messages",
        ],
        MIDDLEWARE=[
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "django.contrib.messages.middleware.MessageMiddleware",
        ],
        TEMPLATES=[{
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "APP_DIRS": True,
            "OPTIONS": {"context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]},
        }],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                               "NAME": os.path.join(STATE_DIR, "django_site.sqlite3")}},
        # A fast hasher: the tests log in, they do not measure password hashing.
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        STATIC_URL="/static/",
        USE_TZ=True,
    )

import django  # noqa: E402

django.setup()

from django.contrib import admin  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import JsonResponse, StreamingHttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402
from django.views.decorators.http import require_GET, require_POST  # noqa: E402

call_command("migrate", verbosity=0, interactive=False)
if not get_user_model().objects.filter(username="admin").exists():
    get_user_model().objects.create_superuser("admin", "admin@example.org", ADMIN_PASSWORD)


@csrf_exempt
@require_POST
def upload(request):
    f = request.FILES["file"]
    digest, size = hashlib.sha256(), 0
    for block in f.chunks():
        digest.update(block)
        size += len(block)
    return JsonResponse({"size": size, "sha256": digest.hexdigest()})


@require_GET
def events(request):
    name = request.GET["name"]

    def stream():
        yield "data: one\n\n"
        wait_gate(name)
        yield "data: two\n\n"
    response = StreamingHttpResponse(stream(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    return response


urlpatterns = [
    path("admin/", admin.site.urls),
    path("upload", upload),
    path("events", events),
]

app = get_wsgi_application()

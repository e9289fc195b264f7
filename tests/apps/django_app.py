"""A real Django app configured in this one module (settings.configure(), no project
directory), with the same routes as flask_app.py:

- ``POST /form``      urlencoded fields → JSON object of the fields
- ``POST /upload``    multipart field ``file`` (+ ``note``) → JSON {name, size, sha256, note}
- ``POST /json``      JSON body → JSON {"received": body, "sum": sum(body["numbers"])}
- ``GET /redirect``   302 to ``/target``; ``GET /target`` → ``target reached``
- ``GET /set-cookie`` sets ``flavour=oatmeal``; ``GET /read-cookie`` → ``flavour=<value>``
- ``GET /stream?n=N`` StreamingHttpResponse of N chunks ``chunk i of N\\n``

CSRF protection is left out of MIDDLEWARE: these are API-style endpoints driven by test clients.
"""

import hashlib
import json

from django.conf import settings

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="sluicegate-tests-not-secret",
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["*"],
        MIDDLEWARE=[],
        INSTALLED_APPS=[],
        DATABASES={},
        USE_TZ=True,
        # Uploads up to 2.5 MB stay in memory; larger ones go to a temp file: both fine.
    )

import django  # noqa: E402

django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import (HttpResponse, HttpResponseRedirect, JsonResponse,  # noqa: E402
                         StreamingHttpResponse)
from django.urls import path  # noqa: E402
from django.views.decorators.http import require_GET, require_POST  # noqa: E402


@require_POST
def form(request):
    return JsonResponse({k: v for k, v in request.POST.items()})


@require_POST
def upload(request):
    f = request.FILES["file"]
    data = f.read()
    return JsonResponse({"name": f.name, "size": len(data),
                         "sha256": hashlib.sha256(data).hexdigest(),
                         "note": request.POST.get("note")})


@require_POST
def json_echo(request):
    body = json.loads(request.body)
    return JsonResponse({"received": body, "sum": sum(body.get("numbers", []))})


@require_GET
def go(request):
    return HttpResponseRedirect("/target")


@require_GET
def target(request):
    return HttpResponse("target reached", content_type="text/plain")


@require_GET
def set_cookie(request):
    resp = HttpResponse("cookie set", content_type="text/plain")
    resp.set_cookie("flavour", "oatmeal")
    return resp


@require_GET
def read_cookie(request):
    return HttpResponse("flavour=" + request.COOKIES.get("flavour", "<none>"),
                        content_type="text/plain")


@require_GET
def stream(request):
    n = int(request.GET.get("n", "5"))
    return StreamingHttpResponse((f"chunk {i} of {n}\n" for i in range(n)),
                                 content_type="text/plain")


urlpatterns = [
    path("form", form),
    path("upload", upload),
    path("json", json_echo),
    path("redirect", go),
    path("target", target),
    path("set-cookie", set_cookie),
    path("read-cookie", read_cookie),
    path("stream", stream),
]

app = get_wsgi_application()

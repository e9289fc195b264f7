"""A reload whose code would answer 500 does not replace working workers: a Django
project's URLconf (and so every view module it imports) is imported before a worker says
ready, where Django imports it at the first request, so a syntax error in a view used to pass
`--reload` and HUP and turn every request into a 500; `--warmup PATH` calls any app once before
ready, reaching code no import reaches; `--django-checks` runs Django's system checks;
`--check-config` sees the broken view too. A real Django project in a temporary directory, real
inotify, real processes.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT
from tests.test_reload import wait_for_body, write

pytest.importorskip("django")

SETTINGS = """
SECRET_KEY = "not-secret"
ROOT_URLCONF = "mysite.urls"
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = []
MIDDLEWARE = []
DATABASES = {}
DEBUG = False
"""
URLS = """
from django.urls import path
from mysite import views
urlpatterns = [path("hello", views.hello)]
"""
VIEWS = """
from django.http import HttpResponse
def hello(request):
    return HttpResponse({body!r})
"""
WSGI = """
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
from django.core.wsgi import get_wsgi_application
application = get_wsgi_application()
"""


@pytest.fixture
def project(tmp_path):
    site = tmp_path / "mysite"
    site.mkdir()
    for name, text in (("__init__.py", ""), ("settings.py", SETTINGS), ("urls.py", URLS),
                       ("views.py", VIEWS.format(body="one")), ("wsgi.py", WSGI)):
        (site / name).write_text(textwrap.dedent(text))
    return tmp_path


def get_hello(srv):
    return srv.request("GET", "/hello").body


def test_a_syntax_error_in_a_django_view_is_caught_before_the_new_workers_serve(
        start_server, project):
    srv = start_server(None, "--reload", "mysite.wsgi", cwd=project)
    assert get_hello(srv) == b"one"
    mark = srv.log_mark()
    write(project / "mysite" / "views.py", "def hello(request)\n    return 1\n")
    srv.wait_log(r"Reload abandoned: the old workers keep serving", since=mark, timeout=30)
    log = srv.log_since(mark)
    assert "Django's URLconf does not import (ROOT_URLCONF 'mysite.urls'): SyntaxError" in log
    assert "views.py" in log
    assert get_hello(srv) == b"one"  # the old worker, not a 500
    write(project / "mysite" / "views.py", VIEWS.format(body="two"))
    wait_for_body_at(srv, b"two")


def wait_for_body_at(srv, expected):
    from tests.helpers import wait_for
    wait_for(lambda: get_hello(srv) == expected, f"/hello answering {expected!r}", 30,
             interval=0.05)


def test_the_same_holds_for_hup(start_server, project):
    srv = start_server(None, "--workers", "2", "mysite.wsgi", cwd=project)
    assert get_hello(srv) == b"one"
    (project / "mysite" / "views.py").write_text("def hello(request)\n    return 1\n")
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload abandoned: the old workers keep serving", since=mark, timeout=30)
    assert "SyntaxError" in srv.log_since(mark)
    assert get_hello(srv) == b"one"


def test_warmup_catches_what_only_a_request_reaches(start_server, tmp_path):
    """A view that imports inside its function: no import before ready reaches it; one
    warm-up request does, and a reload whose warm-up answers 500 is abandoned."""
    (tmp_path / "helper.py").write_text("WORD = b'one'\n")
    (tmp_path / "lazyapp.py").write_text(textwrap.dedent("""
        def app(environ, start_response):
            try:
                from helper import WORD
            except Exception:
                start_response("500 Internal Server Error", [("Content-Length", "0")])
                return [b""]
            start_response("200 OK", [("Content-Length", str(len(WORD)))])
            return [WORD]
    """))
    srv = start_server(None, "--reload", "--warmup", "/", "lazyapp:app", cwd=tmp_path)
    assert srv.request("GET", "/").body == b"one"
    mark = srv.log_mark()
    write(tmp_path / "helper.py", "WORD = b'two\n")  # a syntax error only a request imports
    srv.wait_log(r"Reload abandoned: the old workers keep serving", since=mark, timeout=30)
    assert "--warmup GET / answered 500 Internal Server Error" in srv.log_since(mark)
    assert srv.request("GET", "/").body == b"one"
    write(tmp_path / "helper.py", "WORD = b'two'\n")
    wait_for_body(srv, b"two")


def test_a_warmup_of_a_django_view_names_the_exception(start_server, project):
    (project / "mysite" / "views.py").write_text(textwrap.dedent("""
        from django.http import HttpResponse
        def hello(request):
            import missing_module_for_the_test
            return HttpResponse("never")
    """))
    r = check_config(project, "--warmup", "http://example.com/hello", "mysite.wsgi")
    assert r.returncode == 2
    assert r.stderr.startswith("sluicegate: error: --warmup GET /hello answered 500 Internal "
                               "Server Error: ModuleNotFoundError: No module named "
                               "'missing_module_for_the_test' (mysite/views.py, line 4)"), r.stderr


def test_check_config_imports_a_django_urlconf(project):
    (project / "mysite" / "views.py").write_text("def hello(request)\n    return 1\n")
    r = check_config(project, "mysite.wsgi")
    assert r.returncode == 2
    assert "Django's URLconf does not import (ROOT_URLCONF 'mysite.urls'): SyntaxError" in r.stderr


def test_django_checks_fail_the_boot_on_an_error(project):
    with open(project / "mysite" / "settings.py", "a") as f:
        f.write("STATICFILES_DIRS = 'not-a-list'\nINSTALLED_APPS = "
                "['django.contrib.staticfiles']\nSTATIC_URL = '/static/'\n")
    assert check_config(project, "mysite.wsgi").returncode == 0  # only with the option
    r = check_config(project, "--django-checks", "mysite.wsgi")
    assert r.returncode == 2
    assert "Django's system checks (--django-checks) found an error: " in r.stderr, r.stderr
    assert "STATICFILES_DIRS" in r.stderr


def check_config(cwd, *args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "sluicegate", "--check-config", *args],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=60)

"""What a process checks in its freshly imported app before it says it is ready, so that code
which imports but would answer 500 never replaces working workers.

Importing the app is not enough for Django: `get_wsgi_application()` sets Django up but imports
neither the URLconf nor the views, which Django imports at the first request. A syntax error in
a view passed a reload, and every request then got a 500. So:

- a Django app (Django set up in this process): its URLconf is imported (`ROOT_URLCONF` and
  every URLconf it `include()`s, so every view module they import), before ready, always;
- `--django-checks`: Django's system checks too (`manage.py check`): an error fails the boot;
- `--warmup PATH`: any app is called once with `GET PATH`, in the process (no socket): an
  exception or a status of 500 or more fails the boot. It reaches code the imports do not
  (a view that imports inside its function, a template, a database).

A failure is a `LoadError` with one line, as an app that does not import: a worker's boot
fails (the first workers: exit 3; a reload: abandoned, the old workers keep serving; a
replacement: retried). What none of this sees: code only some requests reach.
"""

from __future__ import annotations

import io
import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, List, Optional, Tuple

from .errors import LoadError, one_line

#: The User-Agent of the warm-up request, so that the app's own logs can tell it apart.
WARMUP_AGENT = "sluicegate-warmup"


def check(app: Callable[..., Any], warmup: str = "", django_checks: bool = False) -> None:
    """Raise LoadError if `app` is not fit to serve (see the module doc)."""
    if _django_ready():
        _django_urlconf()
        if django_checks:
            _django_system_checks()
    if warmup:
        _warm_up(app, warmup)


def _describe(e: BaseException) -> str:
    text = one_line(str(e))
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _django_ready() -> bool:
    """Django was set up in this process (`django.setup()`, as `get_wsgi_application()` does)."""
    apps = sys.modules.get("django.apps")
    conf = sys.modules.get("django.conf")
    return bool(apps and conf and conf.settings.configured and apps.apps.ready)


def _django_urlconf() -> None:
    from django.conf import settings
    from django.urls import get_resolver

    urlconf = getattr(settings, "ROOT_URLCONF", None)
    if not urlconf:
        return
    try:
        resolver = get_resolver()
        _walk(resolver.url_patterns)  # imports ROOT_URLCONF; include() imports the others
    except Exception as e:
        raise LoadError(f"Django's URLconf does not import (ROOT_URLCONF {urlconf!r}): "
                        f"{_describe(e)}{_where(e)}") from e


def _walk(patterns: List[Any]) -> None:
    """Every included URLconf's patterns read (a lazily given one is imported now)."""
    for p in patterns:
        nested = getattr(p, "url_patterns", None)
        if nested is not None:
            _walk(nested)


def _django_system_checks() -> None:
    from django.core import checks

    try:
        messages = checks.run_checks(include_deployment_checks=False)
    except Exception as e:
        raise LoadError(f"Django's system checks raised {_describe(e)}{_where(e)}") from e
    errors = [m for m in messages if m.is_serious() and not m.is_silenced()]
    if errors:
        more = f" (and {len(errors) - 1} more: manage.py check)" if len(errors) > 1 else ""
        raise LoadError(f"Django's system checks (--django-checks) found an error: "
                        f"{one_line(str(errors[0]))}{more}")


def _where(e: BaseException) -> str:
    """` (file.py, line N)` of the innermost frame; a SyntaxError's message says it."""
    if isinstance(e, SyntaxError):
        return ""
    tb = e.__traceback__
    last: Optional[Tuple[str, int]] = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        here = name.startswith(os.getcwd() + os.sep)
        last = (os.path.relpath(name) if here else name, tb.tb_lineno)
        tb = tb.tb_next
    return f" ({last[0]}, line {last[1]})" if last else ""


def _warm_up(app: Callable[..., Any], target: str) -> None:
    from urllib.parse import unquote  # only with --warmup

    host = "localhost"
    if "://" in target:
        scheme, rest = target.split("://", 1)
        host, _, path = rest.partition("/")
        path = "/" + path
    else:
        scheme, path = "http", target
    path_part, _, query = path.partition("?")
    name, _, port = host.partition(":")
    environ = {
        "REQUEST_METHOD": "GET", "SCRIPT_NAME": "", "PATH_INFO": unquote(path_part,
                                                                          "latin-1"),
        "QUERY_STRING": query, "SERVER_NAME": name,
        "SERVER_PORT": port or ("443" if scheme == "https" else "80"),
        "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": host,
        "HTTP_USER_AGENT": WARMUP_AGENT, "wsgi.version": (1, 0), "wsgi.url_scheme": scheme,
        "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
        "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    status: List[str] = []
    raised: List[BaseException] = []  # what Django turned into its 500, to be named here
    receiver = None
    if _django_ready():
        from django.core.signals import got_request_exception

        def receiver(sender: Any, request: Any = None, **kwargs: Any) -> None:
            raised.append(sys.exc_info()[1] or RuntimeError("unknown"))

        got_request_exception.connect(receiver, weak=False)

    def start_response(s: str, headers: Any, exc_info: Any = None) -> Callable[[bytes], None]:
        status[:] = [s]
        return lambda data: None

    try:
        body = app(environ, start_response)
        try:
            for _ in body:
                pass
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
    except Exception as e:
        raise LoadError(f"--warmup GET {path}: the app raised {_describe(e)}{_where(e)}") from e
    finally:
        if receiver is not None:
            got_request_exception.disconnect(receiver)
    code = int(status[0].split()[0]) if status and status[0][:3].isdigit() else 500
    if code >= 500:
        why = f": {_describe(raised[0])}{_where(raised[0])}" if raised else ""
        raise LoadError(f"--warmup GET {path} answered "
                        f"{status[0] if status else 'nothing'}{why}")

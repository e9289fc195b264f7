"""Telling an ASGI app or an ASGI worker class apart from a WSGI one, so that either is refused
at start (and by --check-config) with what to run instead, rather than served as 500s.

sluicegate serves WSGI apps. A gunicorn deployment of an ASGI app names an ASGI worker class
(`uvicorn.workers.UvicornWorker`, `uvicorn_worker.UvicornWorker`, gunicorn's own `asgi`, or a
project's subclass of one, such as a `ConfigurableWorker(UvicornWorker)`) and an ASGI app
(`myproject.asgi:application`, a Starlette/FastAPI/Quart app): `async def __call__(scope,
receive, send)`, which called as `app(environ, start_response)` returns a coroutine.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Optional

from . import call_shape

#: Worker classes that run ASGI apps, by the names gunicorn configurations give them.
ASGI_WORKER_CLASSES = (
    "asgi", "gunicorn.workers.gasgi.ASGIWorker", "egg:gunicorn#asgi",
    "uvicorn.workers.UvicornWorker", "uvicorn.workers.UvicornH11Worker",
    "uvicorn_worker.UvicornWorker", "uvicorn_worker.UvicornH11Worker",
)

#: Modules whose worker classes (and their subclasses) run ASGI apps.
ASGI_WORKER_MODULES = ("uvicorn", "uvicorn_worker", "gunicorn.workers.gasgi")

INSTEAD = ("sluicegate serves WSGI apps only: serve the project's WSGI app instead (Django: "
           "PROJECT.wsgi:application; Flask is WSGI) and leave worker_class out, or keep "
           "serving the ASGI app with an ASGI server (uvicorn APP --workers N)")


def _from_asgi_module(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in ASGI_WORKER_MODULES)


def worker_class_refusal(name: str) -> Optional[str]:
    """Why `name` (gunicorn's worker_class / -k) is refused if it runs ASGI apps, else None.
    A project's own class is imported to look at its bases; one that cannot be imported for
    want of uvicorn is one too; one that cannot be imported otherwise is not judged here."""
    text = name.strip()
    if text in ASGI_WORKER_CLASSES:
        return f"worker_class {text!r} runs ASGI apps; {INSTEAD}"
    module, dot, attr = text.rpartition(".")
    if not dot or not module:
        return None
    if _from_asgi_module(module):
        return f"worker_class {text!r} runs ASGI apps; {INSTEAD}"
    if module.startswith("gunicorn."):
        return None
    try:
        cls = getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:
        if _from_asgi_module(e.name or ""):
            return (f"worker_class {text!r} imports {e.name}, an ASGI server (its worker runs "
                    f"ASGI apps); {INSTEAD}")
        return None
    except Exception:
        return None
    for base in getattr(cls, "__mro__", ())[1:]:
        qualified = f"{base.__module__}.{base.__qualname__}"
        if _from_asgi_module(base.__module__) and "Worker" in base.__qualname__:
            return (f"worker_class {text!r} is a subclass of {qualified}, which runs ASGI apps; "
                    f"{INSTEAD}")
    return None


def refuse_asgi_worker_class(name: str) -> None:
    """ValueError with `worker_class_refusal`'s reason if `name` runs ASGI apps."""
    why = worker_class_refusal(name)
    if why:
        raise ValueError(why)


def is_asgi_app(obj: Any) -> bool:
    """`obj` is called as an ASGI app: a coroutine function, or an object whose __call__ is
    one or takes (scope, receive, send). A plain function is read from its code
    (call_shape.py), anything else by inspect."""
    plain = call_shape.asgi_names(obj)
    if plain is not None:
        return plain
    import inspect

    if inspect.iscoroutinefunction(obj):
        return True
    call = getattr(type(obj), "__call__", None) if not inspect.isroutine(obj) else None
    if call is not None and inspect.iscoroutinefunction(call):
        return True
    try:
        names = list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return False
    return names[:3] == ["scope", "receive", "send"]


def app_refusal(obj: Any, spec: str) -> Optional[str]:
    """Why the app named `spec` is refused if it is an ASGI app, else None."""
    if not is_asgi_app(obj):
        return None
    module = spec.partition(":")[0]
    hint = ""
    if module.endswith(".asgi") or module == "asgi":
        wsgi = module[:-len("asgi")] + "wsgi"
        hint = f" (a Django project's WSGI app is {wsgi}:application)"
    return (f"{spec!r} is an ASGI app (called as app(scope, receive, send)); sluicegate serves "
            f"WSGI apps only: give it the project's WSGI app{hint}, or serve this one with an "
            f"ASGI server (uvicorn {spec})")


__all__ = ["ASGI_WORKER_CLASSES", "worker_class_refusal", "refuse_asgi_worker_class",
           "is_asgi_app", "app_refusal"]

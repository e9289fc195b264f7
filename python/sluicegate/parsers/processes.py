"""Parsers of what runs: the app, the workers and their threads, the scheduler, the warm-up
request, shell commands beside the server (side_commands.py runs them), the hooks module
and the Python path.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Optional, Tuple, Union

from ..allowed_values import ALLOWED, spelled
from ..asgi import refuse_asgi_worker_class
from ..hook_types import Hooks
from ..side_commands import parse_smart
from ..syspath import directories
from .values import _MAX_COUNT, _int, parse_str


def parse_app(value: object) -> Union[str, Callable[..., Any]]:
    """`MODULE:APP` (checked by the loader), or, through serve(), the WSGI callable itself."""
    if callable(value) and not isinstance(value, str):
        return value
    text = parse_str(value).strip()
    if not text:
        raise ValueError("expected MODULE:APP, e.g. myproject.wsgi:application")
    return text


def parse_workers(value: object) -> Optional[int]:
    """N >= 1 worker processes under a master, `auto` for the CPUs this process may use: its
    cgroup's CPU quota rounded up, at most the CPUs of its affinity (a cpuset), at least one
    (`_core.cpu_allowance`); None (unset): one process, no master."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        from .. import _core  # the allowance is read in one place, the Rust core
        return int(_core.cpu_allowance()["workers"])
    n = _int(value, "N or auto")
    if not 1 <= n <= 1024:
        raise ValueError("must be between 1 and 1024")
    return n


#: gunicorn worker classes that mean what every sluicegate process does.
THREADED_WORKER_CLASSES = ("sync", "gthread", "gunicorn.workers.sync.SyncWorker",
                           "gunicorn.workers.gthread.ThreadWorker")


def parse_worker_class(value: object) -> str:
    text = parse_str(value).strip()
    refuse_asgi_worker_class(text)  # ValueError: it runs ASGI apps (what to run instead)
    if text not in THREADED_WORKER_CLASSES:
        raise ValueError(
            "sluicegate has only its own workers (an event loop and an elastic thread pool, "
            "what gunicorn's sync and gthread name): leave -k out"
        )
    return text


def parse_threads(value: object) -> Optional[Tuple[int, int]]:
    """`MIN:MAX`, or a single `N` meaning `1:N`; MIN >= 0, MAX >= 1, MIN <= MAX. `auto` (or
    None) is None: the bounds are chosen once the app is loaded (see thread_bounds.py)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError("expected (MIN, MAX)")
        low, high = _int(value[0], "MIN:MAX"), _int(value[1], "MIN:MAX")
    elif isinstance(value, str) and ":" in value:
        low_text, _, high_text = value.partition(":")
        low, high = _int(low_text, "MIN:MAX or N"), _int(high_text, "MIN:MAX or N")
    else:
        low, high = 1, _int(value, "MIN:MAX or N")
        low = min(low, high)  # "--threads 0" is refused below for MAX, not for MIN > MAX
    if low < 0:
        raise ValueError("MIN must be 0 or more")
    if high < 1:
        raise ValueError("MAX must be at least 1")
    if high > _MAX_COUNT:
        raise ValueError("MAX is too large")
    if low > high:
        raise ValueError(f"MIN ({low}) is larger than MAX ({high})")
    return (low, high)


def _one_of(option: str, value: object) -> str:
    """One of `option`'s names in allowed_values.txt, any case."""
    text = parse_str(value).strip().lower()
    if text not in ALLOWED[option]:
        raise ValueError(f"expected one of {', '.join(ALLOWED[option])}")
    return text


def parse_scheduler(value: object) -> str:
    return _one_of("scheduler", value)


def parse_spin(value: object) -> str:
    return _one_of("spin", value)


def parse_pace(value: object) -> str:
    return _one_of("pace", value)


def parse_start_gate(value: object) -> str:
    return _one_of("start_gate", value)


def parse_warmup(value: object) -> str:
    """'' (off), an absolute path (/healthz, a query allowed), or http://HOST/PATH to give the
    request a Host the app accepts (Django's ALLOWED_HOSTS)."""
    text = parse_str(value).strip()
    if not text:
        return ""
    rest = text.split("://", 1)[1] if text.startswith(("http://", "https://")) else ""
    path = ("/" + rest.split("/", 1)[1]) if "/" in rest else ("/" if rest else text)
    if not path.startswith("/") or (rest and not rest.split("/", 1)[0]):
        raise ValueError("expected a path such as /healthz, or http://HOST/PATH")
    if any(ord(c) <= 32 or c in "#\x7f" for c in text) or not text.isascii():
        raise ValueError("must be a plain ASCII path: no spaces, controls or '#'")
    return text


def parse_command(value: object) -> str:
    """A shell command: any non-empty text."""
    if not isinstance(value, str):
        raise ValueError(f"expected a command, not {type(value).__name__}")
    if not value.strip():
        raise ValueError("expected a command, not an empty string")
    if "\0" in value:
        raise ValueError("a command cannot contain NUL")
    return value.strip()


def parse_smart_command(value: object) -> str:
    """`PIDFILE COMMAND`, checked, kept as written (side_commands.py splits it)."""
    text = parse_command(value)
    parse_smart(text)
    return text


def parse_on_term(value: object) -> str:
    if not isinstance(value, str) or value.strip().lower() not in ALLOWED["on_term"]:
        raise ValueError(f"expected {spelled(ALLOWED['on_term'])}")
    return value.strip().lower()


def parse_hooks(value: object) -> Optional[Hooks]:
    """The `hooks` option: a module name or .py path, a mapping of name -> function, or a
    Hooks; '' or None: none. Raises ValueError with a one-line reason."""
    if value is None or value == "":
        return None
    if isinstance(value, Hooks):
        return value
    if isinstance(value, str):
        return Hooks(value.strip())
    if isinstance(value, Mapping):
        from ..hooks import from_mapping  # a mapping's functions are checked by hooks.py

        return from_mapping(value, "hooks=")
    raise ValueError(f"expected a module name or a mapping of hook functions, not "
                     f"{type(value).__name__}")


def parse_pythonpath(value: object) -> Optional[str]:
    """The `pythonpath` option: directories separated by commas (a list is joined); '' or None:
    none."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    if not isinstance(value, str):
        raise ValueError(f"expected directories separated by commas, not {type(value).__name__}")
    return ",".join(directories(value)) or None

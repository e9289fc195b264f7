"""What a process holding a Config needs of gunicorn's hooks when it runs none: `Hooks`, the
`hooks` option's value (validated.py's field type), the hooks' names gunicorn's settings are
checked against, and the two errors a hook's run raises through the server, with the status
of a hook's sys.exit(). hooks.py, which runs the hooks, is imported where hooks are set: a
server without them never loads it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Tuple

from . import records
from .errors import StartError

#: gunicorn's hooks that sluicegate runs, and where (see docs/operations.md, "Hooks").
SUPPORTED = (
    "on_starting", "when_ready", "on_reload", "pre_fork", "post_fork", "post_worker_init",
    "worker_int", "worker_exit", "child_exit", "nworkers_changed", "pre_exec", "pre_request",
    "post_request", "on_exit",
)

#: gunicorn's hooks sluicegate does not run, and why.
UNSUPPORTED = {
    "worker_abort": "not run: sluicegate does not SIGABRT a worker (--timeout does not kill)",
    "ssl_context": "not run: TLS is rustls in the Rust core, set with --certfile and friends",
}


class HookFailed(StartError):
    """A post_fork or post_worker_init hook raised: the worker does not boot."""


class HookExit(StartError):
    """A hook of hooks.EXITS called sys.exit(): the server stops with `exit_code` (already
    logged)."""

    def __init__(self, name: str, code: object) -> None:
        super().__init__(f"hook {name}() called sys.exit({code!r})")
        self.hook = name
        self.exit_code = exit_status(code)


def exit_status(code: object) -> int:
    """The process status of sys.exit(code), as the interpreter turns it into one."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    return 1


@records.record(frozen=True, eq=False)
class Hooks:
    """The hooks' source as given (a module name or .py path, or where a mapping came from),
    and the functions once known (a mapping's, at once; a module's, by `resolve`)."""

    source: str
    functions: Tuple[Tuple[str, Callable[..., Any]], ...] = ()
    is_module: bool = True

    def _key(self) -> Tuple[Any, ...]:
        # A gunicorn file read again on HUP gives new function objects with the same code:
        # the same hooks (no "configuration re-read (changed: hooks)" for an unchanged file).
        return (self.source, self.is_module,
                tuple((n, getattr(f, "__code__", f)) for n, f in self.functions))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hooks) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.source, self.is_module, tuple(n for n, _ in self.functions)))

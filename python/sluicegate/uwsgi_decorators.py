"""`uwsgidecorators`, the helper module uWSGI ships (uwsgidecorators.py), as sluicegate gives
it under `--uwsgi-module` (installed by uwsgi_module.install as `uwsgidecorators`).

Working as in uWSGI: `@postfork` (and `@postfork(WID)`, one worker only), chained on
`uwsgi.post_fork_hook`, which each worker runs after the app is loaded and before its first
request; `@thread` (the call runs in a daemon thread). Every other decorator (`@spool`,
`@spoolforever`, `@spoolraw`, `@mulefunc`, `@mule`, `@muleloop`, `@mulemsg`, `@farm`, `@rpc`,
`@signal`, `@timer`, `@rbtimer`, `@cron`, `@filemon`, `@lock`, `@harakiri`, `@erlang`...)
raises `UwsgiUnsupported` naming the uWSGI feature when it is applied, which is when the app
module is imported: an app that needs one fails at its start, not at a later request.
"""

from __future__ import annotations

import types

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List

from . import thread_names

#: uwsgidecorators' names sluicegate does not provide, and the feature each belongs to.
REFUSED: Dict[str, str] = {
    "spool": "the spooler", "spoolforever": "the spooler", "spoolraw": "the spooler",
    "spool_decorate": "the spooler", "mulefunc": "mules", "mule": "mules",
    "muleloop": "mules", "mulemsg": "mules", "mulemsg_loop": "mules", "mule_brain": "mules",
    "mule_brainloop": "mules", "farm": "mule farms", "farm_loop": "mule farms",
    "rpc": "RPC", "signal": "the signal framework", "timer": "the signal framework (timers)",
    "rbtimer": "the signal framework (timers)", "cron": "the signal framework (cron)",
    "filemon": "the signal framework (file monitors)", "lock": "uWSGI locks",
    "harakiri": "per-call harakiri", "erlang": "the Erlang bridge",
    "get_free_signal": "the signal framework",
}


def build_module(uwsgi: types.ModuleType) -> types.ModuleType:
    """The `uwsgidecorators` module over the given `uwsgi` module."""
    module = types.ModuleType("uwsgidecorators", "uWSGI's decorators, as sluicegate provides "
                              "them (sluicegate.uwsgi_decorators)")
    chain: List[Any] = []

    def postfork_chain_hook() -> None:
        for f in chain:
            f()

    class postfork:  # noqa: N801 (uWSGI's name)
        """Run the function in each worker after it starts (or in worker WID only)."""

        def __init__(self, f: Any) -> None:
            if callable(f):
                self.wid = 0
                self.f: Any = f
            else:
                self.f = None
                self.wid = f
            chain.append(self)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            if self.f:
                if self.wid > 0 and self.wid != uwsgi.worker_id():
                    return None
                return self.f()
            self.f = args[0]
            return self

    class thread:  # noqa: N801 (uWSGI's name)
        """Each call runs the function in a new daemon thread."""

        def __init__(self, f: Callable[..., Any]) -> None:
            self.f = f

        def __call__(self, *args: Any) -> Any:
            thread_names.start(lambda: self.f(*args), "sg-uwsgi-thread")
            return self.f

    uwsgi.post_fork_hook = postfork_chain_hook
    module.postfork = postfork  # type: ignore[attr-defined]
    module.postfork_chain = chain  # type: ignore[attr-defined]
    module.postfork_chain_hook = postfork_chain_hook  # type: ignore[attr-defined]
    module.thread = thread  # type: ignore[attr-defined]
    module.uwsgi = uwsgi  # type: ignore[attr-defined]
    for name, feature in REFUSED.items():
        setattr(module, name, _refusing(name, feature, uwsgi.UwsgiUnsupported))
    return module


def _refusing(name: str, feature: str, error: type) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise error(f"uwsgidecorators.{name}: {feature} is not supported by sluicegate "
                    "(docs/operations.md, 'Coming from uWSGI')")

    refuse.__name__ = name
    return refuse

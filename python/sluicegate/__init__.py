"""sluicegate: a WSGI HTTP server with a Rust core.

This package is the thin Python front: options (the table in options.py, resolved into a
`Config` by resolution.py), and the startup pipeline (supervisor.py) that binds the sockets
(listeners.py), loads the app (loader.py) and hands over to a role (single.py, master.py,
worker.py); the HTTP and WSGI work happens in the Rust extension `sluicegate._core`. From Python, `serve()` is the whole API (and `RequestTimeout`, the
exception `--timeout` raises inside an app call it ends: docs/operations.md):

    import sluicegate
    sluicegate.serve(app, bind="127.0.0.1:8080", threads="4:64")
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Union

#: The package's version: Cargo.toml's and pyproject.toml's, also the extension's
#: `_core.__version__` (tests/test_front_imports.py checks all four agree). Written out so that
#: a process that never loads the extension (a master: master.py) still knows it.
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`RequestTimeout`, the extension's class, looked up at its first use (PEP 562): a
    `--workers` master never loads the extension (master.py), its workers do."""
    if name != "RequestTimeout":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from ._core import RequestTimeout
    except ImportError:  # the extension is not built: a class of the same name

        class RequestTimeout(BaseException):  # type: ignore[no-redef]
            """Raised in an app call past --timeout (the extension's own class when built)."""

    globals()["RequestTimeout"] = RequestTimeout
    return RequestTimeout


__all__ = ["serve", "RequestTimeout", "__version__"]


def serve(app: Union[Callable[..., Any], str], **options: Any) -> None:
    """Serve the WSGI `app` (a callable, or a "module:app" string) until SIGTERM/SIGINT (or, in
    a thread other than the main one, until the process ends).

    `options` are the command-line options under their Python names (docs/options.md), e.g.
    `bind=["127.0.0.1:0", "unix:/tmp/app.sock"]` or `bind="127.0.0.1:8080"`,
    `threads="4:64"` or `threads=(4, 64)`, `header_timeout=5`, `limit_body="16M"`. Like the
    command line, an option not given is read from its SLUICEGATE_<NAME> environment variable,
    else defaults. An unknown option raises TypeError; a bad value raises OptionError (a
    ValueError); app loading and binding errors raise LoadError and BindError.
    """
    from .resolution import resolve
    from .supervisor import serve_config

    cfg = resolve({**options, "app": app})
    serve_config(cfg, __version__)

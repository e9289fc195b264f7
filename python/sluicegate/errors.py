"""The errors sluicegate reports to a user: one line each, never a traceback.

Every mistake a user can make (a bad option value, an app that does not import, an address that
is taken) raises one of these, each carrying a one-line message that names what to fix. The CLI
prints `sluicegate: error: <message>` and exits with `exit_code`; `serve()` lets them propagate.
They live in one module so that the CLI maps each kind to its exit code in one place.
"""

from __future__ import annotations


class SluicegateError(Exception):
    """A user-facing error whose str() is one line."""

    #: The CLI's exit status for this kind of error.
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class OptionError(SluicegateError, ValueError):
    """An option value that is malformed or out of range (a usage error: exit status 2)."""

    exit_code = 2


class LoadError(SluicegateError):
    """The WSGI application could not be imported, found, built or called."""


class BindError(SluicegateError):
    """A listening socket could not be opened (address in use, permission denied, ...)."""


class StartError(SluicegateError):
    """The server could not start for a reason outside the options, the app and the sockets
    (the Rust core is missing, the access log cannot be opened, ...)."""


def one_line(text: str) -> str:
    """Collapse `text` to a single line, so a message from a third party (an exception raised by
    the user's app, an OS error) cannot break the one-line error contract."""
    return " ".join(str(text).split())

"""The `sluicegate-uwsgi` command (also `python -m sluicegate.uwsgi_cli`): uWSGI's command line
and configuration files unchanged, with only the program's name replaced
(`uwsgi --ini app.ini` -> `sluicegate-uwsgi --ini app.ini`).

A command of its own rather than a subcommand or flags of `sluicegate`: uWSGI's short options
mean other things on sluicegate's gunicorn-style command line (`-w` is a module in uWSGI and
the workers in gunicorn, `-p` the processes and the pid file, `-b` the buffer size and the
bind address, `-s` a socket), so one command line cannot take both.

The path: uwsgi_config.resolve reads the command line, the files it names and the UWSGI_*
variables into the (option, value) pairs uWSGI would apply; uwsgi_options.py's table turns
them into sluicegate's options (one warning line per ignored option, one error line for a
refused one); then the same start as `sluicegate` (cli.run: validate, serve), with the same
one-line error contract. On HUP the files are read again, as uWSGI's reload reads them.

The resolution runs in a process of its own (`resolve_apart`: this command again, with
`RESOLVE_TO_FD`), which writes the result back in `marshal`'s format and exits: the modules that
read uWSGI's configurations (uwsgi_config*.py, uwsgi_options.py, uwsgi_convert.py, the uWSGI
option table: about 1.2 MB of resident memory) never load in the master, so no worker forked
from it carries them either. A result that cannot be written so, or a helper process that
cannot start, falls back to resolving here.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import __version__, syspath
from .cli import run
from .errors import OptionError, SluicegateError
from .resolution import Raw

#: `python -m sluicegate.uwsgi_cli RESOLVE_TO_FD FD ARGS...`: resolve ARGS, write the result to
#: descriptor FD (`resolve_apart`), and exit.
RESOLVE_TO_FD = "--sluicegate-resolve-to-fd"

USAGE = """usage: sluicegate-uwsgi [uWSGI's options and configuration files]

Serve a WSGI app with sluicegate, configured as uWSGI is: --ini FILE[:SECTION], --yaml,
--json, --xml, a file named by its extension, uWSGI's options and short options, UWSGI_*
variables. Each uWSGI option is done, ignored with a warning saying why, or refused saying
why: docs/uwsgi.md lists them. Signals are uWSGI 2.0's: TERM reloads unless die-on-term,
INT and QUIT stop, HUP reloads gracefully (docs/operations.md, "Coming from uWSGI")."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `sluicegate-uwsgi` console script."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == [RESOLVE_TO_FD] and len(args) >= 2 and args[1].isdigit():
        return write_resolution(int(args[1]), args[2:])
    if args in (["--help"], ["-h"]):
        print(USAGE)
        return 0
    if args == ["--version"]:
        print(f"sluicegate {__version__}")
        return 0
    syspath.at_start()
    try:
        pairs, first = resolve_apart(args)
    except SluicegateError as e:
        print(f"sluicegate: error: {e}", file=sys.stderr, flush=True)
        return e.exit_code
    if first.reexec:
        # The virtualenv (home) has sluicegate-uwsgi of its own: the start goes on there.
        os.execv(first.reexec, [first.reexec, *args])
    publish(pairs)
    state = {"given": first.given}

    def read_given() -> Dict[str, Raw]:
        """The first resolution at the start; the files as they are now on every HUP (and
        uwsgi.opt with them, for the new workers)."""
        given = state.pop("given", None)
        if given is not None:
            return given
        again, first = resolve_apart(args)
        given = first.given
        publish(again)
        return given

    return run(read_given, [sys.executable, "-m", "sluicegate.uwsgi_cli", *args])


class Given:
    """The sluicegate options of a resolved configuration, and the program to run instead
    when its virtualenv has sluicegate-uwsgi of its own."""

    def __init__(self, given: Dict[str, Raw], reexec: Optional[str]):
        self.given = given
        self.reexec = reexec


def resolved(args: List[str], environ: Mapping[str, str]) -> List[Tuple[str, str]]:
    """uWSGI's resolution of the command line, files and UWSGI_* variables (uwsgi_config.py)."""
    try:
        from . import uwsgi_config
    except ModuleNotFoundError as e:  # pragma: no cover - a build without the language
        if e.name != f"{__package__}.uwsgi_config":
            raise
        raise OptionError("this build cannot read uWSGI configurations (no uwsgi_config)")
    return list(uwsgi_config.resolve(args, environ))


def publish(pairs: Sequence[Tuple[str, str]]) -> None:
    """`uwsgi.opt` in the app: the resolved options (uwsgi_module.py keeps them in the
    environment, so the workers forked later have them)."""
    from . import uwsgi_module

    uwsgi_module.set_options(pairs)


def given_from(pairs: Sequence[Tuple[str, str]]) -> Given:
    """The table applied to the resolved pairs."""
    from .gunicorn_settings import Refused
    from .uwsgi_options import given_of, plan_of

    plan = plan_of(pairs)
    try:
        if plan.settle_virtualenv():  # that environment's own program reads the rest
            return Given({}, plan.reexec)
    except Refused as e:
        raise OptionError(f"uWSGI virtualenv: {e}") from None
    return Given(given_of(plan), None)


class ResolveError(SluicegateError):
    """An error the resolving process reported: its message and exit status."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def resolve_apart(args: List[str]) -> Tuple[List[Tuple[str, str]], Given]:
    """uWSGI's resolution and the table (`resolved`, `given_from`), run by a process of its own
    (the module's doc); here if that process gives no result."""
    r, w = os.pipe()
    try:
        os.set_inheritable(w, True)
        pid = os.posix_spawn(sys.executable, [sys.executable, "-m", "sluicegate.uwsgi_cli",
                                              RESOLVE_TO_FD, str(w), *args], dict(os.environ))
    except OSError:
        pid = 0
    finally:
        os.close(w)
    chunks = []
    with os.fdopen(r, "rb") as f:
        while pid and (chunk := f.read(65536)):
            chunks.append(chunk)
    if pid:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # on a HUP the master's loop may have reaped it first
            pass
    try:
        out: Any = marshal.loads(b"".join(chunks))
    except (ValueError, EOFError, TypeError, MemoryError, RecursionError):
        out = None
    if isinstance(out, tuple) and out[:1] == ("error",):
        raise ResolveError(out[1], out[2])
    if not (isinstance(out, tuple) and out[:1] == ("ok",)):
        pairs = resolved(args, os.environ)
        return pairs, given_from(pairs)
    _, pairs, given, reexec = out
    return pairs, Given({k: Raw(value, source) for k, (value, source) in given.items()}, reexec)


def write_resolution(fd: int, args: List[str]) -> int:
    """In the resolving process: the result on `fd` in `marshal`'s format (`("ok", pairs,
    given, reexec)` or `("error", message, exit status)`), which holds literals only (str, int,
    tuples, lists, dicts ...: an object of any other class, a subclass of str too, cannot be
    written); nothing if it has other values (the caller resolves then). marshal rather than
    `repr` and `ast.literal_eval`: ast would stay imported in the master, and in every worker
    forked from it (about 0.5 MB of resident memory each)."""
    syspath.at_start()
    try:
        pairs = resolved(args, os.environ)
        first = given_from(pairs)
        out: Tuple[Any, ...] = ("ok", pairs, {k: (r.value, r.source) for k, r in
                                                first.given.items()}, first.reexec)
    except SluicegateError as e:
        out = ("error", str(e), e.exit_code)
    try:
        data = marshal.dumps(out)
        if marshal.loads(data) != out:
            data = b""
    except (ValueError, MemoryError, RecursionError):
        data = b""
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())

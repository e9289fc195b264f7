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
refused one); resolution.py validates them into a Config; then the same start as `sluicegate`
(supervisor.start: serve), with the same one-line error contract. On HUP the files are read
again, as uWSGI's reload reads them.

The resolution and the validation run in a process of their own (`resolve_apart`:
uwsgi_resolve.py, which only that process imports), which writes the result back in
`marshal`'s format and exits: the modules that read uWSGI's configurations
(uwsgi_config*.py, uwsgi_options.py, uwsgi_convert.py, the uWSGI option table) and the options
table with its parsers (options*.py, parsers/, resolution.py, cli.py) never load in the
master, so no worker forked from it carries them either (about 0.5 MB of resident memory per
process for the table). A result that cannot be written so, or a helper process that cannot
start, falls back to resolving here; --print-config, --check-config and a Config holding
functions (gunicorn hooks) are validated here (cli.run).
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import __version__, syspath
from .errors import OptionError, SluicegateError
from .listeners import BindAddress
from .static_mount import StaticMount
from .supervisor import start
from .validated import Config

if TYPE_CHECKING:
    from .resolution import Raw

USAGE = """usage: sluicegate-uwsgi [uWSGI's options and configuration files]

Serve a WSGI app with sluicegate, configured as uWSGI is: --ini FILE[:SECTION], --yaml,
--json, --xml, a file named by its extension, uWSGI's options and short options, UWSGI_*
variables. Each uWSGI option is done, ignored with a warning saying why, or refused saying
why: docs/uwsgi.md lists them. Signals are uWSGI 2.0's: TERM reloads unless die-on-term,
INT and QUIT stop, HUP reloads gracefully (docs/operations.md, "Coming from uWSGI")."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `sluicegate-uwsgi` console script."""
    args = sys.argv[1:] if argv is None else list(argv)
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
    publish(pairs, first.options_text)
    restart = [sys.executable, "-m", "sluicegate.uwsgi_cli", *args]
    if first.config is None:  # not validated apart: validated here (cli.py), at HUP too
        return _run_validating_here(args, first, restart)
    state = {"config": first.config}

    def read_config() -> Config:
        """The first validated Config at the start; on every HUP the files as they are now,
        validated apart again (and uwsgi.opt with them, for the new workers)."""
        config = state.pop("config", None)
        if config is not None:
            return config
        again, given = resolve_apart(args)
        publish(again, given.options_text)
        if given.config is not None:
            return given.config
        from .resolution import raw_values, validate  # a Config that could not be sent

        return validate(raw_values(given.given))

    return start(read_config, __version__, restart)


def _run_validating_here(args: List[str], first: "Given", restart: List[str]) -> int:
    """cli.run over the resolved options: --print-config, --check-config, and a Config whose
    values cannot be sent (a hook's functions) are validated in this process."""
    from .cli import run

    state = {"given": first.given}

    def read_given() -> Dict[str, Raw]:
        """The first resolution at the start; the files as they are now on every HUP (and
        uwsgi.opt with them, for the new workers)."""
        given = state.pop("given", None)
        if given is not None:
            return given
        again, first = resolve_apart(args)
        given = first.given
        publish(again, first.options_text)
        return given

    return run(read_given, restart)


class Given:
    """The sluicegate options of a resolved configuration, the program to run instead when its
    virtualenv has sluicegate-uwsgi of its own, and the options validated (by the resolving
    process: `config_of`), or None; and `uwsgi.opt`'s environment text if that process wrote it
    (uwsgi_module.options_text)."""

    def __init__(self, given: Dict[str, Raw], reexec: Optional[str],
                 config: Optional[Config] = None, options_text: Optional[str] = None):
        self.given = given
        self.reexec = reexec
        self.config = config
        self.options_text = options_text


def resolved(args: List[str], environ: Mapping[str, str]) -> List[Tuple[str, str]]:
    """uWSGI's resolution of the command line, files and UWSGI_* variables (uwsgi_config.py)."""
    try:
        from . import uwsgi_config
    except ModuleNotFoundError as e:  # pragma: no cover - a build without the language
        if e.name != f"{__package__}.uwsgi_config":
            raise
        raise OptionError("this build cannot read uWSGI configurations (no uwsgi_config)")
    return list(uwsgi_config.resolve(args, environ))


def publish(pairs: Sequence[Tuple[str, str]], text: Optional[str] = None) -> None:
    """`uwsgi.opt` in the app: the resolved options (uwsgi_module.py keeps them in the
    environment, so the workers forked later have them); `text`, the environment's text the
    resolving process wrote (None: made here)."""
    from . import uwsgi_module

    uwsgi_module.set_options(pairs, text)


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
        pid = os.posix_spawn(sys.executable, [sys.executable, "-m", "sluicegate.uwsgi_resolve",
                                              str(w), *args], dict(os.environ))
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
    _, pairs, given, reexec, fields, text = out
    config = config_from(fields) if fields is not None else None
    if config is not None:
        return pairs, Given({}, reexec, config, text)
    from .resolution import Raw

    return pairs, Given({k: Raw(value, source) for k, (value, source) in given.items()}, reexec,
                        options_text=text)


#: The records a validated Config's values may be, by name (config_class.CLASSES): each is
#: sent as (RECORD, name, {field: value}) (uwsgi_resolve.fields_of). Hooks are not sent (their
#: values are functions).
RECORD = "\0record"
RECORDS = {"BindAddress": BindAddress, "StaticMount": StaticMount}


def config_from(fields: Any) -> Optional[Config]:
    """The Config `uwsgi_resolve.fields_of` wrote (None if `fields` is not such a mapping)."""
    if not isinstance(fields, dict):
        return None
    try:
        return Config(**{name: _value(v) for name, v in fields.items()})
    except (TypeError, KeyError, ValueError):
        return None


def _value(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 3 and value[0] == RECORD:
        return RECORDS[value[1]](**{k: _value(v) for k, v in value[2].items()})
    if isinstance(value, (tuple, list)):
        return type(value)(_value(v) for v in value)
    if isinstance(value, dict):
        return {_value(k): _value(v) for k, v in value.items()}
    return value


if __name__ == "__main__":
    sys.exit(main())

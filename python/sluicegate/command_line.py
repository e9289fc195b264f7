"""The command line: the argparse parser built from the options table (`build_parser`, and so
`--help`), with gunicorn's other flags answered by gunicorn_settings.py, and the raw values of
the options a command line gives (`from_command_line`, phase 1 of resolution.py for argv).
"""

from __future__ import annotations

import argparse
import difflib

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Dict, List, NoReturn, Optional, Sequence, Tuple

from . import gunicorn_settings
from .allowed_values import ALLOWED
from .errors import OptionError
from .option_row import ENV_PREFIX
from .options import BY_NAME, OPTIONS
from .resolution import Raw


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`sluicegate: error: ...`, exit status 2)
    instead of the usage text followed by the error."""

    def error(self, message: str) -> NoReturn:
        raise OptionError(f"{message} (see sluicegate --help)")


def build_parser(version: str = "") -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sluicegate",
        usage="sluicegate [OPTIONS] [MODULE:APP]",
        description="Serve a WSGI application over HTTP with sluicegate's Rust core.",
        epilog=(
            f"Every option can also be set with an environment variable {ENV_PREFIX}<NAME> "
            f"(e.g. {ENV_PREFIX}THREADS=4:64; several addresses comma-separated in "
            f"{ENV_PREFIX}BIND). The command line wins over the environment. "
            "Byte sizes take the suffixes k, M and G (powers of 1024). "
            "Signals: SIGTERM or SIGINT shut down gracefully; a second SIGINT stops at once. "
            "gunicorn's other flags (and $GUNICORN_CMD_ARGS) are taken too, each done, ignored "
            "with a warning saying why, or refused saying why: docs/options.md lists them."
        ),
        allow_abbrev=False,
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=32),
    )
    for o in OPTIONS:
        help_text = f"{o.help} [default: {o.shown_default}; env: {o.env}]".replace("%", "%%")
        if o.positional:
            parser.add_argument(
                o.name, nargs="?", metavar=o.metavar, default=argparse.SUPPRESS, help=help_text
            )
        else:
            if o.switch:
                parser.add_argument(
                    *([o.short] if o.short else []), o.flag, *o.aliases,
                    dest=o.name,
                    action="store_const",
                    const="true",
                    default=argparse.SUPPRESS,
                    help=help_text,
                )
                continue
            parser.add_argument(
                *([o.short] if o.short else []), o.flag, *o.aliases,
                dest=o.name,
                metavar=o.metavar,
                action="append" if o.repeatable else "store",
                default=argparse.SUPPRESS,
                help=help_text,
            )
    parser.add_argument(
        "--version", action="version", version=f"sluicegate {version}",
        help="Print sluicegate's version and exit.",
    )
    _add_gunicorn_flags(parser)
    return parser


#: The argparse destination of a gunicorn flag that is not a sluicegate option's.
_GUNICORN_DEST = "gunicorn."


def _add_gunicorn_flags(parser: argparse.ArgumentParser) -> None:
    """Every gunicorn flag that is not already a sluicegate option's spelling, answered by
    gunicorn_settings.py (kept out of --help; docs/options.md lists them with their answers)."""
    taken = set(all_flags())
    for s in gunicorn_settings.SETTINGS:
        flags = [f for f in s.flags if f not in taken]
        if not flags:
            continue
        dest = _GUNICORN_DEST + s.name
        if s.takes in (gunicorn_settings.SWITCH, gunicorn_settings.SWITCH_OFF):
            parser.add_argument(*flags, dest=dest, action="store_const",
                                const=s.takes == gunicorn_settings.SWITCH,
                                default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        else:
            parser.add_argument(*flags, dest=dest,
                                action="append" if s.takes == gunicorn_settings.LIST else "store",
                                default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def from_command_line(argv: Sequence[str], version: str = "", prefix: str = "") -> Dict[str, Raw]:
    """Phase 1 for the command line: only the options given, as written. An unknown option is
    named on its own, with the closest known flag (argparse alone would name it together with
    the arguments after it, the app path among them). `prefix` names where the words came
    from in messages (GUNICORN_CMD_ARGS)."""
    where = (prefix + " ") if prefix else ""
    parser = build_parser(version)
    argv, valued = _switch_values(list(argv))
    namespace, extra = parser.parse_known_args(argv)
    if extra:
        raise OptionError(where + unknown_argument(extra))
    given = {name: Raw(value, where + BY_NAME[name].flag) for name, value in vars(namespace).items()
             if not name.startswith(_GUNICORN_DEST)}
    for flag, value in valued.items():
        given[_SWITCH_VALUES[flag][0]] = Raw(value, where + flag)
    for dest, value in vars(namespace).items():
        if dest.startswith(_GUNICORN_DEST):
            setting = gunicorn_settings.BY_NAME[dest[len(_GUNICORN_DEST):]]
            flag = where + setting.flags[-1]
            for option, got in gunicorn_settings.options_of(setting, value, flag).items():
                # --paste names the app even beside a MODULE:APP, as in gunicorn.
                if option not in given or setting.name == "paste":
                    given[option] = Raw(got, flag)
    return given


#: Switches that may be followed by a value, each with its option and the words that are
#: taken as its value when they follow it (any other word is not: `--http3 myapp:app` still
#: names the app): gunicorn 27's `--proxy-protocol [MODE]`, and `--http3 [on|off]`, which
#: takes the words `--http2` takes for its two states (allowed_values.txt).
_SWITCH_VALUES: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "--proxy-protocol": ("proxy_protocol", ("off", "v1", "v2", "auto")),
    "--http3": ("http3", ALLOWED["http3"]),
}


def _switch_values(argv: List[str]) -> Tuple[List[str], Dict[str, str]]:
    """argv without the values given to the switches of `_SWITCH_VALUES` (`--flag VALUE` with
    one of its words, or `--flag=VALUE`), and those values by flag (the last one given). A
    flag alone stays a switch for argparse."""
    out: List[str] = []
    values: Dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        flag, eq, value = arg.partition("=")
        if flag in _SWITCH_VALUES and eq:
            values.pop(flag, None)
            values[flag] = value
        elif (arg in _SWITCH_VALUES and i + 1 < len(argv)
              and argv[i + 1] in _SWITCH_VALUES[arg][1]):
            values.pop(arg, None)
            values[arg] = argv[i + 1]
            i += 1
        else:
            if arg in _SWITCH_VALUES:
                values.pop(arg, None)  # the bare switch after a value: the switch wins
            out.append(arg)
        i += 1
    return out, values


def all_flags() -> List[str]:
    return [f for o in OPTIONS if not o.positional for f in o.flags] + ["--version", "--help"]


def unknown_argument(extra: Sequence[str]) -> str:
    """The error for what argparse could not place: the first unknown option, with a "did you
    mean" from the table, or else the second app path."""
    flags = all_flags()
    for arg in extra:
        if arg.startswith("-") and len(arg) > 1 and not arg[1:].replace(".", "").isdigit():
            name = arg.split("=", 1)[0]
            # Compared without the dashes, which every flag shares.
            bare = {f.lstrip("-"): f for f in flags}
            close = difflib.get_close_matches(name.lstrip("-"), bare, n=1, cutoff=0.6)
            hint = f"did you mean {bare[close[0]]}?" if close else "see sluicegate --help"
            return f"unknown option {name} ({hint})"
    return (f"unexpected argument {extra[0]!r}: give one MODULE:APP (see sluicegate --help)")


"""uWSGI 2.0's option names and its command line as glibc's getopt_long reads them.

The names, short letters, argument kinds and "immediate" flags come from
uwsgi_option_names.txt, generated from a real uWSGI build (its header says how), in uWSGI's own
order, followed by the options of the plugins that build does not embed (asyncio's, rack's ...,
known by their exact names, as in a uWSGI built with them). A short letter names the first
option that declares it (`-s` socket, `-p` processes, `-x` xmlconfig, `-i` single-interpreter). `parse_command_line` follows getopt_long as uWSGI
calls it (core/init.c `uwsgi_commandline_config`): options anywhere (arguments permuted), `--`
ends them, `--name=value`/`--name value`, unique prefixes of long names, clustered short
switches, `-p4`/`-p 4`, optional arguments only when attached; the rest are config files.
"""

from __future__ import annotations

import os
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

from .uwsgi_config_files import UwsgiConfigError

_DATA = os.path.join(os.path.dirname(__file__), "uwsgi_option_names.txt")


class OptionSpec(NamedTuple):
    """One uWSGI option: its argument kind ("required", "none", "optional"), its short letter
    ("" when none), whether uWSGI applies it the moment it is read, and whether it belongs to a
    plugin a pip-built uWSGI does not embed (such options are known by their exact name only)."""

    arg: str
    short: str
    immediate: bool
    other_plugin: bool


_KINDS = {"r": "required", "n": "none", "o": "optional"}


def _load() -> Tuple[Dict[str, OptionSpec], Dict[str, str]]:
    options: Dict[str, OptionSpec] = {}
    shorts: Dict[str, str] = {}
    with open(_DATA, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            name, kind, short, flags = fields
            spec = OptionSpec(
                _KINDS[kind], "" if short == "-" else short, "i" in flags, "p" in flags
            )
            options.setdefault(name, spec)
            if spec.short and spec.short not in shorts:
                shorts[spec.short] = name
    return options, shorts


#: Every option name of uWSGI 2.0 (core and the plugins a pip build embeds) -> its spec.
OPTIONS: Dict[str, OptionSpec]
#: Short letter -> the long name uWSGI records for it.
SHORT_OPTIONS: Dict[str, str]
OPTIONS, SHORT_OPTIONS = _load()
#: The options uWSGI applies while reading (config files, placeholders, logic, ...).
IMMEDIATE: FrozenSet[str] = frozenset(name for name, spec in OPTIONS.items() if spec.immediate)


def _long_name(name: str) -> str:
    """The option `--name` means: the exact name, else the only one it is a prefix of."""
    if name in OPTIONS:
        return name
    matches = [
        option
        for option, spec in OPTIONS.items()
        if option.startswith(name) and not spec.other_plugin
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UwsgiConfigError(f"command line: unrecognized option '--{name}'")
    shown = ", ".join("--" + m for m in matches[:6]) + (" ..." if len(matches) > 6 else "")
    raise UwsgiConfigError(f"command line: option '--{name}' is ambiguous; possibilities: {shown}")


def _parse_long(args: Sequence[str], index: int, out: List[Tuple[str, Optional[str]]]) -> int:
    body = args[index][2:]
    name, eq, attached = body.partition("=")
    full = _long_name(name)
    kind = OPTIONS[full].arg
    if kind == "none":
        if eq:
            raise UwsgiConfigError(f"command line: option '--{full}' doesn't allow an argument")
        out.append((full, None))
    elif kind == "optional":
        out.append((full, attached if eq else None))
    elif eq:
        out.append((full, attached))
    elif index + 1 < len(args):
        out.append((full, args[index + 1]))
        return index + 2
    else:
        raise UwsgiConfigError(f"command line: option '--{full}' requires an argument")
    return index + 1


def _parse_short(args: Sequence[str], index: int, out: List[Tuple[str, Optional[str]]]) -> int:
    cluster = args[index]
    pos = 1
    while pos < len(cluster):
        letter = cluster[pos]
        name = SHORT_OPTIONS.get(letter)
        if name is None:
            raise UwsgiConfigError(f"command line: invalid option -- '{letter}'")
        kind = OPTIONS[name].arg
        rest = cluster[pos + 1 :]
        if kind == "none":
            out.append((name, None))
            pos += 1
            continue
        if kind == "optional":
            out.append((name, rest or None))
        elif rest:
            out.append((name, rest))
        elif index + 1 < len(args):
            out.append((name, args[index + 1]))
            return index + 2
        else:
            raise UwsgiConfigError(f"command line: option requires an argument -- '{letter}'")
        break
    return index + 1


def parse_command_line(args: Sequence[str]) -> Tuple[List[Tuple[str, Optional[str]]], List[str]]:
    """(the options in order as (long name, value or None), the other arguments in order)."""
    options: List[Tuple[str, Optional[str]]] = []
    rest: List[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index + 1 :])
            break
        if arg.startswith("--"):
            index = _parse_long(args, index, options)
        elif arg.startswith("-") and arg != "-":
            index = _parse_short(args, index, options)
        else:
            rest.append(arg)
            index += 1
    return options, rest

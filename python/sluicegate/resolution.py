"""Resolution: what a user wrote (command line, `serve()` keywords, environment, `--config`
file, defaults) turned into a frozen, validated `Config`, in two phases, like ripgrep's
lowargs -> hiargs:
  1. raw (`raw_values`): per option, the value from the command line (or a `serve()` keyword),
     else from the environment, else from the `--config` file, else the default, still as
     written, with where it came from;
  2. validated (`validate`): each raw value goes through its option's parser, giving a frozen
     `Config`. A bad value raises `OptionError` whose one line names the option, the value as
     written and what is wrong with it.
The options themselves are the table's (options.py); the command line's raw values come from
command_line.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, Mapping, Optional, Sequence

from . import records
from .errors import OptionError
from .hook_types import Hooks
from .option_row import ENV_PREFIX, Option
from .options import BY_NAME, OPTIONS, config_matches_options
from .parsers import parse_bool, parse_path_or_off
from .validated import Config

#: Checked once, at import: validated.py is generated from the table (config_class.py).
_mismatch = config_matches_options()
if _mismatch:  # a programming error: the table edited, validated.py not regenerated
    raise AssertionError(_mismatch)


# --- Phase 1: raw values, with where each came from.


@records.record(frozen=True)
class Raw:
    """A value as written, and where: '--threads', 'SLUICEGATE_THREADS', 'threads=' (a serve()
    keyword) or 'default'. The source is part of every error message."""

    value: Any
    source: str


def raw_values(
    given: Mapping[str, Raw] = {},
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Raw]:
    """Per option: the given value (command line or serve() keyword), else the environment,
    else the --config file (named on the command line or in the environment), else the
    default."""
    env = os.environ if env is None else env
    path = given["config"].value if "config" in given else env.get(BY_NAME["config"].env)
    path = parse_path_or_off(path)
    from_file: Dict[str, Any] = {}
    if path and str(path).endswith(".py"):
        from . import gunicorn_config
        from_file = gunicorn_config.load(str(path), BY_NAME)
    elif path:
        from . import config_file
        from_file = config_file.load(str(path), BY_NAME)
    raw: Dict[str, Raw] = {}
    for o in OPTIONS:
        if o.name in given:
            raw[o.name] = given[o.name]
        elif o.env in env:
            text = env[o.env]
            raw[o.name] = Raw(text.split(",") if o.repeatable else text, o.env)
        elif o.name in from_file:
            value, where = from_file[o.name]
            if o.repeatable and not isinstance(value, list):
                value = [value]
            raw[o.name] = Raw(value, where)
        else:
            raw[o.name] = Raw(o.default, "default")
    return raw


def describe(raw: Mapping[str, Raw]) -> str:
    """--print-config: every option as TOML, with where its value came from."""
    from . import config_file
    lines = []
    for o in OPTIONS:
        if o.name in ("config", "check_config", "print_config"):
            continue
        r = raw[o.name]
        source = "default" if r.source == "default" else r.source
        value = r.value
        if value is None or (isinstance(value, list) and not value and not o.default):
            lines.append(f"# {o.name}: off  ({source})")
            continue
        if isinstance(value, bool) or o.switch:
            try:
                value = parse_bool(value)
            except ValueError:
                pass
        if callable(value):
            value = getattr(value, "__qualname__", repr(value))
        if isinstance(value, Hooks) and not value.is_module:  # functions: not TOML
            names = ", ".join(n for n, _ in value.functions)
            lines.append(f"# {o.name}: the functions {names}  # {source}")
            continue
        if isinstance(value, Mapping):  # log_config_dict: as the JSON its option takes
            import json
            value = json.dumps(value)
        lines.append(f"{o.name} = {config_file.render(value)}  # {source}")
    return "\n".join(lines)


def from_keywords(keywords: Mapping[str, Any], caller: str = "serve()") -> Dict[str, Raw]:
    """serve()'s keyword arguments as raw values; an unknown name is a TypeError, as for any
    Python function."""
    raw: Dict[str, Raw] = {}
    for name, value in keywords.items():
        if name not in BY_NAME:
            import difflib  # only for an unknown option's suggestion

            close = difflib.get_close_matches(name, BY_NAME, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{caller} got an unexpected keyword argument {name!r}{hint}")
        o = BY_NAME[name]
        if o.repeatable and (isinstance(value, (str, bytes)) or not isinstance(value, Sequence)):
            value = [value]
        raw[name] = Raw(value, f"{name}=")
    return raw


# --- Phase 2: validation.


def validate(raw: Mapping[str, Raw]) -> Config:
    """Parse every raw value with its option's parser into a frozen Config; raise OptionError
    naming the first bad one."""
    values: Dict[str, Any] = {}
    for o in OPTIONS:
        r = raw[o.name]
        if o.repeatable:
            items = list(r.value)
            if not items and o.default:
                raise OptionError(f"{_where(o, r)}: give at least one value")
            parsed = tuple(_parse_one(o, r, item) for item in items)
            for i, p in enumerate(parsed):
                # Port 0 twice is two different free ports, not a duplicate.
                if p in parsed[:i] and getattr(p, "port", None) != 0:
                    raise OptionError(f"{_where(o, r, items[i])}: given twice")
            values[o.name] = parsed
        else:
            values[o.name] = _parse_one(o, r, r.value)
    return Config(**values)


def _parse_one(o: Option, r: Raw, value: object) -> Any:
    try:
        return o.parse(value)
    except ValueError as e:
        raise OptionError(f"{_where(o, r, value)}: {e}") from None


# How much of a bad value an error line quotes.
_MAX_SHOWN = 80


def _where(o: Option, r: Raw, value: object = None) -> str:
    """How the bad value is named in an error: `--threads '5:2'`, `SLUICEGATE_THREADS='5:2'`,
    `threads=(5, 2)`."""
    shown = repr(value if value is not None else r.value)
    if len(shown) > _MAX_SHOWN:
        # A pasted file as a value: the error stays one readable line.
        shown = shown[:_MAX_SHOWN] + f"... ({len(shown)} characters)"
    if r.source == "default":
        return f"default of {o.flag} {shown}"
    if r.source.startswith(ENV_PREFIX) or r.source.endswith("="):
        name = r.source if r.source.endswith("=") else r.source + "="
        return f"{name}{shown}"
    return f"{r.source} {shown}"


def resolve(keywords: Mapping[str, Any] = {}, env: Optional[Mapping[str, str]] = None) -> Config:
    """Both phases for serve(): keywords > environment > defaults -> Config."""
    return validate(raw_values(from_keywords(keywords), env))


"""`--config FILE`: options from a TOML file, the third source after the command line and the
environment (precedence: command line > environment > file > default).

The file's keys are the options' Python names, as in `serve()` and docs/options.md (`threads`,
`max_requests`; `max-requests` is accepted too), or gunicorn's setting names (`keepalive`,
`worker_tmp_dir`), which get the answer they get on the command line (gunicorn_settings.py);
its values what the command line takes, in
TOML types: strings, numbers, booleans, and lists for the options given several times
(`bind = ["0.0.0.0:8000", "unix:/run/app.sock"]`). The app is the key `app`. An unknown key, a
bad value or a file that is not TOML is one line naming the file, the key and its line (exit
status 2). Python 3.11+ reads TOML with the standard library; 3.9 and 3.10 with `tomli`, the
same parser (a dependency on those versions only).
"""

from __future__ import annotations

import difflib
import json
import re
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, Mapping

from . import gunicorn_settings
from .errors import OptionError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the install matrix on 3.9/3.10
    import tomli as tomllib


#: The options whose value is itself a table (`[log_config_dict]`, dictConfig's dict).
TABLE_OPTIONS = ("log_config_dict",)


def load(path: str, options: Mapping[str, Any]) -> Dict[str, Any]:
    """The file's values by option name, with the source each is reported under
    (`FILE, line N: NAME`). `options`: the option table by name."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OptionError(f"cannot read config file {path!r}: {e.strerror}") from None
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise OptionError(f"{path}: not a valid TOML file: {e}") from None
    text = data.decode("utf-8")
    out: Dict[str, Any] = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        line = _line_of(text, key)
        where = f"{path}, line {line}: {key}" if line else f"{path}: {key}"
        gunicorn_done = (name in gunicorn_settings.BY_NAME and name not in TABLE_OPTIONS
                         and gunicorn_settings.BY_NAME[name].answer == gunicorn_settings.DONE
                         and name not in ("config", "check_config", "print_config"))
        if (name not in options or gunicorn_done) and name in gunicorn_settings.BY_NAME:
            _gunicorn(gunicorn_settings.BY_NAME[name], value, where, out)
            continue
        if isinstance(value, dict) and name not in TABLE_OPTIONS:
            raise OptionError(f"{where}: expected a value, not a table (options are top-level keys)")
        if name not in options or name in ("config", "check_config", "print_config"):
            close = difflib.get_close_matches(name, list(options), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise OptionError(f"{where}: unknown option{hint}")
        if isinstance(value, list) and not options[name].repeatable:
            raise OptionError(f"{where}: expected one value, not a list")
        out[name] = (value, where)
    return out


def _gunicorn(setting: gunicorn_settings.Setting, value: Any, where: str,
              out: Dict[str, Any]) -> None:
    """A gunicorn setting's name as a key (`keepalive`, `worker_tmp_dir`): the answer it gets
    on the command line and in a gunicorn.conf.py (gunicorn_settings.py)."""
    for option, got in gunicorn_settings.options_of(setting, value, where).items():
        if option not in out:
            out[option] = (got, where)


def _line_of(text: str, key: str) -> int:
    """The line a top-level key is set on (1-based), or 0 if it cannot be told."""
    k = re.escape(key)
    pattern = re.compile(r"^\s*(?:(?:" + k + r"|\"" + k + r"\")\s*=|\[\s*" + k + r"\s*\])", re.M)
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else 0


def render(value: Any) -> str:
    """A value as TOML (for --print-config)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return json.dumps(str(value))

"""`--config gunicorn.conf.py`: a gunicorn configuration file, read as gunicorn reads it, so that
switching from gunicorn is a change of the program's name.

gunicorn's configuration file is Python: gunicorn runs it as a module and takes the module's
names that are gunicorn settings (`bind`, `workers`, ...), ignoring every other name (imports,
helpers). So does this module. Each setting gets the answer gunicorn_settings.py gives it on
the command line too: mapped onto its option and then validated like any other value, its
errors naming the file, the line and the setting; or ignored with one warning line saying
why; or refused with one line saying why. The hooks (`post_fork`, `when_ready`, ...) the file
defines become the `hooks` option's value (hooks.py runs them); the few sluicegate does not run
are reported.

The file has the place of the TOML file among the sources (command line > environment > file >
default), and like it is read again on HUP. A `.py` name is what selects this reader.
"""

from __future__ import annotations

import importlib.util
import os
import re
import traceback

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, Mapping

from . import gunicorn_settings
from .errors import OptionError, one_line
from .gunicorn_settings import DIRTY_HOOKS, warn
from .hooks import SUPPORTED as SUPPORTED_HOOKS, UNSUPPORTED as UNSUPPORTED_HOOKS, from_mapping

#: gunicorn's server hooks: functions in the file (hooks.py says which sluicegate runs).
HOOKS = SUPPORTED_HOOKS + tuple(UNSUPPORTED_HOOKS) + tuple(DIRTY_HOOKS)


def load(path: str, options: Mapping[str, Any]) -> Dict[str, Any]:
    """The file's values by sluicegate option name, each with the source it is reported under
    (`FILE, line N: SETTING`), as config_file.load gives them. Every gunicorn setting gets its
    answer from gunicorn_settings.py (one warning line for each ignored one; a refused one
    stops the start), as on the command line and in the TOML file."""
    namespace = _run(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    out: Dict[str, Any] = {}
    hooks: Dict[str, Any] = {}
    for name, value in namespace.items():
        where = _where(path, text, name)
        if name in gunicorn_settings.BY_NAME:
            setting = gunicorn_settings.BY_NAME[name]
            if value is None and setting.answer == gunicorn_settings.DONE:
                continue  # gunicorn's None is its default (off for accesslog): ours
            for option, got in gunicorn_settings.options_of(setting, value, where).items():
                if option not in options:  # pragma: no cover - the tables drifted
                    raise AssertionError(f"gunicorn setting {name} maps to unknown option "
                                         f"{option}")
                put(out, option, got, where)
        elif name in HOOKS:
            if callable(value) and name in SUPPORTED_HOOKS:
                hooks[name] = value
            elif callable(value):
                why = UNSUPPORTED_HOOKS.get(name) or DIRTY_HOOKS[name]
                warn(f"{where}: gunicorn hook {name}() {why}")
    if hooks:
        try:
            out["hooks"] = (from_mapping(hooks, path), f"{path}: hooks")
        except ValueError as e:  # a hook gunicorn could not call either
            raise OptionError(f"{path}: {e}") from None
    return out


#: Two gunicorn settings that set --http2 (http_protocols, http2_cleartext): the wider wins.
_HTTP2_WIDTH = {"off": 0, "tls": 1, "on": 2}


def put(out: Dict[str, Any], option: str, value: Any, where: str) -> None:
    """Set `option` from a gunicorn setting; where two set the same option (only --http2),
    the one that offers more wins, whatever their order."""
    if option == "http2" and option in out:
        if _HTTP2_WIDTH.get(out[option][0], 0) >= _HTTP2_WIDTH.get(value, 0):
            return
    out[option] = (value, where)


def _run(path: str) -> Dict[str, Any]:
    """Run the file as gunicorn does (a module named __config__ with __file__ set) and return
    its public names."""
    spec = importlib.util.spec_from_file_location("__config__", path)
    if spec is None or spec.loader is None:
        raise OptionError(f"cannot read config file {path!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError as e:
        raise OptionError(f"cannot read config file {path!r}: {e.strerror}") from None
    except SyntaxError as e:
        raise OptionError(f"{path}, line {e.lineno}: not valid Python: {e.msg}") from None
    except (Exception, SystemExit) as e:
        line = _line_in(path, e)
        raise OptionError(
            f"{path}{line}: running the gunicorn config file raised "
            f"{type(e).__name__}: {one_line(str(e))}"
        ) from e
    return {k: v for k, v in vars(module).items() if not k.startswith("_")}


def _line_in(path: str, e: BaseException) -> str:
    here = os.path.abspath(path)
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.abspath(f.filename) == here]
    return f", line {frames[-1].lineno}" if frames else ""


def _where(path: str, text: str, name: str) -> str:
    m = re.search(r"^[ \t]*(?:def[ \t]+)?" + re.escape(name) + r"\b", text, re.M)
    line = text.count("\n", 0, m.start()) + 1 if m else 0
    return f"{path}, line {line}: {name}" if line else f"{path}: {name}"


"""The `sluicegate` command: parse the command line, then hand over to the supervisor. Like
gunicorn's, the command also takes flags from $GUNICORN_CMD_ARGS and reads ./gunicorn.conf.py
when no configuration file is named.

Its other job is the error contract: every user error (a bad option, an app that does not load,
an address that cannot be bound) ends as ONE line on standard error, `sluicegate: error: ...`,
with exit status 2 for usage errors and 1 for the rest; never a traceback. With
`--log-level debug` the traceback behind the error is logged first.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Callable, Dict, List, Mapping, Optional, Sequence

from . import __version__, privileges, syspath, tls
from .errors import OptionError, SluicegateError
from .loader import load_app
from .options import BY_NAME
from .resolution import Raw, describe, raw_values, validate
from .supervisor import start
from .validated import Config


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `sluicegate` console script and `python -m sluicegate`."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["ctl"]:  # `sluicegate ctl ...`: the control socket's client (ctl.py)
        from . import ctl
        return ctl.main(args[1:])
    syspath.at_start()  # before a gunicorn config file runs, as gunicorn does
    # Here, not at the top: argparse and difflib stay out of `sluicegate-uwsgi`'s processes.
    from .command_line import from_command_line

    parsed: List[Dict[str, Raw]] = []

    def given() -> Dict[str, Raw]:
        """The command line, parsed once (HUP reads the environment and the file again)."""
        if not parsed:
            parsed.append(with_default_config(
                with_gunicorn_cmd_args(from_command_line(args, __version__))))
        return parsed[0]

    return run(given, [sys.executable, "-m", "sluicegate", *args])


def run(read_given: Callable[[], Dict[str, Raw]], restart: List[str]) -> int:
    """The start of the `sluicegate` command (and of `sluicegate-uwsgi` when its options are
    not validated apart, uwsgi_cli.py): `read_given()` gives the options a command line (and
    its files) set, at the start and again on HUP; each time they are validated here; then
    supervisor.start (--print-config and --check-config end before serving)."""
    raws: List[Dict[str, Raw]] = []

    def read_config() -> Config:
        raw = raw_values(read_given())
        cfg = validate(raw)
        raws[:] = [raw]
        return cfg

    def one_shot(cfg: Config) -> Optional[int]:
        if cfg.print_config:
            print(describe(raws[0]))
            return 0
        if cfg.check_config:
            return check(cfg)
        return None

    return start(read_config, __version__, restart, one_shot)


def check(cfg: Config) -> int:
    """--check-config: every option is valid (we got here); what a start needs from the system
    is there (the users, the directories of the files it writes); import the app too."""
    if cfg.chdir:
        os.chdir(cfg.chdir)
    syspath.settle(cfg.chdir, cfg.pythonpath)
    try:
        _check_system(cfg)
        if cfg.hooks is not None:  # a --hooks module that does not import, or a wrong signature
            from . import hooks

            hooks.resolve(cfg.hooks)
        tls.load(cfg)
        if not callable(cfg.app):
            from . import preflight  # --check-config's: a server imports it for its checks only

            preflight.check(load_app(cfg.app), cfg.warmup, cfg.django_checks)
    except SluicegateError as e:
        sys.stderr.write(f"sluicegate: error: {e}\n")
        return 2
    print(f"sluicegate: configuration OK (app {cfg.app})", flush=True)
    return 0


def _check_system(cfg: Config) -> None:
    """What a start would fail on after the options parsed: an unknown --user or --group, a
    file to write whose directory is missing. (Not whether the starting user may write there:
    the access log is opened after --user switches, so only a start can tell.)"""
    for flag, name, lookup in (("--user", cfg.user, privileges.user_id),
                               ("--group", cfg.group, privileges.group_id)):
        try:
            if name:
                lookup(name)
        except ValueError as e:
            raise OptionError(f"{flag}: {e}") from None
    files = [("--access-log", cfg.access_log if cfg.access_log != "-" else None),
             ("--error-log", cfg.error_log), ("--pid", cfg.pid)]
    for flag, path in files:
        if path is None:
            continue
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise OptionError(f"{flag} {path!r}: no such directory {directory!r}")


#: The environment variable gunicorn reads more command-line flags from (Dockerfiles set it).
GUNICORN_CMD_ARGS = "GUNICORN_CMD_ARGS"


def with_gunicorn_cmd_args(given: Dict[str, Raw], env: Optional[Mapping[str, str]] = None
                           ) -> Dict[str, Raw]:
    """The command line's values over those of the flags in $GUNICORN_CMD_ARGS, which gunicorn
    reads as a command line that the real one overrides (an app path in it is ignored, as
    gunicorn ignores it)."""
    env = os.environ if env is None else env
    text = env.get(GUNICORN_CMD_ARGS, "")
    if not text.strip():
        return given
    import shlex

    from .command_line import from_command_line
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise OptionError(f"{GUNICORN_CMD_ARGS}={text!r}: {e}") from None
    from_env = {name: r for name, r in from_command_line(words, prefix=GUNICORN_CMD_ARGS).items()
                if name != "app"}
    return {**from_env, **given}


#: The configuration file gunicorn reads from the working directory when none is named.
GUNICORN_DEFAULT_CONFIG = "gunicorn.conf.py"


def with_default_config(given: Dict[str, Raw], env: Optional[Mapping[str, str]] = None
                        ) -> Dict[str, Raw]:
    """The command line's values, plus --config ./gunicorn.conf.py when neither the command
    line nor the environment names a file and that file exists: gunicorn reads it then, and a
    start line that relies on it must get its settings here too (`--config off` reads none)."""
    env = os.environ if env is None else env
    if "config" in given or BY_NAME["config"].env in env:
        return given
    if not os.path.isfile(GUNICORN_DEFAULT_CONFIG):
        return given
    return {**given, "config": Raw(GUNICORN_DEFAULT_CONFIG, f"./{GUNICORN_DEFAULT_CONFIG}")}

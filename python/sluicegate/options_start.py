"""The options table's rows (options.py) for what is served and how the server is set up around
it: the app and its addresses, the configuration file and the commands that check or print it,
gunicorn's hooks module, and the app's directory, Python path and environment.
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Tuple, Union

from .hook_types import Hooks
from .listeners import BindAddress
from .option_row import Option
from .parsers import (parse_app, parse_bind_value, parse_bool, parse_chdir, parse_env_item,
                      parse_hooks, parse_path_or_off, parse_pythonpath)


#: What is served where, and from which configuration.
SERVE: Tuple[Option, ...] = (
    Option(
        "app", parse_app, "sluicegate.demo:app",
        "The WSGI application to serve, as MODULE:APP; MODULE alone means MODULE:application "
        "(as with gunicorn: myproject.wsgi). APP may be a dotted attribute "
        "(pkg.mod:obj.app) or a factory call with literal arguments (mod:create_app() or "
        "mod:create_app('prod', debug=False)). The current directory is searched first. "
        "Without it, sluicegate serves its built-in demo app.",
        "MODULE:APP", "Union[str, Callable[..., Any]]", positional=True,
    ),
    Option(
        "bind", parse_bind_value, ["127.0.0.1:8000"],
        "Address to listen on: HOST:PORT, :PORT (every IPv4 interface, 0.0.0.0, as with "
        "gunicorn), [IPV6]:PORT or unix:PATH. Port 0 picks a free port "
        "(the 'Listening at:' log line shows it). Give it several times to listen on several "
        "addresses.",
        "ADDRESS", "Tuple[BindAddress, ...]", short="-b", repeatable=True,
    ),
    Option(
        "config", parse_path_or_off, None,
        "Read options from this TOML file: keys are the options' names as in serve() "
        "(threads = \"4:64\", bind = [\"0.0.0.0:8000\"], app = \"pkg.wsgi:application\"). "
        "A FILE ending in .py is a gunicorn configuration file: its settings that sluicegate "
        "has are used (bind, workers, threads, timeout, keepalive, accesslog, loglevel, ...; "
        "docs/operations.md), each other one is named in a warning. "
        "The command line and the environment override it. Re-read on HUP (with --workers). "
        "When no file is named (here or in the environment), the sluicegate command reads "
        "./gunicorn.conf.py if there is one, as gunicorn does; 'off' reads none.",
        "FILE", "Optional[str]", short="-c",
    ),
    Option(
        "check_config", parse_bool, "false",
        "Validate every option, check that --user and --group exist and that the directories "
        "of --access-log, --error-log and --pid do, and import the app, then exit: 0 if all "
        "is well, else 2 with one line saying what is wrong.",
        "", "bool", switch=True,
    ),
    Option(
        "print_config", parse_bool, "false",
        "Print the resolved options as TOML, each with where its value came from (command line, "
        "environment, config file or default), then exit.",
        "", "bool", switch=True,
    ),
)


#: gunicorn's server hooks (hooks.py runs them).
HOOKS: Tuple[Option, ...] = (
    Option(
        "hooks", parse_hooks, None,
        "gunicorn's server hooks: a module (MODULE, imported after --chdir, or a FILE.py) "
        "whose functions with gunicorn's hook names (on_starting, post_fork, "
        "post_worker_init, pre_request, ...) run as gunicorn runs them, with its arguments "
        "(docs/operations.md, \"Hooks\"). A "
        "gunicorn.conf.py given to --config sets this from its own functions. Set once at "
        "start.",
        "MODULE", "Optional[Hooks]",
    ),
)


#: Where the app is imported from, and its environment.
APP_ENVIRONMENT: Tuple[Option, ...] = (
    Option(
        "chdir", parse_chdir, None,
        "Change to this directory before loading the app; relative --access-log and unix: "
        "paths are then relative to it too.",
        "DIR", "Optional[str]",
    ),
    Option(
        "pythonpath", parse_pythonpath, None,
        "Directories put first on sys.path (comma-separated, relative to --chdir) before the "
        "hooks and the app: gunicorn's --pythonpath (docs/operations.md).",
        "DIRS", "Optional[str]",
    ),
    Option(
        "env", parse_env_item, [],
        "Set this environment variable for the app, KEY=VALUE (e.g. "
        "DJANGO_SETTINGS_MODULE=mysite.settings.prod), as gunicorn's -e does: the sluicegate "
        "command sets it before loading the app, in the master and so in every worker; "
        "serve() leaves os.environ alone. Set once at start. Give it several times for several.",
        "KEY=VALUE", "Tuple[str, ...]", short="-e", repeatable=True,
    ),
)

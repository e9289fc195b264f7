"""The one table of sluicegate's options: `OPTIONS`, one row (`Option`, option_row.py) per
option, in the order --help and docs/options.md list them.

Every option is declared once, in a row (name, parser, default, help, metavar, type, repeatable,
gunicorn spellings). The rows live in the table's own modules, one per subject, each a few
named runs of rows (options_start.py: what is served and from what configuration;
options_processes.py: master, workers, process, threads; options_sockets.py; options_http.py:
timeouts, limits, protocols, answers; options_static.py; options_proxies.py; options_tls.py;
options_logging.py; options_monitoring.py: metrics, control socket, statsd; options_uwsgi.py:
uWSGI's runtime). Their parsers are all in the parsers package. This module puts the runs in
the table's order; adding a setting is one row in its subject's module (plus, for a new
subject, one line below), then the generated files regenerated.

Everything else is derived from this table, so nothing can drift:
  - the command line and its `--help` (command_line.py), gunicorn's spellings of the same
    options among them (`aliases`, `-w`, `--keep-alive`, ...),
  - the environment variables `SLUICEGATE_<NAME>`, the `--config` files and the keywords and
    defaults of `sluicegate.serve()`, resolved into a `Config` (resolution.py),
  - the `Config` record (validated.py: generated from this table by
    `python -m sluicegate.options --write-config-class`, config_class.py; resolution.py fails to
    import if its fields differ from the table in name, order or type),
  - the keys passed straight through to the Rust core (`core=True`), and so the `ServerConfig`
    type in _core.pyi (generated, see config.py) and the keys src/config.rs must read,
  - docs/options.md (options_doc.py, run as `python -m sluicegate.options --markdown >
    docs/options.md`).
tests/test_options_contract.py fails on any drift between the table and these.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Dict, Optional, Sequence, Tuple

from . import (config_class, options_http, options_logging, options_monitoring,
               options_processes, options_proxies, options_sockets, options_start,
               options_static, options_tls, options_uwsgi)
from .option_row import ENV_PREFIX, Option
from .parsers import parse_bool

OPTIONS: Tuple[Option, ...] = (
    *options_start.SERVE,
    *options_processes.WORKERS,
    *options_processes.MASTER_DUTIES,
    *options_processes.IDENTITY,
    *options_processes.THREADS,
    *options_sockets.LISTEN,
    *options_http.TIMEOUTS,
    *options_http.LIMITS,
    *options_http.PROTOCOLS,
    *options_static.ROWS,
    *options_http.APP_IO,
    *options_proxies.TRUST,
    *options_tls.ROWS,
    *options_proxies.FAMILY,
    *options_http.HEALTH,
    *options_logging.ACCESS,
    *options_http.TIMING_AND_HINTS,
    *options_monitoring.METRICS,
    *options_monitoring.CONTROL,
    *options_logging.ERRORS_AND_SYSLOG,
    *options_monitoring.STATSD,
    *options_start.HOOKS,
    *options_http.HEADERS,
    *options_start.APP_ENVIRONMENT,
    # uWSGI's runtime: its module builds its rows from the row class and the switch parser it
    # is handed, and keeps its three uWSGI-only parsers beside them.
    *options_uwsgi.option_rows(Option, parse_bool),
)

BY_NAME: Dict[str, Option] = {o.name: o for o in OPTIONS}


def config_matches_options() -> Optional[str]:
    """None when validated.py's Config is exactly OPTIONS (names, order, types), else what
    differs. Config is imported here, not at the top, so that a validated.py gone stale never
    stops `--write-config-class` from making it again."""
    from .validated import Config
    return config_class.mismatch(OPTIONS, Config)


def config_class_fields() -> str:
    """Config's field lines, as validated.py writes them."""
    return config_class.fields(OPTIONS)


USAGE = ("usage: python -m sluicegate.options --markdown > docs/options.md | --config-class "
         "| --write-config-class")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--config-class"]:
        sys.stdout.write(config_class.source(OPTIONS))
        return 0
    if args == ["--write-config-class"]:
        config_class.write(OPTIONS)
        return 0
    if args != ["--markdown"]:
        print(USAGE, file=sys.stderr)
        return 2
    from . import options_doc  # here: the table's readers never need it

    sys.stdout.write(options_doc.markdown(OPTIONS, ENV_PREFIX))
    return 0


if __name__ == "__main__":
    sys.exit(main())

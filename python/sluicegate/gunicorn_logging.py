"""Logging as gunicorn sets it up: its loggers (`gunicorn.error`, `gunicorn.access`), its
defaults (`CONFIG_DEFAULTS`) merged with `logconfig_dict` / `logconfig_json`, `logconfig`'s ini
file, and `--log-syslog`, so that a gunicorn logging configuration works unchanged.

gunicorn is not needed: `CONFIG_DEFAULTS` below is a copy of `gunicorn.glogging.CONFIG_DEFAULTS`
(gunicorn 23-27), and a configuration file that imports gunicorn's own gets the same dict.
What gunicorn does, done here the same way (its `glogging.Logger.setup`):

- `gunicorn.error` gets a handler to standard error in the error log's format, and
  `gunicorn.access` one for `--access-log` (`-`: standard output) writing the bare line;
- `--log-syslog` adds a `SysLogHandler` to both (not to the access logger with
  `--disable-redirect-access-to-syslog`), its lines `gunicorn.PREFIX.error: [PID] MESSAGE`;
  a syslog it cannot write to is said once and tried again later (gunicorn_syslog.py), where
  logging's own would print a traceback for every record;
- then only one of the logging configurations, in gunicorn's order: the dict (a shallow
  `CONFIG_DEFAULTS.copy().update(dict)`, so "version" may be left out and a top-level key
  replaces the default's whole), the JSON file (the same), the ini file (`fileConfig` with
  gunicorn's defaults and `disable_existing_loggers=False`).

Then the server's own lines reach gunicorn's loggers: the `sluicegate` logger (and
`sluicegate.error`, the app errors) hands its records to `gunicorn.error`, unless the
configuration named `sluicegate` itself; and the access log, written by the Rust core, is
handed a batch at a time to `gunicorn.access` (`access_sink`) instead of a descriptor.
"""

from __future__ import annotations

import logging
import os
import socket
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from .errors import StartError

ERROR_LOGGER = "gunicorn.error"
ACCESS_LOGGER = "gunicorn.access"

#: gunicorn.glogging.CONFIG_DEFAULTS (gunicorn 23-27), what a logging configuration is
#: merged into.
CONFIG_DEFAULTS: Dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "root": {"level": "INFO", "handlers": ["console"]},
    "loggers": {
        "gunicorn.error": {
            "level": "INFO",
            "handlers": ["error_console"],
            "propagate": True,
            "qualname": "gunicorn.error",
        },
        "gunicorn.access": {
            "level": "INFO",
            "handlers": ["console"],
            "propagate": True,
            "qualname": "gunicorn.access",
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "generic",
            "stream": "ext://sys.stdout",
        },
        "error_console": {
            "class": "logging.StreamHandler",
            "formatter": "generic",
            "stream": "ext://sys.stderr",
        },
    },
    "formatters": {
        "generic": {
            "format": "%(asctime)s [%(process)d] [%(levelname)s] %(message)s",
            "datefmt": "[%Y-%m-%d %H:%M:%S %z]",
            "class": "logging.Formatter",
        }
    },
}

class Setup:
    """What the options ask of gunicorn-style logging (None/False: not asked)."""

    def __init__(self, *, dict_config: Optional[Mapping[str, Any]] = None,
                 json_config: Optional[str] = None, file_config: Optional[str] = None,
                 syslog: bool = False, syslog_addr: str = "udp://localhost:514",
                 syslog_prefix: str = "sluicegate", syslog_facility: str = "user",
                 access_to_syslog: bool = True, access_log: Optional[str] = None):
        self.dict_config = dict_config
        self.json_config = json_config
        self.file_config = file_config
        self.syslog = syslog
        self.syslog_addr = syslog_addr
        self.syslog_prefix = syslog_prefix
        self.syslog_facility = syslog_facility
        self.access_to_syslog = access_to_syslog
        self.access_log = access_log

    def configures(self) -> bool:
        return bool(self.dict_config or self.json_config or self.file_config)

    def routes_access(self) -> bool:
        """The access lines go through Python logging (gunicorn.access), as in gunicorn
        whenever a logging configuration or syslog for them is given."""
        return self.configures() or (self.syslog and self.access_to_syslog)


def setup_of(cfg: Any) -> Setup:
    """The Setup a validated Config asks for. Relative paths are taken from --chdir, as the
    access log's descriptor is opened there."""
    access = cfg.access_log
    if access not in (None, "-") and cfg.chdir:
        access = os.path.join(cfg.chdir, access)
    name = getattr(cfg, "proc_name", None) or (cfg.app if isinstance(cfg.app, str)
                                                else "sluicegate")
    return Setup(dict_config=cfg.log_config_dict, json_config=cfg.log_config_json,
                 file_config=cfg.log_config, syslog=cfg.log_syslog,
                 syslog_addr=cfg.syslog_addr,
                 syslog_prefix=cfg.syslog_prefix or str(name).replace(":", "."),
                 syslog_facility=cfg.syslog_facility,
                 access_to_syslog=not cfg.disable_redirect_access_to_syslog,
                 access_log=access)


#: The access lines go to `gunicorn.access` (set by `apply`, inherited by workers).
_routes_access = False
#: What `--access-log` asked for when it was given to `gunicorn.access` instead of the core.
_access_handler: Optional[logging.Handler] = None


def apply(setup: Setup, ours: logging.Logger, own_handler: logging.Handler,
          error_format: logging.Formatter) -> None:
    """Set gunicorn's loggers up as gunicorn does, then hand `ours` (the server's logger) over
    to `gunicorn.error` unless the configuration named it. Nothing when nothing asks for it."""
    global _routes_access
    if not (setup.configures() or setup.syslog):
        return
    error_log = logging.getLogger(ERROR_LOGGER)
    access_log = logging.getLogger(ACCESS_LOGGER)
    for logger in (error_log, access_log):
        for h in [h for h in logger.handlers if getattr(h, "_sluicegate", False)]:
            logger.removeHandler(h)
    error_log.setLevel(ours.level)
    error_log.propagate = access_log.propagate = False
    access_log.setLevel(logging.INFO)
    _mark(error_log, logging.StreamHandler(sys.stderr), error_format)
    if setup.access_log is not None:
        to = (logging.StreamHandler(sys.stdout) if setup.access_log == "-"
              else logging.FileHandler(setup.access_log))
        _mark(access_log, to, logging.Formatter("%(message)s"))
    if setup.syslog:
        _mark(error_log, syslog_handler(setup), syslog_formatter(setup, "error"))
        if setup.access_to_syslog:
            _mark(access_log, syslog_handler(setup), syslog_formatter(setup, "access"))
    _configure(setup)
    _routes_access = setup.routes_access()
    if own_handler in ours.handlers:  # the configuration did not take `sluicegate` over
        ours.removeHandler(own_handler)
        ours.addHandler(_mark(None, ToLogger(error_log), None))


def _mark(logger: Optional[logging.Logger], handler: logging.Handler,
          formatter: Optional[logging.Formatter]) -> logging.Handler:
    handler._sluicegate = True  # type: ignore[attr-defined]
    if formatter is not None:
        handler.setFormatter(formatter)
    if logger is not None:
        logger.addHandler(handler)
    return handler


def _configure(setup: Setup) -> None:
    """The one logging configuration gunicorn would apply (dict, else JSON, else ini)."""
    if setup.dict_config:
        _dict_config(setup.dict_config, "--log-config-dict")
    elif setup.json_config:
        import json  # only for --log-config-json

        try:
            with open(setup.json_config, encoding="utf-8") as f:
                given = json.load(f)
        except OSError as e:
            raise StartError(f"--log-config-json {setup.json_config!r}: cannot read it: "
                             f"{e.strerror}") from e
        except ValueError as e:
            raise StartError(f"--log-config-json {setup.json_config!r}: not valid JSON: {e}") \
                from e
        if not isinstance(given, dict):
            raise StartError(f"--log-config-json {setup.json_config!r}: expected a JSON object")
        _dict_config(given, f"--log-config-json {setup.json_config!r}")
    elif setup.file_config:
        path = setup.file_config
        try:
            with open(path, encoding="utf-8"):  # fileConfig's own error hides ENOENT
                pass
            from copy import deepcopy  # only with a configuration to apply, as below

            defaults = deepcopy(CONFIG_DEFAULTS)
            defaults["__file__"] = path
            defaults["here"] = os.path.dirname(path)
            import logging.config  # only with a configuration to apply (module doc of logs.py)
            logging.config.fileConfig(path, defaults=defaults, disable_existing_loggers=False)
        except OSError as e:
            raise StartError(f"--log-config {path!r}: cannot read it: {e.strerror}") from e
        except Exception as e:
            raise StartError(f"--log-config {path!r}: logging refused it: "
                             f"{type(e).__name__}: {e}") from e


def merged(given: Mapping[str, Any]) -> Dict[str, Any]:
    """`given` over gunicorn's defaults, as gunicorn merges them: a shallow update."""
    from copy import deepcopy  # only with a logging configuration: no process needs it else

    config = deepcopy(CONFIG_DEFAULTS)
    config.update(given)
    return config


def _dict_config(given: Mapping[str, Any], source: str) -> None:
    import logging.config  # only with a configuration to apply
    try:
        logging.config.dictConfig(merged(given))
    except Exception as e:
        raise StartError(f"{source}: logging refused it: {type(e).__name__}: {e}") from e


class ToLogger(logging.Handler):
    """Hands every record to another logger (its level, filters, handlers and parents), under
    that logger's name: the server's lines become `gunicorn.error`'s."""

    def __init__(self, target: logging.Logger):
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        if self.target.disabled or not self.target.isEnabledFor(record.levelno):
            return
        moved = logging.makeLogRecord(record.__dict__)
        moved.name = self.target.name
        self.target.handle(moved)


def routes_access() -> bool:
    """The access lines go to `gunicorn.access` (not to a descriptor)."""
    return _routes_access


def access_sink() -> Callable[[bytes], None]:
    """What the Rust core calls with each batch of access lines (whole lines, UTF-8, each
    ending with a newline) when they go to `gunicorn.access`: one record per line."""
    access_log = logging.getLogger(ACCESS_LOGGER)

    def sink(batch: bytes) -> None:
        for line in batch.decode("utf-8", "replace").split("\n")[:-1]:
            access_log.info(line)

    return sink


def reopen_files() -> None:
    """USR1 with the access log in Python logging: every FileHandler's file opened again by
    its path (gunicorn's `reopen_files`)."""
    for logger in [logging.getLogger()] + [
            lg for lg in logging.Logger.manager.loggerDict.values()
            if isinstance(lg, logging.Logger)]:
        for handler in logger.handlers:
            if isinstance(handler, logging.FileHandler):
                handler.acquire()
                try:
                    if handler.stream:
                        handler.close()
                        handler.stream = handler._open()
                finally:
                    handler.release()


def syslog_formatter(setup: Setup, name: str) -> logging.Formatter:
    return logging.Formatter(f"gunicorn.{setup.syslog_prefix}.{name}: [%(process)d] "
                             "%(message)s")


def syslog_handler(setup: Setup) -> logging.Handler:
    """A SysLogHandler for `--syslog-addr` and `--syslog-facility` (gunicorn's), from
    gunicorn_syslog.py: imported only then (logging.handlers brings socket, pickle and queue)."""
    from .gunicorn_syslog import SysLogHandler

    socktype, address = parse_syslog_address(setup.syslog_addr)
    try:
        return SysLogHandler(
            setup.syslog_addr if isinstance(address, tuple) else address,
            address=address, facility=SysLogHandler.facility_names[setup.syslog_facility],
            socktype=socktype)
    except OSError as e:
        raise StartError(f"--syslog-addr {setup.syslog_addr}: cannot reach it: "
                         f"{e.strerror or e}") from e


def parse_syslog_address(addr: str) -> Tuple[Optional[int], Union[str, Tuple[str, int]]]:
    """gunicorn's glogging.parse_syslog_address: (socket type, address)."""
    if addr.startswith("unix://"):
        sock_type = None
        parts = addr.split("#", 1)
        if len(parts) == 2:
            addr = parts[0]
            if parts[1] == "dgram":
                sock_type = socket.SOCK_DGRAM
        return sock_type, addr.split("unix://")[1]
    if addr.startswith("udp://"):
        addr, socktype = addr.split("udp://")[1], socket.SOCK_DGRAM
    else:
        addr, socktype = addr.split("tcp://")[1], socket.SOCK_STREAM
    if "[" in addr and "]" in addr:
        host = addr.split("]")[0][1:].lower()
    elif ":" in addr:
        host = addr.split(":")[0].lower()
    elif addr == "":
        host = "localhost"
    else:
        host = addr.lower()
    addr = addr.split("]")[-1]
    port = int(addr.split(":", 1)[1]) if ":" in addr else 514
    return socktype, (host, port)

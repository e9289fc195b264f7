"""gunicorn's settings (every one from gunicorn 23 to 27) and sluicegate's answer to each: the
one place that says what a gunicorn setting does here, whether it comes from the command line
(`--worker-tmp-dir /dev/shm`), a gunicorn.conf.py (`worker_tmp_dir = "/dev/shm"`) or the TOML
file (`worker_tmp_dir = "/dev/shm"`), so that the three sources give the same answer.

Each answer is one of three:
  - done: the setting is a sluicegate option (`option`), with gunicorn's meaning; `convert`
    turns gunicorn's value into one that option's parser takes, and refuses (`Refused`) the
    values whose meaning sluicegate does not have;
  - ignored: accepted, and one warning line says why it changes nothing here;
  - refused: a start with it stops with one line saying why and what to do instead, because
    ignoring it would change what is served. The values in `accepts` (and None or False, a
    file's way of saying "off") ask for what sluicegate does anyway, and are taken silently.
gunicorn's server hooks are answered by hooks.py (which it runs); they are listed here too,
so that the table covers every name gunicorn's configuration has. docs/options.md shows the
table (`python -m sluicegate.options --markdown`); tests/test_gunicorn_settings.py fails when
the installed gunicorn has a setting or a flag this table does not answer.
"""

from __future__ import annotations

import logging
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

from . import records
from .errors import OptionError, one_line
from .hook_types import SUPPORTED as SUPPORTED_HOOKS, UNSUPPORTED as UNSUPPORTED_HOOKS

log = logging.getLogger("sluicegate")

DONE, IGNORED, REFUSED = "done", "ignored", "refused"

#: How a setting is given on gunicorn's command line: a value, a switch (no value), a value
#: given several times, a value that may be left out (`--proxy-protocol [MODE]`), a switch that
#: sets False (`--no-sendfile`), or not at all (a file-only setting or a hook).
VALUE, SWITCH, LIST, OPTIONAL, SWITCH_OFF, FILE_ONLY = (
    "value", "switch", "list", "optional", "switch-off", "file-only")


class Refused(ValueError):
    """A value of a done setting whose meaning sluicegate does not have (the reason)."""


class Ignored(ValueError):
    """A value of a done setting that sluicegate takes without its effect, which cannot change
    what is served (the reason, for the warning line)."""


def _same(value: Any) -> Any:
    return value


@records.record(frozen=True)
class Setting:
    """One gunicorn setting: its name (in gunicorn.conf.py and here in TOML), its flags, and
    sluicegate's answer (`text`: for done, how; else the one-line reason)."""

    name: str
    flags: Tuple[str, ...]
    takes: str
    answer: str
    text: str
    option: Optional[str] = None
    convert: Callable[[Any], Any] = _same
    accepts: Tuple[Any, ...] = ()
    #: Other options a done setting sets with it, from its converted value (--paste: the
    #: file's logging sections, as gunicorn reads them).
    also: Optional[Callable[[Any], Dict[str, Any]]] = None

    def asks_for_nothing(self, value: Any) -> bool:
        """None, False (but for a switch that turns something off), an empty value or one in
        `accepts`: what sluicegate does anyway."""
        if value is None or value == "" or value == [] or value == {}:
            return True
        if value is False and self.takes != SWITCH_OFF and True not in self.accepts:
            return True
        return _norm(value) in tuple(_norm(a) for a in self.accepts)


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().strip("'\"").lower()
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k).upper(), _norm(v)) for k, v in value.items()))
    return value


# --- Conversions of gunicorn values that differ from sluicegate's.


def _text(value: Any) -> Any:
    """user, group: a uid/gid number in gunicorn."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _list(value: Any) -> Any:
    """bind, reload_extra_files, raw_env: a string or a list of strings."""
    return [value] if isinstance(value, str) else list(value)


def _http_protocols(value: Any) -> Any:
    """gunicorn 27's list of protocols: h1 alone is HTTP/1.1 only; h2 in it offers HTTP/2 over
    TLS (ALPN), as gunicorn does (h2c is http2_cleartext's)."""
    items = [i.strip().lower() for i in str(value).split(",") if i.strip()]
    unknown = [i for i in items if i not in ("h1", "h2")]
    if unknown or not items:
        raise Refused(f"expected h1, h2 or both, not {unknown[0] if unknown else 'nothing'!r}: "
                      "sluicegate speaks HTTP/1.1 and HTTP/2")
    return "tls" if "h2" in items else "off"


def _http2_cleartext(value: Any) -> Any:
    text = str(value).strip().lower()
    if text in ("prior-knowledge", "both"):
        return "on"
    raise Refused("sluicegate takes h2c with prior knowledge only (--http2 on), not the "
                  "HTTP/1.1 Upgrade: give prior-knowledge")


#: gunicorn's secure_scheme_headers default: each is read by sluicegate's x-forwarded family.
_SCHEME_HEADERS = {"X-FORWARDED-PROTOCOL": "ssl", "X-FORWARDED-PROTO": "https",
                   "X-FORWARDED-SSL": "on"}


def _secure_scheme_headers(value: Any) -> Any:
    """Done when it names headers of the x-forwarded family with gunicorn's values (sluicegate
    reads X-Forwarded-Proto and X-Forwarded-Ssl from --forwarded-allow-ips peers)."""
    if not isinstance(value, dict):
        raise Refused("expected a dict of header name to value")
    for name, want in value.items():
        if _SCHEME_HEADERS.get(str(name).upper()) != str(want).lower():
            raise Refused(
                f"{name}: {want!r} is not read: sluicegate takes the scheme from "
                "X-Forwarded-Proto (https) or X-Forwarded-Ssl (on), or from RFC 7239 Forwarded "
                "(--forwarded-headers forwarded), sent by a --forwarded-allow-ips peer; "
                "configure the proxy to send one of those")
    return "x-forwarded"


def _paste(value: Any) -> Any:
    """A PasteDeploy ini file (FILE or FILE#APP_NAME), loaded with paste.deploy as gunicorn
    does: the app becomes `config:/absolute/FILE#NAME` (loader.py reads that form)."""
    import importlib.util
    import os

    text = str(value).strip()
    path, _, name = text.partition("#")
    if importlib.util.find_spec("paste") is None or importlib.util.find_spec("paste.deploy") is None:
        raise Refused("a PasteDeploy file needs the PasteDeploy package, which is not installed "
                      "(pip install PasteDeploy), or name the app as MODULE:APP")
    if not os.path.isfile(path):
        raise Refused("no such file")
    return f"config:{os.path.abspath(path)}" + (f"#{name}" if name else "")


def _paste_logging(app: Any) -> Dict[str, Any]:
    """A PasteDeploy file with a [loggers] section configures logging too (gunicorn sets its
    logconfig to the file): --log-config FILE."""
    import configparser

    path = str(app)[len("config:"):].partition("#")[0]
    parser = configparser.RawConfigParser()
    try:
        parser.read([path])
    except configparser.Error:
        return {}
    return {"log_config": path} if parser.has_section("loggers") else {}


def _setting(name: str, flags: str, takes: str, answer: str, text: str, option: Optional[str] = None,
             convert: Callable[[Any], Any] = _same, accepts: Tuple[Any, ...] = (),
             also: Optional[Callable[[Any], Dict[str, Any]]] = None) -> Setting:
    return Setting(name, tuple(flags.split()), takes, answer, text, option, convert, accepts,
                   also)


_RUST_TLS = "TLS is rustls in the Rust core"
_DIRTY = "only with dirty_workers, which sluicegate refuses"
_ASGI = "only for gunicorn's ASGI worker; sluicegate serves WSGI (an ASGI worker class is refused)"
_PARSER = ("sluicegate's parser refuses such requests with 400, as gunicorn does by default; "
           "fix the client or the proxy")

SETTINGS: Tuple[Setting, ...] = (
    # Config file
    _setting("config", "-c --config", VALUE, DONE, "--config (a FILE.py is read as gunicorn's; "
             "without one, ./gunicorn.conf.py if it exists, as gunicorn does)", "config"),
    _setting("wsgi_app", "", FILE_ONLY, DONE, "the MODULE:APP argument", "app"),
    # Server socket
    _setting("bind", "-b --bind", LIST, DONE, "--bind", "bind", _list),
    _setting("backlog", "--backlog", VALUE, DONE, "--backlog", "backlog"),
    # Worker processes
    _setting("workers", "-w --workers", VALUE, DONE, "--workers", "workers"),
    _setting("worker_class", "-k --worker-class", VALUE, DONE,
             "--worker-class: sync and gthread are what every sluicegate worker does; others "
             "are refused", "worker_class"),
    _setting("threads", "--threads", VALUE, DONE, "--threads (N is 1:N)", "threads"),
    _setting("worker_connections", "--worker-connections", VALUE, IGNORED,
             "the most clients of one async (gevent, eventlet) worker, which sluicegate has not: "
             "its event loop takes every connection, the app runs on --threads"),
    _setting("max_requests", "--max-requests", VALUE, DONE, "--max-requests", "max_requests"),
    _setting("max_requests_jitter", "--max-requests-jitter", VALUE, DONE,
             "--max-requests-jitter", "max_requests_jitter"),
    _setting("timeout", "-t --timeout", VALUE, DONE,
             "--timeout (a request's time limit: a worker is never silent while its event loop "
             "runs)", "timeout"),
    _setting("graceful_timeout", "--graceful-timeout", VALUE, DONE, "--graceful-timeout",
             "graceful_timeout"),
    _setting("keepalive", "--keep-alive", VALUE, DONE, "--keepalive-timeout", "keepalive_timeout"),
    # Security
    _setting("limit_request_line", "--limit-request-line", VALUE, DONE,
             "--limit-request-line (0: no limit of its own)", "limit_request_line"),
    _setting("limit_request_fields", "--limit-request-fields", VALUE, DONE,
             "--limit-headers (0: no limit of its own)", "limit_headers"),
    _setting("limit_request_field_size", "--limit-request-field_size", VALUE, DONE,
             "--limit-field-bytes (0: no limit of its own)", "limit_field_bytes"),
    # Debugging
    _setting("reload", "--reload", SWITCH, DONE, "--reload", "reload"),
    _setting("reload_engine", "--reload-engine", VALUE, IGNORED,
             "how gunicorn notices a change; sluicegate uses watchfiles (inotify), and what "
             "reloads is the same"),
    _setting("reload_extra_files", "--reload-extra-file", LIST, DONE, "--reload-extra",
             "reload_extra", _list),
    _setting("spew", "--spew", SWITCH, REFUSED,
             "no line tracer: the server loop is sluicegate's Rust core, not Python"),
    _setting("check_config", "--check-config", SWITCH, DONE, "--check-config", "check_config"),
    _setting("print_config", "--print-config", SWITCH, DONE, "--print-config", "print_config"),
    # Server mechanics
    _setting("preload_app", "--preload", SWITCH, DONE, "--preload", "preload"),
    _setting("sendfile", "--no-sendfile", SWITCH_OFF, IGNORED,
             "whether file responses use sendfile(2); the same bytes are sent either way",
             accepts=(True,)),
    _setting("reuse_port", "--reuse-port", SWITCH, DONE, "--reuse-port", "reuse_port"),
    _setting("chdir", "--chdir", VALUE, DONE, "--chdir", "chdir"),
    _setting("daemon", "-D --daemon", SWITCH, REFUSED,
             "sluicegate does not daemonize: run it under systemd or a container runtime "
             "(docs/operations.md)"),
    _setting("raw_env", "-e --env", LIST, DONE, "--env", "env", _list),
    _setting("pidfile", "-p --pid", VALUE, DONE, "--pid", "pid"),
    _setting("worker_tmp_dir", "--worker-tmp-dir", VALUE, IGNORED,
             "where gunicorn's workers keep their heartbeat file; sluicegate's master hears "
             "from its workers over a pipe, with no file"),
    _setting("user", "-u --user", VALUE, DONE, "--user", "user", _text, accepts=(0,)),
    _setting("group", "-g --group", VALUE, DONE, "--group", "group", _text, accepts=(0,)),
    _setting("umask", "-m --umask", VALUE, DONE, "--umask", "umask"),
    _setting("initgroups", "--initgroups", SWITCH, IGNORED,
             "sluicegate always gives --user's process that user's groups (initgroups)"),
    _setting("tmp_upload_dir", "", FILE_ONLY, IGNORED,
             "gunicorn does not use it either: request bodies are read as the app reads them"),
    _setting("secure_scheme_headers", "", FILE_ONLY, DONE,
             "--forwarded-headers x-forwarded, for gunicorn's headers and values (others are "
             "refused)", "forwarded_headers", _secure_scheme_headers),
    _setting("forwarded_allow_ips", "--forwarded-allow-ips", VALUE, DONE,
             "--forwarded-allow-ips, with gunicorn's meaning: these peers' scheme is believed, "
             "REMOTE_ADDR and %(h)s stay the peer's (the client's address from X-Forwarded-For "
             "is sluicegate's --forwarded-for-ips)", "forwarded_allow_ips"),
    _setting("pythonpath", "--pythonpath", VALUE, DONE, "--pythonpath", "pythonpath"),
    _setting("paste", "--paste --paster", VALUE, DONE,
             "the app, loaded from the PasteDeploy file with paste.deploy (refused when "
             "PasteDeploy is not installed); a [loggers] section in it is --log-config FILE",
             "app", _paste, also=_paste_logging),
    _setting("raw_paste_global_conf", "--paste-global", LIST, REFUSED,
             "no PasteDeploy global_conf: set the variables in the file's [DEFAULT] section"),
    _setting("proxy_protocol", "--proxy-protocol", OPTIONAL, DONE,
             "--proxy-protocol (gunicorn 27's off, v1, v2 and auto too; v1 and v2 alike)",
             "proxy_protocol"),
    _setting("proxy_allow_ips", "--proxy-allow-from", VALUE, DONE, "--proxy-allow-ips",
             "proxy_allow_ips"),
    _setting("protocol", "--protocol", VALUE, REFUSED,
             "the wire protocol is per listener here: bind uwsgi:HOST:PORT for uwsgi",
             accepts=("http",)),
    _setting("uwsgi_allow_ips", "--uwsgi-allow-from", VALUE, REFUSED,
             "sluicegate serves a uwsgi: listener to every peer that reaches it (the addresses "
             "a request names are believed from --forwarded-allow-ips peers only): bind it "
             "where only the proxy reaches it", accepts=("127.0.0.1,::1",)),
    _setting("permit_obsolete_folding", "--permit-obsolete-folding", SWITCH, REFUSED, _PARSER),
    _setting("strip_header_spaces", "--strip-header-spaces", SWITCH, REFUSED, _PARSER),
    _setting("permit_unconventional_http_method", "--permit-unconventional-http-method", SWITCH,
             REFUSED, _PARSER),
    _setting("permit_unconventional_http_version", "--permit-unconventional-http-version",
             SWITCH, REFUSED, _PARSER),
    _setting("casefold_http_method", "--casefold-http-method", SWITCH, REFUSED, _PARSER),
    _setting("forwarder_headers", "--forwarder-headers", VALUE, REFUSED,
             "sluicegate drops every request header whose name has '_' (gunicorn's header_map "
             "drop, with no exceptions): a proxy's SCRIPT_NAME is --root-path here"),
    _setting("header_map", "--header-map", VALUE, REFUSED,
             "sluicegate drops every request header whose name has '_' (gunicorn's default, "
             "drop); refuse and dangerous are not offered", accepts=("drop",)),
    _setting("root_path", "--root-path", VALUE, DONE, "--root-path (SCRIPT_NAME)", "root_path"),
    # Logging
    _setting("accesslog", "--access-logfile", VALUE, DONE, "--access-log", "access_log"),
    _setting("disable_redirect_access_to_syslog", "--disable-redirect-access-to-syslog", SWITCH,
             DONE, "--disable-redirect-access-to-syslog", "disable_redirect_access_to_syslog"),
    _setting("access_log_format", "--access-logformat", VALUE, DONE,
             "--access-log-format: gunicorn's %(...)s formats, every atom, written as gunicorn "
             "writes them", "access_log_format"),
    _setting("errorlog", "--error-logfile --log-file", VALUE, DONE, "--error-log", "error_log"),
    _setting("loglevel", "--log-level", VALUE, DONE, "--log-level", "log_level"),
    _setting("capture_output", "--capture-output", SWITCH, DONE, "--capture-output",
             "capture_output"),
    _setting("logger_class", "--logger-class", VALUE, IGNORED,
             "sluicegate logs through Python's logging, to gunicorn's loggers (configure them "
             "with logconfig_dict, logconfig_json or logconfig); what is served is the same",
             accepts=("gunicorn.glogging.Logger",)),
    _setting("logconfig", "--log-config", VALUE, DONE, "--log-config", "log_config"),
    _setting("logconfig_dict", "", FILE_ONLY, DONE, "--log-config-dict", "log_config_dict"),
    _setting("logconfig_json", "--log-config-json", VALUE, DONE, "--log-config-json",
             "log_config_json"),
    _setting("syslog_addr", "--log-syslog-to", VALUE, DONE, "--syslog-addr", "syslog_addr"),
    _setting("syslog", "--log-syslog", SWITCH, DONE, "--log-syslog", "log_syslog"),
    _setting("syslog_prefix", "--log-syslog-prefix", VALUE, DONE, "--syslog-prefix",
             "syslog_prefix"),
    _setting("syslog_facility", "--log-syslog-facility", VALUE, DONE, "--syslog-facility",
             "syslog_facility"),
    _setting("enable_stdio_inheritance", "-R --enable-stdio-inheritance", SWITCH, IGNORED,
             "sluicegate never daemonizes, so its standard streams are always inherited"),
    _setting("statsd_host", "--statsd-host", VALUE, DONE, "--statsd-host (gunicorn's metrics, "
             "beside --metrics-bind)", "statsd_host"),
    _setting("dogstatsd_tags", "--dogstatsd-tags", VALUE, DONE, "--dogstatsd-tags",
             "dogstatsd_tags"),
    _setting("statsd_prefix", "--statsd-prefix", VALUE, DONE, "--statsd-prefix",
             "statsd_prefix"),
    _setting("enable_backlog_metric", "--enable-backlog-metric", SWITCH, IGNORED,
             "gunicorn.backlog is not sent (the accept queue's length is "
             "sluicegate_connections_open on --metrics-bind); what is served is the same"),
    # Process naming
    _setting("proc_name", "-n --name", VALUE, DONE, "--name (the process title)", "proc_name"),
    _setting("default_proc_name", "", FILE_ONLY, IGNORED,
             "gunicorn's internal fallback for proc_name; sluicegate's is no title change"),
    # SSL
    _setting("keyfile", "--keyfile", VALUE, DONE, "--keyfile", "keyfile"),
    _setting("certfile", "--certfile", VALUE, DONE, "--certfile", "certfile"),
    _setting("ssl_version", "--ssl-version", VALUE, IGNORED,
             "deprecated in gunicorn; sluicegate serves TLS 1.2 and 1.3 (--tls-min-version)"),
    _setting("cert_reqs", "--cert-reqs", VALUE, DONE, "--cert-reqs (0, 1, 2 too)", "cert_reqs"),
    _setting("ca_certs", "--ca-certs", VALUE, DONE, "--ca-certs", "ca_certs"),
    _setting("suppress_ragged_eofs", "--suppress-ragged-eofs", SWITCH, IGNORED,
             f"how Python's ssl reports a close without close_notify; {_RUST_TLS}",
             accepts=(True,)),
    _setting("do_handshake_on_connect", "--do-handshake-on-connect", SWITCH, IGNORED,
             f"when the handshake runs, not whether; {_RUST_TLS}"),
    _setting("ciphers", "--ciphers", VALUE, REFUSED,
             f"{_RUST_TLS}, with its own cipher suites (docs/tls.md); no OpenSSL cipher list"),
    # HTTP/2 (gunicorn 25+)
    _setting("http_protocols", "--http-protocols", VALUE, DONE,
             "--http2 (h1: off; with h2: tls)", "http2", _http_protocols),
    _setting("http2_cleartext", "--http2-cleartext", VALUE, DONE,
             "--http2 on (prior-knowledge, both); upgrade is refused", "http2", _http2_cleartext,
             accepts=("off",)),
    _setting("http2_max_concurrent_streams", "--http2-max-concurrent-streams", VALUE, DONE,
             "--http2-max-streams", "http2_max_streams"),
    _setting("http2_initial_window_size", "--http2-initial-window-size", VALUE, IGNORED,
             "flow-control tuning; the Rust HTTP/2 stack sizes its windows itself, and what is "
             "served is the same"),
    _setting("http2_max_frame_size", "--http2-max-frame-size", VALUE, IGNORED,
             "framing tuning; the Rust HTTP/2 stack sizes its frames itself, and what is served "
             "is the same"),
    _setting("http2_max_header_list_size", "--http2-max-header-list-size", VALUE, REFUSED,
             "HTTP/2 header lists are bounded by --limit-header-bytes, as HTTP/1.1 heads are",
             accepts=(65536,)),
    # gunicorn 25+: parsers, ASGI, dirty arbiters, the control socket
    _setting("http_parser", "--http-parser", VALUE, IGNORED,
             "which of gunicorn's HTTP parsers; sluicegate has one, in Rust"),
    _setting("asgi_loop", "--asgi-loop", VALUE, IGNORED, _ASGI),
    _setting("asgi_lifespan", "--asgi-lifespan", VALUE, IGNORED, _ASGI),
    _setting("asgi_disconnect_grace_period", "--asgi-disconnect-grace-period", VALUE, IGNORED,
             _ASGI),
    _setting("websocket_max_message_size", "--websocket-max-message-size", VALUE, IGNORED, _ASGI),
    _setting("dirty_apps", "--dirty-app", LIST, REFUSED,
             "gunicorn's dirty arbiters (a pool for long tasks beside the workers) have no "
             "counterpart: run the tasks in a task queue"),
    _setting("dirty_workers", "--dirty-workers", VALUE, REFUSED,
             "gunicorn's dirty arbiters (a pool for long tasks beside the workers) have no "
             "counterpart: run the tasks in a task queue", accepts=(0,)),
    _setting("dirty_timeout", "--dirty-timeout", VALUE, IGNORED, _DIRTY),
    _setting("dirty_threads", "--dirty-threads", VALUE, IGNORED, _DIRTY),
    _setting("dirty_graceful_timeout", "--dirty-graceful-timeout", VALUE, IGNORED, _DIRTY),
    _setting("control_socket", "--control-socket", VALUE, DONE,
             "--control-socket (`sluicegate ctl` is the client, as gunicornc is gunicorn's)",
             "control_socket"),
    _setting("control_socket_mode", "--control-socket-mode", VALUE, IGNORED,
             "the control socket is always 0600 and answers only its own user or root"),
    _setting("control_socket_disable", "--no-control-socket", SWITCH, DONE,
             "--no-control-socket", "no_control_socket"),
)

#: The hooks gunicorn 27 has beyond those hooks.py knows (its dirty arbiters'), and why none
#: runs.
DIRTY_HOOKS = {name: f"not run: {_DIRTY}" for name in (
    "on_dirty_starting", "dirty_post_fork", "dirty_worker_init", "dirty_worker_exit")}

BY_NAME: Dict[str, Setting] = {s.name: s for s in SETTINGS}
BY_FLAG: Dict[str, Setting] = {f: s for s in SETTINGS for f in s.flags}


#: What `judge` returns for a value that sets nothing (it asks for what sluicegate does).
NOTHING = object()


def judge(setting: Setting, value: Any, where: str) -> Any:
    """A value of `setting` given at `where` (`--worker-tmp-dir`, `FILE, line N: name`): the
    value for its option (done), or NOTHING after a warning line (ignored) or silently (a value
    that asks for what sluicegate does). Raises OptionError (refused), naming `where`."""
    if setting.answer == DONE:
        try:
            return setting.convert(value)
        except Refused as e:
            raise OptionError(f"{where} {_shown(value)}: {e}") from None
        except Ignored as e:
            warn(f"{where} ignored: {e}")
            return NOTHING
    if setting.asks_for_nothing(value):
        return NOTHING
    if setting.answer == IGNORED:
        warn(f"{where} ignored: {setting.text}")
        return NOTHING
    shown = "" if value is True else f" {_shown(value)}"
    raise OptionError(f"{where}{shown}: {setting.text}")


def options_of(setting: Setting, value: Any, where: str) -> Dict[str, Any]:
    """`judge`, as the options a value sets: {} (ignored, or what sluicegate does), or the
    setting's option and what else it sets (`also`)."""
    got = judge(setting, value, where)
    if got is NOTHING:
        return {}
    out = {str(setting.option): got}
    if setting.also is not None:
        out.update({k: v for k, v in setting.also(got).items() if k not in out})
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def warn(message: str) -> None:
    """One line on the error log; before logging is set up (options are read before the server
    starts), straight to standard error in the CLI's own form."""
    if log.handlers:
        log.warning(message)
    else:
        print(f"sluicegate: warning: {one_line(message)}", file=sys.stderr, flush=True)


def hook_answers() -> Dict[str, Tuple[str, str]]:
    """Every gunicorn hook: (done, '') for those hooks.py runs, (ignored, why) for the rest."""
    out: Dict[str, Tuple[str, str]] = {name: (DONE, "run with gunicorn's arguments")
                                       for name in SUPPORTED_HOOKS}
    out.update({name: (IGNORED, why) for name, why in UNSUPPORTED_HOOKS.items()})
    out.update({name: (IGNORED, why) for name, why in DIRTY_HOOKS.items()})
    return out


def markdown() -> List[str]:
    """docs/options.md's last section: every gunicorn setting (23 to 27) and its answer."""
    lines = [
        "## gunicorn's settings",
        "",
        "Every setting of gunicorn 23 to 27 has one answer here, the same whether it is given",
        "on the command line (gunicorn's flag), in a gunicorn.conf.py (`--config FILE.py`) or",
        "as a key of the TOML file (its gunicorn name): **done** (the sluicegate option named,",
        "with gunicorn's meaning), **ignored** (accepted, with one warning line saying why: it",
        "cannot change what is served) or **refused** (the start stops with one line saying",
        "why: ignoring it would change what is served). An ignored or refused setting given",
        "the value that asks for what sluicegate does anyway (None, False, gunicorn's default",
        "where it says so) is taken silently. gunicorn's flags that are not sluicegate's own",
        "spellings are left out of `--help`. As in gunicorn, the `sluicegate` command also",
        "takes flags from `$GUNICORN_CMD_ARGS` (the command line overrides them, and they",
        "override the file), and reads `./gunicorn.conf.py` when no `--config` names a file.",
        "",
        "| gunicorn setting | Flags | Answer | Option, or why |",
        "| --- | --- | --- | --- |",
    ]
    for s in SETTINGS:
        flags = ", ".join(f"`{f}`" for f in s.flags) or "(file only)"
        lines.append(f"| `{s.name}` | {flags} | {s.answer} | {s.text} |")
    for name, (answer, why) in hook_answers().items():
        lines.append(f"| `{name}` | (hook, file only) | {answer} | {why} |")
    lines.append("")
    return lines

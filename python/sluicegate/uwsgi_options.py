"""uWSGI's options and sluicegate's answer to each: the one table that says what a uWSGI option
does under `sluicegate-uwsgi`, whether it comes from an ini, yaml, json or xml file, the
command line or a UWSGI_* variable (uwsgi_config.py resolves those into (name, value) pairs).

Each answer is one of three, as for gunicorn's settings (gunicorn_settings.py):
  - done: uWSGI's meaning, converted into sluicegate option values (uwsgi_convert.py);
  - ignored: accepted, and one warning line says why ignoring it cannot change what is served;
  - refused: the start stops with one line saying why (ignoring it would change what is
    served) and what to do instead. A switch given as off, or an empty value, asks for
    nothing and is taken silently.
A name that is not a uWSGI option (uwsgi_option_names.txt, from uWSGI 2.0's) is a
placeholder, as uWSGI takes it (refused under `strict`); a uWSGI option this table does not
list is refused, naming docs/uwsgi.md.

Where the list comes from: the options set by about ninety uwsgi.ini/yaml/xml files, command
lines and UWSGI_* environments of public repositories (Django, Flask and OpenStack
deployments, Docker images, Ansible and Helm templates), found by searching public code for
`[uwsgi]`, `uwsgi-socket`, `harakiri`, `static-map`, `chmod-socket`, `reload-on-rss`,
`log-format`, `spooler`, `cache2`, `emperor` and `route`; every option one of them sets is
here, with the other spellings of the same option. docs/uwsgi.md is generated from it
(`python -m sluicegate.uwsgi_options --markdown > docs/uwsgi.md`); tests/test_uwsgi_options.py
fails when a listed option has no answer or the page differs.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Dict, Optional, Sequence, Tuple

from . import uwsgi_convert as c
from .errors import OptionError
from .gunicorn_settings import DONE, IGNORED, REFUSED, Ignored, Refused, warn
from .options import BY_NAME as SLUICEGATE_OPTIONS
from .resolution import Raw


@dataclasses.dataclass(frozen=True)
class UwsgiOption:
    """One uWSGI option (its spellings, the first the name uWSGI documents) and the answer;
    `text`: for done, what it becomes; else the one-line reason."""

    names: Tuple[str, ...]
    answer: str
    text: str
    convert: Optional[c.Convert] = None


def done(names: str, text: str, convert: c.Convert) -> UwsgiOption:
    return UwsgiOption(tuple(names.split()), DONE, text, convert)


def ignored(names: str, why: str) -> UwsgiOption:
    return UwsgiOption(tuple(names.split()), IGNORED, why)


def refused(names: str, why: str) -> UwsgiOption:
    return UwsgiOption(tuple(names.split()), REFUSED, why)


def _nothing(plan: c.Plan, value: str, where: str) -> None:
    """Read by the config language (uwsgi_config.py) before the table sees the pairs."""


_CONFIG = "read by the configuration language (uwsgi_config.py), as uWSGI reads it"
_PYTHON = "Python is sluicegate's own interpreter, and HTTP, static files and the uwsgi protocol are built in"
_THREADS = "Python threads always run here, and the app's calls run on --threads"
_ROUTER = ("uWSGI's HTTP router process: sluicegate's workers speak HTTP on that address "
           "themselves, with no process between")
_ROUTING = ("uWSGI's internal routing has no counterpart: do it in nginx (or the app); "
            "ignoring the rules would serve what they change")
_CACHE = "uWSGI's caching framework has no counterpart: use a cache server (Redis, memcached)"
_SPOOLER = "uWSGI's spooler (tasks in files) has no counterpart: run the tasks in a task queue"
_MULES = "uWSGI's mules (worker processes without requests) have no counterpart: run the code in a process of its own (attach-daemon)"
_CRON = "uWSGI's cron has no counterpart: use cron or a systemd timer"
_EMPEROR = "sluicegate runs one app, not an Emperor of vassals: run one sluicegate-uwsgi per vassal (a systemd template unit)"
_ASYNC = "another concurrency model (green threads): sluicegate's app calls run on --threads"
_CHEAPER = ("sluicegate runs `processes` workers always (each with an elastic pool of "
            "threads), so the answers are the same")
_LOGLINES = ("under disable-logging, which lines are still written; sluicegate's keeps "
             "4xx, 5xx and slow ones (log-4xx, log-5xx, log-slow): what is served is the same")
_SIGNALS = "sluicegate's signals are uWSGI 2.0's (docs/operations.md, Coming from uWSGI)"

TABLE: Tuple[UwsgiOption, ...] = (
    # The configuration language
    done("ini yaml json xml include inherit set set-placeholder set-ph for for-glob for-readline "
         "endfor if-env if-not-env if-exists if-not-exists if-file if-not-file if-dir "
         "if-not-dir if-opt if-not-opt endif", _CONFIG, _nothing),
    done("strict", "placeholders (names that are not uWSGI options) are refused, as in uWSGI",
         c.keep("strict")),
    # Sockets
    done("socket", "--bind uwsgi:ADDRESS (the uwsgi protocol, for nginx's uwsgi_pass; http "
         "with protocol = http): HOST:PORT, :PORT (every interface), a unix PATH, @NAME "
         "(abstract), =N (the Nth shared-socket)", c.socket("default")),
    done("uwsgi-socket", "--bind uwsgi:ADDRESS, whatever protocol says", c.socket("uwsgi")),
    done("http-socket http11-socket", "--bind ADDRESS (plain HTTP; keep-alive always)",
         c.socket("http")),
    done("http", f"--bind ADDRESS (plain HTTP): {_ROUTER}", c.socket("http")),
    done("https https-socket", "--bind https:ADDRESS with --certfile CERT --keyfile KEY (from "
         "ADDRESS,CERT,KEY[,,CA]: with CA, --ca-certs and client certificates required, "
         "optional with !CA); a cipher list is refused (rustls)", c.https),
    done("protocol socket-protocol", "what socket speaks: uwsgi (the default) or http; others "
         "are refused", c.protocol),
    done("shared-socket", "an address =N names in socket, http and the others (bound before "
         "--user, as every address is)", c.shared_socket),
    done("listen", "--backlog", c.to("backlog")),
    done("chmod-socket", "--socket-mode (666 when given alone)",
         c.to("socket_mode", c.chmod_socket)),
    done("chown-socket", "--socket-owner", c.to("socket_owner")),
    done("umask", "--umask", c.to("umask")),
    done("vacuum", "--vacuum", c.switch("vacuum")),
    done("reuse-port", "--reuse-port", c.switch("reuse_port")),
    done("http-enable-proxy-protocol", "--proxy-protocol", c.switch("proxy_protocol")),
    # Processes
    done("master", "a master process (--workers, at least 1); SIGTERM then reloads unless "
         "die-on-term (--on-term)", c.keep("master")),
    done("processes workers", "--workers N (with no master, N > 1 still gets one)",
         c.keep("processes")),
    done("threads", "--threads N:N (N threads per worker, started with it, as uWSGI's "
         "prethreaded workers; uWSGI's default, one, when not given)", c.keep("threads")),
    done("lazy-apps lazy", "no --preload: each worker imports the app (without it the master "
         "imports it and forks the workers, --preload, as uWSGI does)", c.keep("lazy-apps")),
    done("harakiri", "--timeout N (504 and RequestTimeout raised in the call) and --max-stuck 1 "
         "(its worker is replaced, gracefully)", c.keep("harakiri")),
    done("max-requests", "--max-requests", c.to("max_requests")),
    done("max-requests-delta", "--uwsgi-compat max-requests-delta=N: worker K (from 1) is "
         "replaced after max-requests + (K-1)*N requests, as in uWSGI",
         c.keep("max-requests-delta")),
    done("min-worker-lifetime", "--uwsgi-compat min-worker-lifetime=N: max-requests replaces "
         "no worker younger than N seconds (10 when not given, as in uWSGI)",
         c.keep("min-worker-lifetime")),
    done("max-worker-lifetime", "--max-worker-lifetime", c.to("max_worker_lifetime")),
    done("max-worker-lifetime-delta", "--max-worker-lifetime-delta",
         c.to("max_worker_lifetime_delta")),
    done("reload-on-rss", "--max-rss N M (megabytes, as uWSGI counts them)",
         c.keep("reload-on-rss")),
    done("evil-reload-on-rss", "--max-rss N M too (the smaller of the two wins; the worker is "
         "replaced gracefully, not killed)", c.keep("evil-reload-on-rss")),
    done("worker-reload-mercy", "--graceful-timeout (the larger of it and reload-mercy)",
         c.keep("worker-reload-mercy")),
    done("reload-mercy", "--graceful-timeout (the larger of it and worker-reload-mercy)",
         c.keep("reload-mercy")),
    done("die-on-term", "--on-term stop (without it, with a master: --on-term reload, "
         "uWSGI 2.0's SIGTERM)", c.keep("die-on-term")),
    done("hook-master-start", "unix_signal:15 gracefully_kill_them_all is --on-term stop; "
         "other hooks are refused", c.hook_master_start),
    done("pidfile pidfile2 safe-pidfile safe-pidfile2", "--pid", c.to("pid")),
    done("uid", "--user", c.to("user")),
    done("gid", "--group", c.to("group")),
    done("chdir chdir2", "--chdir (before the app is imported; the directory sluicegate "
         "started in stays on sys.path)", c.to("chdir")),
    done("pythonpath python-path pp", "--pythonpath (globs expanded)", c.pythonpath),
    done("virtualenv home venv pyhome", "the environment's own sluicegate-uwsgi is run when it "
         "has one; else its site-packages (this Python version's) go first on sys.path; else "
         "refused, saying to install sluicegate in it", c.virtualenv),
    done("env", "--env KEY=VALUE", c.each("env")),
    done("module wsgi", "the app: MODULE (MODULE:callable), MODULE:APP, MODULE:factory(); a "
         "path is a file, as wsgi-file", c.app("module")),
    done("wsgi-file file", "the app: that file's callable (file:PATH#CALLABLE)", c.app("file")),
    done("callable", "the name of module's or wsgi-file's app (default application)",
         c.keep("callable")),
    done("mount", "MOUNTPOINT=APP, several times for several apps (module or wsgi-file "
         "beside them has the mountpoint \"\"): each request goes to its mountpoint's app, "
         "else to the first one loaded, as uWSGI chooses (uwsgi_mounts.py)", c.app("mount")),
    done("manage-script-name", "a request under a mountpoint gets it as SCRIPT_NAME and the "
         "rest as PATH_INFO, the longest mountpoint winning, as in uWSGI (uwsgi_mounts.py)",
         c.keep("manage-script-name")),
    done("touch-reload touch-chain-reload touch-workers-reload", "--touch-reload (a graceful "
         "reload, new workers ready before the old ones stop)", c.each("touch_reload")),
    done("attach-daemon attach-control-daemon", "--attach-daemon", c.each("attach_daemon")),
    done("smart-attach-daemon", "--smart-attach-daemon", c.each("smart_attach_daemon")),
    done("hook-pre-app", "exec:COMMAND is --exec-pre-app COMMAND; other hooks are refused",
         c.hook_pre_app),
    done("exec-pre-app", "--exec-pre-app", c.each("exec_pre_app")),
    done("py-autoreload py-auto-reload python-autoreload", "--reload (any N > 0)",
         c.py_autoreload),
    done("procname", "--proc-name", c.to("proc_name")),
    # Static files
    done("static-map", "--static /URL=DIR;index=none with --static-fallthrough (a missing "
         "file goes to the app, as in uWSGI); a mount of one file (/favicon.ico=FILE) serves "
         "that file alone, through a directory holding only a link to it", c.static_map(False)),
    done("static-map2", "--static /URL=DIR/URL (the whole path under DIR)", c.static_map(True)),
    done("check-static static-check", "--static /=DIR with --static-fallthrough",
         c.check_static),
    done("static-index", "index=NAME on every static mount (none without it, as in uWSGI)",
         c.keep("static-index")),
    done("static-expires", "--static-expires", c.each("static_expires")),
    done("static-expires-uri", "--static-expires-uri", c.each("static_expires_uri")),
    done("static-expires-type", "--static-expires on the type's file extensions",
         c.static_expires_type),
    done("static-gzip-all static-gzip static-gzip-dir static-gzip-ext static-gzip-prefix "
         "static-gzip-suffix", "what --static does always: a FILE.gz beside FILE is sent to "
         "clients that accept gzip (and FILE.br to those that take brotli)", _nothing),
    # Limits
    done("buffer-size", "--limit-header-bytes (uWSGI's default 4096 when not given) with "
         "--uwsgi-compat buffer-size: a larger head gets uWSGI's log line (invalid request "
         "block size, invalid HTTP request size) and the connection is closed (nginx answers "
         "502)", c.keep("buffer-size")),
    done("limit-post", "--limit-body (0: sluicegate's default); a larger body is answered 413",
         c.limit_post),
    done("http-timeout socket-timeout", "--header-timeout, --read-timeout and --write-timeout "
         "(the app's own time is harakiri's)", c.timeouts),
    # Logging
    done("disable-logging", "--access-log-when none, or the conditions of log-4xx, log-5xx, "
         "log-slow", c.keep("disable-logging")),
    done("log-4xx", "--access-log-when 4xx (with disable-logging)", c.log_when("4xx")),
    done("log-5xx", "--access-log-when 5xx (with disable-logging)", c.log_when("5xx")),
    done("log-slow", "--access-log-when slow=MS (with disable-logging)", c.log_when("slow")),
    done("log-format logformat", "--uwsgi-log-format (uWSGI's variables)",
         c.to("uwsgi_log_format", str)),
    done("log-date logdate", "--log-date FORMAT (on when given alone)",
         c.to("log_date", c.log_date)),
    done("log-micros", "--access-log-format uwsgi-micros: the request line's time in "
         "microseconds", c.keep("log-micros")),
    done("log-x-forwarded-for", "--access-log-forwarded-for",
         c.switch("access_log_forwarded_for")),
    done("log-reopen", "--log-reopen", c.switch("log_reopen")),
    done("touch-logreopen", "--touch-logreopen", c.each("touch_logreopen")),
    done("logto logto2", "--error-log FILE, and the request log in it too (as uWSGI writes "
         "both there)", c.logto),
    done("logger", "file:PATH: as logto; syslog[:IDENT[,FACILITY]]: --log-syslog; stdio: "
         "standard error; others refused", c.logger),
    done("req-logger logger-req", "file:PATH: --access-log PATH; stdio: standard output; "
         "others refused", c.req_logger),
    done("add-header", "--add-header", c.each("add_header")),
    done("stats stats-server", "--stats ADDRESS (uWSGI's stats JSON, for uwsgitop)",
         c.to("stats")),
    done("stats-http", "--stats-http", c.switch("stats_http")),
    # Ignored: cannot change what is served
    ignored("enable-threads", _THREADS),
    ignored("single-interpreter", "sluicegate runs one interpreter per process always"),
    ignored("thunder-lock", "how workers share accept(); sluicegate's workers spread "
            "connections themselves"),
    ignored("offload-threads", "file answers are sent by the Rust core (sendfile), beside the "
            "app's threads"),
    ignored("need-app", "sluicegate never starts without its app: it stops with one line"),
    ignored("no-orphans", "sluicegate's workers stop when their master is gone, always "
            "(PR_SET_PDEATHSIG, messages.py)"),
    ignored("post-buffering post-buffering-bufsize", "the body reaches the app the same; an "
            "unread body is drained (--max-drain) or the connection closed"),
    ignored("memory-report", "the memory is in the stats (--stats) and --metrics-bind"),
    ignored("harakiri-verbose", "a call past --timeout is always logged with its stack"),
    ignored("harakiri-graceful-timeout", "a stuck call gets RequestTimeout at harakiri and its "
            "worker is replaced gracefully (--graceful-timeout bounds it)"),
    ignored("log-master", "which process writes the log lines; the master and the workers "
            "write to the same log, and what is served is the same"),
    ignored("log-maxsize log-backupname", "sluicegate does not rotate its logs: use logrotate "
            "with log-reopen or touch-logreopen (or USR1)"),
    ignored("log-zero log-big log-sendfile log-ioerror", _LOGLINES),
    ignored("auto-procname procname-prefix procname-prefix-spaced procname-append "
            "procname-master", "process titles are sluicegate's (--proc-name)"),
    ignored("plugin plugins need-plugin need-plugins plugins-dir plugin-dir autoload", _PYTHON),
    ignored("http-keepalive", "HTTP/1.1 keep-alive is always on"),
    ignored("http-auto-chunked", "an answer without a length is always chunked on HTTP/1.1"),
    ignored("http-processes http-workers", _ROUTER),
    ignored("http-headers-timeout http-connect-timeout",
            "the HTTP router's timeouts; sluicegate's are socket-timeout's"),
    ignored("cheaper cheaper-initial cheaper-step cheaper-algo cheaper-overload "
            "cheap idle die-on-idle", _CHEAPER),
    ignored("py-call-osafterfork", "signals reach sluicegate's workers as it handles them"),
    ignored("wsgi-env-behavior", "how uWSGI allocates the environ; the app sees the same keys"),
    ignored("wsgi-disable-file-wrapper", "the file's bytes are sent either way"),
    ignored("ignore-sigpipe ignore-write-errors disable-write-exception", "a client that "
            "leaves is not reported to the app (its iterable is closed) nor logged as an "
            "error"),
    ignored("so-keepalive tcp-nodelay no-defer-accept", "TCP tuning; the same bytes are "
            "served"),
    ignored("cpu-affinity", "CPU placement; the same answers"),
    ignored("max-fd", "raise the descriptor limit with ulimit -n or systemd's LimitNOFILE="),
    ignored("master-as-root", "sluicegate's master runs as the user it starts as"),
    ignored("show-config", "sluicegate-uwsgi prints nothing of its own (sluicegate's "
            "--print-config shows resolved options)"),
    ignored("vhost no-default-app", "one app per server: the app is the default app"),
    ignored("reload-on-as evil-reload-on-as", "sluicegate recycles on resident memory "
            "(reload-on-rss), not address space"),
    ignored("chunked-input-limit chunked-input-timeout", "chunked bodies are bounded by "
            "limit-post and socket-timeout"),
    ignored("static-cache-paths static-cache-paths-name", "sluicegate caches static files "
            "itself, until inotify reports a change"),
    ignored("mimefile", "content types come from sluicegate's own table"),
    ignored("mule-reload-mercy", _MULES),
    ignored("py-tracebacker", "GET /debug/requests on --metrics-bind shows every call's stack "
            "(--debug-requests)"),
    ignored("threads-stacksize threads-stack-size", _THREADS),
    ignored("harakiri-no-arh", "uWSGI's after-request hooks are not run here, so there is "
            "nothing for harakiri to skip"),
    # Refused: ignoring them would change what is served
    refused("daemonize daemonize2", "sluicegate does not daemonize: run it under systemd or a "
            "container runtime (docs/operations.md)"),
    refused("emperor emperor-tyrant emperor-stats vassals-include vassal-sos", _EMPEROR),
    refused("spooler spooler-processes spooler-import spooler-chdir spooler-frequency "
            "spooler-external spooler-harakiri spooler-max-tasks", _SPOOLER),
    refused("mule mules farm", _MULES),
    refused("cron cron2 unique-cron legion-cron", _CRON),
    refused("route route-if route-if-not route-uri route-host route-qs route-run "
            "route-label route-remote-addr route-user-agent route-referer response-route "
            "final-route error-route", _ROUTING),
    refused("cache2 cache cache-blocksize load-file-in-cache", _CACHE),
    refused("http-to http-to-https fastrouter rawrouter sslrouter subscribe-to "
            "subscribe2", "uWSGI's routers forward to other instances: put nginx or HAProxy "
            "there"),
    refused("gevent async ugreen loop gevent-early-monkey-patch gevent-monkey-patch", _ASYNC),
    refused("master-fifo", "no master FIFO: reload with HUP or touch-reload, reopen logs with "
            "USR1 or touch-logreopen, or use `sluicegate ctl`"),
    refused("catch-exceptions", "sluicegate never sends a traceback to the client (it is in "
            "the error log)"),
    refused("pyargv", "sys.argv is sluicegate-uwsgi's command line; give the app its "
            "settings with env"),
    refused("import pyimport python-import py-import shared-import shared-pyimport",
            "modules imported beside the app: import them from the app's module"),
    refused("http-auto-gzip", "no gzip of answers by a header: compress in nginx or the app"),
    refused("smart-attach-daemon2 attach-daemon2", "use attach-daemon, or smart-attach-daemon "
            "with a command that writes its pid file"),
    refused("limit-as", "set it with ulimit -v or systemd's LimitAS= (it applies "
            "to sluicegate's processes alike)"),
    refused("log-encoder log-route log-req-route", "log lines are not re-encoded or routed: "
            "give log-format the line you want"),
    refused("reload-on-exception touch-exec touch-signal", "no counterpart; " + _SIGNALS),
)

BY_NAME: Dict[str, UwsgiOption] = {n: o for o in TABLE for n in o.names}

#: uWSGI's own options (the other names are placeholders) and what each takes: r (a value),
#: n (nothing: a switch) or o (an optional value), from uwsgi_option_names.txt's first two
#: columns (uwsgi_config.py reads the same file).
with open(os.path.join(os.path.dirname(__file__), "uwsgi_option_names.txt"),
          encoding="utf-8") as _f:
    ARGUMENT: Dict[str, str] = {
        line.split()[0]: line.split()[1] for line in _f.read().splitlines()
        if line.strip() and not line.startswith("#")}
UWSGI_NAMES = frozenset(ARGUMENT)


def plan_of(pairs: Sequence[Tuple[str, Optional[str]]]) -> c.Plan:
    """The pairs uWSGI would apply, in order, through the table: a Plan, after one warning
    line per ignored option. Raises OptionError on a refused one."""
    plan = c.Plan()
    strict = any(n == "strict" and c.uwsgi_on(v) for n, v in pairs)
    for name, value in pairs:
        value = "1" if value is None else value  # a switch given alone
        where = f"uWSGI {name}"
        option = BY_NAME.get(name)
        if option is None:
            if name not in UWSGI_NAMES:
                if strict:
                    raise OptionError(f"{where}: not a uWSGI option, and strict refuses "
                                      "placeholders")
                continue  # a placeholder, as uWSGI keeps it
            raise OptionError(f"{where} = {value!r}: this uWSGI option has no answer in "
                              "sluicegate (docs/uwsgi.md lists those that have one)")
        if option.answer != DONE:
            if not _asks_for_something(name, value):
                continue
            if option.answer == IGNORED:
                warn(f"{where} ignored: {option.text}")
                continue
            shown = "" if value in ("", "1") else f" = {value!r}"
            raise OptionError(f"{where}{shown}: {option.text}")
        try:
            assert option.convert is not None
            option.convert(plan, value, where)
        except Refused as e:
            raise OptionError(f"{where} = {value!r}: {e}") from None
        except Ignored as e:
            warn(f"{where} ignored: {e}")
    return plan


def _asks_for_something(name: str, value: str) -> bool:
    """An ignored or refused switch given as off asks for nothing (an empty value is on, as
    uWSGI reads it); so does an option with an empty value, or 0 (no mules, no threads)."""
    if ARGUMENT.get(name, "r") == "n":
        return c.uwsgi_on(value)
    return value.strip() != "" and c.uwsgi_on(value)


def given_of(plan: c.Plan) -> Dict[str, Raw]:
    """The plan's sluicegate options; each must exist in this sluicegate (OptionError names
    the one missing)."""
    try:
        given = plan.given()
    except Refused as e:
        raise OptionError(f"uWSGI configuration: {e}") from None
    for option, raw in given.items():
        if option not in SLUICEGATE_OPTIONS:
            raise OptionError(f"{raw.source}: needs sluicegate's --{option.replace('_', '-')}, "
                              "which this build lacks")
    return given


def markdown() -> str:
    """docs/uwsgi.md: every option of the table and its answer."""
    lines = [
        "# uWSGI's options under sluicegate-uwsgi",
        "",
        "<!-- Generated from python/sluicegate/uwsgi_options.py by",
        "     `python -m sluicegate.uwsgi_options --markdown > docs/uwsgi.md`; do not edit by hand. -->",
        "",
        "`sluicegate-uwsgi` takes uWSGI's command line and configuration files unchanged",
        "(docs/operations.md, \"Coming from uWSGI\"). Every uWSGI option below has one answer,",
        "wherever it is given (an ini, yaml, json or xml file, the command line, a `UWSGI_*`",
        "variable): **done** (uWSGI's meaning, as the sluicegate options named), **ignored**",
        "(accepted, with one warning line saying why: it cannot change what is served) or",
        "**refused** (the start stops with one line saying why: ignoring it would change what",
        "is served). An ignored or refused switch given as off, or an empty value, is taken",
        "silently. A name that is not a uWSGI option is a placeholder, as in uWSGI (refused",
        "under `strict`); a uWSGI option not listed here is refused, naming this page.",
        "",
        "The list: every option set by about ninety uWSGI configurations of public",
        "repositories (ini, yaml and xml files, command lines and `UWSGI_*` environments of",
        "Django, Flask and OpenStack deployments, Docker images, Ansible and Helm templates),",
        "with the other spellings of the same options; python/sluicegate/uwsgi_options.py",
        "says how it was gathered. Under `sluicegate-uwsgi`, `import uwsgi` and",
        "`uwsgidecorators` work in the app (`--uwsgi-module`).",
        "",
        "| uWSGI option | Answer | sluicegate, or why |",
        "| --- | --- | --- |",
    ]
    for o in TABLE:
        names = ", ".join(f"`{n}`" for n in o.names)
        lines.append(f"| {names} | {o.answer} | {o.text.replace('|', '/')} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    print("usage: python -m sluicegate.uwsgi_options --markdown", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

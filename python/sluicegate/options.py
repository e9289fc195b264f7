"""The one table of sluicegate's options: `OPTIONS`, one row (`Option`, option_row.py) per
option, in the order --help and docs/options.md list them.

Every option is declared once, here (name, parser, default, help, metavar, repeatable, gunicorn
spellings). Everything else is derived from this table, so nothing can drift:
  - the command line and its `--help` (command_line.py), gunicorn's spellings of the same
    options among them (`aliases`, `-w`, `--keep-alive`, ...),
  - the environment variables `SLUICEGATE_<NAME>`, the `--config` files and the keywords and
    defaults of `sluicegate.serve()`, resolved into a `Config` (resolution.py),
  - the `Config` record (validated.py: one field per row, written out for type checkers; this
    module fails to import if its fields differ from the table in name, order or type, and
    `python -m sluicegate.options --config-class` prints the fields to paste),
  - the keys passed straight through to the Rust core (`core=True`), and so the `ServerConfig`
    type in _core.pyi (generated, see config.py) and the keys src/config.rs must read,
  - docs/options.md (options_doc.py, run as `python -m sluicegate.options --markdown >
    docs/options.md`).
tests/test_options_contract.py fails on any drift between the table and these.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

from . import (answer_options, control, listeners, log_options, options_doc, options_tls,
               process_options, uwsgi_rows)
from .hooks import Hooks, parse_hooks
from .listeners import BindAddress
from .option_row import ENV_PREFIX, Option
from .syspath import parse_pythonpath
from .validated import Config
from .parsers import (
    StaticMount, _parse_umask, _str, parse_access_log,
    parse_access_log_format, parse_app, parse_bind_value, parse_bool,
    parse_chdir, parse_count, parse_count_or_zero, parse_env_item, parse_error_log,
    parse_forwarded_allow_ips, parse_forwarded_headers, parse_health_path, parse_http2,
    parse_http3,
    parse_http3_congestion,
    parse_log_config_dict, parse_log_level, parse_metrics_bind, parse_path, parse_path_or_off,
    parse_positive_size, parse_proc_name, parse_proxy_protocol, parse_root_path,
    parse_scheduler, parse_seconds, parse_spin, parse_pace, parse_seconds_or_off, parse_server_header, parse_size,
    parse_static, parse_threads, parse_warmup, parse_worker_class,
    parse_workers,
)

OPTIONS: Tuple[Option, ...] = (
    Option(
        "app", parse_app, "sluicegate.demo:app",
        "The WSGI application to serve, as MODULE:APP; MODULE alone means MODULE:application "
        "(as with gunicorn: myproject.wsgi). APP may be a dotted attribute "
        "(pkg.mod:obj.app) or a factory call with literal arguments (mod:create_app() or "
        "mod:create_app('prod', debug=False)). The current directory is searched first. "
        "Without it, sluicegate serves its built-in demo app.",
        "MODULE:APP", Union[str, Callable[..., Any]], positional=True,
    ),
    Option(
        "bind", parse_bind_value, ["127.0.0.1:8000"],
        "Address to listen on: HOST:PORT, :PORT (every IPv4 interface, 0.0.0.0, as with "
        "gunicorn), [IPV6]:PORT or unix:PATH. Port 0 picks a free port "
        "(the 'Listening at:' log line shows it). Give it several times to listen on several "
        "addresses.",
        "ADDRESS", Tuple[BindAddress, ...], short="-b", repeatable=True,
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
        "FILE", Optional[str], short="-c",
    ),
    Option(
        "check_config", parse_bool, "false",
        "Validate every option, check that --user and --group exist and that the directories "
        "of --access-log, --error-log and --pid do, and import the app, then exit: 0 if all "
        "is well, else 2 with one line saying what is wrong.",
        "", bool, switch=True,
    ),
    Option(
        "print_config", parse_bool, "false",
        "Print the resolved options as TOML, each with where its value came from (command line, "
        "environment, config file or default), then exit.",
        "", bool, switch=True,
    ),
    Option(
        "workers", parse_workers, None,
        "Run a master process and this many worker processes, each with its own event loop and "
        "app threads, all serving the same sockets (auto: one per CPU available). The master "
        "replaces a worker that dies and handles reloads (HUP) and the other operations "
        "signals (docs/operations.md). Unset: one process serves, without a master.",
        "N", Optional[int], short="-w",
    ),
    Option(
        "worker_class", parse_worker_class, "gthread",
        "gunicorn's worker type, accepted so that its command lines work: sync and gthread "
        "name what every sluicegate process does (an event loop, and an elastic pool of "
        "threads for the app: --threads); any other (gevent, eventlet, uvicorn's) is refused.",
        "CLASS", str, short="-k",
    ),
    Option(
        "preload", parse_bool, "false",
        "With --workers: import the app in the master before forking the workers (memory "
        "shared copy-on-write, an import error found before any worker starts). A reload (HUP) "
        "then restarts the workers with the master's copy of the app.",
        "", bool, switch=True,
    ),
    Option(
        "max_requests", parse_count_or_zero, "0",
        "With --workers: replace a worker after it has served this many requests (plus a random "
        "0..--max-requests-jitter); its replacement is ready before it stops accepting, and it "
        "finishes its in-flight requests. Meanwhile, while another worker serves, it ends "
        "keep-alive after each answer and leaves new connections to the others. 0: never.",
        "N", int,
    ),
    Option(
        "max_requests_jitter", parse_count_or_zero, "0",
        "A random 0..N added to --max-requests per worker, so workers are not all replaced at "
        "once.",
        "N", int,
    ),
    Option(
        "reload", parse_bool, "false",
        "For development: watch the app's Python files (under the working directory) and "
        "replace the workers when one changes; code that does not import leaves the old "
        "workers serving. Runs a master with one worker unless --workers says more. Needs "
        "the watchfiles package (pip install 'sluicegate[reload]').",
        "", bool, switch=True,
    ),
    Option(
        "reload_extra", parse_path, [],
        "With --reload: also replace the workers when this file (or anything under this "
        "directory) changes: templates, configuration. Give it several times for several.",
        "PATH", Tuple[str, ...], repeatable=True, aliases=("--reload-extra-file",),
    ),
    Option(
        "warmup", parse_warmup, "",
        "Before a worker (or a single server) says it is ready, call the app once with GET of "
        "this path, in the process (no socket, from 127.0.0.1; http://HOST/PATH sets the Host "
        "header): an answer of 500 or more, or an exception, fails the boot, so a reload "
        "(HUP, --reload) whose code errors on this path is abandoned and the old workers keep "
        "serving. Name a path that touches what a deploy can break. Empty: off.",
        "PATH", str,
    ),
    Option(
        "django_checks", parse_bool, "false",
        "For a Django app: run Django's system checks (manage.py check) before a worker says "
        "ready; an error fails its boot (a reload is abandoned). Without it a Django app's "
        "URLconf, and every view module it imports, is still imported before ready.",
        "", bool, switch=True,
    ),
    Option(
        "max_rss", parse_size, "0",
        "With --workers: replace a worker whose resident memory passes this size (e.g. 512M), "
        "the same way as --max-requests: its replacement is ready before it stops, and it "
        "finishes its in-flight requests. The master looks every 0.5 s. 0: never.",
        "BYTES", int,
    ),
    *process_options.option_rows(Option, parse_path, parse_seconds_or_off),
    Option(
        "user", parse_path, None,
        "Run as this user (name or uid) after binding the sockets and before importing the app; "
        "its primary group too unless --group is given. Needs root at start.",
        "USER", Optional[str], short="-u",
    ),
    Option(
        "group", parse_path, None,
        "Run as this group (name or gid), dropped to with --user.",
        "GROUP", Optional[str], short="-g",
    ),
    Option(
        "umask", _parse_umask, None,
        "Set the process umask first (octal, e.g. 027): the permissions of unix socket files and of files "
        "the app creates. Unset: inherited, and unix socket files are made under umask 0 (srwxrwxrwx: "
        "gunicorn's default; the directory decides who reaches them).",
        "MASK", Optional[int], short="-m",
    ),
    Option(
        "pid", parse_path_or_off, None,
        "Write the server's (the master's) process id to this file at start; removed at exit.",
        "FILE", Optional[str], short="-p",
    ),
    Option(
        "proc_name", parse_proc_name, None,
        "Set the process titles (ps, top, /proc/PID/cmdline) as gunicorn's --name does: "
        "'sluicegate: master [NAME]', 'sluicegate: worker [NAME]', or 'sluicegate: server "
        "[NAME]' for a single process, with the setproctitle package (pip install "
        "'sluicegate[setproctitle]'); without it, the short process name (/proc/PID/comm, "
        "15 bytes, what top shows) becomes master:NAME, worker:NAME or server:NAME. Unset: "
        "titles are left alone.",
        "NAME", Optional[str], short="-n", aliases=("--name",),
    ),
    Option(
        "threads", parse_threads, "auto",
        "Bounds of the elastic pool of threads that run the app: MIN:MAX, or N for 1:N. Threads "
        "beyond MIN are started under load and stop when idle. auto: 1:1024, except 1:48 for an "
        "app that holds a database connection per thread (Django with a database other than "
        "SQLite and no connection pool), so that a burst stays within PostgreSQL's default "
        "connection limit (see docs/deploying.md).",
        "MIN:MAX", Optional[Tuple[int, int]],
    ),
    Option(
        "max_runnable", parse_count_or_zero, "1",
        "Most app calls on the pool that may run Python at once, for short requests and again "
        "for long ones (by what their path took recently); further requests wait in order, "
        "short ones first, and a call seen blocked (sleeping, waiting for a database) stops "
        "counting, so blocking apps still get up to MAX threads. Keeps a burst of requests from "
        "becoming a convoy of threads fighting for the GIL (see docs/architecture.md). 0: no "
        "limit.",
        "N", int, core=True,
    ),
    Option(
        "scheduler", parse_scheduler, "adaptive",
        "Where app calls run. adaptive: inline on the event loop's thread while calls return "
        "quickly, on the pool as soon as one blocks (see docs/architecture.md). inline: always "
        "inline (a blocked call is still taken over). pool: always on the pool (for apps known "
        "to block on every request).",
        "MODE", str, core=True,
    ),
    Option(
        "spin", parse_spin, "auto",
        "Whether the event loop looks for events for up to 50 µs before it sleeps, when its "
        "sleeps have been short (a client that answers at once gets its next answer sooner, "
        "for CPU spent looking). auto: only when the process may use every CPU of the machine "
        "(no cgroup CPU quota or cpuset below them: in a container with a CPU limit the spin "
        "would spend the quota the app needs). on: whatever the allowance. off: never.",
        "MODE", str, core=True,
    ),
    Option(
        "pace", parse_pace, "off",
        "auto: pace the CPU under 90% of the cgroup's quota (docs/deploying.md). off: never.",
        "MODE", str, core=True,
    ),
    Option(
        "backlog", parse_count, "2048",
        "Most connections waiting to be accepted (listen(2) backlog; the kernel may cap it at "
        "net.core.somaxconn).",
        "N", int,
    ),
    Option(
        "reuse_port", parse_bool, "false",
        "Set SO_REUSEPORT on the TCP listeners before binding, so that other processes that "
        "set it too (another sluicegate, a new release started beside the old one) can bind "
        "the same address and port; the kernel then spreads new connections over them.",
        "", bool, switch=True,
    ),
    *listeners.option_rows(Option, parse_bool),
    Option(
        "header_timeout", parse_seconds, "10",
        "Seconds a client has to send a whole request head; slower gets 408 Request Timeout "
        "(protects against slowloris).",
        "SECONDS", float, core=True,
    ),
    Option(
        "keepalive_timeout", parse_seconds, "75",
        "Seconds an idle keep-alive connection is kept open waiting for its next request.",
        "SECONDS", float, core=True, aliases=("--keep-alive",),
    ),
    Option(
        "read_timeout", parse_seconds, "30",
        "Seconds without progress while the app reads a request body; the app's read then "
        "fails and the connection is closed.",
        "SECONDS", float, core=True,
    ),
    Option(
        "min_body_rate", parse_size, "240",
        "Bytes per second a request body must average, counted from its start, once the "
        "first 5 seconds have passed; a slower client (one byte a second still makes progress) "
        "is cut: the app's read raises TimeoutError and the client gets 408 if nothing was sent. "
        "0: no minimum.",
        "BYTES", int, core=True,
    ),
    Option(
        "body_timeout", parse_seconds_or_off, "0",
        "Seconds a whole request body may take from its start, however fast it comes; past it, "
        "as for --min-body-rate. 0: no limit.",
        "SECONDS", float, core=True,
    ),
    Option(
        "write_timeout", parse_seconds, "30",
        "Seconds without progress while sending a response; the connection is then closed.",
        "SECONDS", float, core=True,
    ),
    Option(
        "timeout", parse_seconds_or_off, "0",
        "Seconds an app call may run; past it: 504 (or the connection closed), its stack logged, "
        "sluicegate.RequestTimeout raised in it (docs/operations.md, --max-stuck). 0: off.",
        "SECONDS", float, core=True, short="-t",
    ),
    Option(
        "max_stuck", parse_count_or_zero, "4",
        "With --workers and --timeout: when this many app calls of one worker are past the "
        "timeout and still running, the worker is replaced the way --max-requests replaces "
        "one (its replacement is ready first, its other requests finish). 0: never.",
        "N", int,
    ),
    Option(
        "graceful_timeout", parse_seconds, "30",
        "Seconds in-flight requests get to finish after SIGTERM or the first SIGINT.",
        "SECONDS", float, core=True,
    ),
    Option(
        "limit_request_line", parse_size, "8k",
        "Longest request line (method, target, version) in bytes; longer gets 414 URI Too Long. "
        "0: no limit of its own, as in gunicorn (--limit-header-bytes still bounds it).",
        "BYTES", int, core=True,
    ),
    Option(
        "limit_header_bytes", parse_positive_size, "64k",
        "Largest request head (request line and header fields) in bytes; larger gets 431 "
        "Request Header Fields Too Large.",
        "BYTES", int, core=True,
    ),
    Option(
        "limit_headers", parse_count_or_zero, "100",
        "Most header fields in one request; more gets 431 Request Header Fields Too Large. "
        "0: no limit of its own (--limit-header-bytes still bounds them).",
        "N", int, core=True, aliases=("--limit-request-fields",),
    ),
    Option(
        "limit_field_bytes", parse_size, "0",
        "Longest header field line (name, colon, value, and its CRLF) in bytes, gunicorn's "
        "--limit-request-field_size (its default is 8190); longer gets 431 Request Header "
        "Fields Too Large. In HTTP/2, a field's name and value. 0: no limit of its own "
        "(--limit-header-bytes still bounds it).",
        "BYTES", int, core=True,
        aliases=("--limit-request-field_size", "--limit-request-field-size"),
    ),
    Option(
        "limit_body", parse_size, "1G",
        "Largest request body in bytes; larger gets 413 Content Too Large.",
        "BYTES", int, core=True,
    ),
    Option(
        "limit_response_headers", parse_size, "64k",
        "Largest header section the app may give start_response (names and values, bytes); "
        "larger is refused like any invalid header: the app gets a ValueError naming the "
        "header, the client a 500, the error log the reason.",
        "BYTES", int, core=True,
    ),
    Option(
        "max_drain", parse_size, "64k",
        "A request body the app did not read is drained up to this many bytes so the "
        "connection can be kept alive; a larger one closes the connection.",
        "BYTES", int, core=True,
    ),
    Option(
        "http2", parse_http2, "on",
        "HTTP/2 (docs/http-support.md). on: TLS listeners offer h2 beside http/1.1 (ALPN) and "
        "plain listeners accept h2c with prior knowledge (a connection that opens with the "
        "HTTP/2 preface); tls: only over TLS; off: HTTP/1.1 only (a preface gets 505).",
        "MODE", str, core=True,
    ),
    Option(
        "http2_max_streams", parse_count, "100",
        "Most concurrent streams one HTTP/2 connection may open "
        "(SETTINGS_MAX_CONCURRENT_STREAMS); each is one app call.",
        "N", int, core=True,
    ),
    Option(
        "http3", parse_http3, "off",
        "HTTP/3 (QUIC, docs/http3.md) on every TLS listener (`--http3` alone, `--http3 on`, `--http3 off`): "
        "a UDP socket on the same address and port, the same certificate (TLS 1.3, ALPN h3), and an "
        "Alt-Svc header on the HTTP/1.1 and HTTP/2 answers of TLS listeners so that clients move to it. "
        "No 0-RTT unless --http3-0rtt. Each connection's concurrent request streams: "
        "--http2-max-streams and a quarter more (a finished stream's credit comes back once the "
        "client acknowledged its end).",
        "", str, switch=True, core=True,
    ),
    Option(
        "http3_0rtt", parse_bool, "false",
        "With --http3, accept 0-RTT (TLS early data) from a client resuming a session: GET, "
        "HEAD and OPTIONS requests that arrive in it are served at once (the environ's "
        "sluicegate.early_data is True), any other request waits until the handshake "
        "completes (docs/http3.md). Early data can be replayed by an attacker.",
        "", bool, switch=True, core=True,
    ),
    Option(
        "http3_retry_above", parse_count_or_zero, "64",
        "With --http3, QUIC handshakes in progress past which a client whose address is not "
        "validated yet is sent a Retry first (one more round trip; its token proves the "
        "address). 0: every new client gets one.",
        "N", int, core=True,
    ),
    Option(
        "http3_congestion", parse_http3_congestion, "bbr",
        "With --http3, QUIC's congestion controller: bbr (the default: it keeps its rate "
        "through random loss), cubic or newreno (each halves or cuts its window at every "
        "loss, which on a lossy link holds a transfer far below the link's rate; "
        "docs/http3.md).",
        "NAME", str, core=True,
    ),
    Option(
        "static", parse_static, [],
        "Serve the files under DIRECTORY at URL_PREFIX (/static, or /static/ as Django's STATIC_URL writes it) from the "
        "Rust core, without calling the app: GET and HEAD with sendfile, Range, conditional requests, precompressed .br/.gz "
        "siblings, files up to 64 KiB kept in memory (4 MiB per process) until inotify reports a change. Settings after ';': "
        "max-age=N and immutable (Cache-Control), index=NAME|none (default index.html), dotfiles (serve names starting with "
        "'.'), follow-symlinks (allow symlinks that leave the directory), fallthrough (no file: the app answers, "
        "as --static-fallthrough for this mount alone; uWSGI's check-static is /=DIR;fallthrough). Give it several "
        "times for several mounts.",
        "URL_PREFIX=DIRECTORY[;SETTING...]", Tuple[StaticMount, ...], repeatable=True,
    ),
    Option(
        "static_fallthrough", parse_bool, "false",
        "When no static file matches a request under a --static prefix, pass the request to the "
        "app instead of answering 404.",
        "", bool, switch=True, core=True,
    ),
    *answer_options.static_rows(Option),
    Option(
        "write_high_water", parse_positive_size, "1M",
        "Backpressure for streaming responses: when more than this many bytes are queued for a "
        "client that reads slowly, the app's thread waits until half of them are sent. Over "
        "HTTP/2, the most bytes a connection holds for streams whose window is shut before "
        "the app's thread waits.",
        "BYTES", int, core=True,
    ),
    Option(
        "root_path", parse_root_path, "",
        "The path the app is mounted at, given to it as SCRIPT_NAME: empty, or like /app (a "
        "leading '/' and no trailing '/').",
        "PATH", str, core=True,
    ),
    Option(
        "forwarded_allow_ips", parse_forwarded_allow_ips, "127.0.0.1,::1,unix",
        "Peers (addresses, CIDR networks, 'unix' for unix-socket peers, '*' for all) whose scheme is "
        "believed, as gunicorn's setting means: X-Forwarded-Proto or X-Forwarded-Ssl (or Forwarded's "
        "proto) becomes wsgi.url_scheme. REMOTE_ADDR and the access log's client stay the peer's "
        "(for those, --forwarded-for-ips). Also whose uwsgi variables are believed, and who may "
        "send a PROXY protocol header (without --proxy-allow-ips). Empty: nobody.",
        "LIST", str, core=True,
    ),
    Option(
        "forwarded_for_ips", parse_forwarded_allow_ips, "",
        "Peers (as --forwarded-allow-ips lists them) whose forwarding headers are believed whole: the "
        "client's address, scheme, host and port they give become REMOTE_ADDR, REMOTE_PORT, wsgi.url_scheme, "
        "HTTP_HOST, SERVER_NAME, SERVER_PORT and the access log's client (X-Forwarded-For read from the "
        "right, past these peers). Empty: nobody (REMOTE_ADDR is the peer's, as in gunicorn).",
        "LIST", str, core=True,
    ),
    Option(
        "proxy_protocol", parse_proxy_protocol, "false",
        "Every HTTP listener expects a PROXY protocol header (v1 or v2, HAProxy's send-proxy "
        "and send-proxy-v2) before the first request, from peers in --forwarded-allow-ips "
        "only; its client address becomes the connection's. One listener only: bind it as "
        "proxy:HOST:PORT. A missing or malformed header closes the connection. gunicorn's "
        "modes are taken too: --proxy-protocol v1, v2 or auto is on, off is off.",
        "", bool, switch=True,
    ),
    Option(
        "proxy_allow_ips", parse_forwarded_allow_ips, "",
        "Peers (as --forwarded-allow-ips lists them) that may send a PROXY protocol header, "
        "when they are not those of --forwarded-allow-ips: gunicorn's --proxy-allow-from. "
        "The headers of the requests that follow are then believed or not by "
        "--forwarded-allow-ips, for the client the PROXY header names. Empty: the peers of "
        "--forwarded-allow-ips.",
        "LIST", str, core=True, aliases=("--proxy-allow-from",),
    ),
    *options_tls.ROWS,
    Option(
        "forwarded_headers", parse_forwarded_headers, "x-forwarded",
        "Which forwarding headers are read from trusted peers: 'x-forwarded' (X-Forwarded-For, "
        "-Proto, -Ssl, -Host, -Port) or 'forwarded' (RFC 7239). Only one family: a proxy that "
        "sets one passes the other through from the client, who could then spoof it.",
        "FAMILY", str, core=True,
    ),
    Option(
        "health_path", parse_health_path, "",
        "A path the server answers itself, without calling the app: GET or HEAD of it gets "
        "200 OK, and 503 from the moment a stop begins (see --drain-delay). Answered by the "
        "event loop within milliseconds even while every app thread is busy, so a load "
        "balancer's health check does not queue behind the app. Empty: off.",
        "PATH", str, core=True,
    ),
    Option(
        "drain_delay", parse_seconds_or_off, "0",
        "Seconds a graceful stop (SIGTERM, a reload's old workers) keeps accepting and serving "
        "as before while --health-path answers 503, so that a load balancer takes the server "
        "out before its listener closes; --graceful-timeout counts from the end of it. 0: off.",
        "SECONDS", float, core=True,
    ),
    Option(
        "access_log", parse_access_log, None,
        "Write one line per request to this file; '-' means standard output, 'off' writes "
        "none (a file named off is ./off).",
        "PATH", Optional[str], aliases=("--access-logfile",),
    ),
    Option(
        "access_log_format", parse_access_log_format, "combined",
        "The access log's lines: 'combined' (the Apache/nginx combined format), 'common', "
        "'json' (one object per line, every field below, valid JSON for any byte), a template "
        "of {fields}: client, time, method, target, path, query, protocol, status, bytes, "
        "referer, user_agent, request_id (X-Request-Id), queue_us (parsed to app called), "
        "app_us (app called to iterable closed), send_us (first byte to last byte taken by the "
        "kernel), total_us, end (ok, client_gone, timeout, error), pid, scheduler (inline, "
        "pool, loop); or gunicorn's format, byte for byte as gunicorn writes it: "
        "'%(h)s %(l)s %(u)s %(t)s \"%(r)s\" %(s)s %(b)s \"%(f)s\" \"%(a)s\"' with any of its "
        "atoms h l u t r m U q H s B b f a T D M L p %({header}i)s %({header}o)s %({VAR}e)s "
        "(docs/operations.md, \"Access log\").",
        "FORMAT", str, aliases=("--access-logformat",), core=True,
    ),
    Option("server_timing", parse_bool, "false",
           "Add a Server-Timing header to every app response: queue;dur= and app;dur= (the app's "
           "time until its head was sent), in milliseconds.",
           "", bool, switch=True, core=True,),
    Option("early_hints", parse_bool, "true", "Send the 103 Early Hints of wsgi.early_hints; "
           "false: none (behind nginx < 1.29: docs/http-support.md).", "BOOL", bool, core=True),
    Option("metrics_bind", parse_metrics_bind, "",
           "Serve Prometheus metrics (GET /metrics) and the app calls in flight with their Python "
           "stacks (GET /debug/requests, with --debug-requests only) on this address of their "
           "own, HOST:PORT or unix:PATH, answered by the Rust core's event loop as a listener of "
           "its own. With --workers the master answers there with the sum over its workers (one "
           "scrape target; counters never go back when a worker is replaced), and worker N (its "
           "slot, from 1) listens on PORT+N (or PATH.N) with its own series labelled "
           "worker=\"N\". Empty: off.",
           "ADDRESS", str,),
    Option("debug_requests", parse_bool, "false",
           "Serve GET /debug/requests on --metrics-bind: every app call in flight, its request "
           "line (query strings shown as ?…) and its Python stack, which shows the app's source "
           "lines. Off by default: whoever reaches the metrics port can read it.",
           "", bool, switch=True, core=True,),
    *control.option_rows(Option, parse_bool),
    Option(
        "log_level", parse_log_level, "info",
        "Level of the error log (standard error, or --error-log): debug, info, warning, error or critical. "
        "debug also prints the traceback behind an app loading error.",
        "LEVEL", str, core=True,
    ),
    Option(
        "error_log", parse_error_log, "-",
        "Write the error log (start and stop, workers, app errors and tracebacks) to this file, "
        "appended, instead of standard error ('-'). The sluicegate command opens it before it "
        "starts (relative to the directory it starts in) and makes it the process's standard "
        "error, so the workers and the Rust core write there too, and so do errors after that "
        "point. Set once at start (not on HUP); USR1 opens it again by its path in the master "
        "and every worker (logrotate). serve() leaves standard error alone.",
        "PATH", Optional[str], aliases=("--error-logfile", "--log-file"),
    ),
    Option(
        "capture_output", parse_bool, "false",
        "Send the app's standard output (print()) to the error log file too: with --error-log "
        "FILE, descriptor 1 becomes FILE as well, as gunicorn's --capture-output does (and as "
        "there, --access-log - then writes to FILE). Without --error-log FILE it changes "
        "nothing (the app's standard error already is the error log). Set once at start.",
        "", bool, switch=True,
    ),
    *log_options.option_rows(Option, parse_bool, parse_path, _str, parse_log_config_dict),
    Option(
        "hooks", parse_hooks, None,
        "gunicorn's server hooks: a module (MODULE, imported after --chdir, or a FILE.py) "
        "whose functions with gunicorn's hook names (on_starting, post_fork, "
        "post_worker_init, pre_request, ...) run as gunicorn runs them, with its arguments "
        "(docs/operations.md, \"Hooks\"). A "
        "gunicorn.conf.py given to --config sets this from its own functions. Set once at "
        "start.",
        "MODULE", Optional[Hooks],
    ),
    Option(
        "server_header", parse_server_header, "sluicegate",
        "Value of the Server response header (ASCII, at most 256 bytes); empty sends none.",
        "TEXT", str, core=True,
    ),
    *answer_options.header_rows(Option),
    Option(
        "chdir", parse_chdir, None,
        "Change to this directory before loading the app; relative --access-log and unix: "
        "paths are then relative to it too.",
        "DIR", Optional[str],
    ),
    Option(
        "pythonpath", parse_pythonpath, None,
        "Directories put first on sys.path (comma-separated, relative to --chdir) before the "
        "hooks and the app: gunicorn's --pythonpath (docs/operations.md).",
        "DIRS", Optional[str],
    ),
    Option(
        "env", parse_env_item, [],
        "Set this environment variable for the app, KEY=VALUE (e.g. "
        "DJANGO_SETTINGS_MODULE=mysite.settings.prod), as gunicorn's -e does: the sluicegate "
        "command sets it before loading the app, in the master and so in every worker; "
        "serve() leaves os.environ alone. Set once at start. Give it several times for several.",
        "KEY=VALUE", Tuple[str, ...], short="-e", repeatable=True,
    ),
    *uwsgi_rows.option_rows(Option, parse_bool),
)

BY_NAME: Dict[str, Option] = {o.name: o for o in OPTIONS}


def config_matches_options() -> Optional[str]:
    """None when Config's fields are exactly OPTIONS (names, order, types), else what differs."""
    hints = typing.get_type_hints(Config)
    fields = [(f.name, hints[f.name]) for f in dataclasses.fields(Config)]
    table = [(o.name, o.type) for o in OPTIONS]
    if fields == table:
        return None
    return (f"Config fields {fields} differ from OPTIONS {table}: paste the output of "
            "`python -m sluicegate.options --config-class` into class Config (validated.py)")


def config_class_fields() -> str:
    """Config's field lines, as they must be written (for --config-class)."""
    def spell(t: Any) -> str:
        text = t.__name__ if isinstance(t, type) else repr(t)
        return re.sub(r"\b(?:[a-z_]+\.)+([A-Za-z_]\w*)", r"\1", text)
    return "".join(f"    {o.name}: {spell(o.type)}\n" for o in OPTIONS)


_mismatch = config_matches_options()
if _mismatch:  # a programming error: the table and the class were edited apart
    raise AssertionError(_mismatch)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--config-class"]:
        sys.stdout.write(config_class_fields())
        return 0
    if args != ["--markdown"]:
        print("usage: python -m sluicegate.options --markdown > docs/options.md | --config-class",
              file=sys.stderr)
        return 2
    sys.stdout.write(options_doc.markdown(OPTIONS, ENV_PREFIX))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The options table's rows (options.py) for HTTP as the core serves it: the timeouts, the limits
of a request, the protocols (HTTP/2, HTTP/3), the app's writes and mount path, the health path
and the drain before a stop, and what is added to the answers.
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Tuple

from .option_row import Option
from .parsers import (parse_add_header, parse_bool, parse_count, parse_count_or_zero,
                      parse_health_path, parse_http2, parse_http3, parse_http3_congestion,
                      parse_positive_size, parse_root_path, parse_seconds, parse_seconds_or_off,
                      parse_server_header, parse_size)


#: How long a client, an app call and a stop may take.
TIMEOUTS: Tuple[Option, ...] = (
    Option(
        "header_timeout", parse_seconds, "10",
        "Seconds a client has to send a whole request head; slower gets 408 Request Timeout "
        "(protects against slowloris).",
        "SECONDS", "float", core=True,
    ),
    Option(
        "keepalive_timeout", parse_seconds, "75",
        "Seconds an idle keep-alive connection is kept open waiting for its next request.",
        "SECONDS", "float", core=True, aliases=("--keep-alive",),
    ),
    Option(
        "read_timeout", parse_seconds, "30",
        "Seconds without progress while the app reads a request body; the app's read then "
        "fails and the connection is closed.",
        "SECONDS", "float", core=True,
    ),
    Option(
        "min_body_rate", parse_size, "240",
        "Bytes per second a request body must average, counted from its start, once the "
        "first 5 seconds have passed; a slower client (one byte a second still makes progress) "
        "is cut: the app's read raises TimeoutError and the client gets 408 if nothing was sent. "
        "0: no minimum.",
        "BYTES", "int", core=True,
    ),
    Option(
        "body_timeout", parse_seconds_or_off, "0",
        "Seconds a whole request body may take from its start, however fast it comes; past it, "
        "as for --min-body-rate. 0: no limit.",
        "SECONDS", "float", core=True,
    ),
    Option(
        "write_timeout", parse_seconds, "30",
        "Seconds without progress while sending a response; the connection is then closed.",
        "SECONDS", "float", core=True,
    ),
    Option(
        "timeout", parse_seconds_or_off, "0",
        "Seconds an app call may run; past it: 504 (or the connection closed), its stack logged, "
        "sluicegate.RequestTimeout raised in it (docs/operations.md, --max-stuck). 0: off.",
        "SECONDS", "float", core=True, short="-t",
    ),
    Option(
        "max_stuck", parse_count_or_zero, "4",
        "With --workers and --timeout: when this many app calls of one worker are past the "
        "timeout and still running, the worker is replaced the way --max-requests replaces "
        "one (its replacement is ready first, its other requests finish). 0: never.",
        "N", "int",
    ),
    Option(
        "graceful_timeout", parse_seconds, "30",
        "Seconds in-flight requests get to finish after SIGTERM or the first SIGINT.",
        "SECONDS", "float", core=True,
    ),
)


#: How large a request (and the app's header section) may be.
LIMITS: Tuple[Option, ...] = (
    Option(
        "limit_request_line", parse_size, "8k",
        "Longest request line (method, target, version) in bytes; longer gets 414 URI Too Long. "
        "0: no limit of its own, as in gunicorn (--limit-header-bytes still bounds it).",
        "BYTES", "int", core=True,
    ),
    Option(
        "limit_header_bytes", parse_positive_size, "64k",
        "Largest request head (request line and header fields) in bytes; larger gets 431 "
        "Request Header Fields Too Large.",
        "BYTES", "int", core=True,
    ),
    Option(
        "limit_headers", parse_count_or_zero, "100",
        "Most header fields in one request; more gets 431 Request Header Fields Too Large. "
        "0: no limit of its own (--limit-header-bytes still bounds them).",
        "N", "int", core=True, aliases=("--limit-request-fields",),
    ),
    Option(
        "limit_field_bytes", parse_size, "0",
        "Longest header field line (name, colon, value, and its CRLF) in bytes, gunicorn's "
        "--limit-request-field_size (its default is 8190); longer gets 431 Request Header "
        "Fields Too Large. In HTTP/2, a field's name and value. 0: no limit of its own "
        "(--limit-header-bytes still bounds it).",
        "BYTES", "int", core=True,
        aliases=("--limit-request-field_size", "--limit-request-field-size"),
    ),
    Option(
        "limit_body", parse_size, "1G",
        "Largest request body in bytes; larger gets 413 Content Too Large.",
        "BYTES", "int", core=True,
    ),
    Option(
        "limit_response_headers", parse_size, "64k",
        "Largest header section the app may give start_response (names and values, bytes); "
        "larger is refused like any invalid header: the app gets a ValueError naming the "
        "header, the client a 500, the error log the reason.",
        "BYTES", "int", core=True,
    ),
    Option(
        "max_drain", parse_size, "64k",
        "A request body the app did not read is drained up to this many bytes so the "
        "connection can be kept alive; a larger one closes the connection.",
        "BYTES", "int", core=True,
    ),
)


#: HTTP/2 and HTTP/3.
PROTOCOLS: Tuple[Option, ...] = (
    Option(
        "http2", parse_http2, "on",
        "HTTP/2 (docs/http-support.md). on: TLS listeners offer h2 beside http/1.1 (ALPN) and "
        "plain listeners accept h2c with prior knowledge (a connection that opens with the "
        "HTTP/2 preface); tls: only over TLS; off: HTTP/1.1 only (a preface gets 505).",
        "MODE", "str", core=True,
    ),
    Option(
        "http2_max_streams", parse_count, "100",
        "Most concurrent streams one HTTP/2 connection may open "
        "(SETTINGS_MAX_CONCURRENT_STREAMS); each is one app call.",
        "N", "int", core=True,
    ),
    Option(
        "http3", parse_http3, "off",
        "HTTP/3 (QUIC, docs/http3.md) on every TLS listener (`--http3` alone, `--http3 on`, `--http3 off`): "
        "a UDP socket on the same address and port, the same certificate (TLS 1.3, ALPN h3), and an "
        "Alt-Svc header on the HTTP/1.1 and HTTP/2 answers of TLS listeners so that clients move to it. "
        "No 0-RTT unless --http3-0rtt. Each connection's concurrent request streams: "
        "--http2-max-streams and a quarter more (a finished stream's credit comes back once the "
        "client acknowledged its end).",
        "", "str", switch=True, core=True,
    ),
    Option(
        "http3_0rtt", parse_bool, "false",
        "With --http3, accept 0-RTT (TLS early data) from a client resuming a session: GET, "
        "HEAD and OPTIONS requests that arrive in it are served at once (the environ's "
        "sluicegate.early_data is True), any other request waits until the handshake "
        "completes (docs/http3.md). Early data can be replayed by an attacker.",
        "", "bool", switch=True, core=True,
    ),
    Option(
        "http3_retry_above", parse_count_or_zero, "64",
        "With --http3, QUIC handshakes in progress past which a client whose address is not "
        "validated yet is sent a Retry first (one more round trip; its token proves the "
        "address). 0: every new client gets one.",
        "N", "int", core=True,
    ),
    Option(
        "http3_congestion", parse_http3_congestion, "bbr",
        "With --http3, QUIC's congestion controller: bbr (the default: it keeps its rate "
        "through random loss), cubic or newreno (each halves or cuts its window at every "
        "loss, which on a lossy link holds a transfer far below the link's rate; "
        "docs/http3.md).",
        "NAME", "str", core=True,
    ),
)


#: The app's writes held back, and the path it is mounted at.
APP_IO: Tuple[Option, ...] = (
    Option(
        "write_high_water", parse_positive_size, "1M",
        "Backpressure for streaming responses: when more than this many bytes are queued for a "
        "client that reads slowly, the app's thread waits until half of them are sent. Over "
        "HTTP/2, the most bytes a connection holds for streams whose window is shut before "
        "the app's thread waits.",
        "BYTES", "int", core=True,
    ),
    Option(
        "root_path", parse_root_path, "",
        "The path the app is mounted at, given to it as SCRIPT_NAME: empty, or like /app (a "
        "leading '/' and no trailing '/').",
        "PATH", "str", core=True,
    ),
)


#: The health path and the drain before a stop.
HEALTH: Tuple[Option, ...] = (
    Option(
        "health_path", parse_health_path, "",
        "A path the server answers itself, without calling the app: GET or HEAD of it gets "
        "200 OK, and 503 from the moment a stop begins (see --drain-delay). Answered by the "
        "event loop within milliseconds even while every app thread is busy, so a load "
        "balancer's health check does not queue behind the app. Empty: off.",
        "PATH", "str", core=True,
    ),
    Option(
        "drain_delay", parse_seconds_or_off, "0",
        "Seconds a graceful stop (SIGTERM, a reload's old workers) keeps accepting and serving "
        "as before while --health-path answers 503, so that a load balancer takes the server "
        "out before its listener closes; --graceful-timeout counts from the end of it. 0: off.",
        "SECONDS", "float", core=True,
    ),
)


#: Server-Timing and 103 Early Hints.
TIMING_AND_HINTS: Tuple[Option, ...] = (
    Option("server_timing", parse_bool, "false",
           "Add a Server-Timing header to every app response: queue;dur= and app;dur= (the app's "
           "time until its head was sent), in milliseconds.",
           "", "bool", switch=True, core=True,),
    Option("early_hints", parse_bool, "true", "Send the 103 Early Hints of wsgi.early_hints; "
           "false: none (behind nginx < 1.29: docs/http-support.md).", "BOOL", "bool", core=True),
)


#: Headers the server adds to its answers.
HEADERS: Tuple[Option, ...] = (
    Option(
        "server_header", parse_server_header, "sluicegate",
        "Value of the Server response header (ASCII, at most 256 bytes); empty sends none.",
        "TEXT", "str", core=True,
    ),
    Option("add_header", parse_add_header, [],
           "Add this header to every HTTP/1.1 and uwsgi-protocol answer: the app's (after "
           "its own headers, even one of the same name, as uWSGI's add-header appends), "
           "static files' and --health-path's; not the server's own error answers (400, "
           "408, 431, ...) nor HTTP/2 and HTTP/3 answers. 'Name: value', checked as the "
           "app's headers are. Give it several times for several headers.",
           "\"NAME: VALUE\"", "Tuple[str, ...]", repeatable=True),
)

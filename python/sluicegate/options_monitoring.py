"""The options table's rows (options.py) for watching and steering a running server: the
Prometheus metrics and in-flight calls port (metrics_total.py), the control socket that
`sluicegate ctl` talks to (control_server.py), and gunicorn's statsd metrics (statsd.py).
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional, Tuple

from .option_row import Option
from .parsers import (parse_bool, parse_control_socket, parse_metrics_bind, parse_statsd_host,
                      parse_str)


#: Prometheus metrics and /debug/requests.
METRICS: Tuple[Option, ...] = (
    Option("metrics_bind", parse_metrics_bind, "",
           "Serve Prometheus metrics (GET /metrics) and the app calls in flight with their Python "
           "stacks (GET /debug/requests, with --debug-requests only) on this address of their "
           "own, HOST:PORT or unix:PATH, answered by the Rust core's event loop as a listener of "
           "its own. With --workers the master answers there with the sum over its workers (one "
           "scrape target; counters never go back when a worker is replaced), and worker N (its "
           "slot, from 1) listens on PORT+N (or PATH.N) with its own series labelled "
           "worker=\"N\". Empty: off.",
           "ADDRESS", "str",),
    Option("debug_requests", parse_bool, "false",
           "Serve GET /debug/requests on --metrics-bind: every app call in flight, its request "
           "line (query strings shown as ?…) and its Python stack, which shows the app's source "
           "lines. Off by default: whoever reaches the metrics port can read it.",
           "", "bool", switch=True, core=True,),
)


#: The control socket.
CONTROL: Tuple[Option, ...] = (
    Option(
        "control_socket", parse_control_socket, "",
        "The control socket's path (a unix socket, mode 0600), which `sluicegate ctl` talks to: "
        "status, in-flight requests, reload, worker counts, log reopening, stop "
        "(docs/operations.md). Empty: $XDG_RUNTIME_DIR/sluicegate-PID.ctl, or "
        "/tmp/sluicegate-PID.ctl without it, PID being the master's (or the single process's).",
        "PATH", "str",
    ),
    Option(
        "no_control_socket", parse_bool, "false",
        "Run no control socket (`sluicegate ctl` then cannot reach this server).",
        "", "bool", switch=True, core=True,
    ),
)


#: gunicorn's statsd metrics.
STATSD: Tuple[Option, ...] = (
    Option("statsd_host", parse_statsd_host, None,
           "Send gunicorn's statsd metrics here (HOST:PORT, port 8125 by default, or "
           "unix:PATH), beside --metrics-bind (docs/operations.md, \"statsd\").",
           "ADDRESS", "Optional[str]"),
    Option("statsd_prefix", parse_str, "",
           "A prefix for every statsd metric's name ('.' put after it).", "PREFIX", "str"),
    Option("dogstatsd_tags", parse_str, "",
           "Datadog tags for every statsd metric: comma-separated key:value pairs.", "TAGS", "str"),
)

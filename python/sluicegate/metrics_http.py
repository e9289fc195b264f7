"""The HTTP side of the master's `--metrics-bind` listener (metrics_total.py): reading one
worker's `/metrics` and answering the scraper, with the standard library's HTTP client and
server on threads of their own (a scrape every few seconds; no request's path goes here).

A module of its own because `http.client` and `http.server` import the `email`, `ssl`,
`socketserver`, `mimetypes` and `shutil` modules with them: about 5 MB of a process's memory,
which every worker forked from the master would carry too. metrics_total.py imports this module
only when it starts a listener, so a server without `--metrics-bind` never loads them.
"""

from __future__ import annotations

import http.client
import http.server
import socket

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Callable, Optional

from . import thread_names

#: How long a scrape waits for one worker's answer before leaving it out of the gauges (its
#: counters keep their last reading).
WORKER_TIMEOUT_S = 2.0


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def fetch(address: str) -> Optional[str]:
    """GET /metrics from a worker's listener (`HOST:PORT` or `unix:PATH`); None if it does not
    answer 200 in time. A wildcard host is reached over loopback."""
    if address.startswith("unix:"):
        conn: http.client.HTTPConnection = _UnixConnection(address[5:], WORKER_TIMEOUT_S)
    else:
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        conn = http.client.HTTPConnection(host, int(port), timeout=WORKER_TIMEOUT_S)
    try:
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        body = r.read()
        return body.decode("utf-8", "replace") if r.status == 200 else None
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    timeout = 10  # a scraper that sends nothing does not hold a thread
    server: "ScrapeServer"

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404, "only /metrics here; each worker's own listener has the rest")
            return
        body = self.server.page().encode()
        self.send_response(200)
        self.send_header("Content-Type", self.server.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # scrapes are not logged


class ScrapeServer(http.server.ThreadingHTTPServer):
    """The scraper's HTTP server on the listening socket `sock`, answering `page()`."""

    daemon_threads = True

    def process_request_thread(self, request: object, client_address: object) -> None:
        thread_names.name_this_thread("sg-scrape")  # a thread per scrape, named for the kernel
        super().process_request_thread(request, client_address)

    def __init__(self, sock: socket.socket, content_type: str, page: Callable[[], str]) -> None:
        super().__init__(("", 0), _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.content_type = content_type
        self.page = page

"""gunicorn's statsd metrics that the Python front emits (`--statsd-host`): the number of
workers as a gauge (`gunicorn.workers`, from a master, when it changes) and a counter per
warning, error, critical and exception line of the error log (`gunicorn.log.warning`, ...),
in gunicorn's names and spelling (`instrument/statsd.py`), with `--statsd-prefix` and
`--dogstatsd-tags`. Each request's metrics are the Rust core's (`observe::statsd`), sent on
a socket of each worker's own.

A datagram that cannot be sent (no receiver) is lost, as in gunicorn; nothing is logged
for it, so a missing receiver cannot make the error log count itself. Nor does a receiver that
cannot be reached stop the start, as in gunicorn: a name that does not resolve or a unix path
where nothing listens yet is said once (a warning of this process, the master or the single
server; a worker's core says nothing more), the metrics are dropped, and the connection is
tried again at most every RETRY_S (the core's writer thread does the same for its own).
Names, prefixes and tags beyond ASCII go out as UTF-8, as the core sends them.
"""

from __future__ import annotations

import logging
import re
import socket
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Optional

#: How long metrics are dropped after a failed connection before the next one is tried (a
#: name is resolved anew: a DNS query, not for every metric). The core's `io::statsd::RETRY`.
RETRY_S = 5.0


class Client:
    """A connected datagram socket to `address` (HOST:PORT or unix:PATH, as options.py
    returns it) and the prefix and tags every metric gets."""

    def __init__(self, address: str, prefix: str, tags: str,
                 logger: Optional[logging.Logger] = None):
        self.address = address
        self.prefix = re.sub(r"^(.+[^.]+)\.*$", "\\g<1>.", prefix)
        self.tags = tags.encode("utf-8")
        self.sock: Optional[socket.socket] = None
        self.retry_at = 0.0
        error = self._connect()
        if error is not None and logger is not None:
            logger.warning("statsd at %s cannot be reached (%s): its metrics are dropped, and "
                           "it is tried again every %gs", address, error, RETRY_S)

    def _connect(self) -> Optional[str]:
        """Connect (None), or why not (and when to try again)."""
        address = self.address
        sock = None
        try:
            if address.startswith("unix:"):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                target: Any = address[len("unix:"):]
            else:
                host, _, port = address.rpartition(":")
                host = host.strip("[]")
                family = socket.AF_INET6 if ":" in host else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_DGRAM)
                target = (host, int(port))
            sock.connect(target)
        except OSError as e:
            if sock is not None:
                sock.close()
            self.retry_at = time.monotonic() + RETRY_S
            return str(e.strerror or e)
        self.sock = sock
        return None

    def send(self, line: str) -> None:
        if self.sock is None:
            if time.monotonic() < self.retry_at or self._connect() is not None:
                return
        data = (self.prefix + line).encode("utf-8")
        if self.tags:
            data += b"|#" + self.tags
        try:
            if self.sock is not None:
                self.sock.send(data)
        except OSError:
            pass

    def gauge(self, name: str, value: int) -> None:
        self.send(f"{name}:{value}|g")

    def increment(self, name: str, value: int = 1) -> None:
        self.send(f"{name}:{value}|c|@1.0")


class LogCounter(logging.Handler):
    """Counts the error log's warning, error, critical and exception lines."""

    def __init__(self, client: Client):
        super().__init__(logging.WARNING)
        self.client = client

    def emit(self, record: logging.LogRecord) -> None:
        kind = "exception" if record.exc_info else record.levelname.lower()
        if kind in ("critical", "error", "warning", "exception"):
            self.client.increment(f"gunicorn.log.{kind}")


_client: Optional[Client] = None
_workers_sent: Optional[int] = None


def install(cfg: Any, logger: logging.Logger) -> None:
    """With --statsd-host: the client, and the counter of `logger`'s lines."""
    global _client
    if not cfg.statsd_host or _client is not None:
        return
    _client = Client(cfg.statsd_host, cfg.statsd_prefix, cfg.dogstatsd_tags, logger)
    logger.addHandler(LogCounter(_client))


def workers(count: int) -> None:
    """A master's number of workers, sent when it changed (gunicorn's `gunicorn.workers`)."""
    global _workers_sent
    if _client is None or count == _workers_sent:
        return
    _workers_sent = count
    _client.gauge("gunicorn.workers", count)

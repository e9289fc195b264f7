"""gunicorn's statsd metrics that the Python front emits (`--statsd-host`): the number of
workers as a gauge (`gunicorn.workers`, from a master, when it changes) and a counter per
warning, error, critical and exception line of the error log (`gunicorn.log.warning`, ...),
in gunicorn's names and spelling (`instrument/statsd.py`), with `--statsd-prefix` and
`--dogstatsd-tags`. Each request's metrics are the Rust core's (`observe::statsd`), sent on
a socket of each worker's own.

A datagram that cannot be sent (no receiver) is lost, as in gunicorn; nothing is logged
for it, so a missing receiver cannot make the error log count itself.
"""

from __future__ import annotations

import logging
import re
import socket
from typing import Any, Optional


class Client:
    """A connected datagram socket to `address` (HOST:PORT or unix:PATH, as options.py
    returns it) and the prefix and tags every metric gets."""

    def __init__(self, address: str, prefix: str, tags: str):
        self.prefix = re.sub(r"^(.+[^.]+)\.*$", "\\g<1>.", prefix)
        self.tags = tags
        self.sock: Optional[socket.socket] = None
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
            self.sock = sock
        except OSError:
            self.sock = None

    def send(self, line: str) -> None:
        data = (self.prefix + line).encode("ascii")
        if self.tags:
            data += b"|#" + self.tags.encode("ascii")
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
    _client = Client(cfg.statsd_host, cfg.statsd_prefix, cfg.dogstatsd_tags)
    logger.addHandler(LogCounter(_client))


def workers(count: int) -> None:
    """A master's number of workers, sent when it changed (gunicorn's `gunicorn.workers`)."""
    global _workers_sent
    if _client is None or count == _workers_sent:
        return
    _workers_sent = count
    _client.gauge("gunicorn.workers", count)

"""The socket pair between a master and one of its workers, over which the master asks the
worker what control_agent.Agent says (`Channel`, the master's end); the worker's end is left to
it across the fork (`take_channel`) and served by an `sg-ctl-agent` thread
(`serve_channel`). One JSON object per line, as on the control socket (control_protocol.py),
each question numbered.
"""

from __future__ import annotations

import socket
import threading
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

from . import thread_names
from .control_agent import Agent
from .control_protocol import WORKER_TIMEOUT_S, loads, send_line


class Channel:
    """The master's end of the socket pair it shares with one worker: `ask` sends a command and
    waits for the answer that carries the same number (a late answer to an earlier question
    is skipped)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        self._seq = 0
        self._buf = b""

    def ask(self, command: Dict[str, Any], timeout: float = WORKER_TIMEOUT_S
            ) -> Optional[Dict[str, Any]]:
        with self._lock:
            self._seq += 1
            deadline = time.monotonic() + timeout
            try:
                send_line(self.sock, dict(command, id=self._seq))
                while True:
                    while b"\n" not in self._buf:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return None
                        self.sock.settimeout(left)
                        data = self.sock.recv(1 << 16)
                        if not data:
                            return None
                        self._buf += data
                    line, self._buf = self._buf.split(b"\n", 1)
                    answer = loads(line)
                    if answer.get("id") == self._seq:
                        return answer
            except (OSError, ValueError):
                return None

    def close(self) -> None:
        self.sock.close()


def serve_channel(sock: socket.socket, agent: Agent) -> None:
    """In a worker: answer the master's questions on `sock` on a thread (`sg-ctl-agent`) until
    the master closes its end."""

    def serve() -> None:
        with sock, sock.makefile("rb") as lines:
            for line in lines:
                try:
                    command = loads(line)
                    answer = agent.answer(command)
                    answer["id"] = command.get("id")
                    send_line(sock, answer)
                except (ValueError, AttributeError):
                    continue
                except OSError:
                    return

    thread_names.start(serve, "sg-ctl-agent")


#: In a worker: its end of the socket pair, left by the master between the fork and the
#: worker's server (`take_channel`).
_inherited: List[socket.socket] = []


def keep_channel(sock: socket.socket) -> None:
    """In the worker just forked: keep its end of the pair for `take_channel`."""
    _inherited.append(sock)


def take_channel() -> Optional[socket.socket]:
    return _inherited.pop() if _inherited else None

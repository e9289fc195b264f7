"""S7's idle connections: open N keep-alive connections to a server and hold them silent.

Owns the idle-connection holder, run as its own process (its 10,000 descriptors count against
its own limit, not the harness's):
    python3 benchmarks/run.py idle PORT COUNT PATH   (S7 starts it; not run by hand)
Each connection sends one complete GET for PATH and reads the response, then stays open and
silent: an idle keep-alive connection in the server's sense, as a browser or a load balancer
leaves one after a request (a connection that never sent a request would test the accept path
and the header-read timeout instead). It prints one JSON line when all are open, then answers
"check" on stdin with how many are still open (the server may close idle ones), and exits on
"quit", on end of input, or after MAX_LIFETIME_S whatever happens.
"""

from __future__ import annotations

import argparse
import errno
import json
import selectors
import socket
import sys
import threading
import time

BATCH = 500  # connections opened before waiting for their answers
CONNECT_WAIT_S = 3.0  # per batch
ANSWER_WAIT_S = 5.0  # per batch; shortened once a server stops answering
OPEN_BUDGET_S = 60.0  # all batches
MAX_LIFETIME_S = 600.0


def open_all(port: int, count: int, path: str) -> tuple[list[socket.socket], dict]:
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    held: list[socket.socket] = []
    stats = {"requested": count, "opened": 0, "answered": 0, "refused": 0, "connect_timeout": 0,
             "closed_before_answer": 0, "unanswered": 0, "other_errors": 0}
    deadline = time.monotonic() + OPEN_BUDGET_S
    answer_wait = ANSWER_WAIT_S
    sel = selectors.DefaultSelector()
    for start in range(0, count, BATCH):
        if time.monotonic() > deadline:
            stats["not_attempted"] = count - start
            break
        pending: dict[socket.socket, str] = {}
        for _ in range(min(BATCH, count - start)):
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            except OSError as e:  # out of descriptors
                stats["other_errors"] += 1
                stats["last_error"] = str(e)
                break
            s.setblocking(False)
            rc = s.connect_ex(("127.0.0.1", port))
            if rc not in (0, errno.EINPROGRESS):
                stats["refused"] += 1
                s.close()
                continue
            pending[s] = "connecting"
            sel.register(s, selectors.EVENT_WRITE)
        # connect, then send the request
        until = time.monotonic() + CONNECT_WAIT_S
        while any(v == "connecting" for v in pending.values()) and time.monotonic() < until:
            for key, _ in sel.select(timeout=0.2):
                s = key.fileobj
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                sel.unregister(s)
                if err:
                    stats["refused"] += 1
                    s.close()
                    del pending[s]
                    continue
                try:
                    s.send(request)
                except OSError:
                    stats["closed_before_answer"] += 1
                    s.close()
                    del pending[s]
                    continue
                pending[s] = "waiting"
                sel.register(s, selectors.EVENT_READ)
        for s, state in list(pending.items()):
            if state == "connecting":
                stats["connect_timeout"] += 1
                sel.unregister(s)
                s.close()
                del pending[s]
        # read the answers
        got: dict[socket.socket, bytes] = {}
        until = time.monotonic() + answer_wait
        while len(got) < len(pending) and time.monotonic() < until:
            for key, _ in sel.select(timeout=0.2):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    stats["closed_before_answer"] += 1
                    sel.unregister(s)
                    s.close()
                    del pending[s]
                    got.pop(s, None)
                    continue
                got[s] = got.get(s, b"") + data
                if b"\r\n\r\n" in got[s]:
                    sel.unregister(s)
        unanswered = 0
        for s in list(pending):
            if s in got and b"\r\n\r\n" in got[s]:
                stats["answered" if got[s].startswith(b"HTTP/1.1 200") else "other_errors"] += 1
            else:
                unanswered += 1
                try:
                    sel.unregister(s)
                except (KeyError, ValueError):
                    pass
            held.append(s)
        stats["unanswered"] += unanswered
        if unanswered > len(pending) // 2:
            answer_wait = 0.5  # the server has stopped answering: do not spend 5 s per batch
    sel.close()
    stats["opened"] = len(held)
    return held, stats


def still_open(held: list[socket.socket]) -> dict:
    alive = closed = 0
    for s in held:
        try:
            data = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            if data:
                alive += 1  # a late answer waiting: still connected
            else:
                closed += 1
        except BlockingIOError:
            alive += 1
        except OSError:
            closed += 1
    return {"alive": alive, "closed_by_server": closed}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("port", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("path")


def main(args: argparse.Namespace) -> None:
    port, count, path = args.port, args.count, args.path
    threading.Timer(MAX_LIFETIME_S, lambda: __import__("os")._exit(3)).start()
    t0 = time.monotonic()
    held, stats = open_all(port, count, path)
    stats["open_seconds"] = round(time.monotonic() - t0, 2)
    print(json.dumps(stats), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "check":
            print(json.dumps(still_open(held)), flush=True)
        elif cmd == "quit":
            break
    for s in held:
        s.close()
    __import__("os")._exit(0)


"""Large TLS answers of inline calls written by the writer thread (`io/tls_writer.rs`;
plaintext answers, from memory or a file, stay with the loop). The connection is away from the
loop while its answer is written, so what could break is the order of pipelined answers,
keep-alive after the hand-off, and other clients while one reads slowly.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path
from typing import List, Tuple

from tests.apps.file_wrapper import file_bytes
from tests.apps.response_path import pattern
from tests.test_tls import tls_options, tls_socket
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)

# Above the writer's threshold (TLS_WRITER_MIN, 16 KiB), as S14's 21 KB file.
FILE = 21 * 1024


class Answers:
    """Reads HTTP/1.1 answers with a Content-Length off one socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = bytearray()

    def _more(self) -> None:
        piece = self.sock.recv(65536)
        assert piece, "closed before the answer was complete"
        self.buf += piece

    def next(self) -> Tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        end = self.buf.index(b"\r\n\r\n")
        head = bytes(self.buf[:end])
        del self.buf[:end + 4]
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(v) for k, v in (ln.split(":", 1) for ln in lines[1:])
                      if k.strip().lower() == "content-length")
        while len(self.buf) < length:
            self._more()
        body = bytes(self.buf[:length])
        del self.buf[:length]
        return status, body


def request(path: str, close: bool = False) -> bytes:
    extra = "Connection: close\r\n" if close else ""
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()


def writer_started(srv) -> bool:
    """The server has started its writer thread (named `sg-tls-writer`)."""
    tasks = Path(f"/proc/{srv.proc.pid}/task")
    return any((t / "comm").read_text().startswith("sg-tls-writer") for t in tasks.iterdir())


def test_pipelined_file_answers_come_in_order_with_the_right_bytes(start_server, tls_certs):
    srv = start_server("file_wrapper", *tls_options(tls_certs))
    # Sizes differ per request, so an answer out of order shows as a wrong length or bytes;
    # small ones (written on the loop) between large ones (written by the writer). Several
    # connections at once: the writer takes an answer when other connections are ready.
    # Whether the writer takes an answer depends on what else is ready at that moment: on a
    # loaded machine the loop may have written every one itself, so the exchange is repeated
    # (every round checked) until the writer has taken part, at most 20 times (five were once
    # not enough in a full parallel run of the suite).
    sizes: List[int] = [FILE + i if i % 3 else 100 + i for i in range(40)]
    for _ in range(20):
        socks = [tls_socket(srv, tls_certs) for _ in range(6)]
        try:
            for s in socks:
                s.sendall(b"".join(request(f"/file?size={n}") for n in sizes))
            for s in socks:
                answers = Answers(s)
                for n in sizes:
                    status, body = answers.next()
                    assert status == 200
                    assert len(body) == n and body == file_bytes(n)
        finally:
            for s in socks:
                s.close()
        if writer_started(srv):
            break
    assert writer_started(srv)


def test_keep_alive_after_a_file_written_by_the_writer(start_server, tls_certs):
    srv = start_server("file_wrapper", *tls_options(tls_certs))
    with tls_socket(srv, tls_certs) as s:
        answers = Answers(s)
        for path, n in [(f"/file?size={FILE}", FILE), ("/file?size=10", 10),
                        (f"/file?size={FILE}", FILE), (f"/file?size={FILE * 4}", FILE * 4)]:
            s.sendall(request(path))
            status, body = answers.next()
            assert status == 200 and body == file_bytes(n)
        s.sendall(request(f"/file?size={FILE}", close=True))
        status, body = answers.next()
        assert status == 200 and body == file_bytes(FILE)
        assert s.recv(1) == b""


def test_a_slow_reader_does_not_stop_another_client(start_server, tls_certs):
    srv = start_server("file_wrapper", *tls_options(tls_certs))
    big = 16 << 20  # more than the socket buffers hold: the server's writes meet a full socket
    slow = tls_socket(srv, tls_certs)
    with slow:
        slow.sendall(request(f"/file?size={big}"))
        slow.recv(1)  # the answer has begun; then nothing is read for a while
        done = threading.Event()
        errors: List[BaseException] = []

        def other() -> None:
            try:
                with tls_socket(srv, tls_certs) as s:
                    answers = Answers(s)
                    for _ in range(20):
                        s.sendall(request(f"/file?size={FILE}"))
                        status, body = answers.next()
                        assert status == 200 and body == file_bytes(FILE)
                done.set()
            except BaseException as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        t = threading.Thread(target=other)
        started = time.monotonic()
        t.start()
        t.join(10)
        # Twenty answers of 21 KB take milliseconds; behind the slow reader, forever.
        assert time.monotonic() - started < 5
        assert not errors, errors
        assert done.is_set(), "another client waited behind a slow reader"
        # The slow reader then gets all of its answer.
        slow.settimeout(30)
        answers = Answers(slow)
        answers.buf = bytearray(b"H")
        status, body = answers.next()
        assert status == 200 and body == file_bytes(big)


def test_plaintext_bytes_answers_stay_with_the_loop_in_order(start_server):
    """Plaintext `[bytes]` answers of 16 KiB and more are written by the loop (a `writev`
    costs it less than waking the writer thread): pipelined on several connections at once,
    each answer arrives whole and in order, small ones between them, keep-alive holds, and the
    writer thread is never started."""
    srv = start_server("response_path")
    sizes: List[int] = [FILE + i if i % 3 else 100 + i for i in range(40)]
    socks = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(8)]
    try:
        for s in socks:
            s.settimeout(30)
        # Several rounds: a hand-off would need other connections ready when a call ends,
        # which depends on how the loop's polls fall. Every answer of every round checked.
        for _ in range(5):
            for s in socks:
                s.sendall(b"".join(request(f"/list?size={n}&parts=1") for n in sizes))
            for s in socks:
                answers = Answers(s)
                for n in sizes:
                    status, body = answers.next()
                    assert status == 200
                    assert len(body) == n and body == pattern(n)
                assert not answers.buf
        # Keep-alive after large answers, then a close asked for.
        s = socks[0]
        s.sendall(request(f"/list?size={FILE}&parts=1", close=True))
        status, body = Answers(s).next()
        assert status == 200 and body == pattern(FILE)
        assert s.recv(1) == b""
    finally:
        for s in socks:
            s.close()
    assert not writer_started(srv)


def test_plaintext_file_answers_stay_with_the_loop(start_server):
    """A plaintext file range (`sendfile`) is not handed to the writer: `sendfile` on the loop
    costs less than the hand-off."""
    srv = start_server("file_wrapper")
    socks = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(6)]
    try:
        for s in socks:
            s.settimeout(30)
            s.sendall(b"".join(request(f"/file?size={FILE}") for _ in range(20)))
        for s in socks:
            answers = Answers(s)
            for _ in range(20):
                status, body = answers.next()
                assert status == 200 and body == file_bytes(FILE)
    finally:
        for s in socks:
            s.close()
    assert not writer_started(srv)

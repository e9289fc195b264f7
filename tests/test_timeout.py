"""`--timeout`: an app call that runs too long gets its client answered
(504, or the connection closed if the response had begun), its request line and Python stack
logged once, and, past `--max-stuck` in a worker, that worker replaced gracefully. The app calls
here wait on gates the test opens (tests/apps/stuck.py), so nothing depends on timing but the
short `--timeout` itself.
"""

import http.client
import socket
import threading

from tests.helpers import wait_for
from tests.test_workers import children, get


def raw_exchange(port, request: bytes) -> bytes:
    """Send `request` on a fresh connection and read until the server closes it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    finally:
        s.close()


def get_line(target: str) -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


def test_a_stuck_call_gets_504_and_its_stack_logged_while_others_are_served(start_server):
    srv = start_server("stuck", "--timeout", "0.5", "--access-log", "-")
    answer = {}
    t = threading.Thread(
        target=lambda: answer.update(raw=raw_exchange(srv.port, get_line("/hang?token=t1"))))
    t.start()
    srv.wait_marks("hang-started", prefix="t1")
    # The stuck call holds one thread; everybody else is served.
    assert get(srv.port) == (200, str(srv.pid).encode())
    t.join(30)
    raw = answer["raw"]
    # Exactly one answer, the 504, then the end of the connection (a keep-alive request).
    assert raw.startswith(b"HTTP/1.1 504 Gateway Timeout\r\n"), raw
    assert raw.count(b"HTTP/1.1") == 1, raw
    assert b"\r\nConnection: close\r\n" in raw
    log = srv.wait_log(r"GET /hang\?token=t1 HTTP/1\.1 still in the app after 0\.\d+s "
                       r"\(--timeout\): answered 504")
    assert log
    text = srv.log_text()
    assert "in wait_for_the_database" in text, "the stack of the stuck thread is logged"
    assert text.count("token=t1 HTTP/1.1 still in the app") == 1, "logged once"
    # When the call comes back (and even raises), nothing more is sent, the error is logged,
    # the request is logged as the 504 it was (its 16 body bytes), and the server goes on.
    mark = srv.log_mark()
    srv.open_gate("release-t1")
    srv.wait_marks("hang-returned", prefix="t1")
    srv.wait_log(r'"GET /hang\?token=t1 HTTP/1\.1" 504 16', stream="stdout")
    assert get(srv.port) == (200, str(srv.pid).encode())
    assert "Traceback" not in srv.log_since(mark), "a plain return logs no error"


def test_a_call_that_raises_after_its_504_sends_nothing_more(start_server):
    srv = start_server("stuck", "--timeout", "0.5")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(get_line("/hang?token=r1&then=raise"))
    srv.wait_marks("hang-started", prefix="r1")
    head = s.recv(65536)
    assert head.startswith(b"HTTP/1.1 504 "), head
    srv.open_gate("release-r1")
    srv.wait_log(r"RuntimeError: late failure after the timeout")
    rest = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    s.close()
    assert b"500" not in head + rest and (head + rest).count(b"HTTP/1.1") == 1
    assert get(srv.port)[0] == 200


def test_a_stuck_stream_is_cut_after_what_it_sent(start_server):
    srv = start_server("stuck", "--timeout", "0.5")
    raw = raw_exchange(srv.port, get_line("/stream?token=s1"))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"Transfer-Encoding: chunked" in head
    size, data, end = body.split(b"\r\n")
    assert (int(size, 16), data, end) == (11, b"first block", b""), "one chunk, no last chunk"
    srv.wait_log(r"GET /stream\?token=s1 HTTP/1\.1 still in the app .*connection closed")
    # The stack follows the message's first line; the log reader may not have it yet.
    srv.wait_log(r"in _stream")
    srv.open_gate("release-s1")


def test_a_call_waiting_for_a_body_that_never_comes_is_released(start_server):
    srv = start_server("stuck", "--timeout", "0.5")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(b"POST /read-body?token=b1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n"
              b"only ten b")
    head = s.recv(65536)
    s.close()
    assert head.startswith(b"HTTP/1.1 504 "), head
    # The shutdown ended the app's read: the thread is free again (no --read-timeout wait).
    ended = srv.wait_marks("read-ended", prefix="b1")
    assert len(ended) == 1 and not ended[0].startswith("b1 ok"), ended


def test_a_worker_with_max_stuck_calls_is_replaced_and_its_other_requests_finish(start_server):
    srv = start_server("stuck", "--workers", "1", "--timeout", "1", "--max-stuck", "2",
                       "--graceful-timeout", "60")
    wait_for(lambda: len(children(srv.pid)) == 1, "one worker", timeout=30)
    old = int(get(srv.port)[1])
    stuck = [threading.Thread(target=raw_exchange, args=(srv.port, get_line(f"/hang?token={t}")))
             for t in ("w1", "w2")]
    for t in stuck:
        t.start()
    srv.wait_marks("hang-started", prefix="w1")
    srv.wait_marks("hang-started", prefix="w2")
    # A request that is slow but not stuck.
    slow = {}

    def slow_request():
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        c.request("GET", "/hang?token=ok")
        r = c.getresponse()
        slow.update(status=r.status, body=r.read())

    for t in stuck:
        t.join(30)
    waiter = threading.Thread(target=slow_request)
    waiter.start()
    srv.wait_marks("hang-started", prefix="ok")
    srv.wait_log(rf"Worker {old} has --max-stuck stuck calls: starting its replacement")
    srv.open_gate("release-ok")
    waiter.join(30)
    # Answered, by the old worker or, if the replacement was already accepting, by it.
    assert slow["status"] == 200 and slow["body"].startswith(b"late answer from "), slow
    # The old worker leaves once only its stuck calls are left, without waiting the 60 s
    # graceful timeout for calls that may never return; the replacement serves.
    srv.wait_log(rf"Worker {old} stopped", timeout=30)
    assert old not in children(srv.pid)
    status, body = get(srv.port)
    assert status == 200 and int(body) != old

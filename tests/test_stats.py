"""The server's own counters (`_core.Server.stats`), read in-process while real clients talk to
it over sockets: every key the stub (`_core.pyi`) documents exists, and every request is
counted, the ones the Rust core answers itself (static files) as well as the app's."""

import http.client
import threading

import pytest

from sluicegate.listeners import bind_all
from sluicegate.resolution import resolve
from sluicegate.single import SingleServer as Supervisor
from tests.helpers import wait_for

DOCUMENTED_KEYS = {
    "requests", "accepted", "protocol_errors", "timeouts", "fd_exhausted", "app_timeouts",
    "stuck_calls", "forwarded_malformed", "proxy_refused",
    "inline_calls", "dispatched_calls",
    "takeovers", "preemptions", "handoffs", "mode", "threads", "busy_threads", "max_runnable",
    "runnable_short", "runnable_long", "runnable_short_peak", "runnable_long_peak", "admission_queue",
    "admission_waits", "demotions", "lengthened", "admitted_blocking", "fast_first",
    "blocking_room", "blocking_room_least", "start_gate_places",
    "static_cache_files", "static_cache_bytes", "static_cache_hits",
}


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


@pytest.fixture
def in_process(tmp_path):
    """A server in a thread of this process, serving `hello` and /static from tmp_path."""
    (tmp_path / "a.txt").write_bytes(b"static bytes\n")
    cfg = resolve({"app": hello, "bind": "127.0.0.1:0", "static": [f"/static={tmp_path}"]})
    sockets = bind_all(cfg.bind, cfg.backlog)
    port = sockets[0].port
    sup = Supervisor(hello, cfg, sockets, app_name="hello")
    t = threading.Thread(target=sup.run, daemon=True)
    t.start()
    wait_for(lambda: sup._server is not None, "the server to be created", timeout=10,
             interval=0.01)
    # Created is not yet running: the pool (and its readings) starts in run(), after the
    # control socket; the admission keys appear then.
    wait_for(lambda: "max_runnable" in sup._server.stats, "the server to run", timeout=10,
             interval=0.01)
    yield sup, port
    sup.shutdown()
    t.join(10)
    assert not t.is_alive()


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def test_stats_keys_are_the_documented_ones(in_process):
    sup, port = in_process
    assert set(sup._server.stats) == DOCUMENTED_KEYS


def test_static_requests_are_counted(in_process):
    """Regression (bcae17c): requests answered by --static were counted by the loop but missing
    from stats()["requests"], which only counted app calls."""
    sup, port = in_process
    assert get(port, "/static/a.txt") == (200, b"static bytes\n")
    assert get(port, "/static/a.txt") == (200, b"static bytes\n")
    assert get(port, "/app") == (200, b"hello")
    stats = sup._server.stats
    assert stats["requests"] == 3
    assert stats["inline_calls"] + stats["dispatched_calls"] == 1


def scheduled(environ, start_response):
    """`/stream`: two blocks (the loop is handed off at the second); `/sleep`: blocks 50 ms
    (taken over: dispatch mode); anything else: `hello`."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    if environ["PATH_INFO"] == "/stream":
        return iter([b"one", b"two"])
    if environ["PATH_INFO"] == "/sleep":
        import time
        time.sleep(0.05)
    return [b"hello"]


def test_dispatch_mode_ends_after_a_streaming_hand_off(tmp_path):
    """Regression: the thread of a streaming inline call, its loop handed off, counted the end
    of a takeover that never was (an unsigned count went below zero), so the next dispatch mode
    never ended: one streamed answer and one slow call later, every request went to the pool
    for good. Requests keep coming; the mode must come back to inline (after 1 s quiet)."""
    cfg = resolve({"app": scheduled, "bind": "127.0.0.1:0"})
    sockets = bind_all(cfg.bind, cfg.backlog)
    port = sockets[0].port
    sup = Supervisor(scheduled, cfg, sockets, app_name="scheduled")
    t = threading.Thread(target=sup.run, daemon=True)
    t.start()
    try:
        wait_for(lambda: sup._server is not None, "the server to be created", timeout=10,
                 interval=0.01)
        assert get(port, "/stream") == (200, b"onetwo")
        assert sup._server.stats["handoffs"] >= 1
        assert get(port, "/sleep") == (200, b"hello")
        wait_for(lambda: sup._server.stats["mode"] == "dispatch", "dispatch mode")
        wait_for(lambda: get(port, "/") == (200, b"hello") and sup._server.stats["mode"] == "inline",
                 "inline mode again", timeout=20, interval=0.1)
    finally:
        sup.shutdown()
        t.join(10)

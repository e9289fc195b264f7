"""Admission to the pool: few app calls run Python at once, blocked ones do not count.

A server runs in a thread of this process (so the test reads its own counters, `stats`), on
the pool path (`scheduler="pool"`), and real clients send it concurrent requests over sockets.
The app counts, under a lock, how many of its CPU-bound and of its sleeping handlers run at
once. Without admission, a burst of CPU-bound requests runs all at once (one thread each,
fighting for the GIL); with it, one per class at a time, while sleeping requests are demoted
and all sleep together. The assertions are counts, with margins of orders of magnitude between
what admission does (sub-millisecond) and what the requests take (a second's sleep).
"""

import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest



class Gauge:
    """How many handlers of one kind run now, and the most at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def __enter__(self):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1


class App:
    """/cpu?ms=N computes N ms of this thread's CPU; /sleep?ms=N sleeps; both say which."""

    def __init__(self):
        self.cpu = Gauge()
        self.sleep = Gauge()

    def __call__(self, environ, start_response):
        ms = float(urllib.parse.parse_qs(environ["QUERY_STRING"]).get("ms", ["1"])[0])
        path = environ["PATH_INFO"]
        if path == "/cpu":
            with self.cpu:
                end = time.thread_time() + ms / 1000
                n = 0
                while time.thread_time() < end:
                    for i in range(100):
                        n += i
        elif path == "/sleep":
            with self.sleep:
                time.sleep(ms / 1000)
        body = path.encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]


@pytest.fixture
def server(pool_server):
    """``sup, port = server(app, **options)``: conftest's ``pool_server``."""
    return pool_server


def fetch_all(port, paths):
    """GET every path at once, each on its own connection; returns [(status, body)]."""
    results = [None] * len(paths)

    def one(i, path):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", path)
        r = c.getresponse()
        results[i] = (r.status, r.read())
        c.close()

    threads = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(paths)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    return results


# The start of the client scripts run in another process: `get(path)` -> [status, body].
CLIENT_GET = """
import http.client, json, sys, threading, time
port = int(sys.argv[1])
def get(path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path)
    r = c.getresponse()
    got = [r.status, r.read().decode()]
    c.close()
    return got
"""

CLIENTS = CLIENT_GET + """
path, n = sys.argv[2], int(sys.argv[3])
out = [None] * n
def one(i):
    out[i] = get(path)
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts: t.start()
for t in ts: t.join(90)
print(json.dumps(out))
"""


def fetch_from_another_process(port, path, n):
    """GET `path` n times at once from a separate process (its client threads then do not
    take this process's GIL from the app); returns [(status, body)]."""
    done = subprocess.run(
        [sys.executable, "-c", CLIENTS, str(port), path, str(n)],
        capture_output=True, text=True, timeout=120, check=True,
    )
    return [(status, body.encode()) for status, body in json.loads(done.stdout)]


def test_a_burst_of_cpu_bound_requests_runs_one_at_a_time_on_few_threads(server):
    app = App()
    sup, port = server(app)
    results = fetch_all(port, ["/cpu?ms=3"] * 60)
    assert results == [(200, b"/cpu")] * 60
    stats = sup._server.stats
    assert stats["max_runnable"] == 1
    assert stats["runnable_short_peak"] == 1
    assert stats["admission_waits"] > 0, "the burst queued instead of starting a thread each"
    # One runs at a time; two may overlap when a call runs past LONG_CALL (a loaded machine,
    # the clients' threads taking the GIL): it moves to the long class and the next is admitted
    # short. Into a full long class it keeps its route's calls out of the short room (before,
    # each was lengthened in turn: 3 ran at once under load, on up to 5 threads).
    assert app.cpu.peak <= 2, f"{app.cpu.peak} CPU-bound calls ran at once"
    assert stats["threads"] <= 4, f"{stats['threads']} threads for a CPU-bound burst"


def test_without_a_limit_the_same_burst_runs_all_at_once(server):
    """The control for the test above: it discriminates (max_runnable=0 is the old pool)."""
    app = App()
    sup, port = server(app, max_runnable=0)
    results = fetch_all(port, ["/cpu?ms=20"] * 20)
    assert results == [(200, b"/cpu")] * 20
    assert app.cpu.peak > 2
    assert sup._server.stats["admission_waits"] == 0


def test_a_mixed_load_keeps_cpu_bound_calls_few_and_sleeping_ones_all_concurrent(server):
    """CPU-bound requests (a slow route: long class) and sleeping ones (a database wait) at
    once: every request completes, the sleepers are demoted while the CPU-bound calls hold the
    interpreter (they wait in a system call, not for the GIL) and all sleep together, and the
    CPU-bound ones run one or two at a time."""
    app = App()
    sup, port = server(app, threads=(1, 200))
    paths = ["/cpu?ms=60"] * 8 + ["/sleep?ms=1500"] * 40
    results = fetch_all(port, paths)
    assert results == [(200, b"/cpu")] * 8 + [(200, b"/sleep")] * 40
    stats = sup._server.stats
    assert stats["runnable_short_peak"] <= 1
    # The first sleepers are seen blocked and demoted; then their route is known to block and
    # the rest are admitted at once.
    assert stats["demotions"] >= 1, stats
    assert stats["demotions"] + stats["admitted_blocking"] >= 30, stats
    assert app.cpu.peak <= 2, f"{app.cpu.peak} CPU-bound calls ran at once"
    assert app.sleep.peak >= 30, f"only {app.sleep.peak} of 40 sleeping calls slept together"


class FirstComputes:
    """/work: the first call computes (pure Python) for `cpu_s`, then sleeps; every call sleeps
    `sleep_s`. Counts the sleepers at once; `computing` is set while the first call computes."""

    def __init__(self, cpu_s, sleep_s):
        self.cpu_s, self.sleep_s = cpu_s, sleep_s
        self.computing = threading.Event()
        self.first = True
        self.lock = threading.Lock()
        self.sleep = Gauge()

    def __call__(self, environ, start_response):
        with self.lock:
            first, self.first = self.first, False
        if first:
            self.computing.set()
            # perf_counter reads the clock without a system call (thread_time makes one, and a
            # thread preempted in it while the burst arrives looks as if it waited on I/O).
            end = time.perf_counter() + self.cpu_s
            n = 0
            while time.perf_counter() < end:
                for i in range(100):
                    n += i
        with self.sleep:
            time.sleep(self.sleep_s)
        start_response("200 OK", [("Content-Length", "4")])
        return [b"done"]


def test_calls_queued_behind_a_call_seen_sleeping_are_admitted_together(server):
    """A burst of calls to one route queues while its first call computes (one runnable at a
    time). The first call that is seen sleeping is demoted and its route marked blocking; the
    calls still queued must then all go at once, as the route's new calls do, not one per
    demotion (each judged over three looks: on a fresh server, 100 clients of a sleeping app
    waited up to 74 ms more for that, S5's p99)."""
    app = FirstComputes(cpu_s=1.5, sleep_s=1.0)
    sup, port = server(app, threads=(1, 100))
    first = []
    t = threading.Thread(target=lambda: first.extend(fetch_all(port, ["/work"])))
    t.start()
    assert app.computing.wait(30)
    # From another process: 30 client threads here would take the GIL from the computing call
    # and arrive spread over its time.
    results = fetch_from_another_process(port, "/work", 30)
    t.join(90)
    assert first == [(200, b"done")] and results == [(200, b"done")] * 30
    stats = sup._server.stats
    # How many queue before the first sleeper is seen depends on how fast they arrive (13 to
    # 23 of 30 here, as few as 4 on a busy machine); each of them was demoted in turn before.
    # Two queued are enough for what is checked: that they then went together.
    assert stats["admission_waits"] >= 2, f"the calls did not queue: {stats}"
    assert stats["demotions"] <= 2, stats
    assert stats["admitted_blocking"] >= 25, stats
    assert app.sleep.peak >= 25, f"only {app.sleep.peak} of 31 calls slept together"


class EndsWithAFastCallWaiting:
    """/long?mode=prime computes 30 ms (its route is then long); /long?mode=first waits until
    a second /long call queues behind it, has the client send /hello, and returns as soon as
    that /hello is admitted (it then waits for the GIL this call holds); /long?mode=next
    computes 20 ms; /hello answers at once."""

    def __init__(self, client):
        self.client = client  # the client process: a line on its stdin makes it send /hello
        self.sup = None
        self.events = []

    def _until(self, stat, at_least):
        deadline = time.monotonic() + 30
        while self.sup._server.stats[stat] < at_least and time.monotonic() < deadline:
            pass  # holds the GIL throughout: the /hello must not get it before this call ends

    def __call__(self, environ, start_response):
        mode = urllib.parse.parse_qs(environ["QUERY_STRING"]).get("mode", [""])[0]
        if environ["PATH_INFO"] == "/long":
            if mode == "first":
                self._until("admission_queue", 1)
                self.client.stdin.write("go\n")
                self.client.stdin.flush()
                self._until("runnable_short", 1)
            else:
                self.events.append(f"{mode} start")
                end = time.thread_time() + (0.03 if mode == "prime" else 0.02)
                while time.thread_time() < end:
                    pass
        else:
            self.events.append("hello end")
        body = environ["PATH_INFO"].encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]


ON_CUE = CLIENT_GET + """
out = {}
def one(path):
    out[path] = get(path)
ts = [threading.Thread(target=one, args=("/long?mode=first",))]
ts[0].start()
time.sleep(0.2)  # the first call runs: the next one queues behind it
ts.append(threading.Thread(target=one, args=("/long?mode=next",)))
ts[1].start()
sys.stdin.readline()  # the first call says when
one("/hello")
for t in ts: t.join(90)
print(json.dumps(out))
"""


def test_a_long_call_lets_a_fast_call_waiting_for_the_interpreter_go_first(server):
    """A thread that ends a long call takes the next queued long call itself and asks for the
    GIL again at once. CPython's GIL is not fair: it usually gets it back before a fast call
    that waits for it wakes (measured in S12: a `/hello` that came within 5 ms of a long call's
    end waited a whole switch interval more, 8-10 ms instead of 5.5). The thread must first
    let the fast call go. Here the first long call ends just after a `/hello` was admitted
    (it waits for the GIL that call holds), with the next long call queued: the thread that
    takes it must wait for the `/hello`. (A long switch interval keeps the `/hello` from
    asking for the GIL, which CPython would then hand over fairly: that is the case of a fast
    call that came just before the end.)"""
    app = EndsWithAFastCallWaiting(None)
    sup, port = server(app)
    app.sup = sup
    assert fetch_all(port, ["/long?mode=prime"]) == [(200, b"/long")]  # a long route now
    app.client = subprocess.Popen([sys.executable, "-c", ON_CUE, str(port)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        out = app.client.stdout.read()  # all of it: the client prints once, at its end
        app.client.wait(60)
    finally:
        sys.setswitchinterval(interval)
    assert json.loads(out) == {"/long?mode=first": [200, "/long"],
                               "/long?mode=next": [200, "/long"], "/hello": [200, "/hello"]}
    # The thread that ended the first call waited for the /hello; or, on a loaded machine,
    # the /hello ran before that thread came back for the next call (then nothing to wait for).
    assert sup._server.stats["fast_first"] >= 1 or app.events[1:] == ["hello end", "next start"], \
        app.events


def test_a_fast_route_passes_a_queue_of_slow_ones(start_server):
    """Short requests go first: a fast request sent while a slow route's calls queue is
    answered before most of them (they run one at a time in the long class). The server runs
    in its own process here: a client in the server's process would wait for the GIL that the
    slow calls hold."""
    srv = start_server("busy", "--scheduler", "pool")
    assert srv.request("GET", "/cpu?ms=30&token=prime").status == 200  # history: a long route
    order = []
    lock = threading.Lock()

    def slow(i):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        c.request("GET", f"/cpu?ms=30&token=slow{i}")
        assert c.getresponse().read() == f"cpu slow{i}".encode()
        with lock:
            order.append(f"slow{i}")

    threads = [threading.Thread(target=slow, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    srv.wait_marks("cpu-started", 2)  # the prime, and the first slow call is running
    assert srv.request("GET", "/hello").body == b"hello"
    with lock:
        order.append("fast")
    for t in threads:
        t.join(60)
    assert len(order) == 13
    assert order.index("fast") <= 3, order
    # Every slow call ran to its end too.
    started = srv.marks("cpu-started")
    finished = srv.marks("cpu-finished")
    assert len(started) == len(finished) == 13


def hogs_passed_by_fast_requests(srv, probes: int = 12) -> list:
    """With six clients sending `/hog` calls in a loop (one runs at a time in the long class,
    the others queue), send `/hello` `probes` times; for each, how many `/hog` calls finished
    while it waited. A `/hello` admitted in the short class waits only for the `/hog` holding
    the GIL; one classed long waits for every `/hog` queued before it."""
    done = []
    lock = threading.Lock()
    stop = threading.Event()

    def hogs(i):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        n = 0
        while not stop.is_set():
            c.request("GET", f"/hog?token={i}-{n}")
            assert c.getresponse().read() == f"hog {i}-{n}".encode()
            with lock:
                done.append(i)
            n += 1
        c.close()

    threads = [threading.Thread(target=hogs, args=(i,)) for i in range(6)]
    already = len(srv.marks("hog-finished"))
    for t in threads:
        t.start()
    try:
        srv.wait_marks("hog-finished", already + 3)  # the queue is established
        passed = []
        for _ in range(probes):
            with lock:
                before = len(done)
            assert srv.request("GET", "/hello").body == b"hello"
            with lock:
                passed.append(len(done) - before)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    return passed


def test_a_fast_route_that_waited_for_the_interpreter_stays_fast(start_server):
    """A fast request that waits for the GIL behind a long call passes the long-call mark
    without computing. It must not mark its route long: the next fast requests would queue
    behind the slow route's calls in the long class (measured in S12: HAProxy checks on
    `/hello` timed out and took the server out of service, 5 times in 30 s). `/hog` holds the
    GIL in one C call for tens of milliseconds, so every `/hello` sent beside it waits past
    the mark; each must still be answered before more than a few queued `/hog` calls finish."""
    srv = start_server("busy", "--scheduler", "pool")
    assert srv.request("GET", "/hog?token=prime").status == 200  # history: a long route
    assert srv.request("GET", "/hello").body == b"hello"
    passed = hogs_passed_by_fast_requests(srv)
    # One /hog runs at a time (long class); a /hello waits for the one holding the GIL. Queued
    # behind the long class, it would wait for the five queued ones too.
    assert max(passed) <= 3, passed


def test_a_fast_route_that_waited_for_the_interpreter_unwatched_stays_fast(start_server):
    """The same wait while no call is queued: the pool's watcher, which judges calls only
    while some wait for admission, is asleep, so nobody sees that `/hello` only waited. Its
    route must still not be marked long: the time remembered for a route starts when the
    call holds the GIL. (Measured on a fresh server beside CPU-bound calls, `bench.s12_startup`:
    recording the wait marked `/hello` long, and health probes waited 200-400 ms behind whole
    calls.) Each `/hello` here is sent while a lone `/hog` holds the GIL for ~120 ms, and
    waits for most of it; remembered, one such wait makes the route's smoothed time long.
    (Threads are started ahead, so that the wait is inside the call, not in a new thread's
    first attach.)"""
    srv = start_server("busy", "--scheduler", "pool", "--threads", "4:16")
    assert srv.request("GET", "/hog?token=prime").status == 200  # history: a long route
    assert srv.request("GET", "/hello").body == b"hello"
    hog = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    hog.request("GET", "/hog?token=lone&times=4")
    srv.wait_marks("hog-started", prefix="lone")
    assert srv.request("GET", "/hello").body == b"hello"
    assert hog.getresponse().read() == b"hog lone"
    hog.close()
    passed = hogs_passed_by_fast_requests(srv, probes=6)
    assert max(passed) <= 3, passed


def test_a_pool_past_a_hundred_threads_warns_once_about_database_connections(start_server):
    """101 blocked calls need 101 threads: allowed (blocking apps get up to MAX), but an app
    that holds a database connection per call would exceed PostgreSQL's default limit of 100,
    so the operator is told, once, on the error log."""
    srv = start_server("blocking", "--threads", "1:300")
    mark = srv.log_mark()
    n = 110
    results = []
    lock = threading.Lock()

    def slow(i):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        c.request("GET", f"/slow?token=t{i}&gate=many")
        body = c.getresponse().read()
        with lock:
            results.append(body)
        c.close()

    threads = [threading.Thread(target=slow, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    try:
        srv.wait_marks("started", n, timeout=60)  # all 110 calls block at once
        srv.wait_log(r"grew past 100 threads", since=mark)
    finally:
        srv.open_gate("many")
        for t in threads:
            t.join(60)
    assert sorted(results) == sorted(f"slow t{i} gate=open".encode() for i in range(n))
    assert srv.log_since(mark).count("grew past 100 threads") == 1
    assert "max_connections" in srv.log_since(mark)


def test_the_loop_moving_at_every_streamed_answer_neither_nests_nor_counts_threads_twice(server):
    """An inline call whose answer streams hands the event loop to another thread (the stream
    hook), and the caller goes back to being a pool thread when its call ends. With one client
    streaming answer after answer the loop moves at every request, between the same few threads.
    Each move once started a worker loop nested inside the previous one's frame (an 8 MiB stack
    overflowed after some thousands of moves: a segfault under S3 with the server pinned to one
    core) and counted the thread again (`threads` grew by one per move, and the pool warned of
    more than 100 calls at once with a single client)."""
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return (b"block %d\n" % i for i in range(4))

    sup, port = server(app, scheduler="adaptive")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for _ in range(400):
        c.request("GET", "/")
        r = c.getresponse()
        assert r.status == 200 and r.read() == b"".join(b"block %d\n" % i for i in range(4))
    c.close()
    stats = sup._server.stats
    assert stats["handoffs"] + stats["takeovers"] >= 100, \
        f"the loop did not move between threads: {stats}"
    assert stats["threads"] <= 16, f"{stats['threads']} pool threads for one client: {stats}"

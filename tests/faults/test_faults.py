"""Faults injected while a load runs: for each, how many requests failed (asserted against what
the fault allows) and whether the server serves afterwards. Real processes, real signals, real
sockets; the load and the table are `conftest.py`'s (`pytest -q tests/faults` prints it).

| fault | allowed to fail |
|---|---|
| kill -9 of a worker | the requests in flight on it (at most one per client) |
| kill -9 of the master | any while nothing listens; none once a new server started on the port |
| a replacement that fails to boot | the requests in flight on the worker it replaces |
| overlapping HUPs | none |
| a full disk for the access log (`/dev/full`) | none (the lines are counted dropped) |
| an access log pipe nobody reads | none; the stop still ends |
| a busy metrics port for a new worker | none (the worker is retried with back-off) |
| a busy metrics port while workers recycle (`--max-requests`) | none; never more workers serving than `--workers` |
| TERM with `--workers`, a request in flight | one per client (its keep-alive connection ends); none hung: new connections refused |
| a GIL-holding C call (inline, or streaming after the loop's hand-off) | none of the health checks |
| EMFILE (descriptors exhausted) | none on open connections; new ones served once some close |
| the first requests of fresh servers, many clients and kinds at once (`--scheduler pool`) | none; each server stops on TERM |
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import socket
import threading

import pytest

from tests.faults.conftest import record
from tests.load import Load
from tests.helpers import wait_for
from tests.http_util import Conn, request_bytes
from tests.test_busy_metrics_port import held_port_pair
from tests.test_worker_failures import running
from tests.test_workers import children, get

CLIENTS = 4
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)

PID_APP = ("import os\n"
           "def app(environ, start_response):\n"
           "    body = str(os.getpid()).encode()\n"
           "    start_response('200 OK', [('Content-Length', str(len(body)))])\n"
           "    return [body]\n")


def serving(port: int) -> bool:
    """A request on a new connection is answered with a pid."""
    try:
        status, body = get(port)
    except OSError:
        return False
    return status == 200 and body.isdigit()


def metric(path, name: str) -> float:
    """One sample of `/metrics`, read over the unix socket at `path`."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(path))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    for line in out.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in the metrics")


def test_kill_9_of_a_worker(start_server):
    srv = start_server("workers", "--workers", "2")
    with Load(srv.port, CLIENTS) as load:
        load.wait_for(200)
        victim = children(srv.pid)[0]
        mark = srv.log_mark()
        os.kill(victim, signal.SIGKILL)
        srv.wait_log(r"Worker \d+ ready", since=mark, timeout=30)
        load.wait_for(200)
    ok = serving(srv.port) and len(children(srv.pid)) == 2
    record("kill -9 of a worker", load, f"<= {CLIENTS} (in flight on it)", ok)
    assert len(load.failed) <= CLIENTS, load.failed
    assert ok and victim not in children(srv.pid)


def test_kill_9_of_the_master(start_server):
    srv = start_server("workers", "--workers", "2")
    port, workers = srv.port, children(srv.pid)
    with Load(port, CLIENTS) as load:
        load.wait_for(200)
        os.kill(srv.pid, signal.SIGKILL)
        srv.wait_exit()
        wait_for(lambda: not any(running(p) for p in workers), "the workers to stop", timeout=15)
        # Nothing holds the port: a new server binds it (item 9: orphans used to).
        again = start_server("workers", "--workers", "2", binds=[f"127.0.0.1:{port}"])
        before = len(load.failed)
        load.wait_for(200)
        after_restart = len(load.failed) - before
    ok = serving(port) and again.alive()
    record("kill -9 of the master", load, "any while nothing listens; 0 once restarted", ok)
    assert after_restart == 0, load.failed[before:]
    assert ok


def test_a_replacement_that_fails_to_boot(start_server, tmp_path):
    module = tmp_path / "changing.py"
    module.write_text(PID_APP)
    srv = start_server(None, "--workers", "2", "changing:app", cwd=tmp_path)
    with Load(srv.port, CLIENTS) as load:
        load.wait_for(200)
        victim = children(srv.pid)[0]
        module.write_text("import sluicegate_test_no_such_dependency\n")
        mark = srv.log_mark()
        os.kill(victim, signal.SIGKILL)
        srv.wait_log(r"Worker \d+ failed to boot", since=mark, timeout=30)
        load.wait_for(200)  # the healthy worker serves on
        assert srv.alive()
        module.write_text(PID_APP + "# fixed\n")
        mark = srv.log_mark()
        srv.wait_log(r"Worker \d+ ready", since=mark, timeout=40)
        load.wait_for(100)
    ok = serving(srv.port) and len(children(srv.pid)) == 2
    record("a replacement that fails to boot", load, f"<= {CLIENTS} (in flight on the killed)",
           ok)
    assert len(load.failed) <= CLIENTS, load.failed
    assert ok


def test_overlapping_hups(start_server):
    srv = start_server("workers", "--workers", "2")
    first = set(children(srv.pid))
    with Load(srv.port, CLIENTS) as load:
        load.wait_for(200)
        for _ in range(3):  # each while the previous reload's workers boot
            mark = srv.log_mark()
            srv.signal(signal.SIGHUP)
            srv.wait_log(r"Booting worker", since=mark)
        srv.wait_log(r"Reload done", since=mark, timeout=30)
        wait_for(lambda: len(children(srv.pid)) == 2 and not first & set(children(srv.pid)),
                 "only new workers", timeout=30)
        load.wait_for(200)
    ok = serving(srv.port) and srv.alive()
    record("overlapping HUPs (3)", load, "0", ok)
    assert load.failed == [], load.failed
    assert ok


def test_a_full_disk_for_the_access_log(start_server, tmp_path):
    metrics = tmp_path / "m.sock"
    srv = start_server("workers", "--access-log", "/dev/full", "--metrics-bind",
                       f"unix:{metrics}")
    with Load(srv.port, CLIENTS) as load:
        load.wait_for(500)
    wait_for(lambda: metric(metrics, "sluicegate_access_log_dropped_total") > 0,
             "lines counted dropped")
    ok = serving(srv.port)
    record("a full disk for the access log (/dev/full)", load, "0", ok)
    assert load.failed == [], load.failed
    assert ok and "the access log cannot be written" in srv.log_text()


def test_an_access_log_pipe_nobody_reads(start_server, tmp_path):
    fifo = tmp_path / "access.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.fcntl(reader, F_SETPIPE_SZ, 4096)
        srv = start_server("workers", "--workers", "2", "--access-log", str(fifo),
                           "--graceful-timeout", "2")
        with Load(srv.port, CLIENTS) as load:
            load.wait_for(1000)
        ok = serving(srv.port)
        srv.signal(signal.SIGTERM)
        code = srv.wait_exit(30)
    finally:
        os.close(reader)
    record("an access log pipe nobody reads", load, "0; the stop ends", ok and code == 0)
    assert load.failed == [], load.failed
    assert ok and code == 0, srv.log_text()


def test_a_busy_metrics_port_for_a_new_worker(start_server):
    port, busy = held_port_pair(busy_at=2)  # port + 2 busy: the second worker's (the master on port)
    srv = start_server("workers", "--workers", "1", "--metrics-bind", f"127.0.0.1:{port}")
    with Load(srv.port, CLIENTS) as load:
        load.wait_for(200)
        mark = srv.log_mark()
        srv.signal(signal.SIGTTIN)
        srv.wait_log(r"starting a replacement again in 1s", since=mark, timeout=30)
        load.wait_for(200)
        busy.close()
        srv.wait_log(r"Worker \d+ ready", since=mark, timeout=30)
        load.wait_for(100)
    ok = serving(srv.port) and len(children(srv.pid)) == 2
    record("a busy metrics port for a new worker", load, "0", ok)
    assert load.failed == [], load.failed
    assert ok


def test_a_busy_metrics_port_while_workers_recycle(start_server):
    """Workers ask out at --max-requests and the replacement in slot 2 cannot bind its metrics
    port: each worker that boots in a later slot reaches its limit before slot 2 is filled.
    The workers serving never outnumber --workers (they piled up: `8 of 2 worker(s) serving`,
    one more process a second), and the busy slot is retried with back-off."""
    port, busy = held_port_pair(busy_at=3)  # port + 3 busy: slot 2's (the master on port)
    most = 0
    with busy:
        srv = start_server("workers", "--workers", "2", "--metrics-bind", f"127.0.0.1:{port}",
                           "--max-requests", "100")
        with Load(srv.port, CLIENTS) as load:
            def failed_boots() -> bool:
                nonlocal most
                most = max(most, len(children(srv.pid)))
                return srv.log_text().count("failed to boot") >= 3

            wait_for(failed_boots, "three failed boots of slot 2", timeout=60, interval=0.05)
            load.wait_for(200)
    counts = [(int(n), int(m)) for n, m in
              re.findall(r"(\d+) of (\d+) worker\(s\) serving", srv.log_text())]
    within = bool(counts) and all(n <= m for n, m in counts)
    ok = serving(srv.port) and srv.alive()
    record("a busy metrics port while workers recycle (--max-requests 100)", load,
           "0; serving <= 2 workers", ok and within)
    assert load.failed == [], load.failed
    assert within, counts
    # Two serving, a replacement booting, one draining: never the pile-up's 9.
    assert most <= 5, most
    assert ok


def test_term_with_workers_and_a_request_in_flight(start_server):
    """TERM while clients keep sending and one request is in flight: new connections are
    refused as soon as the workers stop accepting (they used to wait in the backlog until the
    master exited), the request in flight is answered, the exit is 0."""
    srv = start_server("blocking", "--workers", "2", "--graceful-timeout", "60")
    tok, gate = "stop-in-flight", "stop-gate"
    busy = Conn.open(srv.port)
    try:
        with Load(srv.port, CLIENTS, path="/fast", good=lambda b: b == b"fast",
                  timeout=10) as load:
            load.wait_for(200)
            busy.send(request_bytes("GET", f"/slow?token={tok}&gate={gate}"))
            srv.wait_marks("started", prefix=tok)
            srv.signal(signal.SIGTERM)
            wait_for(lambda: any("ConnectionRefusedError" in f for f in load.failed),
                     "a new connection refused", timeout=30,
                     context=lambda: str(load.failed[-3:]))
            in_flight = srv.marks("finished", prefix=tok) == []
        srv.open_gate(gate)
        answered = busy.read_response().status == 200
    finally:
        busy.close()
    code = srv.wait_exit()
    load.failed = [f for f in load.failed if "ConnectionRefusedError" not in f]
    hung = [f for f in load.failed if "timed out" in f]
    record("TERM with --workers 2, a request in flight (refusals not counted)", load,
           f"<= {CLIENTS} (keep-alive ends); 0 hung",
           f"exited {code}" + ("; the request in flight answered" if answered else ""))
    assert hung == [], load.failed
    assert in_flight, "new connections were refused only once the request had finished"
    assert len(load.failed) <= CLIENTS, load.failed
    assert answered and code == 0, srv.log_text()[-3000:]


@pytest.mark.parametrize("route", ["/hold", "/hold-stream"], ids=["inline", "streaming"])
def test_a_gil_holding_c_call(start_server, route):
    """Health checks under load while an inline call holds the GIL in C (`/hold`), or a
    streaming one after the loop's hand-off (`/hold-stream`), with an app request waiting for
    the GIL beside them."""
    srv = start_server("gil_held", "--health-path", "/healthz")
    fifo = srv.state_path("hold-fifo")
    os.mkfifo(fifo)
    answers: dict = {}

    def fetch(path: str) -> None:
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", path))
            answers[path] = c.read_response(timeout=60)

    holder = threading.Thread(target=fetch, args=(route,))
    holder.start()
    waiting = threading.Thread(target=fetch, args=("/hello",))
    try:
        srv.wait_marks("hold-started", 1)
        waiting.start()
        with Load(srv.port, CLIENTS, path="/healthz", good=lambda b: b == b"OK\n") as load:
            load.wait_for(200)
        still_held = srv.marks("hold-finished") == []
    finally:
        with open(fifo, "wb") as f:
            f.write(b"x")
        holder.join(30)
        if waiting.ident is not None:  # started
            waiting.join(30)
    ok = answers[route].status == 200 and answers["/hello"].body == b"hello" \
        and get(srv.port, "/hello") == (200, b"hello")
    record(f"a GIL-holding C call, {'streaming' if 'stream' in route else 'inline'} "
           "(health checks)", load, "0", ok)
    assert still_held, "the C call ended during the load: the test proves nothing"
    assert load.failed == [], load.failed
    assert ok


def test_descriptors_exhausted(start_server):
    srv = start_server("workers", "--header-timeout", "2", nofile=64)
    idle = []
    try:
        with Load(srv.port, CLIENTS) as load:
            load.wait_for(100)
            for _ in range(80):  # more than the server has descriptors for
                idle.append(socket.create_connection(("127.0.0.1", srv.port)))
            srv.wait_log(r"out of file descriptors", timeout=30)
            load.wait_for(200)  # open connections are served on
            for s in idle:
                s.close()
            idle.clear()
            srv.wait_log(r"accepting again", timeout=30)
            load.wait_for(50)
    finally:
        for s in idle:
            s.close()
    ok = serving(srv.port)
    record("EMFILE (80 idle connections, 64 descriptors)", load, "0", ok)
    assert load.failed == [], load.failed
    assert ok


def test_first_requests_of_fresh_servers_under_load(start_server):
    """Fresh servers whose first requests (with a query string) come from many clients at once,
    then the rounds of tests/test_first_requests.py (first requests of several kinds taken by
    threads together): a lock held across a GIL release hung the whole process on a key's
    first use, SIGTERM ignored."""
    from tests.test_first_requests import ROUNDS, THREADS, one_round

    load = None
    for _ in range(5):
        srv = start_server("first_requests", "--scheduler", "pool", *THREADS)
        with Load(srv.port, 8, path="/a?x=1", timeout=10) as load:
            load.wait_for(200)
        srv.signal(signal.SIGTERM)
        srv.wait_exit()
        assert load.failed == [], load.failed
    for _ in range(ROUNDS):
        one_round(start_server, ("--scheduler", "pool") + THREADS)
    record(f"first requests of {5 + ROUNDS} fresh servers (--scheduler pool)", load, "0", True)

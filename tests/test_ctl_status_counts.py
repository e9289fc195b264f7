"""`sluicegate ctl status` against a server holding many connections, and what answering it
costs the server's loop: the connections a status counts are those the workers hold, and the
core's readings behind it (`Server.metrics_text`, `Server.stats`, read by
python/sluicegate/control_agent.py) leave the GIL to other threads while they are made.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

from tests.apps.hello import app as hello_app
from tests.test_ctl import ctl_json, sock_path  # noqa: F401  (the fixture)

#: Idle keep-alive connections held open in the count test.
HELD = 300


def test_status_counts_the_idle_keepalive_connections_held_open(start_server, sock_path):
    """With HELD keep-alive connections open and idle (each has had its answer), the workers'
    `connections` add up to HELD, and go back to 0 once the clients close them."""
    srv = start_server("hello", "--workers", "2", "--control-socket", sock_path,
                       nofile=4 * HELD)
    held = []
    try:
        for _ in range(HELD):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            held.append(s)
        for s in held:
            assert s.recv(4096).startswith(b"HTTP/1.1 200 "), "an answer, then idle"
        workers = ctl_json(sock_path, "status")["workers"]
        assert all(w["answered"] for w in workers)
        assert sum(w["connections"] for w in workers) == HELD, workers
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 30
    while sum(w["connections"] for w in ctl_json(sock_path, "status")["workers"]):
        assert time.monotonic() < deadline, "connections still counted after their close"


def test_the_status_readings_let_other_threads_take_the_gil(pool_server):
    """A status read each worker's metrics text with the GIL held throughout, its reads of
    `/proc` and of the cgroup's files included (0.2 ms to 39 ms on a loaded machine): the
    loop's inline call waiting for the GIL meanwhile, its holder asleep in a read, looked
    blocked to the watchdog, and under 1,000 connections of load a status now and then took
    the loop over and put the server in dispatch mode (one takeover in 25 statuses, a quarter
    of the run's requests then dispatched). The readings are made detached now: a thread
    waiting for the GIL gets it during them.

    Without forced switches (a switch interval of 100 s) this thread lets the GIL go only
    where it waits; the other thread, woken every millisecond, is waiting for the GIL when a
    reading begins, so it runs during the reading only if the reading lets the GIL go."""
    sup, _ = pool_server(hello_app)
    server = sup._server
    ran = []
    stop = threading.Event()

    def other():
        while not stop.wait(0.001):
            ran.append(1)

    readings = {"metrics_text": lambda: server.metrics_text(), "stats": lambda: server.stats}
    interval = sys.getswitchinterval()
    t = threading.Thread(target=other, daemon=True)
    t.start()
    # A process spinning meanwhile keeps the machine's other CPU awake: on a VM a woken thread
    # whose CPU sits halted started 60 µs or more after its wake-up, later than the whole of a
    # 50 µs reading, and the thread never ran during one. (Whatever the CPUs do, a reading that
    # holds the GIL lets no thread run: the switch interval below forces no hand-off.)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sys.setswitchinterval(100.0)
    try:
        let_go = {}
        for name, read in readings.items():
            let_go[name] = False
            for _ in range(50):  # the other thread may wake only after the reading
                spin_until = time.perf_counter() + 0.003  # past its wait: it wants the GIL
                while time.perf_counter() < spin_until:
                    pass
                before = len(ran)
                read()
                if len(ran) > before:
                    let_go[name] = True
                    break
    finally:
        sys.setswitchinterval(interval)
        spinner.kill()
        spinner.wait(10)
        stop.set()
        t.join(10)
    assert let_go == {"metrics_text": True, "stats": True}

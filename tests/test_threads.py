"""Every thread the server starts is named, and its name is in the thread table of
docs/architecture.md ("Threads").

The kernel keeps a thread's name in `/proc/PID/task/TID/comm` (15 bytes), where `top -H`,
`ps -L` and a profiler read it. A thread nobody named shows the process's own name there
(`python`, `sluicegate`): that is what these tests refuse. They start a real server with as
many kinds of thread as a test can keep alive at once (TLS, HTTP/2, the metrics listener, an
access log, --timeout, and a request blocked in the app so that the watchdog has handed the
loop on and pool threads exist), alone and with --workers, and read every thread's name. The
threads that live only for a moment (a /debug/requests page, the TLS writer, an upload's
read-ahead, a metrics scrape in the master) are checked in the source instead: every thread
the code starts is started through a name from the table.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import threading
from pathlib import Path
from typing import Dict, List, Set

from tests.h2_client import H2Client
from tests.h3_client import H3Client
from tests.helpers import wait_for
from tests.helpers import free_ports
from tests.test_tls import client_context, tls_options
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parent.parent

#: The thread table of docs/architecture.md, by name. A new kind of thread gets a row there
#: and its name here.
NAMES = {
    # The Rust core (std::thread::Builder::name).
    "sg-loop", "sg-app", "sg-admit", "sg-watchdog", "sg-timeout",
    "sg-accesslog", "sg-statsd", "sg-debug", "sg-tls-writer", "sg-readahead",
    # The Python front (thread_names.py: prctl(PR_SET_NAME) from inside the thread).
    "sg-metrics", "sg-scrape", "sg-recycling", "sg-reloader", "sg-reload-read", "sg-control",
    "sg-ctl-agent", "sg-ctl-client", "sg-uwsgi-stats", "sg-uwsgi-thread",
}

#: The kinds a serving process has while a call blocks, with the options below.
SERVING = {"sg-loop", "sg-app", "sg-admit", "sg-watchdog", "sg-timeout",
           "sg-accesslog", "sg-recycling"}


def threads_of(pid: int) -> Dict[int, str]:
    """Thread id -> name, for every thread of process `pid`."""
    names = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            names[int(task.name)] = (task / "comm").read_text().rstrip("\n")
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            pass
    return names


def children(pid: int) -> List[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def unnamed(pid: int) -> List[str]:
    """The threads of `pid` (its main thread aside, which is the process) whose name is the
    process's own or none from the table."""
    threads = threads_of(pid)
    process = threads.pop(pid)
    return [f"thread {tid}: {name!r}" for tid, name in sorted(threads.items())
            if name == process or name not in NAMES]


def options(tls_certs, access_log: Path, metrics_port: int) -> List[str]:
    return [*tls_options(tls_certs), "--http2", "on", "--http3", "--metrics-bind",
            f"127.0.0.1:{metrics_port}", "--access-log", str(access_log), "--timeout", "60",
            "--max-stuck", "5", "--threads", "2:8"]


def block_one_call(srv, tls_certs) -> ssl.SSLSocket:
    """A request over TLS that blocks in the app (until the gate opens); it has started."""
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    sock = client_context(tls_certs).wrap_socket(raw, server_hostname=srv.host)
    sock.sendall(b"GET /slow?token=t&gate=threads HTTP/1.1\r\nHost: x\r\n\r\n")
    srv.wait_marks("started", 1, prefix="t")
    return sock


def h2_get(srv, tls_certs) -> None:
    """One HTTP/2 request over TLS (ALPN h2), answered."""
    ctx = client_context(tls_certs)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    c = H2Client(srv.port, tls=ctx)
    try:
        assert c.get("/fast", scheme="https").status == 200
    finally:
        c.close()


def h3_get(srv, tls_certs) -> None:
    """One HTTP/3 request (QUIC), answered: its endpoint and connection are tasks of the loop,
    no thread of their own."""
    with H3Client(srv.port, str(tls_certs.ca_cert)) as c:
        assert c.get("/fast").status == 200


def scrape(port: int) -> None:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        assert r.status == 200, r.read()[:100]
        r.read()
    finally:
        c.close()


def kinds(pid: int) -> Set[str]:
    return set(threads_of(pid).values())


def test_every_thread_of_a_single_process_is_named(start_server, tls_certs, tmp_path):
    mport = free_ports(1)
    srv = start_server("blocking", *options(tls_certs, tmp_path / "access.log", mport))
    sock = block_one_call(srv, tls_certs)
    try:
        h2_get(srv, tls_certs)
        h3_get(srv, tls_certs)
        scrape(mport)
        # The blocked call's loop was handed on, and the h2 request answered: every kind the
        # options make is there.
        wait_for(lambda: SERVING <= kinds(srv.pid),
                 f"the kinds {sorted(SERVING)} (have {sorted(kinds(srv.pid))})", 10)
        assert "sg-control" in kinds(srv.pid)
        assert unnamed(srv.pid) == [], threads_of(srv.pid)
    finally:
        srv.open_gate("threads")
        sock.close()


def test_every_thread_of_a_master_and_its_workers_is_named(start_server, tls_certs, tmp_path):
    mport = free_ports(3)
    srv = start_server("blocking", "--workers", "2", "--max-requests", "100000",
                       *options(tls_certs, tmp_path / "access.log", mport))
    wait_for(lambda: len(children(srv.pid)) == 2, "two workers", 10)
    workers = children(srv.pid)
    for port in (mport, mport + 1, mport + 2):  # the master's sum, then each worker's
        wait_for(lambda: _answers(port), f"the metrics listener on {port}", 10)
    sock = block_one_call(srv, tls_certs)
    try:
        h2_get(srv, tls_certs)
        scrape(mport)  # the master asks each worker: a scrape thread in the master
        assert {"sg-metrics", "sg-control"} <= kinds(srv.pid)
        assert all("sg-ctl-agent" in kinds(w) for w in workers)
        wait_for(lambda: any(SERVING <= kinds(w) for w in workers),
                 f"a worker with the kinds {sorted(SERVING)}", 10)
        found = {pid: unnamed(pid) for pid in [srv.pid, *workers]}
        assert found == {pid: [] for pid in found}, {p: threads_of(p) for p in found}
    finally:
        srv.open_gate("threads")
        sock.close()


def test_a_master_without_the_extension_names_its_threads(start_server, tmp_path):
    """A master without TLS never loads the extension (master.py): its threads name
    themselves through /proc/self/task/TID/comm instead of the extension's prctl. Failed
    with that path broken: the master's control and metrics threads showed as `python`."""
    mport = free_ports(2)
    srv = start_server("hello", "--workers", "1", "--metrics-bind", f"127.0.0.1:{mport}")
    wait_for(lambda: len(children(srv.pid)) == 1, "one worker", 10)
    for port in (mport, mport + 1):
        wait_for(lambda: _answers(port), f"the metrics listener on {port}", 10)
    with open(f"/proc/{srv.pid}/maps") as f:
        assert "/_core." not in f.read()
    assert {"sg-metrics", "sg-control"} <= kinds(srv.pid)
    assert unnamed(srv.pid) == [], threads_of(srv.pid)


def _answers(port: int) -> bool:
    try:
        scrape(port)
        return True
    except (OSError, AssertionError):
        return False


# -- the source: threads that live only for a moment ------------------------------------------

def test_every_thread_the_code_starts_takes_a_name_from_the_table():
    """Rust: every `std::thread::Builder` is given a name from the table, and a bare
    `thread::spawn` (no name) is found only in test code. Python: threads are started through
    `thread_names` (or name themselves with `name_this_thread`)."""
    bad = []
    for path in sorted((ROOT / "src").rglob("*.rs")):
        text = path.read_text()
        tests_at = text.find("#[cfg(test)]")
        for m in re.finditer(r"thread::Builder::new\(\)", text):
            name = re.match(r'\s*\.name\("([^"]*)"', text[m.end():])
            if name is None or name.group(1) not in NAMES:
                bad.append(f"{path.relative_to(ROOT)}: a thread named "
                           f"{name.group(1) if name else 'nothing'}")
        for m in re.finditer(r"\bthread::spawn\(", text):
            if tests_at < 0 or m.start() < tests_at:
                bad.append(f"{path.relative_to(ROOT)}: an unnamed thread::spawn")
    for path in sorted((ROOT / "python" / "sluicegate").glob("*.py")):
        text = path.read_text()
        if path.name == "thread_names.py":
            continue
        for m in re.finditer(r"threading\.Thread\b", text):
            if "name_this_thread(" not in text:
                bad.append(f"{path.relative_to(ROOT)}: a threading.Thread not named for the "
                           "kernel (thread_names.start, or name_this_thread in its run)")
        for name in re.findall(r'(?:name_this_thread|thread_names\.start)\([^"\n]*"([^"]+)"',
                               text) + re.findall(r'name="(sg-[^"]*)"', text):
            if name not in NAMES:
                bad.append(f"{path.relative_to(ROOT)}: a thread named {name!r}, not in the table")
    assert bad == []
    assert all(len(n.encode()) <= 15 for n in NAMES), "the kernel keeps 15 bytes of a name"


def test_a_python_thread_names_itself_for_the_kernel():
    """CPython 3.11 does not pass a thread's name to the kernel; thread_names does."""
    from sluicegate import thread_names

    seen = []
    done = threading.Event()

    def body() -> None:
        seen.append(Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text())
        done.set()

    thread_names.start(body, "sg-test-thread-long-name")
    assert done.wait(10)
    assert seen == ["sg-test-thread-\n"]


def loop_threads(pid: int) -> List[int]:
    return sorted(tid for tid, name in threads_of(pid).items() if name == "sg-loop")


def test_the_name_sg_loop_follows_the_loop_after_a_takeover(start_server):
    """The thread named `sg-loop` is the one driving the loop, also after the watchdog took
    the loop from an inline call that blocked: the thread taken over serves as a pool thread
    and is named `sg-app` from then on. Failed before: names were given once at a thread's
    start, so the loop's first thread kept `sg-loop` while it ran app calls in the pool (S18's
    Django, where the warm-up's first calls run inline: up to 3.4 s of Django's CPU per 5 s
    counted as the loop's), and the loop went on under an `sg-app` name."""
    srv = start_server("blocking", "--threads", "2:8")
    assert srv.request(path="/fast").status == 200
    [first] = loop_threads(srv.pid)
    sock = socket.create_connection((srv.host, srv.port), timeout=10)
    try:
        sock.sendall(b"GET /slow?token=n&gate=names HTTP/1.1\r\nHost: x\r\n\r\n")
        srv.wait_marks("started", 1, prefix="n")
        # Served while the first call blocks: the loop runs on another thread.
        assert srv.request(path="/fast").status == 200
        srv.open_gate("names")
        assert b"slow n gate=open" in sock.recv(4096)
    finally:
        sock.close()
    wait_for(lambda: threads_of(srv.pid).get(first) == "sg-app",
             f"the thread taken over ({first}) named sg-app ({threads_of(srv.pid)})", 10)
    wait_for(lambda: len(loop_threads(srv.pid)) == 1 and loop_threads(srv.pid) != [first],
             f"one sg-loop thread, not {first} ({threads_of(srv.pid)})", 10)

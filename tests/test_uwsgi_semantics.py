"""uWSGI 2.0's own ways under `sluicegate-uwsgi`, where they differ from sluicegate's, each
checked over real sockets and, where practical, against real uWSGI for the same requests:
  - `buffer-size`: a head larger than the buffer gets no answer: uWSGI's log line, then the
    connection closes, so nginx in front answers 502 (`--uwsgi-compat buffer-size`,
    src/io/event_loop/closing.rs); the gunicorn-style front keeps its 431;
  - `max-requests-delta`: worker K (from 1) is replaced after max-requests + (K-1)*delta
    requests (`--uwsgi-compat max-requests-delta=N`, uwsgi_rows.requests_beyond), its id kept
    by its replacement; and not before it lived `min-worker-lifetime` seconds (worker.py);
  - several `mount`s with `manage-script-name`: each request goes to its mountpoint's app with
    uWSGI's SCRIPT_NAME and PATH_INFO, else to the first app (uwsgi_mounts.py).
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from typing import Callable, List, Tuple

import pytest

from tests import nginx_util
from tests.conftest import PYTHON, ROOT, ServerProcess
from tests.helpers import wait_for
from tests.test_uwsgi_logs import UWSGI, five_digit_port
from tests.uwsgi_packet import nginx_vars, packet

#: A header that makes a head larger than uWSGI's default buffer (4096 bytes).
BIG = "x" * 5000


def sluicegate_uwsgi(ini: str, tmp: str) -> ServerProcess:
    path = os.path.join(tmp, "app.ini")
    with open(path, "w") as f:
        f.write("[uwsgi]\n" + ini)
    return ServerProcess(None, command=[PYTHON, "-m", "sluicegate.uwsgi_cli", "--ini", path])


def real_uwsgi(ini: str, tmp: str) -> Tuple[subprocess.Popen, Callable[[], str]]:
    """Real uWSGI with `ini`, its log in a file; returns the process and the log's reader."""
    path, log = os.path.join(tmp, "real.ini"), os.path.join(tmp, "real.log")
    with open(path, "w") as f:
        f.write(f"[uwsgi]\nlogto = {log}\nchdir = {ROOT}\n" + ini)
    p = subprocess.Popen([UWSGI, "--ini", path], cwd=str(ROOT), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)

    def text() -> str:
        try:
            with open(log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    wait_for(lambda: "spawned uWSGI worker" in text() or None, "uWSGI's worker", context=text)
    return p, text


def stop_real(p: subprocess.Popen) -> None:
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(30)


def closes_without_answer(address, data: bytes) -> bool:
    """Send `data`; True when the server closes (or resets) without sending a byte."""
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(data)
        try:
            return s.recv(65536) == b""
        except ConnectionResetError:
            return True


def oversize_packet() -> bytes:
    return packet(nginx_vars() + [(b"HTTP_X_BIG", BIG.encode())])


def oversize_head() -> bytes:
    return f"GET / HTTP/1.1\r\nHost: x\r\nX-Big: {BIG}\r\n\r\n".encode()


# --- buffer-size


@pytest.mark.skipif(not nginx_util.available(), reason="nginx or openssl missing")
def test_a_head_over_buffer_size_closes_and_nginx_answers_502():
    """uWSGI closes a connection whose request packet is larger than buffer-size, after its
    line `invalid request block size: N (max 4096)...skip`: nginx's uwsgi_pass then answers
    502. sluicegate-uwsgi answered 431 (the gunicorn-style front's answer), which nginx passed
    on; a request that fits is served."""
    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    sock = os.path.join(tmp, "app.sock")
    srv = sluicegate_uwsgi(f"socket = {sock}\nmodule = tests.apps.hello:app\n"
                           f"chdir = {ROOT}\n", tmp)
    proxy = nginx_util.Nginx({"app": ("uwsgi", f"unix:{sock}")}, tls=False)
    try:
        def get(headers):
            c = http.client.HTTPConnection("127.0.0.1", proxy.ports["app"], timeout=30)
            c.request("GET", "/", headers=headers)
            r = c.getresponse()
            r.read()
            c.close()
            return r.status

        assert get({"X-Small": "y"}) == 200
        mark = srv.log_mark()
        assert get({"X-Big": BIG}) == 502
        srv.wait_log(r"^invalid request block size: \d+ \(max 4096\)\.\.\.skip$", since=mark)
        assert "upstream prematurely closed" in proxy.error_log()
    finally:
        proxy.stop()
        srv.stop(signal.SIGINT)


def test_an_http_head_over_buffer_size_is_closed_without_an_answer():
    """On http-socket, uWSGI closes a head that does not end within buffer-size, after `invalid
    HTTP request size (max 4096)...skip`, with no answer (sluicegate answered 431)."""
    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    srv = sluicegate_uwsgi(f"http-socket = 127.0.0.1:0\nmodule = tests.apps.hello:app\n"
                           f"chdir = {ROOT}\n", tmp)
    try:
        address = srv.addresses[0][1]
        assert closes_without_answer(address, oversize_head())
        srv.wait_log(r"^invalid HTTP request size \(max 4096\)\.\.\.skip$")
        assert srv.request("GET", "/").status == 200
    finally:
        srv.stop(signal.SIGINT)


def test_the_gunicorn_style_front_keeps_its_431(start_server):
    """`sluicegate` itself (no --uwsgi-compat) answers a head over --limit-header-bytes 431 on
    a uwsgi listener as on HTTP."""
    srv = start_server("hello", "--limit-header-bytes", "4096",
                       binds=["127.0.0.1:0", "uwsgi:127.0.0.1:0"])
    for address, data in ((srv.addresses[0][1], oversize_head()),
                          (srv.addresses[1][1], oversize_packet())):
        with socket.create_connection(address, timeout=30) as s:
            s.sendall(data)
            assert s.recv(65536).startswith(b"HTTP/1.1 431 "), address


@pytest.mark.skipif(UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)")
def test_buffer_size_overflow_is_real_uwsgis():
    """The same oversize packet and HTTP head to real uWSGI and to sluicegate-uwsgi, with
    buffer-size 4096: both close without an answer, and log the same lines."""
    def run(start, text_of) -> List[str]:
        port_u, port_h = five_digit_port(), five_digit_port()
        handle = start(f"socket = 127.0.0.1:{port_u}\nhttp-socket = 127.0.0.1:{port_h}\n"
                       "module = tests.apps.hello:app\nbuffer-size = 4096\nmaster = true\n")
        try:
            assert closes_without_answer(("127.0.0.1", port_u), oversize_packet())
            assert closes_without_answer(("127.0.0.1", port_h), oversize_head())
            pattern = re.compile(r"^invalid (request block|HTTP request) size.*$", re.M)
            return wait_for(lambda: (lambda found: found if len(found) == 2 else None)(
                pattern.findall(text_of(handle))), "the two lines")
        finally:
            stop_real(handle[0]) if isinstance(handle, tuple) else handle.stop(signal.SIGINT)

    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    theirs = run(lambda ini: real_uwsgi(ini, tmp), lambda h: h[1]())
    ours = run(lambda ini: sluicegate_uwsgi(ini + f"chdir = {ROOT}\n", tmp),
               lambda s: s.log_text())
    assert ours == theirs


# --- max-requests-delta


def test_max_requests_delta_gives_worker_k_its_own_count():
    """max-requests 2, delta 1000, two workers: uWSGI replaces worker 1 after 2 requests and
    worker 2 after 1002, and each replacement of worker 1 is worker 1 again (2 requests). So
    every worker that ends within a few hundred requests served exactly 2. (The delta was
    --max-requests-jitter: a random count up to 1000 more; and a replacement started while its
    predecessor drained took another slot, and with it another delta.)"""
    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    srv = sluicegate_uwsgi("http-socket = 127.0.0.1:0\nmodule = tests.apps.hello:app\n"
                           f"chdir = {ROOT}\nmaster = true\nprocesses = 2\n"
                           "max-requests = 2\nmax-requests-delta = 1000\n"
                           "min-worker-lifetime = 0\n", tmp)
    ended = re.compile(r"Worker \d+ served (\d+) requests")
    try:
        sent = 0

        def three_ended():
            nonlocal sent
            found = ended.findall(srv.log_text())
            if len(found) >= 3 or sent >= 600:
                return found
            sent += 1
            srv.request("GET", "/")
            return None

        served = wait_for(three_ended, "three workers replaced", timeout=60,
                          context=srv.log_text)
        assert len(served) >= 3, f"{len(served)} replaced after {sent} requests"
        assert set(served) == {"2"}, served
    finally:
        srv.stop(signal.SIGINT)


def test_min_worker_lifetime_holds_max_requests_back():
    """uWSGI replaces no worker for max-requests before it lived min-worker-lifetime seconds
    (10 by default): with max-requests 1 and min-worker-lifetime 3, the first worker, sent
    requests one after the other, is replaced no sooner than 3 s after it was started (it was
    replaced after its first request)."""
    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    started = time.monotonic()  # before the worker was: its age is at most this much
    srv = sluicegate_uwsgi("http-socket = 127.0.0.1:0\nmodule = tests.apps.hello:app\n"
                           f"chdir = {ROOT}\nmaster = true\nprocesses = 1\n"
                           "max-requests = 1\nmin-worker-lifetime = 3\n", tmp)
    try:
        def first_ended():
            if "reached --max-requests" in srv.log_text():
                return time.monotonic()
            srv.request("GET", "/")
            return None

        ended = wait_for(first_ended, "the first worker replaced", timeout=60,
                         context=srv.log_text)
        assert ended - started >= 3, srv.log_text()
    finally:
        srv.stop(signal.SIGINT)


def test_max_worker_lifetime_delta_is_uwsgis():
    """max-worker-lifetime 1, delta 1000, two workers: uWSGI gives worker K (from 1) (K-1)*1000
    seconds more, so worker 1 is replaced after one second, again and again (its replacement
    is worker 1), and worker 2 not in the test's time. (Worker K got K*1000 more, so that no
    worker was replaced.)"""
    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    srv = sluicegate_uwsgi("http-socket = 127.0.0.1:0\nmodule = tests.apps.hello:app\n"
                           f"chdir = {ROOT}\nmaster = true\nprocesses = 2\n"
                           "max-worker-lifetime = 1\nmax-worker-lifetime-delta = 1000\n", tmp)
    try:
        replaced = wait_for(lambda: (lambda found: found if len(found) >= 2 else None)(
            re.findall(r"Worker (\d+) served for [\d.]+s \(--max-worker-lifetime\)",
                       srv.log_text())), "worker 1 replaced twice", timeout=60,
            context=srv.log_text)
        assert len(set(replaced)) == len(replaced), "each time another process: worker 1's"
    finally:
        srv.stop(signal.SIGINT)


# --- several mounts


MOUNTS = ("mount = /a=tests.apps.uwsgi_mounted:app_a\n"
          "mount = /b/=tests.apps.uwsgi_mounted:app_b\n"
          "mount = /a/deep=tests.apps.uwsgi_mounted:app_b\n"
          "manage-script-name = true\n")
TARGETS = ["/a", "/a/x", "/a/deep/y", "/ab", "/b/z", "/", "/c/d", "/a/deeper"]


def bodies(port: int) -> List[str]:
    out = []
    for target in TARGETS:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", target)
        r = c.getresponse()
        out.append(f"{target} -> {r.status} {r.read().decode()}")
        c.close()
    return out


def test_several_mounts_each_get_their_requests():
    """Three mounts with manage-script-name: the longest mountpoint under which a path falls
    (at a "/" or the path's end) gets the request, with it as SCRIPT_NAME and the rest as
    PATH_INFO; any other path goes to the first app, unchanged (sluicegate-uwsgi refused a
    second mount)."""
    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    srv = sluicegate_uwsgi(f"http-socket = 127.0.0.1:0\nchdir = {ROOT}\n" + MOUNTS, tmp)
    try:
        got = bodies(srv.port)
    finally:
        srv.stop(signal.SIGINT)
    assert got == [
        "/a -> 200 a '/a' ''", "/a/x -> 200 a '/a' '/x'", "/a/deep/y -> 200 b '/a/deep' '/y'",
        "/ab -> 200 a '' '/ab'", "/b/z -> 200 b '/b/' 'z'",
        "/ -> 200 a '' '/'", "/c/d -> 200 a '' '/c/d'", "/a/deeper -> 200 a '/a' '/deeper'"]


@pytest.mark.skipif(UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)")
@pytest.mark.parametrize("extra", ["", "module = tests.apps.uwsgi_mounted:app_root\n",
                                   "manage-script-name = false\n"])
def test_several_mounts_are_real_uwsgis(extra):
    """The same mounts (and a module beside them, and without manage-script-name) under real
    uWSGI and sluicegate-uwsgi: the same app and paths for each request."""
    tmp = tempfile.mkdtemp(prefix="sgcompat-")
    port = five_digit_port()
    ini = f"http-socket = 127.0.0.1:{port}\n" + MOUNTS + extra
    p, _ = real_uwsgi(ini, tmp)
    try:
        theirs = bodies(port)
    finally:
        stop_real(p)
    srv = sluicegate_uwsgi(f"chdir = {ROOT}\n" + ini, tmp)
    try:
        ours = bodies(port)
    finally:
        srv.stop(signal.SIGINT)
    assert ours == theirs

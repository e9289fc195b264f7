"""A small ``wsgi.file_wrapper`` answer over a regular file is sent from the app's own descriptor
while the call runs (``src/wsgi/sender/known.rs``, ``src/io/out_queue/with_file.rs``): the head
with MSG_MORE, then one ``sendfile``; the server makes a descriptor of its own (``dup``) only for
what the socket did not take then, which must outlive the app's ``close()``.

The fixture app is ``tests/apps/response_path.py`` (``/fw``). Large file bodies and the other
file-likes are covered in ``tests/test_response_path.py``.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from tests.apps.response_path import pattern
from tests.http_util import Conn, assert_still_serving, request_bytes
from tests.strace_util import straced

APP = "response_path"
SMALL = 21_324  # S2's file


@pytest.fixture(scope="module")
def srv(servers):
    return servers.get(APP)


def token() -> str:
    return uuid.uuid4().hex[:12]


def test_small_file_is_sent_without_a_descriptor_of_the_servers_own(start_server, tmp_path):
    """A 21 KB file answer took a `dup` of the app's descriptor (`fcntl(F_DUPFD_CLOEXEC)`) and
    its `close` on every request, though the socket took the whole body inside the call: two
    system calls per answer that the file's own descriptor makes unnecessary."""
    server = start_server(APP)
    assert_still_serving(server.port, "/pong", b"pong")  # threads and buffers exist first
    t = token()
    out = str(tmp_path / "strace.out")
    with straced(server.pid, out, calls="sendmsg,sendfile,fcntl"):
        with Conn.open(server.port) as c:
            c.send(request_bytes("GET", f"/fw?size={SMALL}&cl=auto&skip=1000&how=read"
                                        f"&buffered=1&token={t}"))
            resp = c.read_response()
            assert resp.status == 200 and resp.body == pattern(SMALL)[1000:]
        # The app closes the file after the server's last call on it: strace has seen that
        # call's return by then (the thread stops there until strace lets it go), so it is
        # awaited before strace is detached.
        assert server.wait_marks("file-closed", prefix=t) == [t]
    text = Path(out).read_text(errors="replace")
    dups = [line for line in text.splitlines() if "F_DUPFD" in line]
    assert not dups, "the server took a descriptor of its own for a body it sent at once:\n" \
        + "\n".join(dups)
    # `TID sendfile(...) = N`, or, when another thread's call cut in, `TID sendfile(... <unfinished
    # ...>` and later `TID <... sendfile resumed>...) = N`.
    results = [m.group(1) for line in text.splitlines()
               if re.match(r"^\d+\s+(sendfile\(|<\.\.\. sendfile resumed>)", line)
               and (m := re.search(r"\) = (-?\d+)", line))]
    assert results == [str(SMALL - 1000)], \
        f"expected one sendfile of the whole body:\n{text[-3000:]}"


def test_small_files_the_socket_cannot_take_at_once_arrive_whole(srv):
    """Answers pipelined to a client that reads nothing yet fill the socket: from then on an
    answer's head (or part of its body) does not leave during the call, and its body goes
    later, from the server's own descriptor, after the app closed its file. Every body must
    still be exact, from the position the app left its (buffered) file at."""
    t = token()
    count, size, skip = 200, 50_000, 1000
    target = f"/fw?size={size}&cl=auto&skip={skip}&how=read&buffered=1&token={t}"
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", target) * count + request_bytes("GET", "/pong"))
        for i in range(count):
            resp = c.read_response()
            assert resp.status == 200, f"answer {i}: {resp.status}"
            assert resp.body == pattern(size)[skip:], f"answer {i} is not byte-exact"
        assert c.read_response().body == b"pong"
    assert len(srv.wait_marks("file-closed", count=count, prefix=t)) == count

"""Small static files kept in memory (``io/static_cache.rs``), over real sockets: a kept file
is answered from memory (the metrics' ``sluicegate_static_cache_*`` say so), and every change
on disk is seen on the very next request: a file replaced by a rename (new bytes, new ETag),
written in place, deleted, given a precompressed sibling, or a directory on its path renamed.
Range and conditional requests are answered from the kept copy, over HTTP/2 as well; files
over 64 KiB are not kept; many distinct files never take the cache past its bounds (bytes,
files). A kept file of 16 KiB or more goes out with `sendfile` from the descriptor the cache
keeps (strace: no open, one sendfile of the range), and a change to it is seen at once too.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.h2_client import H2Client
from tests.helpers import free_ports
from tests.strace_util import straced
from tests.http_util import Conn, request_bytes, wait_for

FILE_MAX = 64 * 1024  # io/static_cache.rs FILE_MAX
TOTAL_MAX = 4 * 1024 * 1024  # io/static_cache.rs TOTAL_MAX
FILES_MAX = 4096  # io/static_cache.rs FILES_MAX
SENDFILE_FROM = 16 * 1024  # io/static_cache.rs SENDFILE_FROM


def scrape(port: int) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if not s.labels:
                out[s.name] = s.value
    return out


def scrape_ok(port: int) -> bool:
    try:
        scrape(port)
        return True
    except OSError:
        return False


@pytest.fixture
def served(start_server, tmp_path):
    """A server with /s mounted on tmp_path/public, and its metrics port."""
    root = tmp_path / "public"
    (root / "css").mkdir(parents=True)
    mport = free_ports(1)
    srv = start_server("hello", "--metrics-bind", f"127.0.0.1:{mport}", "--static",
                       f"/s={root}")
    wait_for(lambda: scrape_ok(mport), "the metrics listener")
    return srv, mport, root


def fetch(conn: Conn, path: str, headers=None, method: str = "GET"):
    conn.send(request_bytes(method, path, headers=headers))
    return conn.read_response(method)


def kept(mport: int) -> tuple:
    m = scrape(mport)
    return (m["sluicegate_static_cache_files"], m["sluicegate_static_cache_hits_total"])


def serve_from_memory(conn: Conn, mport: int, path: str, body: bytes):
    """GET `path` twice; the second answer must come from memory (one more hit)."""
    assert fetch(conn, path).body == body
    hits = kept(mport)[1]
    r = fetch(conn, path)
    assert r.status == 200 and r.body == body
    assert kept(mport)[1] == hits + 1, "the second answer did not come from memory"
    return r


def test_a_small_file_is_answered_from_memory(served):
    srv, mport, root = served
    (root / "css" / "site.css").write_bytes(b"body { color: red }\n")
    with Conn.open(srv.port) as c:
        r = serve_from_memory(c, mport, "/s/css/site.css", b"body { color: red }\n")
        assert r.header("Content-Type") == "text/css; charset=utf-8"
        assert r.header("ETag") and r.header("Last-Modified")
    files, _ = kept(mport)
    assert files == 1
    assert scrape(mport)["sluicegate_static_cache_bytes"] >= len(b"body { color: red }\n")


def test_a_kept_file_replaced_by_a_rename_is_served_new_at_once(served):
    srv, mport, root = served
    path = root / "css" / "site.css"
    path.write_bytes(b"old bytes\n")
    with Conn.open(srv.port) as c:
        old = serve_from_memory(c, mport, "/s/css/site.css", b"old bytes\n")
        tmp = root / "css" / "site.css.tmp"
        tmp.write_bytes(b"new bytes, and longer\n")
        os.replace(tmp, path)
        r = fetch(c, "/s/css/site.css")
        assert r.status == 200 and r.body == b"new bytes, and longer\n"
        assert r.header("ETag") != old.header("ETag")
        assert r.header("Content-Length") == str(len(b"new bytes, and longer\n"))


def test_a_kept_file_written_in_place_is_served_new_at_once(served):
    srv, mport, root = served
    path = root / "app.js"
    path.write_bytes(b"let a = 1;\n")
    with Conn.open(srv.port) as c:
        serve_from_memory(c, mport, "/s/app.js", b"let a = 1;\n")
        with open(path, "r+b") as f:  # same size, same inode
            f.write(b"let b = 2;\n")
        assert fetch(c, "/s/app.js").body == b"let b = 2;\n"


def test_a_kept_file_deleted_is_404_at_once(served):
    srv, mport, root = served
    path = root / "gone.txt"
    path.write_bytes(b"here\n")
    with Conn.open(srv.port) as c:
        serve_from_memory(c, mport, "/s/gone.txt", b"here\n")
        path.unlink()
        assert fetch(c, "/s/gone.txt").status == 404
    assert kept(mport)[0] == 0


def test_a_sibling_added_to_a_kept_file_is_served_at_once(served):
    srv, mport, root = served
    (root / "css" / "site.css").write_bytes(b"identity\n")
    with Conn.open(srv.port) as c:
        serve_from_memory(c, mport, "/s/css/site.css", b"identity\n")
        (root / "css" / "site.css.gz").write_bytes(b"\x1f\x8bFAKE")
        r = fetch(c, "/s/css/site.css", headers=[("Accept-Encoding", "gzip")])
        assert r.header("Content-Encoding") == "gzip" and r.body == b"\x1f\x8bFAKE"
        assert r.header("Vary") == "Accept-Encoding"


def test_a_directory_renamed_on_a_kept_files_path_is_seen_at_once(served):
    srv, mport, root = served
    (root / "css" / "site.css").write_bytes(b"in css\n")
    with Conn.open(srv.port) as c:
        serve_from_memory(c, mport, "/s/css/site.css", b"in css\n")
        os.rename(root / "css", root / "css-old")
        assert fetch(c, "/s/css/site.css").status == 404
        (root / "css").mkdir()
        (root / "css" / "site.css").write_bytes(b"a new css directory\n")
        assert fetch(c, "/s/css/site.css").body == b"a new css directory\n"


def test_range_and_conditional_requests_are_answered_from_memory(served):
    srv, mport, root = served
    body = bytes(range(256)) * 40
    (root / "data.bin").write_bytes(body)
    with Conn.open(srv.port) as c:
        etag = serve_from_memory(c, mport, "/s/data.bin", body).header("ETag")
        hits = kept(mport)[1]
        r = fetch(c, "/s/data.bin", headers=[("Range", "bytes=100-1099")])
        assert r.status == 206 and r.body == body[100:1100]
        assert r.header("Content-Range") == f"bytes 100-1099/{len(body)}"
        r = fetch(c, "/s/data.bin", headers=[("If-None-Match", etag)])
        assert r.status == 304 and r.body == b""
        r = fetch(c, "/s/data.bin", method="HEAD")
        assert r.status == 200 and r.header("Content-Length") == str(len(body))
        assert kept(mport)[1] == hits + 3


def test_a_kept_file_is_answered_from_memory_over_http2(served):
    srv, mport, root = served
    body = bytes(i % 251 for i in range(30_000))
    (root / "app.js").write_bytes(body)
    c = H2Client(srv.port)
    try:
        first = c.get("/s/app.js")
        hits = kept(mport)[1]
        again = c.get("/s/app.js")
        ranged = c.get("/s/app.js", headers=[("range", "bytes=10-19")])
    finally:
        c.close()
    assert first.status == 200 and bytes(first.body) == body
    assert again.status == 200 and bytes(again.body) == body
    assert again.header(b"content-length") == b"30000"
    assert ranged.status == 206 and bytes(ranged.body) == body[10:20]
    assert kept(mport)[1] == hits + 2


def test_a_kept_file_of_16_kib_or_more_is_sent_from_its_kept_descriptor(served, tmp_path):
    """From memory (one more hit each) yet with `sendfile`: the second GET, a range and a
    range below `SENDFILE_FROM` make no open and send exactly the bytes asked (strace)."""
    srv, mport, root = served
    body = bytes(i % 253 for i in range(21_324))
    (root / "page.bin").write_bytes(body)
    out = str(tmp_path / "strace.txt")
    with Conn.open(srv.port) as c:
        assert fetch(c, "/s/page.bin").body == body
        hits = kept(mport)[1]
        with straced(srv.pid, out, "sendfile,writev,sendmsg,openat,openat2,open"):
            r = fetch(c, "/s/page.bin")
            ranged = fetch(c, "/s/page.bin", headers=[("Range", "bytes=100-20099")])
            small = fetch(c, "/s/page.bin", headers=[("Range", "bytes=0-999")])
        assert kept(mport)[1] == hits + 3
    assert r.status == 200 and r.body == body
    assert ranged.status == 206 and ranged.body == body[100:20100]
    assert small.status == 206 and small.body == body[:1000]
    text = open(out).read()
    assert not re.search(r"\bopen(at2?)?\(", text), text[-2000:]
    sent = [(int(off), int(n)) for off, n in re.findall(r"sendfile\(\d+, \d+, \[(\d+)\] => \[\d+\], (\d+)\)", text)]
    assert sent == [(0, len(body)), (100, 20_000)], text[-2000:]


def test_a_kept_file_sent_with_sendfile_is_served_new_after_any_change(served):
    """The kept descriptor is the file that was read: written in place (same inode), replaced
    by a rename (a new inode), the next answer has the new bytes."""
    srv, mport, root = served
    path = root / "big.js"
    first = b"a" * 20_000
    path.write_bytes(first)
    with Conn.open(srv.port) as c:
        serve_from_memory(c, mport, "/s/big.js", first)
        with open(path, "r+b") as f:  # same size, same inode
            f.write(b"b" * 20_000)
        assert fetch(c, "/s/big.js").body == b"b" * 20_000
        serve_from_memory(c, mport, "/s/big.js", b"b" * 20_000)
        tmp = root / "big.js.tmp"
        tmp.write_bytes(b"c" * 30_000)
        os.replace(tmp, path)
        r = fetch(c, "/s/big.js")
        assert r.body == b"c" * 30_000 and r.header("Content-Length") == "30000"


def test_a_file_over_64_kib_is_not_kept(served):
    srv, mport, root = served
    body = b"x" * (FILE_MAX + 1)
    (root / "big.bin").write_bytes(body)
    with Conn.open(srv.port) as c:
        for _ in range(3):
            assert fetch(c, "/s/big.bin").body == body
    assert kept(mport) == (0, 0)


def test_many_files_never_take_the_cache_past_its_bound(served):
    srv, mport, root = served
    count, size = 100, 60 * 1024  # 6 MiB in all, over the 4 MiB bound
    bodies = {}
    for i in range(count):
        data = hashlib.sha256(b"%d" % i).digest() * (size // 32)
        (root / f"f{i}.bin").write_bytes(data)
        bodies[i] = data
    with Conn.open(srv.port) as c:
        for round_ in range(2):
            for i in range(count):
                assert fetch(c, f"/s/f{i}.bin").body == bodies[i]
                m = scrape(mport)
                assert m["sluicegate_static_cache_bytes"] <= TOTAL_MAX
    m = scrape(mport)
    assert 0 < m["sluicegate_static_cache_files"] < count
    assert m["sluicegate_static_cache_bytes"] > TOTAL_MAX // 2


def test_many_tiny_files_never_take_the_cache_past_its_file_count(served):
    srv, mport, root = served
    count = FILES_MAX + 200
    for i in range(count):
        (root / f"t{i}.txt").write_bytes(b"%d\n" % i)
    with Conn.open(srv.port) as c:
        for i in range(count):
            c.send(request_bytes("GET", f"/s/t{i}.txt"))
            assert c.read_response().body == b"%d\n" % i
    files = scrape(mport)["sluicegate_static_cache_files"]
    assert FILES_MAX // 2 < files <= FILES_MAX

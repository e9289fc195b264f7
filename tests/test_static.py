"""Static files from the Rust core: ``--static URL_PREFIX=DIRECTORY[;SETTING...]``,
over real sockets (raw, http.client and curl).

Covers: byte-exact bodies (0 B, small, 5 MB), HEAD (same head, no body: a pipelined GET after it
parses), Content-Type by extension, 405 + Allow; every refusal (traversal vectors, encoded
separators, NUL, control bytes, dotfiles, directories without index, FIFOs, symlinks out of the
mount) is a 404 (or the parser's 400) and never shows the bytes of a file outside the mount;
conditional requests (304/412), Range (206/416/200), If-Range; precompressed ``.br``/``.gz``
siblings; Cache-Control per mount; ``--static-fallthrough``; several mounts (longest prefix);
the access log; files changed on disk; flat memory and no thread per download (20 concurrent
256 MiB downloads), slow readers not stopping other requests; the ``serve()`` keyword and the
environment variable.

The served tree is built once per module under a tmp dir (see ``tree``): the mount is
``public/`` and its parent holds ``secret.txt`` whose unique marker must never appear in any
response. File mtimes are pinned to 2020-01-02 03:04:05 UTC so Last-Modified is known and is a
strong validator (If-Range by date needs it to be at least 1 s older than Date).
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import PYTHON
from tests.http_util import HOST, Conn, Response, WaitTimeout, exchange, request_bytes, wait_for

SECRET = ("SGSECRET-" + uuid.uuid4().hex).encode()
DOT_SECRET = ("SGDOTFILE-" + uuid.uuid4().hex).encode()
MTIME = 1577934245  # Thu, 02 Jan 2020 03:04:05 GMT
LM_TEXT = "Thu, 02 Jan 2020 03:04:05 GMT"
EARLIER = "Wed, 01 Jan 2020 00:00:00 GMT"
LATER = "Fri, 03 Jan 2020 00:00:00 GMT"

HELLO = b"Hello, static world!\n"
BIG_SIZE = 5 * 1024 * 1024 + 123
COMP_JS = b"console.log('identity representation');\n" * 10
COMP_BR = b"FAKE-BROTLI-BYTES:" + b"\x8b\x00\x01" * 7
COMP_GZ = b"\x1f\x8bFAKE-GZIP-BYTES" + b"\x00\xff" * 5

HUGE_SIZE = 256 * 1024 * 1024
HUGE_PERIOD = 1_048_573  # prime: a misplaced block shows in the hash
CLIENTS = 20
RSS_GROWTH_LIMIT = 50 * 1024 * 1024
# The server trusts a directory's recorded absence of precompressed siblings only once the
# directory has not changed for 2 s (io/static_siblings.rs); a little more.
SIBLINGS_SETTLE_S = 2.5

CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed (./dev test "
                                                     "installs it): curl tests skipped")

CONTENT_TYPES = {
    "hello.txt": "text/plain; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "page.html": "text/html; charset=utf-8",
    "data.json": "application/json",
    "logo.svg": "image/svg+xml",
    "pic.png": "image/png",
    "PHOTO.JPG": "image/jpeg",
    "font.woff2": "font/woff2",
    "mod.wasm": "application/wasm",
    "archive.tar.gz": "application/gzip",
    "noext": "application/octet-stream",
}


# -- the served tree ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("static")
    pub = base / "public"
    pub.mkdir()
    (base / "secret.txt").write_bytes(SECRET + b"\n")
    (base / "x").write_bytes(SECRET + b" x\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "o.txt").write_bytes(SECRET + b" outside\n")
    other = base / "other"  # a second mount, nested under /static/sub
    other.mkdir()
    (other / "page.txt").write_bytes(b"from the other mount\n")

    big = os.urandom(BIG_SIZE)
    files = {
        "hello.txt": HELLO,
        "empty.txt": b"",
        "big.bin": big,
        "a b.txt": b"space in name\n",
        "caf\u00e9.txt": b"utf-8 name\n",
        "sub/index.html": b"<!doctype html><title>sub index</title>\n",
        "sub/page.txt": b"sub page in public\n",
        "nodex/file.txt": b"in a directory without index\n",
        ".env": DOT_SECRET + b" env\n",
        ".git/config": DOT_SECRET + b" git\n",
        ".hidden/x.txt": DOT_SECRET + b" hidden dir\n",
        "comp.js": COMP_JS,
        "comp.js.br": COMP_BR,
        "comp.js.gz": COMP_GZ,
        "onlybr.css": b"body{}\n",
        "onlybr.css.br": b"FAKE-BR-CSS",
        "lonely.txt.gz": b"\x1f\x8bLONELY",
        "leaky.txt": b"leaky identity\n",
    }
    for name in CONTENT_TYPES:
        files.setdefault(name, ("content of " + name + "\n").encode())
    for rel, data in files.items():
        p = pub / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    os.symlink("../secret.txt", pub / "link_out")
    os.symlink(str(base / "secret.txt"), pub / "link_abs")
    os.symlink("../outside", pub / "link_dir_out")
    os.symlink("hello.txt", pub / "link_in")
    os.symlink("link_out", pub / "link_chain")  # inside, to a link that leaves
    os.symlink("sub", pub / "link_in_dir")
    os.symlink("../secret.txt", pub / "leaky.txt.gz")  # a sibling that leaves the mount
    os.mkfifo(pub / "fifo")
    for d, _, names in os.walk(base):
        for n in names:
            p = Path(d) / n
            if p.is_file() and not p.is_symlink():
                os.utime(p, (MTIME, MTIME))
    return SimpleNamespace(base=base, pub=pub, other=other, files=files, big=big,
                           big_sha=hashlib.sha256(big).hexdigest())


def mount(tree, settings: str = "", prefix: str = "/static") -> str:
    return f"{prefix}={tree.pub}" + (";" + settings if settings else "")


@pytest.fixture(scope="module")
def access_log(tmp_path_factory):
    return tmp_path_factory.mktemp("static-log") / "access.log"


@pytest.fixture(scope="module")
def srv(servers, tree, access_log):
    """The default mount at /static (index.html, no dotfiles, no symlinks out), app = hello."""
    return servers.get("hello", "--static", mount(tree), "--access-log", str(access_log))


# -- helpers -----------------------------------------------------------------------------------

def fetch(server, target, method="GET", headers=None) -> Response:
    resp = exchange(server.port, request_bytes(method, target, headers=headers), method=method)
    assert_no_leak(resp)
    return resp


def raw_request(server, target: bytes, method: bytes = b"GET", headers=b"") -> Response:
    data = method + b" " + target + b" HTTP/1.1\r\nHost: localhost\r\n" + headers + b"\r\n"
    with Conn.open(server.port) as c:
        c.send(data)
        resp = c.read_response(method.decode("latin-1"))
    assert_no_leak(resp)
    return resp


def assert_no_leak(resp: Response) -> None:
    whole = resp.raw_head + resp.body
    assert SECRET not in whole, "a file outside the mount was served"
    assert DOT_SECRET not in whole, "a dotfile was served"


def app_answer(resp: Response, path: str) -> bool:
    return resp.status == 200 and resp.body == ("path=" + path).encode("latin-1")


def without_date(resp: Response):
    return sorted((n.lower(), v) for n, v in resp.headers if n.lower() != "date")


def curl(*args) -> SimpleNamespace:
    """Run curl; returns status, the last response's headers (lower-case names) and body."""
    out = subprocess.run([CURL, "--silent", "--show-error", "--max-time", "20", "--dump-header",
                          "-", "--output", "/dev/stderr", *args],
                         capture_output=True, timeout=30, check=True)
    # --dump-header - writes heads to stdout, the body goes to stderr (binary-safe, separate).
    heads = out.stdout.split(b"\r\n\r\n")
    heads = [h for h in heads if h.strip()]
    lines = heads[-1].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        n, _, v = line.partition(":")
        headers[n.strip().lower()] = v.strip()
    return SimpleNamespace(status=status, headers=headers, body=out.stderr)


def url(server, path):
    return f"http://{HOST}:{server.port}{path}"


def etag_of(server, target, headers=None) -> str:
    resp = fetch(server, target, headers=headers)
    assert resp.status == 200
    etag = resp.header("ETag")
    assert etag and etag.startswith('"') and etag.endswith('"'), \
        f"not a strong ETag: {etag!r}"
    return etag


# -- bodies, HEAD, types, methods --------------------------------------------------------------

def test_small_file_with_http_client(srv, tree):
    conn = http.client.HTTPConnection(HOST, srv.port, timeout=10)
    try:
        conn.request("GET", "/static/hello.txt")
        r = conn.getresponse()
        body = r.read()
        assert r.status == 200
        assert body == HELLO
        assert r.getheader("Content-Length") == str(len(HELLO))
        assert r.getheader("Content-Type") == "text/plain; charset=utf-8"
        assert r.getheader("Last-Modified") == LM_TEXT
        assert email.utils.parsedate_to_datetime(r.getheader("Last-Modified")).timestamp() \
            == MTIME
        assert r.getheader("Accept-Ranges") == "bytes"
        etag = r.getheader("ETag")
        assert etag and etag.startswith('"') and not etag.startswith("W/"), etag
        assert r.getheader("Cache-Control") is None, "no Cache-Control unless configured"
        assert r.getheader("Content-Encoding") is None
        assert r.getheader("Server") == "sluicegate"
        assert email.utils.parsedate_to_datetime(r.getheader("Date")).year >= 2024
        # The connection is kept alive: a second request on it.
        conn.request("GET", "/static/sub/page.txt")
        r = conn.getresponse()
        assert r.status == 200 and r.read() == tree.files["sub/page.txt"]
    finally:
        conn.close()


def test_empty_file_has_zero_length_body(srv):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/static/empty.txt")
               + request_bytes("GET", "/static/hello.txt"))
        r = c.read_response()
        assert r.status == 200 and r.header("Content-Length") == "0" and r.body == b""
        r2 = c.read_response()
        assert r2.status == 200 and r2.body == HELLO


def test_5mb_file_byte_exact_with_http_client(srv, tree):
    conn = http.client.HTTPConnection(HOST, srv.port, timeout=10)
    try:
        conn.request("GET", "/static/big.bin")
        r = conn.getresponse()
        body = r.read()
    finally:
        conn.close()
    assert r.status == 200
    assert r.getheader("Content-Length") == str(BIG_SIZE)
    assert r.getheader("Content-Type") == "application/octet-stream"
    assert len(body) == BIG_SIZE
    assert hashlib.sha256(body).hexdigest() == tree.big_sha


@needs_curl
def test_curl_downloads_are_byte_exact(srv, tree):
    for name in ("hello.txt", "empty.txt", "big.bin", "a%20b.txt", "caf%C3%A9.txt"):
        r = curl(url(srv, "/static/" + name))
        assert r.status == 200, name
        expected = tree.files[name.replace("%20", " ").replace("%C3%A9", "\u00e9")]
        assert hashlib.sha256(r.body).hexdigest() == hashlib.sha256(expected).hexdigest(), name
        assert r.headers["content-length"] == str(len(expected))


def test_query_string_is_ignored(srv):
    r = fetch(srv, "/static/hello.txt?v=123&x=%2e%2e")
    assert r.status == 200 and r.body == HELLO


@pytest.mark.parametrize("name", ["hello.txt", "big.bin", "empty.txt", "comp.js"])
def test_head_has_the_same_head_and_no_body(srv, tree, name):
    """HEAD then GET pipelined on one raw socket: if HEAD sent any body byte, the GET's
    response would not parse (or its body would be off)."""
    target = "/static/" + name
    hdrs = [("Accept-Encoding", "br")] if name == "comp.js" else None
    with Conn.open(srv.port) as c:
        c.send(request_bytes("HEAD", target, headers=hdrs)
               + request_bytes("GET", target, headers=hdrs)
               + request_bytes("HEAD", target, headers=hdrs))
        head = c.read_response("HEAD")
        get = c.read_response("GET")
        head2 = c.read_response("HEAD")
        assert c.nothing_arrives(0.2), "bytes after the last HEAD response"
    assert head.status == get.status == head2.status == 200
    assert without_date(head) == without_date(get), "HEAD and GET heads differ"
    assert without_date(head2) == without_date(get)
    expected = COMP_BR if name == "comp.js" else tree.files[name]
    assert get.body == expected
    assert head.header("Content-Length") == str(len(expected))


@pytest.mark.parametrize("name,ctype", sorted(CONTENT_TYPES.items()))
def test_content_type_by_extension(srv, tree, name, ctype):
    r = fetch(srv, "/static/" + name)
    assert r.status == 200 and r.body == tree.files[name]
    assert r.header("Content-Type") == ctype


def test_index_html_served_for_a_directory(srv, tree):
    r = fetch(srv, "/static/sub/")
    assert r.status == 200 and r.body == tree.files["sub/index.html"]
    assert r.header("Content-Type") == "text/html; charset=utf-8"


def test_directory_without_trailing_slash_is_never_a_listing(srv, tree):
    """The proto docs say 404; the I/O layer serves the index: either is safe, a listing or an
    error page with names never is."""
    r = fetch(srv, "/static/sub")
    assert r.status in (200, 301, 308, 404)
    if r.status == 200:
        assert r.body == tree.files["sub/index.html"]
    assert b"page.txt" not in r.body


@pytest.mark.parametrize("target", ["/static/nodex/", "/static/nodex", "/static/", "/static",
                                    "/static//", "/static/.hidden/"])
def test_directory_without_index_is_404(srv, target):
    r = _follow_slash_redirect(srv, target)
    assert r.status == 404
    assert b"file.txt" not in r.body, "looks like a listing"


def _follow_slash_redirect(server, target):
    """A directory named without its trailing '/' gets a 301 to the '/' form (as nginx does);
    follow it once and return the final answer."""
    r = fetch(server, target)
    if r.status == 301:
        assert r.header("Location") == target + "/", r.header("Location")
        r = fetch(server, target + "/")
    return r


def test_directory_without_trailing_slash_redirects(srv):
    r = fetch(srv, "/static/sub?x=1")
    assert r.status == 301
    assert r.header("Location") == "/static/sub/?x=1"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE"])
def test_other_methods_get_405_with_allow(srv, method):
    with Conn.open(srv.port) as c:
        c.send(request_bytes(method, "/static/hello.txt"))
        r = c.read_response(method)
        assert r.status == 405
        assert r.header("Allow") == "GET, HEAD"
        assert HELLO not in r.body
        # No request body: the connection stays usable.
        c.send(request_bytes("GET", "/static/hello.txt"))
        assert c.read_response().body == HELLO


def test_405_for_a_request_with_a_body_closes_the_connection(srv):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("POST", "/static/hello.txt", body=b"x" * 1000))
        r = c.read_response()
        assert r.status == 405 and r.header("Allow") == "GET, HEAD"
        assert r.has_token("Connection", "close"), \
            "the static path reads no body, so it must close after answering one"
        c.expect_closed()


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_body_of_a_static_get_is_never_read_as_a_request(srv, framing):
    """A GET with a body whose bytes are a request for a dotfile: the static path reads no
    body, so it must close the connection rather than parse those bytes as the next request."""
    smuggled = request_bytes("GET", "/static/.env") + request_bytes("GET", "/smuggled")
    if framing == "length":
        data = request_bytes("GET", "/static/hello.txt", body=smuggled)
    else:
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(smuggled), smuggled)
        data = request_bytes("GET", "/static/hello.txt",
                             headers=[("Transfer-Encoding", "chunked")]) + body
    with Conn.open(srv.port) as c:
        c.send(data)
        r = c.read_response()
        assert_no_leak(r)
        assert r.status == 200 and r.body == HELLO
        assert r.has_token("Connection", "close")
        rest = c.read_until_close()
    assert DOT_SECRET not in rest and b"path=/smuggled" not in rest, rest[:200]
    assert rest == b""


def test_pipelined_static_and_app_requests_keep_their_order(srv, tree):
    reqs = [("GET", "/static/hello.txt"), ("GET", "/app-one"), ("GET", "/static/big.bin"),
            ("HEAD", "/static/big.bin"), ("GET", "/app-two"), ("GET", "/static/missing"),
            ("GET", "/static/empty.txt"), ("GET", "/static/hello.txt")]
    with Conn.open(srv.port) as c:
        c.send(b"".join(request_bytes(m, t) for m, t in reqs))
        got = [c.read_response(m) for m, _ in reqs]
    assert got[0].body == HELLO
    assert app_answer(got[1], "/app-one")
    assert hashlib.sha256(got[2].body).hexdigest() == tree.big_sha
    assert got[3].status == 200 and got[3].body == b""
    assert app_answer(got[4], "/app-two")
    assert got[5].status == 404
    assert got[6].status == 200 and got[6].body == b""
    assert got[7].body == HELLO


def test_http10_static_request_closes_unless_keepalive(srv):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/static/hello.txt", version="HTTP/1.0"))
        assert c.read_response().body == HELLO
        c.expect_closed()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/static/hello.txt", version="HTTP/1.0",
                             headers=[("Connection", "keep-alive")]))
        r = c.read_response()
        assert r.body == HELLO and r.has_token("Connection", "keep-alive")
        c.send(request_bytes("GET", "/static/hello.txt", headers=[("Connection", "close")]))
        assert c.read_response().body == HELLO
        c.expect_closed()


# -- traversal and refusals --------------------------------------------------------------------

# (id, raw target, what is allowed): "refused" = 404 (or the parser's 400; 414 for the
# overlong one); "app" = not under the mount, the hello app answers (it echoes PATH_INFO and
# never reads files).
LONG = b"/static/" + b"a/" * 2496 + b"secret.txt"
TRAVERSAL = [
    ("dotdot", b"/static/../secret.txt", "refused"),
    ("dotdot-deep", b"/static/../../../../../../etc/passwd", "refused"),
    ("enc-dotdot", b"/static/%2e%2e/secret.txt", "refused"),
    ("enc-dotdot-mixed", b"/static/%2E%2e/secret.txt", "refused"),
    ("enc-dotdot-upper", b"/static/%2E%2E/secret.txt", "refused"),
    ("dot-encdot", b"/static/.%2e/secret.txt", "refused"),
    ("encdot-dot", b"/static/%2e./secret.txt", "refused"),
    ("dotdot-encslash", b"/static/..%2fsecret.txt", "refused"),
    ("dotdot-encslash-upper", b"/static/..%2Fsecret.txt", "refused"),
    ("all-encoded", b"/static/%2e%2e%2fsecret.txt", "refused"),
    ("encslash-chain", b"/static/sub%2f..%2f..%2fsecret.txt", "refused"),
    ("encslash-leading", b"/static/%2f..%2fsecret.txt", "refused"),
    ("enc-backslash", b"/static/..%5csecret.txt", "refused"),
    ("enc-backslash-upper", b"/static/..%5Csecret.txt", "refused"),
    ("raw-backslash", b"/static/..\\secret.txt", "refused"),
    ("raw-backslash-sub", b"/static/sub\\..\\..\\secret.txt", "refused"),
    ("enc-nul", b"/static/hello.txt%00.png", "refused"),
    ("enc-nul-dotdot", b"/static/%00/../secret.txt", "refused"),
    ("dot-segment", b"/static/./../secret.txt", "refused"),
    ("dot-segment-inside", b"/static/./hello.txt", "refused"),
    ("double-slash", b"/static//../secret.txt", "refused"),
    ("double-slash-abs", b"/static//etc/passwd", "refused"),
    ("static-dotdot-x", b"/static/../x", "refused"),
    ("sub-dotdot-dotdot-x", b"/static/sub/../../x", "refused"),
    ("sub-dotdot-inside", b"/static/sub/../hello.txt", "refused"),
    ("enc-sub-dotdot", b"/static/sub/%2e%2e/%2e%2e/secret.txt", "refused"),
    ("double-encoded", b"/static/%252e%252e/secret.txt", "refused"),
    ("double-encoded-slash", b"/static/%252e%252e%252fsecret.txt", "refused"),
    ("overlong-path", LONG, "refused"),
    ("hundred-segments", b"/static/" + b"a/" * 99 + b"secret.txt", "refused"),
    ("hundred-dotdots", b"/static/" + b"../" * 100 + b"secret.txt", "refused"),
    ("overlong-utf8", b"/static/%c0%ae%c0%ae/secret.txt", "refused"),
    ("overlong-utf8-slash", b"/static/%c0%ae%c0%ae%c0%afsecret.txt", "refused"),
    ("iis-unicode", b"/static/%u002e%u002e/secret.txt", "refused"),
    ("tomcat-semicolon", b"/static/..;/secret.txt", "refused"),
    ("dotfile-env", b"/static/.env", "refused"),
    ("dotfile-git", b"/static/.git/config", "refused"),
    ("dotdir-file", b"/static/.hidden/x.txt", "refused"),
    ("enc-dotfile-git", b"/static/%2egit/config", "refused"),
    ("enc-dotfile-env", b"/static/%2Eenv", "refused"),
    ("static-dot", b"/static/.", "refused"),
    ("static-dotdot", b"/static/..", "refused"),
    ("static-dotdot-slash", b"/static/../", "refused"),
    ("trailing-dot", b"/static/hello.txt.", "refused"),
    ("trailing-slash-on-file", b"/static/hello.txt/", "refused"),
    ("raw-nul-middle", b"/static/hel\x00lo.txt", "refused"),
    ("raw-control", b"/static/\x01hello.txt", "refused"),
    ("raw-del", b"/static/hello\x7f.txt", "refused"),
    ("enc-control", b"/static/%01hello.txt", "refused"),
    ("enc-newline", b"/static/hello.txt%0a", "refused"),
    ("enc-cr-dotdot", b"/static/%0d%0a../secret.txt", "refused"),
    ("fifo", b"/static/fifo", "refused"),
    ("symlink-out", b"/static/link_out", "refused"),
    ("symlink-abs-out", b"/static/link_abs", "refused"),
    ("symlink-dir-out", b"/static/link_dir_out/o.txt", "refused"),
    ("symlink-chain-out", b"/static/link_chain", "refused"),
    ("prefix-boundary", b"/staticx/hello.txt", "app"),
    ("prefix-boundary-dotdot", b"/static../secret.txt", "app"),
    ("prefix-encoded", b"/st%61tic/hello.txt", "app"),
]


@pytest.mark.parametrize("target,allowed", [(t, a) for _, t, a in TRAVERSAL],
                         ids=[i for i, _, _ in TRAVERSAL])
def test_traversal_vector_is_refused(srv, target, allowed):
    check_vector(srv, target, allowed)


NOT_SYMLINKS = [v for v in TRAVERSAL if b"link" not in v[1]]


@pytest.mark.parametrize("target,allowed", [(t, a) for _, t, a in NOT_SYMLINKS],
                         ids=[i for i, _, _ in NOT_SYMLINKS])
def test_traversal_vector_is_refused_by_the_url_rules_alone(follow_srv, target, allowed):
    """With follow-symlinks the file is opened with plain openat (no RESOLVE_BENEATH): only
    the URL rules stand between these vectors and the parent directory."""
    check_vector(follow_srv, target, allowed)


def check_vector(server, target, allowed):
    r = raw_request(server, target)  # asserts the markers never appear
    if allowed == "app":
        assert r.status == 200 and r.body.startswith(b"path="), \
            f"{target!r}: outside the mount, the app should answer; got {r.status} {r.body[:80]!r}"
        assert HELLO not in r.body
        return
    ok = (400, 404, 414) if target is LONG else (400, 404)
    assert r.status in ok, f"{target[:100]!r}: {r.status} {r.body[:100]!r}"
    assert r.status != 403, "a refusal must look like a missing file"
    assert HELLO not in r.body


def test_traversal_vectors_with_head_and_absolute_form(srv):
    for target in (b"/static/../secret.txt", b"/static/%2e%2e/secret.txt", b"/static/.env"):
        r = raw_request(srv, target, method=b"HEAD")
        assert r.status in (400, 404), target
    for target in (b"http://localhost/static/../secret.txt",
                   b"http://localhost/static/%2e%2e/secret.txt",
                   b"http://localhost/static/..%2fsecret.txt"):
        r = raw_request(srv, target)
        assert r.status in (400, 404) or r.body.startswith(b"path="), (target, r.status)


def test_refusals_look_like_a_missing_file(srv):
    """Same status and body for a hidden file, a traversal and a truly missing file: a client
    cannot probe which rule fired."""
    answers = {raw_request(srv, t).status for t in
               (b"/static/missing.txt", b"/static/.env", b"/static/%2e%2e/secret.txt",
                b"/static/link_out", b"/static/fifo", b"/static/nodex/")}
    assert answers == {404}
    bodies = {raw_request(srv, t).body for t in (b"/static/missing.txt", b"/static/.env",
                                                  b"/static/link_out")}
    assert len(bodies) == 1


def test_server_survives_all_vectors_on_one_connection(srv):
    """Refusals that are 404 keep the connection; then a normal file is still served."""
    with Conn.open(srv.port) as c:
        for _, target, allowed in TRAVERSAL:
            if allowed != "refused" or any(b < 0x20 or b in (0x7f, 0x5c) for b in target):
                continue
            c.send(b"GET " + target + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
            r = c.read_response()
            assert_no_leak(r)
            if r.status == 400:
                break
            assert r.status == 404, target
    assert fetch(srv, "/static/hello.txt").body == HELLO


@pytest.fixture(scope="module")
def root_srv(servers, tree):
    return servers.get("hello", "--static", mount(tree, prefix="/"))


@pytest.mark.parametrize("target", [b"/../secret.txt", b"/%2e%2e/secret.txt", b"/..%2fsecret.txt",
                                    b"/.%2e/outside/o.txt", b"/link_out", b"//secret.txt",
                                    b"/%2e%2e%5csecret.txt", b"/.env"])
def test_root_mount_refuses_traversal(root_srv, target):
    r = raw_request(root_srv, target)
    assert r.status in (400, 404), target


def test_root_mount_serves_files(root_srv):
    assert fetch(root_srv, "/hello.txt").body == HELLO
    assert fetch(root_srv, "/sub/page.txt").status == 200


# -- symlinks, FIFOs ---------------------------------------------------------------------------

def test_symlink_inside_the_mount_is_served(srv, tree):
    assert fetch(srv, "/static/link_in").body == HELLO
    r = fetch(srv, "/static/link_in_dir/page.txt")
    assert r.status == 200 and r.body == tree.files["sub/page.txt"]


@pytest.mark.parametrize("target", ["/static/link_out", "/static/link_abs",
                                    "/static/link_dir_out/o.txt"])
def test_symlink_leaving_the_mount_is_404(srv, target):
    assert fetch(srv, target).status == 404


@pytest.fixture(scope="module")
def follow_srv(servers, tree):
    return servers.get("hello", "--static", mount(tree, "follow-symlinks"))


def test_follow_symlinks_serves_links_out_of_the_mount(follow_srv, tree):
    for target in ("/static/link_out", "/static/link_abs"):
        r = exchange(follow_srv.port, request_bytes("GET", target))
        assert r.status == 200 and r.body == SECRET + b"\n", target
    r = exchange(follow_srv.port, request_bytes("GET", "/static/link_dir_out/o.txt"))
    assert r.status == 200 and r.body == SECRET + b" outside\n"
    # follow-symlinks lifts the symlink rule only: '..' in the URL is still refused.
    r = exchange(follow_srv.port, request_bytes("GET", "/static/../secret.txt"))
    assert r.status in (400, 404) and SECRET not in r.body
    r = exchange(follow_srv.port, request_bytes("GET", "/static/.env"))
    assert r.status == 404 and DOT_SECRET not in r.body


def test_fifo_is_404_and_does_not_block_the_server(srv):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/static/fifo"))
        assert c.read_response().status == 404
        c.send(request_bytes("GET", "/static/hello.txt"))
        assert c.read_response().body == HELLO
    # Several at once, then another connection.
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/static/fifo") * 3 + request_bytes("HEAD", "/static/fifo"))
        for m in ("GET", "GET", "GET", "HEAD"):
            assert c.read_response(m).status == 404
    assert fetch(srv, "/static/hello.txt").body == HELLO
    assert app_answer(fetch(srv, "/after-fifo"), "/after-fifo")


@pytest.fixture(scope="module")
def noindex_srv(servers, tree):
    return servers.get("hello", "--static", mount(tree, "index=none"))


@pytest.mark.parametrize("target", ["/static/sub/", "/static/sub", "/static/", "/static"])
def test_index_none_gives_404_for_directories(noindex_srv, target):
    r = _follow_slash_redirect(noindex_srv, target)
    assert r.status == 404
    assert b"sub index" not in r.body


def test_index_none_still_serves_files(noindex_srv, tree):
    assert fetch(noindex_srv, "/static/sub/index.html").body == tree.files["sub/index.html"]


@pytest.fixture(scope="module")
def dotfiles_srv(servers, tree):
    return servers.get("hello", "--static", mount(tree, "dotfiles"))


def test_dotfiles_setting_serves_dotfiles_but_not_dot_segments(dotfiles_srv):
    r = exchange(dotfiles_srv.port, request_bytes("GET", "/static/.env"))
    assert r.status == 200 and r.body == DOT_SECRET + b" env\n"
    r = exchange(dotfiles_srv.port, request_bytes("GET", "/static/.git/config"))
    assert r.status == 200 and r.body == DOT_SECRET + b" git\n"
    for target in ("/static/../secret.txt", "/static/.%2e/secret.txt", "/static/./.env"):
        r = exchange(dotfiles_srv.port, request_bytes("GET", target))
        assert r.status in (400, 404) and SECRET not in r.body, target


# -- conditional requests ----------------------------------------------------------------------

def test_if_none_match_gives_304_with_etag_and_no_body(srv):
    etag = etag_of(srv, "/static/hello.txt")
    for value in (etag, f'"nope", {etag}', f'"a","b" , {etag}', "*", "W/" + etag):
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/static/hello.txt", headers=[("If-None-Match", value)])
                   + request_bytes("GET", "/static/hello.txt"))
            r = c.read_response()
            assert r.status == 304, value
            assert r.header("ETag") == etag
            assert r.header("Last-Modified") == LM_TEXT
            assert r.body == b""
            nxt = c.read_response()  # a 304 with body bytes would break this one
            assert nxt.status == 200 and nxt.body == HELLO
    r = fetch(srv, "/static/hello.txt", headers=[("If-None-Match", '"other"')])
    assert r.status == 200 and r.body == HELLO
    r = fetch(srv, "/static/hello.txt", method="HEAD", headers=[("If-None-Match", etag)])
    assert r.status == 304


def test_if_modified_since(srv):
    for date, status in ((LM_TEXT, 304), (LATER, 304), (EARLIER, 200)):
        r = fetch(srv, "/static/hello.txt", headers=[("If-Modified-Since", date)])
        assert r.status == status, date
        assert r.body == (HELLO if status == 200 else b"")
    # If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2).
    r = fetch(srv, "/static/hello.txt", headers=[("If-None-Match", '"other"'),
                                                 ("If-Modified-Since", LATER)])
    assert r.status == 200 and r.body == HELLO
    # An invalid date is ignored.
    r = fetch(srv, "/static/hello.txt", headers=[("If-Modified-Since", "yesterday")])
    assert r.status == 200


def test_if_match_and_if_unmodified_since(srv):
    etag = etag_of(srv, "/static/hello.txt")
    cases = [
        ([("If-Match", '"mismatch"')], 412),
        ([("If-Match", "*")], 200),
        ([("If-Match", etag)], 200),
        ([("If-Match", f'"x", {etag}')], 200),
        ([("If-Match", "W/" + etag)], 412),  # strong comparison
        ([("If-Unmodified-Since", EARLIER)], 412),
        ([("If-Unmodified-Since", LM_TEXT)], 200),
        ([("If-Unmodified-Since", LATER)], 200),
    ]
    for headers, status in cases:
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/static/hello.txt", headers=headers)
                   + request_bytes("GET", "/static/empty.txt"))
            r = c.read_response()
            assert r.status == status, headers
            if status == 200:
                assert r.body == HELLO
            else:
                assert HELLO not in r.body
            assert c.read_response().status == 200, "connection unusable after the answer"


def test_future_mtime_is_clamped_and_not_a_strong_validator(srv, tree):
    """A file dated in the future: Last-Modified is no later than Date (RFC 9110 §8.8.2.1),
    and since it then equals Date it is a weak validator: If-Range by that date sends the
    whole file (§13.1.5)."""
    name = f"future-{uuid.uuid4().hex}.txt"
    p = tree.pub / name
    p.write_bytes(HELLO)
    future = int(time.time()) + 3600
    os.utime(p, (future, future))
    try:
        r = fetch(srv, "/static/" + name)
        assert r.status == 200
        lm = email.utils.parsedate_to_datetime(r.header("Last-Modified")).timestamp()
        date = email.utils.parsedate_to_datetime(r.header("Date")).timestamp()
        assert lm <= date, (r.header("Last-Modified"), r.header("Date"))
        r = fetch(srv, "/static/" + name,
                  headers=[("Range", "bytes=0-4"), ("If-Range", r.header("Last-Modified"))])
        assert r.status == 200 and r.body == HELLO
    finally:
        p.unlink()


@needs_curl
def test_conditionals_with_curl(srv):
    etag = etag_of(srv, "/static/hello.txt")
    u = url(srv, "/static/hello.txt")
    r = curl("-H", f"If-None-Match: {etag}", u)
    assert r.status == 304 and r.body == b"" and r.headers["etag"] == etag
    r = curl("-z", LM_TEXT, u)  # If-Modified-Since
    assert r.status == 304 and r.body == b""
    r = curl("-z", EARLIER, u)
    assert r.status == 200 and r.body == HELLO
    r = curl("-z", "-" + EARLIER, u)  # If-Unmodified-Since
    assert r.status == 412
    r = curl("-H", 'If-Match: "nope"', u)
    assert r.status == 412
    r = curl("-H", "If-Match: *", u)
    assert r.status == 200 and r.body == HELLO


# -- Range -------------------------------------------------------------------------------------

def test_single_ranges(srv, tree):
    data = HELLO
    size = len(data)
    cases = [
        ("bytes=0-9", 0, 9),
        ("bytes=10-", 10, size - 1),
        ("bytes=-5", size - 5, size - 1),
        ("bytes=5-1000000", 5, size - 1),
        ("bytes=0-0", 0, 0),
        ("bytes=-1000", 0, size - 1),
        ("BYTES=3-4", 3, 4),
    ]
    for spec, first, last in cases:
        r = fetch(srv, "/static/hello.txt", headers=[("Range", spec)])
        assert r.status == 206, spec
        assert r.header("Content-Range") == f"bytes {first}-{last}/{size}", spec
        assert r.header("Content-Length") == str(last - first + 1)
        assert r.body == data[first:last + 1], spec


def test_range_in_the_5mb_file(srv, tree):
    r = fetch(srv, "/static/big.bin", headers=[("Range", "bytes=1000000-2999999")])
    assert r.status == 206
    assert r.header("Content-Range") == f"bytes 1000000-2999999/{BIG_SIZE}"
    assert r.body == tree.big[1000000:3000000]
    r = fetch(srv, "/static/big.bin", headers=[("Range", "bytes=-100000")])
    assert r.status == 206 and r.body == tree.big[-100000:]


def test_unsatisfiable_range_is_416_with_size(srv):
    for spec in ("bytes=999999-", f"bytes={len(HELLO)}-", "bytes=-0"):
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/static/hello.txt", headers=[("Range", spec)])
                   + request_bytes("GET", "/static/hello.txt"))
            r = c.read_response()
            assert r.status == 416, spec
            assert r.header("Content-Range") == f"bytes */{len(HELLO)}", spec
            assert HELLO not in r.body
            assert c.read_response().body == HELLO


@pytest.mark.parametrize("spec", ["bytes=0-1,3-4", "bytes=0-1, 5-9, 12-", "bytes=0-5,0-5",
                                  "bytes=" + ",".join(["0-0"] * 20)])
def test_several_ranges_get_the_whole_file(srv, spec):
    r = fetch(srv, "/static/hello.txt", headers=[("Range", spec)])
    assert r.status == 200 and r.body == HELLO
    assert r.header("Content-Range") is None


@pytest.mark.parametrize("spec", ["bytes=abc", "bytes=5-1", "items=0-1", "bytes 0-1",
                                  "bytes=--1", "bytes=1-2-3", "bytes=", "=0-1"])
def test_invalid_range_is_ignored(srv, spec):
    r = fetch(srv, "/static/hello.txt", headers=[("Range", spec)])
    assert r.status == 200 and r.body == HELLO, spec
    assert r.header("Content-Range") is None


def test_range_on_empty_file_is_ignored(srv):
    r = fetch(srv, "/static/empty.txt", headers=[("Range", "bytes=0-10")])
    assert r.status == 200 and r.body == b""


@needs_curl
def test_curl_range(srv, tree):
    r = curl("-r", "0-9", url(srv, "/static/hello.txt"))
    assert r.status == 206 and r.body == HELLO[:10]
    r = curl("-r", "-5", url(srv, "/static/hello.txt"))
    assert r.status == 206 and r.body == HELLO[-5:]
    r = curl("-r", "4000000-", url(srv, "/static/big.bin"))
    assert r.status == 206 and r.body == tree.big[4000000:]
    assert r.headers["content-range"] == f"bytes 4000000-{BIG_SIZE - 1}/{BIG_SIZE}"


def test_if_range(srv):
    etag = etag_of(srv, "/static/hello.txt")
    cases = [
        (etag, 206),
        ('"stale-etag"', 200),
        ("W/" + etag, 200),  # If-Range needs a strong match
        (LM_TEXT, 206),      # Last-Modified is years older than Date: a strong validator
        (EARLIER, 200),
        (LATER, 200),
    ]
    for value, status in cases:
        r = fetch(srv, "/static/hello.txt", headers=[("Range", "bytes=0-4"), ("If-Range", value)])
        assert r.status == status, value
        assert r.body == (HELLO[:5] if status == 206 else HELLO)


@needs_curl
def test_if_range_with_curl(srv):
    etag = etag_of(srv, "/static/hello.txt")
    r = curl("-r", "0-4", "-H", f"If-Range: {etag}", url(srv, "/static/hello.txt"))
    assert r.status == 206 and r.body == HELLO[:5]
    r = curl("-r", "0-4", "-H", 'If-Range: "old"', url(srv, "/static/hello.txt"))
    assert r.status == 200 and r.body == HELLO


# -- precompressed siblings --------------------------------------------------------------------

def test_precompressed_siblings(srv):
    cases = [
        ("br", COMP_BR, "br"),
        ("gzip", COMP_GZ, "gzip"),
        ("gzip, deflate, br", COMP_BR, "br"),
        ("br;q=0.5, gzip", COMP_GZ, "gzip"),
        ("identity", COMP_JS, None),
        (None, COMP_JS, None),
    ]
    etags = {}
    for accept, body, coding in cases:
        hdrs = [("Accept-Encoding", accept)] if accept is not None else None
        r = fetch(srv, "/static/comp.js", headers=hdrs)
        assert r.status == 200, accept
        assert r.body == body, accept
        assert r.header("Content-Encoding") == coding, accept
        assert r.header("Content-Type") == "text/javascript; charset=utf-8"
        assert r.header("Content-Length") == str(len(body))
        etags.setdefault(coding, set()).add(r.header("ETag"))
    assert all(len(v) == 1 for v in etags.values()), etags
    assert len({next(iter(v)) for v in etags.values()}) == 3, f"ETags must differ: {etags}"


@pytest.mark.parametrize("accept", ["br", "gzip", "identity", None])
def test_vary_accept_encoding_on_every_answer_for_a_file_with_siblings(srv, accept):
    """Whichever representation is chosen, the choice depended on Accept-Encoding, so a cache
    must key on it (RFC 9110 §12.5.5), including for a client that sent none."""
    hdrs = [("Accept-Encoding", accept)] if accept is not None else None
    r = fetch(srv, "/static/comp.js", headers=hdrs)
    assert r.status == 200
    assert r.has_token("Vary", "Accept-Encoding"), \
        f"Accept-Encoding {accept!r}: no Vary: Accept-Encoding ({r.headers})"


def test_no_vary_for_a_file_without_siblings(srv):
    r = fetch(srv, "/static/hello.txt", headers=[("Accept-Encoding", "br, gzip")])
    assert r.status == 200 and r.body == HELLO and r.header("Content-Encoding") is None


def test_accept_encoding_over_several_field_lines(srv):
    """Several Accept-Encoding lines are one list (RFC 9110 §5.3)."""
    r = fetch(srv, "/static/comp.js", headers=[("Accept-Encoding", "identity;q=0.5"),
                                               ("Accept-Encoding", "br")])
    assert r.header("Content-Encoding") == "br" and r.body == COMP_BR


def test_accept_encoding_star_covers_the_siblings(srv):
    """`*` matches any coding not listed (RFC 9110 §12.5.3; proto's choose_encoding): with br
    and gzip on disk, the smallest (br) is chosen, as for an explicit list."""
    r = fetch(srv, "/static/comp.js", headers=[("Accept-Encoding", "*")])
    assert r.header("Content-Encoding") == "br" and r.body == COMP_BR
    assert r.has_token("Vary", "Accept-Encoding")


def test_accept_encoding_exclusions(srv):
    for accept, body, coding in (("br;q=0, gzip;q=0", COMP_JS, None),
                                 ("br;q=0, gzip", COMP_GZ, "gzip"),
                                 ("x-gzip", COMP_GZ, "gzip"),
                                 ("BR", COMP_BR, "br"),
                                 ("deflate, compress", COMP_JS, None)):
        r = fetch(srv, "/static/comp.js", headers=[("Accept-Encoding", accept)])
        assert r.status == 200 and r.body == body, accept
        assert r.header("Content-Encoding") == coding, accept


def test_conditional_and_range_use_the_chosen_representation(srv):
    br_etag = etag_of(srv, "/static/comp.js", headers=[("Accept-Encoding", "br")])
    gz_etag = etag_of(srv, "/static/comp.js", headers=[("Accept-Encoding", "gzip")])
    r = fetch(srv, "/static/comp.js", headers=[("Accept-Encoding", "br"),
                                               ("If-None-Match", br_etag)])
    assert r.status == 304 and r.header("ETag") == br_etag
    r = fetch(srv, "/static/comp.js", headers=[("Accept-Encoding", "gzip"),
                                               ("If-None-Match", br_etag)])
    assert r.status == 200 and r.body == COMP_GZ and r.header("ETag") == gz_etag
    r = fetch(srv, "/static/comp.js", headers=[("Accept-Encoding", "br"), ("Range", "bytes=0-3")])
    assert r.status == 206 and r.body == COMP_BR[:4]
    assert r.header("Content-Range") == f"bytes 0-3/{len(COMP_BR)}"
    assert r.header("Content-Encoding") == "br"


def test_only_one_sibling_and_lonely_sibling(srv):
    r = fetch(srv, "/static/onlybr.css", headers=[("Accept-Encoding", "gzip")])
    assert r.status == 200 and r.body == b"body{}\n" and r.header("Content-Encoding") is None
    r = fetch(srv, "/static/onlybr.css", headers=[("Accept-Encoding", "gzip, br")])
    assert r.body == b"FAKE-BR-CSS" and r.header("Content-Encoding") == "br"
    # A .gz without its original serves nothing for the original's name.
    assert fetch(srv, "/static/lonely.txt", headers=[("Accept-Encoding", "gzip")]).status == 404


def test_sibling_symlinked_out_of_the_mount_is_not_served(srv):
    r = fetch(srv, "/static/leaky.txt", headers=[("Accept-Encoding", "gzip")])
    assert r.status == 200 and r.body == b"leaky identity\n"
    assert r.header("Content-Encoding") is None


# -- Cache-Control -----------------------------------------------------------------------------

@pytest.mark.parametrize("settings,expected", [
    ("max-age=60", "public, max-age=60"),
    ("immutable", "public, max-age=31536000, immutable"),
    ("max-age=60;immutable", "public, max-age=60, immutable"),
])
def test_cache_control_per_mount(servers, tree, settings, expected):
    s = servers.get("hello", "--static", mount(tree, settings))
    r = fetch(s, "/static/hello.txt")
    assert r.status == 200 and r.header("Cache-Control") == expected
    etag = r.header("ETag")
    r = fetch(s, "/static/hello.txt", headers=[("If-None-Match", etag)])
    assert r.status == 304 and r.header("Cache-Control") == expected
    # Not on the app's answers nor on 404s.
    assert fetch(s, "/elsewhere").header("Cache-Control") is None
    assert fetch(s, "/static/missing").header("Cache-Control") is None


def test_no_cache_control_by_default(srv):
    for target in ("/static/hello.txt", "/static/comp.js", "/static/sub/"):
        assert fetch(srv, target).header("Cache-Control") is None


# -- fallthrough, several mounts ---------------------------------------------------------------

@pytest.fixture(scope="module")
def fall_srv(servers, tree):
    return servers.get("hello", "--static", mount(tree), "--static-fallthrough")


@pytest.mark.parametrize("path", ["/static/missing.txt", "/static/nodex/", "/static/fifo",
                                  "/static/.env", "/static/link_out"])
def test_fallthrough_sends_unmatched_requests_to_the_app(fall_srv, srv, path):
    r = fetch(fall_srv, path)
    assert app_answer(r, path), f"{path}: {r.status} {r.body[:80]!r}"
    # Without the switch: 404.
    assert fetch(srv, path).status == 404


def test_fallthrough_still_serves_files_and_refusals_never_leak(fall_srv, tree):
    assert fetch(fall_srv, "/static/hello.txt").body == HELLO
    assert fetch(fall_srv, "/static/sub/").body == tree.files["sub/index.html"]
    r = raw_request(fall_srv, b"/static/%2e%2e/secret.txt")
    assert r.status in (400, 404) or r.body.startswith(b"path=")


def test_paths_outside_mounts_always_reach_the_app(fall_srv, srv):
    for s in (fall_srv, srv):
        for path in ("/", "/app", "/staticfile", "/other/static/hello.txt"):
            r = fetch(s, path)
            assert r.status == 200 and (r.body == b"Hello, World!" if path == "/"
                                        else app_answer(r, path)), path


@pytest.fixture(scope="module")
def multi_srv(servers, tree):
    # The shorter prefix first on the command line: the longest must still win.
    return servers.get("hello", "--static", mount(tree),
                       "--static", f"/static/sub={tree.other}",
                       "--static", f"/docs={tree.pub / 'sub'};index=page.txt")


def test_several_mounts_longest_prefix_wins(multi_srv, tree):
    r = fetch(multi_srv, "/static/sub/page.txt")
    assert r.status == 200 and r.body == b"from the other mount\n"
    # /static/sub is a mount of 'other', which has no index.html.
    assert fetch(multi_srv, "/static/sub/").status == 404
    assert fetch(multi_srv, "/static/hello.txt").body == HELLO
    # A sibling name sharing the prefix's characters stays on /static.
    assert fetch(multi_srv, "/static/subx").status == 404
    r = fetch(multi_srv, "/docs/")
    assert r.status == 200 and r.body == tree.files["sub/page.txt"]
    assert r.header("Content-Type") == "text/plain; charset=utf-8"
    assert fetch(multi_srv, "/docs/index.html").body == tree.files["sub/index.html"]
    assert fetch(multi_srv, "/docs/../hello.txt").status in (400, 404)
    assert app_answer(fetch(multi_srv, "/docsx"), "/docsx")


def test_static_from_environment_variable(start_server, tree):
    s = start_server("hello", env={"SLUICEGATE_STATIC":
                                   f"/e={tree.pub};max-age=5,/f={tree.other}"})
    r = fetch(s, "/e/hello.txt")
    assert r.body == HELLO and r.header("Cache-Control") == "public, max-age=5"
    assert fetch(s, "/f/page.txt").body == b"from the other mount\n"


SERVE_SCRIPT = """
import sys
import sluicegate

def app(environ, start_response):
    body = b"serve-app:" + environ["PATH_INFO"].encode("latin-1")
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]

sluicegate.serve(app, bind="127.0.0.1:0", static=[sys.argv[1]], static_fallthrough=True)
"""


def test_serve_keyword_static_and_fallthrough(start_server, tree, tmp_path):
    script = tmp_path / "serve_static.py"
    script.write_text(SERVE_SCRIPT)
    srv = start_server(None, command=[PYTHON, str(script), mount(tree, "max-age=7", prefix="/s")])
    port = srv.port
    r = exchange(port, request_bytes("GET", "/s/hello.txt"))
    assert r.status == 200 and r.body == HELLO
    assert r.header("Cache-Control") == "public, max-age=7"
    r = exchange(port, request_bytes("GET", "/s/missing.txt"))
    assert r.status == 200 and r.body == b"serve-app:/s/missing.txt"


# -- access log --------------------------------------------------------------------------------

LOG_LINE = re.compile(r'^(?P<h>\S+) (?P<l>\S+) (?P<u>\S+) \[(?P<t>[^\]]+)\] "(?P<r>[^"]*)" '
                      r'(?P<s>\d{3}) (?P<b>\d+|-) "(?P<f>[^"]*)" "(?P<a>[^"]*)"$')


def log_entry(path: Path, token: str):
    def find():
        try:
            lines = path.read_text().splitlines()
        except FileNotFoundError:
            return None
        hits = [line for line in lines if token in line]
        return hits[0] if hits else None
    line = wait_for(find, f"an access log line with {token}")
    m = LOG_LINE.match(line)
    assert m, f"not in the access log format: {line!r}"
    return m


def test_access_log_records_static_requests(srv, access_log):
    tok = uuid.uuid4().hex
    cases = [
        ("GET", f"/static/hello.txt?{tok}-a", None, 200, str(len(HELLO))),
        ("GET", f"/static/big.bin?{tok}-b", None, 200, str(BIG_SIZE)),
        ("GET", f"/static/hello.txt?{tok}-c", [("Range", "bytes=0-9")], 206, "10"),
        ("GET", f"/static/hello.txt?{tok}-e", [("If-Modified-Since", LM_TEXT)], 304, "-"),
        ("HEAD", f"/static/hello.txt?{tok}-f", None, 200, "-"),
        ("GET", f"/static/comp.js?{tok}-g", [("Accept-Encoding", "br")], 200, str(len(COMP_BR))),
    ]
    for method, target, headers, status, nbytes in cases:
        r = fetch(srv, target, method=method, headers=headers)
        assert r.status == status
        m = log_entry(access_log, target.split("?")[1])
        assert m["r"] == f"{method} {target} HTTP/1.1"
        assert m["s"] == str(status)
        assert m["b"] == nbytes, f"{method} {target}: logged {m['b']} bytes"
        assert m["h"] == "127.0.0.1"


def test_access_log_byte_count_of_static_error_answers(srv, access_log):
    """An app's 404 with a 10-byte body is logged with 10 bytes; the static path's own answers
    (404, 405, 416 have short text bodies) must be logged the same way."""
    tok = uuid.uuid4().hex
    for method, target, headers, status in (
            ("GET", f"/static/missing.txt?{tok}-m", None, 404),
            ("POST", f"/static/hello.txt?{tok}-p", None, 405),
            ("GET", f"/static/hello.txt?{tok}-r", [("Range", "bytes=999-")], 416)):
        r = fetch(srv, target, method=method, headers=headers)
        assert r.status == status and r.body
        m = log_entry(access_log, target.split("?")[1])
        assert m["s"] == str(status)
        assert m["b"] == str(len(r.body)), \
            f"{status}: sent a {len(r.body)}-byte body, logged {m['b']}"


# -- files changing on disk --------------------------------------------------------------------

def test_a_file_changed_on_disk_is_seen(srv, tree):
    name = f"mut-{uuid.uuid4().hex}.txt"
    p = tree.pub / name
    p.write_bytes(b"version one")
    os.utime(p, (MTIME, MTIME))
    target = "/static/" + name
    r1 = fetch(srv, target)
    assert r1.body == b"version one"
    e1 = r1.header("ETag")

    # In place, same size, later mtime (an editor saving).
    with open(p, "r+b") as f:
        f.write(b"version two")
    os.utime(p, (MTIME + 100, MTIME + 100))
    r2 = fetch(srv, target)
    assert r2.body == b"version two"
    e2 = r2.header("ETag")
    assert e2 != e1
    r = fetch(srv, target, headers=[("If-None-Match", e1)])
    assert r.status == 200 and r.body == b"version two"

    # Atomically replaced by a file of the same size and the very same mtime: a new inode.
    tmp = tree.pub / (name + ".tmp")
    tmp.write_bytes(b"version 3!!")
    st = os.stat(p)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, p)
    r3 = fetch(srv, target)
    assert r3.body == b"version 3!!"
    assert r3.header("ETag") not in (e1, e2)
    assert fetch(srv, target, headers=[("If-None-Match", e2)]).status == 200

    # Grown: the new length.
    p.write_bytes(b"a longer version four")
    r4 = fetch(srv, target)
    assert r4.body == b"a longer version four"
    assert r4.header("Content-Length") == str(len(b"a longer version four"))

    # Removed: 404.
    p.unlink()
    assert fetch(srv, target).status == 404


def test_a_sibling_added_after_the_file_was_served_is_seen(srv, tree):
    """The server remembers files without `.br`/`.gz` siblings while their directory is
    unchanged (and has not changed for 2 s, which the test waits for: there is no other way to
    reach that state). A sibling created later changes the directory, so it is served at once,
    even when its mtime is set back as `rsync -t` would (the change time cannot be)."""
    d = tree.pub / f"sib-{uuid.uuid4().hex}"
    d.mkdir()
    (d / "app.js").write_bytes(COMP_JS)
    before = os.stat(d)
    time.sleep(SIBLINGS_SETTLE_S)
    target = f"/static/{d.name}/app.js"
    gzip_ok = [("Accept-Encoding", "gzip")]
    for _ in range(3):
        r = fetch(srv, target, headers=gzip_ok)
        assert r.status == 200 and r.body == COMP_JS and r.header("Content-Encoding") is None
        assert not r.has_token("Vary", "Accept-Encoding")

    (d / "app.js.gz").write_bytes(COMP_GZ)
    os.utime(d, ns=(before.st_atime_ns, before.st_mtime_ns))
    r = fetch(srv, target, headers=gzip_ok)
    assert r.header("Content-Encoding") == "gzip" and r.body == COMP_GZ
    assert r.has_token("Vary", "Accept-Encoding")

    (d / "app.js.gz").unlink()
    r = fetch(srv, target, headers=gzip_ok)
    assert r.body == COMP_JS and r.header("Content-Encoding") is None


# -- memory, threads, slow readers -------------------------------------------------------------

@pytest.fixture(scope="module")
def huge(tmp_path_factory):
    d = tmp_path_factory.mktemp("huge")
    block = os.urandom(HUGE_PERIOD)
    h = hashlib.sha256()
    with open(d / "huge.bin", "wb") as f:
        left = HUGE_SIZE
        while left:
            piece = block[:min(left, HUGE_PERIOD)]
            f.write(piece)
            h.update(piece)
            left -= len(piece)
    (d / "small.txt").write_bytes(HELLO)
    return SimpleNamespace(dir=d, sha=h.hexdigest(), block=block)


@pytest.fixture(scope="module")
def huge_srv(servers, huge):
    return servers.get("hello", "--static", f"/big={huge.dir}")


def proc_status(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def rss_bytes(pid: int) -> int:
    return int(proc_status(pid)["VmRSS"].split()[0]) * 1024


def threads_of(pid: int) -> int:
    return int(proc_status(pid)["Threads"])


class Download(threading.Thread):
    """GET /big/huge.bin on a raw socket, hashing the body as it arrives. After `pause_after`
    body bytes it sets `paused` and waits for `go` (so the test knows every download is in
    flight, with its socket buffers full), then reads the rest."""

    def __init__(self, port, go: threading.Event, pause_after: int = 1 << 20):
        super().__init__(daemon=True)
        self.port, self.go, self.pause_after = port, go, pause_after
        self.paused = threading.Event()
        self.digest = None
        self.received = 0
        self.error = None

    def run(self):
        try:
            with Conn.open(self.port) as c:
                c.send(request_bytes("GET", "/big/huge.bin"))
                head = c.read_head()
                assert head.status == 200, head.status
                n = int(head.header("Content-Length"))
                assert n == HUGE_SIZE
                h = hashlib.sha256()
                if c.buf:
                    h.update(c.buf)
                    self.received = len(c.buf)
                buf = bytearray(1 << 20)
                view = memoryview(buf)
                deadline = time.monotonic() + 90
                while self.received < n:
                    if self.received >= self.pause_after and not self.paused.is_set():
                        self.paused.set()
                        if not self.go.wait(60):
                            raise WaitTimeout("never told to go on")
                    c.sock.settimeout(max(0.1, deadline - time.monotonic()))
                    k = c.sock.recv_into(view, min(len(buf), n - self.received))
                    if k == 0:
                        raise AssertionError(f"closed after {self.received} of {n} bytes")
                    h.update(view[:k])
                    self.received += k
                self.digest = h.hexdigest()
        except BaseException as e:  # reported by the test
            self.error = e
        finally:
            self.paused.set()


def test_concurrent_huge_downloads_keep_memory_flat_and_hold_no_thread(huge_srv, huge):
    pid = huge_srv.pid
    # Warm up both paths before the baseline.
    assert fetch(huge_srv, "/big/small.txt").body == HELLO
    assert app_answer(fetch(huge_srv, "/warm"), "/warm")
    base_rss = rss_bytes(pid)
    base_threads = threads_of(pid)

    go = threading.Event()
    clients = [Download(huge_srv.port, go) for _ in range(CLIENTS)]
    peak = {"rss": base_rss, "threads": base_threads}
    done = threading.Event()

    def sample():  # measurement, not synchronisation
        while not done.is_set():
            try:
                peak["rss"] = max(peak["rss"], rss_bytes(pid))
                peak["threads"] = max(peak["threads"], threads_of(pid))
            except (FileNotFoundError, ProcessLookupError):
                return
            done.wait(0.02)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        for cl in clients:
            cl.start()
        for cl in clients:
            assert cl.paused.wait(30), "a download did not start"
        errors = [cl.error for cl in clients if cl.error]
        assert not errors, errors[0]
        # Every download is in flight, its client not reading: the app and other files still
        # answer at once.
        assert app_answer(fetch(huge_srv, "/during-downloads"), "/during-downloads")
        assert fetch(huge_srv, "/big/small.txt").body == HELLO
        r = fetch(huge_srv, "/big/huge.bin", headers=[("Range", "bytes=5000000-5000099")])
        off = 5000000 % HUGE_PERIOD
        assert r.status == 206 and r.body == (huge.block * 2)[off:off + 100]
        stalled_threads = threads_of(pid)
        go.set()
        for cl in clients:
            cl.join(120)
            assert not cl.is_alive(), "a download did not finish"
    finally:
        go.set()
        done.set()
        sampler.join(5)
    errors = [cl.error for cl in clients if cl.error]
    assert not errors, errors[0]
    assert all(cl.digest == huge.sha for cl in clients), "a download was not byte-exact"
    growth = peak["rss"] - base_rss
    assert growth < RSS_GROWTH_LIMIT, \
        f"server RSS grew by {growth / 2**20:.1f} MiB for {CLIENTS} downloads of 256 MiB"
    assert stalled_threads - base_threads < CLIENTS // 2, \
        f"threads {base_threads} -> {stalled_threads} with {CLIENTS} downloads in flight"
    assert peak["threads"] - base_threads < CLIENTS // 2, peak


def test_file_truncated_during_a_download_ends_the_connection(huge_srv, huge):
    """The head promised Content-Length bytes: when the file shrinks under sendfile, the
    server closes the connection (the client sees a short body) instead of hanging or
    padding, and goes on serving."""
    name = f"shrink-{uuid.uuid4().hex}.bin"
    p = huge.dir / name
    size = 64 * 1024 * 1024
    with open(p, "wb") as f:
        for off in range(0, size, HUGE_PERIOD):
            f.write(huge.block[:min(HUGE_PERIOD, size - off)])
    try:
        with Conn.open(huge_srv.port) as c:
            c.send(request_bytes("GET", "/big/" + name))
            head = c.read_head()
            assert head.status == 200 and head.header("Content-Length") == str(size)
            c.recv_at_least(1 << 20)
            os.truncate(p, 2 * 1024 * 1024)
            got = len(c.buf)
            h = hashlib.sha256(c.buf)
            c.buf = b""
            while True:  # bounded by the socket timeout (Conn's TIMEOUT per recv)
                data = c.sock.recv(1 << 20)
                if not data:
                    break
                h.update(data)
                got += len(data)
                assert got <= size
            assert got < size, "the whole promised length arrived from a truncated file"
            expected = hashlib.sha256((huge.block * (got // HUGE_PERIOD + 1))[:got])
            assert h.hexdigest() == expected.hexdigest(), "bytes before the cut are wrong"
    finally:
        p.unlink()
    assert fetch(huge_srv, "/big/small.txt").body == HELLO
    assert app_answer(fetch(huge_srv, "/after-truncate"), "/after-truncate")


def test_slow_reader_does_not_stop_other_requests(huge_srv):
    with Conn.open(huge_srv.port) as slow:
        slow.send(request_bytes("GET", "/big/huge.bin"))
        head = slow.read_head()
        assert head.status == 200
        # The slow client reads nothing more: the server's socket buffer fills. Others go on.
        for i in range(5):
            assert fetch(huge_srv, "/big/small.txt").body == HELLO
            assert app_answer(fetch(huge_srv, f"/while-slow-{i}"), f"/while-slow-{i}")
        with Conn.open(huge_srv.port) as c:
            c.send(request_bytes("GET", "/big/huge.bin", headers=[("Range", "bytes=-1000")]))
            r = c.read_response()
            assert r.status == 206 and len(r.body) == 1000
        # Then the slow reader reads a little more: its download is still alive.
        slow.recv_at_least(len(slow.buf) + 100000)


def test_keep_alive_after_a_static_answer_uses_the_keepalive_timeout(servers, tree):
    # Regression: after a static answer the connection kept the write timeout as its idle
    # deadline, so an idle keep-alive connection was closed after --write-timeout.
    srv = servers.get("hello", "--static", mount(tree), "--write-timeout", "1",
                      "--header-timeout", "1", "--keepalive-timeout", "30")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/static/hello.txt"))
        assert c.read_response().body == HELLO
        # A control connection starts a 1 s header timeout after that answer. When its 408
        # arrives, the sweep has passed the moment the buggy write-timeout deadline (1 s after
        # the answer, so earlier) would have closed `c`: an observable event, not a sleep.
        with Conn.open(srv.port) as control:
            control.send(b"GET /static/hello.txt HTTP/1.1\r\nHost: h\r\n")
            assert control.read_response().status == 408
        c.send(request_bytes("GET", "/static/hello.txt"))
        assert c.read_response().body == HELLO

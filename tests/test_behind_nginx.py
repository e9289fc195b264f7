"""Behind a real nginx: `proxy_pass` over TCP and over a unix
socket, `uwsgi_pass` over a unix socket and over TCP, all four behind HTTPS. For each: what the
app sees (scheme, host, client address, a path with %2F and non-ASCII bytes, the query, a body
over 1 MB sent with Content-Length and chunked, `Expect: 100-continue`) and what the client
gets (a streamed response block by block, a file_wrapper file byte-exact, HEAD). Spoofed
forwarding headers from the client change nothing. And with HTTP/2 on (the default), nginx
speaking HTTP/2 to its clients and HTTP/1.1 over kept-alive connections to us.
"""

import hashlib
import http.client
import json
import shutil
import socket
import subprocess

import pytest

from tests import nginx_util
from tests.apps.proxied import file_bytes
from tests.http_util import wait_for
from tests.test_metrics import free_port, samples, scrape, scrape_ok

pytestmark = pytest.mark.skipif(not nginx_util.available(), reason="nginx or openssl missing")

CLIENT = "127.0.0.7"  # the client's own source address, distinct from nginx's 127.0.0.1


@pytest.fixture(scope="module")
def behind(tmp_path_factory, servers):
    d = tmp_path_factory.mktemp("sock")
    os_chmod = __import__("os").chmod
    os_chmod(d, 0o755)
    # nginx on this machine is trusted with the client's address (docs/deploying.md).
    trust = ("--forwarded-for-ips", "127.0.0.1,::1,unix")
    http_tcp = servers.get("proxied", *trust)
    http_unix = servers.get("proxied", *trust, "--bind", f"unix:{d}/http.sock;mode=666")
    uwsgi_unix = servers.get("proxied", *trust, "--bind", f"uwsgi:unix:{d}/uwsgi.sock;mode=666")
    uwsgi_tcp = servers.get("proxied", *trust, "--bind", "uwsgi:127.0.0.1:0")
    proxy = nginx_util.Nginx({
        "http-tcp": ("http", f"127.0.0.1:{http_tcp.port}"),
        "http-unix": ("http", f"unix:{d}/http.sock"),
        "uwsgi-unix": ("uwsgi", f"unix:{d}/uwsgi.sock"),
        "uwsgi-tcp": ("uwsgi", f"127.0.0.1:{uwsgi_tcp.addresses[1][1][1]}"),
    })
    yield proxy
    proxy.stop()


UPSTREAMS = ["http-tcp", "http-unix", "uwsgi-unix", "uwsgi-tcp"]


class Client(http.client.HTTPSConnection):
    """HTTPS to nginx from CLIENT's address."""

    def __init__(self, port):
        super().__init__("127.0.0.1", port, timeout=20, context=nginx_util.client_context(),
                         source_address=(CLIENT, 0))


def fetch(proxy, upstream, method="GET", path="/env", body=None, headers=None):
    c = Client(proxy.ports[upstream])
    c.request(method, path, body=body, headers={"Host": "shop.example", **(headers or {})})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data


@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_the_app_sees_the_client_the_scheme_and_the_exact_path(behind, upstream):
    r, data = fetch(behind, upstream, path="/a%2Fb/caf%C3%A9?q=1&x=%2F")
    assert r.status == 200, data
    env = json.loads(data)
    assert env["REMOTE_ADDR"] == CLIENT
    assert env["wsgi.url_scheme"] == "https"
    assert env["HTTP_HOST"] == "shop.example"
    assert env["PATH_INFO"] == "/a/b/caf\u00c3\u00a9", "decoded, bytes tunnelled as latin-1"
    assert env["QUERY_STRING"] == "q=1&x=%2F"
    assert env["REQUEST_URI"] == "/a%2Fb/caf%C3%A9?q=1&x=%2F"
    assert env["REQUEST_METHOD"] == "GET"


@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_a_spoofed_forwarding_header_changes_nothing(behind, upstream):
    r, data = fetch(behind, upstream, headers={"X-Forwarded-For": "6.6.6.6",
                                               "X-Forwarded-Proto": "http",
                                               "Forwarded": "for=6.6.6.6"})
    env = json.loads(data)
    assert env["REMOTE_ADDR"] == CLIENT
    assert env["wsgi.url_scheme"] == "https"


@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_large_bodies_with_length_chunked_and_expect_continue(behind, upstream):
    payload = bytes(range(256)) * 6000  # 1.5 MB
    want = f"{len(payload)} {hashlib.sha256(payload).hexdigest()}".encode()
    r, data = fetch(behind, upstream, "POST", "/body", body=payload)
    assert (r.status, data) == (200, want)
    # An iterable body: http.client sends it chunked.
    r, data = fetch(behind, upstream, "POST", "/body", body=iter([payload[:700000],
                                                                   payload[700000:]]))
    assert (r.status, data) == (200, want)
    r, data = fetch(behind, upstream, "POST", "/body", body=payload,
                    headers={"Expect": "100-continue"})
    assert (r.status, data) == (200, want)


@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_a_stream_arrives_block_by_block(behind, upstream, servers):
    token = upstream
    c = Client(behind.ports[upstream])
    c.request("GET", f"/stream?token={token}", headers={"Host": "shop.example"})
    r = c.getresponse()
    assert r.status == 200
    # The first block arrives while the app is still waiting to send the second.
    assert r.readline() == f"first {token}\n".encode()
    for srv in servers.servers.values():
        if srv.app and srv.app.startswith("tests.apps.proxied"):
            srv.open_gate("next-" + token)
    assert r.readline() == f"second {token}\n".encode()
    assert r.read() == b""
    c.close()


@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_a_file_and_head(behind, upstream):
    size = 3 * 1024 * 1024 + 17
    r, data = fetch(behind, upstream, path=f"/file?size={size}")
    assert r.status == 200 and data == file_bytes(size)
    r, data = fetch(behind, upstream, "HEAD", "/env")
    assert r.status == 200 and data == b""
    assert int(r.getheader("Content-Length")) > 0


def test_an_http11_upstream_with_keepalive_while_http2_is_on(start_server, tmp_path):
    """The usual deployment with HTTP/2 on (the default): browsers speak HTTP/2 to nginx, nginx
    speaks HTTP/1.1 to us over kept-alive connections. The requests of one client connection
    reach the app as HTTP/1.1 over a few upstream connections, one after another on each (a
    request after the first is never taken for an HTTP/2 preface), bodies included."""
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl missing")
    mport = free_port()
    srv = start_server("proxied", "--http2", "on", "--metrics-bind", f"127.0.0.1:{mport}")
    wait_for(lambda: scrape_ok(mport), "the metrics listener")
    proxy = nginx_util.Nginx({"h1": ("http", f"127.0.0.1:{srv.port}")}, client_http2=True)
    payload = bytes(range(256)) * 6000  # 1.5 MB
    (tmp_path / "payload.bin").write_bytes(payload)
    base = f"https://127.0.0.1:{proxy.ports['h1']}"
    n = 12
    one = ["-s", "-k", "--http2", "-H", "Host: shop.example", "-w", "\n%{http_version}\n"]
    args = []
    for i in range(n):
        args += ["--next"] * bool(args) + one + [f"{base}/env?i={i}"]
        if i % 4 == 3:
            args += ["--next"] + one + ["--data-binary", f"@{tmp_path / 'payload.bin'}",
                                        f"{base}/body"]
    try:
        out = subprocess.run([curl, *args], capture_output=True, text=True, timeout=60)
    finally:
        proxy.stop()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    answers, versions = lines[0::2][:-1], lines[1::2]
    assert versions == ["2"] * (n + n // 4)  # the client spoke HTTP/2 to nginx
    envs = [json.loads(a) for a in answers if a.startswith("{")]
    bodies = [a for a in answers if not a.startswith("{")]
    assert [e["QUERY_STRING"] for e in envs] == [f"i={i}" for i in range(n)]
    assert {e["SERVER_PROTOCOL"] for e in envs} == {"HTTP/1.1"}  # nginx to us
    assert {e["wsgi.url_scheme"] for e in envs} == {"https"}
    assert bodies == [f"{len(payload)} {hashlib.sha256(payload).hexdigest()}"] * (n // 4)
    accepted = samples(scrape(mport)[2])[("sluicegate_connections_accepted_total", ())]
    # Kept alive: far fewer upstream connections than requests.
    assert 1 <= accepted <= (n + n // 4) // 2, accepted

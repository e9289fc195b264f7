"""Real Flask and Django apps served by sluicegate, driven by http.client and
by curl: an HTML form POST, a multipart upload of ~1 MB (sha256 checked), JSON in and out, a
302 redirect (and following it), a cookie set then sent back, and a streamed response
(Flask stream_with_context / Django StreamingHttpResponse) compared byte for byte.

curl tests are skipped, saying so, when curl is not installed (./dev test installs it).
"""

import hashlib
import http.client
import json
import random
import shutil
import subprocess
import urllib.parse

import pytest

FRAMEWORKS = ["flask_app", "django_app"]
UPLOAD = random.Random(42).randbytes(1_000_003)
STREAM_N = 50


def expected_stream(n: int) -> bytes:
    return "".join(f"chunk {i} of {n}\n" for i in range(n)).encode()


@pytest.fixture(scope="module", params=FRAMEWORKS)
def app_server(request, servers):
    return servers.get(request.param)


def client(server) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)


def multipart(fields, files, boundary="----sgtestboundary7MA4YWxkTrZu0gW"):
    out = []
    for name, value in fields.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                   f'{value}\r\n'.encode())
    for name, (filename, data) in files.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                   f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                   .encode() + data + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


# -- http.client -----------------------------------------------------------------------------

def test_form_post(app_server):
    conn = client(app_server)
    body = urllib.parse.urlencode({"name": "Zoë", "note": "a&b=c", "empty": ""})
    conn.request("POST", "/form", body=body,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert json.loads(resp.read()) == {"name": "Zoë", "note": "a&b=c", "empty": ""}


def test_multipart_upload(app_server):
    body, ctype = multipart({"note": "one megabyte"}, {"file": ("data.bin", UPLOAD)})
    conn = client(app_server)
    conn.request("POST", "/upload", body=body, headers={"Content-Type": ctype})
    resp = conn.getresponse()
    assert resp.status == 200
    got = json.loads(resp.read())
    assert got == {"name": "data.bin", "size": len(UPLOAD),
                   "sha256": hashlib.sha256(UPLOAD).hexdigest(), "note": "one megabyte"}


def test_flask_multipart_upload_chunked(servers):
    """The same upload with Transfer-Encoding: chunked (no Content-Length): Werkzeug reads it
    because the server sets wsgi.input_terminated. (Django reads no body without
    CONTENT_LENGTH, a limitation of Django, so it is not tested this way.)"""
    body, ctype = multipart({"note": "chunked"}, {"file": ("c.bin", UPLOAD)})
    conn = client(servers.get("flask_app"))
    pieces = (body[i:i + 65536] for i in range(0, len(body), 65536))
    conn.request("POST", "/upload", body=pieces,
                 headers={"Content-Type": ctype, "Transfer-Encoding": "chunked"},
                 encode_chunked=True)
    resp = conn.getresponse()
    data = resp.read()
    assert resp.status == 200, data[:500]
    assert json.loads(data)["sha256"] == hashlib.sha256(UPLOAD).hexdigest()


def test_json_in_and_out(app_server):
    conn = client(app_server)
    payload = {"numbers": [1, 2, 3, 4.5], "text": "héllo ✓", "nested": {"a": [None, True]}}
    conn.request("POST", "/json", body=json.dumps(payload),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Type").startswith("application/json")
    assert json.loads(resp.read()) == {"received": payload, "sum": 10.5}


def test_redirect_and_following_it(app_server):
    conn = client(app_server)
    conn.request("GET", "/redirect")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 302
    location = resp.getheader("Location")
    assert urllib.parse.urlsplit(location).path == "/target"
    conn.request("GET", urllib.parse.urlsplit(location).path)  # same keep-alive connection
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read() == b"target reached"


def test_cookie_set_and_sent_back(app_server):
    conn = client(app_server)
    conn.request("GET", "/set-cookie")
    resp = conn.getresponse()
    resp.read()
    cookies = resp.headers.get_all("Set-Cookie")
    assert any(c.startswith("flavour=oatmeal") for c in cookies), cookies
    conn.request("GET", "/read-cookie", headers={"Cookie": "flavour=oatmeal; other=1"})
    assert conn.getresponse().read() == b"flavour=oatmeal"


def test_streaming_response_is_byte_exact(app_server):
    conn = client(app_server)
    conn.request("GET", f"/stream?n={STREAM_N}")
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Length") is None
    assert resp.getheader("Transfer-Encoding") == "chunked"
    assert resp.read() == expected_stream(STREAM_N)


# -- curl ------------------------------------------------------------------------------------

CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed (./dev test "
                                                     "installs it): curl tests skipped")


def curl(*args, input=None) -> subprocess.CompletedProcess:
    return subprocess.run([CURL, "--silent", "--show-error", "--max-time", "10", *args],
                          input=input, capture_output=True, timeout=20, check=True)


def url(server, path):
    return f"http://127.0.0.1:{server.port}{path}"


@needs_curl
def test_curl_form_post(app_server):
    out = curl("--data-urlencode", "name=Zoë", "--data-urlencode", "note=a&b", url(app_server, "/form"))
    assert json.loads(out.stdout) == {"name": "Zoë", "note": "a&b"}


@needs_curl
def test_curl_multipart_upload(app_server, tmp_path):
    f = tmp_path / "upload.bin"
    f.write_bytes(UPLOAD)
    # curl sends "Expect: 100-continue" for a body this large: the real-client path too.
    out = curl("-F", f"file=@{f}", "-F", "note=via curl", url(app_server, "/upload"))
    got = json.loads(out.stdout)
    assert got["sha256"] == hashlib.sha256(UPLOAD).hexdigest() and got["note"] == "via curl"


@needs_curl
def test_curl_json(app_server):
    out = curl("-H", "Content-Type: application/json", "--data-binary", "@-",
               url(app_server, "/json"), input=json.dumps({"numbers": [2, 3]}).encode())
    assert json.loads(out.stdout)["sum"] == 5


@needs_curl
def test_curl_redirect(app_server):
    out = curl("-i", url(app_server, "/redirect"))
    head = out.stdout.split(b"\r\n\r\n", 1)[0].decode()
    assert head.startswith("HTTP/1.1 302")
    assert "/target" in [line.split(":", 1)[1].strip() for line in head.split("\r\n")
                         if line.lower().startswith("location:")][0]
    followed = curl("-L", url(app_server, "/redirect"))
    assert followed.stdout == b"target reached"


@needs_curl
def test_curl_cookie_jar(app_server, tmp_path):
    jar = tmp_path / "jar.txt"
    curl("-c", str(jar), url(app_server, "/set-cookie"))
    out = curl("-b", str(jar), url(app_server, "/read-cookie"))
    assert out.stdout == b"flavour=oatmeal"


@needs_curl
def test_curl_streaming(app_server):
    out = curl(url(app_server, f"/stream?n={STREAM_N}"))
    assert out.stdout == expected_stream(STREAM_N)


@needs_curl
def test_curl_http10_streaming(app_server):
    out = curl("--http1.0", url(app_server, f"/stream?n={STREAM_N}"))
    assert out.stdout == expected_stream(STREAM_N)

"""The built-in demo app, served when `sluicegate` is started without MODULE:APP.

It shows at once that the server works and how to go on: `/` is a small page naming the request
it received and how to serve your own app; `/echo` sends back a POSTed body; anything else is a
404. Pure WSGI (PEP 3333), standard library only.
"""

from __future__ import annotations

import html

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterable, List, Sequence, Tuple

if TYPE_CHECKING:
    StartResponse = Callable[..., Any]

_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>sluicegate demo</title></head>
<body>
<h1>sluicegate is running</h1>
<p>This is sluicegate's built-in demo app. It received <code>{method} {path}</code>.</p>
<p>Try <code>curl -d 'hello' http://{host}{root}/echo</code>: it echoes a POSTed body.</p>
<h2>Serve your own app</h2>
<p>Give its module and WSGI callable, as <code>MODULE:APP</code>:</p>
<pre>sluicegate myproject.wsgi:application
sluicegate --bind 0.0.0.0:8000 --threads 4:64 'app:create_app()'</pre>
<p>See <code>sluicegate --help</code> for every option.</p>
</body>
</html>
"""


def app(environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    path = environ.get("PATH_INFO", "") or "/"
    if path == "/":
        return _index(environ, start_response)
    if path == "/echo":
        return _echo(environ, start_response)
    return _respond(start_response, "404 Not Found", b"not found\n", "text/plain; charset=utf-8")


def _index(environ: Dict[str, Any], start_response: StartResponse) -> List[bytes]:
    full_path = environ.get("SCRIPT_NAME", "") + (environ.get("PATH_INFO", "") or "/")
    if environ.get("QUERY_STRING"):
        full_path += "?" + environ["QUERY_STRING"]
    # PEP 3333: environ strings are latin-1 decodings of the raw bytes; show them as UTF-8.
    full_path = full_path.encode("latin-1", "replace").decode("utf-8", "replace")
    page = _PAGE.format(
        method=html.escape(environ.get("REQUEST_METHOD", "")),
        path=html.escape(full_path),
        host=html.escape(_host(environ)),
        root=html.escape(environ.get("SCRIPT_NAME", "")),
    )
    return _respond(start_response, "200 OK", page.encode("utf-8"), "text/html; charset=utf-8")


def _host(environ: Dict[str, Any]) -> str:
    if environ.get("HTTP_HOST"):
        return environ["HTTP_HOST"]
    name, port = environ.get("SERVER_NAME", "localhost"), environ.get("SERVER_PORT", "")
    return f"{name}:{port}" if port else name


def _echo(environ: Dict[str, Any], start_response: StartResponse) -> List[bytes]:
    if environ.get("REQUEST_METHOD") != "POST":
        return _respond(
            start_response, "405 Method Not Allowed", b"POST a body to /echo\n",
            "text/plain; charset=utf-8", [("Allow", "POST")],
        )
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH", "")
    if length.isdigit():
        body = stream.read(int(length))
    elif environ.get("wsgi.input_terminated"):  # chunked: the server ends the stream for us
        body = stream.read()
    else:
        body = b""
    content_type = environ.get("CONTENT_TYPE") or "application/octet-stream"
    return _respond(start_response, "200 OK", body, content_type)


def _respond(
    start_response: StartResponse,
    status: str,
    body: bytes,
    content_type: str,
    extra: Sequence[Tuple[str, str]] = (),
) -> List[bytes]:
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
    headers.extend(extra)
    start_response(status, headers)
    return [body]

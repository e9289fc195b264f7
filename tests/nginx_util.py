"""A real nginx (Debian's package) in front of servers under test, on loopback ports, with its
own configuration and a self-signed certificate, started and stopped by PID.

Each upstream gets its own HTTPS server block on a free port, so the app sees the same paths
whatever the upstream: `proxy_pass` over TCP or a unix socket (with the usual forwarding
headers), or `uwsgi_pass` over a unix socket or TCP with Debian's `uwsgi_params`. Buffering of
responses is off (`proxy_buffering off`, `uwsgi_buffering off`), as for any app that streams.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
from typing import Dict, Tuple

from tests.helpers import wait_accepting

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"
UWSGI_PARAMS = "/etc/nginx/uwsgi_params"
START_TIMEOUT = 10.0

#: What the proxy_pass blocks send, as in docs/deploying.md.
PROXY_HEADERS = """
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_buffering off;
"""


def available() -> bool:
    return os.path.exists(NGINX) and os.path.exists(OPENSSL) and os.path.exists(UWSGI_PARAMS)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Nginx:
    """`upstreams`: name -> (kind, target); kind is "http" (target "127.0.0.1:PORT" or
    "unix:/path"), "http10" (nginx's default `proxy_pass`: HTTP/1.0, a new upstream connection
    per request, no headers set) or "uwsgi" (same targets). `ports[name]` is the HTTPS port for it (plain HTTP
    with `tls=False`, as the S11 benchmark runs it). `client_http2`: the HTTPS ports speak
    HTTP/2 to clients too (ALPN h2), as a browser-facing nginx does; upstreams stay as they
    are (proxy_pass speaks HTTP/1.1). `user`: the user its workers run as (`www-data`, as
    Debian's nginx runs them), else root's own when root."""

    def __init__(self, upstreams: Dict[str, Tuple[str, str]], tls: bool = True,
                 client_http2: bool = False, user: str = ""):
        self.dir = tempfile.mkdtemp(prefix="sg-nginx-")
        os.chmod(self.dir, 0o755)
        cert, key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        if tls:
            subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                            "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                           check=True, capture_output=True)
        self.ports: Dict[str, int] = {}
        blocks = []
        for i, (name, (kind, target)) in enumerate(upstreams.items()):
            port = self.ports[name] = free_port()
            if kind == "http":
                # An upstream block, so that nginx keeps connections to the server open.
                blocks.append(f"""
    upstream app{i} {{
        server {target};
        keepalive 16;
    }}""")
                inner = f"proxy_pass http://app{i};{PROXY_HEADERS}"
            elif kind == "http10":
                inner = f"proxy_pass http://{target};"
            else:
                inner = (f"include {UWSGI_PARAMS};\n        uwsgi_pass {target};\n"
                         "        uwsgi_buffering off;")
            ssl_lines = (f"ssl_certificate {cert};\n        ssl_certificate_key {key};"
                         if tls else "")
            blocks.append(f"""
    server {{
        listen 127.0.0.1:{port}{" ssl" if tls else ""}{" http2" if tls and client_http2 else ""};
        {ssl_lines}
        location / {{
        {inner}
        }}
    }}""")
        # `user`: the user nginx's workers run as (needs root), as a packaged nginx's do.
        user = f"user {user};" if user else "user root;" if os.getuid() == 0 else ""
        temp = "\n".join(f"    {t}_temp_path {self.dir}/{t};"
                         for t in ("client_body", "proxy", "uwsgi", "fastcgi", "scgi"))
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""{user}
daemon off;
worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 1000000000;
    client_max_body_size 64m;
{temp}
{''.join(blocks)}
}}
""")
        self.proc = subprocess.Popen([NGINX, "-c", conf, "-p", self.dir],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        wait_accepting(self.ports.values(), "nginx to listen", START_TIMEOUT,
                       process=self.proc, context=self.error_log)

    def error_log(self) -> str:
        try:
            with open(os.path.join(self.dir, "error.log")) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)

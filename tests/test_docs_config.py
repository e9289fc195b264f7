"""The configuration blocks of docs/deploying.md and docs/operations.md work as pasted.

- Every ```nginx block of docs/deploying.md, as a site file included in `http { }` (what
  Debian's nginx.conf does with sites-enabled/), passes the real `nginx -t`; each sets
  `client_max_body_size`. The uwsgi block's Host fix is also run: behind that exact block, an
  app on a uwsgi: listener sees the Host with its port.
- Every systemd unit passes `systemd-analyze verify` (its ExecStart binary pointed at this
  work tree's `sluicegate`, the one thing that cannot exist here), speaks `Type=notify`, has an
  `[Install]` section, and its ExecStart's options and app path are valid for sluicegate.

nginx and systemd-analyze come from Debian's packages (./dev test installs nginx); each test
skips, saying why, when its tool is missing.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from tests import nginx_util
from tests.helpers import wait_accepting

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PYTHON_BIN = Path(os.environ.get("SLUICEGATE_TEST_PYTHON", str(ROOT / ".venv" / "bin" / "python"))).parent
SNAKEOIL = ("/etc/ssl/certs/ssl-cert-snakeoil.pem", "/etc/ssl/private/ssl-cert-snakeoil.key")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")

if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))


def blocks(doc: str, lang: str) -> List[str]:
    return re.findall(r"^```" + lang + r"\n(.*?)^```", (DOCS / doc).read_text(), re.M | re.S)


NGINX_BLOCKS = blocks("deploying.md", "nginx")
needs_nginx = pytest.mark.skipif(not nginx_util.available(), reason="nginx or openssl missing")


def nginx_dir(tmp_path: Path, site: str) -> Path:
    """A configuration directory in the shape of Debian's /etc/nginx: the main file includes
    the site file; uwsgi_params (Debian's own) and uwsgi_params_host (made by the command the
    docs give) beside it. Without Debian's snake-oil certificate, one of our own takes its
    paths."""
    d = tmp_path / "nginx"
    d.mkdir()
    shutil.copy(nginx_util.UWSGI_PARAMS, d / "uwsgi_params")
    made = [b for b in blocks("deploying.md", "sh") if "uwsgi_params_host" in b]
    assert made, "docs/deploying.md no longer says how uwsgi_params_host is made"
    subprocess.run(made[0].replace("/etc/nginx/", f"{d}/"), shell=True, check=True)
    if not all(os.path.exists(p) for p in SNAKEOIL):
        cert, key = d / "cert.pem", d / "key.pem"
        subprocess.run([nginx_util.OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key),
                        "-out", str(cert)], check=True, capture_output=True)
        site = site.replace(SNAKEOIL[0], str(cert)).replace(SNAKEOIL[1], str(key))
    (d / "site.conf").write_text(site)
    temp = "\n".join(f"    {t}_temp_path {d}/{t};"
                     for t in ("client_body", "proxy", "uwsgi", "fastcgi", "scgi"))
    (d / "nginx.conf").write_text(f"""{"user root;" if os.getuid() == 0 else ""}
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
{temp}
    include {d}/site.conf;
}}
""")
    return d


def test_deploying_md_has_the_nginx_blocks():
    assert len(NGINX_BLOCKS) >= 2
    for block in NGINX_BLOCKS:
        assert "client_max_body_size" in block
        if re.search(r"listen[^;]*\bssl\b", block):
            assert "ssl_certificate " in block and "ssl_certificate_key " in block


@needs_nginx
@pytest.mark.parametrize("index", range(len(NGINX_BLOCKS)))
def test_nginx_block_passes_nginx_t(tmp_path, index):
    d = nginx_dir(tmp_path, NGINX_BLOCKS[index])
    result = subprocess.run([nginx_util.NGINX, "-t", "-c", str(d / "nginx.conf"), "-p", str(d)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, f"nginx -t refused block {index}:\n{result.stderr}"
    assert "test is successful" in result.stderr


@needs_nginx
def test_uwsgi_block_passes_the_host_with_its_port(tmp_path, start_server):
    """Regression (docs): Debian's uwsgi_params sends `HTTP_HOST $host`, without the port, and
    a `uwsgi_param HTTP_HOST $http_host;` after it makes a second value; the documented block
    gives the app the Host as the client sent it."""
    block = next(b for b in NGINX_BLOCKS if "uwsgi_pass" in b)
    server = start_server("echo_environ", binds=["uwsgi:127.0.0.1:0"])
    port = nginx_util.free_port()
    site = re.sub(r"listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;", block)
    site = re.sub(r"uwsgi_pass [^;]+;", f"uwsgi_pass 127.0.0.1:{server.port};", site)
    d = nginx_dir(tmp_path, site)
    proc = subprocess.Popen([nginx_util.NGINX, "-c", str(d / "nginx.conf"), "-p", str(d)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        wait_accepting([port], "nginx to listen", nginx_util.START_TIMEOUT, process=proc)
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=20,
                                           context=nginx_util.client_context())
        conn.request("GET", "/", headers={"Host": f"shop.example:{port}"})
        response = conn.getresponse()
        environ = json.loads(response.read())
        conn.close()
    finally:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        proc.stderr.close()
    assert response.status == 200
    assert environ["HTTP_HOST"] == f"shop.example:{port}"


# --- systemd


def units() -> Dict[str, str]:
    """Every unit in the docs' ```ini blocks, by a name unique to its doc: a block holding
    several files names each in a `# /etc/systemd/system/NAME` comment."""
    out: Dict[str, str] = {}
    for doc in ("operations.md", "deploying.md"):
        for block in blocks(doc, "ini"):
            if "[Service]" not in block and "[Socket]" not in block:
                continue
            parts = re.split(r"^# /etc/systemd/system/(\S+).*\n", block, flags=re.M)
            assert parts[0].strip() == "", f"{doc}: a unit block must start with its file name"
            for name, text in zip(parts[1::2], parts[2::2]):
                out[f"{doc}:{name}"] = text
    return out


UNITS = units()


def test_the_docs_have_units():
    services = [u for u in UNITS if u.endswith(".service")]
    assert len(services) >= 2, sorted(UNITS)


@pytest.mark.parametrize("name", sorted(u for u in UNITS if u.endswith(".service")))
def test_service_unit_notifies_installs_and_has_a_valid_command(name):
    from sluicegate.loader import parse_spec
    from sluicegate.command_line import from_command_line
    from sluicegate.resolution import raw_values, validate

    text = UNITS[name]
    assert re.search(r"^Type=notify$", text, re.M), "the server speaks sd_notify: Type=notify"
    assert "[Install]" in text
    exec_start = re.search(r"^ExecStart=(.*)$", text, re.M).group(1)
    argv = shlex.split(exec_start)
    assert argv[0].endswith("/sluicegate")
    given = from_command_line(argv[1:])
    assert "app" in given, "ExecStart must name the app"
    assert ":" in given["app"].value, "the docs write the full MODULE:APP"
    parse_spec(given["app"].value)
    validate(raw_values(given, env={}))


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze missing")
@pytest.mark.parametrize("doc", ["operations.md", "deploying.md"])
def test_units_pass_systemd_analyze_verify(tmp_path, doc):
    sluicegate = PYTHON_BIN / "sluicegate"
    if not sluicegate.exists():
        pytest.skip(f"{sluicegate} missing: ./dev build installs it")
    names = []
    for key, text in UNITS.items():
        if key.startswith(doc + ":"):
            name = key.split(":", 1)[1]
            text = re.sub(r"^ExecStart=\S+", f"ExecStart={sluicegate}", text, flags=re.M)
            (tmp_path / name).write_text(text)
            names.append(name)
    assert names
    result = subprocess.run([SYSTEMD_ANALYZE, "verify", *(str(tmp_path / n) for n in names)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# --- sluicegate command lines


def commands() -> List[str]:
    """Every `sluicegate ...` line of the ```sh blocks of README.md and docs/*.md."""
    out = []
    for doc in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        fences = re.findall(r"^```(\w*)\n(.*?)^```", doc.read_text(), re.M | re.S)
        for lang, block in fences:
            if lang not in ("sh", "bash"):
                continue
            for line in block.replace("\\\n", " ").splitlines():
                if re.match(r"\s*(?:\S*/)?sluicegate\s", line):
                    out.append(f"{doc.name}: {line.strip()}")
    return out


COMMANDS = commands()


def test_the_docs_have_commands():
    assert len(COMMANDS) >= 8


@pytest.mark.parametrize("command", COMMANDS)
def test_command_in_docs_is_valid(command):
    """Its options validate and its app path parses (the app itself is the reader's)."""
    from sluicegate.loader import parse_spec
    from sluicegate.command_line import from_command_line
    from sluicegate.resolution import raw_values, validate

    argv = shlex.split(command.split(": ", 1)[1], comments=True)[1:]
    if argv[:1] == ["ctl"]:  # the control socket's client: its own command line
        from sluicegate import ctl
        ctl.parser().parse_args(argv[1:])
        return
    given = from_command_line(argv)
    validate(raw_values(given, env={}))
    if "app" in given:
        parse_spec(given["app"].value)

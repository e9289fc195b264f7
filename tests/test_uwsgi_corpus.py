"""Every uWSGI configuration of tests/corpus/uwsgi/ started with `sluicegate-uwsgi` (python -m
sluicegate.uwsgi_cli) and checked over real sockets. A file is a configuration by its name:
`.ini`, `.yaml`/`.yml`, `.json`, `.xml` (given as --ini, --yaml, --json, --xml), `.args` (a
command line, one shell line after `#` comments) and `.env` (UWSGI_* variables alone, one
KEY=VALUE a line); `{corpus}` is the corpus directory, and `$(SGTEST_DIR)` in the files a
directory of the test's own (unix sockets, logs).

What is checked for each is read from the configuration itself (its options through
uwsgi_options.py), so that each file gets the checks its options ask for:
  - every socket it names answers GET / with 200 from the app: a uwsgi socket (`socket`,
    `uwsgi-socket`) through a real nginx with `uwsgi_pass` (tests/nginx_util.py), HTTP ones
    (`http-socket`, `http`, `protocol = http`) directly, over TCP or a unix socket;
  - the processes it asks for (`master`, `processes`): that many workers under the master, or
    one process without;
  - the threads it asks for, where it also names a stats socket (`stats`): each worker's
    `cores` in uWSGI's stats JSON;
  - each static mount (`static-map`, `static-map2`, `check-static`) serves a file of its
    directory byte for byte, and a missing file goes on to the app, as in uWSGI;
  - its log file (`logto`) gets the start's lines, and the request lines go where the
    configuration sends them (logto's file, req-logger's, or standard output), unless
    `disable-logging` keeps them out;
  - several apps (`mount`): each mountpoint answers with its app;
  - hooks and side commands ran: each command of `hook-pre-app = exec:`, `exec-pre-app`,
    `attach-daemon` and `smart-attach-daemon` writes a file under `$(SGTEST_DIR)` (the
    corpus' rule), which must be there once the server serves; an attach-daemon command is
    stopped when the server stops, and a smart-attach-daemon one is left running, as uWSGI
    leaves it (the test ends it).
`test_what_each_configuration_checks` prints that list per file (pytest -s). A configuration
whose options need a sluicegate option this build lacks (built elsewhere, CONTRACT) is
skipped, naming it.
"""

from __future__ import annotations

import ast
import http.client
import json
import os
import re
import shlex
import signal
import socket
import ssl
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from sluicegate.allowed_values import ALLOWED
from sluicegate.errors import OptionError
from sluicegate.uwsgi_options import given_of, plan_of
from tests import nginx_util
from tests.conftest import PYTHON, ROOT, ServerProcess, UnixHTTPConnection
from tests.helpers import wait_for

uwsgi_config = pytest.importorskip("sluicegate.uwsgi_config")

CORPUS = ROOT / "tests" / "corpus" / "uwsgi"
#: The variables the corpus' PaaS-style configuration reads (env_and_files.ini).
PAAS = {"SGTEST_HOST": "127.0.0.1", "SGTEST_PORT": "0", "SGTEST_WORKERS": "3"}
#: Files whose configuration is in a section of another name (file:SECTION).
SECTIONS = {"multi.yml": "staging"}
FILE_FLAGS = {".ini": "--ini", ".yaml": "--yaml", ".yml": "--yaml", ".json": "--json",
              ".xml": "--xml"}


def configurations() -> List[Path]:
    return sorted(p for p in CORPUS.iterdir()
                  if p.suffix in (*FILE_FLAGS, ".args", ".env") and p.is_file())


def command_of(path: Path, sgdir: str) -> Tuple[List[str], Dict[str, str]]:
    """The configuration as a command line and the variables it adds."""
    text = path.read_text(encoding="utf-8").replace("{corpus}", str(CORPUS))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    env = {"SGTEST_DIR": sgdir, **PAAS}
    if path.suffix == ".args":
        return shlex.split(" ".join(lines)), env
    if path.suffix == ".env":
        env.update(dict(ln.partition("=")[::2] for ln in lines))
        return [], env
    section = f":{SECTIONS[path.name]}" if path.name in SECTIONS else ""
    return [FILE_FLAGS[path.suffix], str(path) + section], env


def plan(path: Path, sgdir: str):
    """(argv, env, the sluicegate options the configuration sets, and under `uwsgi:NAME` its
    SIDE_COMMANDS as given); skips a configuration needing an option this build lacks."""
    argv, env = command_of(path, sgdir)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("UWSGI_", "SLUICEGATE_"))}
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        pairs = uwsgi_config.resolve(argv, {**environ, **env})
        try:
            given = given_of(plan_of(pairs))
        except OptionError as e:
            if "this build lacks" in str(e):
                pytest.skip(str(e))
            raise
    finally:
        os.chdir(here)
    if given.get("access_log_format") and given["access_log_format"].value == "uwsgi" \
            and "uwsgi" not in ALLOWED["access_log_format"]:
        pytest.skip("needs --access-log-format uwsgi, which this build lacks")
    out: Dict[str, object] = {k: r.value for k, r in given.items()}
    for name in SIDE_COMMANDS:  # as the configuration gives them, whatever they became
        out[UWSGI + name] = [v for n, v in pairs if n == name]
    return argv, env, out


def checks_of(given: Dict[str, object]) -> List[str]:
    """What the test checks for a configuration, in words."""
    out = [f"{b}: GET / answers 200" + (" (through nginx uwsgi_pass)" if b.startswith("uwsgi:")
                                        else "") for b in given["bind"]]
    workers = given.get("workers")
    out.append(f"{workers} worker processes under a master" if workers else "one process")
    if given.get("stats") and workers and not str(given["stats"]).endswith(":0"):
        out.append(f"{given['threads']} cores per worker in the stats JSON")
    for mount in given.get("static", []):
        out.append(f"static {mount.split(';')[0]}: a file byte for byte; a missing one to the app")
    if given.get("error_log"):
        out.append(f"the log in {given['error_log']}")
    when = given.get("access_log_when", "all")
    if when != "none" and given.get("access_log"):
        out.append(f"request lines in {given['access_log']} (when: {when})")
    for mountpoint in mountpoints(given):
        out.append(f"mount {mountpoint}: its app answers")
    for name in SIDE_COMMANDS:
        out += [f"{name} {command!r}: its file written" for command in given[UWSGI + name]]
    if given.get(UWSGI + "attach-daemon"):
        out.append("attach-daemon commands stopped with the server")
    return out


#: The uWSGI options of hooks and side commands (each writes a file under $(SGTEST_DIR)).
SIDE_COMMANDS = ("hook-pre-app", "exec-pre-app", "attach-daemon", "smart-attach-daemon")
#: The prefix of the keys that hold a configuration's uWSGI options themselves (`plan`).
UWSGI = "uwsgi:"


def mountpoints(given: Dict[str, object]) -> List[str]:
    """The mountpoints of a configuration with `mount`s (uwsgi_mounts.py's app spec)."""
    app = str(given.get("app", ""))
    if not app.startswith("sluicegate.uwsgi_mounts:"):
        return []
    call = ast.parse(app.partition(":")[2], mode="eval").body
    assert isinstance(call, ast.Call)
    return [m for m in (ast.literal_eval(a).partition("=")[0] for a in call.args) if m]


def markers(command: str, sgdir: str) -> List[str]:
    """The files a corpus command writes: its paths under the test's directory."""
    return sorted(set(re.findall(re.escape(sgdir) + r"/[\w.\-]+", command)))


def side_processes(pid: int) -> List[int]:
    """The children of `pid` that are not the same program (side commands, not workers)."""
    exe = os.readlink(f"/proc/{pid}/exe")
    out = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == pid and os.readlink(f"/proc/{entry}/exe") != exe:
                out.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return out


def gone(pid: int) -> bool:
    """Not running (no such process, or a zombie left to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("path", configurations(), ids=lambda p: p.name)
def test_what_each_configuration_checks(path, tmp_path):
    _, _, given = plan(path, str(tmp_path))
    print(f"\n{path.name}:\n  " + "\n  ".join(checks_of(given)))
    assert checks_of(given)


def listening(server: ServerProcess, log_file) -> List[str]:
    lines = server.stderr_lines
    if log_file:
        try:
            lines = Path(log_file).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
    return [ln.split("Listening at: ", 1)[1].strip() for ln in lines if "Listening at: " in ln]


def get(url: str, path: str, proxy) -> Tuple[int, bytes]:
    """GET `path` on a listener by its `Listening at:` URL (uwsgi ones through nginx)."""
    if url.startswith("uwsgi"):
        conn = http.client.HTTPConnection("127.0.0.1", proxy.ports[url], timeout=10)
    elif url.startswith("unix:"):
        conn = UnixHTTPConnection(url[len("unix:"):])
    else:
        scheme, _, rest = url.partition("://")
        host, _, port = rest.rpartition(":")
        host = "127.0.0.1" if host in ("0.0.0.0", "[::]") else host.strip("[]")
        if scheme == "https":
            conn = http.client.HTTPSConnection(host, int(port), timeout=10,
                                               context=nginx_util.client_context())
        else:
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


def workers_of(pid: int) -> List[int]:
    """The children of `pid` running the same program (the workers, not side commands)."""
    exe = os.readlink(f"/proc/{pid}/exe")
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == pid and os.readlink(f"/proc/{entry}/exe") == exe:
                out.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return out


def stats_of(address: str) -> dict:
    if ":" in address and not address.startswith("/"):
        host, _, port = address.rpartition(":")
        s = socket.create_connection((host or "127.0.0.1", int(port)), timeout=10)
    else:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(address)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return json.loads(data[data.find(b"{"):])


@pytest.mark.skipif(not nginx_util.available(), reason="nginx or openssl missing")
@pytest.mark.parametrize("path", configurations(), ids=lambda p: p.name)
def test_the_configuration_serves_as_it_asks(path, tmp_path):
    os.chmod(tmp_path, 0o755)
    argv, env, given = plan(path, str(tmp_path))
    binds = list(given["bind"])
    log_file = given.get("error_log")
    server = ServerProcess(None, command=[PYTHON, "-m", "sluicegate.uwsgi_cli", *argv], env=env,
                           wait_ready=False)
    proxy = None
    try:
        def ready():
            urls = listening(server, log_file)
            return urls if len(urls) >= len(binds) or not server.alive() else None

        urls = wait_for(ready, "a Listening at: line per socket", context=server.log_text)
        assert server.alive(), server.log_text()
        uwsgi_urls = [u for u in urls if u.startswith("uwsgi")]
        if uwsgi_urls:
            proxy = nginx_util.Nginx({
                u: ("uwsgi", u[len("uwsgi:"):] if u.startswith("uwsgi:unix:")
                    else u[len("uwsgi://"):]) for u in uwsgi_urls}, tls=False)
        for url in urls:  # every socket the configuration names answers
            status, body = get(url, "/", proxy)
            assert status == 200, (url, body, server.log_text())
        workers = given.get("workers")
        want = int(str(workers)) if workers else 0
        wait_for(lambda: len(workers_of(server.pid)) == want or None,
                 f"{want} worker processes under {server.pid}")
        if given.get("stats") and workers and not str(given["stats"]).endswith(":0"):
            doc = stats_of(str(given["stats"]))
            assert len(doc["workers"]) == want
            threads = int(str(given["threads"]).split(":")[0])
            assert all(len(w["cores"]) == threads for w in doc["workers"]), doc["workers"]
        for mount in given.get("static", []):
            prefix, _, rest = str(mount).partition("=")
            directory = Path(rest.split(";")[0])
            sample = sorted(p for p in directory.rglob("*") if p.is_file()
                            and not any(part.startswith(".") for part in p.parts))[0]
            url_path = prefix.rstrip("/") + "/" + sample.relative_to(directory).as_posix()
            if "follow-symlinks" in rest:  # a mount of one file: served at the mount's path
                url_path = prefix
            assert get(urls[0], url_path, proxy) == (200, sample.read_bytes())
            status, body = get(urls[0], prefix.rstrip("/") + "/no-such-file.txt", proxy)
            assert (status, body) == (200, f"path={prefix.rstrip('/')}/no-such-file.txt"
                                      .encode()), "a missing file goes to the app"
        if log_file:
            assert "Listening at:" in Path(log_file).read_text(errors="replace")
        for mountpoint in mountpoints(given):
            assert get(urls[0], mountpoint.rstrip("/") + "/x", proxy)[0] == 200, mountpoint
        daemons = check_side_commands(given, str(tmp_path), server)
        access, when = given.get("access_log"), given.get("access_log_when", "all")
        if access and when == "all":
            get(urls[0], "/logged-request", proxy)
            if access == "-":
                server.wait_log("/logged-request", stream="stdout")
            else:
                wait_for(lambda: "/logged-request" in Path(str(access)).read_text(
                    errors="replace") or None, f"the request line in {access}")
        server.stop(signal.SIGINT)
        for pid in daemons["attach"]:
            wait_for(lambda: gone(pid), f"the attach-daemon command {pid} stopped with the server")
        if daemons["attach"]:  # the stop's own SIGTERM is no death to start again from
            text = Path(log_file).read_text() if log_file else server.log_text()
            assert "starting it again" not in text, text
        for pid in daemons["smart"]:
            assert not gone(pid), "a smart-attach-daemon command is left running, as in uWSGI"
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop(signal.SIGINT)
        for command in given[UWSGI + "smart-attach-daemon"]:  # left running, as in uWSGI
            pidfile = Path(markers(str(command), str(tmp_path))[0])
            try:
                os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass


def check_side_commands(given: Dict[str, object], sgdir: str, server: ServerProcess
                        ) -> Dict[str, List[int]]:
    """Every hook and side command wrote its files; the pids of the running commands:
    "attach" (the server's children that are not workers) and "smart" (their pid files')."""
    for name in SIDE_COMMANDS:
        for command in given[UWSGI + name]:
            for path in markers(str(command), sgdir):
                wait_for(lambda: os.path.exists(path) or None, f"{path}, from {command!r}",
                         context=server.log_text)
    smart = [int(Path(markers(str(c), sgdir)[0]).read_text().split()[0])
             for c in given[UWSGI + "smart-attach-daemon"]]
    def running(command: str) -> List[int]:
        return [p for p in side_processes(server.pid) if command in command_line(p)]

    attach = [wait_for(lambda: running(str(c)) or None, f"{c!r} running")[0]
              for c in given[UWSGI + "attach-daemon"]]
    return {"attach": attach, "smart": smart}


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""

"""uWSGI's runtime with real servers: the `uwsgi` module apps import (`--uwsgi-module`,
uwsgi_module.py, uwsgi_decorators.py) and uWSGI's stats server (`--stats`, uwsgi_stats.py),
read over its real socket kinds; the document's keys compared with real uWSGI's for the same
configuration, and `uwsgitop` (PyPI) reading sluicegate's stats socket in a real terminal.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import pytest

from sluicegate import uwsgi_module
from tests.conftest import PYTHON, ROOT
from tests.helpers import wait_for

UWSGI = shutil.which("uwsgi", path=os.path.dirname(PYTHON)) or shutil.which("uwsgi")
UWSGITOP = shutil.which("uwsgitop", path=os.path.dirname(PYTHON)) or shutil.which("uwsgitop")
OPTIONS = [["master", "true"], ["processes", "2"], ["socket", "/run/a.sock"],
           ["socket", "/run/b.sock"], ["enable-threads", ""]]


def get_json(port, path="/"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status == 200, body
    return json.loads(body) if path == "/" else body.decode()


def read_stats(address, http_request=False):
    """The whole document a stats socket writes before it closes."""
    if address.startswith("@"):
        s = socket.socket(socket.AF_UNIX)
        s.connect("\0" + address[1:])
    elif address.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.connect(address)
    else:
        host, _, port = address.rpartition(":")
        s = socket.create_connection((host, int(port)))
    s.settimeout(30)
    if http_request:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    if http_request:
        head, _, data = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200 OK") and b"application/json" in head, head
    return json.loads(data)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_import_uwsgi_fails_without_the_option(start_server):
    """As under uWSGI, `uwsgi` exists inside the server only: without --uwsgi-module an app
    that imports it does not load."""
    srv = start_server("uwsgi_api", wait_ready=False)
    assert srv.wait_exit() != 0
    assert "No module named 'uwsgi'" in srv.log_text()


def test_the_uwsgi_module_in_workers(start_server):
    """Each worker knows its number (1-based), the worker count, its master; `opt` holds the
    options the entry point resolved (bytes, a list for a repeated key, as uWSGI); @postfork
    ran once in the worker before its first request; an unsupported call names its feature."""
    srv = start_server("uwsgi_api", "--workers", "2", "--uwsgi-module",
                       env={uwsgi_module.OPTIONS_ENV: json.dumps(OPTIONS)})
    seen = get_json(srv.port)
    assert seen["worker_id"] in (1, 2) and seen["numproc"] == 2
    assert seen["masterpid"] == srv.pid != seen["pid"]
    assert seen["postfork"] == [seen["worker_id"]]
    assert seen["opt"] == {"master": "true", "processes": "2",
                           "socket": ["/run/a.sock", "/run/b.sock"], "enable-threads": ""}
    assert seen["version"] == uwsgi_module.UWSGI_VERSION and seen["hostname"]
    text = get_json(srv.port, "/cache")
    assert text.startswith("UwsgiUnsupported: uwsgi.cache_get(): the caching framework")


def test_uwsgi_reload_reloads_the_workers_gracefully(start_server):
    """uwsgi.reload() is a HUP to the master: new workers replace the old ones."""
    srv = start_server("uwsgi_api", "--workers", "1", "--uwsgi-module")
    before = get_json(srv.port)["pid"]
    mark = srv.log_mark()
    assert get_json(srv.port, "/reload") == "true"
    srv.wait_log(r"starting 1 new worker", since=mark)
    wait_for(lambda: get_json(srv.port)["pid"] != before, "a new worker answering")
    assert srv.alive()


def test_a_worker_recycled_by_max_requests_keeps_its_id(start_server):
    """uWSGI's worker ids are 1..N and a replacement keeps its predecessor's, in
    `uwsgi.worker_id()` and in the stats document's `id` (whose `respawn_count` counts that
    id's starts). Failed before: both gave the worker's slot in the connection-count table, and
    a replacement, booting while its predecessor still drained, took the next slot: worker 2 of
    a server with one worker."""
    stats = f"127.0.0.1:{free_port()}"
    srv = start_server("uwsgi_api", "--workers", "1", "--uwsgi-module", "--max-requests", "4",
                       "--stats", stats)
    first = get_json(srv.port)
    assert first["worker_id"] == 1
    for _ in range(3):  # up to its fourth request: the master starts its replacement
        get_json(srv.port)
    wait_for(lambda: get_json(srv.port)["pid"] != first["pid"], "the replacement answering")
    seen = get_json(srv.port)
    assert seen["worker_id"] == 1 and seen["postfork"] == [1]

    def only_the_replacement():
        workers = read_stats(stats)["workers"]
        return workers if [w["pid"] for w in workers] == [seen["pid"]] else None

    workers = wait_for(only_the_replacement, "the stats listing the replacement alone")
    assert workers[0]["id"] == 1 and workers[0]["respawn_count"] == 2


def test_request_counts_are_the_workers_own(start_server):
    """uwsgi.request_id() and total_requests() (counted by the core, `_core.app_calls`): the
    worker's requests so far, this one included; a replacement counts its own from 1."""
    srv = start_server("uwsgi_api", "--workers", "1", "--uwsgi-module", "--max-requests", "3")
    seen = [get_json(srv.port) for _ in range(3)]
    first = seen[0]["requests"][0]
    assert [s["requests"] for s in seen] == [[first + i, first + i] for i in range(3)]
    replaced = wait_for(lambda: (lambda s: s if s["pid"] != seen[0]["pid"] else None)(
        get_json(srv.port)), "the replacement answering")
    assert replaced["requests"] == [1, 1]


def test_the_uwsgi_module_without_a_master(start_server):
    """One process, no master: worker 1, masterpid() 0 (uWSGI's values without `master`)."""
    srv = start_server("uwsgi_api", "--uwsgi-module")
    seen = get_json(srv.port)
    assert (seen["worker_id"], seen["numproc"], seen["masterpid"]) == (1, 1, 0)
    assert seen["postfork"] == [1] and seen["opt"] == {}


def test_set_options_reaches_the_module_and_the_environment(monkeypatch):
    monkeypatch.delenv(uwsgi_module.OPTIONS_ENV, raising=False)
    uwsgi_module.set_options([("module", "app:app"), ("env", "A=1"), ("env", "B=2")])
    assert json.loads(os.environ[uwsgi_module.OPTIONS_ENV])[0] == ["module", "app:app"]
    assert uwsgi_module.options_dict([("module", "app:app"), ("env", "A=1"), ("env", "B=2"),
                                      ("master", None)]) == {
        "module": b"app:app", "env": [b"A=1", b"B=2"], "master": True}



def test_uwsgi_opt_from_the_kept_pairs_is_the_one_the_environment_text_gives(monkeypatch):
    """A process that published the options reads `uwsgi.opt` from the pairs it kept (no
    json: the text comes from the resolving process, uwsgi_module.options_text); the result
    must be what decoding the environment's JSON gives, as before, and a text this process did
    not write is decoded."""
    pairs = [("module", "app:app"), ("env", "A=1"), ("env", "B=\udcff"), ("master", None),
             ("é", "ü")]
    monkeypatch.delenv(uwsgi_module.OPTIONS_ENV, raising=False)
    uwsgi_module.set_options(pairs, uwsgi_module.options_text(pairs))
    assert os.environ[uwsgi_module.OPTIONS_ENV] == json.dumps([[n, v] for n, v in pairs])
    kept = uwsgi_module._options_from_env()
    monkeypatch.setattr(uwsgi_module, "_published", [])
    assert kept == uwsgi_module._options_from_env() == uwsgi_module.options_dict(pairs)
    uwsgi_module.set_options(pairs)  # kept again, the text made here
    monkeypatch.setenv(uwsgi_module.OPTIONS_ENV, json.dumps([["harakiri", "9"]]))
    assert uwsgi_module._options_from_env() == {"harakiri": b"9"}

@pytest.mark.parametrize("kind", ["tcp", "unix", "abstract", "http"])
def test_stats_document_with_real_figures(start_server, kind):
    """The document on each kind of stats socket: both workers with their pids, the requests
    each served (summing to those sent), bytes sent, their status and memory."""
    where = {"tcp": f"127.0.0.1:{free_port()}", "http": f"127.0.0.1:{free_port()}",
             "unix": os.path.join(tempfile.mkdtemp(prefix="sgstats-"), "stats.sock"),
             "abstract": f"@sgstats-{os.getpid()}"}[kind]
    extra = ["--stats-http"] if kind == "http" else []
    srv = start_server("hello", "--workers", "2", "--stats", where, *extra)
    for _ in range(5):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        c.request("GET", "/")
        c.getresponse().read()
        c.close()
    doc = read_stats(where, http_request=kind == "http")
    assert doc["version"] == "2.0.31" and doc["pid"] == srv.pid and doc["cwd"] == str(ROOT)
    assert doc["sockets"][0]["name"] == f"127.0.0.1:{srv.port}"
    workers = doc["workers"]
    assert [w["id"] for w in workers] == [1, 2]
    assert all(w["pid"] > 0 and w["pid"] != srv.pid for w in workers)
    assert sum(w["requests"] for w in workers) == 5
    assert sum(w["tx"] for w in workers) > 0 and all(w["rss"] > 0 for w in workers)
    assert all(w["status"] == "idle" and w["accepting"] == 1 and w["respawn_count"] == 1
               for w in workers)
    busiest = max(workers, key=lambda w: w["requests"])
    assert busiest["delta_requests"] == busiest["requests"] and busiest["avg_rt"] > 0
    again = read_stats(where, http_request=kind == "http")
    assert all(w["delta_requests"] == 0 for w in again["workers"])


def key_tree(value):
    """The keys of a JSON value, recursively: a dict's keys each with its value's tree, a
    list's items merged."""
    if isinstance(value, dict):
        return {k: key_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        merged = {}
        for item in value:
            tree = key_tree(item)
            if isinstance(tree, dict):
                merged.update(tree)
        return [merged] if merged else []
    return None


def key_diff(ours, theirs, at=""):
    """Paths present in one tree and not the other."""
    out = []
    if isinstance(ours, list) and isinstance(theirs, list):
        ours, theirs = (ours or [{}])[0], (theirs or [{}])[0]
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for k in sorted(set(ours) | set(theirs)):
            if k not in ours:
                out.append(f"missing {at}{k}")
            elif k not in theirs:
                out.append(f"extra {at}{k}")
            else:
                out += key_diff(ours[k], theirs[k], f"{at}{k}.")
    return out


@pytest.mark.skipif(UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)")
def test_stats_keys_are_real_uwsgis(start_server):
    """The same configuration (master, 2 processes, an HTTP socket, a stats socket) run by real
    uWSGI and by sluicegate: the documents have the same keys at every level (but the names
    of uWSGI's own locks), and the same types for each."""
    tmp = tempfile.mkdtemp(prefix="sgstats-")
    theirs_at = os.path.join(tmp, "uwsgi-stats.sock")
    port = free_port()
    uwsgi = subprocess.Popen(
        [UWSGI, "--master", "--processes", "2", "--http-socket", f"127.0.0.1:{port}",
         "--stats", theirs_at, "--module", "tests.apps.hello:app", "--chdir", str(ROOT)],
        cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        wait_for(lambda: os.path.exists(theirs_at), "uWSGI's stats socket")

        def uwsgi_stats():
            try:  # the socket's file exists from its bind, before uWSGI listens on it
                doc = read_stats(theirs_at)
            except ConnectionRefusedError:
                return None
            return doc if all(w["pid"] for w in doc["workers"]) else None
        theirs = wait_for(uwsgi_stats, "uWSGI's workers")
    finally:
        os.killpg(uwsgi.pid, signal.SIGKILL)  # its master and workers: nothing to finish
        uwsgi.wait(30)
    ours_at = os.path.join(tmp, "sg-stats.sock")
    start_server("hello", "--workers", "2", "--stats", ours_at)
    ours = read_stats(ours_at)
    # uWSGI lists its own locks (`user 0`, `signal`, `timer`...: the holder's pid, 0 when
    # free); sluicegate has none of them, and says so with an empty list.
    assert ours["locks"] == [] and theirs["locks"]
    assert [d for d in key_diff(key_tree(ours), key_tree(theirs))
            if not d.startswith("missing locks.")] == []
    for k, v in theirs.items():
        assert type(ours[k]) is type(v), k
    for k, v in theirs["workers"][0].items():
        assert type(ours["workers"][0][k]) is type(v), k


@pytest.mark.skipif(shutil.which("tmux") is None or UWSGITOP is None,
                    reason="tmux or uwsgitop is not installed")
def test_uwsgitop_reads_sluicegates_stats(start_server):
    """uwsgitop, unchanged, in a real terminal on sluicegate's stats socket: its header and one
    line per worker with the worker's pid and requests."""
    where = os.path.join(tempfile.mkdtemp(prefix="sgstats-"), "stats.sock")
    srv = start_server("hello", "--workers", "2", "--stats", where)
    for _ in range(3):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        c.request("GET", "/")
        c.getresponse().read()
        c.close()
    pids = [str(w["pid"]) for w in read_stats(where)["workers"]]
    session = f"sguwsgitop{os.getpid()}"
    tmux = ["tmux", "-L", session]
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "120", "-y", "30", "sh"],
                   check=True, env={**os.environ, "TERM": "xterm"})
    try:
        subprocess.run([*tmux, "send-keys", "-t", session, f"{UWSGITOP} {where}", "Enter"],
                       check=True)

        def screen():
            return subprocess.run([*tmux, "capture-pane", "-p", "-t", session],
                                  capture_output=True, text=True).stdout

        shown = wait_for(lambda: (lambda s: all(p in s for p in pids) and s)(screen()),
                         "uwsgitop showing both worker pids", 30, context=screen)
        sys.stdout.write(shown)  # the terminal as a person sees it (pytest -s shows it)
        assert "uwsgi-2.0.31" in shown and f"pid: {srv.pid}" in shown
        assert "WID" in shown and "PID" in shown and "REQ" in shown
        subprocess.run([*tmux, "send-keys", "-t", session, "q"], check=True)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)

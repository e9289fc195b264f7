"""What the server's Python front imports in every process: modules needed only by some
options are imported when those options are used. A master imports them before it forks its
workers, so each module imported for nothing was paid once per process (http.client and
http.server, for `--metrics-bind` only, brought email, ssl, socketserver and more: about 5 MB
of every process's resident memory). The same for `sluicegate-uwsgi` with the configuration
benchmark S19 runs (benchmarks/bench/s19.py): its workers carry nothing its options do not
need, and nothing of sluicegate's own command line either. A master never loads the Rust
extension: its workers do, after the fork (master.py)."""

import http.client
import re

from tests.conftest import PYTHON, ROOT
from tests.helpers import free_ports


def loaded(port, path="/"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path)
        r = c.getresponse()
        assert r.status == 200
        return r.read().decode().split()
    finally:
        c.close()


def test_a_worker_carries_no_module_its_options_do_not_need(start_server):
    """Failed before: the master imported http.client and http.server (metrics_total.py),
    logging.config, tempfile and mimetypes at its start, and every worker inherited them.
    Failed too, later: gunicorn's hooks' runner and objects (hooks.py, hook_objects.py),
    preflight.py and statsd.py were in every process, with no hooks, no --warmup, no Django and
    no --statsd-host. Failed too, later: struct (the control socket's peer check), fcntl
    (USR2) and resource (`uwsgi.mem()`) were imported at the start."""
    srv = start_server("loaded_modules", "--workers", "1")
    assert loaded(srv.port) == []


def test_a_master_does_not_load_the_extension(start_server):
    """Failed before: the package's __init__ imported `_core` (for RequestTimeout and the
    version), so every master mapped the extension and each worker inherited its pages: about
    1.1 MiB over a master and two workers (benchmarks/results/2026-11-27-rss3-master). Its
    workers load it, and serve."""
    srv = start_server("loaded_modules", "--workers", "1")
    assert loaded(srv.port, "/master") == []


def test_the_version_written_in_the_package_is_the_extensions():
    """The package's `__version__` is written out (a master has no extension to ask): it must
    stay the one Cargo.toml, pyproject.toml and the built extension carry."""
    import sluicegate
    from sluicegate import _core

    assert sluicegate.__version__ == _core.__version__
    for name in ("Cargo.toml", "pyproject.toml"):
        text = (ROOT / name).read_text()
        assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == sluicegate.__version__


def test_request_timeout_is_the_extensions_class():
    """`sluicegate.RequestTimeout`, looked up at its first use, is the class the core raises."""
    import sluicegate
    from sluicegate import _core

    assert sluicegate.RequestTimeout is _core.RequestTimeout
    assert "RequestTimeout" in sluicegate.__all__


def test_the_metrics_listener_still_imports_what_it_needs(start_server):
    """--metrics-bind serves with the standard library's HTTP server: imported then."""
    mport = free_ports(2)  # the master's port and the worker's (one further)
    srv = start_server("loaded_modules", "--workers", "1", "--metrics-bind", f"127.0.0.1:{mport}")
    assert "http.server" in loaded(srv.port)


def test_a_uwsgi_worker_carries_no_module_its_options_do_not_need(start_server, tmp_path):
    """S19's uwsgi.ini (master, two processes, a unix socket with chmod-socket and vacuum,
    static-map, no request log), over HTTP here. Failed before: every process of
    sluicegate-uwsgi had ctypes (prctl), subprocess (side commands), logging.handlers with
    pickle and queue (syslog), xml.dom.minidom (XML configurations), argparse and difflib
    (sluicegate's command line), glob, random, urllib.parse, sysconfig and pathlib, and the
    readers of uWSGI's configurations (resolved in the master): together about 12 MB of
    resident memory over a master and two workers. Failed too, later: dataclasses (with
    inspect, ast and dis), typing, gunicorn's settings table and the options' docs were in
    every process (about 5.5 MB over the three: benchmarks/results/2026-11-27-rss). Failed
    too, later: the options table, its parsers and the validation were in every process (the
    master validated the resolved options itself: benchmarks/results/2026-11-27-rss2). Failed
    too, later: hooks.py, hook_objects.py, preflight.py and statsd.py were in every process
    (benchmarks/results/2026-11-27-rss3-workers). Failed too, later: json (imported by the
    control protocol at its import, and by the master for `uwsgi.opt`'s environment text) and
    side_commands.py (with no side command) were in every process, and struct, fcntl and
    resource, each for a message, a signal or a call this start has not (benchmarks/results/
    2026-11-27-rssp)."""
    (tmp_path / "static").mkdir()
    ini = tmp_path / "uwsgi.ini"
    ini.write_text(f"""[uwsgi]
chdir = {ROOT}
module = tests.apps.loaded_modules:app
master = true
processes = 2
http-socket = 127.0.0.1:0
socket = {tmp_path}/app.sock
chmod-socket = 666
vacuum = true
die-on-term = true
need-app = true
disable-logging = true
static-map = /static={tmp_path}/static
listen = 1024
""")
    srv = start_server(None, command=[PYTHON, "-m", "sluicegate.uwsgi_cli", "--ini", str(ini)])
    assert loaded(srv.port, "/uwsgi") == []
    assert loaded(srv.port, "/master") == []  # the master without the extension (above)

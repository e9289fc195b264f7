"""What a server process gives back to the kernel once it serves (src/server/memory.rs): the
pages of the extension's relocation tables, read by the loader while it relocated the library
and never again. A worker loads the extension after its fork, so each worker read them itself
(about 230 kB each for the release build: benchmarks/results/2026-11-27-rsst)."""

import http.client

from tests.conftest import PYTHON, ROOT


def resident(port):
    """(resident, total) relocation-table pages of the process that answers."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", "/")
        r = c.getresponse()
        assert r.status == 200
        got, total = r.read().decode().split("/")
        return int(got), int(total)
    finally:
        c.close()


def assert_given_back(port):
    got, total = resident(port)
    assert total > 0
    assert got == 0, f"{got} of the {total} relocation-table pages are still resident"


def test_a_worker_gives_back_the_relocation_tables(start_server):
    """Failed before: every page of `.rela.dyn` and `.rela.plt` stayed resident in each
    worker (the loader reads all of them when the worker imports the extension)."""
    srv = start_server("startup_pages", "--workers", "2")
    for _ in range(4):  # whichever worker answers
        assert_given_back(srv.port)


def test_a_uwsgi_worker_gives_back_the_relocation_tables(start_server, tmp_path):
    """The same under `sluicegate-uwsgi`, with S19's kind of uwsgi.ini (master, two processes,
    no request log)."""
    ini = tmp_path / "uwsgi.ini"
    ini.write_text(f"""[uwsgi]
chdir = {ROOT}
module = tests.apps.startup_pages:app
master = true
processes = 2
http-socket = 127.0.0.1:0
vacuum = true
die-on-term = true
need-app = true
disable-logging = true
""")
    srv = start_server(None, command=[PYTHON, "-m", "sluicegate.uwsgi_cli", "--ini", str(ini)])
    for _ in range(4):
        assert_given_back(srv.port)

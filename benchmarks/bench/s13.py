"""S13: Django with PostgreSQL, a real app on a real database (BENCHMARKS.md, "The scenarios").

Owns the database's lifecycle and S13's cases. PostgreSQL 15 from Debian's packages runs as its
own cluster (`initdb` in a scratch directory, `pg_ctl` as the `postgres` user, a unix socket
only, the stock `max_connections = 100`), started once per run and stopped at exit. The app is
`apps/s13_django.py`: Django (`apps/s13django/`), psycopg 3, a view with a primary-key lookup
and a 100-row aggregate over a 10,000-row table, and a small template.

Cases, each on a freshly started server:
1. `wrk` at 16 and 100 clients on `/item/4242`, with `CONN_MAX_AGE` 0 (a connection per
   request) and 60 (one per thread, kept), the peers' thread pools at 8 (granian's
   `--blocking-threads 8`, uWSGI's `--threads 8`, gunicorn gthread's `--threads 8`), then at 4
   and at 32. Sluicegate runs its defaults in every group. Recorded: requests/s, p99, server CPU per
   request, the most PostgreSQL connections seen at once (the postmaster's children, every 0.1 s),
   errors (non-2xx: Django's 500 when PostgreSQL refuses a connection). Then as many keep-alive
   clients again for as long (`every_request.py`): the p99 of every request sent, the ones a
   server left waiting past the run included, which wrk's p99 leaves out.
2. The variant with a connection pool: Flask and SQLAlchemy (`apps/s13_flask.py`, QueuePool of
   8 shared by the process's threads) at 16 and 100 clients, the peers at 8 threads.
3. The burst: 300 clients on a slow view (`?sleep=0.1`: `pg_sleep(0.1)`),
   `CONN_MAX_AGE` 0, peers at 32 threads and sluicegate with its defaults; then everyone capped
   at 90 threads (sluicegate `--threads 1:90`), under PostgreSQL's 100; then everyone at 300
   threads (one per client, what sluicegate's 1:1024 did before `--threads auto`), over it.

The expected page is rendered once by calling the app directly (no server) in sluicegate's venv;
every case verifies bodies against it before, during and after the run.
"""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import servers
from bench import every_request, procs
from bench.harness import Harness, Record, fail, run_case, wrk_body

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DB = "s13"
ITEM = 4242
PATH = f"/item/{ITEM}"
CLIENTS = (16, 100)
CONN_AGES = (0, 60)  # 0: a connection per request; 60: kept by each thread for up to a minute
PEER_POOLS = (8, 4, 32)
BURST_CLIENTS = 300
BURST_SLEEP_S = 0.1
BURST_POOL = 32
CAPPED_POOL = 90
UNCAPPED_POOL = 300  # one thread per client: what sluicegate's 1:1024 did before `auto`
# The cases of a short run (Mode.s13_short): (peers' threads, clients, CONN_MAX_AGE): the four
# Django cases with the peers at 8 threads.
SHORT = tuple((8, c, age) for age in CONN_AGES for c in CLIENTS)
FLASK_POOL = 8  # SQLAlchemy's pool_size in the Flask variant, and the peers' threads there
CONFIG = servers.WORK / "s13" / "db.json"
COUNT_EVERY_S = 0.1

TABLE_SQL = """
CREATE TABLE s13_item (id bigint PRIMARY KEY, name varchar(64) NOT NULL,
                       category integer NOT NULL, price numeric(10,2) NOT NULL);
INSERT INTO s13_item SELECT i, 'item ' || i, i % 10, ((i * 7919) % 100000) / 100.0
  FROM generate_series(1, 10000) AS i;
ANALYZE s13_item;
"""


class Postgres:
    """One scratch cluster: unix socket only, trust authentication, stock connection limit."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sluicegate-s13-"))
        self.data = self.root / "data"
        self.port = procs.free_port()  # names the socket file (.s.PGSQL.PORT); no TCP listener
        self.root.chmod(0o755)  # www-data (mod_wsgi) reaches the socket
        shutil.chown(self.root, "postgres", "postgres")

    def _as_postgres(self, *argv: str, timeout: float = 120, stdin: str | None = None) -> str:
        r = subprocess.run(["runuser", "-u", "postgres", "--", *argv], capture_output=True, text=True,
                           timeout=timeout, input=stdin, cwd=self.root)
        if r.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {(r.stderr or r.stdout).strip()[-300:]}")
        return r.stdout

    def start(self) -> None:
        self._as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                          "--no-sync", "-E", "UTF8", "--locale", "C")
        opts = (f"-k {self.root} -p {self.port} -c listen_addresses='' -c max_connections=100 "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        self._as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"),
                          "-o", opts, "-w", "start")
        atexit.register(self.stop)
        self.psql("postgres", f"CREATE DATABASE {DB}")
        self.psql(DB, TABLE_SQL)

    def psql(self, db: str, sql: str) -> str:
        return self._as_postgres("psql", "-h", str(self.root), "-p", str(self.port), "-d", db, "-X", "-q",
                                 "-A", "-t", "-v", "ON_ERROR_STOP=1", stdin=sql)

    def connections(self) -> int:
        """Client connections to the app's database now: the postmaster's children whose process
        title names the database ("postgres: USER s13 [local] STATE"), read from /proc. A query
        through `psql` every `COUNT_EVERY_S` cost a `runuser`, a `psql` and a backend's start
        each time, on the cores the servers were measured on."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        n = 0
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                stat = (proc / "stat").read_text()
                title = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            n += ppid == postmaster and f" {DB} ".encode() in title
        return n

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D", str(self.data),
                            "-m", "fast", "-w", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


_PG: Postgres | None = None
_EXPECT: dict[str, bytes] = {}


def _postgres() -> Postgres:
    global _PG
    if _PG is None:
        pg = Postgres()
        pg.start()
        _PG = pg
    return _PG


def _configure(conn_max_age: int | None) -> None:
    pg = _postgres()
    CONFIG.parent.mkdir(parents=True, exist_ok=True)
    CONFIG.write_text(json.dumps({"host": str(pg.root), "port": pg.port, "name": DB, "user": "postgres",
                                  "conn_max_age": conn_max_age, "pool_size": FLASK_POOL}))
    CONFIG.chmod(0o644)


def _expected(path: str, module: str = "s13_django") -> bytes:
    """The page for `path`, from the app called directly (no server) in sluicegate's venv."""
    key = f"{module}:{path}"
    if key not in _EXPECT:
        code = (
            f"import sys, {module} as s13_app\n"
            "path, _, query = sys.argv[1].partition('?')\n"
            "env = {'REQUEST_METHOD': 'GET', 'PATH_INFO': path, 'QUERY_STRING': query,\n"
            "       'SERVER_NAME': '127.0.0.1', 'SERVER_PORT': '80', 'HTTP_HOST': '127.0.0.1',\n"
            "       'SERVER_PROTOCOL': 'HTTP/1.1', 'wsgi.url_scheme': 'http', 'wsgi.input': sys.stdin.buffer,\n"
            "       'wsgi.errors': sys.stderr, 'wsgi.multithread': False, 'wsgi.multiprocess': False,\n"
            "       'wsgi.run_once': True, 'wsgi.version': (1, 0)}\n"
            "status = []\n"
            "body = b''.join(s13_app.app(env, lambda s, h, e=None: status.append(s)))\n"
            "assert status == ['200 OK'], status\n"
            "sys.stdout.buffer.write(body)\n"
        )
        r = subprocess.run([str(servers.SLUICEGATE_PY), "-c", code, path], capture_output=True,
                           env=servers._env(None), cwd=servers.APPS, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"rendering {path} failed: {r.stderr.decode(errors='replace')[-300:]}")
        _EXPECT[key] = r.stdout
    return _EXPECT[key]


class ConnectionCounter(threading.Thread):
    """The most client connections PostgreSQL had at once while it ran."""

    def __init__(self, pg: Postgres):
        super().__init__(daemon=True)
        self.pg, self.peak = pg, 0
        self._stop_evt = threading.Event()

    def run(self) -> None:
        while not self._stop_evt.wait(COUNT_EVERY_S):
            try:
                self.peak = max(self.peak, self.pg.connections())
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                pass

    def finish(self) -> int:
        self._stop_evt.set()
        self.join(10)
        return self.peak


APP_IMPORTS = {"s13_django": "django, psycopg", "s13_flask": "flask, sqlalchemy, psycopg"}


def available(module: str = "s13_django") -> tuple[bool, str]:
    if not (PG_BIN / "initdb").exists():
        return False, "PostgreSQL 15 not installed (run benchmarks/setup.sh)"
    r = subprocess.run([str(servers.SLUICEGATE_PY), "-c", f"import {APP_IMPORTS[module]}"], capture_output=True,
                       timeout=60)
    if r.returncode != 0:
        return False, f"{APP_IMPORTS[module]} not installed (run benchmarks/setup.sh)"
    return True, ""


def _one(h: Harness, server: servers.Server, rnd: int, case: str, target: servers.Target, path: str,
         clients: int, conn_max_age: int | None) -> None:
    ok, why = available(target.module)
    if not ok:
        rec = Record("S13", case, server.name, rnd, "req/s", "higher", status="n/a", note=why)
        h.add(rec)
        return
    _configure(conn_max_age)
    expect = _expected(path, target.module)

    def body(proc: procs.ServerProcess, rec: Record) -> None:
        counter = ConnectionCounter(_postgres())
        counter.start()
        try:
            wrk_body(h, path, expect, clients, timeout_s=5.0)(proc, rec)
        finally:
            rec.extra["pg_connections"] = counter.finish()
        rec.note = (rec.note + "; " if rec.note else "") + f"{rec.extra['pg_connections']} PostgreSQL connections"
        if rec.status == "ok":
            every = every_request.run(proc.port, path, expect, clients, h.mode.wrk_s)
            rec.extra.update(every_p50_us=every.p50_us, every_p99_us=every.p99_us, every_max_us=every.max_us,
                             every_unanswered=every.unanswered, every_fewest=every.fewest, every_most=every.most)
            if every.wrong:
                fail(rec, f"{every.wrong} wrong answers to the every-request clients")
        if rec.errors:
            rec.note = (rec.note + "; " if rec.note else "") + f"{rec.errors} errors"

    run_case(h, "S13", case, server, rnd, "req/s", "higher", target, body)


_ALONE_CODE = """
import io, sys, time, s13_django
path, seconds = sys.argv[1], float(sys.argv[2])
def env():
    return {'REQUEST_METHOD': 'GET', 'PATH_INFO': path, 'QUERY_STRING': '', 'SCRIPT_NAME': '',
            'SERVER_NAME': '127.0.0.1', 'SERVER_PORT': '80', 'HTTP_HOST': '127.0.0.1',
            'SERVER_PROTOCOL': 'HTTP/1.1', 'wsgi.url_scheme': 'http', 'wsgi.input': io.BytesIO(),
            'wsgi.errors': sys.stderr, 'wsgi.multithread': False, 'wsgi.multiprocess': False,
            'wsgi.run_once': False, 'wsgi.version': (1, 0)}
def call():
    out = s13_django.app(env(), lambda s, h, e=None: None)
    body = b''.join(out)
    getattr(out, 'close', lambda: None)()
    return body
expect = call()
for _ in range(50):
    assert call() == expect
n, cpu0, t0 = 0, time.process_time(), time.monotonic()
while time.monotonic() - t0 < seconds:
    assert call() == expect
    n += 1
print(n, time.process_time() - cpu0, time.monotonic() - t0)
sys.stdout.buffer.write(expect)
"""


def _alone(h: Harness, rnd: int, conn_max_age: int | None) -> None:
    """The floor: the app called in a loop by one Python thread, no server and no sockets in
    front. Its CPU per call is what a server that cost nothing would spend per request."""
    rec = Record("S13", f"app alone, CONN_MAX_AGE={conn_max_age} (one thread, no server: the floor)", "app alone", rnd,
                 "req/s", "higher", settings="the WSGI callable called in a loop by one thread")
    ok, why = available()
    if not ok:
        rec.status, rec.note = "n/a", why
        h.add(rec)
        return
    _configure(conn_max_age)
    expect = _expected(PATH)
    seconds = h.mode.wrk_s
    r = subprocess.run([str(servers.SLUICEGATE_PY), "-c", _ALONE_CODE, PATH, str(seconds)], capture_output=True,
                       env=servers._env(None), cwd=servers.APPS, timeout=seconds + 120)
    if r.returncode != 0:
        rec.status, rec.note = "failed", r.stderr.decode(errors="replace")[-300:]
    else:
        head, _, body = r.stdout.partition(b"\n")
        n, cpu, wall = head.split()
        rec.verified = body == expect
        if not rec.verified:
            rec.status, rec.note = "failed", "the app's page differs from the expected one"
        else:
            rec.requests = int(n)
            rec.value = int(n) / float(wall)
            rec.cpu_us_per_req = float(cpu) * 1e6 / int(n)
            rec.note = "CPU per call: the app process's own (time.process_time)"
    h.add(rec)


def _flask(h: Harness, server: servers.Server, rnd: int, ours: bool) -> None:
    for clients in CLIENTS:
        target = servers.Target("s13_flask", "/hello", b"hello", pool=None if ours else FLASK_POOL)
        _one(h, server, rnd, f"Flask + SQLAlchemy pool of {FLASK_POOL}, c{clients}, peers {FLASK_POOL} threads",
             target, PATH, clients, 0)


def s13(h: Harness, server: servers.Server, rnd: int) -> None:
    # Every build of this project runs our settings in every case (its defaults, or the
    # `--threads` a burst case gives it), so that a before/after of two builds compares like with like.
    ours = server.name in servers.OUR_BUILDS
    if h.mode.s13_flask:
        _flask(h, server, rnd, ours)
        return
    if h.mode.s13_burst:
        _bursts(h, server, rnd, ours)
        return
    if server.kind == "ours":
        for conn_max_age in CONN_AGES:
            _alone(h, rnd, conn_max_age)
    for pool in PEER_POOLS:
        for conn_max_age in CONN_AGES:
            for clients in CLIENTS:
                if h.mode.s13_short and (pool, clients, conn_max_age) not in SHORT:
                    continue
                case = f"c{clients}, CONN_MAX_AGE={conn_max_age}, peers {pool} threads"
                target = servers.Target("s13_django", "/hello", b"hello", pool=None if ours else pool)
                _one(h, server, rnd, case, target, PATH, clients, conn_max_age)
    if h.mode.s13_short:
        return
    _flask(h, server, rnd, ours)
    _bursts(h, server, rnd, ours)


def _bursts(h: Harness, server: servers.Server, rnd: int, ours: bool) -> None:
    slow = f"{PATH}?sleep={BURST_SLEEP_S:g}"
    target = servers.Target("s13_django", "/hello", b"hello", pool=None if ours else BURST_POOL)
    _one(h, server, rnd, f"burst c{BURST_CLIENTS} pg_sleep, peers {BURST_POOL} threads, ours defaults", target,
         slow, BURST_CLIENTS, 0)
    target = servers.Target("s13_django", "/hello", b"hello", pool=CAPPED_POOL,
                            ours_threads=f"1:{CAPPED_POOL}" if ours else None)
    _one(h, server, rnd, f"burst c{BURST_CLIENTS} pg_sleep, everyone {CAPPED_POOL} threads", target, slow,
         BURST_CLIENTS, 0)
    target = servers.Target("s13_django", "/hello", b"hello", pool=UNCAPPED_POOL,
                            ours_threads=f"1:{UNCAPPED_POOL}" if ours else None)
    _one(h, server, rnd, f"burst c{BURST_CLIENTS} pg_sleep, everyone {UNCAPPED_POOL} threads", target, slow,
         BURST_CLIENTS, 0)

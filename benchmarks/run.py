"""The one entry point of sluicegate's benchmarks: the scenario suite and every tool beside it.

    python3 benchmarks/run.py [--quick | --full | --standing] [--servers ...] [--scenarios ...]   the suite
    python3 benchmarks/run.py COMMAND [options]      a tool (`run.py --help` lists them)
    python3 benchmarks/run.py COMMAND --help

Owns the list of commands and their dispatch, nothing else: each command is a module of
`bench/` with `add_arguments(parser)` and `main(args)`, imported only when it is the one asked
for (a peer server started through `run.py launch` carries nothing of the harness). Without a
command, the arguments go to `suite`, so `run.py --quick --scenarios S6` works as it always has.
Shared helpers live in `bench/harness.py`; see BENCHMARKS.md for what each command measured.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
VENV_PY = BENCH / ".venv" / "bin" / "python"

# name: (module, suffix of its add_arguments_/main_ pair or "", group, one line of help)
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "suite": ("bench.suite", "", "scenarios",
              "S1-S16 beside the peers in interleaved rounds: results.json, report.md, standing.md, charts "
              "(the default; --standing: every scenario and peer, ~70 min)"),
    "s11": ("bench.s11", "", "scenarios",
            "S11: S6 and S3 through nginx (proxy_pass over unix and TCP, uwsgi_pass)"),
    "s16": ("bench.s16", "", "scenarios",
            "S16: behind nginx as deployed: proxy_pass defaults (new connection each), keepalive, uwsgi_pass"),
    "s19": ("bench.s19", "", "scenarios",
            "S19: one uwsgi.ini run by uWSGI and by sluicegate-uwsgi behind nginx (uwsgi_pass, unix): "
            "hello world, 128-byte blocks, static-map; RSS of master + 2 workers"),
    "s15": ("bench.s15", "", "scenarios",
            "S15: HTTP/2, 100 streams of S5's app on one connection (h2load), hello world over h2c"),
    "s17": ("bench.s17", "", "scenarios",
            "S17: HTTP/3 (h3load) beside HTTP/2 over TLS (h2load): 100 streams of S5's app on one "
            "connection, hello world -c16 -m10; needs a build with --http3"),
    "h3-lossy": ("bench.h3_lossy", "", "scenarios",
                 "S17c: a 64 MiB answer over an emulated lossy link (1% loss, 20 ms) in network "
                 "namespaces, HTTP/3 and HTTP/2: time, sha256, server peak RSS (root)"),
    "s14": ("bench.s14", "", "scenarios",
            "S14: HTTPS direct beside nginx-TLS-in-front, granian TLS, gunicorn --certfile; handshake CPU"),
    "tls-load": ("bench.tls_load", "", "scenarios",
                 "TLS under attack: keep-alive latency during a handshake flood; RSS beside a slow reader"),
    "failover": ("bench.failover", "", "scenarios",
                 "S11: two instances behind HAProxy, one killed or stopped under wrk"),
    "s8-memory": ("bench.s8_memory", "", "scenarios",
                  "S8: RSS growth while the app read()s a 64 MiB upload whole"),
    "s8-connections": ("bench.s8_connections", "", "scenarios",
                       "S8: 64 MiB uploads on new connections and on one keep-alive connection"),
    "s12-startup": ("bench.s12_startup", "", "scenarios",
                    "S12: fast-route probes in a fresh sluicegate's first seconds beside CPU-bound calls"),
    "soak": ("bench.soak", "", "scenarios",
             "10 minutes of mixed traffic on one sluicegate: RSS, fds, threads must stay flat"),
    "soak-faults": ("bench.soak_faults", "", "scenarios",
                    "30 minutes of mixed traffic with a HUP every minute and a worker kill -9 every 2: failed requests, beside gunicorn"),
    "observability": ("bench.observability", "", "scenarios",
                      "S6/S4 with the access log, --metrics-bind, timings: cost against off"),
    "callgrind": ("bench.callgrind", "", "cost",
                  "instructions per hello-world request under valgrind (runs callgrind_hello.sh)"),
    "callgrind-top": ("bench.callgrind", "top", "cost",
                      "per-function instructions per request from a callgrind dump"),
    "syscalls": ("bench.conn_syscalls", "", "cost",
                 "system calls per connection (strace -c -f during ab without keep-alive) of running servers"),
    "segments": ("bench.segments", "", "cost",
                 "TCP payload segments per response of a running server (tcpdump, root)"),
    "wrk-cpu": ("bench.wrk_cpu", "", "side by side",
                "interleaved wrk runs against servers already running: req/s and server CPU per request"),
    "ab-interleaved": ("bench.ab_interleaved", "", "side by side",
                       "interleaved ab -c1 (new connection each) against servers already running"),
    "fetch-cpu": ("bench.fetch_cpu", "", "side by side",
                  "interleaved keep-alive fetch loops (S1): time, server CPU, ksoftirqd"),
    "beside-download": ("bench.beside_download", "", "side by side",
                        "latency of small requests beside a 64 MiB download loop"),
    "report": ("bench.report", "", "plumbing",
               "rebuild report.md, standing.md and the charts of a results directory from its results.json "
               "(--publish: standing.md into BENCHMARKS.md)"),
    "install": ("bench.install", "", "plumbing",
                "install the peers into the benchmark venvs and record each outcome (setup.sh calls it)"),
    "launch": ("bench.launch", "", "plumbing",
               "start a peer that has only a Python API (servers.py runs it in the peers' venv)"),
    "idle": ("bench.idle", "", "plumbing",
             "hold COUNT idle keep-alive connections open (S7 runs it as a process of its own)"),
}
GROUPS = {"scenarios": "Scenarios (BENCHMARKS.md) and long runs",
          "cost": "The cost of a request", "side by side": "Servers started by hand, measured side by side",
          "plumbing": "Plumbing (called by the suite and setup.sh)"}
SCENARIO_MAP = """scenarios and the command that measures each:
  S1-S16 together            run.py --standing   (the standing table; --tiny: a smoke test of it)
  any of them                run.py [suite] --scenarios S1,...   (S8 also s8-memory, s8-connections;
                             S12 also s12-startup)
  S11                        run.py s11; run.py failover
  S14 (TLS)                  run.py s14 (run.py tls-load: handshake flood, slow reader)
  S15 (HTTP/2)               run.py s15 [--granian PATH] [--gunicorn-python PY]
  S16 (behind nginx)         run.py s16 [--modes proxy,keepalive,uwsgi-tcp,uwsgi-unix]
  S19 (a uwsgi.ini, both)    run.py s19 [--cases hello,stream128,static]
  S17 (HTTP/3)               run.py s17 [--rounds 3] (a, b); run.py h3-lossy (c: lossy link, root)
                             h3load, the HTTP/3 load client: benchmarks/h3load/README.md
before/after of two builds:  SLUICEGATE_BASE_PY=/base/.venv/bin/python run.py --servers sluicegate,sluicegate-base ...
                             run.py callgrind OUT; run.py callgrind OUT --python /base/.venv/bin/python"""


def _reexec_in_venv() -> None:
    """Charts need matplotlib, which lives in benchmarks/.venv: run there if we are not."""
    if Path(sys.prefix).resolve() != (BENCH / ".venv").resolve() and VENV_PY.exists() \
            and not os.environ.get("SLUICEGATE_BENCH_NO_REEXEC"):
        os.environ["SLUICEGATE_BENCH_NO_REEXEC"] = "1"
        os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])


def top_help() -> str:
    lines = [__doc__.split("\n\n")[0], "", "usage: python3 benchmarks/run.py [COMMAND] [options]",
             "       python3 benchmarks/run.py COMMAND --help", ""]
    for group, title in GROUPS.items():
        lines.append(f"{title}:")
        for name, (_, _, g, text) in COMMANDS.items():
            if g == group:
                lines.append(f"  {name:<16} {text}")
        lines.append("")
    lines.append(SCENARIO_MAP)
    return "\n".join(lines)


def parser_for(name: str) -> tuple[argparse.ArgumentParser, object]:
    module_name, suffix, _, text = COMMANDS[name]
    module = importlib.import_module(module_name)
    add = getattr(module, f"add_arguments_{suffix}" if suffix else "add_arguments")
    run = getattr(module, f"main_{suffix}" if suffix else "main")
    doc = (module.__doc__ or "").strip()
    ap = argparse.ArgumentParser(prog=f"python3 benchmarks/run.py {name}", description=f"{text}.\n\n{doc}",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add(ap)
    return ap, run


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        print(top_help())
        return 0
    name = argv[0] if argv and argv[0] in COMMANDS else "suite"
    rest = argv[1:] if argv and argv[0] in COMMANDS else argv
    if argv and not argv[0].startswith("-") and name == "suite" and argv[0] != "suite":
        print(f"run.py: unknown command {argv[0]!r}\n\n{top_help()}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(BENCH))
    ap, run = parser_for(name)
    return run(ap.parse_args(rest)) or 0


if __name__ == "__main__":
    _reexec_in_venv()
    sys.exit(main(sys.argv[1:]))

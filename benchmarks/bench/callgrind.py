"""Instructions per hello-world request under callgrind: the run, and the reading of its dump.

Owns two subcommands of run.py:
- `callgrind OUT_DIR [--python PY] [--concurrency N] [--app APP --path PATH] [--tls] [--new-connections]
  [--requests N] [-- OPTIONS]` runs `benchmarks/callgrind_hello.sh` (it stays a shell script:
  valgrind, ab and callgrind_control in a row) with its settings as environment variables; it
  writes OUT_DIR/top.txt.
- `callgrind-top callgrind.out.N REQUESTS [--min 60]` prints each function's own cost (all
  threads, summed over its inlined pieces) divided by the requests the dump covers, largest
  first; the script calls it at its end.

The first line is the total of the server's own instructions per request: callgrind's
PROGRAM TOTALS. (A frame that holds the others, such as a thread's entry, or a loop that never
returns while the counters run, can be listed with the whole cost of what it holds as its own;
such lines are left out of the list.)
"""

import argparse
import os
import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "callgrind_hello.sh"

ENTRY = {"clone", "start_thread", "<std::sys::thread::unix::Thread>::new::thread_start",
         "core::ops::function::FnOnce::call_once{{vtable.shim}}",
         "std::sys::backtrace::__rust_begin_short_backtrace"}


def per_function(path: str) -> tuple[int, dict[str, int]]:
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no",
                          path], capture_output=True, text=True, check=True).stdout
    costs: dict[str, int] = {}
    total = 0
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" in line:
            total = int(m.group(1).replace(",", ""))
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r" \[.*\]$", "", m.group(2))
        fn = name.split(":", 1)[1] if ":" in name else name
        costs[fn] = costs.get(fn, 0) + int(m.group(1).replace(",", ""))
    return total, costs


def add_arguments_top(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("dump", help="callgrind.out.N")
    ap.add_argument("requests", type=int, help="requests the dump covers")
    ap.add_argument("--min", type=float, default=60, help="leave out functions under this many per request")


def main_top(args: argparse.Namespace) -> None:
    n, floor = args.requests, args.min
    total, costs = per_function(args.dump)
    costs = {k: v for k, v in costs.items() if k not in ENTRY and v < total / 2}
    print(f"{total / n:7.0f} instructions per request")
    for fn, v in sorted(costs.items(), key=lambda kv: -kv[1]):
        if v / n < floor:
            break
        print(f"{v / n:7.0f} {fn[:110]}")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("out", type=Path, help="directory for callgrind.out.*, server.log and top.txt")
    ap.add_argument("--python", help="the sluicegate build to count: its venv's python "
                    "(default: the work tree's .venv; for a before/after, the base's)")
    ap.add_argument("--concurrency", type=int, default=8,
                    help="ab's -c: 8 (all connections ready at each look: one GIL take per batch) or 1")
    ap.add_argument("--app", default="s6_hello:app", help="an app of benchmarks/apps (default S6's hello world)")
    ap.add_argument("--path", default="/", help="the URL path to request")
    ap.add_argument("--tls", action="store_true", help="over HTTPS (a certificate made for the run)")
    ap.add_argument("--requests", type=int, default=20000, help="requests counted (after 2,000)")
    ap.add_argument("--new-connections", action="store_true",
                    help="ab without -k: a new connection per request (the count is per connection)")
    ap.add_argument("options", nargs="*", help="sluicegate options (after --)")


def main(args: argparse.Namespace) -> int:
    env = dict(os.environ, CONCURRENCY=str(args.concurrency), APP=args.app, URL_PATH=args.path,
               TLS="1" if args.tls else "0", REQUESTS=str(args.requests),
               NEW_CONNECTIONS="1" if args.new_connections else "0")
    if args.python:
        env["SLUICEGATE_PY"] = args.python
    return subprocess.run(["bash", str(SCRIPT), str(args.out), *args.options], env=env).returncode

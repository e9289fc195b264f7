"""Per-request instruction counts from a callgrind dump: each function's own cost (all threads,
summed over its inlined pieces), divided by the requests the dump covers, largest first.

    python3 bench/callgrind_top.py callgrind.out.N REQUESTS [--min 60]

The first line is the total of the server's own instructions per request: callgrind's
PROGRAM TOTALS. (A frame that holds the others, such as a thread's entry, or a loop that never
returns while the counters run, can be listed with the whole cost of what it holds as its own;
such lines are left out of the list.)
"""

import re
import subprocess
import sys

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


def main() -> None:
    path, n = sys.argv[1], int(sys.argv[2])
    floor = float(sys.argv[sys.argv.index("--min") + 1]) if "--min" in sys.argv else 60
    total, costs = per_function(path)
    costs = {k: v for k, v in costs.items() if k not in ENTRY and v < total / 2}
    print(f"{total / n:7.0f} instructions per request")
    for fn, v in sorted(costs.items(), key=lambda kv: -kv[1]):
        if v / n < floor:
            break
        print(f"{v / n:7.0f} {fn[:110]}")


if __name__ == "__main__":
    main()

"""Per-request instruction counts from a callgrind dump: each function's own cost (all threads,
summed over its inlined pieces), divided by the requests the dump covers, largest first.

    python3 bench/callgrind_top.py callgrind.out.N REQUESTS [--min 60]

The first line is the total of the server's own instructions per request (the thread entry
points, which only hold the others, are left out).
"""

import re
import subprocess
import sys

ENTRY = {"clone", "start_thread", "<std::sys::thread::unix::Thread>::new::thread_start",
         "core::ops::function::FnOnce::call_once{{vtable.shim}}",
         "std::sys::backtrace::__rust_begin_short_backtrace"}


def per_function(path: str) -> dict[str, int]:
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no",
                          path], capture_output=True, text=True, check=True).stdout
    costs: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r" \[.*\]$", "", m.group(2))
        fn = name.split(":", 1)[1] if ":" in name else name
        costs[fn] = costs.get(fn, 0) + int(m.group(1).replace(",", ""))
    return costs


def main() -> None:
    path, n = sys.argv[1], int(sys.argv[2])
    floor = float(sys.argv[sys.argv.index("--min") + 1]) if "--min" in sys.argv else 60
    costs = {k: v for k, v in per_function(path).items() if k not in ENTRY}
    print(f"{sum(costs.values()) / n:7.0f} instructions per request")
    for fn, v in sorted(costs.items(), key=lambda kv: -kv[1]):
        if v / n < floor:
            break
        print(f"{v / n:7.0f} {fn[:110]}")


if __name__ == "__main__":
    main()

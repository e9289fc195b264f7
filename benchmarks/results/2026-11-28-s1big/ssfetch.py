"""ssfetch.py PORT PATH N: N keep-alive fetches over one connection (bench/rawhttp.py), then the
server side's TCP counters of that connection (`ss -tin`), divided per fetch (the 2 warm-up
fetches' are included: N+2 in all)."""

import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import rawhttp  # noqa: E402

port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
times = []
c = rawhttp.Connection(port)
for i in range(n + 2):
    t0 = time.perf_counter()
    r = c.request("GET", path)
    if i >= 2:
        times.append(time.perf_counter() - t0)
    assert r.status == 200, r.status
cport = c.sock.getsockname()[1]
out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} and dport = :{cport} )"],
                     capture_output=True, text=True).stdout
print(f"{path} x{n}: median {statistics.median(times)*1e3:.2f} ms")
for key in ("segs_out", "data_segs_out", "segs_in", "retrans", "bytes_retrans", "dsack_dups", "rwnd_limited", "sndbuf_limited", "busy"):
    m = re.search(rf"\b{key}:(\S+)", out)
    if m:
        v = m.group(1)
        v = v.split("(")[0].rstrip("ms").split("/")[-1]
        try:
            print(f"  {key:15s} {float(v)/(n+2):10.1f} per fetch" if key not in ("rwnd_limited", "sndbuf_limited", "busy") else f"  {key:15s} {m.group(1)}")
        except ValueError:
            print(f"  {key:15s} {m.group(1)}")
print("  ss:", " ".join(w for w in out.split() if w.startswith(("cwnd", "mss", "rcv_space", "snd_wnd", "rcv_wnd"))))
c.close()

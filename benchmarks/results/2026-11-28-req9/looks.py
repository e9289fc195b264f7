"""looks.py FILE...: from ab_watchdog.sh outputs, per round and side the rate, the watchdog's CPU
per request, its wake-ups (voluntary switches) per request and per second, and the medians."""
import re, statistics, sys
for f in sys.argv[1:]:
    t = open(f).read()
    rows = {"base": [], "new": []}
    for blk in t.split("== ")[1:]:
        side = blk.split()[2]
        rate = int(re.search(r"(\d+) req/s", blk).group(1))
        m = re.search(r"sg-watchdog\s+cpu\s+([\d.]+) us/req\s+vol\s+([\d.]+)", blk)
        cpu, vol = float(m.group(1)), float(m.group(2))
        rows[side].append((rate, cpu, vol, vol * rate))
    print(f)
    for side, r in rows.items():
        print(f"  {side:4} " + "  ".join(f"{a}/s {c}us {v}/req {l:.0f}/s" for a, c, v, l in r))
        print(f"       median: {statistics.median(x[1] for x in r)} us/req, {statistics.median(x[2] for x in r)} wake-ups/req, {statistics.median(x[3] for x in r):.0f} wake-ups/s")

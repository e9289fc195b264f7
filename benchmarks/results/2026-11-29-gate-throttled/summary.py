import re, collections, statistics, sys
for f in sys.argv[1:]:
    print(f)
    d = collections.defaultdict(list)
    for l in open(f):
        m = re.match(r"\s+S18 s5 \| (\S+) \| (\S+) round (\d): ([\d,]+) req/s, p99 ([\d.]+) ms, ([\d.]+) µs/req, throttled (\d+)", l)
        if m: d[(m[1], m[2])].append((int(m[4].replace(",", "")), float(m[5]), float(m[6]), int(m[7])))
    for lim in ["none", "0.5", "1.0", "1.5"]:
        for s in ["sluicegate", "sluicegate-base", "granian"]:
            v = d[(s, lim)]
            if v: print(f"  {lim:4} {s:16} {' / '.join(f'{x[0]:,}' for x in v):40} med {statistics.median([x[0] for x in v]):7,.0f}  p99 med {statistics.median([x[1] for x in v]):5.0f}  us/req med {statistics.median([x[2] for x in v]):4.0f}  thr {[x[3] for x in v]}")

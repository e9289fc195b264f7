"""Medians per case and server of a results.json (argv[1]): value, CPU, nginx CPU, p99, every round."""
import json, statistics as st, collections, sys
d=json.load(open(sys.argv[1]))
rows=collections.defaultdict(list)
for r in d['records']:
    if r['value']: rows[(r['scenario'], r['case'][:45], r['server'])].append((r['value'], r['cpu_us_per_req'] or 0, r['extra'].get('nginx_us_per_req') or 0, r['extra'].get('p99_us') or 0))
for k in sorted(rows):
    v=rows[k]; print(f"{k[0]} {k[1]:45s} {k[2]:16s} {st.median(x[0] for x in v):9.1f} cpu {st.median(x[1] for x in v):6.1f} nginx {st.median(x[2] for x in v):5.1f} p99 {st.median(x[3] for x in v)/1000:7.2f} ms  {[round(x[0]) for x in v]}")

"""S13 medians per case and server of a results.json (argv[1]): req/s, CPU, p99, connections, every round."""
import json, statistics as st, sys
d=json.load(open(sys.argv[1]))
recs = d["records"] if isinstance(d, dict) else d
rows={}
for r in recs:
    if r.get("case","").startswith("c") and r["value"]:
        k=(r["case"][:22], r["server"])
        rows.setdefault(k,[]).append((r["value"], r["cpu_us_per_req"], r["extra"].get("p99_us"), r["extra"].get("pg_connections"), r["extra"].get("every_p99_us") or 0))
for k in sorted(rows):
    v=rows[k]; print(f"{k[0]:24s} {k[1]:16s} req/s {st.median(x[0] for x in v):6.0f}  cpu {st.median(x[1] for x in v):6.0f} us  p99 {st.median(x[2] for x in v)/1000:6.1f} ms  every p99 {st.median(x[4] for x in v)/1000:7.1f} ms  pg {[x[3] for x in v]}  rounds {[round(x[0]) for x in v]} {[round(x[1]) for x in v]}")

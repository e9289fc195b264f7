import json,sys,re,statistics as st
for f in sys.argv[1:]:
    print(f)
    rows={}
    for r in json.load(open(f+'/results.json'))['records']:
        m=r['extra'].get('p99_us')
        c=r['case'].split(' clients')[0]
        rows.setdefault((c,r['server']),[]).append((r['round'],r['value'],r['cpu_us_per_req'],round(m/1000,1) if m else None))
    for (c,s),v in rows.items():
        v.sort()
        print(f"  {c:>6} {s:16} req/s {' '.join(f'{x[1]:.1f}' for x in v):30} p99 {' '.join(str(x[3]) for x in v):22} cpu {' '.join(f'{x[2]:.1f}' for x in v)}")

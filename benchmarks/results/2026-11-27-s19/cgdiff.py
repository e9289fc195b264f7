import sys, re
def load(p):
    d = {}; tot = None
    for line in open(p):
        m = re.match(r'\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s*$', line)
        if m and ':' in m.group(2) or (m and 'PROGRAM TOTALS' in line):
            v = int(m.group(1).replace(',', ''))
            if 'PROGRAM TOTALS' in line: tot = v; continue
            name = m.group(2)
            name = name.split(' [')[0]
            d[name] = d.get(name, 0) + v
    return tot, d
t1, a = load(sys.argv[1]); t2, b = load(sys.argv[2]); n = int(sys.argv[3])
print(f"total per request: {(t2 - t1) / n:,.0f}")
diff = sorted(((b.get(k, 0) - a.get(k, 0)) / n, k) for k in set(a) | set(b))
for v, k in diff[::-1][:int(sys.argv[4]) if len(sys.argv) > 4 else 30]:
    print(f"{v:10,.0f}  {k[:110]}")

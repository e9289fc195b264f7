"""Per-syscall and per-thread counts per fetch from an `strace -f -o` file (st.sh): count.py FILE N."""
import sys, re, collections
path, n = sys.argv[1], int(sys.argv[2])
calls = collections.Counter(); per = collections.defaultdict(collections.Counter)
for line in open(path):
    m = re.match(r'^(\d+)\s+(?:<\.\.\. )?([a-z_0-9]+)[\( ]', line)
    if not m or 'resumed>' in line: 
        if m and 'resumed>' in line: continue
        continue
    calls[m.group(2)] += 1; per[m.group(1)][m.group(2)] += 1
print("calls per fetch:", ", ".join(f"{k}={v/n:.1f}" for k, v in calls.most_common(12)))
for tid, c in sorted(per.items(), key=lambda x: -sum(x[1].values())):
    print(f"  thread {tid}: " + ", ".join(f"{k}={v/n:.1f}" for k, v in c.most_common(8)))

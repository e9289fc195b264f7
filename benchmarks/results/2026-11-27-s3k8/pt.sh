#!/bin/bash
# Owns the syscall counts of this folder: one server (PID listening on PORT), N keep-alive curl fetches of /8192 after a warm-up, the tracer attached to every thread.
# pt.sh PID PORT N TAG : perf trace -s over N keep-alive fetches of /8192
PID=$1; PORT=$2; N=$3; TAG=$4; mkdir -p /tmp/s3b
ARGS=""; for i in $(seq $N); do ARGS="$ARGS -o /dev/null http://127.0.0.1:$PORT/8192"; done
curl -s $ARGS  # warm
perf trace -s -p $PID -o /tmp/s3b/perf.$TAG 2>/dev/null & SP=$!
sleep 1.5
curl -s $ARGS
sleep 0.5; kill -INT $SP; wait $SP 2>/dev/null
echo "== $TAG (N=$N)"
python3 - /tmp/s3b/perf.$TAG $N <<'PY'
import sys, re, collections
n = int(sys.argv[2]); tot = collections.Counter(); thread = None; per = {}
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\S.*) \((\d+)\), (\d+) events', line)
    if m: thread = f"{m.group(1)}({m.group(2)})"; per[thread] = collections.Counter(); continue
    m = re.match(r'\s+([a-z_0-9]+)\s+(\d+)\s', line)
    if m and thread: per[thread][m.group(1)] += int(m.group(2)); tot[m.group(1)] += int(m.group(2))
print("per fetch:", ", ".join(f"{k}={v/n:.1f}" for k, v in tot.most_common(12)))
for t, c in per.items():
    if sum(c.values()) / n >= 0.5:
        print(f"  {t}: " + ", ".join(f"{k}={v/n:.1f}" for k, v in c.most_common(8)))
PY

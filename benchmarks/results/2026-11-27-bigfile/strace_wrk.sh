#!/bin/bash
# strace_wrk.sh NAME PID PORT PATH: strace -c -f of the server (all its processes/threads) during
# wrk -t1 -c100 -d3s; writes counts/strace-wrk-NAME.txt with wrk's request count on top.
N=$1; PID=$2; PORT=$3; P=$4
PIDS=$(for p in $PID $(pgrep -P $PID); do echo -n "-p $p "; done)
strace -f -c -o /tmp/bf/strace-wrk-$N.txt $PIDS & S=$!
sleep 2
R=$(wrk -t1 -c100 -d3s http://127.0.0.1:$PORT$P | tee /tmp/bf/wrk-$N.txt | awk '/requests in/ {print $1}')
kill -INT $S; wait $S 2>/dev/null
{ echo "requests: $R"; cat /tmp/bf/strace-wrk-$N.txt; } > counts/strace-wrk-$N.txt
python3 - counts/strace-wrk-$N.txt <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
req = int(lines[0].split()[1])
print(f"{sys.argv[1]}: {req} requests")
for l in lines:
    f = l.split()
    if len(f) >= 5 and f[3].isdigit():
        name = f[-1]; calls = int(f[3])
        print(f"  {name:16s} {calls/req:6.2f}/request")
PY

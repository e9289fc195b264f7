#!/usr/bin/env bash
# System calls per request of the S19 hello path: SERVER=sluicegate|uwsgi runs the S19 ini
# (processes = 1, master), nginx (one worker) in front with uwsgi_pass over the unix socket;
# `strace -c -f` attached to every thread of the worker while `ab -k -c8 -nN` runs against nginx
# (keep-alive to nginx; nginx opens a new upstream connection per request).
# Usage: WT=/work/wt/s19cpu SERVER=sluicegate strace_s19.sh OUT [N]
set -euo pipefail
WT=${WT:-/work/wt/s19cpu}
OUT=$(mkdir -p "$1" && cd "$1" && pwd); N=${2:-5000}
SERVER=${SERVER:-sluicegate}
D=$(mktemp -d /tmp/sg-st-XXXX); chmod 755 "$D"
cd "$WT/benchmarks"
python3 -c "
import sys; sys.path.insert(0,'apps'); sys.path.insert(0,'.')
from bench import s19; print(s19.ini_text('s6_hello', 1))" > "$D/uwsgi.ini"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c "
import sys; sys.path.insert(0,'apps'); sys.path.insert(0,'.')
from bench import s16; print(s16.nginx_conf('$D', {('x','uwsgi-unix'): ($PORT, 'unix:$D/app.sock')}))" > "$D/nginx.conf"
if [ "$SERVER" = uwsgi ]; then CMD=("$WT/benchmarks/.venv/bin/uwsgi" --ini "$D/uwsgi.ini")
else CMD=("$WT/.venv/bin/python" -m sluicegate.uwsgi_cli --ini "$D/uwsgi.ini"); fi
cd "$WT/benchmarks/apps"
"${CMD[@]}" > "$OUT/server-$SERVER.log" 2>&1 &
SP=$!
for _ in $(seq 1 600); do [ -S "$D/app.sock" ] && break; sleep 0.2; done
nginx -c "$D/nginx.conf" -p "$D" > /dev/null 2>&1 &
NP=$!
URL="http://127.0.0.1:$PORT/"
for _ in $(seq 1 600); do curl -s -o /dev/null "$URL" && break; sleep 0.2; done
ab -q -k -c8 -n 1000 "$URL" > /dev/null
WP=$(pgrep -P "$SP" | tail -1); [ -z "$WP" ] && WP=$SP
echo "worker $WP"
TRACER=${TRACER:-perf}
if [ "$TRACER" = record ]; then
  perf record -e cpu-clock -F 20000 -g -p "$WP" -o "$OUT/$TRACER-$SERVER.data" > /dev/null 2>&1 &
elif [ "$TRACER" = seq ]; then
  (timeout -s INT 2.5 strace -f -tt -p "$WP" $(ls /proc/$WP/task | grep -v "^$WP$" | sed 's/^/-p /') -o "$OUT/$TRACER-$SERVER.txt"; sleep 100) &
elif [ "$TRACER" = strace ]; then
  strace -c -f -p "$WP" $(ls /proc/$WP/task | grep -v "^$WP$" | sed 's/^/-p /') -o "$OUT/$TRACER-$SERVER.txt" &
elif [ "$TRACER" = stat ]; then
  EV=raw_syscalls:sys_enter; for c in epoll_wait accept4 recvfrom read sendmsg writev close futex clock_nanosleep epoll_ctl shutdown getrusage poll; do EV="$EV,syscalls:sys_enter_$c"; done
  perf stat -e "$EV" -p "$WP" -o "$OUT/$TRACER-$SERVER.txt" > /dev/null 2>&1 &
else
  perf trace -s -p "$WP" -o "$OUT/$TRACER-$SERVER.txt" > /dev/null 2>&1 &
fi
TP=$!
sleep 1
if [ -n "${WRK_SECONDS:-}" ]; then
  wrk -t1 -c64 -d"${WRK_SECONDS}s" "$URL" > "$OUT/wrk-$SERVER.txt"
  N=$(awk '/requests in/ {print $1}' "$OUT/wrk-$SERVER.txt"); echo "wrk: $N requests"
else
  ab -q -k -c8 -n "$N" "$URL" | grep -E "^(Complete|Failed) requests"
fi
kill -INT "$TP"; wait "$TP" || true
kill -INT "$NP" 2>/dev/null || true
kill -INT "$SP"; wait "$SP" || true
python3 - "$OUT/$TRACER-$SERVER.txt" "$N" "$TRACER" <<'PY'
import re, sys
from collections import Counter
n = int(sys.argv[2]); calls = Counter(); errors = Counter()
for line in open(sys.argv[1]):
    if sys.argv[3] == "strace":
        p = line.split()
        if len(p) >= 5 and p[3].isdigit() and p[-1] != "total":
            calls[p[-1]] += int(p[3]); errors[p[-1]] += int(p[4]) if len(p) == 6 else 0
    elif sys.argv[3] == "stat":
        m = re.match(r"\s*([\d,]+)\s+\S*sys_enter_?(\w*)", line)
        if m:
            calls[m.group(2) or "ALL (raw_syscalls)"] += int(m.group(1).replace(",", ""))
    else:
        m = re.match(r"\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+[\d.]+\s", line)
        if m:
            calls[m.group(1)] += int(m.group(2)); errors[m.group(1)] += int(m.group(3))
print(f"per request ({n}): calls (failed)")
for name, c in calls.most_common():
    print(f"  {name:20s} {c/n:7.3f} ({errors[name]/n:.3f})")
if sys.argv[3] != "stat":
    print(f"  {'total':20s} {sum(calls.values())/n:7.3f}")
PY
rm -rf "$D"

#!/bin/bash
# S4's one client at a time: sluicegate (--spin auto, the default, and --spin off), uWSGI and
# bjoern side by side on S4's pong app; ab -c1 (a new connection each) and wrk -t1 -c1
# (keep-alive) with the server's CPU per request, then `perf sched` of ab -c1 against each:
# how long ab waited to run once woken (its scheduling delay).
set -e
cd "$(dirname "$0")/../../apps"
ROOT=$(cd ../.. && pwd)
VB=$ROOT/benchmarks/.venv/bin
OUT=${OUT:-$(dirname "$0")}
PYTHONPATH=. $ROOT/.venv/bin/python -m sluicegate --bind 127.0.0.1:9501 s4_pong:app > /tmp/s4-sg.log 2>&1 &
SG=$!
PYTHONPATH=. $ROOT/.venv/bin/python -m sluicegate --bind 127.0.0.1:9502 --spin off s4_pong:app > /tmp/s4-sgoff.log 2>&1 &
SGOFF=$!
$VB/uwsgi --master --die-on-term --http11-socket 127.0.0.1:9503 --processes 1 --threads 4 \
  --module s4_pong:app --chdir . --pythonpath . --disable-logging --listen 4096 --socket-timeout 75 \
  --buffer-size 32768 --need-app --tcp-nodelay > /tmp/s4-uw.log 2>&1 &
UW=$!
PYTHONPATH=. $VB/python $ROOT/benchmarks/run.py launch bjoern 9504 s4_pong:app --threads 4 --keepalive 75 > /tmp/s4-bj.log 2>&1 &
BJ=$!
sleep 3
UWP=$(pgrep -d+ -f "uwsgi.*9503")
trap 'kill $SG $SGOFF $BJ; kill -INT $UW' EXIT
cd "$ROOT/benchmarks"
python3 run.py ab-interleaved sg=9501,/pong,$SG sgoff=9502,/pong,$SGOFF uwsgi=9503,/pong,$UWP bjoern=9504,/pong,$BJ \
  --requests 5000 --rounds 6 | tee "$OUT/ab-c1.txt"
python3 run.py wrk-cpu sg=9501,/pong,$SG sgoff=9502,/pong,$SGOFF uwsgi=9503,/pong,$UWP bjoern=9504,/pong,$BJ \
  --conns 1 --seconds 3 --rounds 5 | tee "$OUT/wrk-c1.txt"
for t in sg:9501 sgoff:9502 uwsgi:9503 bjoern:9504; do
  perf sched record -q -o /tmp/s4-$t.sched -- ab -q -c1 -n3000 http://127.0.0.1:${t#*:}/pong > /dev/null 2>&1
  perf sched timehist -i /tmp/s4-$t.sched 2>/dev/null | awk -v T=${t%:*} '$3 ~ /^ab\[/ {n++; s+=$5; if ($5 > 0.010) big++}
    END {printf "%-7s ab woken %d times: scheduling delay mean %.1f us, %.0f%% of them over 10 us\n", T, n, s/n*1000, 100*big/n}'
done | tee "$OUT/ab-sched-delay.txt"

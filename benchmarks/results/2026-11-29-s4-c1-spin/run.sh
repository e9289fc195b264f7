#!/bin/bash
# S4 `ab -c1` (a new connection per request): sluicegate with its defaults, with `--spin off`, and
# a build whose spin looks for events up to 100 µs (spin100.diff applied, the build's python/
# copied to SPIN100 with the wrapper SPIN100/python), beside uWSGI (as in S4: --http11-socket,
# 4 threads), 6 interleaved rounds of 5,000 requests, the servers' CPU per request from /proc.
set -e
cd "$(dirname "$0")/../../apps"
ROOT=$(cd ../.. && pwd)
OUT=$ROOT/benchmarks/results/2026-11-29-s4-c1-spin
VB=$ROOT/benchmarks/.venv/bin
PYTHONPATH=. $ROOT/.venv/bin/python -m sluicegate --bind 127.0.0.1:9511 s4_pong:app > /tmp/s4-a.log 2>&1 &
A=$!
PYTHONPATH=. $ROOT/.venv/bin/python -m sluicegate --bind 127.0.0.1:9512 --spin off s4_pong:app > /tmp/s4-b.log 2>&1 &
B=$!
PYTHONPATH=. "$SPIN100/python" -m sluicegate --bind 127.0.0.1:9513 s4_pong:app > /tmp/s4-c.log 2>&1 &
C=$!
$VB/uwsgi --master --die-on-term --http11-socket 127.0.0.1:9503 --processes 1 --threads 4 \
  --module s4_pong:app --chdir . --pythonpath . --disable-logging --listen 4096 --socket-timeout 75 \
  --buffer-size 32768 --need-app --tcp-nodelay > /tmp/s4-uw.log 2>&1 &
UW=$!
sleep 3
UWP=$(pgrep -d+ -f "uwsgi.*9503")
trap 'kill $A $B $C; kill -INT $UW' EXIT
cd "$ROOT/benchmarks"
python3 run.py ab-interleaved main=9511,/pong,$A spin-off=9512,/pong,$B spin-100us=9513,/pong,$C \
  uwsgi=9503,/pong,$UWP --requests 5000 --rounds 6 | tee "$OUT/ab-c1.txt"

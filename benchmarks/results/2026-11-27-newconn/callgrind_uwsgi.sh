#!/usr/bin/env bash
# User-space instructions per connection of uWSGI serving S4's pong to `ab -c1` without
# keep-alive (a new connection per request), counted by callgrind as benchmarks/callgrind_hello.sh
# counts sluicegate's: 500 connections of warm-up, counters zeroed, 3,000 counted, dumped.
# No --master, so that the process under valgrind is the worker; the suite's other settings
# (benchmarks/servers.py `_uwsgi`).
#   sh benchmarks/results/2026-11-27-newconn/callgrind_uwsgi.sh OUT_DIR THREADS PORT
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=$1; THREADS=$2; PORT=$3
APPS=$ROOT/benchmarks/apps
mkdir -p "$OUT"; cd "$APPS"
PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
  --compress-strings=no --compress-pos=no \
  "$ROOT/benchmarks/.venv/bin/uwsgi" --http11-socket "127.0.0.1:$PORT" --processes 1 \
  --threads "$THREADS" --module s4_pong:app --chdir "$APPS" --pythonpath "$APPS" \
  --disable-logging --listen 4096 --socket-timeout 120 --buffer-size 32768 --need-app \
  --tcp-nodelay > "$OUT/server.log" 2>&1 &
VP=$!
for _ in $(seq 1 1200); do curl -s -o /dev/null "http://127.0.0.1:$PORT/pong" && break; sleep 0.5; done
ab -q -c1 -n 500 "http://127.0.0.1:$PORT/pong" > /dev/null
callgrind_control -z "$VP" > /dev/null 2>&1
ab -q -c1 -n 3000 "http://127.0.0.1:$PORT/pong" | grep -E "^(Complete|Failed) requests"
callgrind_control -d "$VP" > /dev/null 2>&1
sleep 1
kill -INT "$VP"; wait "$VP"
python3 "$ROOT/benchmarks/run.py" callgrind-top "$(ls -t "$OUT"/callgrind.out.* | head -1)" 3000 \
  | tee "$OUT/top.txt" | head -25

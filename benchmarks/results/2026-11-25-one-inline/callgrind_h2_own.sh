#!/usr/bin/env bash
# Instructions per HTTP/2 request answered by the loop itself (a static file, the health path),
# counted by callgrind as benchmarks/results/2026-11-25-one-loop/callgrind_h2.sh counts the
# hello world's: h2load -cCLIENTS -mSTREAMS on URL_PATH, sluicegate started with the options
# after the stream count.
#   SLUICEGATE_PY=/build/.venv/bin/python URL_PATH=/healthz callgrind_h2_own.sh OUT 16 10 --health-path /healthz
# Warms with 2,000 requests, zeroes, counts N (20,000) requests.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$HERE/../..
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
PY=${SLUICEGATE_PY:-$BENCH/../.venv/bin/python}
C=${2:-16}; M=${3:-10}; N=${REQUESTS:-20000}
shift 3
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT${URL_PATH:-/}"
cd "$BENCH/apps"
PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
  --compress-strings=no --compress-pos=no \
  "$PY" -m sluicegate --bind "127.0.0.1:$PORT" --http2 on "$@" s6_hello:app > "$OUT/server.log" 2>&1 &
VP=$!
for _ in $(seq 1 240); do curl -s -o /dev/null "$URL" && break; sleep 0.5; done
h2load -c"$C" -m"$M" -n 2000 "$URL" > /dev/null
callgrind_control -z "$VP" > /dev/null 2>&1
h2load -c"$C" -m"$M" -n "$N" "$URL" | grep -E "^requests:"
callgrind_control -d "$VP" > /dev/null 2>&1
sleep 1
kill -INT "$VP"; wait "$VP" || true
python3 "$BENCH/run.py" callgrind-top "$(ls -t "$OUT"/callgrind.out.* | head -1)" "$N" | tee "$OUT/top.txt" | head -12

#!/usr/bin/env bash
# benchmarks/callgrind_h3.sh — user-space instructions per HTTP/3 hello-world request (S6's app),
# counted by valgrind's callgrind, as callgrind_hello.sh counts HTTP/1.1's: sluicegate with
# `--bind https: --http3` under callgrind, warmed with 500 requests of h3load, counters zeroed,
# N more requests (h3load -cC -mM: S17b's shape, fewer connections), dumped; prints the total per
# request and the top functions by their own cost (all threads; PYTHONHASHSEED=0).
#
# Usage: benchmarks/callgrind_h3.sh OUT_DIR
#        SLUICEGATE_PY=/other/.venv/bin/python PYTHONPATH=/copy/of/python benchmarks/callgrind_h3.sh OUT_DIR
#        REQUESTS=3000 CONNS=4 STREAMS=10 benchmarks/callgrind_h3.sh OUT_DIR (the defaults)
# h3load: benchmarks/h3load/target/release/h3load (cargo build --release --manifest-path
# benchmarks/h3load/Cargo.toml).
set -euo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
OUT=$(mkdir -p "$1" && cd "$1" && pwd); shift
PY=${SLUICEGATE_PY:-$BENCH/../.venv/bin/python}
H3LOAD=${H3LOAD:-$BENCH/h3load/target/release/h3load}
N=${REQUESTS:-3000}
C=${CONNS:-4}
M=${STREAMS:-10}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="https://127.0.0.1:$PORT/"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2> /dev/null
cd "$BENCH/apps"
PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
  --compress-strings=no --compress-pos=no \
  "$PY" -m sluicegate --bind "https:127.0.0.1:$PORT" --certfile "$OUT/cert.pem" \
  --keyfile "$OUT/key.pem" --http3 "$@" s6_hello:app > "$OUT/server.log" 2>&1 &
VP=$!
for _ in $(seq 1 240); do "$H3LOAD" -n 1 --timeout 2 "$URL" > /dev/null 2>&1 && break; sleep 0.5; done
"$H3LOAD" -c"$C" -m"$M" -n 500 "$URL" > /dev/null
callgrind_control -z "$VP" > /dev/null 2>&1
"$H3LOAD" -c"$C" -m"$M" -n "$N" --expect-body-len 13 "$URL" | grep -E "^requests:|^errors:"
callgrind_control -d "$VP" > /dev/null 2>&1
sleep 1
kill -INT "$VP"; wait "$VP" || true
python3 "$BENCH/run.py" callgrind-top "$(ls -t "$OUT"/callgrind.out.* | head -1)" "$N" | tee "$OUT/top.txt" | head -25

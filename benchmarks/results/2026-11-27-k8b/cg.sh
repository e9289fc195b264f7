#!/usr/bin/env bash
# cg.sh OUT [server options]: callgrind_hello.sh's FETCH mode with the control commands' output kept and the -d dump used.
set -euo pipefail
BENCH=/work/wt/k8b/benchmarks
OUT=$(mkdir -p "$1" && cd "$1" && pwd); shift
PY=/work/wt/k8b/.venv/bin/python
N=${REQUESTS:-40}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT${URL_PATH:-/8192}"
cd "$BENCH/apps"
PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
  --compress-strings=no --compress-pos=no \
  "$PY" -m sluicegate --bind "127.0.0.1:$PORT" "$@" "${APP:-s3_stream:app}" > "$OUT/server.log" 2>&1 &
VP=$!
for _ in $(seq 1 1200); do curl -sk -o /dev/null "$URL" && break; sleep 0.5; done
fetch() {
  (cd "$BENCH" && python3 -c 'import sys; from bench import rawhttp
c = rawhttp.Connection(int(sys.argv[1])); n = int(sys.argv[3])
bad = sum(c.request("GET", sys.argv[2], keep_body=False).status != 200 for _ in range(n))
print(f"Complete requests: {n}"); print(f"Failed requests: {bad}")' "$PORT" "${URL_PATH:-/8192}" "$1")
}
fetch "${WARM:-4}" > /dev/null
callgrind_control -z "$VP"
fetch "$N"
callgrind_control -d "$VP"
sleep 1
kill -INT "$VP"; wait "$VP" || true
python3 "$BENCH/run.py" callgrind-top "$OUT/callgrind.out.1" $N > "$OUT/top.txt"
head -3 "$OUT/top.txt"

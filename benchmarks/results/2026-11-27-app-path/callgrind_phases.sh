#!/usr/bin/env bash
# The probe behind README.md: one sluicegate under callgrind (app_path_probe.py: every case's app
# behind one server), and each case counted in turn: warm, zero the counters, send, dump. Prints
# per case the server's instructions per request (all threads) and writes OUT/CASE.top.txt
# (`run.py callgrind-top`). The dumps stay in OUT (not committed).
#
# Usage: benchmarks/results/2026-11-27-app-path/callgrind_phases.sh OUT_DIR [CASE...]
#        PYTHONPATH=/copy/of/base/python ...   (another build's `sluicegate` first: the before)
#        KEEP=1 ... leaves the server running; ATTACH="PID PORT" ... counts on it again
# Cases: s6 (hello world, ab -k -c8), s2 (/read/file_21324.bin, ab -k -c8), s1 (/list/688128,
# one keep-alive connection), s3 (/8192, one keep-alive connection, chunked), s3small (/128).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$(cd "$HERE/../.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd); shift
CASES=("$@"); [ ${#CASES[@]} = 0 ] && CASES=(s6 s2 s1 s3 s3small)
PY=${SLUICEGATE_PY:-$BENCH/../.venv/bin/python}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
shopt -s nullglob
cd "$BENCH/apps"
if [ -n "${ATTACH:-}" ]; then  # ATTACH="PID PORT": a server this script started before
  read -r VP PORT <<< "$ATTACH"
else
  PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$HERE" PYTHONHASHSEED=0 valgrind --tool=callgrind \
    --callgrind-out-file="$OUT/callgrind.out" --compress-strings=no --compress-pos=no \
    "$PY" -m sluicegate --bind "127.0.0.1:$PORT" app_path_probe:app > "$OUT/server.log" 2>&1 &
  VP=$!
  echo "server: ATTACH=\"$VP $PORT\""
fi
for _ in $(seq 1 1200); do curl -s -o /dev/null "http://127.0.0.1:$PORT/s6/" && break; sleep 0.5; done
fetch() {  # PATH N: N requests on one keep-alive connection (the suite's client)
  (cd "$BENCH" && python3 -c 'import sys; from bench import rawhttp
c = rawhttp.Connection(int(sys.argv[1])); n = int(sys.argv[3])
bad = sum(c.request("GET", sys.argv[2], keep_body=False).status != 200 for _ in range(n))
print(f"{n} requests, {bad} failed")' "$PORT" "$1" "$2")
}
load() {  # KIND PATH N
  case $1 in
    ab) ab -q -k -c8 -n "$3" "http://127.0.0.1:$PORT$2" | grep -E "^(Complete|Failed) requests" | tr '\n' ' '; echo ;;
    fetch) fetch "$2" "$3" ;;
  esac
}
for c in "${CASES[@]}"; do
  case $c in
    s6) spec=(ab /s6/ 1000 10000) ;;
    s2) spec=(ab /s2/read/file_21324.bin 200 2000) ;;
    s1) spec=(fetch /s1/list/688128 20 200) ;;
    s3) spec=(fetch /s3/8192 4 40) ;;
    s3small) spec=(fetch /s3/128 2 10) ;;
  esac
  load "${spec[0]}" "${spec[1]}" "${spec[2]}" > /dev/null
  until callgrind_control -z "$VP" > /dev/null 2>&1; do sleep 1; done
  echo -n "$c ${spec[1]}: "; load "${spec[0]}" "${spec[1]}" "${spec[3]}"
  dumps=("$OUT"/callgrind.out.*)
  until callgrind_control -d "$VP" > /dev/null 2>&1; do sleep 1; done
  while now=("$OUT"/callgrind.out.*) && [ ${#now[@]} = ${#dumps[@]} ]; do sleep 0.5; done
  sleep 1
  dump=$(ls -t "$OUT"/callgrind.out.* | head -1)
  mv "$dump" "$OUT/$c.callgrind.out"
  python3 "$BENCH/run.py" callgrind-top "$OUT/$c.callgrind.out" "${spec[3]}" > "$OUT/$c.top.txt"
  echo "  $(head -1 "$OUT/$c.top.txt")"
done
[ -n "${KEEP:-}" ] || { kill -INT "$VP"; wait "$VP" || true; }

#!/usr/bin/env bash
# benchmarks/callgrind_hello.sh — user-space instructions per hello-world request (S6's app),
# counted by valgrind's callgrind: repeatable whatever the machine's noise. Starts sluicegate
# under callgrind, warms it with 2,000 requests (ab -k -c8), zeroes the counters, sends 20,000
# more (WARM and REQUESTS change the two), dumps, and prints the total per request and the top
# functions by their own cost (all threads; PYTHONHASHSEED=0 so dict layouts repeat; Python's own
# allocator, as in production). The server may take minutes to start under valgrind on a busy
# machine: it is waited for up to 10.
#
# Usage: python3 benchmarks/run.py callgrind OUT_DIR [--python PY] [--concurrency N] [--app APP --path P] [--tls]
#        (run.py sets the variables below and calls this script; it stays a shell script), or:
#        benchmarks/callgrind_hello.sh OUT_DIR [sluicegate options...]
#        SLUICEGATE_PY=/other/build/.venv/bin/python benchmarks/callgrind_hello.sh OUT_DIR
#        CONCURRENCY=1 benchmarks/callgrind_hello.sh OUT_DIR   (ab's -c; default 8)
#        NEW_CONNECTIONS=1 benchmarks/callgrind_hello.sh OUT_DIR   (ab without -k: a new
#          connection per request, HTTP/1.0, so the count is per connection: accept to close)
#        APP=s2_static:app URL_PATH=/read/file_21324.bin benchmarks/callgrind_hello.sh OUT_DIR
#          (another app of benchmarks/apps and the path to request; default S6's hello world)
#        TLS=1 benchmarks/callgrind_hello.sh OUT_DIR   (over HTTPS: an ECDSA P-256 certificate
#          made in OUT_DIR, `--bind https:`, ab over TLS on kept connections; the handshakes of
#          ab's 8 connections fall inside the counted window, about 1,600 instructions a request
#          at N=5000)
#        FETCH=1 REQUESTS=200 WARM=20 APP=s3_stream:app URL_PATH=/8192 benchmarks/callgrind_hello.sh OUT_DIR
#          (one keep-alive HTTP/1.1 connection fetching one request after the other with the
#          suite's client, bench/rawhttp.py, as S1 and S3 fetch: chunked bodies, which ab's
#          HTTP/1.0 requests never get)
#        PYTHONPATH=/copy/of/python benchmarks/callgrind_hello.sh OUT_DIR   (another build's
#          `sluicegate` package first on the path: a before/after with one venv)
# Under valgrind the server runs ~50x slower than ab, so with -c8 all eight connections have a
# request waiting whenever the loop looks: the loop runs them in one attach (one GIL take per
# batch). -c1 is the other end: one request per attach.
set -euo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
OUT=$(mkdir -p "$1" && cd "$1" && pwd); shift
PY=${SLUICEGATE_PY:-$BENCH/../.venv/bin/python}
N=${REQUESTS:-20000}
C=${CONCURRENCY:-8}
APP=${APP:-s6_hello:app}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT${URL_PATH:-/}"
BIND=(--bind "127.0.0.1:$PORT")
if [ "${TLS:-0}" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2> /dev/null
  URL="https://127.0.0.1:$PORT${URL_PATH:-/}"
  BIND=(--bind "https:127.0.0.1:$PORT" --certfile "$OUT/cert.pem" --keyfile "$OUT/key.pem")
fi
cd "$BENCH/apps"
PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
  --compress-strings=no --compress-pos=no \
  "$PY" -m sluicegate "${BIND[@]}" "$@" "$APP" > "$OUT/server.log" 2>&1 &
VP=$!
for _ in $(seq 1 1200); do curl -sk -o /dev/null "$URL" && break; sleep 0.5; done
KEEP=(-k)
[ "${NEW_CONNECTIONS:-0}" = 1 ] && KEEP=()
fetch() {  # N requests on one keep-alive connection (FETCH=1), every answer checked for its status
  (cd "$BENCH" && python3 -c 'import sys; from bench import rawhttp
c = rawhttp.Connection(int(sys.argv[1])); n = int(sys.argv[3])
bad = sum(c.request("GET", sys.argv[2], keep_body=False).status != 200 for _ in range(n))
print(f"Complete requests: {n}"); print(f"Failed requests: {bad}")' "$PORT" "${URL_PATH:-/}" "$1")
}
if [ "${FETCH:-0}" = 1 ]; then
  fetch "${WARM:-200}" > /dev/null
  callgrind_control -z "$VP" > "$OUT/zero.log" 2>&1 || { cat "$OUT/zero.log" >&2; exit 1; }
  fetch "$N"
else
  ab -q "${KEEP[@]}" -c"$C" -n "${WARM:-2000}" "$URL" > /dev/null
  callgrind_control -z "$VP" > "$OUT/zero.log" 2>&1 || { cat "$OUT/zero.log" >&2; exit 1; }
  ab -q "${KEEP[@]}" -c"$C" -n $N "$URL" | grep -E "^(Complete|Failed) requests"
fi
# The dump of the counted requests is the file `-d` adds (the one written at exit is not it).
BEFORE=$(LC_ALL=C ls "$OUT"/callgrind.out.* 2> /dev/null || true)
callgrind_control -d "$VP" > "$OUT/dump.log" 2>&1 || { cat "$OUT/dump.log" >&2; exit 1; }
DUMP=$(LC_ALL=C comm -13 <(echo "$BEFORE") <(LC_ALL=C ls "$OUT"/callgrind.out.*) | head -1)
[ -n "$DUMP" ] || { echo "callgrind_hello.sh: no dump after callgrind_control -d" >&2; exit 1; }
sleep 1
kill -INT "$VP"; wait "$VP" || true
python3 "$BENCH/run.py" callgrind-top "$DUMP" $N | tee "$OUT/top.txt" | head -25

#!/usr/bin/env bash
# System calls per HTTP/2 hello-world request (S6's app over h2c, h2load -c16 -m10), counted
# by `strace -c -f` attached to every thread of a running sluicegate.
#   strace_h2.sh PYTHON OUT_FILE [REQUESTS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$1; OUT=$2; N=${3:-20000}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cd "$HERE/../../apps"
"$PY" -m sluicegate --bind "127.0.0.1:$PORT" s6_hello:app > /dev/null 2>&1 &
SP=$!
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.2; done
h2load -c16 -m10 -n 2000 "http://127.0.0.1:$PORT/" > /dev/null
strace -c -f -p "$SP" -o "$OUT" &
ST=$!
sleep 1
h2load -c16 -m10 -n "$N" "http://127.0.0.1:$PORT/" | grep -E "^requests:"
sleep 0.5
kill -INT "$ST"; wait "$ST" || true
kill -INT "$SP"; wait "$SP" || true
awk -v n="$N" '/^ *[0-9]/ && $NF != "total" {printf "%-16s %8.3f per request\n", $NF, $4/n}' "$OUT" | sort -k2 -nr | head -12
awk -v n="$N" '$NF=="total" {printf "total            %8.3f per request\n", $3/n}' "$OUT"

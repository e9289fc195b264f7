#!/usr/bin/env bash
# Instructions per request of the S19 path under callgrind: SERVER=sluicegate|uwsgi, the S19 ini
# (processes = 1, master), nginx (one worker) in front with uwsgi_pass over the unix socket.
# Usage: WT=/work/wt/s19 SERVER=sluicegate cg_s19.sh OUT [N]
set -euo pipefail
WT=${WT:-/work/wt/s19}
OUT=$(mkdir -p "$1" && cd "$1" && pwd); N=${2:-3000}
SERVER=${SERVER:-sluicegate}
D=$(mktemp -d /tmp/sg-cg-XXXX); chmod 755 "$D"
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
PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out.%p" \
  --compress-strings=no --compress-pos=no "${CMD[@]}" > "$OUT/server.log" 2>&1 &
VP=$!
for _ in $(seq 1 1200); do [ -S "$D/app.sock" ] && break; sleep 0.5; done
nginx -c "$D/nginx.conf" -p "$D" > /dev/null 2>&1 &
NP=$!
URL="http://127.0.0.1:$PORT/"
for _ in $(seq 1 1200); do curl -s -o /dev/null "$URL" && break; sleep 0.5; done
ab -q -k -c8 -n 500 "$URL" > /dev/null
# the worker: the youngest process under valgrind's
WP=$(pgrep -P "$VP" | tail -1); [ -z "$WP" ] && WP=$VP
echo "worker $WP"
ab -q -k -c8 -n "$N" "$URL" | grep -E "^(Complete|Failed) requests"
sleep 2
kill -INT "$NP" 2>/dev/null || true
kill -INT "$VP"; wait "$VP" || true
callgrind_annotate --auto=no --threshold=100 "$OUT/callgrind.out.$WP" > "$OUT/annot.txt" 2>/dev/null || true
grep -A3 "^==$WP== Events" "$OUT/server.log" | grep Collected
rm -rf "$D"

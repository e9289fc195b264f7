#!/bin/sh
# The interleaved run of this folder's README: S4 (pong, 15 headers) at one client, S6 (hello
# world) at 16 and 100, the build before (`sluicegate-base`, SLUICEGATE_BASE_PY) beside this
# one and the peers. Every server and load generator runs at nice -10 (the machine is shared).
# Usage: SLUICEGATE_BASE_PY=/path/to/base/python sh run.sh OUTDIR [ROUNDS]
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=$1; rounds=${2:-3}
mkdir -p "$out"
cd "$repo"
start() {  # APP SERVERS...: start them, wait for their NAME=PORT,PATH,PID lines
    list=$out/$1.targets
    nice -n -10 python3 "$here/start.py" "$@" > "$list" &
    echo $! > "$out/$1.pid"
    n=$(($# - 1))
    while [ "$(wc -l < "$list")" -lt "$n" ]; do sleep 0.5; done
}
stop() { kill "$(cat "$out/$1.pid")"; wait "$(cat "$out/$1.pid")" 2>/dev/null || true; }

start s4_pong sluicegate-base sluicegate "sluicegate/off:--spin off" uwsgi bjoern granian
uptime | tee "$out/s4.load"
nice -n -10 python3 benchmarks/run.py wrk-cpu --conns 1 --seconds 5 --rounds "$rounds" \
    $(cat "$out/s4_pong.targets") | tee "$out/s4-wrk-c1.txt"
nice -n -10 python3 benchmarks/run.py ab-interleaved --requests 20000 --rounds "$rounds" \
    $(cat "$out/s4_pong.targets") | tee "$out/s4-ab-c1.txt"
uptime | tee -a "$out/s4.load"
stop s4_pong

start s6_hello sluicegate-base sluicegate uwsgi
uptime | tee "$out/s6.load"
nice -n -10 python3 benchmarks/run.py wrk-cpu --conns 16,100 --threads 2 --seconds 5 \
    --rounds "$rounds" $(cat "$out/s6_hello.targets") | tee "$out/s6-wrk-t2.txt"
uptime | tee -a "$out/s6.load"
stop s6_hello

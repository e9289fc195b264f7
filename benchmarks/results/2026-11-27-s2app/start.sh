#!/bin/bash
# start.sh NAME PORT PY APP [extra args] -> prints the server's pid (granian: its master's)
# The suite's settings for each server (benchmarks/servers.py), started by hand so that
# run.py wrk-cpu can measure them side by side.
B=$(cd "$(dirname "$0")/../.." && pwd)
cd "$B/apps"
N=$1; P=$2; PY=$3; A=$4; shift 4
mkdir -p /tmp/s2a
case $N in
 sg*) PYTHONPATH=$B/apps $PY -m sluicegate --bind 127.0.0.1:$P "$@" $A > /tmp/s2a/$N-$P.log 2>&1 & echo $! ;;
 granian) PYTHONPATH=$B/apps $B/.venv/bin/granian --interface wsgi --host 127.0.0.1 --port $P --workers 1 --blocking-threads 4 --http 1 --no-ws --backlog 4096 --backpressure 19000 --log-level warning --no-access-log --working-dir $B/apps $A > /tmp/s2a/$N-$P.log 2>&1 & echo $! ;;
esac

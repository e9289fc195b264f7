#!/bin/bash
# start.sh NAME PORT PY APP [extra args] -> prints pid (the suite's settings, benchmarks/servers.py)
B=/work/main/benchmarks
cd $B/apps
N=$1; P=$2; PY=$3; A=$4; shift 4
case $N in
 sg*) PYTHONPATH=$B/apps $PY -m sluicegate --bind 127.0.0.1:$P "$@" $A > /tmp/s2two/$N-$P.log 2>&1 & echo $! ;;
 granian) PYTHONPATH=$B/apps $B/.venv/bin/granian --interface wsgi --host 127.0.0.1 --port $P --workers 1 --blocking-threads 4 --http 1 --no-ws --backlog 4096 --backpressure 19000 --log-level warning --no-access-log --working-dir $B/apps $A > /tmp/s2two/$N-$P.log 2>&1 & echo $! ;;
esac

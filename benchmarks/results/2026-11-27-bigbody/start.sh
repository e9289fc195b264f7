#!/bin/bash
# start.sh NAME PORT PY APP [extra args] -> prints pid
B=/work/wt/bigbody/benchmarks
cd $B/apps
N=$1; P=$2; PY=$3; A=$4; shift 4
case $N in
 sg*) PYTHONPATH=${BASE_PP:+$BASE_PP:}$B/apps $PY -m sluicegate --bind 127.0.0.1:$P "$@" $A > /tmp/bb/$N-$P.log 2>&1 & echo $! ;;
 granian) PYTHONPATH=$B/apps $B/.venv/bin/granian --interface wsgi --host 127.0.0.1 --port $P --workers 1 --blocking-threads 4 --http 1 --no-ws --backlog 4096 --backpressure 19000 --log-level warning --no-access-log --working-dir $B/apps $A > /tmp/bb/$N-$P.log 2>&1 & echo $! ;;
 uwsgi) PYTHONPATH=$B/apps $B/.venv/bin/uwsgi --master --die-on-term --http11-socket 127.0.0.1:$P --processes 1 --threads 4 --module $A --chdir $B/apps --pythonpath $B/apps --disable-logging --listen 4096 --socket-timeout 120 --buffer-size 32768 --need-app --tcp-nodelay > /tmp/bb/$N-$P.log 2>&1 & echo $! ;;
esac

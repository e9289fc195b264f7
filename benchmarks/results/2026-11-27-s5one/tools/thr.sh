#!/bin/bash
# thr.sh sluicegate|granian PORT: one server, 3 s warm-up unconstrained, then in the 1.5 CPU cgroup: per-thread-name switches and CPU over 4 s of wrk -c1000
WHO=$1; PORT=$2
cd /work/wt/s5one/benchmarks/apps
if [ $WHO = sluicegate ]; then S5ONE_OLD=1 /work/wt/s5one/.venv/bin/python -m sluicegate --bind 127.0.0.1:$PORT --threads 16:1000 s5_sleepy:app > /tmp/s5one/srv-$WHO.log 2>&1 &
else /work/main/benchmarks/.venv/bin/granian --interface wsgi --host 127.0.0.1 --port $PORT --workers 1 --blocking-threads 1000 --http 1 --no-ws --backlog 4096 --backpressure 10000 --log-level warning --no-access-log s5_sleepy:app > /tmp/s5one/srv-$WHO.log 2>&1 & fi
sleep 3; P=$(pgrep -f "$PORT" | grep -v $$ | head -1); PIDS=$(pgrep -f "port $PORT|bind 127.0.0.1:$PORT")
wrk -t1 -c1000 -d3s http://127.0.0.1:$PORT/ >/dev/null
for p in $PIDS; do for t in /proc/$p/task/*; do echo ${t##*/} > /sys/fs/cgroup/cpu/s5one-t/tasks 2>/dev/null; done; done
(wrk -t1 -c1000 -d6s http://127.0.0.1:$PORT/ > /tmp/s5one/w-$WHO.txt &); sleep 1
for p in $PIDS; do echo "pid $p"; python3 /work/main/benchmarks/results/2026-11-27-s5cg/tools/threads.py $p 4 | grep -v top; done
sleep 2; grep Requests/sec /tmp/s5one/w-$WHO.txt; kill $PIDS

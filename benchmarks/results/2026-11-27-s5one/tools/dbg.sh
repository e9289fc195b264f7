#!/bin/bash
# dbg.sh PY: sluicegate with S5ONE_DEBUG: 5 s unconstrained, then 2 x 5 s in a 1.5 CPU cgroup
PY=$1; PORT=${2:-18555}
cd /work/wt/s5one/benchmarks/apps
S5ONE_DEBUG=1 $PY -m sluicegate --bind 127.0.0.1:$PORT --threads 16:1000 s5_sleepy:app > /tmp/s5one/srv.log 2>&1 &
sleep 2; P=$(pgrep -f "bind 127.0.0.1:$PORT" | head -1)
cpu() { awk '{print $14+$15}' /proc/$P/stat; }
run() { c0=$(cpu); wrk -t1 -c1000 -d5s http://127.0.0.1:$PORT/ > /tmp/s5one/w.txt; c=$(cpu); r=$(awk '/Requests\/sec/{print $2}' /tmp/s5one/w.txt); echo "$1 req/s $r cores $(echo "($c-$c0)/500" | bc -l | cut -c1-4) $(grep -E '^\s+Latency' /tmp/s5one/w.txt | tr -s ' ')"; }
run none
for t in /proc/$P/task/*; do echo ${t##*/} > /sys/fs/cgroup/cpu/s5one-t/tasks; done
: > /tmp/s5one/srv.log
run 1.5a
for t in /proc/$P/task/*; do echo ${t##*/} > /sys/fs/cgroup/cpu/s5one-t/tasks 2>/dev/null; done
run 1.5b
kill $P

#!/bin/bash
# $1 python  $2 port
cd /work/main/benchmarks/apps
$1 -m sluicegate --bind 127.0.0.1:$2 --no-control-socket s5_sleepy:app >/tmp/s5srv-$2.log 2>&1 &
SP=$!; sleep 2.5
P0=$(awk '{print $14+$15}' /proc/$SP/stat)
wrk -t1 -c1000 -d5s --timeout 5s http://127.0.0.1:$2/ 2>&1 | grep -E "Requests/sec|timeout|Socket" | tr '\n' ' '
P1=$(awk '{print $14+$15}' /proc/$SP/stat)
echo " cpu_ticks $((P1-P0))"
kill $SP; wait $SP 2>/dev/null

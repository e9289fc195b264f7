#!/bin/bash
cd /work/main/benchmarks/apps
$1 -m sluicegate --bind 127.0.0.1:$2 --no-control-socket s6_hello:app >/dev/null 2>&1 &
SP=$!; sleep 2
P0=$(awk '{print $14+$15}' /proc/$SP/stat)
R=$(wrk -t1 -c64 -d4s http://127.0.0.1:$2/ 2>&1 | awk '/Requests\/sec/{print $2}')
P1=$(awk '{print $14+$15}' /proc/$SP/stat)
echo "$R req/s  cpu_us/req $(python3 -c "print(round(($P1-$P0)*1e4/($R*4),1))")"
kill $SP; wait $SP 2>/dev/null

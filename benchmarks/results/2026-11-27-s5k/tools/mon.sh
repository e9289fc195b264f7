#!/bin/bash
# mon.sh PYTHON SECS: sluicegate (S5 app, --threads 16:1000, --metrics-bind) under wrk -c1000; room and threads every 0.5 s
PY=$1; S=$2; P=18911; MP=18912
cd /work/wt/s5k/benchmarks/apps
$PY -m sluicegate --bind 127.0.0.1:$P --threads 16:1000 --metrics-bind 127.0.0.1:$MP s5_sleepy:app > /tmp/s5k/mon-server.log 2>&1 &
SP=$!
for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$P/ && break; sleep 0.2; done
(wrk -t1 -c1000 -d${S}s --timeout 2s http://127.0.0.1:$P/ > /tmp/s5k/mon-wrk.txt &)
for i in $(seq 1 $((S*2))); do sleep 0.5
  echo "$(date +%S.%N | cut -c1-5) $(curl -s 127.0.0.1:$MP/metrics | grep -v '^#' | grep -E 'room|pool_threads|queue|pool_busy' | sed 's/sluicegate_//' | awk '{printf "%s=%s ", $1, $2}') cpu=$(awk '{print $14+$15}' /proc/$SP/stat)"
done
sleep 1.5; grep -E "Requests/sec|requests in|Socket" /tmp/s5k/mon-wrk.txt; kill $SP; wait $SP 2>/dev/null

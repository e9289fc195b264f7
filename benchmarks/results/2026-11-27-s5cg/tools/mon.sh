#!/bin/bash
# mon.sh PORT MPORT SECS PID: wrk -c1000 and the metrics each second, with CPU/request
P=$1; MP=$2; S=$3; PID=$4
(wrk -t1 -c1000 -d${S}s --timeout 5s http://127.0.0.1:$P/ > /tmp/s5cg/wm.txt &)
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
req() { curl -s 127.0.0.1:$MP/metrics | grep -E '^sluicegate_requests_total\{class="2' | awk '{print $2}'; }
sw() { cat /proc/$PID/task/*/status 2>/dev/null | awk '/^voluntary/{v+=$2} /^nonvoluntary/{n+=$2} END{print v, n}'; }
c0=$(cpu); r0=$(req); s0=$(sw)
for i in $(seq 1 $S); do sleep 1; c=$(cpu); r=$(req); s=$(sw)
  m=$(curl -s 127.0.0.1:$MP/metrics | grep -v "^#" | grep -E "^sluicegate_(pool_threads|pool_busy|admission_queue)" | sed 's/sluicegate_//' | awk '{printf "%s=%s ", $1, $2}')
  n=$((r-r0)); [ $n -gt 0 ] || n=1
  echo "req/s $((r-r0)) cpu_us/req $(( (c-c0)*10000/n )) $(echo $s $s0 | awk -v n=$n '{printf "vcsw/req %.1f ivcsw/req %.1f", ($1-$3)/n, ($2-$4)/n}') $m"
  c0=$c; r0=$r; s0=$s; done
sleep 1; grep -E "Requests/sec|requests in|Latency" /tmp/s5cg/wm.txt; cat /proc/loadavg

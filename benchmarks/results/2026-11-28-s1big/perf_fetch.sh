#!/bin/bash
# perf_fetch.sh NAME PID PORT PATH N: system calls per fetch of a running server (process, child
# processes, all threads) over N keep-alive fetches of PATH (fetchn.py), from the syscall
# tracepoints. Writes counts/perf-fetch-NAME.txt.
N=$1; PID=$2; PORT=$3; P=$4; K=$5
PIDS=$(echo $PID $(pgrep -P $PID) | tr ' ' ',')
EV=raw_syscalls:sys_enter
for s in sendfile64 sendmsg writev write sendto epoll_wait setsockopt futex clock_nanosleep; do EV="$EV,syscalls:sys_enter_$s"; done
python3 fetchn.py $PORT $P 2 > /dev/null
perf stat -x, -e $EV -p $PIDS -o /tmp/bf/perf-$N.csv & S=$!
sleep 1
T=$(python3 fetchn.py $PORT $P $K)
sleep 0.5; kill -INT $S; wait $S
{ echo "$N: $T"
  awk -F, -v r=$K '$1 ~ /^[0-9]+$/ {sub(/syscalls:sys_enter_|raw_syscalls:/, "", $3); printf "  %-18s %10.2f per fetch\n", $3, $1/r}' /tmp/bf/perf-$N.csv; } | tee counts/perf-fetch-$N.txt

#!/bin/bash
# perf_wrk.sh NAME PID PORT PATH [SECONDS]: system calls per request of a running server (its
# process and child processes, all threads) during one wrk -t1 -c100 run, from the syscall
# tracepoints (perf stat: far less overhead than strace). Writes counts/perf-wrk-NAME.txt.
N=$1; PID=$2; PORT=$3; P=$4; D=${5:-3}
PIDS=$(echo $PID $(pgrep -P $PID) | tr ' ' ',')
EV=raw_syscalls:sys_enter
for s in sendfile64 sendmsg writev write sendto fcntl close lseek newfstat newfstatat statx openat read recvfrom epoll_wait futex ioctl setsockopt accept4 epoll_ctl clock_nanosleep; do EV="$EV,syscalls:sys_enter_$s"; done
perf stat -x, -e $EV -p $PIDS -o /tmp/bf/perf-$N.csv -- sleep $((D+2)) & S=$!
sleep 1
wrk -t1 -c100 -d${D}s http://127.0.0.1:$PORT$P > /tmp/bf/wrk-$N.txt
wait $S
R=$(awk '/requests in/ {print $1}' /tmp/bf/wrk-$N.txt)
{ echo "$N: wrk -t1 -c100 -d${D}s $P: $R requests ($(grep Requests/sec /tmp/bf/wrk-$N.txt))"
  awk -F, -v r=$R '$1 ~ /^[0-9]+$/ {sub(/syscalls:sys_enter_|raw_syscalls:/, "", $3); printf "  %-18s %8.2f per request\n", $3, $1/r}' /tmp/bf/perf-$N.csv; } | tee counts/perf-wrk-$N.txt

#!/bin/bash
# client_calls.sh SECONDS NAME=PORT ... : wrk -t1 -c100 against each in turn; wrk's own system calls
# per request (perf stat on the tracepoints of the wrk process) and its CPU per request.
S=$1; shift
for spec in "$@"; do
  n=${spec%%=*}; p=${spec#*=}
  out=$(perf stat -x, -e syscalls:sys_enter_read,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto -- \
        /usr/bin/time -f "cpu %U %S" wrk -t1 -c100 -d${S}s http://127.0.0.1:$p/read/file_21324.bin 2>&1)
  req=$(echo "$out" | grep -oP '^\s*\K\d+(?= requests in)')
  cpu=$(echo "$out" | grep -oP '^cpu \K.*')
  line="$n $((req / S)) req/s"
  line="$line, wrk cpu $(python3 -c "u,s='$cpu'.split(); print(f'{(float(u)+float(s))*1e6/$req:.1f}')") us/req"
  for c in read epoll_wait write recvfrom sendto; do
    k=$(echo "$out" | grep "sys_enter_$c," | cut -d, -f1)
    line="$line, $c $(python3 -c "print(f'{$k/$req:.2f}')")"
  done
  echo "$line"
done

#!/bin/bash
# usage: strace.sh PORT PID PATH [N]
PORT=$1; PID=$2; P=$3; N=${4:-20000}; OUT=$(mktemp)
ab -q -k -c100 -n 5000 http://127.0.0.1:$PORT$P > /dev/null 2>&1
TIDS=$(ls /proc/$PID/task | sed 's/^/-p /' | tr '\n' ' ')
strace -c -f $TIDS -o "$OUT" &
SP=$!
sleep 1
ab -q -k -c100 -n $N http://127.0.0.1:$PORT$P | grep -E "Complete requests|Failed|Total transferred"
kill -INT $SP; wait $SP
cat "$OUT"; rm -f "$OUT"

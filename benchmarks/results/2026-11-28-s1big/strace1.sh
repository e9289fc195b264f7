#!/bin/bash
# strace1.sh NAME PID PORT PATH N: strace -c (all threads of PID and its children) over N fetches,
# and a syscall log (sizes, order) of 2 fetches. Writes counts/strace-{c,log}-NAME_PATH.txt.
N=$1; PID=$2; PORT=$3; P=$4; K=$5
TAG=$N$(echo $P | tr / _)
TIDS=$(for p in $PID $(pgrep -P $PID); do ls /proc/$p/task; done | tr '\n' ',' | sed 's/,$//')
python3 "$(dirname "$0")/../2026-11-27-bigfile/fetchn.py" $PORT $P 2 >/dev/null
strace -f -c -o counts/strace-c-$TAG.txt -p $TIDS 2>/dev/null & S=$!
sleep 1; python3 "$(dirname "$0")/../2026-11-27-bigfile/fetchn.py" $PORT $P $K; kill -INT $S; wait $S 2>/dev/null
strace -f -tt -e trace='!futex,clock_nanosleep,clock_gettime,openat,read,statx,close' -o counts/strace-log-$TAG.txt -p $TIDS 2>/dev/null & S=$!
sleep 1; python3 "$(dirname "$0")/../2026-11-27-bigfile/fetchn.py" $PORT $P 2; kill -INT $S; wait $S 2>/dev/null

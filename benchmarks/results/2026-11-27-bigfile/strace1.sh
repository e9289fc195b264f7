#!/bin/bash
# strace1.sh NAME PID PORT PATH N: strace -c -f and a syscall log (sizes) of N fetches.
N=$1; PID=$2; PORT=$3; P=$4; K=$5
TAG=$N$(echo $P | tr / _)
python3 fetchn.py $PORT $P 2 >/dev/null
strace -f -c -o counts/strace-c-$TAG.txt -p $PID $(for t in /proc/$PID/task/*; do echo -n ""; done) & S=$!
sleep 1; python3 fetchn.py $PORT $P $K; kill -INT $S; wait $S 2>/dev/null
strace -f -tt -e trace='!futex,clock_nanosleep,clock_gettime' -o counts/strace-log-$TAG.txt -p $PID & S=$!
sleep 1; python3 fetchn.py $PORT $P 2; kill -INT $S; wait $S 2>/dev/null

#!/bin/sh
# sc.sh PID PORT N PATH: system calls of the whole server (strace -f -c) over N keep-alive curl
# fetches of PATH, and context switches (perf stat) over another N.
args=""; i=0; while [ $i -lt "$3" ]; do args="$args -o /dev/null http://127.0.0.1:$2$4"; i=$((i+1)); done
curl -s $args   # warm
strace -f -c -q -p "$1" -o /tmp/sc.$$ & sp=$!; sleep 1
curl -s $args; sleep 0.3; kill -INT $sp; wait $sp 2>/dev/null
echo "strace -f -c over $3 fetches:"; head -40 /tmp/sc.$$
perf stat -e context-switches,cpu-migrations,task-clock -p "$1" -o /tmp/ps.$$ -- sleep 100 & pp=$!; sleep 0.5
curl -s $args; kill -INT $pp; wait $pp 2>/dev/null
echo "perf stat over $3 fetches:"; cat /tmp/ps.$$; rm -f /tmp/sc.$$ /tmp/ps.$$

#!/bin/sh
# strace_c.sh PID PORT N PATH: system calls of the whole server (strace -f -c) over N keep-alive
# curl fetches of PATH (after N to warm).
args=""; i=0; while [ $i -lt "$3" ]; do args="$args -o /dev/null http://127.0.0.1:$2$4"; i=$((i+1)); done
curl -s $args   # warm
strace -f -c -q -p "$1" -o /tmp/sc.$$ & sp=$!; sleep 1
curl -s $args; sleep 0.3; kill -INT $sp; wait $sp 2>/dev/null
echo "strace -f -c over $3 fetches:"; head -40 /tmp/sc.$$; rm -f /tmp/sc.$$

#!/bin/bash
# sc.sh PID PORT TAG: strace -f -c on the whole server over 20 keep-alive fetches of /8192 sent
# 1.5 s after the last call (the watchdog dozes after 1 s without one): system calls by name.
PID=$1; PORT=$2; TAG=$3
ARGS=""; for i in $(seq 20); do ARGS="$ARGS -o /dev/null http://127.0.0.1:$PORT/8192"; done
strace -f -c -p $PID -o /tmp/wdtick-sc.$TAG & SP=$!
sleep 1.5
curl -s $ARGS
kill -INT $SP; wait $SP 2>/dev/null
echo "== $TAG (20 fetches)"; head -30 /tmp/wdtick-sc.$TAG

#!/bin/bash
# Owns the syscall counts of this folder: one server (PID listening on PORT), N keep-alive curl fetches of /8192 after a warm-up, the tracer attached to every thread.
# st.sh PID PORT N TAG : strace -f over N keep-alive fetches of /8192; per-syscall and per-thread counts
PID=$1; PORT=$2; N=$3; TAG=$4; mkdir -p /tmp/s3b
ARGS=""; for i in $(seq $N); do ARGS="$ARGS -o /dev/null http://127.0.0.1:$PORT/8192"; done
curl -s $ARGS  # warm
strace -f -qq -p $PID -o /tmp/s3b/raw.$TAG & SP=$!
sleep 1
curl -s $ARGS
sleep 0.5; kill -INT $SP; wait $SP 2>/dev/null
echo "== $TAG: calls per fetch (N=$N)"
python3 "$(dirname "$0")/count.py" /tmp/s3b/raw.$TAG $N

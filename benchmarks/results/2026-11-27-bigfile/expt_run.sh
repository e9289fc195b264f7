#!/bin/bash
# expt_run.sh MODE SECONDS "CHUNK:CORK ..." ROUNDS: start one sender_expt.py per variant, interleave fetch-cpu over them.
MODE=$1; SEC=$2; VARIANTS=$3; ROUNDS=$4
B=/work/wt/bigfile/benchmarks
PORT=18350; TARGETS=""; PIDS=""
for v in $VARIANTS; do
  ch=${v%:*}; co=${v#*:}
  python3 sender_expt.py $PORT $MODE $ch $co >/dev/null 2>/tmp/bf/expt-$PORT.err &
  TARGETS="$TARGETS c${ch}k${co}=$PORT,$!"; PIDS="$PIDS $!"; PORT=$((PORT+1))
done
sleep 3
python3 $B/run.py fetch-cpu $TARGETS --paths /x --seconds $SEC --rounds $ROUNDS
kill $PIDS

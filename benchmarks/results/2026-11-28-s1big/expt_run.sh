#!/bin/bash
# expt_run.sh SECONDS "MODE:CHUNK:CORK ..." ROUNDS [SIZE]: start one sender_expt.py per variant, interleave
# fetch-cpu over them (the first variant is the --ref). SIZE (optional): bytes per answer.
SEC=$1; VARIANTS=$2; ROUNDS=$3; SIZE=$4
B=$(cd ../.. && pwd)
PORT=18350; TARGETS=""; PIDS=""; REF=""
for v in $VARIANTS; do
  IFS=: read mo ch co <<< "$v"
  python3 sender_expt.py $PORT $mo $ch $co $SIZE >/dev/null 2>/tmp/bf/expt-$PORT.err &
  TARGETS="$TARGETS ${mo}${ch}k${co}=$PORT,$!"; PIDS="$PIDS $!"; PORT=$((PORT+1))
  [ -z "$REF" ] && REF=${mo}${ch}k${co}
done
sleep 5
python3 $B/run.py fetch-cpu $TARGETS --paths /x --seconds $SEC --rounds $ROUNDS --ref $REF
kill $PIDS

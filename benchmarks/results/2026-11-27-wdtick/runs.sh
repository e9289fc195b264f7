#!/bin/bash
# runs.sh PID PORT TAG: the watchdog's wake-ups and CPU per S3 fetch (wd.py), three runs of 200
# fetches each after a 1.5 s pause (the watchdog dozes after 1 s without a call), then three of
# 1,000 back to back (steady state).
PID=$1; PORT=$2; TAG=$3; D=$(dirname "$0")
for i in 1 2 3; do sleep 1.5; echo -n "$TAG after a pause, 200: "; python3 $D/wd.py $PID $PORT 200 /8192 0; done
for i in 1 2 3; do echo -n "$TAG steady, 1000:      "; python3 $D/wd.py $PID $PORT 1000 /8192 20; done

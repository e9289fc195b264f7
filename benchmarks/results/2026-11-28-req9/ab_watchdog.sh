#!/bin/bash
# ab_watchdog.sh ROUNDS SECONDS BASEPID BASEPORT NEWPID NEWPORT: interleaved pertid.py runs (wrk -t1
# -c100 on S2's /read/file_21324.bin) against two running servers, base then new in each round.
R=$1; S=$2; BP=$3; BPORT=$4; NP=$5; NPORT=$6
D=$(dirname "$0")
for r in $(seq 1 "$R"); do
  echo "== round $r base (load $(cut -d' ' -f1 /proc/loadavg))"; python3 "$D/pertid.py" "$BP" "$BPORT" "$S"
  echo "== round $r new (load $(cut -d' ' -f1 /proc/loadavg))"; python3 "$D/pertid.py" "$NP" "$NPORT" "$S"
done

#!/bin/bash
# S2's static case by hand: one sluicegate per Python given (each a build's venv), each with
# --static on S2's 21 KB file, then `run.py wrk-cpu` (wrk -t1 -c$CONNS, rounds interleaved).
#   benchmarks/results/2026-11-26-static-sendfile/probes/static_wrk_cpu.sh .venv/bin/python OTHER/.venv/bin/python
set -e
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
STATIC=$REPO/benchmarks/.work/data/static
APPS=$REPO/benchmarks/apps
pids=()
i=0
for py in "$@"; do
  py=$(realpath "$py")
  port=$((19100+i))
  (cd $APPS && PYTHONPATH=$APPS exec $py -m sluicegate --bind 127.0.0.1:$port --static /static=$STATIC s2_static:app >"${TMPDIR:-/tmp}/static_wrk_cpu.$i.log" 2>&1) &
  pids+=($!)
  i=$((i+1))
done
sleep 3
args=()
for j in $(seq 0 $((i-1))); do
  pid=$(pgrep -f "127.0.0.1:$((19100+j))" | head -1)
  args+=("b$j=$((19100+j)),/static/file_21324.bin,$pid")
done
cd $REPO && benchmarks/.venv/bin/python benchmarks/run.py wrk-cpu --conns ${CONNS:-100} --seconds 3 --rounds ${ROUNDS:-3} "${args[@]}"
for p in "${pids[@]}"; do kill $p; done
pkill -f "127.0.0.1:191" || true

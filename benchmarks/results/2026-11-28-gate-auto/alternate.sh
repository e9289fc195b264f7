#!/bin/bash
# Alternate --start-gate on / auto on one build: S5's sleeping app (1,000 wrk clients),
# unconstrained then at 1.5 CPU (cgroup v1 quota), three rounds each.
# THR: benchmarks/results/2026-11-28-s5call/tools/thr.py with
# benchmarks/results/2026-11-28-s5write/thr.patch applied (`patch`), copied to /tmp/thr.py.
PY=${PY:-/work/main/.venv/bin/python}
THR=${THR:-/tmp/thr.py}
for cpus in 0 1.5; do
  for r in 1 2 3; do
    for g in on auto; do
      echo "== cpus=$cpus round=$r gate=$g"
      EXTRA="--start-gate $g" python3 "$THR" gate-$g "$PY" 6 $cpus 2>&1 | grep -E "rps=|TOTAL"
    done
  done
done

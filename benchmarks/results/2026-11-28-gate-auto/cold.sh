#!/bin/bash
# S5 cold: start the server, then at once wrk -t1 -c1000 for 2 s; settings as "LABEL:ENV:GATE".
PY=${PY:-/work/main/.venv/bin/python}
port=9401
for r in $(seq ${ROUNDS:-4}); do
  for s in $SETTINGS; do
    label=${s%%:*}; rest=${s#*:}; envv=${rest%%:*}; g=${rest#*:}
    cd /work/main/benchmarks/apps
    env $envv PYTHONPATH=. $PY -m sluicegate --bind 127.0.0.1:$port --threads 16:1000 --backlog 4096 --start-gate $g s5_sleepy:app > /tmp/cold.log 2>&1 &
    pid=$!
    for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:$port/ && break; sleep 0.1; done
    out=$(wrk -t1 -c1000 -d${SECS:-2}s --timeout 2s --latency http://127.0.0.1:$port/ 2>&1)
    rps=$(echo "$out" | grep -oP "Requests/sec:\s+\K[0-9.]+")
    p99=$(echo "$out" | grep -oP "99%\s+\K\S+")
    echo "round $r $label rps=$rps p99=$p99"
    kill $pid; wait $pid 2>/dev/null
    port=$((port+1))
  done
done

#!/bin/bash
# malloc_trim(0) called by gdb in a running master (S19's ini with an http-socket added, the
# tree with json out of the master in /tmp/rss-v6), then its workers killed and forked again;
# the sum of VmRSS in kB at each step. Output of the run kept in README.md:
#   start 47400, respawned 47428, respawned again 47428, master trimmed 47296,
#   respawned after trim 47380.
cd /work/wt/rss/benchmarks/apps
PYTHONPATH=/tmp/rss-v6/python:/tmp/rssx setsid /work/main/.venv/bin/python -c "import sys; from sluicegate.uwsgi_cli import main; sys.exit(main())" --ini /tmp/rssx/diag.ini > /tmp/rssx/log 2>&1 &
sleep 5
M=$(pgrep -f "rssx/diag.ini" | head -1)
sum() { local t=0; for p in $M $(pgrep -P $M); do t=$((t + $(awk '/VmRSS/{print $2}' /proc/$p/status))); done; echo $t; }
hit() { for i in $(seq 1 200); do curl -s 127.0.0.1:18999/rss > /dev/null; done; }
respawn() { for w in $(pgrep -P $M); do kill -KILL $w; done; sleep 4; hit; }
hit; echo "start: $(sum)"
respawn; echo "respawned: $(sum)"
respawn; echo "respawned again: $(sum)"
gdb -p $M -batch -ex "call (int)malloc_trim(0)" > /dev/null 2>&1
echo "master trimmed: $(sum)"
respawn; echo "respawned after trim: $(sum)"
kill -INT $M

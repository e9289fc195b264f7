set -e
cd "$(dirname "$0")"
/work/wt/rssm/.venv/bin/sluicegate-uwsgi --ini madvise-experiment.ini > /tmp/madvise-experiment.log 2>&1 &
M=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18431/ && break; sleep 0.2; done
for i in $(seq 200); do curl -s -o /dev/null http://127.0.0.1:18431/; done
sleep 1
W=$(cat /proc/$M/task/*/children)
rss() { for p in $M $W; do grep VmRSS /proc/$p/status | awk '{print $2}'; done | paste -sd' '; }
echo "before (master workers kB): $(rss)"
for p in $W; do
  B=$(grep -m1 _core /proc/$p/maps | cut -d- -f1)
  gdb -p $p -batch -ex "call (int)madvise((void*)(0x$B+0x4000), 0x37000, 4)" 2>/dev/null | grep '^\$' || true
done
for i in $(seq 200); do curl -s -o /dev/null http://127.0.0.1:18431/; done
sleep 1
echo "after madvise of .rela.dyn in workers, 200 more requests: $(rss)"
kill -TERM $M; wait $M || true

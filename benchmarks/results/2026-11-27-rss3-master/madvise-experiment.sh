# S19's memory case by hand: VmRSS of a sluicegate-uwsgi master and its two workers, then the
# same after madvise(MADV_DONTNEED) over the extension's .rela.dyn pages in each worker (gdb).
# The offsets are this build's (readelf -SW _core*.so: .rela.dyn 0x3348-0x3bbe0).
set -e
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
D=$(mktemp -d)
cd "$D"
cat > uwsgi.ini <<INI
[uwsgi]
chdir = $ROOT/benchmarks/apps
pythonpath = $ROOT/benchmarks/apps
module = s6_hello:app
master = true
processes = 2
http-socket = 127.0.0.1:18431
vacuum = true
die-on-term = true
need-app = true
disable-logging = true
listen = 1024
INI
"$ROOT/.venv/bin/sluicegate-uwsgi" --ini uwsgi.ini > server.log 2>&1 &
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

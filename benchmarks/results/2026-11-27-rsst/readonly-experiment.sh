# A measurement by hand (gdb): VmRSS of a sluicegate-uwsgi master and its two workers, then the
# same after madvise(MADV_DONTNEED) over every read-only, file-backed mapping of the extension
# (its first r--p mapping, offset 0, and its r-xp code; never the relocated r--p RELRO part,
# which is private and written: dropping it crashed the workers) in each worker, 200 requests later.
set -e
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
D=$(mktemp -d); cd "$D"
cat > uwsgi.ini <<INI
[uwsgi]
chdir = $ROOT/benchmarks/apps
pythonpath = $ROOT/benchmarks/apps
module = s6_hello:app
master = true
processes = 2
http-socket = 127.0.0.1:18437
vacuum = true
die-on-term = true
need-app = true
disable-logging = true
listen = 1024
INI
"$ROOT/.venv/bin/sluicegate-uwsgi" --ini uwsgi.ini > server.log 2>&1 &
M=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18437/ && break; sleep 0.2; done
for i in $(seq 200); do curl -s -o /dev/null http://127.0.0.1:18437/; done
sleep 1
W=$(cat /proc/$M/task/*/children)
rss() { for p in $M $W; do grep VmRSS /proc/$p/status | awk '{print $2}'; done | paste -sd' '; }
echo "before (master workers kB): $(rss)"
for p in $W; do
  grep _core /proc/$p/maps | grep -v "rw-p" | while read range perms off rest; do
    s=${range%-*}; e=${range#*-}
    { [ "$perms" = "r--p" ] && [ "$off" = "00000000" ]; } || [ "$perms" = "r-xp" ] || continue
    echo "$p $perms $off $s $e"
    gdb -p $p -batch -ex "call (int)madvise((void*)0x$s, 0x$e-0x$s, 4)" 2>/dev/null | grep '^\$' || true
  done
done
for i in $(seq 200); do curl -s -o /dev/null http://127.0.0.1:18437/; done
sleep 1
echo "after madvise of every read-only _core mapping in workers, 200 more requests: $(rss)"
kill -TERM $M; wait $M || true

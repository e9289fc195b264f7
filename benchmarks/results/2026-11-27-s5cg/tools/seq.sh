#!/bin/bash
# seq.sh PY LIMITS...: start sluicegate (PY) with metrics; for each limit (none or CPUs) move it into a cgroup and run mon.sh 5 s
PY=$1; shift
cd /work/wt/s5cg/benchmarks/apps; export PYTHONPATH=$PWD
SG_DEBUG_ROOM=1 $PY -m sluicegate --bind 127.0.0.1:18555 --metrics-bind 127.0.0.1:18600 --threads 16:1000 s5_sleepy:app > /tmp/s5cg/sg.log 2>&1 &
PID=$!; echo $PID > /tmp/s5cg/sg.pid; sleep 3; curl -s 127.0.0.1:18555/; echo
for lim in "$@"; do
  d=/sys/fs/cgroup/cpu/s5cg-$lim; mkdir -p $d; echo 100000 > $d/cpu.cfs_period_us
  if [ $lim = none ]; then echo -1 > $d/cpu.cfs_quota_us; else echo $(python3 -c "print(int($lim*100000))") > $d/cpu.cfs_quota_us; fi
  for t in /proc/$PID/task/*; do echo ${t##*/} > $d/tasks 2>/dev/null; done
  echo "== $lim $(date +%T.%N)"; /tmp/s5cg/mon.sh 18555 18600 5 $PID; grep nr_throttled $d/cpu.stat
done
kill $PID; sleep 0.5
for lim in "$@"; do rmdir /sys/fs/cgroup/cpu/s5cg-$lim 2>/dev/null; done

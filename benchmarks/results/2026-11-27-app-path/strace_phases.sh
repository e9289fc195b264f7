#!/usr/bin/env bash
# The probe behind README.md's system calls: one sluicegate (app_path_probe.py), and per case:
# warm, attach `strace -c -f` to every thread of the server, send the requests, detach; writes
# OUT/CASE.strace (strace's table: calls of every thread, threads started meanwhile included).
#
# Usage: benchmarks/results/2026-11-27-app-path/strace_phases.sh OUT_DIR [CASE...]
#        PYTHONPATH=/copy/of/base/python ...   (the before)
#        TRACER=perf ...   (`perf stat` on the syscall tracepoints instead, OUT/CASE.perf: counts
#          at a fraction of strace's cost, which stretches every call and so lets blocks pile up
#          in queues that a server at full speed would write one by one; task-clock is the CPU
#          time, noisy on a shared machine); PER_THREAD=1 counts each thread apart (which
#          thread makes the writes, and whose CPU time it is)
# Cases and their loads as in callgrind_phases.sh (the same request counts).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$(cd "$HERE/../.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd); shift
CASES=("$@"); [ ${#CASES[@]} = 0 ] && CASES=(s6 s2 s1 s3 s3small)
PY=${SLUICEGATE_PY:-$BENCH/../.venv/bin/python}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cd "$BENCH/apps"
PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$HERE" "$PY" -m sluicegate --bind "127.0.0.1:$PORT" \
  app_path_probe:app > "$OUT/server.log" 2>&1 &
SP=$!
for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/s6/" && break; sleep 0.2; done
fetch() {
  (cd "$BENCH" && python3 -c 'import sys; from bench import rawhttp
c = rawhttp.Connection(int(sys.argv[1])); n = int(sys.argv[3])
bad = sum(c.request("GET", sys.argv[2], keep_body=False).status != 200 for _ in range(n))
print(f"{n} requests, {bad} failed")' "$PORT" "$1" "$2")
}
load() {
  case $1 in
    ab) ab -q -k -c8 -n "$3" "http://127.0.0.1:$PORT$2" | grep -E "^(Complete|Failed) requests" | tr '\n' ' '; echo ;;
    fetch) fetch "$2" "$3" ;;
  esac
}
for c in "${CASES[@]}"; do
  case $c in
    s6) spec=(ab /s6/ 1000 10000) ;;
    s2) spec=(ab /s2/read/file_21324.bin 200 2000) ;;
    s1) spec=(fetch /s1/list/688128 20 200) ;;
    s3) spec=(fetch /s3/8192 4 40) ;;
    s3small) spec=(fetch /s3/128 2 10) ;;
  esac
  load "${spec[0]}" "${spec[1]}" "${spec[2]}" > /dev/null
  if [ "${TRACER:-strace}" = perf ]; then
    perf stat -o "$OUT/$c.perf" -e raw_syscalls:sys_enter,syscalls:sys_enter_sendmsg \
      -e syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write \
      -e task-clock ${PER_THREAD:+--per-thread} -p "$SP" 2> /dev/null &
  else
    tasks=(); for t in /proc/$SP/task/*; do tasks+=(-p "${t##*/}"); done
    strace -c -f -o "$OUT/$c.strace" "${tasks[@]}" 2> /dev/null &
  fi
  ST=$!
  sleep 2
  echo -n "$c ${spec[1]}: "; load "${spec[0]}" "${spec[1]}" "${spec[3]}"
  kill -INT $ST; wait $ST || true
  if [ "${TRACER:-strace}" = perf ]; then
    if [ -n "${PER_THREAD:-}" ]; then
      grep -E "sys_enter_sendmsg|task-clock" "$OUT/$c.perf" | awk '$2 != "0" && $2 != "0.00"'
    else
      grep -E "sys_enter|task-clock" "$OUT/$c.perf" | awk '{printf "  %s %s", $1, $2} END {print ""}'
    fi
  else
    grep -E 'total$' "$OUT/$c.strace"
  fi
done
kill -INT "$SP"; wait "$SP" || true

#!/bin/bash
cd /work/wt/bis
export CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_INCREMENTAL=true
./dev build > /tmp/bis-build.log 2>&1 || exit 125
t=0
for i in 1 2; do
  r=$(cd /tmp && python3 /tmp/thr.py bis /work/wt/bis/.venv/bin/python 6 0 2>&1 | grep -oP "rps=\K[0-9]+")
  [ -z "$r" ] && exit 125
  t=$((t + r))
done
echo "$(git rev-parse --short HEAD) mean $((t/2))" >> /tmp/bisect-results.txt
[ $((t/2)) -gt 8650 ] && exit 0 || exit 1

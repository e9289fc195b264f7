#!/bin/bash
# scrape.sh OUT: the blocking room every 0.25 s while the metrics port answers
OUT=$1; : > $OUT
for i in $(seq 1 200); do
  v=$(curl -s -m 0.5 http://127.0.0.1:19555/metrics | grep -E "^sluicegate_(pool_busy_threads|admission_queue|pool_threads) " | tr '\n' ' ')
  [ -n "$v" ] && echo "$(date +%s.%N | cut -c1-14) $v" >> $OUT
  sleep 0.25
done

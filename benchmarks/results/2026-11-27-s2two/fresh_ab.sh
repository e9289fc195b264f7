#!/bin/bash
# fresh_ab.sh ROUNDS NAME=PY[:OPTIONS] ... : each round starts every server afresh (in a rotated
# order), warms it with one request, runs `wrk -t1 -c100 -d4s --latency` on S2's
# /read/file_21324.bin and prints req/s, p50 and the server's CPU per request (utime + stime
# of all its threads, /proc/PID/stat). NAME=granian starts granian (start.sh) and reads its
# worker's CPU.
cd "$(dirname "$0")"
R=$1; shift
specs=("$@"); n=${#specs[@]}
for ((r = 0; r < R; r++)); do
  for ((k = 0; k < n; k++)); do
    spec=${specs[$(((k + r) % n))]}
    name=${spec%%=*}; rest=${spec#*=}; py=${rest%%:*}; opts=""
    [[ $rest == *:* ]] && opts=${rest#*:}
    port=$((18240 + (k + r) % n))
    if [ "$name" = granian ]; then P=$(./start.sh granian $port - s2_static:app); else P=$(./start.sh sg$name $port $py s2_static:app $opts); fi
    for i in $(seq 1 40); do sleep 0.25; curl -sf -o /dev/null http://127.0.0.1:$port/read/file_21324.bin && break; done
    C=$P; [ "$name" = granian ] && C=$(pgrep -P $P | head -1)
    c0=$(awk '{print $14+$15}' /proc/$C/stat)
    wrk -t1 -c100 -d4s --latency http://127.0.0.1:$port/read/file_21324.bin > /tmp/s2two/w.txt
    c1=$(awk '{print $14+$15}' /proc/$C/stat)
    req=$(grep "requests in" /tmp/s2two/w.txt | awk '{print $1}')
    echo "round $r $name $(grep Requests/sec /tmp/s2two/w.txt | awk '{print $2}') req/s p50 $(grep ' 50%' /tmp/s2two/w.txt | awk '{print $2}') cpu/req $(python3 -c "print(round(($c1-$c0)*1e4/$req,1))") us"
    kill $P; wait $P 2>/dev/null; sleep 1
  done
done

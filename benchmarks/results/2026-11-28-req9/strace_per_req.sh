#!/bin/bash
# strace_per_req.sh PID PORT SECONDS OUT: `strace -c -f` of the whole server process during one
# wrk -t1 -c100 run on S2's /read/file_21324.bin; prints the calls per request (requests = wrk's).
PID=$1; PORT=$2; S=$3; OUT=$4
strace -c -f -p "$PID" -o "$OUT" & SP=$!
sleep 1
N=$(wrk -t1 -c100 -d${S}s "http://127.0.0.1:$PORT/read/file_21324.bin" | awk '/requests in/ {print $1}')
kill -INT $SP; wait $SP 2>/dev/null
echo "requests $N"
awk -v n="$N" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {printf "  %-18s %7.3f per request\n", $NF, $4 / n}' "$OUT"

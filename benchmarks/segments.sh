#!/usr/bin/env bash
# benchmarks/segments.sh URL [--requests N] [--new-connections]
# Counts the TCP payload segments the server at URL (http://127.0.0.1:PORT/PATH) sends per
# response, with tcpdump on lo (root). Prints one JSON line. Kept as a short name for
# `python3 benchmarks/run.py segments` (bench/segments.py).
exec python3 "$(dirname "$0")/run.py" segments "$@"

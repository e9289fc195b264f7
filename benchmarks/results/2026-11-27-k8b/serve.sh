#!/bin/sh
# serve.sh PYTHONPATH_DIR PORT LOG: one sluicegate serving benchmarks/apps/s3_stream.py with the
# repository's venv, its `sluicegate` package and extension taken from PYTHONPATH_DIR (a copy
# of python/ with the _core .so of the build to measure).
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$repo/benchmarks/apps" || exit 1
PYTHONPATH="$1" exec "$repo/.venv/bin/python" -m sluicegate --bind "127.0.0.1:$2" s3_stream:app >"$3" 2>&1

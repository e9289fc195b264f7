#!/bin/sh
# Every thread of the server under SCHED_BATCH: PY is the build before (a python whose -m sluicegate
# is 198e4442's build).
exec chrt -b 0 "${PY:?the python of the build before}" "$@"

set -u
cd /work/wt/ctl
export PYTHONPATH=$PWD SGTEST_STATE_DIR=/tmp/ctlex
rm -f /tmp/ctlex/gate-* /tmp/ctlex/mark-*
S=/tmp/ctlex/sg.ctl
.venv/bin/python -m sluicegate --workers 2 -b 127.0.0.1:8931 --control-socket $S tests.apps.blocking:app 2>/tmp/ctlex/server.log &
SRV=$!
for i in $(seq 50); do [ -S $S ] && curl -s localhost:8931/fast >/dev/null && break; sleep 0.2; done
# load: two client loops on /fast, and three requests held at a gate
( while [ ! -e /tmp/ctlex/stop ]; do curl -s localhost:8931/fast >/dev/null; done ) &
( while [ ! -e /tmp/ctlex/stop ]; do curl -s localhost:8931/fast >/dev/null; done ) &
for t in a b c; do curl -s "localhost:8931/slow?token=$t&session=s3cret" >/dev/null & sleep 0.3; done
sleep 2
tmux -L ctlex new-session -d -s top -x 100 -y 30 sh
tmux -L ctlex send-keys -t top ".venv/bin/python -m sluicegate ctl --socket $S top" Enter
sleep 3
tmux -L ctlex capture-pane -p -t top > /tmp/ctlex/top.txt
tmux -L ctlex send-keys -t top q
sleep 0.5
tmux -L ctlex kill-server
echo '$ sluicegate ctl --socket '$S' status' > /tmp/ctlex/status.txt
.venv/bin/python -m sluicegate ctl --socket $S status >> /tmp/ctlex/status.txt
echo '$ sluicegate ctl --socket '$S' requests' > /tmp/ctlex/requests.txt
.venv/bin/python -m sluicegate ctl --socket $S requests >> /tmp/ctlex/requests.txt
echo '$ sluicegate ctl --socket '$S' requests --stacks' > /tmp/ctlex/stacks.txt
.venv/bin/python -m sluicegate ctl --socket $S requests --stacks >> /tmp/ctlex/stacks.txt
echo '$ sluicegate ctl --socket '$S' status --json' > /tmp/ctlex/status-json.txt
.venv/bin/python -m sluicegate ctl --socket $S status --json >> /tmp/ctlex/status-json.txt
touch /tmp/ctlex/gate-slow
echo '$ sluicegate ctl --socket '$S' reload' > /tmp/ctlex/ops.txt
.venv/bin/python -m sluicegate ctl --socket $S reload >> /tmp/ctlex/ops.txt
sleep 3
echo '$ sluicegate ctl --socket '$S' workers +1' >> /tmp/ctlex/ops.txt
.venv/bin/python -m sluicegate ctl --socket $S workers +1 >> /tmp/ctlex/ops.txt
sleep 3
echo '$ sluicegate ctl --socket '$S' status   # after reload, then workers +1' >> /tmp/ctlex/ops.txt
.venv/bin/python -m sluicegate ctl --socket $S status >> /tmp/ctlex/ops.txt
echo '$ sluicegate ctl --socket '$S' stop' >> /tmp/ctlex/ops.txt
.venv/bin/python -m sluicegate ctl --socket $S stop >> /tmp/ctlex/ops.txt
touch /tmp/ctlex/stop
wait $SRV; echo "server exit $?" >> /tmp/ctlex/ops.txt
ls -l $S >> /tmp/ctlex/ops.txt 2>&1
wait

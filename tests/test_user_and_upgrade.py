"""`--user` with workers and USR2 (regression, ee5b20d): the upgrade could never succeed, since the
new master was exec'd already as the user and failed to switch again (`cannot switch to user
nobody ...: Operation not permitted`). Now, as with gunicorn, a master without `--preload`
keeps the starting user and each worker switches once forked; a process that is the user
already (the new master of a `--preload` master, which switched itself) has nothing to switch.
Real processes, real signals, real sockets; runs as root (CI does).
"""

import grp
import os
import pwd
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.helpers import wait_for
from tests.test_systemd_and_privileges import IS_ROOT, NOBODY_CAN_READ, proc_ids
from tests.test_worker_failures import running
from tests.load import Load
from tests.test_workers import _pid_from, children

needs_root = pytest.mark.skipif(not IS_ROOT or not NOBODY_CAN_READ,
                                reason="switching user needs root, and a work tree that "
                                       "nobody may read")


@needs_root
def test_usr2_with_user_starts_a_new_master_whose_workers_switch(start_server, tmp_path):
    nobody = (pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)
    pid_file = str(tmp_path / "sg.pid")
    srv = start_server("whoami", "--workers", "2", "--user", "nobody", "--group", "nogroup",
                       "--pid", pid_file)
    assert all(proc_ids(p) == nobody for p in children(srv.pid))
    new_master = None
    try:
        with Load(srv.port, clients=4) as load:
            load.wait_for(100)
            srv.signal(signal.SIGUSR2)
            wait_for(lambda: _pid_from(pid_file) not in (None, srv.pid), "the new master's pid",
                     timeout=30, context=srv.log_text)
            new_master = _pid_from(pid_file)
            srv.wait_log(rf"\[{new_master}\] \[INFO\] Listening at: http://127.0.0.1:{srv.port}",
                         timeout=30)
            assert "Operation not permitted" not in srv.log_text()
            new_workers = set(children(new_master))
            assert len(new_workers) == 2
            assert all(proc_ids(p) == nobody for p in new_workers)
            srv.signal(signal.SIGTERM)  # the operator stops the old master
            assert srv.wait_exit() == 0
            load.wait_for(200)
        assert load.failed == [], load.failed
        assert new_workers & load.pids
        # The workers that switched still stop with their master (the switch clears the
        # parent-death signal: it is set after it).
        os.kill(new_master, signal.SIGKILL)
        wait_for(lambda: not any(running(p) for p in new_workers), "the workers to stop",
                 timeout=15)
        new_master = None
    finally:
        if new_master and running(new_master):
            os.kill(new_master, signal.SIGTERM)
            wait_for(lambda: not running(new_master), "the new master to end", timeout=30)


SWITCHED = """
import os, sys
sys.path.insert(0, {python!r})
from sluicegate import privileges
os.setgroups([]); os.setgid({gid}); os.setuid({uid})
privileges.drop("nobody", "nogroup")
print("still", os.getuid(), os.getgid())
"""


@pytest.mark.skipif(not IS_ROOT, reason="becoming nobody needs root")
def test_a_process_that_is_the_user_already_has_nothing_to_switch():
    """The new master of a --preload master (which switched itself) starts as the user."""
    uid, gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    code = SWITCHED.format(python=str(ROOT / "python"), uid=uid, gid=gid)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["still", str(uid), str(gid)]

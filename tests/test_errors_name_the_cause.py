"""Start errors that used to hide their cause now name it: a unix socket that cannot be given
to the group its `group=` names (it read "cannot listen ...: permission denied"), and, after
`--user`, an app directory or an interpreter the user cannot read (they read "module 'app'
not found" and "No module named 'hashlib'"). Real processes started as the CLI is; these run
as root (CI does), since only root can switch user.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.conftest import ROOT
from tests.test_systemd_and_privileges import IS_ROOT, NOBODY_CAN_READ

needs_root = pytest.mark.skipif(not IS_ROOT or not NOBODY_CAN_READ,
                                reason="switching user needs root, and a work tree that "
                                       "nobody may read")

APP = "def app(environ, start_response):\n    start_response('200 OK', [])\n    return [b'']\n"


SETPRIV = shutil.which("setpriv")


def run(*args, cwd, without_chown=False):
    """The CLI; `without_chown`: as root without CAP_CHOWN (setpriv), which may give a file
    only to a group root is a member of, as any user may."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    prefix = [SETPRIV, "--bounding-set=-chown", "--inh-caps=-chown"] if without_chown else []
    return subprocess.run([*prefix, sys.executable, "-m", "sluicegate", *args], cwd=str(cwd),
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)


def error_line(r):
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("sluicegate: error:")]
    assert len(lines) == 1 and r.returncode != 0, r.stderr
    return lines[0]


@pytest.mark.skipif(not IS_ROOT or not SETPRIV, reason="dropping CAP_CHOWN needs root and setpriv")
def test_a_socket_group_the_user_may_not_set_is_named_as_the_cause(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    sock = tmp_path / "app.sock"
    r = run("--bind", f"unix:{sock};group=nogroup", "app:app", cwd=tmp_path, without_chown=True)
    line = error_line(r)
    assert "the socket file cannot be given to group nogroup (chown: permission denied)" in line
    assert "member of" in line
    assert not sock.exists()


@needs_root
def test_an_app_directory_the_user_cannot_read_is_named(tmp_path):
    app_dir = tmp_path / "srv"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(APP)
    os.chmod(app_dir, 0o700)  # root's only
    r = run("--user", "nobody", "-b", "127.0.0.1:0", "app:app", cwd=app_dir)
    line = error_line(r)
    assert line.startswith("sluicegate: error: module 'app' not found"), line
    assert f"; but this process (user nobody) cannot read the working directory (where the " \
        f"app is imported from), {app_dir}: permission denied" in line, line


@needs_root
def test_an_interpreter_the_user_cannot_read_is_named(tmp_path):
    """The interpreter's standard library behind a directory `nobody` may not search: the
    switch warns, naming it, and a module the app imports from it later names it too."""
    import sysconfig
    stdlib = sysconfig.get_paths()["stdlib"]
    if os.access(stdlib, os.R_OK) and not _blocked_for_nobody(stdlib):
        pytest.skip("this interpreter's library is readable by nobody")
    app_dir = tempfile.mkdtemp(prefix="sg-readable-")  # under /tmp: nobody may search it
    os.chmod(app_dir, 0o755)
    try:
        with open(os.path.join(app_dir, "app.py"), "w") as f:
            f.write("import wave  # not imported by the server itself\n" + APP)
        os.chmod(os.path.join(app_dir, "app.py"), 0o644)
        r = run("--user", "nobody", "-b", "127.0.0.1:0", "app:app", cwd=app_dir)
    finally:
        shutil.rmtree(app_dir)
    assert f"After switching to user nobody group -: cannot read the interpreter's standard " \
        f"library, {stdlib} (permission denied)" in r.stderr, r.stderr
    line = error_line(r)
    assert "No module named 'wave'" in line and \
        f"cannot read the interpreter's standard library, {stdlib}: permission denied" in line, line


def _blocked_for_nobody(path):
    """Whether a directory above `path` may not be searched by others."""
    parent = os.path.dirname(path)
    while parent != os.path.dirname(parent):
        if not os.stat(parent).st_mode & 0o001:
            return True
        parent = os.path.dirname(parent)
    return False

"""A unix socket bound from a gunicorn configuration, reached by a real nginx whose workers run
as www-data (as Debian's do): gunicorn makes its socket files under its `umask` setting,
default 0 (srwxrwxrwx), so a proxy of another user connects; sluicegate does the same, and
`--umask` (gunicorn's too) narrows it.
"""

from __future__ import annotations

import os
import stat
import tempfile
import textwrap

import pytest

from tests import nginx_util
from tests.nginx_util import Nginx, client_context

pytestmark = pytest.mark.skipif(not nginx_util.available() or os.geteuid() != 0,
                                reason="needs nginx, and root to run its workers as www-data")


@pytest.fixture
def app_dir():
    """A directory www-data may enter (as /run/app is), for the socket."""
    d = tempfile.mkdtemp(prefix="sgtest-app-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)


def test_a_gunicorn_configs_unix_socket_answers_through_nginx_as_www_data(start_server,
                                                                          app_dir, tmp_path):
    """`bind = "unix:/run/app/http.sock"` in a gunicorn configuration made the socket under the
    process umask (srwxr-xr-x), so nginx as www-data got `Permission denied` and every request
    was a 502."""
    sock = os.path.join(app_dir, "http.sock")
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text(textwrap.dedent(f"""
        bind = "unix:{sock}"
        workers = 1
    """))
    old = os.umask(0o022)  # the usual umask of a shell or a service, inherited by the server
    try:
        srv = start_server("hello", "-c", str(conf), binds=[])
    finally:
        os.umask(old)
    srv.wait_log(r"Listening at: unix:")
    nginx = Nginx({"app": ("http", f"unix:{sock}")}, user="www-data")
    try:
        import http.client
        conn = http.client.HTTPSConnection("127.0.0.1", nginx.ports["app"], timeout=10,
                                           context=client_context())
        conn.request("GET", "/")
        r = conn.getresponse()
        body = r.read()
        conn.close()
    finally:
        log = nginx.error_log()
        nginx.stop()
    assert (r.status, body) == (200, b"Hello, World!"), log
    assert "Permission denied" not in log
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o777  # gunicorn's: srwxrwxrwx


@pytest.mark.parametrize("flag", ["--umask", "-m"])
def test_umask_narrows_the_unix_socket_as_in_gunicorn(start_server, app_dir, flag):
    """--umask 007 (gunicorn's -m too) makes the socket srwxrwx---."""
    sock = os.path.join(app_dir, "http.sock")
    start_server("hello", flag, "007", binds=[f"unix:{sock}"])
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o770

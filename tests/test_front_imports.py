"""What the server's Python front imports in every process: modules needed only by some
options are imported when those options are used. A master imports them before it forks its
workers, so each module imported for nothing was paid once per process (http.client and
http.server, for `--metrics-bind` only, brought email, ssl, socketserver and more: about 5 MB
of every process's resident memory)."""

import http.client

from tests.helpers import free_ports


def loaded(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", "/")
        r = c.getresponse()
        assert r.status == 200
        return r.read().decode().split()
    finally:
        c.close()


def test_a_worker_carries_no_module_its_options_do_not_need(start_server):
    """Failed before: the master imported http.client and http.server (metrics_total.py),
    logging.config, tempfile and mimetypes at its start, and every worker inherited them."""
    srv = start_server("loaded_modules", "--workers", "1")
    assert loaded(srv.port) == []


def test_the_metrics_listener_still_imports_what_it_needs(start_server):
    """--metrics-bind serves with the standard library's HTTP server: imported then."""
    mport = free_ports(2)  # the master's port and the worker's (one further)
    srv = start_server("loaded_modules", "--workers", "1", "--metrics-bind", f"127.0.0.1:{mport}")
    assert "http.server" in loaded(srv.port)

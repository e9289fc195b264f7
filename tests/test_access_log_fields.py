"""Access-log fields that were wrong, each checked against what the client got:

- HEAD over HTTP/2 logged the body bytes the app made (4,160 for a page) though none are sent;
  HTTP/1.1 logs 0;
- a `--timeout` 504 logged 0 bytes while its 16-byte body (`Gateway Timeout` and a newline) was
  sent;
- a static file's request time (`%(L)s`) was 0.000000 over HTTP/2: its line was timed from the
  end of the send to itself;
- a static file answered on a uwsgi listener logged the listener's peer (nginx) as its client,
  where an app request on the same listener logs the REMOTE_ADDR nginx passed.
"""

from pathlib import Path

from tests.h2_client import H2Client
from tests.helpers import wait_for
from tests.uwsgi_packet import exchange, nginx_vars

FORMAT = "%(h)s %(m)s %(U)s %(s)s %(B)s %(L)s"


def log_lines(log: Path, count: int):
    def got():
        lines = log.read_text().splitlines() if log.exists() else []
        return lines if len(lines) >= count else None
    return [line.split(" ") for line in wait_for(got, f"{count} access log lines")]


def test_head_over_http2_logs_no_body_bytes(start_server, tmp_path):
    log = tmp_path / "access.log"
    srv = start_server("http2", "--access-log", str(log), "--access-log-format", FORMAT)
    assert srv.request("HEAD", "/big?n=4160").status == 200
    c = H2Client(srv.port)
    try:
        [r] = c.responses([c.request("HEAD", "/big?n=4160")])
    finally:
        c.close()
    assert r.status == 200 and bytes(r.body) == b""
    lines = log_lines(log, 2)
    assert [(m, b) for _, m, _, _, b, _ in lines] == [("HEAD", "0"), ("HEAD", "0")], lines


def test_a_timeout_504_logs_the_bytes_of_its_body(start_server, tmp_path):
    log = tmp_path / "access.log"
    srv = start_server("stuck", "--timeout", "1", "--access-log", str(log),
                       "--access-log-format", FORMAT)
    try:
        r = srv.request("GET", "/hang?token=t504")
        assert r.status == 504
        sent = len(r.body)
    finally:
        srv.open_gate("release-t504")
    [line] = log_lines(log, 1)
    assert (line[3], line[4]) == ("504", str(sent)) and sent == 16, line


def static_tree(tmp_path: Path) -> Path:
    d = tmp_path / "files"
    d.mkdir()
    (d / "small.txt").write_bytes(b"small\n")
    (d / "kept.bin").write_bytes(bytes(range(256)) * 84)  # 21,504 bytes: kept, sendfile
    return d


def test_static_answers_log_their_request_time(start_server, tmp_path):
    log = tmp_path / "access.log"
    srv = start_server("http2", "--static", f"/static={static_tree(tmp_path)}",
                       "--access-log", str(log), "--access-log-format", FORMAT)
    for name in ("small.txt", "kept.bin"):
        assert srv.request("GET", "/static/" + name).status == 200
        c = H2Client(srv.port)
        try:
            assert c.get("/static/" + name).status == 200
        finally:
            c.close()
    lines = log_lines(log, 4)
    assert all(float(line[5]) > 0 for line in lines), lines


def test_a_static_answer_on_a_uwsgi_listener_logs_the_client_nginx_passed(start_server,
                                                                          tmp_path):
    log = tmp_path / "access.log"
    srv = start_server("hello", "--static", f"/static={static_tree(tmp_path)}",
                       "--access-log", str(log), "--access-log-format", FORMAT,
                       binds=["uwsgi:127.0.0.1:0"])
    for path in (b"/static/small.txt", b"/static/kept.bin", b"/"):
        answer = exchange((srv.host, srv.port), nginx_vars(path=path))
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    lines = log_lines(log, 3)
    assert [line[0] for line in lines] == ["203.0.113.9"] * 3, lines

"""S17's plumbing (benchmarks/bench/s17.py, lossy_link.py): a run of h3load with a wrong body
or an error is not a verified one, the summary's ratios and targets, the check for `--http3`,
and the user-space link's loss and order."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        from bench import lossy_link, s17
    finally:
        sys.path.remove(str(BENCH))
    return s17, lossy_link


def h3_line(**over):
    j = {"tool": "h3load", "done": 100, "ok": 100, "verified": True, "req_per_s": 1000.0, "errors": 0,
         "bad_status": 0, "len_mismatch": 0, "sha_mismatch": 0, "first_problem": None,
         "latency_ms": {"p99": 1.0}}
    j.update(over)
    return "finished in 1s\n" + json.dumps(j) + "\n"


def test_h3load_runs_with_wrong_bodies_errors_or_no_check_are_not_verified(bench):
    s17, _ = bench
    ok = h3_line()
    assert s17.check_h3load(s17.h3_json(ok), ok) == ""
    for bad in (h3_line(ok=97, sha_mismatch=3, first_problem="body sha256 ab"), h3_line(errors=1),
                h3_line(bad_status=2), h3_line(verified=False), h3_line(done=0, ok=0)):
        assert s17.check_h3load(s17.h3_json(bad), bad) != ""
    assert s17.h3_json("h3load: unknown option\n") is None
    assert "no JSON" in s17.check_h3load(None, "boom")


def test_summary_gives_the_ratios_and_says_whether_the_targets_are_met(bench):
    s17, _ = bench
    row = lambda rate, cpu: {"rate": rate, "cpu_us": cpu, "peak_rss": 50 << 20}  # noqa: E731
    rows = {("S17a", "h3"): [row(950, 40)], ("S17a", "h2"): [row(980, 30)],
            ("S17b", "h3"): [row(30000, 12), row(28000, 13), row(31000, 11)], ("S17b", "h2"): [row(40000, 10)]}
    cmds = {k: ["tool"] for k in rows}
    text = "\n".join(s17.summary(["S17a", "S17b"], rows, cmds))
    assert "0.75x req/s, 1.20x CPU per request" in text  # 30,000 / 40,000; median 12 / 10
    assert "(>= 0.8x req/s at <= 1.3x CPU per request): NOT met" in text
    assert "(>= 900 req/s over HTTP/3): met" in text
    rows[("S17b", "h3")] = [row(36000, 12)]
    assert "CPU per request): met" in "\n".join(s17.summary(["S17b"], rows, cmds))


def test_a_build_without_http3_is_told_apart(bench, tmp_path):
    s17, _ = bench
    fake = tmp_path / "py"
    fake.write_text("#!/bin/sh\necho '  --http2 MODE  HTTP/2'\n")
    fake.chmod(0o755)
    ok, why = s17.has_http3(str(fake))
    assert not ok and "no --http3" in why
    fake.write_text("#!/bin/sh\necho '  --http2 MODE  HTTP/2'; echo '  --http3   HTTP/3'\n")
    assert s17.has_http3(str(fake)) == (True, "")


def test_the_user_space_link_drops_about_the_loss_asked_and_keeps_the_order(bench):
    _, lossy_link = bench
    srv, srv_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    cli, cli_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (srv, cli, srv_peer, cli_peer):
        s.setblocking(False)
    fwd = lossy_link.Forwarder(srv.fileno(), cli.fileno(), loss=0.2, delay_s=0.001, both_ways=False, seed=7)
    fwd.start()
    got = []

    def drain():
        while True:
            try:
                got.append(int.from_bytes(cli_peer.recv(16), "big"))
            except BlockingIOError:
                return

    try:
        for i in range(500):
            srv_peer.send(i.to_bytes(4, "big"))
            if i % 5 == 4:  # a unix datagram socket queues few: read as it comes
                time.sleep(0.002)
                drain()
        cli_peer.send(b"up")  # the other way: no loss
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (sum(fwd.counts["srv->cli"][:2]) < 500 or len(got) <
                                               fwd.counts["srv->cli"][0] or not fwd.counts["cli->srv"][0]):
            time.sleep(0.01)
            drain()
        up = srv_peer.recv(16)
    finally:
        fwd.stop_ev.set()
        fwd.join(timeout=5)
    delivered, lost, full, unwritten = fwd.counts["srv->cli"]
    assert (delivered + lost, full, unwritten) == (500, 0, 0)
    assert 50 <= lost <= 150  # 20% of 500, seeded
    assert got == sorted(got) and len(got) == delivered
    assert up == b"up" and fwd.counts["cli->srv"] == [1, 0, 0, 0]
    for s in (srv, cli, srv_peer, cli_peer):
        s.close()

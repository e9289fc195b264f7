"""HTTP/3 across a server's stops and its workers' recycling (`--http3`), over real UDP sockets
with aioquic's client (tests/h3_client.py) and load (tests/h3_load.py): the GOAWAY names the
first stream not served (RFC 9114 §5.2); a new connection during a graceful stop's drain is
refused at once; a stream cut at the end of `--graceful-timeout` is reset with
`H3_REQUEST_CANCELLED` and its connection closed with that code; and no request is lost while
`--max-requests` recycles workers or a HUP replaces them (a request the server marked as not
processed is retried, as a browser retries it, and counted).
"""

from __future__ import annotations

import asyncio
import re
import signal

from aioquic.asyncio.client import connect

from tests.h3_client import H3Client, _config, _Protocol
from tests.h3_load import CONNECTION_REFUSED, H3Load
from tests.helpers import wait_for
from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)

H3_NO_ERROR = 0x100
H3_REQUEST_CANCELLED = 0x10C


def tls_options(c: TlsCerts):
    return ["--certfile", str(c.server_chain), "--keyfile", str(c.server_key), "--http3"]


def handshake_end(port: int, ca_file: str, timeout: float = 30):
    """A new connection's handshake: `None` if it completed, else the server's close (aioquic's
    `ConnectionTerminated`); `"timeout"` if nothing came within `timeout` seconds."""
    async def attempt():
        async with connect("127.0.0.1", port, configuration=_config(ca_file, "localhost"),
                           create_protocol=_Protocol, wait_connected=False) as proto:
            try:
                proto.transmit()  # `connect` sends the Initial only when it waits itself
                await asyncio.wait_for(proto.wait_connected(), timeout)
            except ConnectionError:
                return proto.terminated
            except asyncio.TimeoutError:
                return "timeout"
            return None
    return asyncio.run(attempt())


def test_the_goaway_names_the_first_stream_the_server_does_not_serve(start_server, tls_certs):
    """The GOAWAY of a graceful stop carried the last stream the server had accepted (0 here)
    instead of the first it will not serve (4): RFC 9114 §5.2 says requests at the GOAWAY's id
    or above were not processed, so the client took its request in flight for rejected (a
    browser sends it again elsewhere while the server runs it). The request is answered."""
    srv = start_server("http3", *tls_options(tls_certs), "--graceful-timeout", "60")
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=30) as c:
        sid = c.request("GET", "/gate?name=goaway")
        srv.wait_marks("entered", 1)
        srv.signal(signal.SIGTERM)
        wait_for(lambda: c.goaway_id is not None, "the server's GOAWAY", 10)
        assert c.goaway_id == sid + 4
        srv.open_gate("goaway")
        r = c.response(sid)
    assert (r.status, bytes(r.body)) == (200, b"through the gate")
    assert srv.wait_exit(timeout=15) == 0


def test_a_new_connection_during_the_drain_is_refused_at_once(start_server, tls_certs):
    """During a graceful stop's drain the endpoint had no server configuration, which drops
    Initials unanswered: a client that came then waited its whole handshake timeout (60 s,
    the server long gone). It is refused at once (`CONNECTION_REFUSED`), and the request in
    flight on the old connection is still answered."""
    srv = start_server("http3", *tls_options(tls_certs), "--graceful-timeout", "60")
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=30) as c:
        sid = c.request("GET", "/gate?name=drain")
        srv.wait_marks("entered", 1)
        srv.signal(signal.SIGTERM)
        wait_for(lambda: c.goaway, "the server's GOAWAY", 10)
        end = handshake_end(srv.port, str(tls_certs.ca_cert))
        assert end is not None and end != "timeout", f"the new connection: {end}"
        assert end.error_code == CONNECTION_REFUSED, end
        srv.open_gate("drain")
        r = c.response(sid)
    assert r.status == 200
    assert srv.wait_exit(timeout=15) == 0


def test_a_stream_cut_at_the_graceful_timeout_is_reset_and_its_connection_says_why(
        start_server, tls_certs):
    """At the end of `--graceful-timeout` a call still running was cut with no RESET_STREAM
    (the connection's close was all the client heard) and the connection closed with
    `H3_NO_ERROR`, as if nothing was lost. The stream is reset with `H3_REQUEST_CANCELLED`
    (its call had started: not `H3_REQUEST_REJECTED`, RFC 9114 §4.1.1) and the connection is
    closed with it too."""
    srv = start_server("http3", *tls_options(tls_certs), "--graceful-timeout", "1")
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=30) as c:
        sid = c.request("GET", "/gate?name=never")
        srv.wait_marks("entered", 1)
        srv.signal(signal.SIGTERM)
        srv.wait_exit(timeout=30)
        r = c.response(sid)
        wait_for(lambda: c.terminated is not None, "the connection's close", 10)
        closed = c.terminated
    assert r.status == 0 and r.reset == H3_REQUEST_CANCELLED, (r.status, r.reset)
    assert closed.error_code == H3_REQUEST_CANCELLED, closed


def recycling_load(srv, tls_certs, during) -> H3Load:
    """Run `during(load)` under an HTTP/3 load of 16 connections with 4 requests in flight
    each on `srv`; the load."""
    with H3Load(srv.port, str(tls_certs.ca_cert), clients=16, streams=4) as load:
        load.wait_for(50)
        during(load)
        load.wait_for(50)
    print(f"HTTP/3 load: {load.ok} ok, {len(load.failed)} failed, retried {dict(load.retried)}")
    return load


def assert_none_lost(load: H3Load) -> None:
    assert not load.failed, (f"{len(load.failed)} of {load.ok + len(load.failed)} failed: "
                             f"{load.failed[:8]}; retried {dict(load.retried)}")


def test_no_http3_request_is_lost_while_max_requests_recycles_workers(start_server, tls_certs):
    """With `-w 2 --max-requests` under HTTP/3 load, 0.5-1 % of the requests failed, none of
    them run by the app: streams reset with `H3_REQUEST_CANCELLED`, connections closed under
    requests in flight, some left unanswered for 10 s and more (a worker coming or going
    changes the reuseport group, and the kernel moves open connections' datagrams to a worker
    that does not know them). Every request is answered 200 (a request the server marked as
    not processed is retried and counted), across many recycles."""
    srv = start_server("workers", *tls_options(tls_certs), "--workers", "2",
                       "--max-requests", "100", "--max-requests-jitter", "0")

    def recycled(load: H3Load) -> None:
        wait_for(lambda: len(load.pids) >= 12, "twelve workers' answers (ten recycles)", 180,
                 context=lambda: f"{load.ok} ok, failed {load.failed[:5]}")

    load = recycling_load(srv, tls_certs, recycled)
    assert_none_lost(load)


def test_no_http3_request_is_lost_across_hups(start_server, tls_certs):
    """A HUP under HTTP/3 load with `-w 2` lost requests (38 in a run) as recycling did.
    Every request is answered 200 across four HUPs."""
    srv = start_server("workers", *tls_options(tls_certs), "--workers", "2")

    def hups(load: H3Load) -> None:
        for _ in range(4):
            mark = srv.log_mark()
            srv.signal(signal.SIGHUP)
            wait_for(lambda: len(re.findall(r"Worker \d+ ready", srv.log_since(mark))) >= 2,
                     "the HUP's two new workers", 60)
            load.wait_for(50)

    load = recycling_load(srv, tls_certs, hups)
    assert_none_lost(load)

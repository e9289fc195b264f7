"""The options table's rows (options.py) for proxies in front: whose forwarding headers and PROXY
protocol headers are believed, and which family of forwarding headers is read.
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Tuple

from .option_row import Option
from .parsers import parse_forwarded_allow_ips, parse_forwarded_headers, parse_proxy_protocol


#: Whom to believe.
TRUST: Tuple[Option, ...] = (
    Option(
        "forwarded_allow_ips", parse_forwarded_allow_ips, "127.0.0.1,::1,unix",
        "Peers (addresses, CIDR networks, 'unix' for unix-socket peers, '*' for all) whose scheme is "
        "believed, as gunicorn's setting means: X-Forwarded-Proto or X-Forwarded-Ssl (or Forwarded's "
        "proto) becomes wsgi.url_scheme. REMOTE_ADDR and the access log's client stay the peer's "
        "(for those, --forwarded-for-ips). Also whose uwsgi variables are believed, and who may "
        "send a PROXY protocol header (without --proxy-allow-ips). Empty: nobody.",
        "LIST", "str", core=True,
    ),
    Option(
        "forwarded_for_ips", parse_forwarded_allow_ips, "",
        "Peers (as --forwarded-allow-ips lists them) whose forwarding headers are believed whole: the "
        "client's address, scheme, host and port they give become REMOTE_ADDR, REMOTE_PORT, wsgi.url_scheme, "
        "HTTP_HOST, SERVER_NAME, SERVER_PORT and the access log's client (X-Forwarded-For read from the "
        "right, past these peers). Empty: nobody (REMOTE_ADDR is the peer's, as in gunicorn).",
        "LIST", "str", core=True,
    ),
    Option(
        "proxy_protocol", parse_proxy_protocol, "false",
        "Every HTTP listener expects a PROXY protocol header (v1 or v2, HAProxy's send-proxy "
        "and send-proxy-v2) before the first request, from peers in --forwarded-allow-ips "
        "only; its client address becomes the connection's. One listener only: bind it as "
        "proxy:HOST:PORT. A missing or malformed header closes the connection. gunicorn's "
        "modes are taken too: --proxy-protocol v1, v2 or auto is on, off is off.",
        "", "bool", switch=True,
    ),
    Option(
        "proxy_allow_ips", parse_forwarded_allow_ips, "",
        "Peers (as --forwarded-allow-ips lists them) that may send a PROXY protocol header, "
        "when they are not those of --forwarded-allow-ips: gunicorn's --proxy-allow-from. "
        "The headers of the requests that follow are then believed or not by "
        "--forwarded-allow-ips, for the client the PROXY header names. Empty: the peers of "
        "--forwarded-allow-ips.",
        "LIST", "str", core=True, aliases=("--proxy-allow-from",),
    ),
)


#: Which headers are read (after the TLS rows, options_tls.py).
FAMILY: Tuple[Option, ...] = (
    Option(
        "forwarded_headers", parse_forwarded_headers, "x-forwarded",
        "Which forwarding headers are read from trusted peers: 'x-forwarded' (X-Forwarded-For, "
        "-Proto, -Ssl, -Host, -Port) or 'forwarded' (RFC 7239). Only one family: a proxy that "
        "sets one passes the other through from the client, who could then spoof it.",
        "FAMILY", "str", core=True,
    ),
)

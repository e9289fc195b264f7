"""Parsers of addresses and of whom to trust: --bind's addresses (listeners.parse_bind, plus
gunicorn's spellings), unix socket files' mode and owner, TLS's client certificates and
oldest version, the proxies believed, the control socket's path.
"""

from __future__ import annotations

import os
import socket

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional

from ..allowed_values import ALLOWED, spelled
from ..listeners import BindAddress, parse_bind
from .values import parse_bool, parse_str


#: The host of a `--bind :PORT` (gunicorn's form): every IPv4 interface, as gunicorn binds it.
ALL_INTERFACES = "0.0.0.0"


def parse_bind_value(value: object) -> BindAddress:
    """listeners.parse_bind, plus two forms a gunicorn user writes: `:8000` (every interface,
    port 8000, as gunicorn reads it) and a bare `8000`, refused with both readings offered."""
    text = parse_str(value).strip()
    if text.startswith("tcp://"):  # gunicorn's spelling of a plain HOST:PORT
        text = text[len("tcp://"):]
    if text.startswith("fd://"):
        raise ValueError("gunicorn's fd://N (a socket inherited as descriptor N) is not taken: "
                         "pass sockets by systemd socket activation (LISTEN_FDS), which "
                         "sluicegate uses instead of --bind")
    wire, address = "", text
    for prefix in ("https:", "http:"):
        if text.startswith(prefix):
            wire, address = prefix, text[len(prefix):]
    for prefix in ("uwsgi:", "proxy:"):
        if address.startswith(prefix):
            wire, address = wire + prefix, address[len(prefix):]
    if address.isdigit():
        raise ValueError(
            f"a port alone is not an address: did you mean 127.0.0.1:{address} (this machine "
            f"only) or :{address} (every interface)?"
        )
    if address.startswith(":") and address[1:].isdigit():
        text = f"{wire}{ALL_INTERFACES}{address}"
    return parse_bind(text)


def parse_socket_mode(value: object) -> Optional[int]:
    """Octal permission bits (660), or '' / None: off."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        mode = int(text, 8)
    except ValueError:
        raise ValueError("expected octal permission bits, e.g. 660") from None
    if not 0 <= mode <= 0o777:
        raise ValueError("expected octal permission bits, e.g. 660")
    return mode


def parse_socket_owner(value: object) -> Optional[str]:
    """USER, USER:GROUP or :GROUP (names or numbers), or '' / None: off."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected USER[:GROUP], not {type(value).__name__}")
    user, colon, group = value.strip().partition(":")
    if not user and not group:
        raise ValueError("expected USER[:GROUP], e.g. www-data or www-data:www-data")
    return value.strip()


def parse_cert_reqs(value: object) -> str:
    """none, optional or required; gunicorn's numbers (ssl.CERT_NONE=0, CERT_OPTIONAL=1,
    CERT_REQUIRED=2: the names' places in allowed_values.txt) too, so a gunicorn command line
    works unchanged."""
    names = ALLOWED["cert_reqs"]
    if isinstance(value, int) and not isinstance(value, bool):  # ssl.CERT_REQUIRED, 2
        value = str(int(value))
    text = parse_str(value).strip().lower()
    text = {str(number): name for number, name in enumerate(names)}.get(text, text)
    if text not in names:
        raise ValueError(f"expected {spelled(names)}")
    return text


def parse_tls_min_version(value: object) -> str:
    names = ALLOWED["tls_min_version"]
    text = parse_str(value).strip().lower().removeprefix("tlsv").removeprefix("tls")
    if text not in names:
        raise ValueError(f"expected {spelled(names)} (nothing older is served)")
    return text


def parse_forwarded_allow_ips(value: object) -> str:
    """Comma-separated addresses and CIDR networks, `unix` (unix-socket peers), `*` (all);
    empty: none. Normalised to the same text without spaces. A plain address is checked with
    inet_pton; ipaddress (half a megabyte of every process's memory) is imported only for the
    rest (networks, scoped addresses) and for what inet_pton refuses, whose error it words."""
    if isinstance(value, (list, tuple)):
        value = ",".join(parse_str(v) for v in value)
    items = [i.strip() for i in parse_str(value).split(",")]
    for item in items:
        if item in ("", "*", "unix") or _plain_address(item):
            continue
        import ipaddress

        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an address, a network, 'unix' or '*'") from None
    return ",".join(i for i in items if i)


def _plain_address(item: str) -> bool:
    """An IPv4 address in dotted quads or an IPv6 address without scope (what ipaddress takes
    as a one-address network too)."""
    family = socket.AF_INET6 if ":" in item else socket.AF_INET
    if "/" in item or "%" in item or (family == socket.AF_INET and item.count(".") != 3):
        return False
    try:
        socket.inet_pton(family, item)
    except (OSError, ValueError):
        return False
    return True


def parse_forwarded_headers(value: object) -> str:
    """x-forwarded or forwarded."""
    text = parse_str(value).strip().lower()
    if text not in ALLOWED["forwarded_headers"]:
        raise ValueError(f"must be {spelled(ALLOWED['forwarded_headers'])}")
    return text


def parse_proxy_protocol(value: object) -> bool:
    """A switch, or gunicorn 27's modes: off is false; v1, v2 and auto are true (a listener
    that expects a PROXY header reads either version)."""
    if isinstance(value, str) and value.strip().lower() in ("v1", "v2", "auto"):
        return True
    try:
        return parse_bool(value)
    except ValueError:
        raise ValueError("expected true or false (gunicorn's off, v1, v2 or auto too)") from None


def parse_control_socket(value: object) -> str:
    """A unix socket path for the control socket ('' for the default one)."""
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    text = os.fspath(value)
    text = text[5:] if text.startswith("unix:") else text
    if "\0" in text:
        raise ValueError("a path cannot hold a NUL byte")
    if len(os.fsencode(text)) > 107:  # sun_path: 108 bytes with its NUL
        raise ValueError("a unix socket path is at most 107 bytes")
    return text

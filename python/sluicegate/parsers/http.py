"""Parsers of how HTTP is served and answered: the protocols (--http2, --http3), the app's
mount path, the health path, --static mounts (`StaticMount`, handed to the core as is),
and the headers and Expires rules added to answers.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

from ..allowed_values import ALLOWED
from ..static_mount import StaticMount
from .values import parse_str


def parse_root_path(value: object) -> str:
    """'' or a path that starts with '/' and does not end with '/'."""
    text = parse_str(value)
    if text and (not text.startswith("/") or text.endswith("/")):
        raise ValueError("must be empty or start with '/' and not end with '/', e.g. /app")
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        raise ValueError("cannot contain control characters")
    return text


def parse_health_path(value: object) -> str:
    """'' (off) or an absolute path without a query, e.g. /healthz."""
    text = parse_str(value)
    if text and not text.startswith("/"):
        raise ValueError("must be empty or start with '/', e.g. /healthz")
    if any(ord(c) <= 32 or c in "?#\x7f" for c in text) or not text.isascii():
        raise ValueError("must be a plain ASCII path: no spaces, controls, '?' or '#'")
    return text


def parse_http2(value: object) -> str:
    """on, tls or off (and the switch spellings: true means on, false off)."""
    text = parse_str(value).strip().lower()
    if text in ("1", "true", "yes"):
        text = "on"
    elif text in ("0", "false", "no"):
        text = "off"
    if text not in ALLOWED["http2"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['http2'])}")
    return text


def parse_http3(value: object) -> str:
    """on or off, as `--http2` names its states (and the switch spellings: true means on,
    false off; a Python bool for serve())."""
    if isinstance(value, bool):
        return "on" if value else "off"
    text = parse_str(value).strip().lower()
    if text in ("1", "true", "yes"):
        text = "on"
    elif text in ("0", "false", "no", ""):
        text = "off"
    if text not in ALLOWED["http3"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['http3'])}")
    return text


def parse_http3_congestion(value: object) -> str:
    text = parse_str(value).strip().lower()
    if text not in ALLOWED["http3_congestion"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['http3_congestion'])}")
    return text


def parse_static(value: object) -> StaticMount:
    """`URL_PREFIX=DIRECTORY`, optionally followed by `;`-separated settings: `max-age=N`,
    `immutable`, `index=NAME` or `index=none`, `dotfiles`, `follow-symlinks`."""
    if isinstance(value, StaticMount):
        return value
    text = parse_str(value).strip()
    head, *settings = text.split(";")
    prefix, sep, directory = head.partition("=")
    if not sep or not prefix or not directory:
        raise ValueError("expected URL_PREFIX=DIRECTORY, e.g. /static=./public")
    if not prefix.startswith("/"):
        raise ValueError("the URL prefix must start with '/', e.g. /static")
    # "/static/" (Django's STATIC_URL as written) is the mount "/static".
    prefix = prefix.rstrip("/") or "/"
    if any(c in prefix for c in "?#%\\") or any(ord(c) < 33 for c in prefix):
        raise ValueError("the URL prefix must be a plain path (no ?, #, %, spaces or controls)")
    if not os.path.isdir(directory):
        raise ValueError(f"{directory!r} is not a directory")
    mount: Dict[str, Any] = {"prefix": prefix, "directory": os.path.abspath(directory)}
    for item in (x.strip() for x in settings):
        key, _, arg = item.partition("=")
        if key == "max-age" and arg.isdigit():
            mount["max_age"] = int(arg)
        elif key == "immutable" and not arg:
            mount["immutable"] = True
        elif key == "index" and arg:
            mount["index"] = None if arg == "none" else arg
        elif key == "dotfiles" and not arg:
            mount["dotfiles"] = True
        elif key == "follow-symlinks" and not arg:
            mount["follow_symlinks"] = True
        elif key == "fallthrough" and not arg:
            mount["fallthrough"] = True
        elif item:
            raise ValueError(
                f"unknown setting {item!r} (max-age=N, immutable, index=NAME|none, dotfiles, "
                "follow-symlinks, fallthrough)"
            )
    if mount.get("index") and ("/" in mount["index"] or mount["index"].startswith(".")):
        raise ValueError("index must be a plain file name")
    return StaticMount(**mount)


# The longest --server-header: the value goes out in every response head, so a mistaken one
# (a file pasted in, 100 KiB) would make every response that much longer. Real ones are a
# product name and version ("nginx/1.27.1", "gunicorn"): 256 bytes leaves room for any.
MAX_SERVER_HEADER = 256


def parse_server_header(value: object) -> str:
    """Any visible text; it becomes a response header, so CR, LF and other controls are refused,
    and so is a value longer than MAX_SERVER_HEADER bytes."""
    text = parse_str(value)
    if any((ord(c) < 32 and c != "\t") or c == "\x7f" for c in text):
        raise ValueError("cannot contain control characters (CR, LF, ...)")
    if not text.isascii():
        raise ValueError("must be ASCII")
    text = text.strip()
    if len(text) > MAX_SERVER_HEADER:
        raise ValueError(f"is {len(text)} bytes long; at most {MAX_SERVER_HEADER} are allowed")
    return text


#: A header name: an RFC 9110 token.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")


#: A header value: visible bytes, spaces and tabs, no CR, LF, NUL or other control.
_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*\Z")


#: Names an added header may not take: connection management and framing are the server's,
#: as they are for the app (its hop-by-hop headers are refused the same way).
_FORBIDDEN = ("connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
              "trailer", "upgrade", "content-length")


def parse_add_header(value: object) -> str:
    """`Name: value`, checked as the app's headers are; returned as written (trimmed)."""
    if not isinstance(value, str):
        raise ValueError(f"expected 'Name: value', not {type(value).__name__}")
    name, colon, text = value.partition(":")
    name, text = name.strip(), text.strip(" \t")
    if not colon or not _TOKEN.match(name):
        raise ValueError("expected 'Name: value' with a header name (letters, digits, '-'), "
                         "e.g. 'X-Frame-Options: DENY'")
    if not _VALUE.match(text) or any(ord(c) > 0xFF for c in text):
        raise ValueError(f"the value of {name} must be Latin-1 text without control "
                         "characters (CR, LF, NUL)")
    if name.lower() in _FORBIDDEN:
        raise ValueError(f"{name} is the server's to set (connection management and framing)")
    return f"{name}: {text}"


def parse_expires(value: object) -> str:
    """`REGEX SECONDS`: a pattern, a space, whole seconds >= 0 (the pattern is compiled by the
    core at start, which names it if it cannot be matched)."""
    if not isinstance(value, str):
        raise ValueError(f"expected 'REGEX SECONDS', not {type(value).__name__}")
    pattern, _, seconds = value.strip().rpartition(" ")
    if not pattern.strip() or not seconds.isdigit():
        raise ValueError("expected 'REGEX SECONDS', e.g. '\\.(css|js)$ 86400'")
    return f"{pattern.strip()} {int(seconds)}"

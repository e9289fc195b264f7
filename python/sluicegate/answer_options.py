"""The options table's rows (options.py) for what the server adds to its answers, with uWSGI
2.0's meanings: `--add-header` (every HTTP/1.1 answer) and `--static-expires` /
`--static-expires-uri` (an Expires header on static answers); their parsers, and the values
the Rust core is handed for them (config.py's derived keys `add_headers`, `static_expires`).

Declared here rather than in options.py to keep that file within its size; options.py places
these rows and nothing else spells them.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, Sequence, Tuple

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


def encoded_headers(headers: Sequence[str]) -> bytes:
    """The `Name: value\\r\\n` lines the core writes into every HTTP/1.1 answer's head."""
    return b"".join(h.encode("latin-1") + b"\r\n" for h in headers)


def parse_expires(value: object) -> str:
    """`REGEX SECONDS`: a pattern, a space, whole seconds >= 0 (the pattern is compiled by the
    core at start, which names it if it cannot be matched)."""
    if not isinstance(value, str):
        raise ValueError(f"expected 'REGEX SECONDS', not {type(value).__name__}")
    pattern, _, seconds = value.strip().rpartition(" ")
    if not pattern.strip() or not seconds.isdigit():
        raise ValueError("expected 'REGEX SECONDS', e.g. '\\.(css|js)$ 86400'")
    return f"{pattern.strip()} {int(seconds)}"


def expires_rules(paths: Sequence[str], uris: Sequence[str]) -> List[Tuple[str, int, bool]]:
    """The core's `static_expires`: (pattern, seconds, on the URI) per rule, in order."""
    rules = []
    for values, on_uri in ((paths, False), (uris, True)):
        for v in values:
            pattern, _, seconds = v.rpartition(" ")
            rules.append((pattern, int(seconds), on_uri))
    return rules


def static_rows(Option: Callable[..., Any]) -> Tuple[Any, ...]:
    """These options' rows of the table, after --static-fallthrough."""
    return (
        Option("static_expires", parse_expires, [],
               "Add an Expires header (now + SECONDS) to a --static answer (200 or 206) whose "
               "file path (the mount's directory and the file under it) matches REGEX "
               "(uWSGI's static-expires; the Rust regex syntax, which takes PCRE's usual "
               "patterns but not lookaround or backreferences). The first matching rule wins, "
               "these before --static-expires-uri's. Give it several times for several rules.",
               "\"REGEX SECONDS\"", Tuple[str, ...], repeatable=True),
        Option("static_expires_uri", parse_expires, [],
               "The same, matched on the request's URI as sent (path and query): uWSGI's "
               "static-expires-uri.",
               "\"REGEX SECONDS\"", Tuple[str, ...], repeatable=True),
    )


def header_rows(Option: Callable[..., Any]) -> Tuple[Any, ...]:
    """These options' rows of the table, after --server-header."""
    return (
        Option("add_header", parse_add_header, [],
               "Add this header to every HTTP/1.1 and uwsgi-protocol answer: the app's (after "
               "its own headers, even one of the same name, as uWSGI's add-header appends), "
               "static files' and --health-path's; not the server's own error answers (400, "
               "408, 431, ...) nor HTTP/2 and HTTP/3 answers. 'Name: value', checked as the "
               "app's headers are. Give it several times for several headers.",
               "\"NAME: VALUE\"", Tuple[str, ...], repeatable=True),
    )

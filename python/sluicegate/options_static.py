"""The options table's rows (options.py) for the static files the core serves itself (--static,
src/io/static_files.rs), and the Expires headers of their answers with uWSGI 2.0's meanings.
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Tuple

from .option_row import Option
from .parsers import StaticMount, parse_bool, parse_expires, parse_static


ROWS: Tuple[Option, ...] = (
    Option(
        "static", parse_static, [],
        "Serve the files under DIRECTORY at URL_PREFIX (/static, or /static/ as Django's STATIC_URL writes it) from the "
        "Rust core, without calling the app: GET and HEAD with sendfile, Range, conditional requests, precompressed .br/.gz "
        "siblings, files up to 64 KiB kept in memory (4 MiB per process) until inotify reports a change. Settings after ';': "
        "max-age=N and immutable (Cache-Control), index=NAME|none (default index.html), dotfiles (serve names starting with "
        "'.'), follow-symlinks (allow symlinks that leave the directory), fallthrough (no file: the app answers, "
        "as --static-fallthrough for this mount alone; uWSGI's check-static is /=DIR;fallthrough). Give it several "
        "times for several mounts.",
        "URL_PREFIX=DIRECTORY[;SETTING...]", "Tuple[StaticMount, ...]", repeatable=True,
    ),
    Option(
        "static_fallthrough", parse_bool, "false",
        "When no static file matches a request under a --static prefix, pass the request to the "
        "app instead of answering 404.",
        "", "bool", switch=True, core=True,
    ),
    Option("static_expires", parse_expires, [],
           "Add an Expires header (now + SECONDS) to a --static answer (200 or 206) whose "
           "file path (the mount's directory and the file under it) matches REGEX "
           "(uWSGI's static-expires; the Rust regex syntax, which takes PCRE's usual "
           "patterns but not lookaround or backreferences). The first matching rule wins, "
           "these before --static-expires-uri's. Give it several times for several rules.",
           "\"REGEX SECONDS\"", "Tuple[str, ...]", repeatable=True),
    Option("static_expires_uri", parse_expires, [],
           "The same, matched on the request's URI as sent (path and query): uWSGI's "
           "static-expires-uri.",
           "\"REGEX SECONDS\"", "Tuple[str, ...]", repeatable=True),
)

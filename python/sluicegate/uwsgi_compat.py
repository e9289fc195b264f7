"""What `--uwsgi-compat`'s items and `--uwsgi-log-format` change at runtime, read by the roles
and the core's config: the items' names (options_uwsgi.py parses them), the N of an item, a
new worker's requests beyond --max-requests, and the prefix that marks a uWSGI log format in
the core's `access_log_format`.

Apart from the options table (options_uwsgi.py, parsers/log.py): the master and the workers
read these from a validated Config, and a process that receives its Config ready-made
(uwsgi_cli.py) never imports the table.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Optional, Tuple

#: --uwsgi-compat's items (uWSGI's ways where they differ from sluicegate's own).
COMPAT_BUFFER_SIZE = "buffer-size"
COMPAT_DELTA = "max-requests-delta"
COMPAT_MIN_LIFETIME = "min-worker-lifetime"

#: The core's `access_log_format` for a uWSGI log format: this, then the format
#: (src/observe/uwsgi_format.rs).
UWSGI_FORMAT_PREFIX = "uwsgi:"


def compat_number(items: Tuple[str, ...], name: str) -> Optional[int]:
    """The N of --uwsgi-compat NAME=N, or None."""
    for item in items:
        key, _, number = item.partition("=")
        if key == name:
            return int(number)
    return None


def requests_beyond(cfg: Any, wid: int) -> int:
    """What a new worker serves beyond --max-requests (none without it): under --uwsgi-compat
    max-requests-delta=N, uWSGI 2.0's `(worker_id - 1) * delta` (core/utils.c,
    uwsgi_close_request), `wid` its worker id from 0 (children.Child.free_wid, kept by a
    replacement as uWSGI's is); else a random count up to --max-requests-jitter."""
    if not cfg.max_requests:
        return 0
    delta = compat_number(cfg.uwsgi_compat, COMPAT_DELTA)
    if delta is not None:
        return wid * delta
    if not cfg.max_requests_jitter:
        return 0
    import random  # only for --max-requests-jitter

    return random.randint(0, cfg.max_requests_jitter)

"""The options table's rows (options.py) for what a master does beside serving, with uWSGI 2.0's
meanings: side commands (side_commands.py), shell commands before the app is loaded, reloads
when a file is touched or on SIGTERM, and workers replaced by age; and the parsers only they use.

Declared here rather than in options.py to keep that file within its size; options.py places
these rows (after --max-rss) and nothing else spells them.
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

from .allowed_values import ALLOWED, spelled
from .side_commands import parse_smart


def parse_command(value: object) -> str:
    """A shell command: any non-empty text."""
    if not isinstance(value, str):
        raise ValueError(f"expected a command, not {type(value).__name__}")
    if not value.strip():
        raise ValueError("expected a command, not an empty string")
    if "\0" in value:
        raise ValueError("a command cannot contain NUL")
    return value.strip()


def parse_smart_command(value: object) -> str:
    """`PIDFILE COMMAND`, checked, kept as written (side_commands.py splits it)."""
    text = parse_command(value)
    parse_smart(text)
    return text


def parse_on_term(value: object) -> str:
    if not isinstance(value, str) or value.strip().lower() not in ALLOWED["on_term"]:
        raise ValueError(f"expected {spelled(ALLOWED['on_term'])}")
    return value.strip().lower()


def option_rows(Option: Callable[..., Any], parse_path: Callable[[object], Any],
                parse_seconds_or_off: Callable[[object], float]) -> Tuple[Any, ...]:
    """These options' rows of the table, in its order (after --max-rss)."""
    return (
        Option("attach_daemon", parse_command, [],
               "Run this shell command beside the server (uWSGI's attach-daemon): the master "
               "starts it once the sockets are bound (sh -c, a session of its own, standard "
               "input from /dev/null), starts it again when it exits (a command that lived under "
               "3 s waits first, as uWSGI throttles it), and stops it at the end (SIGTERM to its "
               "process group, SIGKILL 5 s later). A reload (HUP) leaves it running. Implies a "
               "master (one worker unless --workers says more). Give it several times for "
               "several commands (docs/operations.md, \"Side commands\").",
               "COMMAND", Tuple[str, ...], repeatable=True),
        Option("smart_attach_daemon", parse_smart_command, [],
               "Run a command that daemonizes itself and writes its pid to PIDFILE (uWSGI's "
               "smart-attach-daemon): started unless PIDFILE already names a live process, "
               "started again when the process PIDFILE names is gone (checked every second), "
               "and left running when the server stops, as uWSGI leaves it. Implies a master. "
               "Give it several times for several.",
               "\"PIDFILE COMMAND\"", Tuple[str, ...], repeatable=True),
        Option("exec_pre_app", parse_command, [],
               "Run this shell command before the app is loaded (uWSGI's exec-pre-app and "
               "hook-pre-app = exec:...): in each worker before it imports the app, or once in "
               "the master with --preload (or in a single server). A command that fails (exit "
               "status other than 0) stops the start, as in uWSGI. Give it several times for "
               "several, run in order.",
               "COMMAND", Tuple[str, ...], repeatable=True),
        Option("touch_reload", parse_path, [],
               "Reload gracefully (as HUP: new workers, then the old ones drain) when this "
               "file's modification time changes, or when it appears (uWSGI's touch-reload): "
               "the master looks at it every 0.5 s. Implies a master. Give it several times for "
               "several files.",
               "PATH", Tuple[str, ...], repeatable=True),
        Option("max_worker_lifetime", parse_seconds_or_off, "0",
               "With --workers: replace a worker once it has served this many seconds (uWSGI's "
               "max-worker-lifetime), the way --max-requests replaces one: its replacement is "
               "ready before it stops, and it finishes its in-flight requests. 0: never.",
               "SECONDS", float),
        Option("max_worker_lifetime_delta", parse_seconds_or_off, "0",
               "With --max-worker-lifetime: worker N (from 1; its replacement takes over its "
               "number) lives N-1 times this many seconds longer, so workers are not all "
               "replaced at once (uWSGI's max-worker-lifetime-delta).",
               "SECONDS", float),
        Option("on_term", parse_on_term, "stop",
               "What SIGTERM does: stop (finish in-flight requests, then exit) or reload (a "
               "graceful reload, as HUP: uWSGI 2.0's meaning of TERM without die-on-term). "
               "SIGINT and SIGQUIT still stop. reload implies a master.",
               "ACTION", str),
    )

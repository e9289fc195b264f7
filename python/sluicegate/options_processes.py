"""The options table's rows (options.py) for the processes and threads that serve: the master and
its workers (master.py), what the master does beside them with uWSGI 2.0's meanings (side
commands, commands before the app, reloads on a touch or on SIGTERM, workers replaced by age),
the user and files of the process itself, and the elastic pool of app threads and where app
calls run.
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional, Tuple

from .option_row import Option
from .parsers import (parse_bool, parse_command, parse_count_or_zero, parse_on_term, parse_path,
                      parse_path_or_off, parse_proc_name, parse_scheduler, parse_seconds_or_off,
                      parse_size, parse_smart_command, parse_spin, parse_pace, parse_start_gate, parse_threads, parse_umask,
                      parse_warmup, parse_worker_class, parse_workers)


#: The master, its workers, and when a worker is replaced.
WORKERS: Tuple[Option, ...] = (
    Option(
        "workers", parse_workers, None,
        "Run a master process and this many worker processes, each with its own event loop and "
        "app threads, all serving the same sockets (auto: one per CPU available). The master "
        "replaces a worker that dies and handles reloads (HUP) and the other operations "
        "signals (docs/operations.md). Unset: one process serves, without a master.",
        "N", "Optional[int]", short="-w",
    ),
    Option(
        "worker_class", parse_worker_class, "gthread",
        "gunicorn's worker type, accepted so that its command lines work: sync and gthread "
        "name what every sluicegate process does (an event loop, and an elastic pool of "
        "threads for the app: --threads); any other (gevent, eventlet, uvicorn's) is refused.",
        "CLASS", "str", short="-k",
    ),
    Option(
        "preload", parse_bool, "false",
        "With --workers: import the app in the master before forking the workers (memory "
        "shared copy-on-write, an import error found before any worker starts). A reload (HUP) "
        "then restarts the workers with the master's copy of the app.",
        "", "bool", switch=True,
    ),
    Option(
        "max_requests", parse_count_or_zero, "0",
        "With --workers: replace a worker after it has served this many requests (plus a random "
        "0..--max-requests-jitter): with the request that makes the count it stops accepting "
        "and that answer ends keep-alive, so it serves no other new request; it finishes its "
        "in-flight requests, and stops once its replacement is ready. 0: never.",
        "N", "int",
    ),
    Option(
        "max_requests_jitter", parse_count_or_zero, "0",
        "A random 0..N added to --max-requests per worker, so workers are not all replaced at "
        "once.",
        "N", "int",
    ),
    Option(
        "reload", parse_bool, "false",
        "For development: watch the app's Python files (under the working directory) and "
        "replace the workers when one changes; code that does not import leaves the old "
        "workers serving. Runs a master with one worker unless --workers says more. Needs "
        "the watchfiles package (pip install 'sluicegate[reload]').",
        "", "bool", switch=True,
    ),
    Option(
        "reload_extra", parse_path, [],
        "With --reload: also replace the workers when this file (or anything under this "
        "directory) changes: templates, configuration. Give it several times for several.",
        "PATH", "Tuple[str, ...]", repeatable=True, aliases=("--reload-extra-file",),
    ),
    Option(
        "warmup", parse_warmup, "",
        "Before a worker (or a single server) says it is ready, call the app once with GET of "
        "this path, in the process (no socket, from 127.0.0.1; http://HOST/PATH sets the Host "
        "header): an answer of 500 or more, or an exception, fails the boot, so a reload "
        "(HUP, --reload) whose code errors on this path is abandoned and the old workers keep "
        "serving. Name a path that touches what a deploy can break. Empty: off.",
        "PATH", "str",
    ),
    Option(
        "django_checks", parse_bool, "false",
        "For a Django app: run Django's system checks (manage.py check) before a worker says "
        "ready; an error fails its boot (a reload is abandoned). Without it a Django app's "
        "URLconf, and every view module it imports, is still imported before ready.",
        "", "bool", switch=True,
    ),
    Option(
        "max_rss", parse_size, "0",
        "With --workers: replace a worker whose resident memory passes this size (e.g. 512M), "
        "the same way as --max-requests: its replacement is ready before it stops, and it "
        "finishes its in-flight requests. The master looks every 0.5 s. 0: never.",
        "BYTES", "int",
    ),
)


#: What a master does beside serving (side_commands.py, touch.py, master.py).
MASTER_DUTIES: Tuple[Option, ...] = (
    Option("attach_daemon", parse_command, [],
           "Run this shell command beside the server (uWSGI's attach-daemon): the master "
           "starts it once the sockets are bound (sh -c, a session of its own, standard "
           "input from /dev/null), starts it again when it exits (a command that lived under "
           "3 s waits first, as uWSGI throttles it), and stops it at the end (SIGTERM to its "
           "process group, SIGKILL 5 s later). A reload (HUP) leaves it running. Implies a "
           "master (one worker unless --workers says more). Give it several times for "
           "several commands (docs/operations.md, \"Side commands\").",
           "COMMAND", "Tuple[str, ...]", repeatable=True),
    Option("smart_attach_daemon", parse_smart_command, [],
           "Run a command that daemonizes itself and writes its pid to PIDFILE (uWSGI's "
           "smart-attach-daemon): started unless PIDFILE already names a live process, "
           "started again when the process PIDFILE names is gone (checked every second), "
           "and left running when the server stops, as uWSGI leaves it. Implies a master. "
           "Give it several times for several.",
           "\"PIDFILE COMMAND\"", "Tuple[str, ...]", repeatable=True),
    Option("exec_pre_app", parse_command, [],
           "Run this shell command before the app is loaded (uWSGI's exec-pre-app and "
           "hook-pre-app = exec:...): in each worker before it imports the app, or once in "
           "the master with --preload (or in a single server). A command that fails (exit "
           "status other than 0) stops the start, as in uWSGI. Give it several times for "
           "several, run in order.",
           "COMMAND", "Tuple[str, ...]", repeatable=True),
    Option("touch_reload", parse_path, [],
           "Reload gracefully (as HUP: new workers, then the old ones drain) when this "
           "file's modification time changes, or when it appears (uWSGI's touch-reload): "
           "the master looks at it every 0.5 s. Implies a master. Give it several times for "
           "several files.",
           "PATH", "Tuple[str, ...]", repeatable=True),
    Option("max_worker_lifetime", parse_seconds_or_off, "0",
           "With --workers: replace a worker once it has served this many seconds (uWSGI's "
           "max-worker-lifetime), the way --max-requests replaces one: its replacement is "
           "ready before it stops, and it finishes its in-flight requests. 0: never.",
           "SECONDS", "float"),
    Option("max_worker_lifetime_delta", parse_seconds_or_off, "0",
           "With --max-worker-lifetime: worker N (from 1; its replacement takes over its "
           "number) lives N-1 times this many seconds longer, so workers are not all "
           "replaced at once (uWSGI's max-worker-lifetime-delta).",
           "SECONDS", "float"),
    Option("on_term", parse_on_term, "stop",
           "What SIGTERM does: stop (finish in-flight requests, then exit) or reload (a "
           "graceful reload, as HUP: uWSGI 2.0's meaning of TERM without die-on-term). "
           "SIGINT and SIGQUIT still stop. reload implies a master.",
           "ACTION", "str"),
)


#: The process's user, umask, pid file and title.
IDENTITY: Tuple[Option, ...] = (
    Option(
        "user", parse_path, None,
        "Run as this user (name or uid) after binding the sockets and before importing the app; "
        "its primary group too unless --group is given. Needs root at start.",
        "USER", "Optional[str]", short="-u",
    ),
    Option(
        "group", parse_path, None,
        "Run as this group (name or gid), dropped to with --user.",
        "GROUP", "Optional[str]", short="-g",
    ),
    Option(
        "umask", parse_umask, None,
        "Set the process umask first (octal, e.g. 027): the permissions of unix socket files and of files "
        "the app creates. Unset: inherited, and unix socket files are made under umask 0 (srwxrwxrwx: "
        "gunicorn's default; the directory decides who reaches them).",
        "MASK", "Optional[int]", short="-m",
    ),
    Option(
        "pid", parse_path_or_off, None,
        "Write the server's (the master's) process id to this file at start; removed at exit.",
        "FILE", "Optional[str]", short="-p",
    ),
    Option(
        "proc_name", parse_proc_name, None,
        "Set the process titles (ps, top, /proc/PID/cmdline) as gunicorn's --name does: "
        "'sluicegate: master [NAME]', 'sluicegate: worker [NAME]', or 'sluicegate: server "
        "[NAME]' for a single process, with the setproctitle package (pip install "
        "'sluicegate[setproctitle]'); without it, the short process name (/proc/PID/comm, "
        "15 bytes, what top shows) becomes master:NAME, worker:NAME or server:NAME. Unset: "
        "titles are left alone.",
        "NAME", "Optional[str]", short="-n", aliases=("--name",),
    ),
)


#: The app's threads and where app calls run.
THREADS: Tuple[Option, ...] = (
    Option(
        "threads", parse_threads, "auto",
        "Bounds of the elastic pool of threads that run the app: MIN:MAX, or N for 1:N. Threads "
        "beyond MIN are started under load and stop when idle. auto: 1:1024, except 1:48 for an "
        "app that holds a database connection per thread (Django with a database other than "
        "SQLite and no connection pool), so that a burst stays within PostgreSQL's default "
        "connection limit (see docs/deploying.md).",
        "MIN:MAX", "Optional[Tuple[int, int]]",
    ),
    Option(
        "max_runnable", parse_count_or_zero, "1",
        "Most app calls on the pool that may run Python at once, for short requests and again "
        "for long ones (by what their path took recently); further requests wait in order, "
        "short ones first, and a call seen blocked (sleeping, waiting for a database) stops "
        "counting, so blocking apps still get up to MAX threads. Keeps a burst of requests from "
        "becoming a convoy of threads fighting for the GIL (see docs/architecture.md). 0: no "
        "limit.",
        "N", "int", core=True,
    ),
    Option(
        "scheduler", parse_scheduler, "adaptive",
        "Where app calls run. adaptive: inline on the event loop's thread while calls return "
        "quickly, on the pool as soon as one blocks (see docs/architecture.md). inline: always "
        "inline (a blocked call is still taken over). pool: always on the pool (for apps known "
        "to block on every request).",
        "MODE", "str", core=True,
    ),
    Option(
        "spin", parse_spin, "auto",
        "Whether the event loop looks for events for up to 50 µs before it sleeps, while its "
        "sleeps have been short (the next request is read without a wake-up, for CPU spent "
        "looking). auto: only while the process may use every CPU of the machine and its cgroup "
        "is not throttled (no CPU quota or cpuset below them, read again every second: in a "
        "container with a CPU limit the spin would spend the quota the app needs). on: "
        "whatever the allowance. off: never.",
        "MODE", "str", core=True,
    ),
    Option(
        "pace", parse_pace, "off",
        "auto: pace the CPU under 90% of the cgroup's quota (docs/deploying.md). off: never.",
        "MODE", "str", core=True,
    ),
    Option(
        "start_gate", parse_start_gate, "auto",
        "How many pool calls may wait for the GIL to start at once; the others sleep on the "
        "server's own gate until woken once, where CPython's GIL waiters each wake every 5 ms. "
        "auto: 2 while the allowance binds (a cpuset of fewer CPUs than the machine, or a CPU "
        "quota that throttled the process since the last reading, every second), where a "
        "throttled period leaves many calls runnable at once; 16 otherwise. on: 2 always. "
        "off: no gate.",
        "MODE", "str", core=True,
    ),
)

"""Answers which of the standard library's larger modules are loaded in the process serving
it, one name a line (empty: none). A worker is a fork of its master, so the answer covers what
the master imported before forking too.

/         the modules no process needs unless an option asks for them (WATCHED)
/uwsgi    those, the ones only sluicegate's own command line needs (COMMAND_LINE), the
          readers of uWSGI's configurations (UWSGI_READERS) and the options table that
          validates them (OPTIONS_TABLE), both run by a process of their own, and what
          sluicegate's command line imports anyway but `sluicegate-uwsgi` imports only for
          options or messages (UWSGI_LAZY): a worker of `sluicegate-uwsgi` has no use for them
/master   `_core` if the process's parent (a worker's master) has the extension mapped: a
          master never loads it, its workers do after the fork (master.py)
"""

import os
import sys

#: Modules the server imports only for the options that need them (`--metrics-bind`, a
#: logging configuration, `--log-syslog`, `worker.tmp`, `static-expires-type`, side commands,
#: `--exec-pre-app`, uWSGI's XML, JSON and `exec://` configurations, `for-glob`,
#: `--max-requests-jitter`, `--warmup`, a `--user` switch, a network in
#: `--forwarded-allow-ips`, gunicorn hooks, an app that is not a plain function or is a
#: factory's call, `--stats`, a logging configuration's defaults (copy), a server without
#: --workers (single.py), a worker's first `ctl` status (metrics_total.py's parser), gunicorn's
#: hooks' runner and their `server` and `worker` objects (hooks set), `--warmup` or Django's
#: checks (preflight.py), `--statsd-host` (statsd.py), the control socket's first client
#: (struct: its peer's credentials), a USR2 upgrade's new master (fcntl), or a user switch
#: (privileges.py imports json, struct and fcntl before it)), or
#: never (ctypes: prctl is the core's; resource: uwsgi.mem() reads the page size from os;
#: dataclasses: the front's records are records.py's; typing: the front imports its names for
#: annotations only; the options' docs: `python -m sluicegate.options --markdown` only).
WATCHED = ("http.client", "http.server", "email", "ssl", "socketserver", "logging.config",
           "tempfile", "mimetypes", "logging.handlers", "pickle", "queue", "ctypes",
           "subprocess", "xml.dom.minidom", "pyexpat", "glob", "random", "urllib.parse",
           "sysconfig", "pathlib", "ipaddress", "dataclasses", "inspect", "ast", "dis", "typing",
           "sluicegate.options_doc", "copy", "sluicegate.uwsgi_stats", "sluicegate.single",
           "sluicegate.metrics_total", "sluicegate.hook_objects", "sluicegate.hooks",
           "sluicegate.preflight", "sluicegate.statsd", "struct", "fcntl", "resource")

#: What parses sluicegate's own command line (argparse, with difflib's suggestions),
#: $GUNICORN_CMD_ARGS (shlex), gunicorn's flags and configuration files (gunicorn's settings).
COMMAND_LINE = ("argparse", "difflib", "gettext", "shlex", "sluicegate.gunicorn_settings",
                "sluicegate.gunicorn_config")

#: What reads uWSGI's command line and files into sluicegate's options (uwsgi_cli.py runs them
#: in a process of its own).
UWSGI_READERS = ("sluicegate.uwsgi_config", "sluicegate.uwsgi_config_files",
                 "sluicegate.uwsgi_config_logic", "sluicegate.uwsgi_option_table",
                 "sluicegate.uwsgi_options", "sluicegate.uwsgi_convert")


#: The options table, its parsers and the validation (uwsgi_cli.py validates apart too).
OPTIONS_TABLE = ("sluicegate.options", "sluicegate.option_row", "sluicegate.parsers",
                 "sluicegate.resolution", "sluicegate.cli", "sluicegate.options_uwsgi",
                 "sluicegate.allowed_values", "sluicegate.config_class")

#: json (the control protocol's messages: imported at the first one; `uwsgi.opt`'s environment
#: text, written by the resolving process), side commands (`attach-daemon`,
#: `smart-attach-daemon`, `exec-pre-app` only) and the resolving process's half of
#: uwsgi_cli.py (uwsgi_resolve.py). sluicegate's command line imports the first two for its
#: configuration files and its options' parsers.
UWSGI_LAZY = ("json", "_json", "sluicegate.side_commands", "sluicegate.uwsgi_resolve")


def master_maps_core():
    """Whether the parent process maps the extension (`_core.*.so`)."""
    with open(f"/proc/{os.getppid()}/maps") as f:
        return any("/_core." in line for line in f)


def app(environ, start_response):
    if environ["PATH_INFO"] == "/master":
        body = b"_core" if master_maps_core() else b""
    else:
        uwsgi = environ["PATH_INFO"] == "/uwsgi"
        watched = WATCHED + (COMMAND_LINE + UWSGI_READERS + OPTIONS_TABLE + UWSGI_LAZY
                             if uwsgi else ())
        body = "\n".join(m for m in watched if m in sys.modules).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]

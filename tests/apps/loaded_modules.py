"""Answers which of the standard library's larger modules are loaded in the process serving
it, one name a line (empty: none). A worker is a fork of its master, so the answer covers what
the master imported before forking too.

/         the modules no process needs unless an option asks for them (WATCHED)
/uwsgi    those and the ones only sluicegate's own command line needs (COMMAND_LINE), which
          a worker of `sluicegate-uwsgi` has no use for
"""

import sys

#: Modules the server imports only for the options that need them (`--metrics-bind`, a
#: logging configuration, `--log-syslog`, `worker.tmp`, `static-expires-type`, side commands,
#: `--exec-pre-app`, uWSGI's XML, JSON and `exec://` configurations, `for-glob`,
#: `--max-requests-jitter`, `--warmup`, a `--user` switch), or never (ctypes: prctl is the
#: core's).
WATCHED = ("http.client", "http.server", "email", "ssl", "socketserver", "logging.config",
           "tempfile", "mimetypes", "logging.handlers", "pickle", "queue", "ctypes",
           "subprocess", "xml.dom.minidom", "pyexpat", "glob", "random", "urllib.parse",
           "sysconfig", "pathlib")

#: What parses sluicegate's own command line (argparse, with difflib's suggestions) and
#: $GUNICORN_CMD_ARGS (shlex).
COMMAND_LINE = ("argparse", "difflib", "gettext", "shlex")


def app(environ, start_response):
    watched = WATCHED + (COMMAND_LINE if environ["PATH_INFO"] == "/uwsgi" else ())
    body = "\n".join(m for m in watched if m in sys.modules).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]

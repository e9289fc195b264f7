"""Entry point for the peers that have a Python API and no command line of their own.

Owns how bjoern, fastwsgi, fastpysgi, pyruvate, meinheld, cheroot and gevent.pywsgi are started:
`python3 benchmarks/run.py launch SERVER PORT MODULE:APP [--threads N] [--keepalive S]`, run by the peers' venv
with the apps directory as working directory. Each one binds 127.0.0.1:PORT in this one process
(one worker process, as every server in the suite), without access logging, and runs until
SIGTERM. The settings chosen here are echoed into the report by servers.py; keep the two in step.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys


def load(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name or "app")


def run_bjoern(app, port: int, args) -> None:
    import bjoern

    bjoern.run(app, "127.0.0.1", port)


def run_fastwsgi(app, port: int, args) -> None:
    import fastwsgi

    fastwsgi.server.max_content_length = 128 * 1024 * 1024  # S8 uploads 64 MiB
    fastwsgi.run(wsgi_app=app, host="127.0.0.1", port=port, workers=1)


def run_fastpysgi(app, port: int, args) -> None:
    import fastpysgi

    fastpysgi.server.max_content_length = 128 * 1024 * 1024  # default 10 MB refuses S8's 64 MiB
    fastpysgi.server.hook_sigint = 2
    fastpysgi.run(app, host="127.0.0.1", port=port, workers=1)


def run_pyruvate(app, port: int, args) -> None:
    import pyruvate

    # Defaults on purpose: one response per connection (max_reuse_count=0). Measured with 1.6.1:
    # max_reuse_count=255 (its maximum, a u8) answers only the first request of a wrk connection
    # and never closes an HTTP/1.0 (ab) connection; chunked_transfer=True makes every wrk read fail.
    pyruvate.serve(app, f"127.0.0.1:{port}", args.threads)


def run_meinheld(app, port: int, args) -> None:
    from meinheld import server

    server.listen(("127.0.0.1", port))
    server.set_keepalive(args.keepalive)  # 0 by default: one request per connection
    server.set_backlog(4096)
    server.set_max_content_length(128 * 1024 * 1024)
    server.set_access_logger(None)
    server.run(app)


def run_cheroot(app, port: int, args) -> None:
    from cheroot import wsgi

    srv = wsgi.Server(("127.0.0.1", port), app, numthreads=args.threads, request_queue_size=4096,
                      timeout=args.keepalive)
    signal.signal(signal.SIGTERM, lambda *_: srv.stop())
    srv.safe_start()


def run_gevent(app, port: int, args) -> None:
    from gevent.pywsgi import WSGIServer  # monkey-patched in main(), before the app's import

    WSGIServer(("127.0.0.1", port), app, log=None, backlog=4096).serve_forever()


RUNNERS = {
    "bjoern": run_bjoern,
    "fastwsgi": run_fastwsgi,
    "fastpysgi": run_fastpysgi,
    "pyruvate": run_pyruvate,
    "meinheld": run_meinheld,
    "cheroot": run_cheroot,
    "gevent-pywsgi": run_gevent,
}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("server", choices=sorted(RUNNERS))
    ap.add_argument("port", type=int)
    ap.add_argument("target")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--keepalive", type=int, default=120)


def main(args: argparse.Namespace) -> int | None:
    sys.path.insert(0, os.getcwd())
    if args.server == "gevent-pywsgi":
        from gevent import monkey

        monkey.patch_all()  # before the app is imported, as gevent requires
    app = load(args.target)
    RUNNERS[args.server](app, args.port, args)

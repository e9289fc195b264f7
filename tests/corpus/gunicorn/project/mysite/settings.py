"""Settings a gunicorn.conf.py imports from its project (a real config's top-level import: it
works only if the working directory is on sys.path before the file runs)."""

import os

GUNICORN_WORKERS = int(os.environ.get("MYSITE_WORKERS", "2"))
GUNICORN_TIMEOUT = 60
LOG_LEVEL = os.environ.get("MYSITE_LOG_LEVEL", "info")

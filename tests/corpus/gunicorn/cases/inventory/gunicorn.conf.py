"""Gunicorn configuration for the inventory server."""

import logging
import multiprocessing
import os

logger = logging.getLogger("inventory")

accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("INVENTORY_LOG_LEVEL", "warning").lower()
capture_output = True

# Write temp file to RAM (faster)
worker_tmp_dir = "/dev/shm"
threads = 4

# Worker timeout, as a string from the environment
timeout = os.environ.get("INVENTORY_GUNICORN_TIMEOUT", "90")

workers = os.environ.get("INVENTORY_GUNICORN_WORKERS", None)
if workers is not None:
    try:
        workers = int(workers)
    except ValueError:
        workers = None
if workers is None:
    workers = multiprocessing.cpu_count() * 2 + 1

logger.info("Starting gunicorn server with %s workers", workers)

max_requests = 1000
max_requests_jitter = 50

# preload app so that the ready functions are only executed once
preload_app = True


def post_fork(server, worker):
    """Per-worker tracing setup, imported from the project."""
    from mysite.tracing import setup_tracing

    setup_tracing(worker.pid, service="inventory")

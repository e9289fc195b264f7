# Gunicorn configuration for the wiki (Django), in a container.
import os

bind = f"{os.environ.get('WIKI_HOST', '0.0.0.0')}:{os.environ.get('WIKI_PORT', '8000')}"
workers = int(os.environ.get("WIKI_WORKERS", 2))
worker_class = "gthread"
threads = 4
timeout = 90
keepalive = 5
accesslog = "-"
errorlog = "-"
loglevel = "info"
capture_output = True


def post_fork(server, worker):
    server.log.info("Worker spawned (pid: %s)", worker.pid)

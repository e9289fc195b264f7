# Sample Gunicorn configuration file, as projects copy it from gunicorn's examples.
import os

#
# Server socket
#
bind = os.environ["HOST"] + ":" + os.environ["PORT"]
backlog = 2048

#
# Worker processes
#
workers = 2
worker_class = "sync"
worker_connections = 1000
timeout = 30
keepalive = 2

#
# Debugging
#
spew = False

#
# Server mechanics
#
daemon = False
raw_env = ["DJANGO_SETTINGS_MODULE=mysite.settings", "EXAMPLE_FLAVOUR=sample"]
pidfile = None
umask = 0
user = None
group = None
tmp_upload_dir = None

#
# Logging
#
errorlog = "-"
loglevel = "info"
accesslog = "-"
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'

#
# Process naming
#
proc_name = None


#
# Server hooks
#
def post_fork(server, worker):
    server.log.info("Worker spawned (pid: %s)", worker.pid)


def pre_fork(server, worker):
    pass


def pre_exec(server):
    server.log.info("Forked child, re-executing.")


def when_ready(server):
    server.log.info("Server is ready. Spawning workers")


def worker_int(worker):
    worker.log.info("worker received INT or QUIT signal")


def worker_abort(worker):
    worker.log.info("worker received SIGABRT signal")

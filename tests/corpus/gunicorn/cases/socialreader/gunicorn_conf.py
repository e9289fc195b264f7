import multiprocessing
import os

bind = "%s:%s" % (os.environ.get("HOST", "0.0.0.0"), os.environ.get("PORT", "8000"))
workers = max(2, min(3, multiprocessing.cpu_count() // 2))
pidfile = "run/gunicorn.pid"
errorlog = "logs/error.log"
accesslog = "logs/access.log"
loglevel = "debug"
max_requests = 1000
timeout = 120
reload = False
graceful_timeout = 10

import logging.config
import os

from mysite.settings import GUNICORN_TIMEOUT, GUNICORN_WORKERS

bind = f"{os.environ['HOST']}:{os.environ['PORT']}"
workers = GUNICORN_WORKERS
timeout = GUNICORN_TIMEOUT
accesslog = "-"
errorlog = "-"
capture_output = True
loglevel = "debug"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "verbose": {"format": "VERBOSE %(levelname)s %(name)s %(process)d %(message)s"},
    },
    "handlers": {
        "console": {"level": "DEBUG", "class": "logging.StreamHandler",
                    "formatter": "verbose", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "mysite": {"level": "INFO", "handlers": ["console"], "propagate": False},
        "gunicorn.error": {"level": "INFO", "handlers": ["console"], "propagate": True},
        "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
    },
}
logconfig_dict = LOGGING


def post_fork(server, worker):
    logging.getLogger("mysite").info("worker %s forked by %s", worker.pid, server.pid)

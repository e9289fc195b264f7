"""
gunicorn configuration file: http://docs.gunicorn.org/en/develop/configure.html
"""
import os

preload_app = False
timeout = 300
bind = os.environ["HOST"] + ":" + os.environ["PORT"]
pythonpath = "edx_platform"

workers = 2
proc_name = "lms"


def pre_request(worker, req):
    worker.log.info("%s %s" % (req.method, req.path))


def close_all_caches():
    # Close the cache so that newly forked workers cannot accidentally share
    # the socket with the processes they were forked from.
    from lms.caches import close_all_caches as close

    close(os.getpid())


def post_fork(server, worker):
    close_all_caches()

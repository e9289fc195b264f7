"""For the overdue-worker test: ``/ignore-term`` makes the serving process ignore SIGTERM (the
disposition set in C, as a library that installs its own handlers might), so the stop its
master sends never reaches it; any other path answers the process's pid."""

import ctypes
import os
import signal


def app(environ, start_response):
    if environ["PATH_INFO"] == "/ignore-term":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        libc.signal(int(signal.SIGTERM), ctypes.c_void_p(1))  # SIG_IGN
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]

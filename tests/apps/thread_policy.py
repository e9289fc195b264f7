"""Answers the calling thread's name and kernel scheduling policy (`SCHED_BATCH` or
`SCHED_OTHER`), and, at `/spawned`, those of a thread the call starts. `/sleep` sleeps 0.3 s
first (a blocking call, which moves the loop to another thread)."""

import os
import threading
import time

NAMES = {os.SCHED_BATCH: "SCHED_BATCH", os.SCHED_OTHER: "SCHED_OTHER"}


def who() -> str:
    comm = open(f"/proc/self/task/{threading.get_native_id()}/comm").read().strip()
    return f"{comm} {NAMES.get(os.sched_getscheduler(0), 'other policy')}"


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/sleep":
        time.sleep(0.3)
    if path == "/spawned":
        seen = []
        t = threading.Thread(target=lambda: seen.append(NAMES.get(os.sched_getscheduler(0))))
        t.start()
        t.join()
        body = f"{who()} spawned {seen[0]}".encode()
    else:
        body = who().encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]

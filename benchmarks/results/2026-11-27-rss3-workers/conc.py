"""S19's requests at a concurrency: N requests on each of C threads over a uwsgi-protocol unix
socket (the rss2 pass's uwget.py), for callgrind to see what a worker runs when connections
arrive while one is served: python3 conc.py SOCKET N C"""
import sys, threading
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '2026-11-27-rss2'))
from uwget import get
sock, n, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def run():
    for _ in range(n):
        get(None, sock, "/")
ts = [threading.Thread(target=run) for _ in range(c)]
[t.start() for t in ts]; [t.join() for t in ts]
print("done")

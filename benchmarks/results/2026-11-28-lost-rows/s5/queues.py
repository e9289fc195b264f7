"""queues.py PORT N: sample ss for the server port: sockets with bytes unread on the server side (requests waiting for the loop) and on the client side (answers waiting for wrk)."""
import subprocess, sys, time, statistics
port = sys.argv[1]; n = int(sys.argv[2])
srv_q, cli_q = [], []
for _ in range(n):
    out = subprocess.run(["ss", "-tnH", "state", "established"], capture_output=True, text=True).stdout
    s = c = 0
    for ln in out.splitlines():
        f = ln.split()
        rq, local, peer = int(f[0]), f[2], f[3]
        if rq == 0: continue
        if local.endswith(":" + port): s += 1
        elif peer.endswith(":" + port): c += 1
    srv_q.append(s); cli_q.append(c)
    time.sleep(0.2)
print("server sockets with unread requests:", statistics.median(srv_q), srv_q)
print("client sockets with unread answers:", statistics.median(cli_q), cli_q)

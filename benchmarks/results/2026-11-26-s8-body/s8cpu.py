"""Interleaved S8 uploads: time and server CPU (all threads, /proc/PID/stat) per upload.
usage: s8cpu.py ROUNDS N name=cmd... (cmd launched with {port})"""
import hashlib, os, socket, statistics, subprocess, sys, threading, time, shlex, signal
BODY = os.urandom(64 << 20)
EXPECT = b"%d %s" % (len(BODY), hashlib.sha256(BODY).hexdigest().encode())
TICK = os.sysconf("SC_CLK_TCK")
CHUNKED = os.environ.get("CHUNKED") == "1"
def tree(pid):
    out = [pid]
    for t in os.listdir(f"/proc/{pid}/task"):
        for c in open(f"/proc/{pid}/task/{t}/children").read().split():
            out += tree(int(c))
    return out
def cpu(pid):
    tot = 0
    for q in tree(pid):
        f = open(f"/proc/{q}/stat").read().rsplit(")", 1)[1].split()
        tot += int(f[11]) + int(f[12])
    return tot / TICK
def enc_chunked(b, n=1 << 16):
    out = bytearray()
    for i in range(0, len(b), n):
        c = b[i:i+n]; out += b"%x\r\n" % len(c) + c + b"\r\n"
    return bytes(out + b"0\r\n\r\n")
PAY = enc_chunked(BODY) if CHUNKED else BODY
HEAD = b"POST / HTTP/1.1\r\nHost: x\r\n" + (b"Transfer-Encoding: chunked\r\n\r\n" if CHUNKED else b"Content-Length: %d\r\n\r\n" % len(BODY))
def answer(s):
    got = b""
    while b"\r\n\r\n" not in got:
        p = s.recv(65536)
        if not p: raise SystemExit("closed")
        got += p
    head, rest = got.split(b"\r\n\r\n", 1)
    n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(rest) < n: rest += s.recv(65536)
    return rest[:n]
def upload(s):
    t = time.perf_counter()
    s.sendall(HEAD)
    th = threading.Thread(target=s.sendall, args=(PAY,)); th.start()
    got = answer(s); th.join()
    assert got == EXPECT, got[:80]
    return time.perf_counter() - t
rounds, n = int(sys.argv[1]), int(sys.argv[2])
servers = []
port = 18800
for spec in sys.argv[3:]:
    name, cmd = spec.split("=", 1)
    port += 1
    p = subprocess.Popen(shlex.split(cmd.format(port=port)), stdout=subprocess.DEVNULL, stderr=open(f"/tmp/s8/{name}.err", "w"), start_new_session=True)
    servers.append((name, p, port))
time.sleep(3)
res = {name: ([], []) for name, _, _ in servers}
try:
    for r in range(rounds):
        for name, p, port in servers:
            s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upload(s)  # warm
            c0 = cpu(p.pid); ts = [upload(s) for _ in range(n)]; c1 = cpu(p.pid)
            s.close()
            res[name][0].append(statistics.median(ts) * 1000); res[name][1].append((c1 - c0) / n * 1000)
            print(f"round {r} {name}: {res[name][0][-1]:.1f} ms, cpu {res[name][1][-1]:.1f} ms", flush=True)
finally:
    for name, p, port in servers:
        os.killpg(p.pid, signal.SIGTERM)
print("median over rounds (time ms / cpu ms per upload):")
for name, (t, c) in res.items():
    print(f"  {name:20s} {statistics.median(t):7.1f} {statistics.median(c):7.1f}   cpu rounds {['%.1f'%x for x in c]}")

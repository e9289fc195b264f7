"""sendpat.py PORT MODE: a one-connection-at-a-time server answering every GET with S3's body
(2,500,000 bytes, chunked in 8 KiB blocks), written in MODE:
  small-nagle   one send per block (size line, block, CRLF joined), TCP_NODELAY off (pyruvate's way)
  small-nodelay the same with TCP_NODELAY on
  big-nodelay   the whole chunked body in writes of at most 640 KiB, TCP_NODELAY on
  small-nagle-close, big-nodelay-close   as those, with `Connection: close` (a connection each)
Prints the thread's user and system CPU per fetch on exit (SIGTERM)."""
import os, resource, signal, socket, sys
port, mode = int(sys.argv[1]), sys.argv[2]
line = b"".join(b"%06d the quick brown fox jumps over the lazy dog\n" % i for i in range(50000))[:2500000]
blocks = [line[i:i + 8192] for i in range(0, len(line), 8192)]
framed = [b"%x\r\n" % len(b) + b + b"\r\n" for b in blocks]
head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n%s\r\n" % (
    b"Connection: close\r\n" if mode.endswith("-close") else b"")
whole = head + b"".join(framed) + b"0\r\n\r\n"
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(16)
n = 0
r0 = resource.getrusage(resource.RUSAGE_THREAD)
def bye(*_):
    r = resource.getrusage(resource.RUSAGE_THREAD)
    if n:
        print(f"{mode}: {n} fetches, user {(r.ru_utime - r0.ru_utime) * 1e6 / n:.0f} µs, sys {(r.ru_stime - r0.ru_stime) * 1e6 / n:.0f} µs per fetch", flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, bye)
while True:
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0 if mode.startswith("small-nagle") else 1)
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        buf += d
        while b"\r\n\r\n" in buf:
            _, buf = buf.split(b"\r\n\r\n", 1)
            if mode.startswith("big-nodelay"):
                mv = memoryview(whole)
                for i in range(0, len(whole), 655360):
                    c.sendall(mv[i:i + 655360])
            else:
                c.sendall(head)
                for f in framed:
                    c.sendall(f)
                c.sendall(b"0\r\n\r\n")
            n += 1
            if mode.endswith("-close"):
                break
        if mode.endswith("-close"):
            break
    c.close()

import socket, sys, threading, os, hashlib
port, n = int(sys.argv[1]), int(sys.argv[2])
BODY = os.urandom(64 << 20)
def answer(s):
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(65536)
    head, rest = got.split(b"\r\n\r\n", 1)
    k = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(rest) < k: rest += s.recv(65536)
    return rest[:k]
s = socket.create_connection(("127.0.0.1", port), timeout=60); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for i in range(n):
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(BODY))
    th = threading.Thread(target=s.sendall, args=(BODY,)); th.start()
    a = answer(s); th.join()
print(a)

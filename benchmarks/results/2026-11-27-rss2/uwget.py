"""uwsgi-protocol GET over a unix socket: prints the body."""
import socket, struct, sys
def get(path, sock, uri="/"):
    env = {"REQUEST_METHOD": "GET", "PATH_INFO": uri, "REQUEST_URI": uri, "QUERY_STRING": "",
           "SERVER_NAME": "x", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "x",
           "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "1", "wsgi.url_scheme": "http"}
    body = b"".join(struct.pack("<H", len(k)) + k.encode() + struct.pack("<H", len(v)) + v.encode() for k, v in env.items())
    s = socket.socket(socket.AF_UNIX); s.connect(sock)
    s.sendall(struct.pack("<BHB", 0, len(body), 0) + body)
    out = b""
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
    s.close()
    return out
if __name__ == "__main__":
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    for _ in range(n):
        r = get(None, sys.argv[1])
    sys.stdout.write(r.split(b"\r\n\r\n", 1)[1].decode())

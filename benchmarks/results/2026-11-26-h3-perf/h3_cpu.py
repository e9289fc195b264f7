#!/usr/bin/env python3
"""A by-hand S17b-shaped run (hello world, -c16 -m10) of one protocol against a fresh sluicegate:
server CPU per request from /proc (user + system of every process of its session), the client's
from rusage, and optionally `strace -c -f` of the server or a `perf record -g` of it.

    python3 h3_cpu.py PYTHON h3|h2 SECONDS [strace | perf OUT.data]
    PKG=/copy/of/python python3 h3_cpu.py ...   (another build's `sluicegate` package first)

Writes its certificate, the server's log and strace's table under /tmp/h3_cpu/."""
import json, os, re, subprocess, sys, time, signal
py, proto, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
extra = sys.argv[4:]  # e.g. strace / perf
port = 18000 + os.getpid() % 1000
W = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TMP = "/tmp/h3_cpu"
os.makedirs(TMP, exist_ok=True)
H3 = f"{W}/h3load/target/release/h3load"
cert, key = f"{TMP}/cert.pem", f"{TMP}/key.pem"
if not os.path.exists(cert):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
pkg = os.environ.get("PKG", "")
env = dict(os.environ, PYTHONPATH=(pkg + ":" if pkg else "") + f"{W}/apps")
srv = subprocess.Popen([py, "-m", "sluicegate", "--bind", f"https:127.0.0.1:{port}", "--certfile", cert, "--keyfile", key,
                        "--http3", "s6_hello:app"], env=env, stdout=subprocess.DEVNULL, stderr=open(f"{TMP}/srv.log", "w"),
                       start_new_session=True)
url = f"https://127.0.0.1:{port}/"
def cpu():
    t = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            st = open(f"/proc/{pid}/stat").read()
        except OSError: continue
        f = st.rsplit(")", 1)[1].split()
        if int(f[3]) == srv.pid or int(pid) == srv.pid:  # f[3]=session id? index: state ppid pgrp session
            pass
        if int(f[3]) == srv.pid:  # session
            t += int(f[11]) + int(f[12])
    return t / os.sysconf("SC_CLK_TCK")
try:
    for _ in range(100):
        r = subprocess.run([H3, "-n", "1", "--timeout", "2", url], capture_output=True)
        if r.returncode == 0: break
        time.sleep(0.2)
    warm = [H3, "-c1", "-m10", "-n", "500", url] if proto == "h3" else ["h2load", "-c1", "-m10", "-n", "500", url]
    subprocess.run(warm, capture_output=True)
    load = ["-c16", "-m10", "-D", f"{int(secs*1000)}ms"]
    cmd = [H3, *load, "--expect-sha256", "dffd6021bb2bd5b0af676290809ec3a53191dd81c7f70a4b28688a362182986f", url] if proto == "h3" else ["h2load", *load, url]
    aux = None
    if extra and extra[0] == "strace":
        aux = subprocess.Popen(["strace", "-c", "-f", "-p", str(srv.pid), "-o", f"{TMP}/strace.txt"])
        time.sleep(0.5)
    elif extra and extra[0] == "stat":
        aux = subprocess.Popen(["perf", "stat", "-e", "instructions:u,instructions:k", "-x", ",", "-o", f"{TMP}/stat.txt", "-p", str(srv.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
    elif extra and extra[0] == "perf":
        aux = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(srv.pid), "-o", extra[1], "--", "sleep", str(secs - 1)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c0 = cpu(); k0 = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    c1 = cpu(); k1 = os.times()
    if aux:
        if extra[0] in ("strace", "stat"): aux.send_signal(signal.SIGINT)
        aux.wait()
    if proto == "h3":
        j = json.loads(out.strip().splitlines()[-1]); done = j["ok"]; rate = j["req_per_s"]
        note = f"errors {j['errors']} dgrams tx/rx per req {j['udp_tx_datagrams']/done:.3f}/{j['udp_rx_datagrams']/done:.3f}"
    else:
        m = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out); rate = float(m.group(1))
        done = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out).group(1)); note = ""
    if extra and extra[0] == "stat":
        ins = {}
        for line in open(f"{TMP}/stat.txt"):
            p = line.split(",")
            if len(p) > 2 and p[0].strip().isdigit(): ins[p[2]] = int(p[0])
        note += " | instr/req user %.0f kernel %.0f" % (ins.get("instructions:u", 0) / done, ins.get("instructions:k", 0) / done)
    ccpu = (k1.children_user + k1.children_system - k0.children_user - k0.children_system)
    print(f"{proto} {pkg or py}: {rate:,.0f} req/s, done {done}, server {(c1-c0)/done*1e6:.2f} us/req, client {ccpu/done*1e6:.2f} us/req {note}")
finally:
    os.killpg(srv.pid, signal.SIGTERM); srv.wait()

"""Per-connection fairness under S13: CLIENTS keep-alive connections each sending GET /item/4242
one after another for SECS; how many connections got no answer, latency percentiles of the
answered, and the oldest request still waiting at the end. argv: AGE CLIENTS SECS SERVER..."""
import asyncio, os, statistics, subprocess, sys, time
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); os.chdir(BENCH)
import servers
from bench import s13, procs

REQ = b"GET /item/4242 HTTP/1.1\r\nHost: x\r\n\r\n"

async def client(port, until, lat, counts, i, waiting):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    n = 0
    while time.monotonic() < until:
        t = time.monotonic(); waiting[i] = t
        w.write(REQ)
        head = await r.readuntil(b"\r\n\r\n")
        ln = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
        await r.readexactly(ln)
        waiting[i] = None
        lat.append(time.monotonic() - t); n += 1
    counts[i] = n
    w.close()

async def run(port, clients, secs):
    lat, counts, waiting = [], [0] * clients, [None] * clients
    until = time.monotonic() + secs
    tasks = [asyncio.create_task(client(port, until, lat, counts, i, waiting)) for i in range(clients)]
    await asyncio.sleep(secs)
    end = time.monotonic()
    await asyncio.sleep(0.5)
    for t in tasks: t.cancel()
    oldest = max((end - t for t in waiting if t is not None), default=0)
    return lat, counts, oldest

age, clients, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
s13._configure(age)
for name in sys.argv[4:]:
    srv = servers.SERVERS[name]
    target = servers.Target("s13_django", "/hello", b"hello", pool=None if srv.kind == "ours" else 8)
    port = procs.free_port()
    l = srv.launch(target, port)
    p = procs.start(name, l.argv, l.cwd, l.env, port, Path(f"/tmp/fair-{name}.log"))
    assert procs.wait_port(port, time.monotonic() + 30, p)
    subprocess.run(["wrk", "-t1", f"-c{clients}", "-d1s", f"http://127.0.0.1:{port}/item/4242"], capture_output=True)
    lat, counts, oldest = asyncio.run(run(port, clients, secs))
    p.stop()
    q = statistics.quantiles(lat, n=100)
    lat.sort(); n=len(lat)
    print("   deciles ms:", [round(lat[int(n*k/10)]*1000) for k in range(10)] + [round(lat[-1]*1000)], " top1%:", [round(x*1000) for x in lat[int(n*0.99)::max(1,n//1000)]][:12])
    print(f"{name:16s} {len(lat)/secs:6.1f} req/s  p50 {q[49]*1000:6.1f} p99 {q[98]*1000:6.1f} max {max(lat)*1000:6.1f} ms  "
          f"connections with no answer {sum(c == 0 for c in counts)}/{clients}  fewest/most answers {min(counts)}/{max(counts)}  oldest waiting {oldest*1000:.0f} ms", flush=True)

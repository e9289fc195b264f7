import sys, time
sys.path.insert(0, "/work/wt/bigbody/benchmarks")
from bench import rawhttp
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = rawhttp.Connection(port)
t = time.time()
bad = sum(c.request("GET", path, keep_body=False).status != 200 for _ in range(n))
print(f"{n} fetches, {bad} bad, {(time.time()-t)/n*1e3:.3f} ms each")

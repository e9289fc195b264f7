import subprocess,sys,re,collections,statistics
f=sys.argv[1]
out=subprocess.run(["perf","script","-i",f,"-F","comm,tid,time,event,trace"],capture_output=True,text=True).stdout
woke={}; lat=collections.defaultdict(list); names={}
for line in out.splitlines():
    m=re.match(r"\s*(.+?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s+(.*)",line)
    if not m: continue
    comm,tid,t,ev,tr=m.groups(); t=float(t)
    if ev.startswith("sched:sched_wakeup"):
        mm=re.search(r"comm=(.+?) pid=(\d+)",tr)
        if mm: woke[int(mm.group(2))]=t; names[int(mm.group(2))]=mm.group(1)
    elif ev=="sched:sched_switch":
        mm=re.search(r"next_comm=(.+?) next_pid=(\d+)",tr)
        if mm:
            p=int(mm.group(2))
            if p in woke:
                lat[mm.group(1)].append((t-woke.pop(p))*1e6)
for k,v in sorted(lat.items(),key=lambda x:-len(x[1])):
    if len(v)<50: continue
    v.sort()
    print(f"{k:16} n={len(v):7} p50={v[len(v)//2]:8.1f}us p90={v[int(len(v)*.9)]:8.1f} p99={v[int(len(v)*.99)]:8.1f} mean={statistics.mean(v):8.1f}")

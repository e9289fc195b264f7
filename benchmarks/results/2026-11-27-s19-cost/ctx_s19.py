"""Per-thread context switches and CPU per request over one wrk -c64 -d3s run, for each server of a `probe_s19.py hold` output file. Usage: python3 ctx_s19.py HOLD_OUTPUT"""
import json, subprocess, os, re, sys
d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
for name,(pids,port) in d.items():
    def snap():
        out={}
        for p in pids:
            for t in os.listdir(f"/proc/{p}/task"):
                st=open(f"/proc/{p}/task/{t}/status").read()
                nm=re.search(r"Name:\s*(\S+)",st).group(1)
                v=int(re.search(r"voluntary_ctxt_switches:\s*(\d+)",st).group(1))
                nv=int(re.search(r"nonvoluntary_ctxt_switches:\s*(\d+)",st).group(1))
                f=open(f"/proc/{p}/task/{t}/stat").read().rsplit(")",1)[1].split()
                out[(p,t,nm)]=(v,nv,int(f[11]),int(f[12]))
        return out
    a=snap()
    r=subprocess.run(["wrk","-t1","-c64","-d3s",f"http://127.0.0.1:{port}/"],capture_output=True,text=True).stdout
    n=int(re.search(r"(\d+) requests in",r).group(1))
    b=snap()
    print(name, "requests",n)
    for k in b:
        z=a.get(k,(0,0,0,0)); dv,dn,du,ds=[b[k][i]-z[i] for i in range(4)]
        if dv or dn or du or ds:
            print(f"   {k[2]:16s} vol/req {dv/n:.3f} invol/req {dn/n:.3f} user {du*1e4/n:.1f} sys {ds*1e4/n:.1f} us/req")

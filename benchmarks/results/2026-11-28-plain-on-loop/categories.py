import subprocess,sys,re,collections
def load(f, rate):
    out=subprocess.run(["perf","report","-i",f,"--no-children","--sort","dso,sym","-g","none","-F","sample,dso,sym"],capture_output=True,text=True).stdout
    n=rate*4; d={}
    for l in out.splitlines():
        if l.startswith("#") or not l.strip(): continue
        p=l.split(None,2)
        if len(p)<3: continue
        d[(p[1],p[2].strip())]=int(p[0])/4999/n*1e6
    return d
def cats(d):
    c=collections.Counter()
    for (dso,sym),v in d.items():
        if 'kernel' in dso:
            if any(k in sym for k in ['copy_to_iter','filemap','ext4','d_lookup','link_path','lookup','getattr','path_']): k='k:file/path'
            elif any(k in sym for k in ['finish_task_switch']): k='k:switch'
            elif 'irqrestore' in sym: k='k:wakeups'
            elif any(k in sym for k in ['copy_from_iter','tcp','skb','ip_','sock','inet','dev_','net_','bbr','napi','__alloc_skb','kmalloc']): k='k:net'
            elif 'page' in sym or 'fault' in sym or 'mm' in sym: k='k:mm'
            elif 'epoll' in sym or 'poll' in sym: k='k:poll'
            else: k='k:other'
        elif 'libpython' in dso: k='python'
        elif 'libc' in dso:
            if any(x in sym for x in ['malloc','free','_int_','consolidate','unlink_chunk','tcache','arena']): k='libc:malloc'
            elif 'mutex' in sym or 'lll' in sym: k='libc:lock'
            elif 'mem' in sym: k='libc:mem'
            else: k='libc:other'
        elif 'vdso' in dso: k='vdso'
        else: k='server:'+dso.split('.')[0]
        c[k]+=v
    return c
a=[cats(load(f,float(r))) for f,r in zip(sys.argv[1::2],sys.argv[2::2])]
keys=sorted(set().union(*a), key=lambda k:-a[0].get(k,0))
for k in keys: print(f"{k:28s}"+"".join(f"{x.get(k,0):8.2f}" for x in a))
print(f"{'total':28s}"+"".join(f"{sum(x.values()):8.2f}" for x in a))

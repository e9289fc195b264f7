"""Every 0.5 s, for each running sluicegate with --static: its read-family system calls
(/proc/PID/io syscr: the inotify read, one per kept-file answer), CPU ticks, voluntary and
involuntary context switches, and the machine's TCP socket counts. argv: OUTPUT_FILE. Shows the
phases in which one run's rate fell by half while the server's CPU stayed at one core."""
import os, time, sys
out = open(sys.argv[1], 'w')
prev = {}
while True:
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            cmd = open(f'/proc/{pid}/cmdline','rb').read().split(b'\0')
        except Exception: continue
        if b'sluicegate' in cmd and b'--static' in cmd and b'-m' in cmd:
            try:
                io = dict(l.split(': ') for l in open(f'/proc/{pid}/io').read().split('\n') if l)
                st = open(f'/proc/{pid}/stat').read().split(')')[1].split()
                cpu = int(st[11]) + int(st[12])
                vol = nv = 0
                for t in os.listdir(f'/proc/{pid}/task'):
                    for l in open(f'/proc/{pid}/task/{t}/status'):
                        if l.startswith('voluntary_ctxt'): vol += int(l.split()[1])
                        if l.startswith('nonvoluntary_ctxt'): nv += int(l.split()[1])
                cur = (time.time(), int(io['syscr']), int(io['syscw']), cpu, vol, nv)
            except Exception: continue
            p = prev.get(pid)
            if p:
                dt = cur[0]-p[0]
                out.write(f"{time.strftime('%H:%M:%S')} pid={pid} dt={dt:.2f} syscr={cur[1]-p[1]} syscw={cur[2]-p[2]} cpu={cur[3]-p[3]} vol={cur[4]-p[4]} nv={cur[5]-p[5]} sock={open('/proc/net/sockstat').read().split(chr(10))[1]}\n")
                out.flush()
            prev[pid] = cur
    time.sleep(0.5)

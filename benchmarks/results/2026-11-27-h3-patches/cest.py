#!/usr/bin/env python3
"""cest.py DIR N: per-request event totals of the last callgrind dump in DIR (a run with
--cache-sim=yes --branch-sim=yes) and the cycle estimate CEst = Ir + 10 Bm + 10 L1m + 100 LLm."""
import sys,glob,os
# per-request event totals of a callgrind dump, and the cycle estimate
# CEst = Ir + 10 Bm + 10 L1m + 100 LLm (kcachegrind's formula)
d, n = sys.argv[1], int(sys.argv[2])
f = sorted(glob.glob(d + "/callgrind.out.*"), key=os.path.getmtime)[-1]
ev = None; tot = None
for line in open(f):
    if line.startswith("events:"): ev = line.split()[1:]
    if line.startswith("summary:") or line.startswith("totals:"): tot = [int(x) for x in line.split()[1:]]
t = dict(zip(ev, tot))
g = lambda k: t.get(k, 0)
l1 = g("I1mr") + g("D1mr") + g("D1mw"); ll = g("ILmr") + g("DLmr") + g("DLmw"); bm = g("Bcm") + g("Bim")
cest = g("Ir") + 10 * bm + 10 * l1 + 100 * ll
print(f"{os.path.basename(d)}: Ir {g('Ir')/n:,.0f}  branch misses {bm/n:,.0f}  L1 misses {l1/n:,.0f}  LL misses {ll/n:,.0f}  CEst {cest/n:,.0f} per request")

"""Each module's own traced memory (code + objects its body makes), imported in the order the
master completed them (-X importtime's post-order), so each one's imports are loaded before it."""
import sys, tracemalloc, importlib
order = [l.split("|")[2].strip() for l in open(sys.argv[1]) if l.count("|") == 2 and "imported package" not in l]
want = set(open(sys.argv[2]).read().split())
tracemalloc.start()
rows = []
for m in order:
    if m in sys.modules or m not in want:
        continue
    b = tracemalloc.get_traced_memory()[0]
    try:
        importlib.import_module(m)
    except Exception as e:
        continue
    rows.append((tracemalloc.get_traced_memory()[0] - b, m))
rows.sort(reverse=True)
tot = {"sg": 0, "std": 0}
for n, m in rows:
    tot["sg" if m.startswith("sluicegate") else "std"] += n
print(f"sluicegate {tot['sg']/1024:.0f} kB, the rest {tot['std']/1024:.0f} kB")
for n, m in rows:
    print(f"{n/1024:7.1f} {m}")

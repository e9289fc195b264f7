"""measure.py's repeats (the first pass's tool), plus the file offsets of each sluicegate
process's resident pages of `_core` (the present bit of /proc/PID/pagemap), written to OUT
(default pages.json):

    REPEATS=4 OUT=pages.json python3 core_pages.py NAME=PYTHONDIR ...

The offsets are then matched against `nm -S` of the .so (text: file offset + 0x1000)."""
import sys, os, struct, json
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-27-rss"))
import measure
orig = measure.smaps
PAGES = {}
def core_pages(pid):
    out = []
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        if len(f) > 5 and "_core." in f[5]:
            a, b = (int(x, 16) for x in f[0].split("-"))
            off = int(f[2], 16)
            with open(f"/proc/{pid}/pagemap", "rb") as pm:
                pm.seek(a // 4096 * 8)
                data = pm.read((b - a) // 4096 * 8)
            for i in range((b - a) // 4096):
                (e,) = struct.unpack_from("<Q", data, i * 8)
                if e >> 63:
                    out.append((f[1], off + i * 4096))
    return out
def smaps(pid):
    PAGES[pid] = core_pages(pid)
    return orig(pid)
measure.smaps = smaps
import tempfile, shutil
variants = dict(measure.parse_variant(v) for v in sys.argv[1:])
res = []
for i in range(int(os.environ.get("REPEATS", "3"))):
    d = tempfile.mkdtemp(prefix="sg-rss-"); os.chmod(d, 0o755)
    try:
        r = measure.one_repeat(variants, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    for name, by in r.items():
        for role, p in by.items():
            if name != "uwsgi":
                res.append({"variant": name, "role": role, "repeat": i, "pages": PAGES[p["pid"]]})
                print(name, i, role, len(PAGES[p["pid"]]), flush=True)
json.dump(res, open(os.environ.get("OUT", "pages.json"), "w"))

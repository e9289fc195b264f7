"""Writes scripts/text_order.txt: the functions of the `_core` extension that a server's
processes run, from the start to serving hello-world requests, one linker symbol a line, in the
order first run. build.rs hands the file to the linker (LLD's `--symbol-ordering-file`), which
lays those functions out together at the start of the code: a process then maps a few hundred
kB of the extension's code rather than 2.3 MB (the kernel maps 64 kB around each page first
run; benchmarks/results/2026-11-27-rss2).

The names are those of a release build (LTO): run this on callgrind's dumps of that build,
after a change that renames many functions (a dependency's new version, a changed signature).
A name the build no longer has is passed over, so a stale file costs memory, never a build.

    ./dev build                                    # the release build, with LTO
    valgrind --tool=callgrind --trace-children=yes --demangle=no --dump-instr=no \\
        --callgrind-out-file=/tmp/cg/callgrind.out.%p \\
        .venv/bin/sluicegate-uwsgi --ini S19's uwsgi.ini (processes = 2, module = s6_hello:app)
    (a few hundred requests through its socket, then SIGINT to the master)
    python3 scripts/text_order.py /tmp/cg/callgrind.out.MASTER /tmp/cg/callgrind.out.WORKER...

With `--add` first, the file's names stay, in their order, and those the dumps add go after
them: for a path another run takes (a worker's paths under concurrent requests, `conc.py` in
benchmarks/results/2026-11-27-rss3-workers: a connection arriving while one is served, which
a run of one request at a time does not take).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "text_order.txt"
#: The file's first lines (LLD skips lines that start with '#').
HEADER = ("# The functions of the _core extension a server runs from start to serving, in the\n"
          "# order first run: the link order build.rs gives LLD. Written by scripts/text_order.py\n"
          "# (its doc says how); do not edit.\n")
NAME = re.compile(r"c?(ob|fn)=\((\d+)\)(?: (.*))?")


def functions(dump: Path, seen: set[str]) -> list[str]:
    """The `_core` functions a callgrind dump (--demangle=no) has costs for, new to `seen`,
    in the dump's order. Names are compressed: `fn=(N) name` once, then `fn=(N)`."""
    objects: dict[str, str] = {}
    names: dict[str, str] = {}
    current = ""
    out = []
    for line in dump.read_text(errors="replace").splitlines():
        m = NAME.match(line)
        if not m:
            continue
        kind, key, name = m.groups()
        if name:
            (objects if kind == "ob" else names)[key] = name
        if line.startswith("ob="):
            current = objects.get(key, "")
        elif line.startswith("fn=") and "sluicegate/_core" in current:
            fn = names.get(key, "")
            if fn and not fn.startswith("0x") and fn not in seen:
                seen.add(fn)
                out.append(fn)
    return out


def main(dumps: list[str]) -> int:
    if not dumps:
        print(__doc__, file=sys.stderr)
        return 2
    kept: list[str] = []
    if dumps[0] == "--add":
        dumps = dumps[1:]
        kept = [n for n in OUT.read_text().split("\n") if n and not n.startswith("#")]
    seen: set[str] = set(kept)
    order = kept + [fn for d in dumps for fn in functions(Path(d), seen)]
    OUT.write_text(HEADER + "".join(f"{fn}\n" for fn in order))
    print(f"{OUT}: {len(order)} functions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

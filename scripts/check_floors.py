#!/usr/bin/env python3
"""The floor check: no import cycle between the files of `src/`, and no import that runs up a floor.

Run by `./dev test` (after clippy); `python3 scripts/check_floors.py` alone prints the graph's
summary and exits 1 on any offence, listing the offending edges.

The graph is the file-level import graph of the extension crate `src/`: each `.rs` file is a
node (a folder's `mod.rs` is the folder's node, `lib.rs` the crate root). An edge runs from a
file to the deepest existing module file that a path it uses names:

- every `crate::...` path, in `use` statements (nested `{...}` groups included, over any number
  of lines) and inline in code;
- every `super::...` and `self::...` path, resolved from the file's own module;
- in a folder's `mod.rs`, every path that starts with one of its child modules
  (`use environ::EnvironBuilder;`): the parent using its child is an edge like any other.

`mod x;` declarations are not edges (a parent declaring its children is not an import), and
code under `#[cfg(test)]` (inline test modules, test-only files declared so) is ignored:
tests may reach anywhere.

The floors, bottom to top (docs/architecture.md names the same ones). A file may import files
of its own floor or of floors below it, never above; and no files may import each other in a
cycle, even within one floor.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from rust_text import blank_rust, matching_close

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# Bottom to top. Each floor lists the module paths (relative to `src/`, without `.rs`) it
# holds; a folder holds everything under it. Every file of `src/` must be on exactly one floor.
FLOORS: list[tuple[str, list[str]]] = [
    # Plain data: the frozen config and the small types it is made of, dates, clocks.
    ("data", ["config", "http_date", "clock", "peer"]),
    # Counters, timings, the access log, the counter table and the metrics page (`observe/`).
    ("observe", ["observe"]),
    # Sockets, epoll, buffers, the output queue, the event loop, static files served by it.
    ("io", ["io"]),
    # The Python bridge: environ, start_response, wsgi.input, the iterable, the pool.
    ("wsgi", ["wsgi"]),
    # Wiring, scheduling, admission, the `Server` pyclass.
    ("server", ["server"]),
    # Registration of what Python sees, only.
    ("lib", ["lib"]),
]

def module_of(path: Path) -> tuple[str, ...]:
    """The module path of a file: src/lib.rs -> (), src/a/mod.rs -> (a,), src/a/b.rs -> (a, b)."""
    rel = path.relative_to(SRC).with_suffix("")
    parts = rel.parts
    if parts == ("lib",):
        return ()
    if parts[-1] == "mod":
        return parts[:-1]
    return parts


def floor_of(rel: str) -> int:
    mod = rel[:-3]
    if mod.endswith("/mod"):
        mod = mod[: -len("/mod")]
    for i, (_, members) in enumerate(FLOORS):
        for m in members:
            if mod == m or mod.startswith(m + "/"):
                return i
    raise SystemExit(f"check_floors: {rel} is on no floor: add it to FLOORS in {__file__}")


# --- reading Rust -------------------------------------------------------------------------

def strip_comments_and_strings(text: str) -> str:
    """Comments, string and char literals blanked (same length, newlines kept), so braces and
    paths in them count for nothing and every offset still points where it did."""
    return blank_rust(text, _raw, _string, _char)


def _raw(literal: str) -> str:
    return '""' + re.sub(r"[^\n]", " ", literal)[2:]


def _string(literal: str) -> str:
    return '"' + re.sub(r"[^\n]", " ", literal[1:-1]) + '"'


def _char(literal: str) -> str:
    return "'" + " " * (len(literal) - 2) + "'"


CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")


def strip_test_code(code: str, original: str) -> tuple[str, list[tuple[str, str | None]]]:
    """Code under `#[cfg(test)]` removed. Returns the code left and the modules declared
    test-only (`#[cfg(test)] mod x;`, with the `#[path = "..."]` given if any), whose files are
    then ignored. `original` is the file's text before blanking (for the path's string)."""
    test_mods = []
    while True:
        m = CFG_TEST.search(code)
        if not m:
            return code, test_mods
        i = m.end()
        path_attr = None
        # Further attributes on the same item.
        while True:
            a = re.match(r"\s*#\s*\[", code[i:])
            if not a:
                break
            depth, j = 0, i + a.end() - 1
            while j < len(code):
                if code[j] == "[":
                    depth += 1
                elif code[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            p = re.search(r'path\s*=\s*"([^"]*)"', original[i:j])
            if p:
                path_attr = p.group(1)
            i = j + 1
        decl = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code[i:])
        if decl:
            test_mods.append((decl.group(1), path_attr))
            end = i + decl.end()
        else:
            brace = code.find("{", i)
            semi = code.find(";", i)
            if brace < 0 or (0 <= semi < brace):
                end = semi + 1
            else:
                end = matching_close(code, brace) + 1
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start():end]) + code[end:]


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def parse_tree(code: str, i: int) -> tuple[list[list[str]], int]:
    """The paths of a use tree starting at `code[i]`: `a::b::{c, d::{e, f}}` -> [a,b,c], ..."""
    segs: list[str] = []
    while True:
        m = re.match(r"\s*(" + IDENT + r"|\*)", code[i:])
        if m is None:
            g = re.match(r"\s*\{", code[i:])
            if g is None:
                return ([segs] if segs else []), i
            i += g.end()
            paths = []
            while True:
                sub, i = parse_tree(code, i)
                paths.extend(segs + p for p in sub)
                s = re.match(r"\s*(,|\})", code[i:])
                if s is None:
                    return paths or [segs], i
                i += s.end()
                if s.group(1) == "}":
                    return paths or [segs], i
                if re.match(r"\s*\}", code[i:]):
                    i += re.match(r"\s*\}", code[i:]).end()
                    return paths or [segs], i
        segs.append(m.group(1))
        i += m.end()
        s = re.match(r"\s*::", code[i:])
        if s is None:
            return [segs], i
        i += s.end()


def paths_in(code: str, children: set[str]) -> list[list[str]]:
    """Every module path the code names: `use` trees, and inline `crate::`/`super::`/`self::`
    (and, in a parent, `child::`) paths."""
    found = []
    for m in re.finditer(r"\buse\s+", code):
        tree, _ = parse_tree(code, m.end())
        found.extend(tree)
    starts = {"crate", "super", "self"} | children
    for m in re.finditer(r"(?<![A-Za-z0-9_:])(" + IDENT + r")\s*::", code):
        if m.group(1) not in starts:
            continue
        tree, _ = parse_tree(code, m.start(1))
        found.extend(tree)
    return found


# --- the graph ----------------------------------------------------------------------------

def build_graph() -> tuple[dict[str, set[str]], set[str]]:
    files = {}
    for p in sorted(SRC.rglob("*.rs")):
        files[module_of(p)] = p
    rel = {mod: str(p.relative_to(SRC)) for mod, p in files.items()}

    texts = {}
    test_files: set[tuple[str, ...]] = set()
    by_path = {p.resolve(): mod for mod, p in files.items()}
    for mod, p in files.items():
        text = p.read_text()
        code = strip_comments_and_strings(text)
        assert len(code) == len(text), p
        # Blanking keeps every offset, so attributes can be read back from the original.
        code, test_mods = strip_test_code(code, text)
        texts[mod] = code
        for name, path in test_mods:
            if path is None:
                test_files.add(mod + (name,))
            elif (p.parent / path).resolve() in by_path:
                test_files.add(by_path[(p.parent / path).resolve()])
    # A test-only module's own children are test-only too.
    for mod in list(files):
        if any(mod[: len(t)] == t for t in test_files):
            test_files.add(mod)

    graph: dict[str, set[str]] = {}
    for mod, code in texts.items():
        if mod in test_files:
            continue
        me = rel[mod]
        is_dir = files[mod].name in ("mod.rs", "lib.rs")
        children = {m[-1] for m in files if len(m) == len(mod) + 1 and m[: len(mod)] == mod} if is_dir else set()
        edges = graph.setdefault(me, set())
        for path in paths_in(code, children):
            if path[0] == "crate":
                target = tuple(path[1:])
            elif path[0] in ("super", "self"):
                base = mod
                k = 0
                while k < len(path) and path[k] in ("super", "self"):
                    if path[k] == "super":
                        base = base[:-1]
                    k += 1
                target = base + tuple(path[k:])
            elif path[0] in children:
                target = mod + tuple(path)
            else:
                continue
            for n in range(len(target), -1, -1):
                if target[:n] in files and target[:n] not in test_files:
                    to = rel[target[:n]]
                    if to != me:
                        edges.add(to)
                    break
    return graph, {rel[m] for m in test_files}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    graph, test_files = build_graph()
    checked: dict[str, set[str]] = {a: set(tos) for a, tos in graph.items()}

    bad = []
    for a in sorted(checked):
        for b in sorted(checked[a]):
            fa, fb = floor_of(a), floor_of(b)
            if fb > fa:
                bad.append(f"  upward: src/{a} ({FLOORS[fa][0]}) -> src/{b} ({FLOORS[fb][0]})")
    comps = cycles(checked)
    for comp in comps:
        inside = set(comp)
        bad.append(f"  cycle of {len(comp)} files: " + ", ".join(f"src/{f}" for f in comp))
        for a in comp:
            for b in sorted(checked[a] & inside):
                bad.append(f"      src/{a} -> src/{b}")

    n_edges = sum(len(v) for v in checked.values())
    floors = " < ".join(name for name, _ in FLOORS)
    if bad:
        print(f"check_floors: {len(bad)} offence(s) in src/ (floors {floors}):")
        print("\n".join(bad))
        return 1
    print(
        f"check_floors: ok: {len(checked)} files, {n_edges} imports, no cycle, nothing upward "
        f"(floors {floors})"
    )
    return 0


if __name__ == "__main__":
    if "--edges" in sys.argv:
        g, _ = build_graph()
        for a in sorted(g):
            for b in sorted(g[a]):
                print(f"{a} -> {b}")
        sys.exit(0)
    sys.exit(main())

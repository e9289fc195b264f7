#!/usr/bin/env python3
"""The size check: no file over 600 lines, no function over 100, in `src/`, `crates/` and
`python/` (CONTRIBUTING.md, "Size").

Run by `./dev test` (after the floor check); `python3 scripts/check_sizes.py` alone prints the
known debt and exits 1 on any offence.

Lines are raw lines: every line counts, blank lines, comments, doc comments and docstrings
included, and code under `#[cfg(test)]` too (a file's tests make it long as well). A file's
size is its number of lines (what `wc -l` says); a function's runs from the line of its `fn` or
`def` to its end (its closing brace, or the last line of its body), every line between,
nested functions and closures included; the doc comments, attributes and decorators above it
do not count. Rust comments and string literals are blanked only to find where a function
ends (a brace in a comment or a string counts for nothing).

A Rust function is named `path::Type::name` inside an `impl` or `trait` block, `path::name`
outside; a Python one by its qualified name (`path::Class.method`, `path::outer.inner`). Two
functions of one name in one file are told apart by `#2`, `#3` in the order they appear.

The ratchet: `KNOWN_DEBT` lists today's offenders with their size. Such an entry may shrink
(the check says so, and the entry should then be lowered or removed), never grow; any offender
not listed fails the check.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from rust_text import blank_rust, matching_close

ROOT = Path(__file__).resolve().parent.parent
TREES = ["src", "crates", "python"]
MAX_FILE = 600
MAX_FUNCTION = 100

# Today's offenders, raw lines as counted above. Lower an entry when it shrinks; remove it
# when it fits. Never raise one.
KNOWN_DEBT: dict[str, int] = {
}


# --- Rust ---------------------------------------------------------------------------------

def blank_rust_comments(text: str) -> str:
    """The text with every comment blanked (same length, newlines kept) and string and char
    literals kept whole, so a brace in a comment or a string counts for nothing when matching
    braces: string contents become `s`, which is code."""
    return blank_rust(text, _code, _code, _code)


def _code(literal: str) -> str:
    return re.sub(r"[^\n]", "s", literal)


def body_start(code: str, i: int) -> int | None:
    """Where the body of the `fn` whose signature starts at `i` opens (its `{`), or None for a
    declaration without a body (`fn f();` in a trait or an `extern` block)."""
    depth = 0
    for j in range(i, len(code)):
        c = code[j]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and c == "{":
            return j
        elif depth == 0 and c == ";":
            return None
    return None


IMPL = re.compile(r"\b(impl|trait)\b")


def block_name(header: str, kind: str) -> str:
    """The type an `impl ... {` or `trait ... {` header is about: `impl<T> A<T> for B` -> B."""
    header = re.split(r"\bwhere\b", header)[0]
    if kind == "impl":
        header = re.sub(r"^\s*<", "<", header)
        if header.lstrip().startswith("<"):
            depth = 0
            for k, c in enumerate(header):
                depth += c == "<"
                depth -= c == ">"
                if depth == 0 and c == ">":
                    header = header[k + 1:]
                    break
        parts = re.split(r"\bfor\b", header)
        header = parts[-1]
    header = re.sub(r"<.*", "", header, flags=re.S)
    names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", header)
    return names[-1] if names else "?"


def rust_sizes(path: Path) -> tuple[int, list[tuple[str, int]]]:
    text = path.read_text()
    code = blank_rust_comments(text)
    line_at = [0] * (len(code) + 1)
    row = 0
    for k, c in enumerate(code):
        line_at[k] = row
        if c == "\n":
            row += 1
    line_at[len(code)] = row

    blocks = []
    for m in IMPL.finditer(code):
        # `impl` in a type position (`-> impl Trait`, `arg: impl Trait`) opens no block.
        before = code[:m.start()].rstrip()
        if before and before[-1] not in "};{]" and not before.endswith(("unsafe", "pub")):
            if not re.search(r"(#\[[^\]]*\]|\bpub(\([^)]*\))?|\bunsafe)\s*$", before):
                continue
        open_at = code.find("{", m.end())
        semi = code.find(";", m.end())
        if open_at < 0 or (0 <= semi < open_at):
            continue
        blocks.append((m.start(), matching_close(code, open_at),
                       block_name(code[m.end():open_at], m.group(1))))

    functions = []
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        open_at = body_start(code, m.end())
        if open_at is None:
            continue
        close = matching_close(code, open_at)
        first, last = line_at[m.start()], line_at[close]
        owner = [name for start, end, name in blocks if start < m.start() < end]
        name = f"{owner[-1]}::{m.group(1)}" if owner else m.group(1)
        functions.append((name, last - first + 1))
    return raw_lines(text), functions


# --- Python -------------------------------------------------------------------------------

def raw_lines(text: str) -> int:
    """The number of lines, as `wc -l` counts them (a last line without its newline too)."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def python_sizes(path: Path) -> tuple[int, list[tuple[str, int]]]:
    text = path.read_text()
    tree = ast.parse(text)
    functions = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                functions.append((name, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return raw_lines(text), functions


# --- the check ----------------------------------------------------------------------------

def measure() -> dict[str, int]:
    """Every file and every function of the trees, over its limit or not: name -> lines."""
    sizes: dict[str, int] = {}
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if path.suffix == ".rs":
                file_size, functions = rust_sizes(path)
            elif path.suffix == ".py":
                file_size, functions = python_sizes(path)
            else:
                continue
            rel = str(path.relative_to(ROOT))
            sizes[rel] = file_size
            seen: dict[str, int] = {}
            for name, size in functions:
                seen[name] = seen.get(name, 0) + 1
                key = f"{rel}::{name}" + (f"#{seen[name]}" if seen[name] > 1 else "")
                sizes[key] = size
    return sizes


def limit_of(key: str) -> int:
    return MAX_FUNCTION if "::" in key else MAX_FILE


def main() -> int:
    sizes = measure()
    bad, debt, shrunk = [], [], []
    for key, size in sorted(sizes.items()):
        limit = limit_of(key)
        known = KNOWN_DEBT.get(key)
        if known is None:
            if size > limit:
                bad.append(f"  {key}: {size} lines (limit {limit})")
        elif size > known:
            bad.append(f"  {key}: {size} lines, grew from the {known} listed (limit {limit})")
        else:
            debt.append(f"  {key}: {size} (limit {limit})")
            if size < known:
                shrunk.append(f"  {key}: {size}, listed at {known}"
                              + (": fits now, remove it" if size <= limit else ": lower it"))
    for key in sorted(set(KNOWN_DEBT) - set(sizes)):
        shrunk.append(f"  {key}: gone, remove it")

    if "--list" in sys.argv:
        for key, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
            if size > limit_of(key):
                print(f'    "{key}": {size},')
        return 0
    print(f"check_sizes: known debt, {len(debt)} over the limits (files {MAX_FILE} raw lines, "
          f"functions {MAX_FUNCTION}):")
    print("\n".join(debt))
    if shrunk:
        print("check_sizes: KNOWN_DEBT entries to lower or remove:")
        print("\n".join(shrunk))
    if bad:
        print(f"check_sizes: {len(bad)} offence(s):")
        print("\n".join(bad))
        return 1
    print("check_sizes: ok: nothing new over the limits, no known offender grew")
    return 0


if __name__ == "__main__":
    sys.exit(main())

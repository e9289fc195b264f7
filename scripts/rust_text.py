"""Reading Rust source as text, for the checks in scripts/ (floors and sizes): comments blanked
and literals replaced by text of the same length, so braces and paths in them count for nothing
and every offset still points where it did; and the brace that closes a block."""

from __future__ import annotations

import re
from typing import Callable

#: Turns a literal (a string, raw string or char literal, quotes included) into its stand-in.
Fill = Callable[[str], str]


def blank_rust(text: str, raw: Fill, string: Fill, char: Fill) -> str:
    """The text with every comment blanked (same length, newlines kept) and each literal
    replaced by what `raw`, `string` or `char` make of it (of the same length)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        m = re.match(r'(?:b|c)?r(#*)"', text[i:i + 40]) if c in "bcr" else None
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), i + m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append(raw(text[i:end]))
            i = end
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1)
            out.append(string(text[i:j + 1]))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'", text[i:i + 12])
            if m:
                out.append(char(text[i:i + m.end()]))
                i += m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def matching_close(code: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1

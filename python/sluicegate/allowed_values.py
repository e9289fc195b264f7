"""The allowed values of the options that take one of a few names (--scheduler, --http2, --http3,
--cert-reqs, --tls-min-version, --forwarded-headers, and the named formats of
--access-log-format), read from allowed_values.txt beside this module: the one place they are
declared. The parsers (the parsers package) accept exactly these; the Rust core compiles the same file in
(src/config.rs, `allowed_values`) and maps each name, by its place, to its enum variant.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Dict, Sequence, Tuple

#: The file, shipped in the package (and so in the wheel) beside this module.
PATH = os.path.join(os.path.dirname(__file__), "allowed_values.txt")


def read(text: str) -> Dict[str, Tuple[str, ...]]:
    """Each option's names, in order: one `option: name name ...` a line; `#` starts a comment
    line."""
    table: Dict[str, Tuple[str, ...]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        option, _, names = line.partition(":")
        table[option.strip()] = tuple(names.split())
    return table


with open(PATH, encoding="utf-8") as _f:
    ALLOWED: Dict[str, Tuple[str, ...]] = read(_f.read())


def spelled(names: Sequence[str], last: str = "or") -> str:
    """`a, b or c`, as an error message lists the names."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"

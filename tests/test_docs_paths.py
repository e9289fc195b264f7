"""The docs name files that exist, and no doc or code carries an issue, session or stop number.

Pure file checks, no server: they read text, not behaviour. The docs (README.md,
CONTRIBUTING.md, BENCHMARKS.md, CHANGELOG.md, docs/*.md, benchmarks/*.md) say which file makes
each claim true; files get moved and split, and a doc naming a file that is gone has drifted.

What counts as a name of ours (in `backticks`, outside ``` fences, and in relative Markdown
links `[text](path)`, which resolve from the doc's own folder):

- A path with a `/`, one word, whose last part has a known extension (`.py`, `.rs`, ...), or
  which ends in `/`, or whose first part is a folder of the repository (`src`, `tests`, `io`,
  `proto`, ...). It must exist relative to the repository root or to one of the well-known
  prefixes, tried in order: `src/`, `python/`, `python/sluicegate/`, `benchmarks/`,
  `benchmarks/results/`, `tests/`; a path written `proto/...` means `crates/proto/src/...`
  (that crate's source, as `io/...` means `src/io/...`). A trailing `/` must be a folder. `tests/x.py::name` also
  needs `def name` in that file. Inside a longer command (`python3 scripts/check_sizes.py`), only
  the words that start with a folder of the repository root are checked.
- A bare file name ending in `.py`, `.rs`, `.md`, `.toml`, `.sh` or `.pyi` must exist somewhere
  in the tree (a `*` matches as in a shell). The tree leaves out target/, .venv/, .git/ and
  caches; vendor/ counts only for a name on a line that says "vendor".
- A Rust path whose first part is a module at the top of `src/` (`io::h2::conn`) or `proto::`
  (crates/proto/src): each module part must be a file `a/b.rs` or `a/b/mod.rs`; the first
  part that is not a module must be declared in the last module's file (`fn`, `struct`,
  `enum`, `const`, `static`, `type`, `trait`, `mod`, or named in a `use`).
- A type and one of its members, `Type::member` (Rust) or `Class.member` (Python), the type
  in CamelCase: some file of src/, crates/ or python/ declares the type (`struct`, `enum`,
  `trait`, `type`, `class`, or `#[pyclass(name = "Type")]`), and `member` is a word of a file
  that declares or `impl`s it (a method, field or variant moved to another type drifts).
  Types of other crates written the same way (`PyString::to_str`) are in NOT_OURS.
- A Python module's name, `module.name` or `sluicegate.module.name`, where
  python/sluicegate/module.py exists: the module defines `name` (`def`, `class`, an assignment,
  or `self.name =`).
- Skipped: absolute and home paths (`/proc/...`, `~/...`, `$VAR/...`), `./x` (the reader's
  folder), URLs, and paths with a placeholder part in capitals (`DATE-NAME`, `FOLDER`).

Names that are not ours (a file of nginx or of the user's project, a folder a build or a
benchmark run makes) are in NOT_OURS, each with the reason it is not a file of this repository.

The second test keeps narratives out: no `issue 12`, `#12`-style issue numbers, `session 3`,
`session3`, `stop 4`, a branch named as where work happened, or a helper's work tree path, in
the docs or in src/, python/, crates/, tests/ (this file aside: it spells the patterns),
benchmarks/*.py and benchmarks/bench/ (benchmarks/results/ and vendor/ are records and other
people's code). The whole text of each file is read, code and comments alike.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent

DOCS = sorted(
    [ROOT / n for n in ("README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "CHANGELOG.md")]
    + list((ROOT / "docs").glob("*.md"))
    + list((ROOT / "benchmarks").glob("*.md"))
)

# Folders of the tree that are not the project's own files.
SKIP_DIRS = {
    ".git", "target", ".venv", "__pycache__", ".pytest_cache", ".work", "node_modules", "dist",
}

PREFIXES = (
    "", "src/", "python/", "python/sluicegate/", "benchmarks/", "benchmarks/results/", "tests/",
)
PATH_EXTS = {
    "py", "pyi", "rs", "md", "toml", "sh", "txt", "json", "cfg", "ini", "lock", "yml", "yaml",
    "c", "h", "dict", "pem", "csv", "html",
}
BARE_EXTS = {"py", "pyi", "rs", "md", "toml", "sh"}

# Names written in the docs that are not files of this repository, and why. An entry ending
# in `/` also covers every path under it.
NOT_OURS: Dict[str, str] = {
    "PyString::to_str": "pyo3's method, named for what the extension calls",
    "RequestStream::poll_ready": "the vendored h3 crate's method (vendor/patches/h3/0005)",
    "worker.age": "an attribute of the worker object the hooks get (hook_objects.py)",
    "worker.pid": "an attribute of the worker object the hooks get (hook_objects.py)",
    "gunicorn.conf.py": "gunicorn's config file in the user's project (the corpus's copies aside)",
    "manage.py": "a Django project's script, in the user's project",
    "sites-enabled/": "nginx's folder of site files on Debian, in /etc/nginx",
    "target/": "cargo's output, made by a build (ignored by git)",
    "dist/": "the wheels ./dev wheels makes (ignored by git)",
    "benchmarks/.work/": "the benchmark runner's installs and logs, made by a run (ignored by git)",
    "benchmarks/.venv/": "the benchmark runner's virtualenv, made by a run (ignored by git)",
}

# A code span: one backtick to the next, within a paragraph (no blank line between).
TOKEN = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH_WORD = re.compile(r"^[A-Za-z0-9_.*-]+(/[A-Za-z0-9_.*-]+)*/?$")
RUST_PATH = re.compile(r"^(?:crate::)?([a-z_][a-z0-9_]*)((?:::[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?$")
TYPE_MEMBER = re.compile(
    r"^([A-Z][A-Z0-9]*[a-z][A-Za-z0-9]*)(::|\.)([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?$"
)
PY_NAME = re.compile(r"^(?:sluicegate\.)?([a-z_][a-z0-9_]*)\.([A-Za-z_]\w*)(?:\(\))?$")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_-]*$")


def _tree() -> Tuple[Set[str], Dict[str, List[str]]]:
    """Every file and folder of the tree (relative, `/`-separated), and file names to paths."""
    paths: Set[str] = set()
    names: Dict[str, List[str]] = {}
    for top, dirs, files in os.walk(ROOT):
        rel_top = os.path.relpath(top, ROOT).replace(os.sep, "/")
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for d in dirs:
            paths.add(d if rel_top == "." else f"{rel_top}/{d}")
        for f in files:
            rel = f if rel_top == "." else f"{rel_top}/{f}"
            paths.add(rel)
            names.setdefault(f, []).append(rel)
    return paths, names


PATHS, NAMES = _tree()
TOP_DIRS = {p for p in PATHS if "/" not in p and (ROOT / p).is_dir()}
SRC_MODULES = {
    p.split("/")[1].removesuffix(".rs") for p in PATHS if p.count("/") == 1 and p.startswith("src/")
} - {"lib"}
FIRST_PARTS = TOP_DIRS | {m for m in SRC_MODULES if (ROOT / "src" / m).is_dir()} | {"proto"}


def _blank_fences(text: str) -> str:
    """The text with ``` fenced blocks emptied (their lines kept, so line numbers hold)."""
    out: List[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


def _doc_tokens(doc: Path) -> Iterator[Tuple[int, str, str, str]]:
    """(line, kind, token, that line's text) for each backticked token and relative link."""
    # `` (an empty table cell in docs/options.md) is no code span: blanked so it pairs nothing.
    text = re.sub(r"(?<!`)``(?!`)", "  ", _blank_fences(doc.read_text(encoding="utf-8")))
    lines = text.split("\n")
    for rx, kind in ((TOKEN, "code"), (LINK, "link")):
        for m in rx.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield line, kind, " ".join(m.group(1).split()), lines[line - 1]


def _exists(rel: str, want_dir: bool) -> bool:
    if "*" in rel:
        return any(fnmatch.fnmatchcase(p, rel) for p in PATHS)
    if rel not in PATHS:  # the walked tree only: what a build left behind proves nothing
        return False
    return (ROOT / rel).is_dir() if want_dir else True


def _resolve(word: str) -> Optional[str]:
    """The repository path a path-like word names, or None when none of the prefixes fits."""
    want_dir = word.endswith("/")
    word = word.rstrip("/")
    if word.startswith("proto/"):
        candidates = [f"crates/proto/src/{word[len('proto/'):]}"]
    else:
        candidates = [p + word for p in PREFIXES]
    for c in candidates:
        if _exists(c, want_dir):
            return c
    return None


def _not_ours(word: str) -> bool:
    bare = word.rstrip("/")
    return any(bare == n.rstrip("/") or (n.endswith("/") and word.startswith(n)) for n in NOT_OURS)


def _is_placeholder(word: str) -> bool:
    return any(PLACEHOLDER.match(part) for part in word.strip("/").split("/"))


def _check_pytest_name(rel: str, name: str) -> Optional[str]:
    body = (ROOT / rel).read_text(encoding="utf-8")
    if re.search(rf"\bdef {re.escape(name)}\b", body):
        return None
    return f"{rel} has no test {name}"


def _check_path(word: str, line_text: str, whole: bool) -> Optional[str]:
    """Why a path-like word names nothing (None when it is fine or not a name of ours)."""
    test_name = None
    if "::" in word and word.split("::")[0].endswith(".py"):
        word, test_name = word.split("::", 1)
    if not PATH_WORD.match(word) or _not_ours(word) or _is_placeholder(word):
        return None
    last = word.rstrip("/").rsplit("/", 1)[-1]
    ext = last.rsplit(".", 1)[-1] if "." in last.lstrip(".") else ""
    if "/" in word.rstrip("/"):
        first = word.split("/", 1)[0]
        if whole:
            if not (ext in PATH_EXTS or word.endswith("/") or first in FIRST_PARTS):
                return None
        elif first not in TOP_DIRS:
            return None
        rel = _resolve(word)
        if rel is None:
            return f"no such path: {word}"
    elif word.endswith("/") and whole:
        rel = _resolve(word)
        if rel is None:
            return f"no such folder: {word}"
    elif whole and ext in BARE_EXTS:
        rel = _find_bare(last, "vendor" in line_text.lower())
        if rel is None:
            return f"no file named {word} in the tree"
    else:
        return None
    if test_name is not None:
        return _check_pytest_name(rel, test_name)
    return None


def _find_bare(name: str, vendor_too: bool) -> Optional[str]:
    for path_name, rels in NAMES.items():
        if fnmatch.fnmatchcase(path_name, name):
            for rel in rels:
                if vendor_too or not rel.startswith("vendor/"):
                    return rel
    return None


def _module_file(parts: List[str]) -> Optional[Path]:
    base = ROOT / "crates/proto/src" if parts[0] == "proto" else ROOT / "src"
    rest = parts[1:] if parts[0] == "proto" else parts
    if not rest:
        return base / "lib.rs"
    stem = base.joinpath(*rest)
    for f in (stem.with_suffix(".rs"), stem / "mod.rs"):
        if f.is_file():
            return f
    return None


def _declared(name: str, source: str) -> bool:
    decl = rf"\b(fn|struct|enum|const|static|type|trait|mod|union)\s+{re.escape(name)}\b"
    if re.search(decl, source) or re.search(rf"macro_rules!\s*{re.escape(name)}\b", source):
        return True
    uses = re.findall(r"\buse\s[^;]+;", source)
    return any(re.search(rf"\b{re.escape(name)}\b", u) for u in uses)


def _check_rust_path(token: str) -> Optional[str]:
    m = RUST_PATH.match(token)
    if not m or not (m.group(1) in SRC_MODULES or m.group(1) == "proto"):
        return None
    parts = [m.group(1)] + m.group(2).split("::")[1:]
    last_file = _module_file(parts[:1])
    if last_file is None:
        return f"no module file for {parts[0]}"
    for i in range(1, len(parts)):
        f = _module_file(parts[: i + 1])
        if f is not None:
            last_file = f
            continue
        if _declared(parts[i], last_file.read_text(encoding="utf-8")):
            return None
        where = last_file.relative_to(ROOT)
        named = "::".join(parts[: i + 1])
        return f"{named}: no module file and nothing named {parts[i]} in {where}"
    return None


_SOURCES: Dict[str, str] = {}


def _sources() -> Dict[str, str]:
    """The text of every .rs of src/ and crates/ and every .py of python/, by path (read once)."""
    if not _SOURCES:
        for p in sorted(PATHS):
            if p.startswith(("src/", "crates/")) and p.endswith(".rs") or (
                p.startswith("python/") and p.endswith(".py")
            ):
                _SOURCES[p] = (ROOT / p).read_text(encoding="utf-8")
    return _SOURCES


@functools.lru_cache(maxsize=None)
def _homes(ty: str) -> List[str]:
    """The files that declare type `ty` or implement something for it."""
    decl = re.compile(
        rf"\b(?:struct|enum|trait|type|class)\s+{ty}\b|name\s*=\s*\"{ty}\""
        rf"|\bimpl(?:<[^>]*>)?\s+(?:[\w:<>]+\s+for\s+)?{ty}\b"
    )
    return [p for p, text in _sources().items() if ty in text and decl.search(text)]


def _check_type_member(token: str) -> Optional[str]:
    m = TYPE_MEMBER.match(token)
    if not m or token in NOT_OURS or m.group(3) in BARE_EXTS | PATH_EXTS:
        return None
    ty, member = m.group(1), m.group(3)
    homes = _homes(ty)
    if not homes:
        return f"no type {ty} in src/, crates/ or python/"
    word = re.compile(rf"\b{re.escape(member)}\b")
    if any(word.search(_sources()[p]) for p in homes):
        return None
    return f"nothing named {member} where {ty} is declared or implemented ({', '.join(homes)})"


def _check_python_name(token: str) -> Optional[str]:
    m = PY_NAME.match(token)
    if not m or token in NOT_OURS or m.group(2) in BARE_EXTS | PATH_EXTS:
        return None
    module = ROOT / "python" / "sluicegate" / f"{m.group(1)}.py"
    if not module.is_file():
        return None
    name = re.escape(m.group(2))
    defined = rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^\s*{name}\s*[:=]|\bself\.{name}\s*[:=]"
    if re.search(defined, module.read_text(encoding="utf-8"), re.M):
        return None
    return f"{module.relative_to(ROOT)} defines no {m.group(2)}"


def _check_token(kind: str, token: str, line_text: str, doc: Path) -> List[str]:
    if kind == "link":
        target = token.split("#", 1)[0]
        if not target or re.match(r"^[a-z]+:", target) or target.startswith("/"):
            return []
        rel = os.path.normpath(os.path.relpath(doc.parent / target, ROOT)).replace(os.sep, "/")
        return [] if (ROOT / rel).exists() else [f"link to a missing path: {token}"]
    if token.startswith(("/", "~", "$", "./", "http://", "https://")):
        return []
    rust = _check_rust_path(token)
    if rust is not None or RUST_PATH.match(token):
        return [rust] if rust else []
    if TYPE_MEMBER.match(token):
        why = _check_type_member(token)
        return [why] if why else []
    if PY_NAME.match(token) and not token.endswith(tuple("." + e for e in PATH_EXTS)):
        why = _check_python_name(token)
        return [why] if why else []
    if " " not in token:
        why = _check_path(token, line_text, whole=True)
        return [why] if why else []
    problems = []
    for word in token.split(" "):
        why = _check_path(word.strip("\"'(),;"), line_text, whole=False)
        if why:
            problems.append(why)
    return problems


def test_docs_name_files_that_exist() -> None:
    """Every file, folder and Rust module a doc names exists today."""
    missing = []
    for doc in DOCS:
        for line, kind, token, line_text in _doc_tokens(doc):
            for why in _check_token(kind, token, line_text, doc):
                missing.append(f"{doc.relative_to(ROOT)}:{line}: `{token}`: {why}")
    assert not missing, "the docs name files that are not there:\n" + "\n".join(missing)


def test_not_ours_entries_are_still_used() -> None:
    """Each allow-list entry is still named by some doc (a stale entry would hide a drift)."""
    text = "\n".join(d.read_text(encoding="utf-8") for d in DOCS)
    unused = [n for n in NOT_OURS if f"`{n.rstrip('/')}" not in text]
    assert not unused, f"NOT_OURS entries no doc names any more: {unused}"


# What a narrative leaves behind: an issue, pull request or session's number, a helper's
# stop, a branch or work tree named as where something happened. Real prose has none of these
# ("QUIC issues at most 8 IDs", "a TLS session ticket", "PKCS#8" and "§13.2.2 step 2" pass).
# Each pattern is read on the lowered text, and only in a file holding its key word (fast).
NARRATIVE: List[Tuple[str, "re.Pattern[str]"]] = [
    (k, re.compile(rx, re.M))
    for k, rx in [
        ("#", r"\b(?:issue|ticket|bug|pr|pull request)\s*#\s*\d+"),  # issue #12, PR #3
        ("issue", r"\bissue\s+\d+\b"),  # issue 12
        ("pr", r"\bpr\s+\d+\b"),  # PR 3
        ("issue", r"\bissue\d+\b"),  # issue12 (a file or branch name)
        ("#", r"(?:^|(?<=[\s(\[]))#\d+\b"),  # (#12)
        ("session", r"\bsessions?\s*#?\s*\d+\b"),  # session 3, session3, sessions 2
        ("stop", r"\bstop\s*#?\s*\d+\b"),  # stop 4
        ("branch", r"\bbranch\s+[`'\"][\w./-]+[`'\"]"),  # branch `name`
        # on the `name` branch (not "on which branch", "in this branch")
        ("branch", r"\b(?:on|from|in)\s+(?:the\s+)?(?!(?:which|this|that|each|its|a|one|another)\b)"
         r"[`'\"]?[\w-]+[`'\"]?\s+branch\b"),
        ("/work/wt/", r"/work/wt/"),  # a helper's work tree
    ]
]
NARRATIVE_EXTS = {".rs", ".py", ".pyi", ".md", ".toml", ".sh", ".txt"}


def _narrative_files() -> Iterator[Path]:
    yield from DOCS
    for top in ("src", "python", "crates", "benchmarks/bench", "tests"):
        for rel in sorted(p for p in PATHS if p.startswith(top + "/")):
            if Path(rel).suffix in NARRATIVE_EXTS and ROOT / rel != Path(__file__).resolve():
                yield ROOT / rel
    yield from sorted((ROOT / "benchmarks").glob("*.py"))


def test_no_issue_session_or_branch_narratives() -> None:
    """Docs and code say what is, not which issue, session, stop or branch it came from."""
    found: Dict[Tuple[Path, int], str] = {}
    for path in _narrative_files():
        text = path.read_text(encoding="utf-8")
        low = text.lower()
        for key, rx in NARRATIVE:
            if key not in low:
                continue
            for m in rx.finditer(low):
                n = low.count("\n", 0, m.start()) + 1
                line = text.split("\n")[n - 1].strip()
                where = f"{path.relative_to(ROOT)}:{n}"
                found.setdefault((path, n), f"{where}: {m.group(0)!r} in: {line}")
    lines = [found[k] for k in sorted(found)]
    assert not lines, "narratives in docs or code (say what is instead):\n" + "\n".join(lines)

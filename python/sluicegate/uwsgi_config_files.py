"""uWSGI 2.0's config file readers: the magic variables and the ini, YAML, JSON and XML formats.

Each reader turns one file's text into the (key, value, line) entries uWSGI hands to its option
list, in file order, exactly as uWSGI 2.0's core/ini.c, core/yaml.c (the embedded line-based
reader, not libyaml), core/json.c (jansson) and core/xmlconf.c (libxml2) read them. The magic
variables (`%d`, `%n`, `%k`...) are substituted in the whole file text before it is parsed, as
uWSGI's `uwsgi_open_and_read` does (core/io.c, core/utils.c `magic_sub`); the table is filled
per file by `fill_magic_table` (core/uwsgi.c `config_magic_table_fill`). The option list itself,
the `%(name)`/`$(ENV)`/`@(file)` passes and the if/for logic live in uwsgi_config.py.
"""

from __future__ import annotations

import os
import pwd
import grp
import socket
import struct
import sys
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

if TYPE_CHECKING:  # the modules are imported by the reader that needs them
    import xml.dom.minidom

from .errors import OptionError

#: The uWSGI version the resolution follows (the value of the `%V` magic variable).
UWSGI_VERSION = "2.0.31"

#: One entry of a config file: (key, value, line number).
Entry = Tuple[str, str, int]


class UwsgiConfigError(OptionError):
    """A uWSGI configuration uWSGI itself would refuse: one line naming the file, the line and
    why (an option error, exit status 2)."""


#: uWSGI's "schemes" (core/io.c): a config or `@(...)` named `scheme://...` is not a file.
SCHEMES = ("emperor", "http", "data", "sym", "section", "fd", "exec", "call", "callint")


def scheme_of(name: str) -> Optional[str]:
    for scheme in SCHEMES:
        if name.startswith(scheme + "://"):
            return scheme
    return None


def split_section(name: str) -> Tuple[str, Optional[str]]:
    """`file.ini:section` -> ("file.ini", "section"); the section is what follows the last `:`
    (after the last `/` for a `scheme://` name); None when there is no colon, "" when the colon
    ends the name."""
    start = name.rfind("/") if scheme_of(name) else 0
    colon = name.rfind(":", max(start, 0))
    if colon < 0:
        return name, None
    return name[:colon], name[colon + 1 :]


def _djb33x_hex(text: str) -> str:
    """The `%j` variable: uWSGI's djb33x hash of the path (C `char` is signed), as the hex of the
    32-bit value's bytes in memory order (little-endian on the platforms sluicegate runs on)."""
    value = 5381
    for byte in text.encode("utf-8", "surrogateescape"):
        signed = byte - 256 if byte >= 128 else byte
        value = (((value << 5) + value) ^ (signed & 0xFFFFFFFF)) & 0xFFFFFFFF
    return struct.pack("<I", value).hex().upper()


def initial_magic_table(cwd: str, binary_path: str) -> Dict[str, str]:
    """The table before any file is read: every `%X` is "" except `%%`, `%(` and the static
    variables uWSGI sets at startup (core/uwsgi.c `uwsgi_setup`)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    cpus = os.sysconf("SC_NPROCESSORS_ONLN") if hasattr(os, "sysconf") else os.cpu_count()
    return {
        "%": "%",
        "(": "%(",
        "v": cwd,
        "h": socket.gethostname(),
        "t": str(int(time.time())),
        "T": str(time.time_ns() // 1000),
        "V": UWSGI_VERSION,
        "k": str(cpus or 1),
        "[": "\033",
        "u": str(uid),
        "U": user,
        "g": str(gid),
        "G": group,
        "b": binary_path,
    }


def fill_magic_table(
    table: Dict[str, str], filename: str, cwd: str, first_round: bool, where: str
) -> bool:
    """Set the per-file variables for `filename` (maybe `file:section`) as uWSGI's
    `config_magic_table_fill` does; returns whether the upper-case copies (`%O`, `%D`...) are
    now set (they are set once, by the first file not loaded through `include`/a bare argument)."""
    path, section = split_section(filename)
    # uWSGI's readers cut the name at its `:section` before reading, through the same string.
    table["o"] = path
    if scheme_of(filename) or filename == "-":
        return first_round
    if path or section is None:
        if os.path.islink(path):
            full = path if path.startswith("/") else cwd + "/" + path
        else:
            full = os.path.realpath(os.path.join(cwd, path))
            if not os.path.exists(full):
                raise UwsgiConfigError(f"{where}: cannot read {path}: No such file or directory")
        table["p"] = full
        table["j"] = _djb33x_hex(full)
        try:
            table["i"] = str(os.lstat(full).st_ino)
        except OSError:
            pass
        base = full[full.rfind("/") + 1 :]
        table["s"] = base
        directory = full[: len(full) - len(base)]
        table["d"] = directory
        bare = directory[:-1] if directory.endswith("/") else directory
        table["c"] = bare[bare.rfind("/") + 1 :] if "/" in bare else ""
        parts = [p for p in bare.split("/") if p]
        for index in range(10):
            table[str(index)] = parts[index] if index < len(parts) else ""
        dot = base.rfind(".")
        table["e"] = base[dot + 1 :] if dot >= 0 else ""
        table["n"] = base[:dot] if dot >= 0 else base
    table["x"] = section or ""
    if not first_round:
        for letter in "odspcenxij":
            table[letter.upper()] = table.get(letter, "")
        return True
    return first_round


def magic_sub(text: str, table: Dict[str, str]) -> str:
    """Replace every `%X` by the table's value ("" for a letter uWSGI does not define), `%%` by
    `%` and keep `%(` for the placeholder pass (core/utils.c `magic_sub`)."""
    out: List[str] = []
    i, size = 0, len(text)
    while i < size:
        char = text[i]
        if char == "%" and i + 1 < size:
            out.append(table.get(text[i + 1], ""))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def read_text(path: str, where: str) -> str:
    """A file's whole text (bytes beyond UTF-8 kept as surrogates), or the one-line error uWSGI
    stops with; `-` is standard input and `exec://COMMAND` the command's output, as in uWSGI."""
    try:
        if path == "-":
            return sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
        scheme = scheme_of(path)
        if scheme == "exec":
            import subprocess

            done = subprocess.run(
                ["/bin/sh", "-c", path[len("exec://") :]],
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                check=False,
            )
            return done.stdout.decode("utf-8", "surrogateescape")
        if scheme is not None:
            raise UwsgiConfigError(
                f"{where}: reading {scheme}:// is not supported (only files, - and exec://)"
            )
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except OSError as err:
        raise UwsgiConfigError(f"{where}: cannot read {path}: {err.strerror}") from None


def parse_ini(text: str, section: str) -> List[Entry]:
    """core/ini.c: whole-line `#`/`;` comments, `[section]` headers, `key = value` (no `=`: an
    empty value), keys and values stripped of spaces, tabs and CRs; only `section`'s entries."""
    entries: List[Entry] = []
    current = ""
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.split("\0", 1)[0].strip(" \t\r")
        if not line:
            continue
        if line[0] == "[":
            current = line[1:-1]
            continue
        if line[0] in ";#":
            continue
        key, _, value = line.partition("=")
        if current == section:
            entries.append((key.rstrip(" \t\r"), value.strip(" \t\r"), number))
    return entries


def _yaml_depth(line: str) -> int:
    depth = 0
    for char in line:
        if char == " ":
            depth += 1
        elif char in "\t\r":
            depth += 8
        else:
            break
    return depth


def parse_yaml(text: str, section: str) -> Tuple[List[Entry], bool]:
    """core/yaml.c's embedded reader: `#` starts a comment anywhere, the top-level `section:`
    key opens the block, each deeper `key: value` line is an entry (the value kept verbatim but
    for surrounding blanks), and the first line back at the top level, a list item, a flow
    collection or a line without `: ` ends it. The flag says whether the block ended before
    the file did (uWSGI then leaves the `:section` cut off the file name it was given)."""
    entries: List[Entry] = []
    in_section = False
    current_depth = 0
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.split("#", 1)[0].split("\0", 1)[0]
        if not line:
            continue
        depth = _yaml_depth(line)
        if depth <= current_depth:
            current_depth = depth
            if in_section:
                return entries, True
        elif not in_section:
            continue
        key = line.lstrip(" \t\r")
        if not key:
            continue
        if key[0] in "-[{":
            if in_section:
                return entries, True
            continue
        if not in_section:
            if ":" in key and key.split(":", 1)[0] == section:
                in_section = True
            continue
        cut = key.find(": ")
        if cut < 0:
            cut = key.find(":\t")
        if cut < 0:
            return entries, True
        entries.append(
            (key[:cut].rstrip(" \t"), key[cut + 2 :].lstrip(" \t\r").rstrip(" \t"), number)
        )
    return entries, False


def _json_scalar(value: object) -> Optional[str]:
    """jansson's reading of one value: strings as they are, true "1", false and null "0",
    integers in decimal; reals, objects and nested arrays are skipped."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if value is None:
        return "0"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return None


def parse_json(text: str, section: str, where: str) -> List[Entry]:
    """core/json.c (jansson): the object named `section` in the top-level object; each key once
    per scalar, an array's scalars each as one entry of that key."""
    import json

    try:
        root = json.loads(text.split("\0", 1)[0])
    except ValueError as err:
        line = getattr(err, "lineno", 0)
        raise UwsgiConfigError(f"{where}:{line}: error parsing JSON data: {err}") from None
    config = root.get(section) if isinstance(root, dict) else None
    if not isinstance(config, dict):
        raise UwsgiConfigError(
            f"{where}: you must define an object named {section} in your JSON data"
        )
    entries: List[Entry] = []
    for key, value in config.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            scalar = _json_scalar(item)
            if scalar is not None:
                entries.append((key, scalar, 0))
    return entries


def _xml_attr(node: xml.dom.minidom.Node, name: str) -> Optional[str]:
    if node.nodeType != node.ELEMENT_NODE:
        return None
    if not node.hasAttribute(name):  # type: ignore[attr-defined]
        return None
    return str(node.getAttribute(name))  # type: ignore[attr-defined]


def _xml_content(node: xml.dom.minidom.Node) -> str:
    """libxml2's `node->content`: the text of a text, CDATA or comment node ("" otherwise)."""
    data = getattr(node, "data", None)
    return str(data) if data is not None else ""


def _xml_app(node: xml.dom.minidom.Node, line: int) -> List[Entry]:
    """The `<app mountpoint=... domain=...>` element: a `mount` plus an empty `app`."""
    children = node.childNodes
    if not children:
        return [("app", "", line)]
    if len(children) == 1:
        target = _xml_content(children[0])
    elif children[1].childNodes:
        target = _xml_content(children[1].childNodes[0])
    else:
        return []
    mountpoint, domain = _xml_attr(node, "mountpoint"), _xml_attr(node, "domain")
    if mountpoint is not None:
        target = f"{mountpoint}={target}"
    elif domain is not None:
        target = f"{domain}|={target}"
    return [("mount", target, line), ("app", "", line)]


def parse_xml(text: str, xml_id: Optional[str], where: str) -> List[Entry]:
    """core/xmlconf.c (libxml2): the root `<uwsgi>` (or the first `<uwsgi>` child of another
    root, the one whose `id` matches `file.xml:id`); each child element is an entry, its value the
    first child node's text verbatim ("1" when empty); a CDATA child is an `eval` entry."""
    import xml.dom.minidom
    from xml.parsers.expat import ExpatError

    try:
        document = xml.dom.minidom.parseString(text.encode("utf-8", "surrogateescape"))
    except ExpatError as err:
        raise UwsgiConfigError(
            f"{where}:{err.lineno}: could not parse the XML file ({err})"
        ) from None
    element: Optional[xml.dom.minidom.Node] = document.documentElement
    if element is None:
        raise UwsgiConfigError(f"{where}: invalid xml config file")
    if element.nodeName != "uwsgi":
        found = None
        for node in element.childNodes:
            if node.nodeType == node.ELEMENT_NODE and node.nodeName == "uwsgi":
                node_id = _xml_attr(node, "id")
                if xml_id and node_id is not None and node_id != xml_id:
                    continue
                found = node
                break
        if found is None:
            raise UwsgiConfigError(f"{where}: invalid xml root element, <uwsgi> expected")
        element = found
    entries: List[Entry] = []
    for node in element.childNodes:
        node_id = _xml_attr(node, "id")
        if xml_id and node_id is not None and node_id != xml_id:
            continue
        line = getattr(node, "parse_position", (0, 0))[0] or 0
        if node.nodeType == node.CDATA_SECTION_NODE:
            entries.append(("eval", _xml_content(node), line))
        elif node.nodeType == node.ELEMENT_NODE:
            if node.nodeName == "app":
                entries.extend(_xml_app(node, line))
            elif node.childNodes:
                entries.append((node.nodeName, _xml_content(node.childNodes[0]), line))
            else:
                entries.append((node.nodeName, "1", line))
    return entries

"""uWSGI 2.0's configuration resolution: a uWSGI command line and environment -> the options.

`resolve(argv, environ)` gives the ordered (option, value) pairs uWSGI 2.0 would apply for the
same command line, `UWSGI_*` environment and config files, following uWSGI's own code step by
step (core/uwsgi.c `uwsgi_setup`, core/config.c, core/init.c, core/utils.c):
1. `UWSGI_*` variables in environment order (`UWSGI_CHMOD_SOCKET` -> `chmod-socket`);
2. the command line as glibc's getopt_long reads uWSGI's option table (long options, unique
   prefixes, uWSGI's short letters, switches without a value), then bare config files by their
   extension; config files (uwsgi_config_files.py) are read when their option is met, so
   `ini`, `include`, `set-placeholder`, `if-*`/`for*` ... take effect in order ("immediate");
3. the `$(ENV)`, then `@(file)`, then `%(placeholder)` passes over every value not consumed by an
   immediate option, the placeholder pass with uWSGI's `%(a b + 1)` arithmetic;
4. `inherit` files, read after the passes as uWSGI does, and `strict`'s refusal of any key that
   is not a uWSGI option.
The option names, their short letters and argument kinds come from uwsgi_option_table.py.
`resolve_all` gives the whole list as `uwsgi --show-config` prints it, and
tests/test_uwsgi_differential.py compares it with the real uWSGI's.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .uwsgi_config_files import (
    Entry,
    UwsgiConfigError,
    fill_magic_table,
    initial_magic_table,
    magic_sub,
    parse_ini,
    parse_json,
    parse_xml,
    parse_yaml,
    read_text,
    split_section,
)
from .uwsgi_config_logic import LOGIC, Logic
from .uwsgi_option_table import IMMEDIATE, OPTIONS, parse_command_line

__all__ = [
    "LANGUAGE_KEYS",
    "ResolvedOption",
    "UwsgiConfigError",
    "resolve",
    "resolve_all",
    "resolve_detailed",
    "show_config",
    "uwsgi_bool",
]

#: Environment variables uWSGI keeps for itself rather than reading as options.
_ENV_RESERVED = (
    "UWSGI_RELOADS=",
    "UWSGI_VASSALS_DIR=",
    "UWSGI_EMPEROR_FD=",
    "UWSGI_BROODLORD_NUM=",
    "UWSGI_EMPEROR_FD_CONFIG=",
    "UWSGI_EMPEROR_PROXY=",
    "UWSGI_JAIL_PID=",
    "UWSGI_ORIGINAL_PROC_NAME=",
)

#: Keys that end an if/for block.
_END_KEYS = frozenset({"end", "endfor", "endif", "end-if", "end-for"})

#: The keys that drive the resolution itself (config files, placeholders, logic): `resolve()`
#: leaves them out, `resolve_detailed()` marks them "language".
LANGUAGE_KEYS = frozenset(
    {
        "ini", "yaml", "yml", "json", "js", "xml", "xmlconfig", "include", "inherit", "config",
        "set", "set-placeholder", "set-ph", "strict", "declare-option", "resolve",
        "inject-before", "inject-after", "for", "for-glob", "for-times", "for-readline",
        "endfor", "end-for", "if-opt", "if-not-opt", "if-env", "if-not-env", "ifenv",
        "if-reload", "if-not-reload", "if-hostname", "if-not-hostname", "if-hostname-match",
        "if-not-hostname-match", "if-exists", "if-not-exists", "ifexists", "if-plugin",
        "if-not-plugin", "ifplugin", "if-file", "if-not-file", "if-dir", "if-not-dir", "ifdir",
        "if-directory", "endif", "end-if",
    }
)  # fmt: skip


def uwsgi_bool(value: Optional[str]) -> bool:
    """uWSGI's reading of a switch's value (core/uwsgi.c `uwsgi_opt_true`): false only for
    "false", "off", "no" (any case) and "0"; anything else, the empty value included, is true."""
    if value is None:
        return True
    return not (value.lower() in ("false", "off", "no") or value == "0")


@dataclass
class ResolvedOption:
    """One entry of uWSGI's option list. `value` is None for a switch given without a value;
    `kind` is "option" (a uWSGI option), "placeholder" (a key that is not a uWSGI option, or one
    set by set-placeholder) or "language" (LANGUAGE_KEYS, and options made by declare-option,
    whose expansions follow them as unlisted options); `where` says where it came from."""

    key: str
    value: Optional[str]
    kind: str
    where: str
    configured: bool = False
    #: False for what a declare-option option expands to: uWSGI applies it without listing it.
    listed: bool = True


#: The options that read a config file, and its format.
_FORMATS = {
    "ini": "ini",
    "yaml": "yaml",
    "yml": "yaml",
    "json": "json",
    "js": "json",
    "xml": "xml",
    "xmlconfig": "xml",
}

#: How many files may be nested (uWSGI itself recurses until it crashes).
_MAX_DEPTH = 64


class _Resolver:
    """uWSGI's option list being built (uwsgi.exported_opts) and the state around it."""

    def __init__(self, environ: Mapping[str, str], binary_path: str) -> None:
        self.environ = environ
        self.cwd = os.getcwd()
        self.opts: List[ResolvedOption] = []
        self.logic: Optional[Tuple[Logic, str]] = None
        self.logic_running = False
        self.strict = False
        self.magic = initial_magic_table(self.cwd, binary_path)
        self.magic_first_round = False
        self.last_ini: Optional[str] = None
        self.inject_before: List[str] = []
        self.inject_after: List[str] = []
        self.depth = 0
        self.custom: Dict[str, str] = {}

    def exported(self, key: str) -> Optional[str]:
        """uwsgi_get_exported_opt: the first entry named `key`'s value."""
        for opt in self.opts:
            if opt.key == key and opt.listed:
                return opt.value
        return None

    def add(
        self, key: str, value: Optional[str], where: str, placeholder_only: bool = False
    ) -> None:
        """add_exported_option_do: through the running if/for block, then onto the list, then
        an immediate option's effect."""
        if not self.logic_running:
            if key in _END_KEYS:
                self.logic = None
            if self.logic is not None:
                func, data = self.logic
                self.logic_running = True
                try:
                    func(self, key, value, data, where)
                finally:
                    self.logic_running = False
                return
        known = key in OPTIONS or key in self.custom
        kind = (
            "language"
            if key in LANGUAGE_KEYS or key in self.custom
            else "option" if known else "placeholder"
        )
        opt = ResolvedOption(key, value, kind, where)
        self.opts.append(opt)
        if placeholder_only:
            if known:
                raise UwsgiConfigError(
                    f"{where}: you cannot use {key} as a placeholder, it is already an option"
                )
            opt.kind = "placeholder"
            opt.configured = True
            return
        if not known:
            if self.strict:
                raise UwsgiConfigError(f"{where}: unknown config directive {key!r} (strict mode)")
            return
        if key in self.custom:
            opt.configured = True
            self.expand_custom(key, value, where)
        elif key in IMMEDIATE:
            opt.configured = True
            opt.value = self.immediate(key, value, where) or value

    def expand_custom(self, key: str, value: Optional[str], where: str) -> None:
        """A declare-option option (core/config.c `uwsgi_opt_custom`): its template's
        `option=value` items, `$1` `$2`... replaced by the value's space-separated words, each
        applied at once as uWSGI does (unlisted, unexpanded, an unknown name ignored)."""
        words = (value or "").split(" ")
        args = [w for w in words if w] if value else [""]
        for item in [i for i in self.custom[key].split(";") if i]:
            name, eq, template = item.partition("=")
            if not eq:
                return
            for index in range(len(words)):
                if index < len(args):
                    name = name.replace(f"${index + 1}", args[index])
                    template = template.replace(f"${index + 1}", args[index])
            if name in self.custom:
                self.expand_custom(name, template, where)
            elif name in OPTIONS:
                kind = "language" if name in LANGUAGE_KEYS else "option"
                self.opts.append(
                    ResolvedOption(name, template, kind, where, configured=True, listed=False)
                )
                if name in IMMEDIATE:
                    self.immediate(name, template, where)
            elif self.strict:
                raise UwsgiConfigError(f"{where}: unknown config directive {name!r} (strict mode)")

    def immediate(self, key: str, value: Optional[str], where: str) -> Optional[str]:
        """The effect of an option uWSGI applies the moment it is met; returns the value uWSGI
        leaves in its list when reading the file changed it (see load)."""
        if key == "strict":
            self.strict = uwsgi_bool(value)
            return None
        if key in LOGIC:
            if self.logic is not None:
                raise UwsgiConfigError(
                    f"{where}: recursive logic in options is not supported (option = {key})"
                )
            self.logic = (LOGIC[key], value or "")
            return None
        if value is None:
            return None
        if key in ("set", "set-placeholder", "set-ph"):
            name, eq, rest = value.partition("=")
            if not eq:
                raise UwsgiConfigError(
                    f"{where}: invalid placeholder/--set value {value!r} (NAME=VALUE)"
                )
            self.add(name, rest, where, placeholder_only=key != "set")
        elif key in _FORMATS:
            return self.load(_FORMATS[key], value, where)
        elif key in ("include", "inherit"):
            return self.load_by_extension(value, where)
        elif key == "inject-before":
            self.inject_before.append(value)
        elif key == "inject-after":
            self.inject_after.append(value)
        elif key in ("ini-paste", "ini-paste-logged"):
            return self.load("ini", value, where)
        elif key == "declare-option":
            name, eq, template = value.partition("=")
            if not eq:
                raise UwsgiConfigError(
                    f"{where}: invalid declare-option {value!r}, must be newoption=template"
                )
            self.custom[name] = template
        elif key == "resolve":
            name, eq, host = value.partition("=")
            if not eq:
                raise UwsgiConfigError(
                    f"{where}: invalid resolve syntax {value!r}, must be placeholder=domain"
                )
            try:
                address = socket.gethostbyname(host)
            except OSError:
                raise UwsgiConfigError(f"{where}: unable to resolve name {host}") from None
            self.add(name, address, where, placeholder_only=True)
        elif key == "config":
            raise UwsgiConfigError(
                f"{where}: {key} is not supported by sluicegate's uWSGI configuration reader"
            )
        return None

    def load_by_extension(self, name: str, where: str) -> Optional[str]:
        """uwsgi_opt_load (include, inherit, a bare argument): the format by the name's ending,
        without setting the upper-case magic variables."""
        kind = None
        for ending, fmt in (
            (".ini", "ini"),
            (".xml", "xml"),
            (".yaml", "yaml"),
            (".yml", "yaml"),
            (".json", "json"),
            (".js", "json"),
        ):
            if name.endswith(ending):
                kind = fmt
                break
        if kind is None:
            raise UwsgiConfigError(
                f"{where}: unable to load configuration from {name}"
                " (not .ini, .xml, .yaml, .yml, .json or .js)"
            )
        first = self.magic_first_round
        self.magic_first_round = True
        try:
            return self.load(kind, name, where)
        finally:
            self.magic_first_round = first

    def _read(self, path: str, where: str) -> str:
        parts = [read_text(p, where) for p in self.inject_before]
        parts.append(read_text(path, where))
        parts.extend(read_text(p, where) for p in self.inject_after)
        return magic_sub("".join(parts), self.magic)

    def load(self, kind: str, name: str, where: str) -> Optional[str]:
        """Read one config file (maybe `file:section`) and add its entries in order. Returns
        the name cut at its `:section` when uWSGI's reader leaves it so (always for XML, for
        YAML when the block ended before the file), else None."""
        if self.depth >= _MAX_DEPTH:
            raise UwsgiConfigError(
                f"{where}: config files include each other more than {_MAX_DEPTH} deep"
            )
        path, section = split_section(name)
        if kind == "ini" and path == "" and section is not None:
            if self.last_ini is None:
                raise UwsgiConfigError(
                    f"{where}: {name}: no ini file read yet to take the section from"
                )
            path = self.last_ini
        elif kind == "ini":
            self.last_ini = path
        before = self.magic_first_round
        self.magic_first_round = fill_magic_table(self.magic, name, self.cwd, before, where)
        first_file = self.magic_first_round and not before
        text = self._read(path, where)
        renamed = None
        if kind == "ini":
            entries: List[Entry] = parse_ini(text, section or "uwsgi")
        elif kind == "yaml":
            entries, cut = parse_yaml(text, section or "uwsgi")
            renamed = path if cut and section is not None else None
        elif kind == "json":
            entries = parse_json(text, section or "uwsgi", path)
        else:
            if section == "":
                raise UwsgiConfigError(f"{where}: {name}: invalid xml id")
            entries = parse_xml(text, section, path)
            renamed = path if section is not None else None
        self.depth += 1
        try:
            for key, value, line in entries:
                self.add(key, value, f"{path}:{line}" if line else path)
        finally:
            self.depth -= 1
        if first_file and renamed is None:
            # %O shares the first file's name string, whole again once the reader is done.
            self.magic["O"] = name
        return renamed

    def apply_pass(self, symbol: str, hook: Callable[[str, str], Optional[str]]) -> None:
        """uwsgi_apply_config_pass: expand `<symbol>(key)` in every value not consumed by an
        immediate option, scanning as uWSGI's loop does (nested parentheses kept in the key; an
        unknown key left as written; after a replacement the scan restarts at index 1)."""
        for opt in self.opts:
            if opt.value is None or opt.configured:
                continue
            value = opt.value
            has, depth, start = 0, 0, 0
            j = 0
            while j < len(value):
                char = value[j]
                if char == symbol:
                    has = 1
                elif char == "(" and has == 1:
                    has, depth, start = 2, 0, j + 1
                elif has > 1:
                    if char == "(":
                        has += 1
                        depth += 1
                    elif char == ")":
                        if depth > 0:
                            has += 1
                            depth -= 1
                        elif has <= 2:
                            has = 0
                        else:
                            found = hook(value[start : start + has - 2], opt.where)
                            if found is not None:
                                value = value[: start - 2] + found + value[start + has - 1 :]
                                opt.value = value
                                j = 0
                            has = 0
                    else:
                        has += 1
                else:
                    has = 0
                j += 1

    def read_at_file(self, name: str, where: str) -> str:
        """`@(file)`: the file's content, one trailing newline or CR dropped."""
        text = read_text(name, where)
        return text[:-1] if text[-1:] in ("\n", "\r") else text

    def placeholder(self, key: str, where: str) -> Optional[str]:
        """uwsgi_manage_placeholder: `%(name)` is the first entry named `name`; with spaces it
        is uWSGI's little pipeline (concatenation, + - * / on 64-bit integers, ++ and --)."""
        if " " not in key:
            return self.exported(key)
        current: Optional[str] = None
        state = "concat"
        for token in key.split():
            if token in ("+", "-", "*", "/"):
                state = token
                continue
            if token in ("++", "--"):
                if current is not None:
                    current = str(_strtoll(current) + (1 if token == "++" else -1))
                state = "concat"
                continue
            value = token if re.fullmatch("[0-9]+", token) else (self.exported(token) or "")
            if state == "concat":
                current = (current or "") + value
            else:
                left, right = _strtoll(current or ""), _strtoll(value)
                if state == "+":
                    current = str(left + right)
                elif state == "-":
                    current = str(left - right)
                elif state == "*":
                    current = str(left * right)
                else:
                    current = str(0 if right == 0 else _c_div(left, right))
            state = "concat"
        return current

    def configure(self) -> None:
        """uwsgi_configure: every entry not yet applied, in order; `inherit` files are read now
        (their entries added after the passes), and `strict` refuses unknown keys."""
        index = 0
        while index < len(self.opts):
            opt = self.opts[index]
            index += 1
            if opt.configured:
                continue
            if opt.key not in OPTIONS:
                if self.strict:
                    raise UwsgiConfigError(
                        f"{opt.where}: unknown config directive {opt.key!r} (strict mode)"
                    )
                continue
            opt.configured = True
            if opt.key == "inherit" and opt.value is not None:
                self.load_by_extension(opt.value, opt.where)
                index = 0


def _c_div(left: int, right: int) -> int:
    """C's integer division (truncating toward zero)."""
    quotient = abs(left) // abs(right)
    return quotient if (left < 0) == (right < 0) else -quotient


def _strtoll(text: str) -> int:
    match = re.match(r"\s*([+-]?\d+)", text)
    return int(match.group(1)) if match else 0


def resolve_detailed(
    argv: Sequence[str], environ: Mapping[str, str], binary_path: Optional[str] = None
) -> List[ResolvedOption]:
    """Every entry of uWSGI's option list, in order, with its kind and origin (see the module
    doc for the steps). Raises UwsgiConfigError where uWSGI would stop."""
    res = _Resolver(
        environ,
        binary_path or os.path.realpath(sys.argv[0] if sys.argv and sys.argv[0] else "uwsgi"),
    )
    for name, value in environ.items():
        entry = f"{name}={value}"
        if name.startswith("UWSGI_") and not entry.startswith(_ENV_RESERVED):
            key = name[len("UWSGI_") :].lower().replace("_", "-")
            res.add(key, value, f"environment variable {name}")
    options, files = parse_command_line(argv)
    for key, value in options:
        res.add(key, value, "command line")
    for name in files:
        if not name.startswith("["):
            res.load_by_extension(name, "command line")
    res.apply_pass("$", lambda key, where: res.environ.get(key))
    res.apply_pass("@", res.read_at_file)
    res.apply_pass("%", res.placeholder)
    res.configure()
    return res.opts


def resolve_all(
    argv: Sequence[str], environ: Mapping[str, str], binary_path: Optional[str] = None
) -> List[Tuple[str, Optional[str]]]:
    """The list `uwsgi --show-config` prints: every key, placeholders and language keys
    included, a switch without a value as None (uWSGI prints it as `true`)."""
    return [
        (opt.key, opt.value) for opt in resolve_detailed(argv, environ, binary_path) if opt.listed
    ]


def resolve(
    argv: Sequence[str], environ: Mapping[str, str], binary_path: Optional[str] = None
) -> List[Tuple[str, str]]:
    """The ordered (long option name, value) pairs uWSGI would apply: every uWSGI option met,
    repeated keys repeated, placeholders and magic variables expanded, if/for blocks applied; a
    switch given without a value is "1", an empty ini value stays "" (both true for
    uwsgi_bool). Placeholders (keys that are not uWSGI options, and set-placeholder's) and the
    LANGUAGE_KEYS are left out: resolve_detailed() has them."""
    return [
        (opt.key, "1" if opt.value is None else opt.value)
        for opt in resolve_detailed(argv, environ, binary_path)
        if opt.kind == "option"
    ]


def show_config(pairs: Sequence[Tuple[str, Optional[str]]]) -> str:
    """resolve_all's list as `uwsgi --show-config` prints it (core/uwsgi.c `show_config`)."""
    lines = ["", ";uWSGI instance configuration", "[uwsgi]"]
    lines.extend(f"{key} = {'true' if value is None else value}" for key, value in pairs)
    lines.extend([";end of configuration", "", ""])
    return "\n".join(lines)


if __name__ == "__main__":
    # `python -m sluicegate.uwsgi_config ARGS...`: what uWSGI would resolve from ARGS and the
    # environment, printed as `uwsgi --show-config` prints it.
    try:
        sys.stdout.write(show_config(resolve_all(sys.argv[1:], os.environ)))
    except UwsgiConfigError as err:
        sys.exit(f"sluicegate-uwsgi: error: {err}")

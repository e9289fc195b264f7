"""validated.py, generated from the options table: `source(OPTIONS)` is the text of the module
that holds `Config`, one field per row in the table's order and with its type, and `write`
puts it in place (`python -m sluicegate.options --write-config-class`; `--config-class`
prints it). `mismatch` says how a `Config` class differs from the table (resolution.py
refuses to import on any difference, and tests/test_options_contract.py checks the file is
what `source` makes).

Why a generated file rather than a class made from the table at import time: type checkers
and editors then see every field and its type (a class made by dataclasses.make_dataclass is
Any to them), and a reader finds the record's fields in one short file; the table stays the
one place an option is declared, as the file is never edited by hand.
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, List, Optional, Sequence, Set, Tuple

from . import records


#: The generated module, beside this one.
TARGET = os.path.join(os.path.dirname(__file__), "validated.py")

HEADER = '''"""`Config`: the validated options as one frozen record, the value resolution.py gives and the
rest of the front and the core's config read: one field per row of the options table
(options.py), in its order and with its type.

Generated from the table by `python -m sluicegate.options --write-config-class`
(config_class.py): do not edit; change the table's row and run that. Written out so that type
checkers and editors see every field; resolution.py fails to import, and
tests/test_options_contract.py fails, when this file and the table differ.
"""

from __future__ import annotations

'''

CLASS_HEAD = '''

@records.record(frozen=True)
class Config:
    """The validated options, one field per entry of OPTIONS, in its order and with its type."""

'''


#: How a module of the front imports typing's names: for annotations only (validated.py too).
TYPE_CHECKING_LINE = ("TYPE_CHECKING = False  # typing's names for annotations only "
                      "(tests/test_front_imports.py)")

#: The classes of this package an option's type may name, and the modules that hold them.
CLASSES = {"BindAddress": ".listeners", "Hooks": ".hook_types", "StaticMount": ".static_mount"}


def spell(t: str) -> str:
    """A field's annotation as written in the file (`Optional[str]`, `Tuple[BindAddress, ...]`):
    the row's type, which is written so (option_row.py)."""
    return t


def _imports(options: Sequence[Any]) -> List[str]:
    """validated.py's imports: the names of `typing` and the classes the types name (a name
    neither is, nor a builtin, is a table error)."""
    import builtins
    import typing

    names: Set[str] = set()
    classes: Set[str] = set()
    for o in options:
        for word in re.findall(r"[A-Za-z_]\w*", o.type):
            if word in CLASSES:
                classes.add(word)
            elif hasattr(typing, word) and not hasattr(builtins, word):
                names.add(word)
            elif not hasattr(builtins, word):  # pragma: no cover - a table error
                raise ValueError(f"option {o.name}: type {o.type!r} names {word!r}, which is "
                                 "neither typing's nor in config_class.CLASSES")
    lines = [TYPE_CHECKING_LINE, "if TYPE_CHECKING:",
             f"    from typing import {', '.join(sorted(names))}", ""] if names else []
    lines.append("from . import records")
    for name in sorted(classes, key=lambda c: (CLASSES[c], c)):
        lines.append(f"from {CLASSES[name]} import {name}")
    return lines


def fields(options: Sequence[Any]) -> str:
    """Config's field lines, as they are written."""
    return "".join(f"    {o.name}: {spell(o.type)}\n" for o in options)


def core_fields(options: Sequence[Any]) -> Tuple[str, ...]:
    """The options the core's config takes under their own names (`core=True`), in order."""
    return tuple(o.name for o in options if o.core)


def core_lines(options: Sequence[Any]) -> str:
    """validated.py's CORE_FIELDS: config.py reads it, so that a process holding a Config
    builds the core's config without the table."""
    names = "".join(f"    {name!r},\n" for name in core_fields(options))
    return ("\n\n#: The fields the core's config takes under their own names (core=True in the "
            "table;\n#: config.py).\nCORE_FIELDS = (\n" + names + ")\n")


def source(options: Sequence[Any]) -> str:
    """The whole text of validated.py for the table `options`."""
    return HEADER + "".join(f"{line}\n" for line in _imports(options)) + CLASS_HEAD + \
        fields(options) + core_lines(options)


def write(options: Sequence[Any]) -> None:
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(source(options))


def mismatch(options: Sequence[Any], config: type) -> Optional[str]:
    """None when `config`'s fields are exactly the table's (names, order, types as this module
    writes them), else what differs. The annotations are compared as written, not evaluated
    (`typing.get_type_hints` compiled each of them: 0.2 MB of resident memory in the master,
    and in every worker forked from it, for a check made at each start)."""
    have = [(f.name, f.type) for f in records.fields(config)]
    table = [(o.name, spell(o.type)) for o in options]
    core = getattr(sys.modules[config.__module__], "CORE_FIELDS", None)
    if have == table and core == core_fields(options):
        return None
    return (f"Config fields {have} differ from OPTIONS {table}: run "
            "`python -m sluicegate.options --write-config-class` (validated.py is generated)")

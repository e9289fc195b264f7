"""The shape of one row of the options table (options.py): `Option`, the name, parser, default,
help and spellings of one option, and what is derived from its name alone (its flag, its
environment variable `SLUICEGATE_<NAME>`, its default as shown in --help and the docs).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, List, Optional, Tuple

from . import records

ENV_PREFIX = "SLUICEGATE_"


@records.record(frozen=True)
class Option:
    """One option, declared once. `name` is the Python identifier (the Config field, the
    serve() keyword, the core's config key); the flag and the env var are derived from it."""

    name: str
    parse: Callable[[object], Any]
    #: The default as a user would write it (shown in --help and the docs); None = off.
    default: Any
    help: str
    metavar: str
    #: The type of the validated value, as the Config field's annotation is written
    #: (`"Optional[int]"`, `"Tuple[BindAddress, ...]"`; config_class.py). Text, not typing's
    #: objects: the table is read in the master, and typing would then be in every process.
    type: str
    short: Optional[str] = None
    #: Other spellings on the command line: gunicorn's flags (`-w`, `--keep-alive`, ...), so that
    #: a gunicorn command line works by changing only the program's name.
    aliases: Tuple[str, ...] = ()
    #: Given several times on the command line; comma-separated in the environment.
    repeatable: bool = False
    positional: bool = False
    #: A switch: given without a value on the command line (true/false in the environment).
    switch: bool = False
    #: Passed unchanged to `_core.Server`'s config under the same key.
    core: bool = False

    @property
    def flag(self) -> str:
        return self.metavar if self.positional else "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def flags(self) -> List[str]:
        return [self.flag] + ([self.short] if self.short else []) + list(self.aliases)


    @property
    def shown_default(self) -> str:
        """The default as --help and docs/options.md show it."""
        if self.default is None:
            return "off"
        if isinstance(self.default, list):
            return ", ".join(self.default)
        return repr(self.default) if self.default == "" else str(self.default)


"""`StaticMount`: one --static mount (URL prefix, directory and its settings), the value
parsers/http.py's `parse_static` gives and the core takes as a dict (config.py).

A module of its own, below the parsers: the validated `Config` (validated.py) names the class,
and a process that receives a validated Config (uwsgi_cli.py) builds it without the parsers.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

from . import records


@records.record(frozen=True)
class StaticMount:
    """One `--static` mount: URL prefix, directory, and its per-mount settings."""

    prefix: str
    directory: str
    max_age: Optional[int] = None
    immutable: bool = False
    index: Optional[str] = "index.html"
    dotfiles: bool = False
    follow_symlinks: bool = False
    fallthrough: bool = False

    def to_core(self) -> Dict[str, Any]:
        return records.asdict(self)

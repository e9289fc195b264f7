"""The process `sluicegate-uwsgi` resolves its configuration in (`python -m
sluicegate.uwsgi_resolve FD ARGS...`, started by uwsgi_cli.resolve_apart): uWSGI's resolution
of ARGS and the validation, written to descriptor FD in `marshal`'s format, then it exits.
Apart from uwsgi_cli.py so that the master, which imports that module, does not carry this
half: only the resolving process runs it.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

    from .resolution import Raw

from . import records, syspath
from .errors import SluicegateError
from .uwsgi_cli import RECORDS, RECORD, config_from, given_from, resolved


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`FD ARGS...`: the resolution of ARGS on descriptor FD (`write_resolution`)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or not args[0].isdigit():
        print("usage: python -m sluicegate.uwsgi_resolve FD [uWSGI's options]", file=sys.stderr)
        return 2
    return write_resolution(int(args[0]), args[1:])


def write_resolution(fd: int, args: List[str]) -> int:
    """The result on `fd` in `marshal`'s format (`("ok", pairs, given, reexec, fields,
    options_text)` or `("error", message, exit status)`), which holds literals only (str, int,
    tuples, lists, dicts ...: an object of any other class, a subclass of str too, cannot be
    written); nothing if it has other values (the caller resolves then). marshal rather than
    `repr` and `ast.literal_eval`: ast would stay imported in the master, and in every worker
    forked from it (about 0.5 MB of resident memory each). `options_text` is `uwsgi.opt`'s
    environment variable (uwsgi_module.options_text), written here so that the master needs no
    json for it."""
    syspath.at_start()
    try:
        from .uwsgi_module import options_text

        pairs = resolved(args, os.environ)
        first = given_from(pairs)
        out: Tuple[Any, ...] = ("ok", pairs, {k: (r.value, r.source) for k, r in
                                                first.given.items()}, first.reexec,
                                None if first.reexec else fields_of(first.given),
                                options_text(pairs))
    except SluicegateError as e:
        out = ("error", str(e), e.exit_code)
    try:
        data = marshal.dumps(out)
        if marshal.loads(data) != out:
            data = b""
    except (ValueError, MemoryError, RecursionError):
        data = b""
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return 0


def fields_of(given: Dict[str, Raw]) -> Optional[Dict[str, Any]]:
    """In the resolving process: the options validated (resolution.py), as plain values that
    `marshal` writes and `config_from` makes the same Config of again; None when the start is
    --print-config or --check-config (cli.run does those), when a --config file is named (a
    gunicorn config file is Python, run where it was run before: in the master), or a value
    is not plain data."""
    from .options import BY_NAME
    from .resolution import raw_values, validate

    if "config" in given or os.environ.get(BY_NAME["config"].env):
        return None
    cfg = validate(raw_values(given))
    if cfg.print_config or cfg.check_config:
        return None
    try:
        fields = {f.name: _plain(getattr(cfg, f.name)) for f in records.fields(cfg)}
        if config_from(marshal.loads(marshal.dumps(fields))) != cfg:
            return None
    except (TypeError, ValueError):
        return None
    return fields


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if type(value).__name__ in RECORDS and isinstance(value, RECORDS[type(value).__name__]):
        return (RECORD, type(value).__name__,
                {f.name: _plain(getattr(value, f.name)) for f in records.fields(value)})
    if value is None or type(value) in (str, int, float, bool, bytes):
        return value
    raise TypeError(f"{type(value).__name__} is not sent")  # a Hooks record, a callable ...


if __name__ == "__main__":
    sys.exit(main())

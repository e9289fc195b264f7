"""docs/options.md, generated from the options table: `markdown` is given the table (options.py
passes it down, being the floor above, and runs this as `python -m sluicegate.options
--markdown > docs/options.md`), and adds gunicorn's other flags from gunicorn_settings.py.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Sequence

from . import gunicorn_settings


def markdown(options: Sequence[Any], env_prefix: str) -> str:
    """The text of docs/options.md, generated from the table's rows, `options`."""
    lines = [
        "# sluicegate options",
        "",
        "<!-- Generated from python/sluicegate/options.py by",
        "     `python -m sluicegate.options --markdown > docs/options.md`; do not edit by hand. -->",
        "",
        "Usage: `sluicegate [OPTIONS] [MODULE:APP]`, `python -m sluicegate [OPTIONS] [MODULE:APP]`,",
        "or `sluicegate.serve(app, **options)` from Python.",
        "",
        "Each option is set, from strongest to weakest, on the command line (or as a keyword of",
        f"`serve()`), in its environment variable `{env_prefix}<NAME>`, in the `--config` TOML file",
        "(keys are the `serve()` names), or by its default. Byte",
        "sizes take the suffixes `k`, `M` and `G` (powers of 1024: `64k` = 65536). A bad value",
        "stops sluicegate with one line naming the option (exit status 2).",
        "",
        "| Option | Environment variable | `serve()` keyword | Default |",
        "| --- | --- | --- | --- |",
    ]
    for o in options:
        flag = ", ".join(f"`{f}`" for f in o.flags) + ("" if o.positional or not o.metavar else f" {o.metavar}")
        lines.append(f"| {flag} | `{o.env}` | `{o.name}` | {_md_default(o)} |")
    lines.append("| `--version` | | | |")
    lines.append("")
    for o in options:
        title = ", ".join(f"`{f}`" for f in o.flags)
        lines += [f"## {title}" + ("" if o.positional or not o.metavar else f" {o.metavar}"), "", o.help, ""]
        lines.append(f"- Default: {_md_default(o)}")
        env_note = " (comma-separated list)" if o.repeatable else ""
        lines.append(f"- Environment: `{o.env}`{env_note}")
        if o.repeatable:
            lines.append(f"- `serve()`: `{o.name}=` a string or a list of strings")
        else:
            lines.append(f"- `serve()`: `{o.name}=`")
        if o.repeatable:
            lines.append("- Repeatable")
        lines.append("")
    lines += ["## `--version`", "", "Print sluicegate's version and exit.", ""]
    lines += gunicorn_settings.markdown()
    return "\n".join(lines)


def _md_default(o: Any) -> str:
    if o.default is None:
        return "off"
    if o.default == "":
        return "empty"
    return f"`{o.shown_default}`"

"""One declaration per option: everything that names the options is generated from the table in
options.py or checked against it here, so that adding a core option is one table entry plus the
code that uses it, and any drift fails a test naming the file to regenerate or fix.

  - `Config` (validated.py): generated from the table for type checkers
    (`python -m sluicegate.options --write-config-class`, config_class.py), checked field by
    field (names, order, types) when resolution.py is imported and below;
  - `ServerConfig` in _core.pyi: generated (`python -m sluicegate.config --write-stub`);
  - `core_config()`: gives exactly ServerConfig's keys;
  - src/config.rs: `Config::from_dict` reads exactly ServerConfig's keys (its source, parsed
    with a regex: no Rust build needed; plus the Python objects taken from the dict elsewhere in
    src/, `config.get_item(..)`), a mount's keys are StaticMount's fields, and its
    struct's field comments name the option behind each core key;
  - docs/options.md: generated (`python -m sluicegate.options --markdown`), checked in
    test_options.py;
  - every flag on the command line, gunicorn's aliases included, is unique and in --help;
  - the names of the options of a few values (allowed_values.txt): what their parsers take,
    and what src/config.rs compiles in and reads them through.
No server, no sockets, no core.
"""

from __future__ import annotations

import ast
import re
import sys
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from sluicegate import command_line, config, config_class, options, records  # noqa: E402
from sluicegate.options import OPTIONS  # noqa: E402
from sluicegate.parsers import StaticMount  # noqa: E402
from sluicegate.resolution import resolve  # noqa: E402
from sluicegate.validated import Config  # noqa: E402

STUB = ROOT / "python" / "sluicegate" / "_core.pyi"
RUST_CONFIG = ROOT / "src" / "config.rs"

#: `get(d, "key")`, `secs(d, "key")`, `one_of(d, "key", ..)`, `get::<String>(d, "key")`,
#: `d.get_item("key")`.
RUST_KEY = re.compile(
    r'(?:\b(?:get|secs|one_of)(?:::<[^>]*>)?\(\s*d\s*,\s*|\bd\s*\.get_item\(\s*)"(\w+)"')
RUST_MOUNT_KEY = re.compile(r'\bget(?:::<[^>]*>)?\(\s*m\s*,\s*"(\w+)"')
#: Keys kept as Python objects are taken from the dict where they are used
#: (`config.get_item("errors")` in the server's constructor).
RUST_OBJECT_KEY = re.compile(r'\bconfig\s*\.get_item\(\s*"(\w+)"')


def stub_keys() -> typing.List[str]:
    tree = ast.parse(STUB.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerConfig")
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)]


def rust_source() -> str:
    if not RUST_CONFIG.exists():
        pytest.fail("src/config.rs is gone: point this test at the Rust config's new home")
    return RUST_CONFIG.read_text()


def test_config_class_is_the_table():
    assert options.config_matches_options() is None
    hints = typing.get_type_hints(Config, localns=vars(typing))  # typing: annotations only
    namespace = {**vars(typing), **vars(sys.modules[Config.__module__])}
    assert [(f.name, hints[f.name]) for f in records.fields(Config)] == \
        [(o.name, eval(o.type, namespace)) for o in OPTIONS]
    source = (ROOT / "python" / "sluicegate" / "validated.py").read_text()
    assert options.config_class_fields() in source, "--config-class prints what Config says"


def test_validated_py_is_generated_from_the_table():
    """validated.py is config_class.source(OPTIONS), whole: its imports and fields included."""
    text = (ROOT / "python" / "sluicegate" / "validated.py").read_text()
    assert text == config_class.source(OPTIONS), (
        "validated.py is stale: run `PYTHONPATH=python python -m sluicegate.options "
        "--write-config-class`")


def test_a_new_row_is_a_new_config_field():
    """A row added to the table makes its field in the generated class, of its type, and the
    class as it was is then refused (resolution.py's import-time check)."""
    row = records.replace(OPTIONS[0], name="new_setting", type="Optional[int]")
    table = OPTIONS + (row,)
    assert "\n    new_setting: Optional[int]\n" in config_class.source(table)
    assert config_class.mismatch(table, Config) is not None
    assert config_class.mismatch(OPTIONS, Config) is None


def test_stub_server_config_is_generated_from_the_table():
    text = STUB.read_text()
    assert config.stub_with_server_config(text) == text, (
        "_core.pyi's ServerConfig is stale: run `PYTHONPATH=python python -m sluicegate.config "
        "--write-stub`"
    )
    assert stub_keys() == [key for key, _, _ in config.core_keys()]
    assert {o.name for o in OPTIONS if o.core} <= set(stub_keys())


def test_core_config_gives_exactly_the_stub_keys():
    cfg = resolve({}, env={})
    given = config.core_config(cfg, threads=(1, 4), access_log_fd=-1, errors=sys.stderr,
                               signal_fd=-1)
    assert list(given) == stub_keys()


def test_rust_reads_exactly_the_stub_keys():
    source = rust_source()
    rust = set(RUST_KEY.findall(source))
    assert len(rust) > 10, "src/config.rs no longer reads its keys with get(d, ..): update RUST_KEY"
    for path in (ROOT / "src").rglob("*.rs"):
        rust |= set(RUST_OBJECT_KEY.findall(path.read_text()))
    stub = set(stub_keys())
    assert not rust - stub, f"src/config.rs reads keys the front never gives: {sorted(rust - stub)}"
    assert not stub - rust, f"keys given to the core that src/config.rs never reads: {sorted(stub - rust)}"


def test_rust_mount_keys_are_static_mount_fields():
    rust = set(RUST_MOUNT_KEY.findall(rust_source()))
    assert rust == {f.name for f in records.fields(StaticMount)}


def test_rust_config_struct_names_the_option_behind_each_core_key():
    """Each core option's flag (or a `--limit-*` style prefix of it) appears in the doc comments
    of src/config.rs's `struct Config`, where a reader of the Rust side looks for it."""
    source = rust_source()
    m = re.search(r"pub struct Config\s*\{(.*?)\n\}", source, re.S)
    assert m, "no `pub struct Config { ... }` in src/config.rs"
    docs = "\n".join(re.findall(r"///(.*)", m.group(1)))
    wildcards = [w[:-1] for w in re.findall(r"--[a-z-]+-\*", docs)]
    missing = [
        o.flag for o in OPTIONS if o.core
        and o.flag not in docs and not any(o.flag.startswith(w) for w in wildcards)
    ]
    assert not missing, f"src/config.rs's Config does not say which field holds {missing}"


def test_every_flag_is_unique_and_well_formed():
    flags = [f for o in OPTIONS if not o.positional for f in o.flags]
    assert len(flags) == len(set(flags)), [f for f in flags if flags.count(f) > 1]
    for f in flags:
        # gunicorn's own spelling, kept as it is so that its start lines work unchanged.
        if f == "--limit-request-field_size":
            continue
        assert re.fullmatch(r"-[a-zA-Z]|--[a-z][a-z0-9-]+", f), f
    text = command_line.build_parser("0").format_help()
    for f in flags:
        assert f in text


def test_gunicorn_settings_map_onto_options():
    from sluicegate import gunicorn_config, gunicorn_settings

    for s in gunicorn_settings.SETTINGS:
        if s.answer == gunicorn_settings.DONE:
            assert s.option in options.BY_NAME, s.name
        else:
            assert s.option is None and s.text, s.name
    assert not set(gunicorn_config.HOOKS) & set(gunicorn_settings.BY_NAME)




#: Options of a few names that only the Python front reads (the master's --on-term).
FRONT_ONLY = {"on_term"}


def test_the_options_of_a_few_names_take_exactly_those_of_allowed_values_txt():
    """allowed_values.txt is the one list of each such option's names: its parser takes each
    name as it is and refuses any other, and its default is one of them."""
    from sluicegate.allowed_values import ALLOWED

    assert set(ALLOWED) == {"scheduler", "spin", "pace", "start_gate", "http2", "http3", "cert_reqs", "tls_min_version",
                            "forwarded_headers", "access_log_format", "http3_congestion"} | FRONT_ONLY
    for name, values in ALLOWED.items():
        o = options.BY_NAME[name]
        assert o.core != (name in FRONT_ONLY), \
            f"{name}: the core maps these names, so the option goes to the core"
        assert o.parse(o.default) in values, name
        for value in values:
            assert o.parse(value) == value, (name, value)
        with pytest.raises(ValueError):
            o.parse("no-such-name")


def test_rust_reads_the_names_from_allowed_values_txt():
    """src/config.rs compiles the same file in, and each such option's names are read through
    it (`one_of(d, "option", ..)` or `allowed_values("option")`), never spelled again in a
    match arm."""
    from sluicegate.allowed_values import ALLOWED, PATH

    assert f'include_str!("../python/sluicegate/{Path(PATH).name}")' in rust_source()
    sources = [path.read_text() for path in (ROOT / "src").rglob("*.rs")]
    for name in set(ALLOWED) - FRONT_ONLY:
        reads = re.compile(rf'\b(?:one_of\(\s*d\s*,\s*|allowed_values\(\s*)"{name}"')
        readers = [source for source in sources if reads.search(source)]
        assert readers, f"no src/ file reads {name}'s names from allowed_values.txt"
        for value in ALLOWED[name]:  # no `"value" => Variant` arm spelling a name again
            for source in readers:
                assert not re.search(rf'"{re.escape(value)}"\s*=>', source), (name, value)

"""Unit tests of the options table (python/sluicegate/options.py) and what is derived from it:
value parsing, precedence (command line > environment > default), validation errors, the config
handed to the Rust core, and docs/options.md being in sync. No server, no sockets, no core."""

from __future__ import annotations

import ast
import typing
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from sluicegate import command_line, records  # noqa: E402
from sluicegate.config import core_config  # noqa: E402
from sluicegate.errors import OptionError  # noqa: E402
from sluicegate.listeners import BindAddress  # noqa: E402
from sluicegate.command_line import from_command_line  # noqa: E402
from sluicegate.options import OPTIONS  # noqa: E402
from sluicegate.parsers import parse_size, parse_threads  # noqa: E402
from sluicegate.resolution import raw_values, resolve, validate  # noqa: E402
from sluicegate.validated import Config  # noqa: E402


def cli(*argv: str, env=None):
    """Both phases for a command line, with an explicit environment (never the real one)."""
    return validate(raw_values(from_command_line(argv), env or {}))


# --- defaults


def test_defaults():
    cfg = resolve({}, env={})
    assert cfg.app == "sluicegate.demo:app"
    assert cfg.bind == (BindAddress("tcp", "127.0.0.1", 8000),)
    assert cfg.threads is None  # auto: chosen once the app is loaded (thread_bounds.py)
    assert cfg.backlog == 2048
    assert (cfg.header_timeout, cfg.keepalive_timeout, cfg.read_timeout) == (10.0, 75.0, 30.0)
    assert (cfg.write_timeout, cfg.graceful_timeout) == (30.0, 30.0)
    assert cfg.limit_request_line == 8192
    assert cfg.limit_header_bytes == 65536
    assert cfg.limit_headers == 100
    assert cfg.limit_body == 1073741824
    assert cfg.max_drain == 65536
    assert cfg.root_path == ""
    assert cfg.access_log is None
    assert cfg.log_level == "info"
    assert cfg.server_header == "sluicegate"
    assert cfg.chdir is None


def test_every_default_parses_and_every_option_has_help():
    for o in OPTIONS:
        assert o.help and (o.metavar or o.switch), o.name
        assert o.name.isidentifier() and o.name == o.name.lower()
    resolve({}, env={})  # raises if a default does not pass its own parser


def test_config_is_frozen_and_has_one_field_per_option():
    cfg = resolve({}, env={})
    assert [f.name for f in records.fields(Config)] == [o.name for o in OPTIONS]
    with pytest.raises(records.FrozenInstanceError):
        cfg.threads = (1, 2)


def test_config_class_types_are_the_tables():
    """Config is written out (so type checkers see its fields); the table stays the source:
    every field's type must be its option's."""
    from sluicegate.options import config_matches_options

    assert config_matches_options() is None
    hints = typing.get_type_hints(Config, localns=vars(typing))  # typing: annotations only
    namespace = {**vars(typing), **vars(sys.modules[Config.__module__])}
    assert all(hints[o.name] == eval(o.type, namespace) for o in OPTIONS)


# --- value parsers


@pytest.mark.parametrize("text, expected", [
    ("0", 0), ("65536", 65536), ("64k", 65536), ("64K", 65536), ("16M", 16 * 1024**2),
    ("16m", 16 * 1024**2), ("1G", 1024**3), (" 12 ", 12), (4096, 4096),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "k", "1.5k", "-1", "1T", "64 kb", "0x10", True, 2.5])
def test_bad_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("text, expected", [
    ("4:64", (4, 64)), ("0:1", (0, 1)), ("8", (1, 8)), ("1", (1, 1)), ("16:16", (16, 16)),
    (8, (1, 8)), ((2, 3), (2, 3)), ([0, 5], (0, 5)), ("auto", None), ("AUTO", None), (None, None),
])
def test_threads(text, expected):
    assert parse_threads(text) == expected


@pytest.mark.parametrize("text, reason", [
    ("5:2", "MIN (5) is larger than MAX (2)"),
    ("0", "MAX must be at least 1"),
    ("0:0", "MAX must be at least 1"),
    ("-1:4", "MIN must be 0 or more"),
    ("a:b", "expected MIN:MAX"),
    ("1:2:3", "expected MIN:MAX"),
    ("", "expected MIN:MAX"),
    ((1, 2, 3), "expected (MIN, MAX)"),
])
def test_bad_threads(text, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        parse_threads(text)


@pytest.mark.parametrize("text, expected", [
    ("127.0.0.1:0", BindAddress("tcp", "127.0.0.1", 0)),
    ("0.0.0.0:65535", BindAddress("tcp", "0.0.0.0", 65535)),
    ("localhost:8000", BindAddress("tcp", "localhost", 8000)),
    ("[::1]:8000", BindAddress("tcp", "::1", 8000)),
    ("[::]:0", BindAddress("tcp", "::", 0)),
    ("unix:/run/app.sock", BindAddress("unix", "/run/app.sock")),
    ("unix:rel.sock", BindAddress("unix", "rel.sock")),
])
def test_binds(text, expected):
    cfg = cli("--bind", text)
    assert cfg.bind == (expected,)
    assert str(expected) == text


@pytest.mark.parametrize("text, reason", [
    ("nope", "no port given"),
    ("::1:80", "put an IPv6 address in brackets: [::1]:80"),
    (":http", "no host given"),  # ":80" is gunicorn's every-interface form (test_gunicorn_compat.py)
    ("8000", "did you mean 127.0.0.1:8000 (this machine only) or :8000 (every interface)?"),
    ("host:70000", "from 0 to 65535"),
    ("host:", "from 0 to 65535"),
    ("host:http", "from 0 to 65535"),
    ("unix:", "needs a path"),
    ("[::1]80", "IPv6 address looks like"),
])
def test_bad_binds(text, reason):
    with pytest.raises(OptionError) as e:
        cli("--bind", text)
    assert str(e.value).startswith(f"--bind {text!r}: ")
    assert reason in str(e.value)


def test_bind_repeated_and_duplicates():
    cfg = cli("-b", "127.0.0.1:0", "--bind", "[::1]:0", "-b", "unix:/tmp/x.sock")
    assert [b.kind for b in cfg.bind] == ["tcp", "tcp", "unix"]
    with pytest.raises(OptionError, match="given twice"):
        cli("-b", "127.0.0.1:80", "-b", "127.0.0.1:80")
    # Regression (be4349f): port 0 twice was refused as "given twice"; it is two free ports.
    assert len(cli("-b", "127.0.0.1:0", "-b", "127.0.0.1:0").bind) == 2


@pytest.mark.parametrize("text, expected", [("10", 10.0), ("2.5", 2.5), ("0.001", 0.001), (5, 5.0)])
def test_timeouts(text, expected):
    assert resolve({"header_timeout": text}, env={}).header_timeout == expected


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "x", "", "1e12", True])
def test_bad_timeouts(text):
    with pytest.raises(OptionError, match="^read_timeout="):
        resolve({"read_timeout": text}, env={})


@pytest.mark.parametrize("path", ["", "/app", "/a/b"])
def test_root_path(path):
    assert cli("--root-path", path).root_path == path


@pytest.mark.parametrize("path", ["app", "/app/", "/", "a/"])
def test_bad_root_path(path):
    with pytest.raises(OptionError, match="^--root-path"):
        cli("--root-path", path)


def test_other_values():
    cfg = cli("--log-level", "DEBUG", "--access-log", "-", "--server-header", "",
              "--limit-headers", "7", "--backlog", "16", "--chdir", str(ROOT), "mod:app")
    assert cfg.log_level == "debug"
    assert cfg.access_log == "-"
    assert cfg.server_header == ""
    assert cfg.limit_headers == 7
    assert cfg.backlog == 16
    assert cfg.chdir == str(ROOT)
    assert cfg.app == "mod:app"
    assert cli("--access-log", "").access_log is None


@pytest.mark.parametrize("argv, prefix", [
    (["--log-level", "verbose"], "--log-level 'verbose': expected one of debug"),
    (["--server-header", "x\r\nSet-Cookie: a=b"], "--server-header"),
    (["--limit-headers", "-1"], "--limit-headers '-1': must be 0 or more"),
    (["--limit-request-line", "-1"], "--limit-request-line '-1': expected a byte count"),
    (["--backlog", "many"], "--backlog 'many': expected a whole number"),
    (["--chdir", "/no/such/dir"], "--chdir '/no/such/dir': no such directory"),
    (["--threads", "5:2"], "--threads '5:2': MIN (5) is larger than MAX (2)"),
])
def test_validation_errors_name_the_option_and_value(argv, prefix):
    with pytest.raises(OptionError) as e:
        cli(*argv)
    message = str(e.value)
    assert message.startswith(prefix)
    assert "\n" not in message
    assert e.value.exit_code == 2


# --- precedence and sources


def test_env_overrides_defaults():
    env = {"SLUICEGATE_THREADS": "2:8", "SLUICEGATE_LIMIT_BODY": "16M",
           "SLUICEGATE_BIND": "127.0.0.1:1,unix:/tmp/a.sock", "SLUICEGATE_APP": "x:y"}
    cfg = cli(env=env)
    assert cfg.threads == (2, 8)
    assert cfg.limit_body == 16 * 1024**2
    assert cfg.bind == (BindAddress("tcp", "127.0.0.1", 1), BindAddress("unix", "/tmp/a.sock"))
    assert cfg.app == "x:y"


def test_cli_overrides_env():
    env = {"SLUICEGATE_THREADS": "2:8", "SLUICEGATE_BIND": "127.0.0.1:1,127.0.0.1:2"}
    cfg = cli("--threads", "3:9", "-b", "127.0.0.1:3", env=env)
    assert cfg.threads == (3, 9)
    assert cfg.bind == (BindAddress("tcp", "127.0.0.1", 3),)


def test_keywords_override_env():
    cfg = resolve({"threads": (4, 64), "bind": "127.0.0.1:0"}, env={"SLUICEGATE_THREADS": "2:8"})
    assert cfg.threads == (4, 64)
    assert cfg.bind == (BindAddress("tcp", "127.0.0.1", 0),)
    cfg = resolve({"bind": ["127.0.0.1:0", "[::1]:0"]}, env={})
    assert len(cfg.bind) == 2


def test_env_error_names_the_variable():
    with pytest.raises(OptionError, match=r"^SLUICEGATE_THREADS='5:2': MIN \(5\) is larger"):
        cli(env={"SLUICEGATE_THREADS": "5:2"})
    with pytest.raises(OptionError, match=r"^SLUICEGATE_BIND='nope': "):
        cli(env={"SLUICEGATE_BIND": "127.0.0.1:0,nope"})


def test_keyword_error_names_the_keyword():
    with pytest.raises(OptionError, match=r"^threads=\(5, 2\): MIN \(5\) is larger"):
        resolve({"threads": (5, 2)}, env={})
    with pytest.raises(ValueError):  # OptionError is a ValueError for serve() callers
        resolve({"limit_body": "lots"}, env={})


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'thread' \(did you mean 'threads'\?\)"):
        resolve({"thread": 4}, env={})


def test_usage_errors_are_one_line_option_errors():
    for argv in (["--bogus"], ["--threads"], ["a:b", "c:d"], ["--thr", "4"]):
        with pytest.raises(OptionError) as e:
            cli(*argv)
        assert "\n" not in str(e.value) and e.value.exit_code == 2


def test_help_lists_every_option_and_env_var():
    text = command_line.build_parser("1.2.3").format_help()
    for o in OPTIONS:
        for flag in o.flags:
            assert flag in text
        assert o.env in text
    assert "--version" in text


# --- derived outputs


def _core_keys_from_contract() -> set:
    """The config keys of _core.pyi's ServerConfig (the contract with Rust)."""
    tree = ast.parse((ROOT / "python" / "sluicegate" / "_core.pyi").read_text())
    server = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerConfig")
    return {n.target.id for n in server.body if isinstance(n, ast.AnnAssign)}


def test_core_config_has_exactly_the_contract_keys():
    cfg = resolve({"threads": "3:7", "root_path": "/app", "server_header": ""}, env={})
    config = core_config(cfg, threads=cfg.threads, access_log_fd=-1, errors=sys.stderr, signal_fd=-1)
    assert set(config) == _core_keys_from_contract()
    assert (config["threads_min"], config["threads_max"]) == (3, 7)
    assert config["root_path"] == "/app" and config["server_header"] == ""
    assert config["url_scheme"] == "http"
    assert isinstance(config["limit_body"], int) and isinstance(config["header_timeout"], float)


def test_docs_options_md_is_in_sync():
    generated = subprocess.run(
        [sys.executable, "-m", "sluicegate.options", "--markdown"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
        capture_output=True, text=True, check=True,
    ).stdout
    committed = (ROOT / "docs" / "options.md").read_text()
    assert committed == generated, (
        "docs/options.md is stale: run "
        "`PYTHONPATH=python python -m sluicegate.options --markdown > docs/options.md`"
    )
    for o in OPTIONS:
        assert o.env in committed and f"`{o.name}`" in committed


def test_limit_defaults_match_the_rust_constants():
    """The Rust core gets every limit from this table, but crates/proto also names defaults
    (for its own tests and fuzzing); the two must not drift apart."""
    path = ROOT / "crates" / "proto" / "src" / "limits.rs"
    source = path.read_text() if path.exists() else ""
    rust = dict(re.findall(r"pub const DEFAULT_MAX_(\w+): \w+ = ([0-9 *<()]+);", source))
    names = {"REQUEST_LINE": "limit_request_line", "HEADER_BYTES": "limit_header_bytes",
             "HEADERS": "limit_headers", "BODY": "limit_body"}
    if not set(names) <= set(rust):
        pytest.skip("crates/proto/src/limits.rs no longer names these defaults")
    cfg = resolve({}, env={})
    for rust_name, option in names.items():
        # The expressions are integer arithmetic such as `8 * 1024` or `1 << 30`.
        value = eval(compile(ast.parse(rust[rust_name], mode="eval"), "limits.rs", "eval"), {"__builtins__": {}})
        assert getattr(cfg, option) == value, f"--{option.replace('_', '-')} vs DEFAULT_MAX_{rust_name}"

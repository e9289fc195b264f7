"""uwsgi_config: uWSGI 2.0's configuration language, construct by construct.

Each test writes a small configuration and checks what `resolve` (the options uWSGI would
apply) gives for it. tests/test_uwsgi_differential.py checks the same resolution against real
uWSGI on the corpus; these tests pin each construct's meaning and the errors' wording without
needing uWSGI installed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from sluicegate.errors import OptionError
from sluicegate.uwsgi_config import (
    LANGUAGE_KEYS,
    UwsgiConfigError,
    resolve,
    resolve_all,
    resolve_detailed,
    uwsgi_bool,
)
from sluicegate.uwsgi_option_table import OPTIONS, SHORT_OPTIONS


def ini(tmp_path: Path, text: str, name: str = "app.ini") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run(argv: List[str], env: Optional[Dict[str, str]] = None) -> List[Tuple[str, str]]:
    return resolve(argv, env or {})


def test_uwsgi_bool() -> None:
    """Only false/off/no (any case) and 0 are false; the empty value and anything else true."""
    for value in ("", "1", "true", "True", "yes", "on", "whatever", None):
        assert uwsgi_bool(value) is True, value
    for value in ("false", "FALSE", "off", "Off", "no", "NO", "0"):
        assert uwsgi_bool(value) is False, value


def test_long_options_switches_and_short_letters() -> None:
    """`--name value`, `--name=value`, a switch without a value ("1"), and uWSGI's own short
    letters (core/uwsgi.c's table, not gunicorn's)."""
    argv = [
        "-s", "/tmp/a.sock", "-w", "tests.apps.hello:app", "-p", "4", "-b", "32768", "-M", "-T",
        "-H", "/venv", "-C666", "-L", "-t", "30", "-R", "1000", "-l", "128", "-z", "10",
        "-d", "/tmp/log", "-i", "--threads=2", "--vacuum", "--harakiri", "60",
    ]  # fmt: skip
    assert run(argv) == [
        ("socket", "/tmp/a.sock"), ("module", "tests.apps.hello:app"), ("processes", "4"),
        ("buffer-size", "32768"), ("master", "1"), ("enable-threads", "1"), ("home", "/venv"),
        ("chmod-socket", "666"), ("disable-logging", "1"), ("harakiri", "30"),
        ("max-requests", "1000"), ("listen", "128"), ("socket-timeout", "10"),
        ("daemonize", "/tmp/log"), ("single-interpreter", "1"), ("threads", "2"),
        ("vacuum", "1"), ("harakiri", "60"),
    ]  # fmt: skip


def test_short_letters_come_from_uwsgis_table() -> None:
    """A few letters that mean something else on sluicegate's own command line."""
    assert SHORT_OPTIONS["w"] == "module" and SHORT_OPTIONS["p"] == "processes"
    assert SHORT_OPTIONS["b"] == "buffer-size" and SHORT_OPTIONS["s"] == "socket"
    assert SHORT_OPTIONS["i"] == "single-interpreter" and SHORT_OPTIONS["x"] == "xmlconfig"
    assert OPTIONS["ini"].immediate and not OPTIONS["socket"].immediate
    assert OPTIONS["chmod-socket"].arg == "optional" and OPTIONS["master"].arg == "none"


def test_prefixes_clusters_and_bare_files(tmp_path: Path) -> None:
    """Unique prefixes of long names, clustered switches, options after a bare config file
    (read after every option, as getopt_long permutes), `--` ending the options."""
    path = ini(tmp_path, "[uwsgi]\nprocesses = 2\n")
    assert run([path, "--proces", "3", "-MT"]) == [
        ("processes", "3"), ("master", "1"), ("enable-threads", "1"), ("processes", "2"),
    ]  # fmt: skip
    with pytest.raises(UwsgiConfigError, match="ambiguous"):
        run(["--pro", "3"])
    with pytest.raises(UwsgiConfigError, match="unrecognized option '--no-such'"):
        run(["--no-such"])
    with pytest.raises(UwsgiConfigError, match="requires an argument"):
        run(["--socket"])
    with pytest.raises(UwsgiConfigError, match="doesn't allow an argument"):
        run(["--master=1"])


def test_environment_variables() -> None:
    """UWSGI_PROCESSES=4 is processes = 4 (lower case, `_` -> `-`), before the command line;
    UWSGI_RELOADS is uWSGI's own."""
    env = {"UWSGI_PROCESSES": "4", "UWSGI_CHMOD_SOCKET": "660", "UWSGI_RELOADS": "2", "OTHER": "x"}
    assert run(["-p", "2"], env) == [
        ("processes", "4"),
        ("chmod-socket", "660"),
        ("processes", "2"),
    ]


def test_ini_sections_comments_and_repeated_keys(tmp_path: Path) -> None:
    """[uwsgi] by default, `file:section`, whole-line comments only, repeated keys repeated,
    an empty value kept as "", a key without `=`."""
    path = ini(
        tmp_path,
        "# comment\n; comment\n[other]\nprocesses = 9\n[uwsgi]\n"
        "socket = /tmp/x.sock # not a comment\n  ; indented comment\n"
        "static-map = /a=/srv/a\nstatic-map = /b=/srv/b\nmaster =\nvacuum\n[other2]\nthreads = 1\n",
    )
    assert run(["--ini", path]) == [
        ("socket", "/tmp/x.sock # not a comment"), ("static-map", "/a=/srv/a"),
        ("static-map", "/b=/srv/b"), ("master", ""), ("vacuum", ""),
    ]  # fmt: skip
    assert run(["--ini", path + ":other"]) == [("processes", "9")]


def test_ini_colon_section_and_include(tmp_path: Path) -> None:
    """`ini = :section` reads another section of the last ini file read (after an include of
    an ini file, that file's); `include` reads a file by its extension at that point."""
    ini(tmp_path, "[uwsgi]\nharakiri = 20\n[common]\nthreads = 4\n", "base.ini")
    path = ini(
        tmp_path,
        "[uwsgi]\nini = :common\ninclude = %dbase.ini\nini = :common\nprocesses = 2\n[common]\nmaster = true\n",
    )
    assert run(["--ini", path]) == [
        ("master", "true"),
        ("harakiri", "20"),
        ("threads", "4"),
        ("processes", "2"),
    ]


def test_placeholders_and_magic_variables(tmp_path: Path) -> None:
    """%(name) (the first definition), $(ENV), @(file), %d %n %p %s %e %c %k %%, arithmetic,
    unknown placeholders kept as written, unknown magic letters empty."""
    (tmp_path / "secret.txt").write_text("s3cr3t\n")
    path = ini(
        tmp_path,
        "[uwsgi]\nproject = site\nproject = other\nbase = /srv/%(project)\nchdir = %(base)\n"
        "socket = $(RUN_DIR)/%n.sock\nenv = SECRET=@(%dsecret.txt)\nenv = P=%p S=%s E=%e C=%c\n"
        "processes = %(%k * 2)\nthreads = %(project)%(nope)\nlog-format = 100%% %(addr) %q.\n",
    )
    cpus = os.sysconf("SC_NPROCESSORS_ONLN")
    assert run(["--ini", path], {"RUN_DIR": "/run/app"}) == [
        ("chdir", "/srv/site"), ("socket", "/run/app/app.sock"), ("env", "SECRET=s3cr3t"),
        ("env", f"P={path} S=app.ini E=ini C={tmp_path.name}"), ("processes", str(cpus * 2)),
        ("threads", "site%(nope)"), ("log-format", "100% %(addr) ."),
    ]  # fmt: skip


def test_placeholder_arithmetic(tmp_path: Path) -> None:
    """uWSGI's `%(a op b)` pipeline: + - * / on integers (C division), ++, --, concatenation."""
    path = ini(
        tmp_path,
        "[uwsgi]\nn = 7\nm = -2\nprocesses = %(n + 3)\nthreads = %(n * m)\npost-buffering = %(n / m)\n"
        "harakiri = %(n ++)\nmax-requests = %(n --)\nbuffer-size = %(n n)\nsocket-timeout = %(n / 0)\n",
    )
    assert run(["--ini", path]) == [
        ("processes", "10"), ("threads", "-14"), ("post-buffering", "-3"), ("harakiri", "8"),
        ("max-requests", "6"), ("buffer-size", "77"), ("socket-timeout", "0"),
    ]  # fmt: skip


def test_if_blocks(tmp_path: Path) -> None:
    """if-env (with `VAR=value`), if-not-env, if-exists, if-not-exists, if-file, if-not-file,
    if-dir, endif; %(_) is the variable's value or the path."""
    (tmp_path / "static").mkdir()
    path = ini(
        tmp_path,
        "[uwsgi]\nif-env = VIRTUAL_ENV\nvirtualenv = %(_)\nendif =\n"
        "if-env = MODE=dev\npy-autoreload = 1\nendif =\nif-env = MODE=prod\nprocesses = 8\nendif =\n"
        "if-not-env = WORKERS\nprocesses = 2\nendif =\nif-not-env = VIRTUAL_ENV\nhome = /never\nendif =\n"
        "if-exists = %dstatic\nstatic-map = /static=%(_)\nendif =\nif-not-exists = %dnope\nmaster = true\nendif =\n"
        "if-file = %dapp.ini\ntouch-reload = %(_)\nendif =\nif-not-file = %dstatic\nvacuum = true\nendif =\n"
        "if-dir = %dstatic\ncheck-static = %(_)\nendif\nif-dir = %dapp.ini\nthreads = 9\nendif\n",
    )
    assert run(["--ini", path], {"VIRTUAL_ENV": "/venv", "MODE": "dev"}) == [
        ("virtualenv", "/venv"), ("py-autoreload", "1"), ("processes", "2"),
        ("static-map", f"/static={tmp_path}/static"), ("master", "true"),
        ("touch-reload", path), ("vacuum", "true"), ("check-static", f"{tmp_path}/static"),
    ]  # fmt: skip


def test_for_blocks(tmp_path: Path) -> None:
    """for (space-separated items) and for-times, closed by endfor."""
    path = ini(
        tmp_path,
        "[uwsgi]\nfor = a b\nstatic-map = /%(_)=/srv/%(_)\nendfor =\nfor-times = 2\nenv = N%(_)=1\nendfor =\n",
    )
    assert run(["--ini", path]) == [
        ("static-map", "/a=/srv/a"), ("static-map", "/b=/srv/b"), ("env", "N1=1"), ("env", "N2=1"),
    ]  # fmt: skip


def test_set_placeholder_and_strict(tmp_path: Path) -> None:
    """Unknown keys are placeholders (left out of resolve, in resolve_detailed); strict refuses
    them wherever they are, but not set-placeholder's; `set` sets an option."""
    path = ini(
        tmp_path,
        "[uwsgi]\nroot = /srv\nset-ph = name=site\nset = processes=3\nchdir = %(root)/%(name)\n",
    )
    assert run(["--ini", path]) == [("processes", "3"), ("chdir", "/srv/site")]
    kinds = [(opt.key, opt.kind) for opt in resolve_detailed(["--ini", path], {})]
    assert kinds == [
        ("ini", "language"), ("root", "placeholder"), ("set-ph", "language"), ("name", "placeholder"),
        ("set", "language"), ("processes", "option"), ("chdir", "option"),
    ]  # fmt: skip
    strict_ok = ini(
        tmp_path,
        "[uwsgi]\nstrict = true\nset-placeholder = name=site\nchdir = /srv/%(name)\n",
        "ok.ini",
    )
    assert run(["--ini", strict_ok]) == [("chdir", "/srv/site")]
    strict_bad = ini(tmp_path, "[uwsgi]\nroot = /srv\nchdir = %(root)\nstrict = true\n", "bad.ini")
    with pytest.raises(
        UwsgiConfigError, match=r"bad.ini:2: unknown config directive 'root' \(strict mode\)"
    ):
        run(["--ini", strict_bad])


def test_yaml_json_xml(tmp_path: Path) -> None:
    """uWSGI's line-based YAML reader, JSON (true "1", arrays repeated) and XML (empty
    elements "1"), each by option and as a bare argument by extension."""
    (tmp_path / "a.yaml").write_text(
        "uwsgi:\n  socket: /tmp/y.sock  # comment\n  master: true\nother:\n  processes: 9\n"
    )
    (tmp_path / "a.json").write_text(
        '{"uwsgi": {"master": true, "processes": 2, "env": ["A=1", "B=2"]}}'
    )
    (tmp_path / "a.xml").write_text("<uwsgi><socket>/tmp/x.sock</socket><master/></uwsgi>")
    assert run(["--yaml", str(tmp_path / "a.yaml")]) == [
        ("socket", "/tmp/y.sock"),
        ("master", "true"),
    ]
    assert run(["-j", str(tmp_path / "a.json")]) == [
        ("master", "1"),
        ("processes", "2"),
        ("env", "A=1"),
        ("env", "B=2"),
    ]
    assert run([str(tmp_path / "a.xml")]) == [("socket", "/tmp/x.sock"), ("master", "1")]
    assert run(["-y", str(tmp_path / "a.yaml") + ":other"]) == [("processes", "9")]


def test_resolve_all_keeps_everything_as_show_config_does(tmp_path: Path) -> None:
    """resolve_all: the language keys and placeholders too, a value-less switch as None."""
    path = ini(tmp_path, "[uwsgi]\nname = x\nif-env = NOPE\nmaster = true\nendif =\n")
    assert resolve_all(["--ini", path, "--vacuum"], {}) == [
        ("ini", path), ("name", "x"), ("if-env", "NOPE"), ("endif", ""), ("vacuum", None),
    ]  # fmt: skip
    assert "ini" in LANGUAGE_KEYS and "endif" in LANGUAGE_KEYS


@pytest.mark.parametrize(
    "text,message",
    [
        ("[uwsgi]\ninclude = %dmissing.ini\n", "app.ini:2: cannot read"),
        ("[uwsgi]\nenv = A=@(%dmissing.txt)\n", "app.ini:2: cannot read"),
        ("[uwsgi]\nstrict = true\nmyvar = 1\n", "app.ini:3: unknown config directive 'myvar'"),
        ("[uwsgi]\ninclude = %dapp.cfg\n", "app.ini:2: unable to load configuration from"),
        ("[uwsgi]\nset-ph = master=1\n", "app.ini:2: you cannot use master as a placeholder"),
        ("[uwsgi]\nif-not-env = A\nif-env = B\nendif\n", "app.ini:3: recursive logic"),
        ("[uwsgi]\n\nset = novalue\n", "app.ini:3: invalid placeholder/--set value"),
        ("[uwsgi]\ninclude = %dapp.ini\n", "include each other more than"),
    ],
)
def test_errors_are_one_line_with_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    """What uWSGI refuses raises UwsgiConfigError (an OptionError: exit status 2) whose text is
    one line naming the file, the line and why."""
    path = ini(tmp_path, text)
    with pytest.raises(UwsgiConfigError) as info:
        run(["--ini", path])
    assert isinstance(info.value, OptionError) and info.value.exit_code == 2
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_bad_json_and_xml_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"uwsgi": {"master": tru}}')
    (tmp_path / "bad.xml").write_text("<uwsgi><master></uwsgi>")
    (tmp_path / "none.json").write_text('{"other": {}}')
    for name, why in (
        ("bad.json", "bad.json:1: error parsing JSON"),
        ("bad.xml", "bad.xml:1: could not parse"),
        ("none.json", "object named uwsgi"),
    ):
        with pytest.raises(UwsgiConfigError, match=why):
            run([str(tmp_path / name)])


def test_options_of_plugins_a_pip_build_lacks(tmp_path: Path) -> None:
    """An option of a plugin the pip build does not embed (asyncio, rack ...) is an option, not a
    placeholder, so the entry point can answer it; strict accepts it; on the command line it is
    known by its exact name, not by a prefix."""
    path = ini(tmp_path, "[uwsgi]\nstrict = true\nasyncio = 100\ngreenlet =\n")
    assert run(["--ini", path]) == [("asyncio", "100"), ("greenlet", "")]
    assert OPTIONS["asyncio"].other_plugin and not OPTIONS["gevent"].other_plugin
    assert run(["--asyncio", "10"]) == [("asyncio", "10")]
    with pytest.raises(UwsgiConfigError, match="unrecognized option '--asynci'"):
        run(["--asynci", "10"])


def test_declare_option(tmp_path: Path) -> None:
    """A declare-option option applies its template's options with $1, $2 ... replaced by its
    words (a custom option may use another)."""
    path = ini(
        tmp_path,
        "[uwsgi]\ndeclare-option = site=socket=/tmp/$1.sock;chdir=/srv/$1;env=SITE=$1-$2\n"
        "declare-option = two=site=$1 x\nsite = blog news\ntwo = shop\nprocesses = 2\n",
    )
    assert run(["--ini", path]) == [
        ("socket", "/tmp/blog.sock"), ("chdir", "/srv/blog"), ("env", "SITE=blog-news"),
        ("socket", "/tmp/shop.sock"), ("chdir", "/srv/shop"), ("env", "SITE=shop-x"), ("processes", "2"),
    ]  # fmt: skip


def test_resolve_sets_a_placeholder_from_dns(tmp_path: Path) -> None:
    """`resolve = name=host` puts the host's IPv4 address in a placeholder."""
    path = ini(tmp_path, "[uwsgi]\nresolve = backend=localhost\nsocket = %(backend):3031\n")
    assert run(["--ini", path]) == [("socket", "127.0.0.1:3031")]

"""sluicegate's reading of uWSGI configurations against real uWSGI's, file by file.

For every configuration of tests/corpus/uwsgi/ (and a few more command lines and environments),
`uwsgi_config.resolve_all` must give exactly the option list real uWSGI 2.0 resolves, in the
same order: the uWSGI installed from PyPI by requirements-dev.txt is run on the same arguments,
environment and working directory with `--show-config`, which prints uWSGI's whole option list
(`key = value` lines between `;uWSGI instance configuration` and `;end of configuration`) once
every file, placeholder and magic variable is resolved.

How uWSGI is made to print and stop without serving: three options are appended to its command
line, `--show-config --logto /dev/stderr --exec-pre-jail false`. `--logto /dev/stderr` keeps the
print on stderr even when the configuration sends uWSGI's log to a file (uWSGI opens the log
before printing; the last `logto` wins); `--exec-pre-jail false` runs `false` as the first
"pre-jail" command, which comes right after the print and before any socket, worker or app, and
uWSGI exits 1 on its failure. (None of the corpus uses `daemonize` or a master-process logger,
which would take the print elsewhere.)

Normalised, and only this: the three appended options are removed from uWSGI's list (one
occurrence each, by exact key and value), and a switch given without a value, which uWSGI prints
as `true`, is None in resolve_all. uWSGI adds no entries of its own to the list.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

from sluicegate.uwsgi_config import resolve_all

CORPUS = Path(__file__).parent / "corpus" / "uwsgi"
UWSGI = shutil.which("uwsgi", path=os.path.dirname(sys.executable)) or shutil.which("uwsgi")
APPENDED = [("show-config", "true"), ("logto", "/dev/stderr"), ("exec-pre-jail", "false")]
_SHOWN = re.compile(r";uWSGI instance configuration\n\[uwsgi\]\n(.*?);end of configuration\n", re.S)

# `log-date` prefixes uWSGI's log lines with the date: not part of the print.
_LOG_DATE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4} - ", re.M)

pytestmark = pytest.mark.skipif(UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)")


def real_uwsgi(argv: Sequence[str], env: Dict[str, str], cwd: Path) -> List[Tuple[str, str]]:
    """What real uWSGI resolves for this command line, environment and directory."""
    extra = ["--show-config", "--logto", "/dev/stderr", "--exec-pre-jail", "false"]
    done = subprocess.run(
        [str(UWSGI), *argv, *extra], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    match = _SHOWN.search(_LOG_DATE.sub("", done.stderr))
    assert match, f"uwsgi printed no configuration (exit {done.returncode}):\n{done.stderr[-3000:]}"
    pairs = [tuple(line.split(" = ", 1)) for line in match.group(1).splitlines()]
    for appended in APPENDED:
        pairs.remove(appended)
    return pairs  # type: ignore[return-value]


def ours(argv: Sequence[str], env: Dict[str, str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> List[Tuple[str, str]]:
    monkeypatch.chdir(cwd)
    return [(key, "true" if value is None else value) for key, value in resolve_all(argv, env)]


def base_env(tmp_path: Path, **extra: str) -> Dict[str, str]:
    """A clean environment (no stray UWSGI_* variables), with the corpus' variables."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "SGTEST_DIR": str(tmp_path)}
    env.update(extra)
    return env


def check(argv: Sequence[str], env: Dict[str, str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = real_uwsgi(argv, env, cwd)
    got = ours(argv, env, cwd, monkeypatch)
    assert got == expected, "\n".join(
        f"{'  ' if a == b else '!!'} ours {a!r:70} uwsgi {b!r}"
        for a, b in zip(got + [None] * len(expected), expected + [None] * len(got))  # type: ignore[operator]
        if a is not None or b is not None
    )


def _file_cases() -> List[Tuple[str, List[str], Dict[str, str]]]:
    cases: List[Tuple[str, List[str], Dict[str, str]]] = []
    for path in sorted(CORPUS.iterdir()):
        option = {".ini": "--ini", ".yaml": "--yaml", ".yml": "--yaml", ".json": "--json", ".xml": "--xml"}.get(path.suffix)
        if option:
            cases.append((path.name, [option, str(path)], {}))
    return cases


PAAS = {"SGTEST_HOST": "127.0.0.1", "SGTEST_PORT": "0", "SGTEST_WORKERS": "3"}
CASES = _file_cases() + [
    ("env_and_files.ini+env", ["--ini", str(CORPUS / "env_and_files.ini")], PAAS),
    ("if_env.ini+env", ["--ini", str(CORPUS / "if_env.ini")], {"SGTEST_PROCESSES": "5", "SGTEST_MODE": "debug", "VIRTUAL_ENV": "/opt/venv"}),
    ("if_env.ini+other-mode", ["--ini", str(CORPUS / "if_env.ini")], {"SGTEST_MODE": "release"}),
    ("sections.ini:production", ["--ini", str(CORPUS / "sections.ini") + ":production"], {}),
    ("multi.yml:staging", ["--yaml", str(CORPUS / "multi.yml") + ":staging"], {}),
    ("multi.yml:production by -y", ["-y", str(CORPUS / "multi.yml") + ":production"], {}),
    ("bare ini argument", [str(CORPUS / "django_nginx.ini")], {}),
    ("bare xml and yaml arguments", [str(CORPUS / "app.xml"), "--master", str(CORPUS / "app.yaml")], {}),
    ("-x and -j", ["-x", str(CORPUS / "app.xml"), "-j", str(CORPUS / "app.json")], {}),
    ("ini then overrides", ["--ini", str(CORPUS / "django_nginx.ini"), "-p", "8", "--set", "harakiri=5", "--max-requests=9", "-MT"], {}),
    ("prefixes and clusters", ["--proces", "3", "--chmod-sock=600", "-Ls", "/tmp/x.sock", "-C", "-b8192", "--vacuum", str(CORPUS / "app.json")], {}),
    ("placeholders on the command line", ["--set-ph", "port=9000", "--http-socket", ":%(port)", "--env", "HOME_DIR=$(HOME)", "-w", "tests.apps.hello:app"], {}),
]


@pytest.mark.parametrize("name,argv,extra", CASES, ids=[case[0] for case in CASES])
def test_corpus_file(name: str, argv: List[str], extra: Dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each corpus configuration (and command line) resolves to uWSGI's own option list."""
    check(argv, base_env(tmp_path, **extra), CORPUS.parent.parent.parent, monkeypatch)


def test_relative_paths_from_the_config_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A config named relative to the working directory: %p, %d, %o, %O as uWSGI makes them."""
    check(["--ini", "placeholders.ini", "--ini", "sections.ini:production", "multi.yml"], base_env(tmp_path), CORPUS, monkeypatch)


def _args_file(name: str) -> List[str]:
    text = (CORPUS / name).read_text()
    line = next(l for l in text.splitlines() if l.strip() and not l.startswith("#"))
    return shlex.split(line.replace("{corpus}", str(CORPUS)))


def _env_file(name: str) -> Dict[str, str]:
    pairs = {}
    for line in (CORPUS / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key] = value.replace("{corpus}", str(CORPUS))
    return pairs


def test_command_line_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cmdline.args: short options, attached values, clustered switches, no config file."""
    check(_args_file("cmdline.args"), base_env(tmp_path), CORPUS.parent.parent.parent, monkeypatch)


@pytest.mark.parametrize("name", ["environ.env", "env_ini.env"])
def test_environment_only(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """UWSGI_* variables alone (and UWSGI_INI naming the file), no argument at all."""
    check([], base_env(tmp_path, **_env_file(name)), CORPUS.parent.parent.parent, monkeypatch)


def test_environment_then_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's options come first, the command line's after them."""
    env = base_env(tmp_path, UWSGI_PROCESSES="4", UWSGI_MASTER="", UWSGI_ENABLE_THREADS="1")
    check(["--ini", str(CORPUS / "flask_wsgi_file.ini"), "-p", "2"], env, CORPUS.parent.parent.parent, monkeypatch)


def test_the_language_corner_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Placeholders resolved in uWSGI's order (first definition wins, unknown ones kept as
    written), nested `%(a %(b))`, `%%`, unknown magic letters, `@(file)` newline handling, an
    immediate option's value left unexpanded, arithmetic, a missing section, comments."""
    (tmp_path / "value.txt").write_text("from-file\n")
    config = tmp_path / "corner.ini"
    config.write_text(
        "[other]\nprocesses = 99\n[uwsgi]\n"
        "a = one\na = two\nb = %(a)-%(missing)-$(NOPE)-$(SGTEST_DIR)\n"
        "n = 7\nsum = %(n + 3)\nprod = %(n * n)\nneg = %(n - 10)\ndiv = %(n / 2)\ninc = %(n ++)\ncat = %(a n)\n"
        "pct = 100%% done %z%Q\nfile = @(%dvalue.txt)\n"
        "listen = %(n)\nenv = A=%(a)\n  # indented comment\n; semicolon\nmaster\n"
        "weird key = spaced value  \n\tprocesses=3\t\n"
    )
    check(["--ini", str(config)], base_env(tmp_path), tmp_path, monkeypatch)

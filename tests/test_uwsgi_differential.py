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

from sluicegate.uwsgi_config import UwsgiConfigError, resolve_all

CORPUS = Path(__file__).parent / "corpus" / "uwsgi"
UWSGI = shutil.which("uwsgi", path=os.path.dirname(sys.executable)) or shutil.which("uwsgi")
APPENDED = [("show-config", "true"), ("logto", "/dev/stderr"), ("exec-pre-jail", "false")]
_SHOWN = re.compile(r";uWSGI instance configuration\n\[uwsgi\]\n(.*?);end of configuration\n", re.S)

# `log-date` prefixes uWSGI's log lines with the date: not part of the print.
_LOG_DATE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4} - ", re.M)

pytestmark = pytest.mark.skipif(
    UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)"
)


def real_uwsgi(argv: Sequence[str], env: Dict[str, str], cwd: Path) -> List[Tuple[str, str]]:
    """What real uWSGI resolves for this command line, environment and directory."""
    extra = ["--show-config", "--logto", "/dev/stderr", "--exec-pre-jail", "false"]
    done = subprocess.run(
        [str(UWSGI), *argv, *extra],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    match = _SHOWN.search(_LOG_DATE.sub("", done.stderr))
    assert match, f"uwsgi printed no configuration (exit {done.returncode}):\n{done.stderr[-3000:]}"
    pairs = [tuple(line.split(" = ", 1)) for line in match.group(1).splitlines()]
    for appended in APPENDED:
        pairs.remove(appended)
    return pairs  # type: ignore[return-value]


def ours(
    argv: Sequence[str], env: Dict[str, str], cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> List[Tuple[str, str]]:
    monkeypatch.chdir(cwd)
    return [(key, "true" if value is None else value) for key, value in resolve_all(argv, env)]


def base_env(tmp_path: Path, **extra: str) -> Dict[str, str]:
    """A clean environment (no stray UWSGI_* variables), with the corpus' variables."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "SGTEST_DIR": str(tmp_path),
        "SGTEST_PORT": "18081",
        "SGTEST_PORT2": "18082",
    }
    env.update(extra)
    return env


def check(
    argv: Sequence[str], env: Dict[str, str], cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
        option = {
            ".ini": "--ini",
            ".yaml": "--yaml",
            ".yml": "--yaml",
            ".json": "--json",
            ".xml": "--xml",
        }.get(path.suffix)
        if option:
            cases.append((path.name, [option, str(path)], {}))
    return cases


PAAS = {"SGTEST_WORKERS": "3"}
CASES = _file_cases() + [
    ("env_and_files.ini+env", ["--ini", str(CORPUS / "env_and_files.ini")], PAAS),
    (
        "if_env.ini+env",
        ["--ini", str(CORPUS / "if_env.ini")],
        {"SGTEST_PROCESSES": "5", "SGTEST_MODE": "debug", "VIRTUAL_ENV": "/opt/venv"},
    ),
    ("if_env.ini+other-mode", ["--ini", str(CORPUS / "if_env.ini")], {"SGTEST_MODE": "release"}),
    ("sections.ini:production", ["--ini", str(CORPUS / "sections.ini") + ":production"], {}),
    ("multi.yml:staging", ["--yaml", str(CORPUS / "multi.yml") + ":staging"], {}),
    ("multi.yml:production by -y", ["-y", str(CORPUS / "multi.yml") + ":production"], {}),
    ("bare ini argument", [str(CORPUS / "django_nginx.ini")], {}),
    (
        "bare xml and yaml arguments",
        [str(CORPUS / "app.xml"), "--master", str(CORPUS / "app.yaml")],
        {},
    ),
    ("-x and -j", ["-x", str(CORPUS / "app.xml"), "-j", str(CORPUS / "app.json")], {}),
    (
        "ini then overrides",
        [
            "--ini",
            str(CORPUS / "django_nginx.ini"),
            "-p",
            "8",
            "--set",
            "harakiri=5",
            "--max-requests=9",
            "-MT",
        ],
        {},
    ),
    (
        "prefixes and clusters",
        [
            "--proces",
            "3",
            "--chmod-sock=600",
            "-Ls",
            "/tmp/x.sock",
            "-C",
            "-b8192",
            "--vacuum",
            str(CORPUS / "app.json"),
        ],
        {},
    ),
    (
        "placeholders on the command line",
        [
            "--set-ph",
            "port=9000",
            "--http-socket",
            ":%(port)",
            "--env",
            "HOME_DIR=$(HOME)",
            "-w",
            "tests.apps.hello:app",
        ],
        {},
    ),
]


@pytest.mark.parametrize("name,argv,extra", CASES, ids=[case[0] for case in CASES])
def test_corpus_file(
    name: str,
    argv: List[str],
    extra: Dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each corpus configuration (and command line) resolves to uWSGI's own option list."""
    check(argv, base_env(tmp_path, **extra), CORPUS.parent.parent.parent, monkeypatch)


def test_relative_paths_from_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config named relative to the working directory: %p, %d, %o, %O as uWSGI makes them."""
    check(
        ["--ini", "placeholders.ini", "--ini", "sections.ini:production", "multi.yml"],
        base_env(tmp_path),
        CORPUS,
        monkeypatch,
    )


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
    check(
        ["--ini", str(CORPUS / "flask_wsgi_file.ini"), "-p", "2"],
        env,
        CORPUS.parent.parent.parent,
        monkeypatch,
    )


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


def test_magic_variables_of_included_and_bare_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """%p %s %d %c %e %n %x %j %i %0..%9 per file, and the upper-case copies (%O %D %N ...) set
    by the first file read through an option, not through include or a bare argument."""
    sub = tmp_path / "etc" / "site"
    sub.mkdir(parents=True)
    magic = "p=%p s=%s d=%d c=%c e=%e n=%n x=%x o=%o j=%j i=%i 0=%0 1=%1 2=%2 9=%9 O=%O D=%D N=%N X=%X C=%C J=%J"
    (sub / "inc.ini").write_text(f"[uwsgi]\ninc = {magic}\n[extra]\nextra = {magic}\n")
    (sub / "main.ini").write_text(
        f"[uwsgi]\ninclude = %dinc.ini\nmain = {magic}\nini = %dinc.ini:extra\n"
    )
    (sub / "bare.ini").write_text(f"[uwsgi]\nbare = {magic}\n")
    env = base_env(tmp_path)
    check(["etc/site/bare.ini", "--ini", "etc/site/main.ini"], env, tmp_path, monkeypatch)
    check(["etc/site/bare.ini"], env, tmp_path, monkeypatch)


def test_logic_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """if-opt, if-not-env without the variable, if-exists/if-not-exists/if-dir/if-not-dir,
    for-glob (directories marked with /, no match kept), for-readline, for-times, a block opened
    in an included file and closed in the including one, set = option=value, and %(_)
    everywhere in the value. (A block left open around an `include` line crashes uWSGI 2.0.31
    itself, so it is not compared.)"""
    (tmp_path / "static").mkdir()
    (tmp_path / "a.css").write_text("")
    (tmp_path / "sites.txt").write_text("one.example\r\ntwo.example\n")
    (tmp_path / "tail.ini").write_text("[uwsgi]\nprocesses = 9\nif-env = SGTEST_DIR\nthreads = 3\n")
    (tmp_path / "logic.ini").write_text(
        "[uwsgi]\nmaster = true\nif-opt = master\nenv = MASTER=%(_)\nendif =\n"
        "if-opt = master=false\nenv = NEVER=1\nendif =\nif-not-opt = workers\nworkers = 2\nendif =\n"
        "if-not-env = SGTEST_ABSENT\nenv = ABSENT=%(_)\nendif =\nif-env = SGTEST_DIR\nenv = D=%(_)/%(_)\nendif =\n"
        "if-exists = %da.css\nstatic-map = /a.css=%(_)\nendif =\nif-not-exists = %dnone\nenv = NONE=%(_)\nendif =\n"
        "if-dir = %dstatic\nstatic-map = /s=%(_)\nendif =\nif-not-dir = %da.css\nenv = NOTDIR=%(_)\nendif =\n"
        "for-glob = %d*.css\nstatic-map = /g=%(_)\nendfor =\nfor-glob = %d*.nothing\nenv = G=%(_)\nendfor =\n"
        "for-glob = %dstat*\nenv = GD=%(_)\nendfor =\n"
        "for-readline = %dsites.txt\nroute-host = ^%(_)$ log:%(_)\nendfor =\nfor-times = 3\nenv = T%(_)=%(_)\nendfor =\n"
        "set = harakiri=12\nset-ph = ph=value\nenv = PH=%(ph)\n"
        "include = %dtail.ini\nenv = AFTER=%(_)\nendif =\nenv = LAST=%(_)\n"
    )
    check(["--ini", str(tmp_path / "logic.ini")], base_env(tmp_path), tmp_path, monkeypatch)


def test_inherit_and_sections_of_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """inherit (read after the placeholder passes, its values left unexpanded) and `ini = :x`
    taking the section from the last ini file read, not the one being read."""
    (tmp_path / "base.ini").write_text("[uwsgi]\nharakiri = %(h)\n[x]\nfrom = base-x\n")
    (tmp_path / "other.ini").write_text("[uwsgi]\nother = 1\n[x]\nfrom = other-x\n")
    (tmp_path / "main.ini").write_text(
        "[uwsgi]\nh = 30\ninherit = %dbase.ini\nini = %dother.ini\nini = :x\nprocesses = %(h)\n[x]\nfrom = main-x\n"
    )
    check(["--ini", str(tmp_path / "main.ini")], base_env(tmp_path), tmp_path, monkeypatch)


def test_json_xml_yaml_details(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON's false/null/numbers/arrays/nested objects, XML's id selection, empty elements,
    verbatim text, CDATA (eval) and <app mountpoint>, YAML's quotes, tabs, comments and list end."""
    (tmp_path / "c.json").write_text(
        '{"other": {"x": 1}, "uwsgi": {"a": false, "b": null, "c": 12, "d": 1.5, "e": [1, "two", true, [3], {"f": 1}],'
        ' "g": {"h": 1}, "i": "", "j": "%(a)"}}'
    )
    (tmp_path / "c.xml").write_text(
        '<all><uwsgi id="one"><socket>:1</socket></uwsgi><uwsgi id="two"><socket> :2 </socket><master/>'
        '<![CDATA[print(1)]]><app mountpoint="/m">tests/apps/hello.py</app><env>A=&amp;b</env></uwsgi></all>'
    )
    (tmp_path / "c.yml").write_text(
        "# top\nuwsgi:\n  socket: ':3'   # quoted\n\tprocesses: 2\n  env: A=B # c\n  master: true\n"
        "  - item\n  threads: 4\n"
    )
    env = base_env(tmp_path)
    check(["--json", str(tmp_path / "c.json")], env, tmp_path, monkeypatch)
    check(
        ["--xml", str(tmp_path / "c.xml") + ":two", "--yaml", str(tmp_path / "c.yml")],
        env,
        tmp_path,
        monkeypatch,
    )


def test_reserved_environment_and_command_line_switches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """UWSGI_RELOADS and UWSGI_ORIGINAL_PROC_NAME are not options; `--chmod-socket` and `-C`
    without a value; `--name=` with an empty value; values starting with a dash."""
    env = base_env(
        tmp_path,
        UWSGI_RELOADS="3",
        UWSGI_ORIGINAL_PROC_NAME="x",
        UWSGI_HTTP_SOCKET=":9",
        UWSGI_ENV="A=b=c",
    )
    check(
        ["--chmod-socket", "-C", "--env=", "--env", "-x=1", "--mount", "-5"],
        env,
        tmp_path,
        monkeypatch,
    )


def refused_by_uwsgi(argv: Sequence[str], env: Dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [str(UWSGI), *argv, "--exec-pre-jail", "false"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert ";uWSGI instance configuration" not in done.stderr and done.returncode == 1, done.stderr[
        -2000:
    ]
    return done.stderr


@pytest.mark.parametrize(
    "text,why",
    [
        ("[uwsgi]\nstrict = true\nmyvar = 1\n", "unknown config directive"),
        ("[uwsgi]\nmyvar = 1\nstrict = true\n", "unknown config directive"),
        ("[uwsgi]\nset-placeholder = processes=2\n", "cannot use processes as a placeholder"),
        ("[uwsgi]\nif-env = PATH\nif-env = HOME\nendif =\n", "recursive logic"),
        ("[uwsgi]\ninclude = %dmissing.ini\n", "missing.ini"),
        ("[uwsgi]\ninclude = %dconfig.txt\n", "unable to load configuration"),
        ("[uwsgi]\nset = nothing\n", "invalid placeholder"),
        ("[uwsgi]\nenv = X=@(%dmissing.txt)\n", "missing.txt"),
    ],
)
def test_refused_configurations(
    text: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What real uWSGI refuses (exit 1 before printing its configuration) resolve refuses too,
    with a one-line UwsgiConfigError naming the file."""
    (tmp_path / "config.txt").write_text("")
    config = tmp_path / "bad.ini"
    config.write_text(text)
    env = base_env(tmp_path)
    refused_by_uwsgi(["--ini", str(config)], env, tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UwsgiConfigError) as info:
        resolve_all(["--ini", str(config)], env)
    message = str(info.value)
    assert why in message and str(tmp_path) in message and "\n" not in message, message


@pytest.mark.parametrize(
    "argv", [["--no-such-option"], ["-Z"], ["--socket"], ["-s"], ["--master=1"], ["--pro", "1"]]
)
def test_refused_command_lines(
    argv: List[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """getopt_long's refusals: unknown options, a missing argument, an argument to a switch,
    an ambiguous prefix."""
    refused_by_uwsgi(argv, base_env(tmp_path), tmp_path)
    with pytest.raises(UwsgiConfigError):
        resolve_all(argv, base_env(tmp_path))


def test_exec_scheme_and_paste_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`@(exec://command)` (a command's output, one trailing newline dropped), a config read
    from `exec://`, and `--ini-paste` reading a PasteDeploy file's [uwsgi] section."""
    (tmp_path / "gen.ini").write_text("[uwsgi]\nthreads = 3\n[extra]\nthreads = 5\n")
    (tmp_path / "paste.ini").write_text(
        "[app:main]\nuse = egg:site\n[uwsgi]\nsocket = :%(p)\nmaster = true\n"
    )
    (tmp_path / "main.ini").write_text(
        "[uwsgi]\np = 9000\nprocesses = @(exec://echo 4)\nenv = OUT=@(exec://printf 'a b\\r')\n"
    )
    env = base_env(tmp_path)
    argv = [
        "--ini",
        str(tmp_path / "main.ini"),
        "--ini",
        f"exec://cat {tmp_path}/gen.ini:extra",
        "--ini-paste",
        "paste.ini",
    ]
    check(argv, env, tmp_path, monkeypatch)


def test_declare_option_and_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`resolve = name=host` as a placeholder; declare-option's own lines are listed as uWSGI lists them (what they expand to is applied
    unlisted: tests/test_uwsgi_config.py checks resolve's view of it)."""
    (tmp_path / "c.ini").write_text(
        "[uwsgi]\ndeclare-option = site=socket=/tmp/$1.sock;chdir=/srv/$1;env=SITE=$1-$2\n"
        "declare-option = two=site=$1 x\nsite = blog news\ntwo = shop\nprocesses = 2\n"
        "resolve = backend=localhost\nsocket = %(backend):3031\n"
    )
    check(["--ini", str(tmp_path / "c.ini")], base_env(tmp_path), tmp_path, monkeypatch)


def test_show_config_prints_what_uwsgi_prints(tmp_path: Path) -> None:
    """`python -m sluicegate.uwsgi_config ARGS` prints uWSGI's --show-config block, byte for
    byte (uWSGI's own print taken from its stderr without the options appended to stop it)."""
    argv = ["--ini", str(CORPUS / "sections.ini"), "-M", "--show-config"]
    env = base_env(tmp_path, PYTHONPATH=os.pathsep.join(sys.path))
    mine = subprocess.run(
        [sys.executable, "-m", "sluicegate.uwsgi_config", *argv], env=env, capture_output=True,
        text=True, check=True, cwd=CORPUS,
    ).stdout  # fmt: skip
    real = subprocess.run(
        [str(UWSGI), *argv, "--exec-pre-jail", "false"], env=env, capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL, cwd=CORPUS,
    ).stderr.replace("exec-pre-jail = false\n", "")  # fmt: skip
    assert mine.strip("\n") in real and mine.startswith("\n;uWSGI instance configuration\n"), (mine, real)

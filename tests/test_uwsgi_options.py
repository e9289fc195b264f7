"""uWSGI's options table (python/sluicegate/uwsgi_options.py): every option public uWSGI
configurations use has one answer, docs/uwsgi.md is the generated table, and each conversion
gives the sluicegate options uWSGI's meaning asks for. In process: the table and the plan,
no server (tests/test_uwsgi_corpus.py starts configurations over real sockets).

Tests of conversions into options other helpers build (CONTRACT: --socket-mode, --on-term,
--uwsgi-module, --access-log-when, ...) check the converted values; the test that parses
each converted value with its option's own parser skips the options this build lacks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sluicegate import uwsgi_options as u
from sluicegate.allowed_values import ALLOWED
from sluicegate.errors import OptionError
from sluicegate.gunicorn_settings import DONE, IGNORED, REFUSED
from sluicegate.loader import load_app
from sluicegate.options import BY_NAME as OPTIONS

ROOT = Path(__file__).resolve().parent.parent

#: The options set by the public uWSGI configurations the table was built from (the module's
#: doc says how they were found): each must have an answer.
MOST_USED = """
socket uwsgi-socket http-socket http11-socket http https protocol socket-protocol shared-socket
listen chmod-socket chown-socket umask vacuum reuse-port master processes workers threads
enable-threads single-interpreter thunder-lock lazy-apps lazy harakiri harakiri-verbose
harakiri-graceful-timeout max-requests max-requests-delta max-worker-lifetime reload-on-rss
evil-reload-on-rss reload-on-as worker-reload-mercy reload-mercy mule-reload-mercy need-app
pidfile pidfile2 safe-pidfile uid gid chdir chdir2 pythonpath virtualenv home venv pyhome env
module wsgi wsgi-file file callable mount manage-script-name touch-reload touch-chain-reload
attach-daemon smart-attach-daemon hook-pre-app hook-master-start exec-pre-app py-autoreload
die-on-term static-map static-map2 static-expires static-expires-uri static-gzip-all
check-static static-index static-cache-paths buffer-size post-buffering limit-post http-timeout
socket-timeout disable-logging log-4xx log-5xx log-slow log-format logformat logto logto2
log-date logdate log-x-forwarded-for log-reopen touch-logreopen req-logger logger log-master
log-maxsize log-zero log-ioerror add-header stats stats-http memory-report offload-threads
no-orphans auto-procname procname procname-prefix procname-prefix-spaced plugin plugins
need-plugin http-keepalive http-auto-chunked http-enable-proxy-protocol http-processes cheaper
cheaper-initial cheaper-step cheaper-algo idle cheap die-on-idle py-call-osafterfork
wsgi-env-behavior ignore-sigpipe ignore-write-errors disable-write-exception so-keepalive
no-defer-accept max-fd cpu-affinity show-config strict daemonize emperor spooler
spooler-processes spooler-import mule mules cron route route-if route-uri route-run cache2
http-to gevent async master-fifo catch-exceptions pyargv import pyimport limit-as log-encoder
vhost mimefile py-tracebacker ini include set-placeholder if-env endif
""".split()


def test_every_most_used_option_has_one_answer():
    missing = [n for n in MOST_USED if n not in u.BY_NAME]
    assert not missing, f"no answer in uwsgi_options.TABLE for {missing}"
    assert len(set(MOST_USED)) >= 100
    for option in u.TABLE:
        assert option.answer in (DONE, IGNORED, REFUSED)
        assert option.text.strip(), option.names
        assert (option.convert is not None) == (option.answer == DONE), option.names


def test_every_name_in_the_table_is_a_uwsgi_option():
    """A misspelt name in the table would answer nothing (uWSGI's names come from its source:
    uwsgi_option_names.txt)."""
    assert [n for n in u.BY_NAME if n not in u.UWSGI_NAMES] == []


def test_docs_uwsgi_md_is_the_generated_table():
    text = (ROOT / "docs" / "uwsgi.md").read_text(encoding="utf-8")
    assert text == u.markdown(), (
        "docs/uwsgi.md is stale: .venv/bin/python -m sluicegate.uwsgi_options --markdown "
        "> docs/uwsgi.md")
    done = subprocess.run([sys.executable, "-m", "sluicegate.uwsgi_options", "--markdown"],
                          capture_output=True, text=True, check=True)
    assert done.stdout == text


BASE = [("socket", "/run/app.sock"), ("module", "mysite.wsgi")]


def given(*pairs, base=True):
    return u.plan_of((BASE if base else []) + list(pairs)).given()


def value(*pairs, option, base=True):
    return given(*pairs, base=base)[option].value


# --- Sockets


@pytest.mark.parametrize("pairs, binds", [
    ([("socket", "/run/a.sock")], ["uwsgi:unix:/run/a.sock"]),
    ([("socket", ":3031")], ["uwsgi::3031"]),
    ([("socket", "127.0.0.1:3031")], ["uwsgi:127.0.0.1:3031"]),
    ([("socket", "@app")], ["uwsgi:unix:@app"]),
    ([("socket", "[::1]:3031")], ["uwsgi:[::1]:3031"]),
    ([("uwsgi-socket", "/run/a.sock"), ("protocol", "http")], ["uwsgi:unix:/run/a.sock"]),
    ([("socket", ":8000"), ("protocol", "http")], [":8000"]),
    ([("http-socket", "0.0.0.0:8000")], ["0.0.0.0:8000"]),
    ([("http", ":8000"), ("socket", "/run/a.sock")], [":8000", "uwsgi:unix:/run/a.sock"]),
    ([("shared-socket", ":80"), ("http", "=0")], [":80"]),
    ([("https", ":8443,/c.pem,/k.pem")], ["https::8443"]),
])
def test_sockets_become_binds_with_their_wire(pairs, binds):
    assert value(*pairs, ("module", "m"), option="bind", base=False) == binds


def test_https_takes_its_certificate_and_refuses_ciphers():
    got = given(("https", ":8443,/c.pem,/k.pem,,/ca.pem"), ("module", "m"), base=False)
    assert (got["certfile"].value, got["keyfile"].value) == ("/c.pem", "/k.pem")
    assert (got["ca_certs"].value, got["cert_reqs"].value) == ("/ca.pem", "required")
    with pytest.raises(OptionError, match="rustls"):
        u.plan_of([("https", ":8443,/c.pem,/k.pem,HIGH")])


def test_socket_options():
    got = given(("listen", "128"), ("chmod-socket", ""), ("chown-socket", "www-data:www-data"),
                ("umask", "022"), ("vacuum", "true"))
    assert got["backlog"].value == "128"
    assert got["socket_mode"].value == "666", "chmod-socket alone is 666"
    assert got["socket_owner"].value == "www-data:www-data"
    assert (got["umask"].value, got["vacuum"].value) == ("022", "true")
    assert value(("chmod-socket", "660"), option="socket_mode") == "660"


def test_no_socket_or_no_app_or_two_apps_is_refused():
    for pairs, why in ([[("module", "m")], "no socket"], [[("socket", ":1")], "no app"],
                      [BASE + [("wsgi-file", "a.py")], "two apps without a mountpoint"],
                      [[("socket", ":1"), ("module", "m"), ("protocol", "fastcgi")], "fastcgi"]):
        with pytest.raises(OptionError, match=why):
            u.given_of(u.plan_of(pairs))


# --- Processes


def test_master_processes_threads_and_preload():
    got = given(("master", "true"), ("processes", "4"), ("threads", "8"))
    assert (got["workers"].value, got["threads"].value, got["preload"].value) == ("4", "8:8", "true")
    assert got["on_term"].value == "reload", "uWSGI 2.0: TERM reloads"
    assert "preload" not in given(("master", "1"), ("lazy-apps", "true"))
    assert value(("master", "true"), option="workers") == "1"
    one = given()
    assert "workers" not in one and one["threads"].value == "1:1", "uWSGI's default: one thread"
    assert value(("workers", "3"), option="workers") == "3", "workers is processes"


def test_sigterm_stops_with_die_on_term_or_the_graceful_hook():
    assert value(("master", "1"), ("die-on-term", "true"), option="on_term") == "stop"
    assert value(("master", "1"), ("hook-master-start",
                                   "unix_signal:15 gracefully_kill_them_all"),
                 option="on_term") == "stop"
    with pytest.raises(OptionError, match="hook"):
        u.plan_of([("hook-master-start", "exec:/bin/true")])


def test_recycling_and_timeouts():
    got = given(("master", "1"), ("harakiri", "30"), ("max-requests", "1000"),
                ("max-requests-delta", "50"), ("reload-on-rss", "200"),
                ("evil-reload-on-rss", "150"), ("worker-reload-mercy", "60"),
                ("reload-mercy", "10"), ("max-worker-lifetime", "3600"))
    assert (got["timeout"].value, got["max_stuck"].value) == ("30", "1")
    assert got["max_requests"].value == "1000" and "max_requests_jitter" not in got
    assert got["uwsgi_compat"].value == ["buffer-size", "min-worker-lifetime=10",
                                         "max-requests-delta=50"], \
        "uWSGI's delta is (worker id - 1) * delta, not a random jitter"
    assert got["max_rss"].value == "150M", "megabytes; the smaller of the two"
    assert got["graceful_timeout"].value == "60", "the larger mercy"
    assert got["max_worker_lifetime"].value == "3600"
    assert "timeout" not in given(("harakiri", "0"))


def test_process_settings():
    got = given(("pidfile", "/run/a.pid"), ("uid", "www-data"), ("gid", "www-data"),
                ("chdir", "/srv/app"), ("pythonpath", "/srv/lib"), ("pythonpath", "/srv/x"),
                ("env", "A=1"), ("env", "B=2"), ("touch-reload", "/srv/reload"),
                ("attach-daemon", "celery worker"), ("hook-pre-app", "exec:./migrate"),
                ("py-autoreload", "2"), ("procname", "shop"))
    assert got["pid"].value == "/run/a.pid"
    assert (got["user"].value, got["group"].value, got["chdir"].value) == (
        "www-data", "www-data", "/srv/app")
    assert got["pythonpath"].value == "/srv/lib,/srv/x"
    assert got["env"].value == ["A=1", "B=2"]
    assert got["touch_reload"].value == ["/srv/reload"]
    assert got["attach_daemon"].value == ["celery worker"]
    assert got["exec_pre_app"].value == ["./migrate"]
    assert (got["reload"].value, got["proc_name"].value) == ("true", "shop")
    with pytest.raises(OptionError, match="exec:COMMAND"):
        u.plan_of([("hook-pre-app", "callret:foo")])


@pytest.mark.parametrize("pairs, app, root", [
    ([("module", "mysite.wsgi")], "mysite.wsgi:application", None),
    ([("module", "app:api")], "app:api", None),
    ([("module", "app"), ("callable", "app")], "app:app", None),
    ([("module", "app:create_app()")], "app:create_app()", None),
    ([("wsgi-file", "app.wsgi")], "file:app.wsgi#application", None),
    ([("wsgi-file", "run.py"), ("callable", "app")], "file:run.py#app", None),
    ([("mount", "/=run.py")],
     "sluicegate.uwsgi_mounts:mounted('/=file:run.py#application', manage_script_name=False)",
     None),
    ([("mount", "/kc=kc/wsgi.py"), ("manage-script-name", "true")],
     "sluicegate.uwsgi_mounts:mounted('/kc=file:kc/wsgi.py#application', "
     "manage_script_name=True)", None),
    ([("mount", "/b=b:app"), ("mount", "/a=a.py"), ("module", "m"), ("callable", "app")],
     "sluicegate.uwsgi_mounts:mounted('=m:app', '/b=b:app', '/a=file:a.py#app', "
     "manage_script_name=False)", None),
])
def test_the_app(pairs, app, root):
    """A mount, one or several, is served by uwsgi_mounts.py's app, in uWSGI's loading order:
    module first, then the mounts as given."""
    got = given(("socket", ":1"), *pairs, base=False)
    assert got["app"].value == app
    assert got.get("root_path", None) is None if root is None else got["root_path"].value == root


def test_a_wsgi_file_loads_whatever_its_name(tmp_path, monkeypatch):
    (tmp_path / "site.wsgi").write_text("def application(e, s):\n    return [b'x']\n")
    monkeypatch.chdir(tmp_path)
    assert load_app("file:site.wsgi#application").__name__ == "application"


# --- Static files, limits, logging


def test_static_maps_fall_through_and_have_no_index(tmp_path):
    (tmp_path / "s").mkdir()
    got = given(("static-map", f"/static={tmp_path}/s"), ("check-static", str(tmp_path)),
                ("static-map2", f"/s={tmp_path}"))
    assert got["static"].value == [f"/static={tmp_path}/s;index=none", f"/={tmp_path};index=none",
                                   f"/s={tmp_path}/s;index=none"]
    assert got["static_fallthrough"].value == "true"
    assert value(("static-map", f"/s={tmp_path}"), ("static-index", "index.html"),
                 option="static") == [f"/s={tmp_path};index=index.html"]
    (tmp_path / "favicon.ico").write_bytes(b"x")
    (tmp_path / "secret.txt").write_bytes(b"y")
    mount = value(("static-map", f"/favicon.ico={tmp_path}/favicon.ico"), option="static")[0]
    directory = mount.split("=", 1)[1].split(";")[0]
    assert mount == f"/favicon.ico={directory};index=favicon.ico;follow-symlinks"
    assert os.listdir(directory) == ["favicon.ico"], "the file alone, not its neighbours"
    assert os.path.realpath(os.path.join(directory, "favicon.ico")) == str(tmp_path / "favicon.ico")
    assert "static" not in given(("static-map", f"/gone={tmp_path}/gone")), \
        "no such directory: uWSGI finds no file there at each request, the app answers"
    assert value(("static-expires-type", "text/css 3600"), option="static_expires") == [
        r"\.(css)$ 3600"]


def test_log_micros_is_the_default_line_in_microseconds():
    assert given()["access_log_format"].value == "uwsgi"
    assert given(("log-micros", "true"))["access_log_format"].value == "uwsgi-micros"


def test_limits():
    got = given()
    assert got["limit_header_bytes"].value == "4096", "uWSGI's default buffer-size"
    assert "buffer-size" in got["uwsgi_compat"].value, "past it, uWSGI closes: no 431"
    assert got["limit_request_line"].value == got["limit_headers"].value == "0", \
        "uWSGI bounds the head by its buffer alone"
    got = given(("buffer-size", "32768"), ("limit-post", "1048576"), ("socket-timeout", "60"))
    assert (got["limit_header_bytes"].value, got["limit_body"].value) == ("32768", "1048576")
    assert {got[k].value for k in ("header_timeout", "read_timeout", "write_timeout")} == {"60"}
    assert "limit_body" not in given(("limit-post", "0"))


def test_logging():
    got = given()
    assert (got["access_log"].value, got["access_log_format"].value) == ("-", "uwsgi")
    got = given(("logto", "/var/log/app.log"), ("disable-logging", "true"), ("log-4xx", "true"),
                ("log-slow", "500"), ("log-format", "%(method) %(uri)"),
                ("log-x-forwarded-for", "true"), ("log-date", ""), ("log-reopen", "true"))
    assert got["error_log"].value == got["access_log"].value == "/var/log/app.log"
    assert got["access_log_when"].value == "4xx,slow=500"
    assert got["uwsgi_log_format"].value == "%(method) %(uri)"
    assert (got["access_log_forwarded_for"].value, got["log_date"].value,
            got["log_reopen"].value) == ("true", "on", "true")
    # disable-logging alone: no request line, so no access log at all (nothing made per request)
    off = given(("disable-logging", "true"))
    assert "access_log" not in off and "access_log_when" not in off
    assert value(("req-logger", "file:/r.log"), option="access_log") == "/r.log"
    assert value(("logger", "syslog:shop,local6"), option="syslog_facility") == "local6"
    with pytest.raises(OptionError, match="UDP"):
        u.plan_of([("logto", "127.0.0.1:1717")])


def test_stats_and_headers_and_the_uwsgi_module():
    got = given(("stats", "/tmp/stats.sock"), ("stats-http", "true"),
                ("add-header", "X-A: 1"))
    assert (got["stats"].value, got["stats_http"].value) == ("/tmp/stats.sock", "true")
    assert got["add_header"].value == ["X-A: 1"]
    assert got["uwsgi_module"].value == "true"


# --- Ignored, refused, placeholders


def test_ignored_warns_refused_stops_off_asks_nothing(capsys):
    u.plan_of([("enable-threads", "true")])
    assert "enable-threads ignored" in capsys.readouterr().err
    u.plan_of([("enable-threads", "false"), ("spooler", ""), ("mules", "0")])
    assert capsys.readouterr().err == ""
    for pairs, why in (([("spooler", "/var/spool")], "spooler"), ([("cache2", "name=x")], "cach"),
                       ([("emperor", "/etc/vassals")], "Emperor"), ([("route", "^/x last:")],
                                                                     "routing")):
        with pytest.raises(OptionError, match=why):
            u.plan_of(pairs)


def test_placeholders_pass_strict_refuses_them_unlisted_uwsgi_options_are_refused():
    u.plan_of([("base", "/srv"), ("project", "shop")])
    with pytest.raises(OptionError, match="strict"):
        u.plan_of([("strict", "true"), ("project", "shop")])
    with pytest.raises(OptionError, match="no answer"):
        u.plan_of([("zerg", "/tmp/z")])


def test_a_virtualenv_that_is_not_this_python_is_refused_saying_how(tmp_path):
    with pytest.raises(OptionError, match="install sluicegate in it"):
        u.given_of(u.plan_of(BASE + [("virtualenv", str(tmp_path))]))
    assert u.plan_of(BASE + [("home", sys.prefix)]).given()["app"]


def test_the_converted_values_are_taken_by_the_options_parsers(tmp_path):
    """Each value the table produces parses with its sluicegate option (those this build has:
    the ones other parts build are checked once they exist)."""
    (tmp_path / "s").mkdir()
    got = given(("master", "1"), ("processes", "2"), ("threads", "4"), ("harakiri", "20"),
                ("reload-on-rss", "100"), ("buffer-size", "8192"), ("socket-timeout", "9"),
                ("static-map", f"/s={tmp_path}/s"), ("http", ":8000"), ("listen", "64"),
                ("umask", "022"), ("pidfile", str(tmp_path / "p")), ("env", "A=1"))
    lacking = []
    for name, raw in got.items():
        if name not in OPTIONS:
            lacking.append(name)
            continue
        items = raw.value if OPTIONS[name].repeatable else [raw.value]
        for item in items:
            if (name, item) == ("access_log_format", "uwsgi") and "uwsgi" not in ALLOWED[name]:
                lacking.append("access_log_format uwsgi")  # the named format (CONTRACT)
                continue
            OPTIONS[name].parse(item)
    if lacking:
        pytest.skip(f"options this build lacks (CONTRACT): {sorted(lacking)}")

"""The conversions of uWSGI option values into sluicegate options: `Plan` collects what a uWSGI
configuration asks, one (name, value) pair at a time, and `Plan.given()` turns it into the raw
values of sluicegate's options (resolution.py's phase 1), with uWSGI's meanings and defaults.

A plan, not a pair-by-pair mapping, because uWSGI's options act together: `protocol` decides
what `socket` speaks, `callable` names the app of `module` and `wsgi-file`, `master` and
`processes` together say whether there is a master, `chmod-socket` applies to every unix
socket, `static-index` to every static mount, `disable-logging` with `log-4xx` and `log-5xx`
decides which request lines are written, and `die-on-term` what SIGTERM does. uwsgi_options.py
holds the table that says which converter each uWSGI option has.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from typing import Callable, Dict, List, Optional, Tuple

from .gunicorn_settings import Refused, warn
from .resolution import Raw

#: A converter: (plan, value as resolved, where: "uWSGI NAME") -> None; raises Refused.
Convert = Callable[["Plan", str, str], None]


def uwsgi_on(value: str) -> bool:
    """uWSGI's reading of a switch's value (uwsgi_opt_true): false, off, no and 0 are off;
    anything else, the empty value too, is on."""
    return value.strip().lower() not in ("false", "off", "no", "0")


def _number(value: str, what: str = "a whole number") -> int:
    text = value.strip()
    if not text.lstrip("-").isdigit():
        raise Refused(f"expected {what}")
    return int(text)


@dataclasses.dataclass
class Plan:
    """What the configuration asked so far. `set`, `add` and `keep` are the converters'
    verbs; `given` is the end."""

    values: Dict[str, Raw] = dataclasses.field(default_factory=dict)
    lists: Dict[str, List[Tuple[str, str]]] = dataclasses.field(default_factory=dict)
    #: uWSGI values read at the end, by uWSGI name: (value, where), the last one given.
    kept: Dict[str, Tuple[str, str]] = dataclasses.field(default_factory=dict)
    #: (wire, address, where): wire is default (what `protocol` says), uwsgi, http or https.
    sockets: List[Tuple[str, str, str]] = dataclasses.field(default_factory=list)
    shared: List[str] = dataclasses.field(default_factory=list)
    #: (URL prefix, directory, where)
    statics: List[Tuple[str, str, str]] = dataclasses.field(default_factory=list)
    #: (kind: module, file or mount, value, where)
    apps: List[Tuple[str, str, str]] = dataclasses.field(default_factory=list)
    pythonpath: List[str] = dataclasses.field(default_factory=list)
    #: Request-log conditions kept under disable-logging: 4xx, 5xx, slow=MS.
    log_when: List[str] = dataclasses.field(default_factory=list)
    #: virtualenv/home with a sluicegate-uwsgi of its own: the program to run instead.
    reexec: Optional[str] = None

    def set(self, option: str, value: str, where: str) -> None:
        self.values[option] = Raw(value, where)

    def add(self, option: str, value: str, where: str) -> None:
        self.lists.setdefault(option, []).append((value, where))

    def keep(self, name: str, value: str, where: str) -> None:
        self.kept[name] = (value, where)

    def on(self, name: str) -> bool:
        return name in self.kept and uwsgi_on(self.kept[name][0])

    def given(self) -> Dict[str, Raw]:
        """The sluicegate options this configuration sets, as resolution.raw_values takes
        them. Raises Refused for what only the whole configuration shows (no app, no socket,
        two apps)."""
        out = dict(self.values)
        self.settle_virtualenv()
        self._app(out)
        self._sockets(out)
        self._processes(out)
        self._statics(out)
        self._logging(out)
        if self.pythonpath:
            out["pythonpath"] = Raw(",".join(self.pythonpath), "uWSGI pythonpath")
        for option, items in self.lists.items():
            out[option] = Raw([v for v, _ in items], items[0][1])
        # `import uwsgi` and uwsgidecorators, as under uWSGI.
        out["uwsgi_module"] = Raw("true", "sluicegate-uwsgi")
        return out

    def settle_virtualenv(self) -> Optional[str]:
        """virtualenv (home): the program to run instead (`reexec`), or its packages first on
        sys.path; once."""
        if "virtualenv" in self.kept:
            action = virtualenv_action(self.kept.pop("virtualenv")[0])
            if action and action[0] == "exec":
                self.reexec = action[1]
            elif action:
                self.pythonpath.insert(0, action[1])
        return self.reexec

    # --- the parts of `given`

    def _app(self, out: Dict[str, Raw]) -> None:
        if not self.apps:
            raise Refused("no app: give module, wsgi-file or mount (uWSGI would start without "
                          "one and answer every request with an error)")
        callable_name = self.kept.get("callable", ("application", ""))[0].strip() or "application"
        # uWSGI's loading order: module, then wsgi-file, then the mounts as given.
        apps = sorted(self.apps, key=lambda a: ("module", "file", "mount").index(a[0]))
        if [kind for kind, _, _ in apps[:2]] in (["module", "module"], ["file", "file"],
                                                 ["module", "file"]):
            names = ", ".join(where for _, _, where in apps[:2])
            raise Refused(f"two apps without a mountpoint ({names}): uWSGI serves the first "
                          "alone; give one")
        if not any(kind == "mount" for kind, _, _ in apps):
            kind, value, where = apps[0]
            out["app"] = Raw(_app_spec(value.strip(), kind == "file", callable_name), where)
            return
        mounts = []
        for kind, value, where in apps:
            prefix, value = ("", value) if kind != "mount" else value.partition("=")[::2]
            if kind == "mount" and not (prefix.startswith("/") and value.strip()):
                raise Refused(f"{where} {prefix}={value}: expected MOUNTPOINT=APP, e.g. /=app.py")
            is_file = kind == "file" or (kind == "mount" and value.strip().endswith(".wsgi"))
            mounts.append(f"{prefix}={_app_spec(value.strip(), is_file, callable_name)}")
        # uwsgi_mounts.py: each request to its mount's app, as uWSGI chooses it.
        spec = ", ".join(repr(m) for m in mounts)
        manage = self.on("manage-script-name")
        out["app"] = Raw(f"sluicegate.uwsgi_mounts:mounted({spec}, manage_script_name={manage})",
                         apps[-1][2])

    def _address(self, text: str, where: str) -> str:
        """uWSGI's address syntax as a --bind address (without the wire prefix)."""
        text = text.strip()
        if text.startswith("="):  # =N: the Nth shared-socket
            index = _number(text[1:], "=N, N a shared-socket's number")
            if not 0 <= index < len(self.shared):
                raise Refused(f"{where} {text!r}: there is no shared-socket number {index}")
            text = self.shared[index].strip()
        if text.startswith("fd://"):
            return text  # refused by --bind, saying what to do
        if text.startswith("@"):
            return "unix:" + text  # an abstract unix socket
        if ":" not in text:
            return "unix:" + text
        if text.startswith("*:"):
            return text[1:]
        return text

    def _sockets(self, out: Dict[str, Raw]) -> None:
        protocol = self.kept.get("protocol", ("uwsgi", ""))[0].strip().lower() or "uwsgi"
        if protocol not in ("uwsgi", "http"):
            raise Refused(f"protocol {protocol!r}: sluicegate speaks uwsgi and http "
                          "(not fastcgi, scgi or the others)")
        binds: List[str] = []
        where = ""
        for wire, text, where in self.sockets:
            wire = protocol if wire == "default" else wire
            address = self._address(text, where)
            prefix = {"uwsgi": "uwsgi:", "http": "", "https": "https:"}[wire]
            binds.append(prefix + address)
        if not binds:
            raise Refused("no socket: give socket (uwsgi protocol, for nginx's uwsgi_pass), "
                          "http-socket, http or https")
        out["bind"] = Raw(binds, where)

    def _processes(self, out: Dict[str, Raw]) -> None:
        master = self.on("master")
        count = None
        if "processes" in self.kept:
            value, where = self.kept["processes"]
            count = max(1, _number(value))
        if master or (count or 1) > 1:
            source = self.kept.get("processes", self.kept.get("master", ("", "uWSGI master")))[1]
            out["workers"] = Raw(str(count or 1), source)
            if not (self.on("lazy-apps") or self.on("lazy")):
                # uWSGI loads the app in the master and forks the workers from it.
                out["preload"] = Raw("true", "uWSGI's default (no lazy-apps)")
            if master:
                # uWSGI 2.0: SIGTERM reloads, unless die-on-term (or the hook asking to stop).
                stop = self.on("die-on-term") or "on-term" in self.kept
                out["on_term"] = Raw("stop" if stop else "reload",
                                     "uWSGI die-on-term" if stop else "uWSGI's default")
        # uWSGI prethreads: N threads per worker, started with it.
        threads = self.kept.get("threads", ("1", "uWSGI's default (one thread)"))
        count_threads = max(1, _number(threads[0]))
        out["threads"] = Raw(f"{count_threads}:{count_threads}", threads[1])
        if "harakiri" in self.kept:
            value, where = self.kept["harakiri"]
            if _number(value) > 0:
                out["timeout"] = Raw(value.strip(), where)
                out["max_stuck"] = Raw("1", where)  # uWSGI ends the worker of a stuck call
        rss = [(_number(v), w) for k in ("reload-on-rss", "evil-reload-on-rss")
               if k in self.kept for v, w in [self.kept[k]] if _number(v) > 0]
        if rss:
            megabytes, where = min(rss)
            out["max_rss"] = Raw(f"{megabytes}M", where)
        mercy = [(_number(v), w) for k in ("worker-reload-mercy", "reload-mercy")
                 if k in self.kept for v, w in [self.kept[k]]]
        if mercy:
            seconds, where = max(mercy)
            out["graceful_timeout"] = Raw(str(seconds), where)
        size = self.kept.get("buffer-size", ("4096", "uWSGI's default buffer-size"))
        out["limit_header_bytes"] = Raw(size[0].strip(), size[1])
        # uWSGI bounds the whole head by its buffer alone, and closes past it (no 431).
        out["limit_request_line"] = out["limit_headers"] = Raw("0", size[1])
        compat = [("buffer-size", size[1])]
        # uWSGI replaces no worker younger than min-worker-lifetime (10 s by default) for
        # max-requests; worker K's count is max-requests + (K-1) * max-requests-delta.
        lifetime = self.kept.get("min-worker-lifetime", ("10", "uWSGI's default"))
        for name, value, where in (("min-worker-lifetime", *lifetime),
                                   ("max-requests-delta", *self.kept.get(
                                       "max-requests-delta", ("", "")))):
            if value.strip():
                compat.append((f"{name}={_number(value)}", where))
        out["uwsgi_compat"] = Raw([v for v, _ in compat], compat[-1][1])

    def _statics(self, out: Dict[str, Raw]) -> None:
        if not self.statics:
            return
        chdir = self.values["chdir"].value if "chdir" in self.values else None
        index = self.kept.get("static-index", ("", ""))[0].strip()
        mounts = []
        for prefix, directory, where in self.statics:
            if chdir and not os.path.isabs(directory):
                directory = os.path.join(chdir, directory)
            if os.path.isfile(directory):
                # One file (favicon.ico, robots.txt): a directory holding only a link to it,
                # served as that directory's index at the mount's own path.
                name = os.path.basename(directory)
                mounts.append(f"{prefix}={_one_file(directory, where)};index={name};"
                              "follow-symlinks")
                continue
            if not os.path.isdir(directory):
                # uWSGI looks for files at each request: there are none, the app answers.
                warn(f"{where} {prefix}={directory}: no such directory; its requests go to "
                     "the app, as in uWSGI")
                continue
            # uWSGI serves no index file unless static-index names one.
            mounts.append(f"{prefix}={directory};index={index or 'none'}")
        if not mounts:
            return
        out["static"] = Raw(mounts, self.statics[0][2])
        # uWSGI passes a request for a file that is not there on to the app.
        out["static_fallthrough"] = Raw("true", self.statics[0][2])

    def _logging(self, out: Dict[str, Raw]) -> None:
        """uWSGI writes a request line for every request, to its log (standard error, or
        logto's file), unless disable-logging; req-logger sends them elsewhere."""
        logto = self.kept.get("logto")
        if logto:
            out["error_log"] = Raw(logto[0], logto[1])
        if self.on("disable-logging") and not self.log_when and "access_log" not in out:
            return  # no request line at all: no access log, so nothing is made per request
        if "access_log" not in out:
            out["access_log"] = Raw(logto[0], logto[1]) if logto else Raw("-", "uWSGI's default")
        micros = self.on("log-micros")
        out.setdefault("access_log_format", Raw("uwsgi-micros" if micros else "uwsgi",
                                                "uWSGI's request-log line"))
        if self.on("disable-logging"):
            when = ",".join(self.log_when) or "none"
            out["access_log_when"] = Raw(when, "uWSGI disable-logging")


def _one_file(path: str, where: str) -> str:
    """A directory of this user's (under $XDG_RUNTIME_DIR, else the temporary directory)
    holding only a link to `path`, named as it is: what a static-map of one file serves, and
    nothing beside it."""
    import hashlib
    import tempfile

    path = os.path.abspath(path)
    base = os.path.join(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir(),
                        f"sluicegate-uwsgi-{os.getuid()}")
    os.makedirs(base, mode=0o755, exist_ok=True)
    st = os.lstat(base)
    if st.st_uid != os.getuid() or st.st_mode & 0o022 or not os.path.isdir(base):
        raise Refused(f"{where}: {base} is not a directory of this user's alone, where "
                      "sluicegate-uwsgi keeps its links to single files")
    directory = os.path.join(base, hashlib.sha256(path.encode()).hexdigest()[:16])
    os.makedirs(directory, mode=0o755, exist_ok=True)
    link = os.path.join(directory, os.path.basename(path))
    if not (os.path.islink(link) and os.readlink(link) == path):
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(path, link)
    return directory


def _app_spec(value: str, is_file: bool, callable_name: str) -> str:
    """module (`pkg.wsgi`, `pkg.wsgi:app`, `pkg.wsgi:create_app()`) or a file (wsgi-file, or a
    module value that is a path: `app.py`, `project/app.wsgi`) as a --app spec; a file is
    `file:PATH#CALLABLE` (loader.py)."""
    if is_file or "/" in value or value.endswith(".py"):
        path, sep, name = value.partition(":")
        return f"file:{path}#{name if sep else callable_name}"
    return value if ":" in value else f"{value}:{callable_name}"


# --- The converters the table names.


def to(option: str, convert: Callable[[str], str] = str.strip) -> Convert:
    """Set `option` to the value (converted)."""
    def apply(plan: Plan, value: str, where: str) -> None:
        plan.set(option, convert(value), where)
    return apply


def switch(option: str) -> Convert:
    """A uWSGI switch onto a sluicegate switch."""
    def apply(plan: Plan, value: str, where: str) -> None:
        plan.set(option, "true" if uwsgi_on(value) else "false", where)
    return apply


def each(option: str, convert: Callable[[str], str] = str.strip) -> Convert:
    """Add the value to the repeatable `option`."""
    def apply(plan: Plan, value: str, where: str) -> None:
        plan.add(option, convert(value), where)
    return apply


def keep(name: str) -> Convert:
    """Keep the value, read with the others at the end (`Plan.given`)."""
    def apply(plan: Plan, value: str, where: str) -> None:
        plan.keep(name, value, where)
    return apply


def socket(wire: str) -> Convert:
    def apply(plan: Plan, value: str, where: str) -> None:
        plan.sockets.append((wire, value, where))
    return apply


def https(plan: Plan, value: str, where: str) -> None:
    """`ADDRESS,CERT,KEY[,CIPHERS[,CA]]`: an HTTPS listener with that certificate."""
    parts = [p.strip() for p in value.split(",")]
    if len(parts) < 3 or not all(parts[:3]):
        raise Refused("expected ADDRESS,CERTFILE,KEYFILE")
    if len(parts) > 3 and parts[3]:
        raise Refused("a cipher list: TLS is rustls here, with its own cipher suites "
                      "(docs/tls.md); leave the field empty")
    for option, path in (("certfile", parts[1]), ("keyfile", parts[2])):
        if option in plan.values and plan.values[option].value != path:
            raise Refused("a second certificate: every TLS listener serves the same one "
                          "(--certfile)")
        plan.set(option, path, where)
    if len(parts) > 4 and parts[4]:
        plan.set("ca_certs", parts[4].lstrip("!"), where)
        plan.set("cert_reqs", "optional" if parts[4].startswith("!") else "required", where)
    plan.sockets.append(("https", parts[0], where))


def shared_socket(plan: Plan, value: str, where: str) -> None:
    plan.shared.append(value)


def app(kind: str) -> Convert:
    def apply(plan: Plan, value: str, where: str) -> None:
        plan.apps.append((kind, value, where))
    return apply


def pythonpath(plan: Plan, value: str, where: str) -> None:
    """A directory or a glob of them, as uWSGI adds it."""
    text = value.strip()
    import glob

    found = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
    plan.pythonpath += [p for p in found if "," not in p]


def chmod_socket(value: str) -> str:
    """chmod-socket alone (or a switch's 1) is 666, uWSGI's default mode."""
    text = value.strip()
    return "666" if text in ("", "1", "true") else text


def megabytes(value: str) -> str:
    return f"{_number(value)}M"


def limit_post(plan: Plan, value: str, where: str) -> None:
    number = _number(value, "a byte count")
    if number > 0:  # 0: no limit of uWSGI's own; sluicegate's --limit-body stays
        plan.set("limit_body", str(number), where)


def timeouts(plan: Plan, value: str, where: str) -> None:
    """uWSGI's socket timeouts bound each read or write: a client's head, its body, the
    answer."""
    seconds = str(_number(value, "seconds"))
    for option in ("header_timeout", "read_timeout", "write_timeout"):
        plan.set(option, seconds, where)


def log_when(condition: str) -> Convert:
    def apply(plan: Plan, value: str, where: str) -> None:
        if condition == "slow":
            plan.log_when.append(f"slow={_number(value, 'milliseconds')}")
        elif uwsgi_on(value):
            plan.log_when.append(condition)
    return apply


def logger(plan: Plan, value: str, where: str) -> None:
    """logger = file:PATH | stdio | syslog[:IDENT[,FACILITY]]: where uWSGI's log goes."""
    kind, _, arg = value.strip().partition(":")
    if kind == "file" and arg:
        plan.keep("logto", arg, where)
    elif kind == "stdio" or (kind == "systemd" and not arg):
        return  # standard error (the journal under systemd)
    elif kind == "syslog":
        plan.set("log_syslog", "true", where)
        plan.set("syslog_addr", "unix:///dev/log#dgram", where)
        ident, _, facility = arg.partition(",")
        if ident:
            plan.set("syslog_prefix", ident, where)
        if facility:
            plan.set("syslog_facility", facility, where)
    else:
        raise Refused("sluicegate's log goes to standard error, a file (file:PATH) or syslog "
                      "(syslog:IDENT,FACILITY); named loggers and other plugins are not taken")


def req_logger(plan: Plan, value: str, where: str) -> None:
    kind, _, arg = value.strip().partition(":")
    if kind == "file" and arg:
        plan.set("access_log", arg, where)
    elif kind == "stdio":
        plan.set("access_log", "-", where)
    else:
        raise Refused("the request log goes to a file (file:PATH) or standard output (stdio) "
                      "here")


def logto(plan: Plan, value: str, where: str) -> None:
    text = value.strip()
    if ":" in text and "/" not in text:
        raise Refused("a UDP address: sluicegate logs to a file, standard error or syslog "
                      "(logger = syslog)")
    plan.keep("logto", text, where)


def log_date(value: str) -> str:
    text = value.strip()
    return "on" if text.lower() in ("", "1", "true", "on", "yes") else text


def static_map(full_path: bool) -> Convert:
    """static-map /URL=DIR; static-map2 keeps the whole URL path under DIR."""
    def apply(plan: Plan, value: str, where: str) -> None:
        prefix, sep, directory = value.strip().partition("=")
        if not sep or not prefix.startswith("/") or not directory:
            raise Refused("expected /URL=DIRECTORY")
        if full_path:
            directory = os.path.join(directory, prefix.strip("/"))
        plan.statics.append((prefix, directory, where))
    return apply


def check_static(plan: Plan, value: str, where: str) -> None:
    plan.statics.append(("/", value.strip(), where))


def static_expires_type(plan: Plan, value: str, where: str) -> None:
    """`TYPE SECONDS` (uWSGI also takes TYPE=SECONDS): Expires on the files of that content
    type, as --static-expires on their extensions."""
    kind, _, seconds = value.strip().replace("=", " ", 1).partition(" ")
    import mimetypes  # only with static-expires-type: not in every process
    extensions = sorted({e.lstrip(".") for e in mimetypes.guess_all_extensions(kind.strip())})
    if not extensions:
        raise Refused(f"unknown content type {kind!r}")
    _number(seconds, "TYPE SECONDS")
    regex = r"\.(" + "|".join(re.escape(e) for e in extensions) + r")$"
    plan.add("static_expires", f"{regex} {seconds.strip()}", where)


def hook_pre_app(plan: Plan, value: str, where: str) -> None:
    action, _, command = value.strip().partition(":")
    if action != "exec" or not command:
        raise Refused("of the hooks, sluicegate runs exec:COMMAND before the app loads")
    plan.add("exec_pre_app", command, where)


def hook_master_start(plan: Plan, value: str, where: str) -> None:
    """The common `unix_signal:15 gracefully_kill_them_all`: SIGTERM stops gracefully."""
    if value.split() == ["unix_signal:15", "gracefully_kill_them_all"]:
        plan.keep("on-term", "stop", where)
        return
    raise Refused("of the master-start hooks, sluicegate takes unix_signal:15 "
                  "gracefully_kill_them_all (SIGTERM stops gracefully)")


def py_autoreload(plan: Plan, value: str, where: str) -> None:
    if _number(value, "seconds") > 0:
        plan.set("reload", "true", where)


def virtualenv(plan: Plan, value: str, where: str) -> None:
    plan.keep("virtualenv", value.strip(), where)


def protocol(plan: Plan, value: str, where: str) -> None:
    plan.keep("protocol", value, where)


def virtualenv_action(directory: str) -> Optional[Tuple[str, str]]:
    """How sluicegate-uwsgi runs in uWSGI's virtualenv (home): None when this Python is that
    environment's; ("exec", PROGRAM) when the environment has sluicegate-uwsgi of its own
    (the start goes on there); ("path", SITE_PACKAGES) when it has this Python version's
    packages (they go first on sys.path). Raises Refused otherwise."""
    here = os.path.realpath(sys.prefix)
    there = os.path.realpath(directory)
    if here == there:
        return None
    program = os.path.join(directory, "bin", "sluicegate-uwsgi")
    if os.access(program, os.X_OK):
        return ("exec", program)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = os.path.join(directory, "lib", version, "site-packages")
    if os.path.isdir(site):
        return ("path", site)
    raise Refused(f"{directory} has no sluicegate-uwsgi and no {version} packages: install "
                  f"sluicegate in it (pip install sluicegate) and run its sluicegate-uwsgi")

"""uWSGI 2.0's option logic: the if-* and for* blocks of a configuration (core/config.c).

`if-env = VAR` ... `endif` keeps the lines between only when VAR is set (`VAR=value`: set to
that value), `%(_)` in them being the value; `if-not-env`, `if-opt`, `if-exists`, `if-file`,
`if-dir` and their negations likewise; `for = a b` ... `endfor` repeats them once per item.
uwsgi_config.py runs each line of an open block through the block's function, as uWSGI's
`add_exported_option` does; a function adds what the block lets through with `res.add`.
"""

from __future__ import annotations

import os
import re
import socket
from typing import Callable, Dict, List, Mapping, Optional, Protocol, Tuple

from .uwsgi_config_files import read_text


class Resolving(Protocol):
    """What a block needs from the option list being built (uwsgi_config._Resolver)."""

    environ: Mapping[str, str]

    def exported(self, key: str) -> Optional[str]: ...

    def add(
        self, key: str, value: Optional[str], where: str, placeholder_only: bool = False
    ) -> None: ...


#: The plugins a pip-built uWSGI 2.0 has embedded (buildconf/base.ini + the python plugin), for
#: `if-plugin`.
_EMBEDDED_PLUGINS = frozenset(
    "python ping cache nagios rrdtool carbon rpc corerouter fastrouter http ugreen signal syslog "
    "rsyslog logsocket router_uwsgi router_redirect router_basicauth zergpool redislog "
    "mongodblog router_rewrite router_http logfile router_cache rawrouter router_static "
    "sslrouter spooler cheaper_busyness symcall transformation_tofile transformation_gzip "
    "transformation_chunked transformation_offload router_memcached router_redis router_hash "
    "router_expires router_metrics transformation_template stats_pusher_socket".split()
)

Logic = Callable[[Resolving, str, Optional[str], str, str], None]


def _sub(value: Optional[str], repl: Optional[str]) -> Optional[str]:
    """uwsgi_substitute(value, "%(_)", repl): unchanged when there is nothing to put."""
    if value is None or repl is None:
        return value
    return value.replace("%(_)", repl)


def _split_eq(data: str) -> Tuple[str, Optional[str]]:
    name, eq, expected = data.partition("=")
    return name, (expected if eq else None)


def _if_found(
    found: Optional[str], expected: Optional[str], negate: bool
) -> Tuple[bool, Optional[str]]:
    """The if-env/if-opt family: (condition holds, what %(_) becomes)."""
    if not negate:
        ok = found is not None and (expected is None or expected == found)
    else:
        ok = found is None or (expected is not None and expected != found)
    return ok, found


def _logic_if(test: Callable[[Resolving, str], Tuple[bool, Optional[str]]]) -> Logic:
    def run(res: Resolving, key: str, value: Optional[str], data: str, where: str) -> None:
        ok, repl = test(res, data)
        if ok:
            res.add(key, _sub(value, repl), where)

    return run


def _env_test(negate: bool) -> Callable[[Resolving, str], Tuple[bool, Optional[str]]]:
    def test(res: Resolving, data: str) -> Tuple[bool, Optional[str]]:
        name, expected = _split_eq(data)
        return _if_found(res.environ.get(name), expected, negate)

    return test


def _opt_test(negate: bool) -> Callable[[Resolving, str], Tuple[bool, Optional[str]]]:
    def test(res: Resolving, data: str) -> Tuple[bool, Optional[str]]:
        name, expected = _split_eq(data)
        return _if_found(res.exported(name), expected, negate)

    return test


def _path_test(
    check: Callable[[str], bool], negate: bool
) -> Callable[[Resolving, str], Tuple[bool, Optional[str]]]:
    return lambda res, data: (check(data) != negate, data)


def _for_each(items: Callable[[Resolving, str, str], List[str]]) -> Logic:
    def run(res: Resolving, key: str, value: Optional[str], data: str, where: str) -> None:
        for item in items(res, data, where):
            res.add(key, _sub(value, item), where)

    return run


def _readlines(res: Resolving, data: str, where: str) -> List[str]:
    text = read_text(data, where)
    return [line.rstrip("\r\n") for line in text.splitlines(keepends=True)]


def _glob(res: Resolving, data: str, where: str) -> List[str]:
    import glob  # only for-glob

    found = sorted(glob.glob(data))
    if not found:
        return [data]
    return [path + "/" if os.path.isdir(path) else path for path in found]


def _times(res: Resolving, data: str, where: str) -> List[str]:
    match = re.match(r"\s*([+-]?\d+)", data)
    return [str(i) for i in range(1, (int(match.group(1)) if match else 0) + 1)]


def _not_reload(res: Resolving, key: str, value: Optional[str], data: str, where: str) -> None:
    res.add(key, value, where)


def _hostname_match(negate: bool) -> Callable[[Resolving, str], Tuple[bool, Optional[str]]]:
    return lambda res, data: (bool(re.search(data, socket.gethostname())) != negate, data)


LOGIC: Dict[str, Logic] = {
    "if-env": _logic_if(_env_test(False)),
    "ifenv": _logic_if(_env_test(False)),
    "if-not-env": _logic_if(_env_test(True)),
    "if-opt": _logic_if(_opt_test(False)),
    "if-not-opt": _logic_if(_opt_test(True)),
    "if-exists": _logic_if(_path_test(lambda p: os.access(p, os.R_OK), False)),
    "ifexists": _logic_if(_path_test(lambda p: os.access(p, os.R_OK), False)),
    "if-not-exists": _logic_if(_path_test(lambda p: os.access(p, os.R_OK), True)),
    "if-file": _logic_if(_path_test(os.path.isfile, False)),
    "if-not-file": _logic_if(_path_test(os.path.isfile, True)),
    "if-dir": _logic_if(_path_test(os.path.isdir, False)),
    "ifdir": _logic_if(_path_test(os.path.isdir, False)),
    "if-directory": _logic_if(_path_test(os.path.isdir, False)),
    "if-not-dir": _logic_if(_path_test(os.path.isdir, True)),
    "if-plugin": _logic_if(_path_test(lambda p: p in _EMBEDDED_PLUGINS, False)),
    "ifplugin": _logic_if(_path_test(lambda p: p in _EMBEDDED_PLUGINS, False)),
    "if-not-plugin": _logic_if(_path_test(lambda p: p in _EMBEDDED_PLUGINS, True)),
    "if-hostname": _logic_if(_path_test(lambda p: p == socket.gethostname(), False)),
    "if-not-hostname": _logic_if(_path_test(lambda p: p == socket.gethostname(), True)),
    "if-hostname-match": _logic_if(_hostname_match(False)),
    "if-not-hostname-match": _logic_if(_hostname_match(True)),
    "if-reload": lambda res, key, value, data, where: None,
    "if-not-reload": _not_reload,
    "for": _for_each(lambda res, data, where: data.split()),
    "for-glob": _for_each(_glob),
    "for-readline": _for_each(_readlines),
    "for-times": _for_each(_times),
}

"""uWSGI's several apps in one server (`mount = /a=app_a.py` given more than once, beside or
without `module`/`wsgi-file`): one WSGI app, `mounted(...)`, that hands each request to the
app uWSGI 2.0 would choose, with the SCRIPT_NAME and PATH_INFO uWSGI gives it.
sluicegate-uwsgi names it as the app (uwsgi_convert.py) whenever a configuration mounts one.

As uWSGI 2.0 does it:
  - the apps are loaded at start in uWSGI's order: `module` or `wsgi-file` (mountpoint "")
    first, then each mount in the order given; the first one loaded is the default app
    (plugins/python/pyloader.c, init_uwsgi_app);
  - with manage-script-name, a request whose PATH_INFO is longer than "/" and starts with a
    mountpoint (its trailing "/" left out) followed by "/" or nothing gets SCRIPT_NAME = that
    mountpoint as written and PATH_INFO the rest; the longest such mountpoint wins, and "/"
    never does (core/protocol.c, uwsgi_parse_vars);
  - the request goes to the app whose mountpoint is SCRIPT_NAME, else to the default app
    (core/utils.c, uwsgi_get_app_id; plugins/python/wsgi_handlers.c).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .loader import LoadError, load_app

if TYPE_CHECKING:
    App = Callable[..., Iterable[bytes]]


def mounted(*mounts: str, manage_script_name: bool = False) -> App:
    """The app serving `mounts`, each "MOUNTPOINT=APP SPEC" (loader.py's spec; an empty
    MOUNTPOINT for `module` or `wsgi-file`), in uWSGI's loading order."""
    apps: List[Tuple[str, App]] = []
    for mount in mounts:
        mountpoint, sep, spec = mount.partition("=")
        if not sep or not spec:
            raise LoadError(f"mount {mount!r}: expected MOUNTPOINT=APP")
        apps.append((mountpoint, load_app(spec)))
    if not apps:
        raise LoadError("no app mounted")
    return Mounts(apps, manage_script_name)


class Mounts:
    """The apps by mountpoint, and the choice of one per request."""

    def __init__(self, apps: List[Tuple[str, App]], manage_script_name: bool):
        self.default = apps[0][1]
        self.by_mountpoint: Dict[str, App] = {}
        for mountpoint, app in apps:
            self.by_mountpoint.setdefault(mountpoint, app)  # uWSGI finds the first one
        self.manage = manage_script_name
        self.mountpoints = [m for m, _ in apps]

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if self.manage:
            self._manage_script_name(environ)
        app = self.by_mountpoint.get(environ.get("SCRIPT_NAME", ""), self.default)
        return app(environ, start_response)

    def _manage_script_name(self, environ: Dict[str, Any]) -> None:
        path: str = environ.get("PATH_INFO", "")
        if len(path) <= 1:
            return
        best: Optional[str] = None
        best_len = 0
        for mountpoint in self.mountpoints:
            length = len(mountpoint) - 1 if mountpoint.endswith("/") else len(mountpoint)
            if (len(path) < length or length <= best_len or not path.startswith(mountpoint[:length])
                    or (len(path) > length and path[length] != "/")):
                continue
            best, best_len = mountpoint, length
        if best is not None:
            environ["SCRIPT_NAME"] = best
            environ["PATH_INFO"] = path[len(best):]

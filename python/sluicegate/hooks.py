"""gunicorn's server hooks: user functions named `on_starting`, `when_ready`, `post_fork`, ...,
run at the same points of a server's life as gunicorn runs them, with the same arguments.

Where they come from (`Hooks`, the value of the `hooks` option):
  - `--hooks MODULE` (or `hooks = "myproject.hooks"` in the TOML file, or `serve(hooks=...)`):
    a module, imported once the server has changed to `--chdir`, whose functions with gunicorn's
    names are the hooks; a path ending in `.py` is run as a file instead;
  - a gunicorn configuration file (`--config gunicorn.conf.py`): its functions with those names
    (gunicorn_config.py hands them over as a mapping);
  - `serve(hooks={"post_fork": f, ...})`: a mapping of name -> function.

What each hook receives is documented in docs/operations.md ("Hooks"): `server` and `worker`
are built by hook_objects.py (gunicorn's Arbiter and Worker, as far as hooks read them),
`HookRequest` (`method`, `path`, `query`, `uri`, `headers`, `version`) stands for its request
and `HookResponse` (`status`, `status_code`, `headers`) for its response. `ARGUMENTS` is each
hook's signature, as gunicorn calls it: a hook that cannot be called so is refused when the
hooks are read (at start, on HUP and by --check-config), as gunicorn refuses it.

A hook that raises is logged with its name and traceback on the error log. `post_fork` and
`post_worker_init` then fail the worker's boot (as in gunicorn: `HookFailed`, a StartError, which
the master reports as a failed boot); any other hook's error is logged and serving continues.
A hook that calls `sys.exit()` is logged with its name; in the hooks gunicorn's master runs
outside any try (`EXITS`) it then ends the server with that status, as gunicorn's does
(`HookExit`: the caller stops the server); elsewhere the exit goes on as it would.
`pre_request`/`post_request` wrap the app (`wrap_app`) only when one of them is defined, so a
server without them calls the app directly.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from . import call_shape, records
from .errors import StartError
from .hook_types import (  # noqa: F401 (hooks.X)
    SUPPORTED, UNSUPPORTED, HookExit, HookFailed, Hooks, exit_status)
from .logs import log

#: Each gunicorn hook's arguments, as gunicorn calls it.
ARGUMENTS: Dict[str, Tuple[str, ...]] = {
    "on_starting": ("server",), "on_reload": ("server",), "when_ready": ("server",),
    "pre_fork": ("server", "worker"), "post_fork": ("server", "worker"),
    "post_worker_init": ("worker",), "worker_int": ("worker",), "worker_abort": ("worker",),
    "pre_exec": ("server",), "pre_request": ("worker", "req"),
    "post_request": ("worker", "req", "environ", "resp"), "child_exit": ("server", "worker"),
    "worker_exit": ("server", "worker"), "nworkers_changed": ("server", "new_value", "old_value"),
    "on_exit": ("server",), "ssl_context": ("config", "default_ssl_context_factory"),
}

#: Hooks whose error fails the worker's boot (gunicorn's behaviour).
FATAL = ("post_fork", "post_worker_init")

#: Hooks whose sys.exit() ends the server with its status: gunicorn's master calls them with
#: nothing around them that catches SystemExit (Arbiter.start, reload, reap_workers, halt).
EXITS = ("on_starting", "when_ready", "on_reload", "child_exit", "on_exit", "pre_fork",
         "nworkers_changed")

#: Hooks whose sys.exit() the caller is told of (HookExit) to do what gunicorn then does:
#: EXITS, and pre_exec (gunicorn runs it in the child about to become the new master of a
#: USR2 upgrade: its exit is no upgrade).
TOLD = EXITS + ("pre_exec",)


def from_mapping(functions: Mapping[str, Any], source: str) -> Hooks:
    """Hooks from name -> function (a gunicorn file's namespace, or serve()'s mapping)."""
    for name, f in functions.items():
        if name not in SUPPORTED and name not in UNSUPPORTED:
            raise ValueError(f"{name!r} is not a gunicorn hook name ({', '.join(SUPPORTED)})")
        if not callable(f):
            raise ValueError(f"hook {name} is not a function")
        check_signature(name, f)
    return Hooks(source, tuple(sorted(functions.items())), is_module=False)


def check_signature(name: str, f: Callable[..., Any]) -> None:
    """ValueError, one line, if gunicorn's call of hook `name` cannot call `f` (gunicorn
    refuses such a hook when it reads its configuration: "Value must have an arity of")."""
    wanted = ARGUMENTS[name]
    if call_shape.plain(f) and call_shape.binds_positional(f, len(wanted)):
        return  # read from its code (call_shape.py): inspect only for anything else
    import inspect

    try:
        inspect.signature(f).bind(*wanted)
    except TypeError:
        pass
    except ValueError:  # no signature to read (a builtin): take it as it is
        return
    else:
        return
    try:
        shown = f"{name}{inspect.signature(f)}"
    except (TypeError, ValueError):
        shown = name
    where = _defined_at(f)
    raise ValueError(f"hook {shown}{where} cannot be called as gunicorn calls it: "
                     f"{name}({', '.join(wanted)})")


def _defined_at(f: Callable[..., Any]) -> str:
    code = getattr(f, "__code__", None)
    if code is None:
        return ""
    return f" ({os.path.basename(code.co_filename)}, line {code.co_firstlineno})"


# -- the objects hooks receive ---------------------------------------------------------------


@records.record
class HookRequest:
    """gunicorn's `req`, from the WSGI environ: headers as (NAME, value) pairs, names upper-case
    like gunicorn's."""

    method: str
    path: str
    query: str
    uri: str
    version: Tuple[int, int]
    headers: List[Tuple[str, str]]


@records.record
class HookResponse:
    """gunicorn's `resp`, as far as the app's start_response told it (status None if the app
    raised before calling it)."""

    status: Optional[str] = None
    headers: List[Tuple[str, str]] = records.field(default_factory=list)

    @property
    def status_code(self) -> Optional[int]:
        return int(self.status.split(None, 1)[0]) if self.status else None


# -- running them ----------------------------------------------------------------------------


_resolved: Dict[Hooks, Dict[str, Callable[..., Any]]] = {}


def resolve(hooks: Optional[Hooks]) -> Dict[str, Callable[..., Any]]:
    """The functions of `hooks` by name, the module imported on first use (so after --chdir);
    StartError if it does not import."""
    if hooks is None:
        return {}
    if hooks in _resolved:
        return _resolved[hooks]
    if not hooks.is_module:
        found = dict(hooks.functions)
    else:
        found = {}
        for name, f in vars(_import(hooks.source)).items():
            if name in SUPPORTED and callable(f):
                try:
                    check_signature(name, f)
                except ValueError as e:
                    raise StartError(f"--hooks {hooks.source}: {e}") from None
                found[name] = f
            elif name in UNSUPPORTED and callable(f):
                log.warning("--hooks %s: %s() %s", hooks.source, name, UNSUPPORTED[name])
    _resolved[hooks] = found
    return found


def _import(source: str) -> Any:
    try:
        if source.endswith(".py"):
            spec = importlib.util.spec_from_file_location("__sluicegate_hooks__", source)
            if spec is None or spec.loader is None:
                raise ImportError(f"not a Python file: {source}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # as the app's MODULE is found (loader.py)
        return importlib.import_module(source)
    except Exception as e:
        raise StartError(f"--hooks {source}: cannot import it: {type(e).__name__}: {e}") from e


def call(hooks: Optional[Hooks], name: str, *args: Any) -> None:
    """Run hook `name` if defined. Its error is logged with its traceback; for `post_fork` and
    `post_worker_init` it is then raised again as HookFailed (the worker's boot fails)."""
    try:
        f = resolve(hooks).get(name)
    except StartError as e:
        log.error("%s", e)
        if name in FATAL:
            raise
        return
    if f is not None:
        _run(name, f, *args)


def _run(name: str, f: Callable[..., Any], *args: Any) -> None:
    try:
        f(*args)
    except SystemExit as e:
        log.error("Hook %s() called sys.exit(%r)%s", name, e.code,
                  f": the server stops with status {exit_status(e.code)}, as gunicorn's does"
                  if name in EXITS else "")
        if name in TOLD:
            raise HookExit(name, e.code) from None
        raise
    except Exception as e:
        log.error("Hook %s() raised %s: %s", name, type(e).__name__, e, exc_info=True)
        if name in FATAL:
            raise HookFailed(f"hook {name}() raised {type(e).__name__}: {e}") from e


def wrap_app(hooks: Optional[Hooks], app: Callable[..., Any], hook_worker: Any
             ) -> Callable[..., Any]:
    """The app itself when neither pre_request nor post_request is defined (no cost), else a
    WSGI wrapper that runs them around each call: pre_request(worker, req) before the app,
    post_request(worker, req, environ, resp) once the response's iterable is closed (or the app
    raised). The functions are looked up once, here, not per request.

    A `wsgi.file_wrapper` response is then sent by reading it, not by sendfile(2): the wrapper
    must see its close() to run post_request after the last byte."""
    found = resolve(hooks)
    pre, post = found.get("pre_request"), found.get("post_request")
    if pre is None and post is None:
        return app

    def with_request_hooks(environ: Dict[str, Any], start_response: Callable[..., Any]) -> Any:
        req = request_of(environ)
        if pre is not None:
            _run("pre_request", pre, hook_worker, req)
        resp = HookResponse()

        def start(status: str, headers: List[Tuple[str, str]], exc_info: Any = None) -> Any:
            resp.status, resp.headers = status, list(headers)
            return start_response(status, headers, exc_info) if exc_info is not None \
                else start_response(status, headers)

        try:
            result = app(environ, start)
        except BaseException:
            if post is not None:
                _run("post_request", post, hook_worker, req, environ, resp)
            raise
        if post is None:
            return result
        return _AfterClose(result, lambda: _run("post_request", post, hook_worker, req,
                                                environ, resp))

    return with_request_hooks


class _AfterClose:
    """The app's iterable, with `done` run after its close() (the end of the response)."""

    def __init__(self, result: Iterable[bytes], done: Callable[[], None]) -> None:
        self._result = result
        self._done = done

    def __iter__(self) -> Any:
        return iter(self._result)

    def close(self) -> None:
        try:
            close = getattr(self._result, "close", None)
            if close is not None:
                close()
        finally:
            self._done()


def request_of(environ: Mapping[str, Any]) -> HookRequest:
    headers = [(k[5:].replace("_", "-"), v) for k, v in environ.items()
               if k.startswith("HTTP_")]
    for key, name in (("CONTENT_TYPE", "CONTENT-TYPE"), ("CONTENT_LENGTH", "CONTENT-LENGTH")):
        if environ.get(key):
            headers.append((name, environ[key]))
    proto = str(environ.get("SERVER_PROTOCOL", "HTTP/1.1"))
    try:
        major, minor = proto.split("/", 1)[1].split(".", 1)
        version = (int(major), int(minor))
    except (IndexError, ValueError):
        version = (1, 1)
    path = str(environ.get("SCRIPT_NAME", "")) + str(environ.get("PATH_INFO", ""))
    query = str(environ.get("QUERY_STRING", ""))
    return HookRequest(str(environ.get("REQUEST_METHOD", "")), path, query,
                       path + ("?" + query if query else ""), version, headers)


__all__ = ["Hooks", "HookFailed", "HookExit", "HookRequest", "HookResponse",
           "from_mapping", "check_signature", "resolve", "call", "wrap_app"]

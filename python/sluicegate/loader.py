"""Finding the user's WSGI application from a `MODULE:APP` string.

Accepted forms (as gunicorn accepts them):
  - `module:app`, `pkg.module:app`
  - `module` alone, meaning `module:application` (`sluicegate mysite.wsgi`, as with gunicorn)
  - dotted attributes: `pkg.mod:obj.app`
  - factories: `module:create_app()` and with literal arguments
    `module:create_app('prod', debug=True)`. The call is parsed with `ast`, and only literals
    are allowed (`ast.literal_eval`), so the string can never run arbitrary code.
  - a file, `file:PATH#APP` (uWSGI's wsgi-file: any name, app.wsgi too), run as a module of
    its own and then read as `MODULE:APP`.

The current directory goes first on sys.path, so `sluicegate myapp:app` finds ./myapp.py whether
started as `python -m sluicegate` or as the `sluicegate` console script.

Every failure is a `LoadError` with one line saying what to fix. In particular "module X not
found" (a typo in the app path) is told apart from an ImportError raised while importing the
app's own module (a missing dependency of the app), which shows that error's one line and where
it was raised. The original exception is kept as `__cause__`, for `--log-level debug`.
"""

from __future__ import annotations

import importlib
import keyword
import os
import sys
import traceback

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

from . import call_shape
from .asgi import app_refusal
from .errors import LoadError, one_line

_EXAMPLE = "e.g. myproject.wsgi:application or app:create_app()"

#: The attribute a bare `MODULE` names (gunicorn's default, and what Django's wsgi.py defines).
DEFAULT_ATTRIBUTE = "application"


#: The start of an app spec that names a PasteDeploy file (`config:/abs/app.ini#main`, its own
#: URI form), which gunicorn's --paste FILE becomes (gunicorn_settings.py).
PASTE_PREFIX = "config:"

#: The start of an app spec that names a Python file (uWSGI's wsgi-file, uwsgi_convert.py).
FILE_PREFIX = "file:"


def load_app(spec: str) -> Callable[..., Any]:
    """Import and return the WSGI callable named by `spec`; raise LoadError on any failure."""
    if spec.startswith(PASTE_PREFIX):
        return _load_paste(spec)
    if spec.startswith(FILE_PREFIX):
        return load_app(f"{_load_file(spec)}:{spec.rpartition('#')[2] or DEFAULT_ATTRIBUTE}")
    module_name, names, call = parse_spec(spec)
    _put_cwd_first_on_sys_path()
    obj: Any = _import(module_name)
    for i, name in enumerate(names):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            owner = f"module {module_name!r}" if i == 0 else repr(f"{module_name}:{'.'.join(names[:i])}")
            if ":" not in spec:
                raise LoadError(
                    f"{owner} has no attribute {name!r} (app path {spec!r} means "
                    f"'{module_name}:{DEFAULT_ATTRIBUTE}'; name the app: {module_name}:APP)"
                ) from None
            raise LoadError(f"{owner} has no attribute {name!r} (app path {spec!r})") from None
    if call is not None:
        args, kwargs = call
        try:
            obj = obj(*args, **kwargs)
        except Exception as e:
            raise LoadError(f"app factory {spec!r} raised {_describe(e)}") from e
        if obj is None:
            raise LoadError(f"app factory {spec!r} returned None instead of a WSGI app")
    if not callable(obj):
        raise LoadError(
            f"{spec!r} is not a WSGI app: it is an object of type {type(obj).__name__}, "
            "which cannot be called as app(environ, start_response)"
        )
    asgi = app_refusal(obj, spec)
    if asgi:
        raise LoadError(asgi)
    _check_wsgi_signature(obj, spec, call is not None)
    return obj


def parse_spec(spec: str) -> Tuple[str, List[str], Optional[Tuple[tuple, Dict[str, Any]]]]:
    """Split `module:attr.path(args)` into (module name, attribute names, (args, kwargs) or
    None); raise LoadError if it is malformed."""
    module_name, sep, target = spec.strip().partition(":")
    if not sep:
        target = DEFAULT_ATTRIBUTE
    if not module_name or not target.strip():
        raise LoadError(f"app path {spec!r} is not MODULE:APP ({_EXAMPLE})")
    if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
        guess = module_name[:-3] if module_name.endswith(".py") else module_name
        guess = guess.replace(os.sep, ".").replace("/", ".").strip(".")
        raise LoadError(
            f"app path {spec!r}: give a module name, not a file name "
            f"(e.g. {guess}:{target}, run from the directory that contains it, or use --chdir)"
        )
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise LoadError(f"app path {spec!r}: {module_name!r} is not a module name ({_EXAMPLE})")
    names = _plain_names(target)
    if names is not None:
        return module_name, names, None
    import ast

    try:
        expr = ast.parse(target.strip(), mode="eval").body
    except SyntaxError:
        raise LoadError(f"app path {spec!r}: {target!r} is not an attribute name or a call ({_EXAMPLE})") from None
    call = None
    if isinstance(expr, ast.Call):
        call = _literal_arguments(expr, spec)
        expr = expr.func
    names = _dotted_names(expr)
    if names is None:
        raise LoadError(f"app path {spec!r}: {target!r} is not an attribute name or a call ({_EXAMPLE})")
    return module_name, names, call


def _plain_names(target: str) -> Optional[List[str]]:
    """`obj` or `obj.attr` read without ast (it would import ast in every process forked from
    this one for a name): the names, or None for anything else (a call, spaces), which ast
    reads. ASCII only: ast normalizes other identifiers (NFKC)."""
    names = target.split(".")
    if target.isascii() and all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return names
    return None


def _dotted_names(node: ast.expr) -> Optional[List[str]]:
    import ast

    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        head = _dotted_names(node.value)
        return None if head is None else head + [node.attr]
    return None


def _literal_arguments(call: ast.Call, spec: str) -> Tuple[tuple, Dict[str, Any]]:
    import ast

    try:
        args = tuple(ast.literal_eval(a) for a in call.args)
        kwargs = {}
        for kw in call.keywords:
            if kw.arg is None:
                raise ValueError("**kwargs")
            kwargs[kw.arg] = ast.literal_eval(kw.value)
    except ValueError:
        raise LoadError(
            f"app path {spec!r}: a factory's arguments must be literals "
            "(strings, numbers, True/False/None, lists, dicts)"
        ) from None
    return args, kwargs


def _put_cwd_first_on_sys_path() -> None:
    cwd = os.getcwd()
    if cwd in sys.path:
        sys.path.remove(cwd)
    sys.path.insert(0, cwd)


def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            # The app's module itself (or a package on its path) does not exist: a typo, or the
            # wrong directory.
            raise LoadError(
                f"module {module_name!r} not found (searched the current directory "
                f"{os.getcwd()} and sys.path; use --chdir to serve from elsewhere)"
                f"{_unreadable_hint()}"
            ) from e
        raise LoadError(f"cannot import {module_name!r}: {_describe(e)}{_where(e)}"
                        f"{_unreadable_hint()}") from e
    except (Exception, SystemExit) as e:
        raise LoadError(f"cannot import {module_name!r}: {_describe(e)}{_where(e)}") from e


def _unreadable_hint() -> str:
    """`; but ... cannot be read`: a module "not found" in a directory this process may not
    read (after --user) was not looked for there; say so, naming the first such directory."""
    from .privileges import unreadable
    found = unreadable()
    if not found:
        return ""
    what, path = found[0]
    user = _user_name()
    return f"; but this process (user {user}) cannot read {what}, {path}: permission denied"


def _user_name() -> str:
    import pwd
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _describe(e: BaseException) -> str:
    text = one_line(str(e))
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _where(e: BaseException) -> str:
    """` (file.py, line 3)`: the innermost frame outside the import machinery and this module,
    i.e. the line of the app's code that raised. Empty for a SyntaxError, whose message
    already says where."""
    if isinstance(e, SyntaxError):
        return ""
    here = os.path.abspath(__file__)
    frames = [
        f for f in traceback.extract_tb(e.__traceback__)
        if not f.filename.startswith("<") and os.path.abspath(f.filename) != here
        and os.sep + "importlib" + os.sep not in f.filename
    ]
    if not frames:
        return ""
    frame = frames[-1]
    path = frame.filename
    try:
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            path = relative
    except ValueError:
        pass
    return f" ({path}, line {frame.lineno})"


def _check_wsgi_signature(obj: Any, spec: str, called: bool) -> None:
    """Catch `module:create_app` given without its `()`: a plain function that cannot take
    (environ, start_response) would otherwise fail only at the first request."""
    if call_shape.plain(obj):
        if not call_shape.binds_positional(obj, 2):
            hint = "" if called else f"; if it is an app factory, call it: '{spec}()'"
            raise LoadError(f"{spec!r} cannot be called as app(environ, start_response){hint}")
        return
    import inspect

    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return
    try:
        inspect.signature(obj).bind(object(), object())
    except TypeError:
        hint = "" if called else f"; if it is an app factory, call it: '{spec}()'"
        raise LoadError(
            f"{spec!r} cannot be called as app(environ, start_response){hint}"
        ) from None
    except ValueError:  # no signature available
        return


def _load_paste(spec: str) -> Callable[..., Any]:
    """The app of a PasteDeploy file, as gunicorn's --paste loads it (paste.deploy.loadapp,
    relative to the working directory)."""
    try:
        from paste.deploy import loadapp
    except ImportError as e:
        raise LoadError(f"app {spec!r} needs the PasteDeploy package: {e}") from e
    try:
        app = loadapp(spec, relative_to=os.getcwd())
    except Exception as e:
        raise LoadError(f"PasteDeploy app {spec!r}: {_describe(e)}") from e
    if not callable(app):
        raise LoadError(f"PasteDeploy app {spec!r} is not callable")
    return app


def _load_file(spec: str) -> str:
    """Run the file of `file:PATH#APP` (relative to the working directory) as a module named
    after its path, as uWSGI's wsgi-file does (uwsgi_file_PATH), and return that name."""
    import importlib.machinery
    import importlib.util
    import re

    path = spec[len(FILE_PREFIX):].rpartition("#")[0]
    if not os.path.isfile(path):
        raise LoadError(f"app file {path!r} not found (in {os.getcwd()})")
    name = "uwsgi_file_" + re.sub(r"[^A-Za-z0-9_]", "_", path)
    if name in sys.modules:
        return name
    loader = importlib.machinery.SourceFileLoader(name, path)
    module_spec = importlib.util.spec_from_loader(name, loader)
    assert module_spec is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    _put_cwd_first_on_sys_path()
    try:
        loader.exec_module(module)
    except (Exception, SystemExit) as e:
        del sys.modules[name]
        raise LoadError(f"cannot run app file {path!r}: {_describe(e)}{_where(e)}") from e
    return name

"""What `inspect` says of a plain Python function, read from its code object: its parameters'
names in `inspect.signature` order, whether it binds N positional arguments, whether it is a
coroutine function. The app's loading asks these of the app (loader.py, asgi.py) in the master,
before it forks its workers.

Why not inspect: importing it imports ast, dis and tokenize, about 0.9 MB of resident memory
in the master and again in every worker forked from it, to look at one function. A function
whose signature inspect would read from somewhere else (`__wrapped__`, `__signature__`, a
partialmethod) and every other callable get None here: the caller asks inspect then.
"""

from __future__ import annotations

import types

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, List, Optional

#: Code flags (the `inspect` module's CO_VARARGS, CO_VARKEYWORDS, CO_COROUTINE).
VARARGS, VARKEYWORDS, COROUTINE = 0x04, 0x08, 0x80


def plain(obj: Any) -> bool:
    """`obj` is a function whose signature is its code object's (inspect reads it so)."""
    if type(obj) is not types.FunctionType:
        return False
    own = obj.__dict__
    return not ("__wrapped__" in own or "__signature__" in own or "_partialmethod" in own)


def parameter_names(f: types.FunctionType) -> List[str]:
    """A plain function's parameters in `inspect.signature(f).parameters` order: positional,
    *args, keyword-only, **kwargs."""
    code = f.__code__
    n, k = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    out = list(names[:n])
    rest = n + k
    if code.co_flags & VARARGS:
        out.append(names[rest])
        rest += 1
    out.extend(names[n:n + k])
    if code.co_flags & VARKEYWORDS:
        out.append(names[rest])
    return out


def binds_positional(f: types.FunctionType, count: int) -> bool:
    """`inspect.signature(f).bind(*count arguments)` succeeds (a plain function)."""
    code = f.__code__
    defaults = len(f.__defaults__ or ())
    if count > code.co_argcount and not code.co_flags & VARARGS:
        return False
    if code.co_argcount - defaults > count:
        return False
    keyword_only = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    given = f.__kwdefaults__ or {}
    return all(name in given for name in keyword_only)


def is_coroutine_function(f: types.FunctionType) -> bool:
    """`inspect.iscoroutinefunction(f)` (a plain function)."""
    return bool(f.__code__.co_flags & COROUTINE)


def asgi_names(obj: Any) -> Optional[bool]:
    """For a plain function: whether inspect would call it an ASGI app (a coroutine function,
    or one whose first three parameters are scope, receive, send); None for anything else."""
    if not plain(obj):
        return None
    return is_coroutine_function(obj) or parameter_names(obj)[:3] == ["scope", "receive", "send"]

"""Answers a JSON object of the request's environ: str values as they are, every other value
repr'd (so ``wsgi.version`` arrives as ``"(1, 0)"``). A few derived keys starting with ``_``
describe objects that have no useful repr (which methods wsgi.input / wsgi.errors have, whether
wsgi.file_wrapper is callable, the Python types of the wsgi.* flags, which HTTP_ keys are
interned strings)."""

import json
import sys


def interned(key):
    """Is an interned str equal to `key` there already? (An equal str made afresh is interned:
    if one was there, sys.intern returns that one, not the fresh one.)"""
    fresh = "".join(list(key))
    return sys.intern(fresh) is not fresh


def app(environ, start_response):
    out = {}
    for k, v in environ.items():
        out[k] = v if isinstance(v, str) else repr(v)
    inp, err = environ.get("wsgi.input"), environ.get("wsgi.errors")
    out["_input_methods"] = sorted(m for m in ("read", "readline", "readlines", "__iter__")
                                   if hasattr(inp, m))
    out["_errors_methods"] = sorted(m for m in ("write", "writelines", "flush")
                                    if hasattr(err, m))
    out["_file_wrapper_callable"] = repr(callable(environ.get("wsgi.file_wrapper")))
    out["_types"] = {k: type(environ[k]).__name__ for k in
                     ("wsgi.version", "wsgi.url_scheme", "wsgi.multithread",
                      "wsgi.multiprocess", "wsgi.run_once", "wsgi.input_terminated")
                     if k in environ}
    out["_key_types"] = sorted({type(k).__name__ for k in environ})
    out["_interned"] = sorted(k for k in environ if k.startswith("HTTP_") and interned(k))
    out["_environ_type"] = type(environ).__name__
    body = json.dumps(out).encode("ascii")
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]

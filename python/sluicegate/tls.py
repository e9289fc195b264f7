"""TLS credentials: `--certfile`, `--keyfile`, `--ca-certs`, `--cert-reqs`, `--tls-min-version`.

The Rust core reads and checks the files (`_core.load_tls`: the key matches the certificate, the
chain is in order, every certificate is within its validity window; a problem is one line
naming the file). `load(cfg)` runs
once in the process that starts the server, before it binds and before `--user` drops
privileges (so the key may stay readable by root only); the loaded credentials are kept here,
and worker processes forked later inherit them with the rest of the master's memory:
`config.core_config` hands them to each `_core.Server`. `--check-config` runs the same check.
A reload reads them again with `read` (off the signal loop, reading.py) and `adopt`s them only
once they passed: a master's new workers serve them, a single process's running server takes
them with `Server.set_tls`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Optional, Sequence

from .errors import OptionError
from .validated import Config

_loaded: Optional[Any] = None


def wanted(cfg: Config) -> bool:
    """Whether any listener speaks TLS, or TLS options were given."""
    return bool(cfg.certfile) or any(a.tls for a in cfg.bind)


def check_options(cfg: Config) -> None:
    """The options that only make sense together; OptionError names the one missing."""
    if cfg.keyfile and not cfg.certfile:
        raise OptionError("--keyfile needs --certfile (the certificate it is the key of)")
    if any(a.tls for a in cfg.bind) and not cfg.certfile:
        raise OptionError("--bind https:... needs --certfile and --keyfile")
    if cfg.cert_reqs != "none" and not cfg.ca_certs:
        raise OptionError(f"--cert-reqs {cfg.cert_reqs} needs --ca-certs (the CAs of the "
                          "client certificates)")
    if cfg.http3_0rtt and cfg.http3 != "on":
        raise OptionError("--http3-0rtt needs --http3 (0-RTT is HTTP/3's)")
    if cfg.ca_certs and cfg.cert_reqs == "none":
        raise OptionError("--ca-certs without --cert-reqs optional or required asks no "
                          "client for a certificate: give --cert-reqs")


def load(cfg: Config) -> Optional[Any]:
    """Check and load the credentials (None without --certfile), and keep them for the servers
    built from now on; OptionError with the one line naming the file."""
    return adopt(read(cfg))


def read(cfg: Config) -> Optional[Any]:
    """Check and load the credentials (None without --certfile) without keeping them: what a
    reload reads on its own thread (reading.py) before it decides to use them."""
    check_options(cfg)
    if not cfg.certfile:
        return None
    from . import _core
    try:
        return _core.load_tls(cfg.certfile, cfg.keyfile, cfg.ca_certs, cfg.cert_reqs,
                              cfg.tls_min_version)
    except ValueError as e:
        raise OptionError(str(e)) from None


def adopt(credentials: Optional[Any]) -> Optional[Any]:
    """Keep `credentials` (what `read` returned) for the servers built from now on."""
    global _loaded
    _loaded = credentials
    return credentials


def loaded() -> Optional[Any]:
    """What `load` loaded last (None: no TLS)."""
    return _loaded


def settle_sockets(cfg: Config, sockets: Sequence[Any]) -> None:
    """Which sockets speak TLS: `https:` ones, and with --certfile every one not bound as
    `http:` (gunicorn makes every listener TLS when given a certificate)."""
    for s in sockets:
        s.tls = s.address.tls if s.address.tls is not None else bool(cfg.certfile)

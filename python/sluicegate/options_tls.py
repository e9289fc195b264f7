"""The options table's rows for HTTPS served by the core (docs/tls.md): the certificate, its
key, client certificates and the oldest version, in the order --help and docs/options.md list
them. Rows only; options.py puts them in the one table.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional, Tuple

from .option_row import Option
from .parsers import parse_cert_reqs, parse_path, parse_tls_min_version

ROWS: Tuple[Option, ...] = (
    Option(
        "certfile", parse_path, None,
        "Serve HTTPS: the certificate chain (PEM: the server certificate first, then its "
        "intermediates). Every listener then speaks TLS, as with gunicorn, except one bound as "
        "http:HOST:PORT (a plain health port); without it, https:HOST:PORT makes one listener "
        "TLS. The files are read and checked (key matches, chain order, expiry) before binding "
        "and before --user. See docs/tls.md.",
        "FILE", "Optional[str]", core=True,
    ),
    Option(
        "keyfile", parse_path, None,
        "The private key of --certfile (PEM, unencrypted: PKCS#8, SEC1 or PKCS#1). Default: "
        "the key is in the --certfile file.",
        "FILE", "Optional[str]", core=True,
    ),
    Option(
        "ca_certs", parse_path, None,
        "The CAs (PEM) whose client certificates are accepted, for --cert-reqs optional or "
        "required (mutual TLS).",
        "FILE", "Optional[str]", core=True,
    ),
    Option(
        "cert_reqs", parse_cert_reqs, "none",
        "Client certificates: none (not asked for), optional (asked for; a valid one sets "
        "SSL_CLIENT_VERIFY=SUCCESS), required (refused without one). gunicorn's 0, 1, 2 too.",
        "MODE", "str", core=True,
    ),
    Option(
        "tls_min_version", parse_tls_min_version, "1.2",
        "The oldest TLS version served: 1.2 or 1.3 (nothing older exists here).",
        "VERSION", "str", core=True,
    ),
)

"""The options table's rows (options.py) for the listening sockets beside --bind (options_start.py):
the backlog, SO_REUSEPORT, and the mode and owner of unix socket files (listeners.py).
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional, Tuple

from .option_row import Option
from .parsers import parse_bool, parse_count, parse_socket_mode, parse_socket_owner


#: How the sockets listen, and their files.
LISTEN: Tuple[Option, ...] = (
    Option(
        "backlog", parse_count, "2048",
        "Most connections waiting to be accepted (listen(2) backlog; the kernel may cap it at "
        "net.core.somaxconn).",
        "N", "int",
    ),
    Option(
        "reuse_port", parse_bool, "false",
        "Set SO_REUSEPORT on the TCP listeners before binding, so that other processes that "
        "set it too (another sluicegate, a new release started beside the old one) can bind "
        "the same address and port; the kernel then spreads new connections over them.",
        "", "bool", switch=True,
    ),
    Option("socket_mode", parse_socket_mode, None,
           "The permission bits (octal) of every unix socket file bound from --bind, unless "
           "its own ;mode= says otherwise (uWSGI's chmod-socket, e.g. 660 so that nginx's "
           "group may connect). Set before the socket listens. Unset: as the umask makes it.",
           "MODE", "Optional[int]"),
    Option("socket_owner", parse_socket_owner, None,
           "The owner of every unix socket file bound from --bind, USER[:GROUP] (uWSGI's "
           "chown-socket), unless its own ;owner= and ;group= say otherwise. Needs root to "
           "give a file away. Unset: the starting user.",
           "USER[:GROUP]", "Optional[str]"),
    Option("vacuum", parse_bool, "false",
           "uWSGI's vacuum: remove the unix socket files and the --pid file at exit. "
           "sluicegate always does (listeners.py, pidfile.py: each only while it is still "
           "the one this server made), with or without this switch, which is accepted so "
           "that uWSGI's configurations read the same.",
           "", "bool", switch=True),
)

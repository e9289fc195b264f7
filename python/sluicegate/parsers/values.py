"""Parsers of plain values: numbers, byte sizes, seconds, switches, paths, text, octal masks,
KEY=VALUE items. Each takes the value as written (a str from the command line or the
environment, or a Python value given to serve()) and returns the typed value, or raises
ValueError with a one-line reason that does not repeat the value (resolution.validate adds
the option and the value). The other parsers of this package build on these.
"""

from __future__ import annotations

import math
import os
import re

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional


# Upper bounds that keep a value inside the Rust core's integer and Duration types (a u64 byte
# count; Duration::from_secs_f64 panics on overflow). Far beyond any sensible setting.
_MAX_BYTES = 2**63 - 1
_MAX_COUNT = 2**31 - 1
_MAX_SECONDS = 1e9


def _int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    raise ValueError(f"expected {what}")


def parse_str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    return value


def _unquote(text: str) -> str:
    """The text without spaces around it and one pair of matching quotes."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return text


_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(value: object, minimum: int = 0) -> int:
    """A byte count: `65536`, or with a binary suffix `64k`, `16M`, `1G` (k = 1024 bytes)."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)\s*", value)
        if not m:
            raise ValueError("expected a byte count such as 65536, 64k, 16M or 1G")
        n = int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    else:
        n = _int(value, "a byte count such as 65536, 64k, 16M or 1G")
    if not minimum <= n <= _MAX_BYTES:
        raise ValueError(f"must be at least {minimum}" if n < minimum else "is too large")
    return n


def parse_positive_size(value: object) -> int:
    return parse_size(value, minimum=1)


def parse_count(value: object) -> int:
    """A whole number of at least 1."""
    n = _int(value, "a whole number")
    if not 1 <= n <= _MAX_COUNT:
        raise ValueError("must be at least 1" if n < 1 else "is too large")
    return n


def parse_count_or_zero(value: object) -> int:
    """A whole number, 0 or more."""
    n = _int(value, "a whole number")
    if not 0 <= n <= _MAX_COUNT:
        raise ValueError("must be 0 or more" if n < 0 else "is too large")
    return n


def parse_seconds_or_off(value: object) -> float:
    """A duration in seconds, >= 0; 0 is off."""
    seconds = _seconds(value)
    if not seconds >= 0:
        raise ValueError("must be a number of seconds >= 0 (0: off)")
    return seconds + 0.0  # -0.0 is 0.0


def parse_seconds(value: object) -> float:
    """A duration in seconds, > 0: `10`, `2.5`."""
    seconds = _seconds(value)
    if not seconds > 0:
        raise ValueError("must be a number of seconds greater than 0")
    return seconds


def _seconds(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number of seconds, not a boolean")
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError("expected a number of seconds such as 30 or 2.5") from None
    if not math.isfinite(seconds):
        raise ValueError("must be a finite number of seconds")
    if seconds > _MAX_SECONDS:
        raise ValueError("is too large")
    return seconds


def parse_bool(value: object) -> bool:
    """A switch: true/false, yes/no, on/off, 1/0 (and Python booleans, for serve())."""
    if isinstance(value, bool):
        return value
    text = parse_str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


def parse_path(value: object) -> Optional[str]:
    """A file path; '' or None: off."""
    if value is None:
        return None
    text = os.fspath(value) if isinstance(value, os.PathLike) else parse_str(value)
    return text or None


def parse_path_or_off(value: object) -> Optional[str]:
    """A file path; 'off' (any case), '' or None: none. For the options whose --help default
    reads "off" (saying it must not make or read a file named off: that one is './off')."""
    text = parse_path(value)
    if text is None or text.lower() == "off":
        return None
    return text


def parse_chdir(value: object) -> Optional[str]:
    if value is None:
        return None
    text = os.fspath(value) if isinstance(value, os.PathLike) else parse_str(value)
    if not text:
        return None
    if not os.path.isdir(text):
        raise ValueError("no such directory")
    return text


def parse_env_item(value: object) -> str:
    """KEY=VALUE, KEY a non-empty name without '=' or NUL."""
    text = parse_str(value)
    key, sep, _ = text.partition("=")
    if not sep or not key.strip() or "\0" in text:
        raise ValueError("expected KEY=VALUE, e.g. DJANGO_SETTINGS_MODULE=mysite.settings")
    return text


def parse_proc_name(value: object) -> Optional[str]:
    """Any printable text; '' or None: the process titles are left alone."""
    if value is None:
        return None
    text = parse_str(value).strip()
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        raise ValueError("cannot contain control characters")
    return text or None


def parse_umask(value: object) -> Optional[int]:
    """Octal permission bits to mask, like the shell's umask (`022`, `0o027`); None: unchanged."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        mask = value
    else:
        text = str(value).strip().lower().removeprefix("0o")
        try:
            mask = int(text, 8)
        except ValueError:
            raise ValueError("expected octal permission bits, e.g. 022") from None
    if not 0 <= mask <= 0o777:
        raise ValueError("expected octal permission bits from 000 to 777")
    return mask

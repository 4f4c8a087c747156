"""The ``format`` values the schema check asserts (date, date-time, time, email, uuid, ipv4).

Shared by the compiled path (compiler.py, checks.py) and the delegated one (delegate.py), so both say the same.
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

__all__ = ["FORMATS"]


# --- formats ---------------------------------------------------------------------
# Each is RFC 3339 / RFC 5321 as the JSON Schema suite reads them, written out by hand: ASCII digits only,
# nothing after the value (a trailing newline is no date), leap seconds only at 23:59:60 UTC.
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])")
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*|\"(?:[ !#-\[\]-~]|\\[ -~])*\"")  # dot-atom, or a quoted string
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})+")  # at least one dot: "bob@localhost" is a model's slip, not an address


def _valid_date(s: str) -> bool:
    if _DATE.fullmatch(s) is None:  # fromisoformat alone also takes "20261015" and "2026-W42-4"
        return False
    try:
        _dt.date.fromisoformat(s)
    except ValueError:
        return False
    return True


def _valid_time(s: str) -> bool:
    m = _TIME.fullmatch(s)
    if m is None:
        return False
    hour, minute, second = int(m[1]), int(m[2]), int(m[3])
    off_h, off_m = (int(m[5]), int(m[6])) if m[4] else (0, 0)
    if hour > 23 or minute > 59 or second > 60 or off_h > 23 or off_m > 59:
        return False
    if second == 60:  # a leap second is 23:59:60 in UTC, whatever the local offset
        sign = 1 if m[4] == "+" else -1
        utc = (hour * 60 + minute - sign * (off_h * 60 + off_m)) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def _valid_datetime(s: str) -> bool:
    return len(s) > 11 and s[10] in "Tt" and _valid_date(s[:10]) and _valid_time(s[11:])


def _valid_email(s: str) -> bool:
    local, at, domain = s.rpartition("@")
    if not at or _LOCAL.fullmatch(local) is None:
        return False
    if domain.startswith("[") and domain.endswith("]"):  # an address literal: [127.0.0.1] or [IPv6:::1]
        literal = domain[1:-1]
        if literal[:5].lower() == "ipv6:":
            try:
                return "%" not in literal and bool(ipaddress.IPv6Address(literal[5:]))
            except ValueError:
                return False
        return _IPV4.fullmatch(literal) is not None
    return _DOMAIN.fullmatch(domain) is not None and all(len(label) <= 63 for label in domain.split("."))


# read-only: a compiled check reads it when compiled, and compiled checks are kept (compiler.compile_schema)
FORMATS: Mapping[str, tuple[Callable[[str], bool], str]] = MappingProxyType({
    "date": (_valid_date, "YYYY-MM-DD"),
    "date-time": (_valid_datetime, "YYYY-MM-DDThh:mm:ss+00:00"),
    "time": (_valid_time, "hh:mm:ss+00:00"),
    "email": (_valid_email, "name@example.com"),
    "uuid": (lambda s: _UUID.fullmatch(s) is not None, "8-4-4-4-12 hex digits"),
    "ipv4": (lambda s: _IPV4.fullmatch(s) is not None, "a.b.c.d"),
})
"""The formats asserted (a value that breaks one is a ``bad_format`` problem); every other ``format`` is
an annotation, as draft 2020-12 makes them all by default. ``lint`` warns about those (AL010)."""

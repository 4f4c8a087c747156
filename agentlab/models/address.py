"""A model server's address (``AGENTLAB_BASE_URL``), read once for everything that shows it or asks it.

``python run.py check --model`` reads it before anything is installed, and ``eval``/``probe --model openai`` before a
run: the same address was read three ways, and a port out of range, an address without ``http://``, a space pasted
after it or a host no resolver takes each ended one of them in a traceback. The standard library and the package's
redaction alone, so that run.py can import it with any Python it accepts.
"""
from __future__ import annotations

import re
import urllib.parse
from typing import NamedTuple

from ..redaction import redact_secrets

__all__ = ["Address", "model_address"]

#: what in an address looks like a key: such a part is never shown
_KEYISH = re.compile(r"sk-|key|token|secret|[A-Za-z0-9_-]{24,}", re.I)


class Address(NamedTuple):
    """``shown``: the address as a reader may see it (no user:password, no query, no key); ``usable``: http or https,
    a host a resolver takes and a port from 1 to 65535; ``url``: the address stripped; ``host``, ``port``: where a
    client connects (the scheme's port when none is written)."""
    shown: str
    usable: bool
    url: str
    host: str = ""
    port: int = 0


def model_address(base_url: str) -> Address:
    url = base_url.strip()  # a space or a newline pasted after it went into every request's path
    try:
        parts = urllib.parse.urlsplit(url)
        given = parts.port  # a ValueError for a port out of range or not a number; 0 is no port either
        port = given if given is not None else (443 if parts.scheme.lower() == "https" else 80)
        (parts.hostname or "").encode("idna")  # a name no resolver takes ("a..b", a label past 63 characters)
    except (ValueError, UnicodeError):
        parts, port = None, 0
    if parts is not None and parts.scheme.lower() in ("http", "https") and parts.hostname and 0 < port < 65536:
        where = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
        return Address(where if _KEYISH.search(parts.path) else where + parts.path, True, url, parts.hostname, port)
    # everything up to the last @ is a user and a password, a "/" in the password too
    shown = re.sub(r"^([a-z][a-z0-9+.-]*://)?.*@", r"\1", url, flags=re.I).split("?", 1)[0].split("#", 1)[0]
    if not shown or len(shown) > 80 or redact_secrets(shown) != shown or _KEYISH.search(shown):
        shown = "?"  # a key pasted where the address goes, or too long to be one: not printed
    return Address(shown, False, url)

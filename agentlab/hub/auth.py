"""The workshop's login: a name, the participant's own password, and the room's password to claim a new name.

The first login with a name claims it, and only with the workshop password the trainer gave the room (the
extra field of JupyterHub's login form); the password typed then becomes that name's own. From then on the
name opens with its own password only, so knowing the workshop password does not let anyone take over a name
already taken. Passwords are kept as scrypt hashes in one file only the hub (root) reads.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any

from .users import NAME

__all__ = ["MIN_PASSWORD", "PasswordBook", "WorkshopAuthenticator"]  # noqa: F822 - the last made on first use

MIN_PASSWORD = 6


def _scrypt(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=2 ** 14, r=8, p=1, dklen=32)


class PasswordBook:
    """Each claimed name's password hash, in a JSON file of mode 0600, and the workshop password's hash."""

    def __init__(self, path: str | Path, workshop_password: str):
        self.path = Path(path)
        self._salt = secrets.token_bytes(16)
        self._workshop = _scrypt(workshop_password, self._salt)
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            return dict(json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return {}

    def claimed(self, name: str) -> bool:
        return name in self._read()

    def login(self, name: str, password: str, workshop_password: str = "") -> bool:
        """True when ``name`` may log in: its own password, or (first time only) the workshop password given."""
        if not NAME.fullmatch(name) or not isinstance(password, str) or not isinstance(workshop_password, str):
            return False
        with self._lock:
            book = self._read()
            if name in book:
                salt = bytes.fromhex(book[name]["salt"])
                return hmac.compare_digest(_scrypt(password, salt), bytes.fromhex(book[name]["hash"]))
            if len(password) < MIN_PASSWORD or not hmac.compare_digest(_scrypt(workshop_password, self._salt),
                                                                        self._workshop):
                return False
            salt = secrets.token_bytes(16)
            book[name] = {"salt": salt.hex(), "hash": _scrypt(password, salt).hex()}
            tmp = self.path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(book, out)
            tmp.replace(self.path)
            return True


@functools.cache
def _authenticator_class() -> type:
    from jupyterhub.auth import Authenticator
    from traitlets import Unicode

    class WorkshopAuthenticator(Authenticator):
        """JupyterHub's side of :class:`PasswordBook` (the workshop password is the form's extra field)."""

        passwords_file = Unicode(config=True, help="where the names' password hashes are kept")
        workshop_password = Unicode(config=True, help="the room's password, needed to claim a new name")

        _book: PasswordBook | None = None

        def book(self) -> PasswordBook:
            if self._book is None:
                self._book = PasswordBook(self.passwords_file, self.workshop_password)
            return self._book

        async def authenticate(self, handler: Any, data: dict[str, str]) -> str | None:
            import asyncio
            name = self.normalize_username(str(data.get("username", "")))
            ok = await asyncio.get_running_loop().run_in_executor(
                None, self.book().login, name, data.get("password", ""), data.get("otp", ""))
            return name if ok else None

    return WorkshopAuthenticator


def __getattr__(attr: str) -> Any:  # JupyterHub is imported only when the hub asks for the class
    if attr == "WorkshopAuthenticator":
        return _authenticator_class()
    raise AttributeError(attr)

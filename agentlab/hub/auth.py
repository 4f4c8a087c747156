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
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from ..i18n import Lang, t
from .users import NAME, valid_name

__all__ = ["MIN_PASSWORD", "PasswordBook", "Refusal", "WorkshopAuthenticator",  # noqa: F822 - made on first use
           "refusal_message", "refusal_text"]

MIN_PASSWORD = 6

#: Why a login was refused, each said on the login form (``hub.login.<reason>`` in the catalogue): a name not of
#: the allowed form, one the workshop keeps for itself, the trainer's name tried with the workshop password, a
#: claimed name with another password, a new name without (or with a wrong) workshop password, a password too short,
#: a new name when every seat of the room has one, a name the trainer deleted.
Refusal = Literal["bad_name", "reserved", "admin", "admin_password", "taken", "no_room_password", "room_password", "short",
                  "full", "retired"]


def _scrypt(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=2 ** 14, r=8, p=1, dklen=32)


class PasswordBook:
    """Each claimed name's password hash, in a JSON file of mode 0600, and the workshop password's hash.

    ``admins``: names the workshop password never claims (the trainer's password is set at launch with
    :meth:`set_password`). Every refused or accepted login costs one scrypt, claimed name or not, so the time
    a login takes does not tell which names are taken; only writing a new claim holds the lock.

    ``seats``: how many names the workshop password may claim in all (0: no cap). Each name is an account that can
    start a server, so one person who knows the workshop password could otherwise claim names until the machine had
    no room left for anyone; past the cap a new name is refused as ``full`` and the names claimed keep logging in.
    A name the trainer deletes (JupyterHub's admin page) gives its seat back and is retired: it never opens or is
    claimed again, so no one else is handed the home it leaves on the machine."""

    def __init__(self, path: str | Path, workshop_password: str, admins: Iterable[str] = (), seats: int = 0):
        self.path = Path(path)
        self._salt = secrets.token_bytes(16)
        self._workshop = _scrypt(workshop_password, self._salt)
        self._admins = frozenset(admins)
        self.seats = seats
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            return dict(json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return {}

    def _write(self, book: dict[str, dict[str, str]]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(book, out)
        tmp.replace(self.path)

    def claimed(self, name: str) -> bool:
        return name in self._read()

    def set_password(self, name: str, password: str) -> None:
        """Make ``password`` the password of ``name`` (claimed or not): the trainer's, set at launch."""
        if not valid_name(name) or len(password) < MIN_PASSWORD:
            raise ValueError("a valid name and a password of at least MIN_PASSWORD characters")
        salt = secrets.token_bytes(16)
        entry = {"salt": salt.hex(), "hash": _scrypt(password, salt).hex()}
        with self._lock:
            book = self._read()
            book[name] = entry
            self._write(book)

    def login(self, name: str, password: str, workshop_password: str = "") -> bool:
        """True when ``name`` may log in: its own password, or (first time only) the workshop password given."""
        return self.refusal(name, password, workshop_password) is None

    def refusal(self, name: str, password: str, workshop_password: str = "") -> Refusal | None:
        """None when ``name`` may log in (and a new name is then claimed), else why not: one of :data:`Refusal`.

        A claimed name is refused as ``taken`` whatever the workshop password: only its own password opens it."""
        if not isinstance(name, str) or not isinstance(password, str) or not isinstance(workshop_password, str):
            return "bad_name"
        if not valid_name(name):
            _scrypt(password, self._salt)  # the same cost as any other refusal
            return "reserved" if NAME.fullmatch(name) else "bad_name"
        entry = self._read().get(name)
        if entry is not None and "hash" not in entry:  # retired: the same cost as any other refusal
            _scrypt(password, self._salt)
            return "retired"
        if entry is not None:
            ok = hmac.compare_digest(_scrypt(password, bytes.fromhex(entry["salt"])), bytes.fromhex(entry["hash"]))
            # the trainer never chose a password in this form (it was set when the hub started): not "taken"
            return None if ok else "admin_password" if name in self._admins else "taken"
        room_ok = hmac.compare_digest(_scrypt(workshop_password, self._salt), self._workshop)  # one scrypt as above
        if name in self._admins:
            return "admin"
        if not room_ok:
            return "no_room_password" if not workshop_password else "room_password"
        if len(password) < MIN_PASSWORD:
            return "short"
        salt = secrets.token_bytes(16)
        made = {"salt": salt.hex(), "hash": _scrypt(password, salt).hex()}
        with self._lock:  # the read-modify-write of the claim only: the first to write wins the name
            book = self._read()
            if name in book:
                return "taken"
            if self.seats and sum(n not in self._admins and "hash" in e for n, e in book.items()) >= self.seats:
                return "full"
            book[name] = made
            self._write(book)
        return None


    def retire(self, name: str) -> None:
        """Give ``name``'s seat back and never let it open or be claimed again (the trainer deleted it). The trainer's
        own name is never retired: the hub sets its password at each start."""
        if name in self._admins:
            return
        with self._lock:
            book = self._read()
            book[name] = {"retired": "1"}
            self._write(book)


def refusal_text(reason: Refusal, name: str, lang: Lang) -> str:
    """What the login form says for ``reason``, in ``lang`` (the catalogue's ``hub.login.<reason>``)."""
    shown = name if len(name) <= 32 else name[:16] + "…"
    return t(f"hub.login.{reason}", lang, name=shown, n=MIN_PASSWORD, rule=t("hub.login.rule", lang))


def refusal_message(reason: Refusal, name: str) -> str:
    """The refusal in English, then in Chinese, one line each (the room is mixed; the page shows both)."""
    return "\n".join(refusal_text(reason, name, lang) for lang in ("en", "zh"))


@functools.cache
def _authenticator_class() -> type:
    from jupyterhub.auth import Authenticator
    from traitlets import Integer, List, Unicode

    class WorkshopAuthenticator(Authenticator):
        """JupyterHub's side of :class:`PasswordBook` (the workshop password is the form's extra field)."""

        passwords_file = Unicode(config=True, help="where the names' password hashes are kept")
        workshop_password = Unicode(config=True, help="the room's password, needed to claim a new name")
        admin_names = List(Unicode(), config=True, help="names the workshop password never claims")
        seats = Integer(0, config=True, help="names the workshop password may claim in all (0: no cap)")

        _book: PasswordBook | None = None

        def book(self) -> PasswordBook:
            if self._book is None:
                self._book = PasswordBook(self.passwords_file, self.workshop_password,
                                          admins={*self.admin_names, *self.admin_users}, seats=self.seats)
            return self._book

        async def authenticate(self, handler: Any, data: dict[str, str]) -> str | None:
            """The name, or a 403 whose message the login form shows: what was wrong, in both languages."""
            import asyncio

            from tornado import web
            name = self.normalize_username(str(data.get("username", "")))
            reason = await asyncio.get_running_loop().run_in_executor(
                None, self.book().refusal, name, data.get("password", ""), data.get("otp", ""))
            if reason is not None:  # the log says the reason's code; the form, the sentences (see write_error)
                refused = web.HTTPError(403, "login refused: %s", reason)
                refused.jupyterhub_message = refusal_message(reason, name)  # type: ignore[attr-defined]
                raise refused
            return name

        def delete_user(self, user: Any) -> None:
            """The trainer deleted ``user`` (the admin page, or the API): its seat is free and its name retired."""
            super().delete_user(user)
            self.book().retire(user.name)

    return WorkshopAuthenticator


def __getattr__(attr: str) -> Any:  # JupyterHub is imported only when the hub asks for the class
    if attr == "WorkshopAuthenticator":
        return _authenticator_class()
    raise AttributeError(attr)

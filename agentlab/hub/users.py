"""Participants as operating-system users: one account and one private home each, the notebooks copied in.

A participant named ``ana`` is the account ``agentlab-ana`` with the home ``<state>/homes/ana`` (mode 0700),
so no other participant's kernel can list or read it. The account has no password and no login shell: the
hub starts its server, nothing else can.
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["NAME", "OS_PREFIX", "SERVICES_USER", "copy_notebooks", "ensure_account", "os_name", "processes_of"]

#: A participant's name: lower case, a letter first, at most 20 characters (the account name stays under 32).
NAME = re.compile(r"[a-z][a-z0-9_-]{0,19}")
OS_PREFIX = "agentlab-"
#: The account the shared services (model, site, Redis) run as: not root, and not any participant.
SERVICES_USER = "agentlab-services"


def os_name(name: str) -> str:
    """The account of participant ``name`` (refused unless the name matches :data:`NAME`)."""
    if not NAME.fullmatch(name):
        raise ValueError("a participant's name is lower-case letters, digits, - or _, a letter first, 20 at most")
    return OS_PREFIX + name


_ACCOUNTS = threading.Lock()  # useradd and usermod lock /etc/passwd: two at once, and one fails


def ensure_account(account: str, home: Path) -> pwd.struct_passwd:
    """The account, created if missing (no password, no shell), and its home: owned by it, mode 0700.

    An account kept from an earlier workshop in another state folder is pointed at this one's home."""
    with _ACCOUNTS:
        try:
            entry = pwd.getpwnam(account)
        except KeyError:
            subprocess.run(["useradd", "--home-dir", str(home), "--no-create-home", "--shell", "/usr/sbin/nologin",
                            "--user-group", account], check=True, capture_output=True)
            entry = pwd.getpwnam(account)
        if entry.pw_dir != str(home):
            subprocess.run(["usermod", "--home", str(home), account], check=True, capture_output=True)
            entry = pwd.getpwnam(account)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)
    return entry


def copy_notebooks(source: Path, home: Path, uid: int, gid: int) -> list[str]:
    """Copy every notebook (and its Chinese twin) the participant does not have: their edits stay theirs.

    A notebook they delete comes back fresh at their server's next start; that is the "fresh copy" path.
    Only ``*.ipynb`` files are copied: the paired ``.py`` sources, and any notes for the trainer, stay out."""
    copied = []
    for src in sorted(source.rglob("*.ipynb")):
        rel = src.relative_to(source)
        if ".ipynb_checkpoints" in rel.parts:
            continue
        dst = home / "notebooks" / rel
        if dst.exists():
            continue
        for folder in reversed([*dst.relative_to(home).parents][:-1]):
            (home / folder).mkdir(exist_ok=True)
            os.chown(home / folder, uid, gid)
        shutil.copyfile(src, dst)
        os.chown(dst, uid, gid)
        copied.append(rel.as_posix())
    return copied


def processes_of(uids: set[int]) -> Iterator[int]:
    """The process ids owned by any of ``uids`` (read from /proc)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    yield int(entry.name)
            except OSError:  # gone meanwhile
                continue

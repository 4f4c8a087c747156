"""Participants as operating-system users: one account and one private home each, the notebooks copied in.

A participant named ``ana`` is the account ``agentlab-ana`` with the home ``<state>/homes/ana`` (mode 0700),
so no other participant's kernel can list or read it. The account has no password and no login shell: the
hub starts its server, nothing else can.
"""
from __future__ import annotations

import os
import pwd
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["NAME", "OS_PREFIX", "RESERVED_ACCOUNTS", "SERVICES_USER", "copy_notebooks", "ensure_account", "os_name",
           "prepare_home", "processes_of", "remove_accounts", "reown", "valid_name", "workshop_accounts"]

#: A participant's name: lower case, a letter first, at most 20 characters (the account name stays under 32).
NAME = re.compile(r"[a-z][a-z0-9_-]{0,19}")
OS_PREFIX = "agentlab-"
#: The account the shared services (model, site, Redis) run as: not root, and not any participant. It does not
#: start with :data:`OS_PREFIX`, so no participant's name can ever map to it.
SERVICES_USER = "agentlabsvc"
#: Accounts no participant may become: the services' own, and the name it had before (an earlier workshop may
#: have left that account on the machine, owning files a participant named ``services`` would then own).
RESERVED_ACCOUNTS = frozenset({SERVICES_USER, OS_PREFIX + "services"})


def valid_name(name: object) -> bool:
    """True when ``name`` is a participant's name: it matches :data:`NAME` and its account is not reserved."""
    return isinstance(name, str) and bool(NAME.fullmatch(name)) and OS_PREFIX + name not in RESERVED_ACCOUNTS


def os_name(name: str) -> str:
    """The account of participant ``name`` (refused unless :func:`valid_name`)."""
    if not valid_name(name):
        raise ValueError("a participant's name is lower-case letters, digits, - or _, a letter first, 20 at most, "
                         "and not one the workshop keeps for itself")
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
            # usermod refuses an account that still runs something: a hub stopped a moment ago may still be
            # reaping its services (seen under load). Give them time; past it, usermod's refusal stands.
            deadline = time.monotonic() + 60
            while any(True for _ in processes_of({entry.pw_uid})) and time.monotonic() < deadline:
                time.sleep(0.2)
            subprocess.run(["usermod", "--home", str(home), account], check=True, capture_output=True)
            entry = pwd.getpwnam(account)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)
    return entry


# What runs in the child, as the participant: every path in their home is theirs to replace with a symlink, so
# nothing there is ever opened by root. A link they planted is skipped (lexists), and a file is created with
# O_EXCL | O_NOFOLLOW: even their own links are not followed.
_AS_PARTICIPANT = r"""
import json, os, stat, sys, time
home, files = sys.argv[1], json.loads(sys.argv[2])
os.umask(0o077)
copied = []
for private in (".kernels", ".tmp"):
    path = os.path.join(home, private)
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):  # a link or a file in its place: set aside (renamed, not
            os.rename(path, f"{path}.moved-{time.time_ns()}")  # followed), the folder made again
    except OSError:
        pass
    try:
        os.mkdir(path, 0o700)
    except OSError:
        pass
    try:  # theirs and closed to others, as made (opened without following a link)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    except OSError:
        pass
for src_path, rel in files:
    dst = os.path.join(home, rel)
    try:
        if os.path.lexists(dst):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(src_path, "rb") as src:
            data = src.read()
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        copied.append(rel)
    except OSError:
        continue
print(json.dumps(copied))
"""


def _notebooks(source: Path) -> list[str]:
    return [src.relative_to(source).as_posix() for src in sorted(source.rglob("*.ipynb"))
            if ".ipynb_checkpoints" not in src.relative_to(source).parts]


def _files(source: Path) -> list[tuple[str, str]]:
    """(where from, where in the home) of each file a participant gets: the notebooks into ``notebooks/``, and the
    guides beside them (``docs/*.md``, ``docs/zh/*.md``, from the folder next to ``source``) into ``docs/``, where the
    notebooks' links lead (``../docs/course.md``, ``../../docs/zh/course.md``): without them every such link
    opened nothing; and the READMEs beside those, which the guides link to."""
    docs = source.parent / "docs"
    guides = sorted([*docs.glob("*.md"), *docs.glob("zh/*.md")]) if docs.is_dir() else []
    readmes = [r for r in (source.parent / "README.md", source.parent / "README.zh.md") if r.is_file()]  # guides link them
    return ([(str(source / rel), f"notebooks/{rel}") for rel in _notebooks(source)]
            + [(str(g), f"docs/{g.relative_to(docs).as_posix()}") for g in guides] + [(str(r), r.name) for r in readmes])


def prepare_home(source: Path, home: Path, uid: int, gid: int) -> list[str]:
    """Copy every notebook (and its Chinese twin) and guide the participant does not have (:func:`_files`), and make
    their kernels' socket folder (``.kernels``) and their temporary folder (``.tmp``), mode 0700; the files copied,
    as paths in their home. Their edits stay theirs.

    A notebook they delete comes back fresh at their server's next start; that is the "fresh copy" path.
    Only the notebooks (``*.ipynb``) and the guides are copied: the paired ``.py`` sources, and any notes for the trainer, stay out.
    Everything is done by a child process that is the participant (their uid and gid, no other group) before it
    touches anything: a symlink they plant in their home then leads only where they could go themselves, never
    where root can (root following ``~/notebooks -> /etc`` would have made /etc theirs)."""
    import json
    import sys
    done = subprocess.run([sys.executable, "-I", "-c", _AS_PARTICIPANT, str(home), json.dumps(_files(source))], user=uid, group=gid, extra_groups=[], cwd="/",
                          env={"PATH": os.defpath}, capture_output=True, text=True, timeout=120, check=True)
    return list(json.loads(done.stdout))


def reown(home: Path, uid: int, gid: int) -> int:
    """Give back to the participant (``uid``, ``gid``) what their home holds under a removed account's ids; the
    number of entries re-owned. ``run.py hub --remove-accounts`` ends a workshop's accounts and keeps their homes:
    made again at the next start, an account gets new ids, and its own files were a stranger's (its server could not
    start: "Exception occurred in preexec_fn"). Only ids no account has any more are changed (root's and another
    account's never), links are re-owned as links and never followed, and the walk holds each folder open as it goes
    (``os.fwalk``), so a folder swapped for a link leads nowhere. Nothing of the participant runs then (a removed
    account's processes were ended first), and the whole walk is made only when the home's first level shows such
    an id."""
    def orphan(st: os.stat_result) -> bool:
        if st.st_uid in (uid, 0):
            return False
        try:
            pwd.getpwuid(st.st_uid)
            return False
        except KeyError:
            return True

    try:
        top = [os.lstat(p) for p in (home, *home.iterdir())]
    except OSError:
        return 0
    if not any(orphan(st) for st in top):
        return 0
    done = 0
    if orphan(os.lstat(home)):
        os.lchown(home, uid, gid)
        done += 1
    for _, dirs, files, folder in os.fwalk(home, follow_symlinks=False):
        for entry in (*dirs, *files):
            try:
                if orphan(os.stat(entry, dir_fd=folder, follow_symlinks=False)):
                    os.chown(entry, uid, gid, dir_fd=folder, follow_symlinks=False)
                    done += 1
            except OSError:
                continue
    return done


def copy_notebooks(source: Path, home: Path, uid: int, gid: int) -> list[str]:
    """The notebooks :func:`prepare_home` copied (the same call: the copy is always made as the participant)."""
    return prepare_home(source, home, uid, gid)


def processes_of(uids: set[int]) -> Iterator[int]:
    """The process ids owned by any of ``uids`` that still run (read from /proc); a zombie, dead and waiting for its
    parent to read its exit status, runs nothing and is not counted."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    yield int(entry.name)
            except (OSError, IndexError):  # gone meanwhile
                continue


def workshop_accounts() -> list[str]:
    """The accounts workshops made on this machine (participants' and the services'), which outlive a hub on purpose:
    a participant's files and claims are theirs again at the next start."""
    return sorted(p.pw_name for p in pwd.getpwall() if p.pw_name.startswith(OS_PREFIX) or p.pw_name == SERVICES_USER)


def remove_accounts() -> tuple[list[str], list[str]]:
    """Delete every workshop account that runs nothing (their homes, in a hub's state folder, are left to the
    trainer). Returns (removed, still running: left as they are, a hub may be using them)."""
    removed, running = [], []
    with _ACCOUNTS:
        for name in workshop_accounts():
            try:
                uid = pwd.getpwnam(name).pw_uid
            except KeyError:  # removed meanwhile
                continue
            if any(True for _ in processes_of({uid})):
                running.append(name)
                continue
            subprocess.run(["userdel", name], check=True, capture_output=True)
            removed.append(name)
    return removed, running

"""Files that several replicas of the site share (docs/site.md#several-replicas).

Replicas serving one data folder are separate processes: a ``threading.Lock`` in one does
not hold another. Three tools keep a shared file whole:

* :func:`locked`: an exclusive lock on a lock file, held across processes (``fcntl.flock``
  on POSIX, ``msvcrt.locking`` on Windows), for a read-modify-write or an append-and-rotate;
* :func:`write_atomic`: the new text goes to a temporary file in the same folder, which then
  replaces the old one in one step (``os.replace``): a reader sees the old file or the new
  one, never half of either;
* :func:`load_json`: a file that is missing, unreadable or not JSON reads as the default,
  so a damaged cache costs a fresh answer rather than a ``500``.

The lock is released by the operating system when its process dies, so a replica killed
while holding it blocks nobody.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["hold", "let_go", "load_json", "locked", "write_atomic"]

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt
    import time

    def _acquire(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)  # msvcrt locks bytes from the current position: always byte 0
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # retries for about 10 s, then raises: wait on
                return
            except OSError:
                time.sleep(0.05)

    def _release(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _acquire(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _release(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

def hold(fd: int) -> None:
    """Take the exclusive lock of the open lock file ``fd`` (waits for it); :func:`let_go` gives it back.
    For a writer that keeps its lock file open (the logs); :func:`locked` opens one per use."""
    _acquire(fd)


def let_go(fd: int) -> None:
    _release(fd)


# Each use opens the lock file afresh: two threads of one process then hold two open files,
# which exclude each other just as two processes do (flock belongs to the open file).
_opening = threading.Lock()


@contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created empty if missing) until the block ends."""
    with _opening:
        fd = os.open(str(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd)
        try:
            yield
        finally:
            _release(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` in one step: readers never see a partial file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        for attempt in range(50):
            try:
                os.replace(tmp, path)
                return
            except PermissionError:  # Windows: a reader has the file open for a moment
                if attempt == 49:
                    raise
                threading.Event().wait(0.02)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_json(path: str | Path, default: Any = None) -> Any:
    """``path``'s JSON, or ``default`` when it is missing, unreadable or broken."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past what the parser takes
        return default

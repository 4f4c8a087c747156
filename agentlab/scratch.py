"""Folders a notebook or the app works in for as long as its kernel lives, and not after.

A folder made with ``tempfile.mkdtemp`` stays when the kernel ends. Each run of a notebook left one behind (a skill
site's database and logs, four weeks of stored runs, a claims file), and each log a reader uploaded to the app stayed
in the machine's temporary folder, for anyone with access to the machine, until someone cleaned it up. On a shared
workshop machine they piled up. :func:`scratch_folder` makes a folder that is removed when this process ends
normally (a kernel shut down, a script that returns); :func:`forget` removes one at once. The workbook's notebooks, its
app's uploads and the evaluations that need a site of their own all make their folders here.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

__all__ = ["forget", "scratch_folder"]

# the folders of this process: each TemporaryDirectory removes its own when collected, at the latest at exit
_KEPT: dict[Path, tempfile.TemporaryDirectory] = {}


def scratch_folder(prefix: str = "agentlab-") -> Path:
    """A new empty folder, readable by this user alone, removed with everything in it when the process ends."""
    folder = tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True)
    path = Path(folder.name)
    _KEPT[path] = folder
    return path


def forget(path: Path | str | None) -> None:
    """Remove ``path`` now, if it is one of :func:`scratch_folder`'s (or inside one of them: its whole folder).
    Anything else is left alone. What cannot go yet (a file still open, on Windows) is tried again at exit."""
    if path is None:
        return
    path = Path(path)
    for folder in (path, *path.parents):
        kept = _KEPT.pop(folder, None)
        if kept is not None:
            kept.cleanup()
            if folder.exists():
                _LEFT.add(folder)
            return


_LEFT: set[Path] = set()  # forgotten, but something in them was still open: removed at exit


@atexit.register
def _sweep() -> None:
    for folder in _LEFT:
        shutil.rmtree(folder, ignore_errors=True)

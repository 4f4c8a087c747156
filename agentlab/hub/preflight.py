"""What the hub checks before it starts, so that it never starts a room it cannot serve.

Two checks, each said one line per finding in the trainer's language (the catalogue's ``hub.preflight.*`` and
``hub.closed_folders``), and the hub refuses to start on any:

* :func:`closed_folders`: every participant's account and the services' account run the shared environment's
  Python and import ``agentlab`` from the checkout. A folder on the way that other accounts cannot pass through
  (``/root`` is 0700 on many machines, and pyenv installs under it) makes every server and service fail. The hub
  names those folders and opens them (``o+x``: pass through, never list or read) only when the trainer asks with
  ``--fix-permissions`` (:func:`open_folders`).
* :func:`missing_imports`: that Python, run as the services' account, imports what each piece of the room needs
  (:data:`PIECES`): a missing extra made every participant's start fail and the site restart every 30 s, silently.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PIECES", "Missing", "PythonDoesNotStart", "closed_folders", "missing_imports", "needed_folders",
           "open_folders"]

#: Each piece of the room and the modules its processes import (a piece's name is ``hub.piece.<name>`` in the
#: catalogue). agentlab's own modules are imported, so a missing dependency of theirs shows too; ``model`` is
#: checked only when the hub starts the shared model.
PIECES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("notebook", ("jupyterhub.singleuser", "jupyterlab", "ipykernel")),
    ("workbook", ("agentlab", "ipywidgets", "pandas", "matplotlib", "openai")),
    ("site", ("fastapi", "uvicorn", "httpx", "mcp", "agentlab.site.app")),
    ("redis", ("redis", "agentlab.redis_store")),
    ("culler", ("jupyterhub_idle_culler",)),
    ("trainer", ("agentlab.hub.progress", "jupyterhub.services.auth")),
    ("model", ("xllamacpp", "agentlab.hub.model_gate", "starlette", "uvicorn", "httpx")),  # the gate in front of it
)

# run by the environment's own Python, each failure as one line: agentlab's own entry modules are imported (they
# import what their process needs: the site's app pulls FastAPI, uvicorn's config, MCP); the others are found, not
# imported (pandas, openai and JupyterLab take seconds to import on a busy machine, and a missing extra is the fault)
_CHILD = """
import importlib, importlib.util, json, sys
out = {}
for m in sys.argv[1:]:
    try:
        if m.startswith('agentlab.'):
            importlib.import_module(m)
        elif importlib.util.find_spec(m) is None:
            raise ModuleNotFoundError('No module named ' + repr(m))
    except BaseException as e:
        out[m] = ((type(e).__name__ + ': ' + str(e)).splitlines() or [''])[0][:200]
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Missing:
    """A module a piece of the room needs and the environment cannot import."""

    piece: str    # a name of :data:`PIECES`
    module: str
    error: str    # the import's error, one line ("ModuleNotFoundError: No module named 'uvicorn'")


class PythonDoesNotStart(RuntimeError):
    """The environment's Python does not run at all for that account (``str()``: its last error line)."""


def missing_imports(python: Path, pythonpath: Sequence[str | Path], *, model: bool = True, user: str | None = None,
                    timeout: float = 180) -> list[Missing]:
    """What ``python`` cannot import of :data:`PIECES`, run as ``user`` (None: this process's) with ``pythonpath``.

    Raises :class:`PythonDoesNotStart` when ``python`` does not run or says nothing readable."""
    wanted = [(piece, m) for piece, modules in PIECES if model or piece != "model" for m in modules]
    env = {"PATH": os.defpath, "PYTHONPATH": os.pathsep.join(map(str, pythonpath)), "HOME": "/",
           "MPLBACKEND": "Agg"}
    as_user = {"user": user, "group": user, "extra_groups": []} if user else {}
    try:
        done = subprocess.run([str(python), "-c", _CHILD, *dict.fromkeys(m for _, m in wanted)], cwd="/", env=env,
                              capture_output=True, text=True, timeout=timeout, **as_user)  # type: ignore[call-overload]
    except (OSError, subprocess.SubprocessError) as exc:
        raise PythonDoesNotStart(f"{type(exc).__name__}: {exc}") from None
    try:
        failed = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        lines = [x for x in done.stderr.splitlines() if x.strip()] or [f"exit {done.returncode}"]
        raise PythonDoesNotStart(lines[-1][:200]) from None
    return [Missing(piece, m, str(failed[m])) for piece, m in wanted if m in failed]


def needed_folders(python: Path, *paths: Path) -> list[Path]:
    """Every folder another account must pass through to run ``python`` and reach ``paths``: those above the
    interpreter (as named, and its real file), above and at its base install (``sys.base_prefix``, the standard
    library), and above each of ``paths``."""
    try:
        base = subprocess.run([str(python), "-c", "import sys; print(sys.base_prefix)"], capture_output=True,
                              text=True, timeout=60, env={"PATH": os.defpath}).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        base = ""
    # the folders above each path to reach; the standard library's folder is entered, so it counts itself too
    places = [python.absolute(), python.resolve(), *(p.absolute() for p in paths)]
    seen: dict[Path, None] = {}
    for place in places:
        for folder in reversed(place.parents):
            seen.setdefault(folder, None)
    if base:
        for folder in [*reversed((Path(base) / "lib").parents), Path(base) / "lib"]:
            seen.setdefault(folder, None)
    return list(seen)


def closed_folders(folders: Iterable[Path]) -> list[Path]:
    """The folders of ``folders`` that other accounts cannot pass through (no execute bit for others)."""
    closed = []
    for folder in folders:
        try:
            mode = folder.stat().st_mode
        except OSError:
            continue  # not there: nothing to pass through (what is missing is said elsewhere)
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            closed.append(folder)
    return closed


def open_folders(folders: Iterable[Path]) -> None:
    """Let every account pass through ``folders`` (``o+x``), nothing more: listing and reading stay as they were.
    Only when the trainer asks (``python run.py hub --fix-permissions``)."""
    for folder in folders:
        folder.chmod(stat.S_IMODE(folder.stat().st_mode) | stat.S_IXOTH)

"""The environment a participant gets, built the way they build it, for the tests that must run in it.

A participant clones the repository and types ``python run.py lab``: that installs ``requirements.txt`` pinned by
``constraints.txt`` into ``.venv`` and nothing else. The developers' set (``requirements-dev.txt``: pytest, the
frameworks, the hub...) is never there, so a notebook that needs a package only the developers have must fail here,
as it would on a laptop. So: a copy of the checkout's files (``.participant/checkout``, what ``git ls-files`` lists,
as a fresh clone has them), set up by ``run.py lab`` itself with the oldest Python 3.11 on the machine (Debian 12's
own 3.11.2 where it exists), and a Jupyter kernel of that environment in which

* the machine's own fonts are hidden (a laptop may have no font that draws Chinese: the workbook must bring its own),
* the shared datasets are absent (a laptop does not have ../shared/datasets).

Shared by pytest-xdist's workers through a lock file: the first builds, the others wait and reuse it. The copy is
brought in step with the checkout at each session; ``run.py``'s own stamp decides whether anything is reinstalled.
"""
from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from conftest import ROOT, free_port, stop_group

from agentlab.site.files import write_atomic

HOME = ROOT / ".participant"
CHECKOUT = HOME / "checkout"
KERNELS = HOME / "kernels"
KERNEL = "agentlab-participant"
ABSENT = HOME / "no-datasets-here"
#: where the timings of the last fresh ``run.py lab`` are kept (read by the closing notes and docs/workshop.md)
TIMES = HOME / "times.json"

#: Run at the kernel's start (IPython's startup folder): matplotlib sees only the fonts inside the environment
#: (its own DejaVu and the workbook's Chinese font), never the machine's, as on a laptop with no Chinese font.
HIDE_FONTS = '''
import sys
from pathlib import Path

import matplotlib.font_manager as _fm

def _hide_the_machines_fonts():
    inside = str(Path(sys.prefix).resolve()) + "/"
    keep = lambda path: str(Path(path).resolve()).startswith(inside)  # noqa: E731
    _fm.fontManager.ttflist = [f for f in _fm.fontManager.ttflist if keep(f.fname)]
    add = _fm.FontManager.addfont
    _fm.FontManager.addfont = lambda self, path: add(self, path) if keep(path) else None


_hide_the_machines_fonts()
getattr(_fm.fontManager, "_findfont_cached", None) and _fm.fontManager._findfont_cached.cache_clear()
'''


def oldest_python() -> str:
    """The oldest Python 3.11 or newer on this machine: the floor the README promises is the one tested."""
    found: dict[tuple[int, ...], str] = {}
    for exe in {shutil.which("python3.11"), "/usr/bin/python3", shutil.which("python3"), sys.executable} - {None}:
        try:
            out = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True,
                                 text=True, timeout=30, check=True).stdout.split()
        except (OSError, subprocess.SubprocessError):
            continue
        version = tuple(int(x) for x in out)
        if version >= (3, 11):
            found.setdefault(version, exe)
    return found[min(found)]


def _tracked() -> list[str]:
    """The files a fresh clone has: tracked and not deleted, plus new files not ignored (a change not yet committed)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and (ROOT / p).is_file() and not p.startswith(".participant/")]


def _sync() -> None:
    """The copy made equal to the checkout's files (``.venv`` and the copy's own ignored files are left alone)."""
    wanted = set(_tracked())
    for rel in wanted:
        src, dest = ROOT / rel, CHECKOUT / rel
        if dest.exists() and dest.stat().st_size == src.stat().st_size and dest.read_bytes() == src.read_bytes():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    for path in list(CHECKOUT.rglob("*")):
        rel = path.relative_to(CHECKOUT).as_posix()
        if path.is_file() and rel not in wanted and not rel.startswith((".venv/", "hub/node_modules/")) \
                and "__pycache__" not in rel and not rel.startswith(".") and "/." not in rel:
            path.unlink()


@contextmanager
def _locked():
    HOME.mkdir(exist_ok=True)
    with open(HOME / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def start_lab(args: list[str], *, timeout: float = 900) -> tuple[subprocess.Popen, str, str, float]:
    """``python run.py lab ARGS`` in the copy, as a participant types it: (process, base URL, token, seconds until
    JupyterLab answered). Its output goes to ``.participant/lab.log``; stop it with ``conftest.stop_group``."""
    port, token = free_port(), "participant-test"
    t0 = time.monotonic()
    log = open(HOME / "lab.log", "w")
    proc = subprocess.Popen([oldest_python(), "run.py", "lab", *args, "--no-browser", f"--port={port}",
                             f"--IdentityProvider.token={token}"], cwd=CHECKOUT, start_new_session=True,
                            stdout=log, stderr=subprocess.STDOUT,
                            env={k: v for k, v in os.environ.items()
                                 if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "JUPYTER", "MPLBACKEND"))})
    log.close()
    base = f"http://127.0.0.1:{port}"
    while not _answers(f"{base}/api/status?token={token}"):
        if proc.poll() is not None or time.monotonic() > t0 + timeout:
            if proc.poll() is None:
                stop_group(proc)
            out = (HOME / "lab.log").read_text(encoding="utf-8", errors="replace")
            raise AssertionError(f"python run.py lab {' '.join(args)} did not answer: {out[-3000:]}")
        time.sleep(0.5)
    return proc, base, token, time.monotonic() - t0


def environment() -> Path:
    """The copy's ``.venv`` Python, the copy set up by a real ``python run.py lab`` (once per test run: the workers of
    one run share it; ``run.py`` itself decides whether anything needs installing)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
    with _locked():
        done = json.loads(TIMES.read_text(encoding="utf-8")) if TIMES.exists() else {}
        if done.get("run") != run_id or not (CHECKOUT / ".venv").exists():
            fresh = not (CHECKOUT / ".venv").exists()
            CHECKOUT.mkdir(parents=True, exist_ok=True)
            _sync()
            proc, _, _, seconds = start_lab([])
            stop_group(proc)
            TIMES.write_text(json.dumps({"run": run_id, "fresh": fresh, "python": oldest_python(),
                                         "lab_answered_s": round(seconds, 1), "at": time.strftime("%Y-%m-%d %H:%M")}),
                             encoding="utf-8")
        _kernel()
    return CHECKOUT / ".venv" / "bin" / "python"


def _kernel(py: Path | None = None, name: str = KERNEL) -> None:
    """A kernel the notebook tests run in (``name``): ``py`` (the participant's Python unless given), the machine's
    fonts and the datasets hidden."""
    py = py or CHECKOUT / ".venv" / "bin" / "python"
    ipython = HOME / "ipython"
    (ipython / "profile_default" / "startup").mkdir(parents=True, exist_ok=True)
    settle(ipython / "profile_default" / "startup" / "00-hide-the-machines-fonts.py", HIDE_FONTS)
    spec = KERNELS / name
    spec.mkdir(parents=True, exist_ok=True)
    settle(spec / "kernel.json", json.dumps({
        "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"agentlab {name}", "language": "python",
        "env": {"IPYTHONDIR": str(ipython), "AGENTLAB_DATASETS": str(ABSENT), "MPLCONFIGDIR": str(HOME / "mpl"),
                "PYTHONPATH": ""}}))


def settle(path: Path, text: str) -> None:
    """``path`` holding ``text``: left alone when it already does, else replaced in one step. Another worker may be
    starting a kernel from it right now (its kernel.json, its startup file), and a file rewritten in place is empty
    for a moment: a kernel started then failed with a JSON error, or started without the fonts hidden."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except FileNotFoundError:
        pass
    write_atomic(path, text)


def kernel_class(name: str = KERNEL) -> type:
    """A kernel manager class for one of these kernels: ``NotebookClient(nb, kernel_name=name,
    kernel_manager_class=kernel_class(name))``. nbclient then owns the manager and shuts the kernel down after the
    run (a manager handed in as ``km=`` is the caller's, and its kernel outlived the test). The workbook's own
    (agentlab.workbook.kernels): sockets of its own, no wait for a message longer than a second unchecked."""
    from jupyter_client.kernelspec import KernelSpecManager
    from traitlets import default

    from agentlab.workbook import kernels

    class Kernels(kernels.KernelManager):
        @default("kernel_spec_manager")
        def _only_ours(self) -> KernelSpecManager:
            return KernelSpecManager(kernel_dirs=[str(KERNELS)])

    Kernels.__name__ = f"Kernels_{name.replace('-', '_')}"
    return Kernels


BINDER = HOME / "binder-env"


def binder_environment() -> Path:
    """What repo2docker does with binder/ (no Docker engine needed): an environment of the runtime's Python,
    ``pip install -r binder/requirements.txt`` from the repository's folder, then ``binder/postBuild`` with that
    environment first on PATH. Returns its Python; a kernel named ``binder`` runs in it.

    The environment is made afresh whenever what decides its third-party packages changed (binder/requirements.txt,
    constraints.txt, pyproject.toml, the Python and its version) or what postBuild writes into it (binder/postBuild,
    run.py's postbuild(), the Jupyter settings it merges): 40 of a fresh build's 54 s are those packages, the same
    every run. A fresh clone (CI) always builds it whole, so a pin no longer installable shows there.
    Otherwise the workbook is uninstalled and the same two steps run again on it, so the package, its data and the
    Jupyter settings are always this checkout's, installed as repo2docker installs them."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
    with _locked():
        stamp = HOME / "binder-run"
        py = BINDER / "bin" / "python"
        if stamp.exists() and stamp.read_text(encoding="utf-8") == run_id and py.exists():
            return py  # built by this run already (another worker, another module)
        CHECKOUT.mkdir(parents=True, exist_ok=True)
        _sync()
        python = oldest_python()
        # the interpreter itself (a path may stay while its Python is upgraded), what decides the packages, and what
        # postBuild writes into the environment (run.py's postbuild(), the settings it merges)
        version = subprocess.run([python, "-c", "import sys; print(sys.version, sys.base_prefix)"],
                                 capture_output=True, text=True, check=True).stdout
        digest = hashlib.sha256(f"{os.path.realpath(python)}\0{version}".encode())
        run_py = (CHECKOUT / "run.py").read_text(encoding="utf-8")
        postbuild = next(ast.get_source_segment(run_py, f) or "" for f in ast.parse(run_py).body
                         if isinstance(f, ast.FunctionDef) and f.name == "postbuild")
        digest.update(postbuild.encode())
        settings = sorted(p.relative_to(CHECKOUT).as_posix() for p in (CHECKOUT / "etc" / "jupyter").rglob("*")
                          if p.suffix in (".json", ".py"))
        for rel in ("binder/requirements.txt", "binder/postBuild", "constraints.txt", "pyproject.toml", *settings):
            digest.update(rel.encode() + b"\0" + (CHECKOUT / rel).read_bytes())
        packages = BINDER / ".packages"
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))},
               "PATH": f"{BINDER / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "NB_PYTHON_PREFIX": str(BINDER)}
        if py.exists() and packages.exists() and packages.read_text(encoding="utf-8") == digest.hexdigest():
            subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", "agentlab"], env=env, check=True)
        else:
            if BINDER.exists():
                shutil.rmtree(BINDER)
            subprocess.run([python, "-m", "venv", str(BINDER)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "-r", "binder/requirements.txt"], cwd=CHECKOUT, env=env, check=True)
        packages.write_text(digest.hexdigest(), encoding="utf-8")
        subprocess.run(["bash", "binder/postBuild"], cwd=CHECKOUT, env=env, check=True)
        _kernel(py, "binder")
        stamp.write_text(run_id, encoding="utf-8")
    return py

"""The Jupyter settings the workbook carries (etc/jupyter/) and its save hook (agentlab/workbook/lab.py).

Opening and saving a notebook leaves the committed bytes as they were, the file browser lists each notebook once
(its paired ``.py`` hidden), and JupyterLab's news and announcements stay off: checked on the settings files
themselves, on jupytext's own contents manager configured from them, and on a real ``jupyter lab`` (its REST API;
with chromium, a browser that opens notebook 00, starts its kernel and saves).
"""
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ROOT, free_port, skip_or_fail, stop_group

from agentlab.workbook import lab

SETTINGS = ROOT / "etc" / "jupyter"
NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("notebooks/zh/*.ipynb"), ROOT / "app" / "agentlab_app.ipynb"])
#: what JupyterLab writes into a notebook's metadata when its kernel starts (the kernel's own description)
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3", "version": "3.11.2"}
TOKEN = "lab-settings-test"


def _server_config():
    from traitlets.config import Config
    return Config(json.loads((SETTINGS / "jupyter_server_config.json").read_text(encoding="utf-8")))


def _contents_manager(root: Path):
    """jupytext's contents manager (the one ``jupyter lab`` runs with jupytext installed), configured from the
    repository's settings file as the server would be."""
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
    from jupytext import build_async_jupytext_contents_manager_class
    cls = build_async_jupytext_contents_manager_class(AsyncLargeFileManager)
    return cls(root_dir=str(root), config=_server_config())


def test_the_settings_files_say_what_the_workbook_needs():
    server = json.loads((SETTINGS / "jupyter_server_config.json").read_text(encoding="utf-8"))
    page = json.loads((SETTINGS / "labconfig" / "page_config.json").read_text(encoding="utf-8"))
    assert page["disabledExtensions"]["@jupyterlab/apputils-extension:announcements"] is True
    assert server["LabApp"]["news_url"] is None
    assert server["ContentsManager"]["pre_save_hook"] == "agentlab.workbook.lab.pre_save"
    from fnmatch import fnmatch
    hide = server["ContentsManager"]["hide_globs"]
    for nb in NOTEBOOKS:
        if nb.parent.name != "app":
            assert any(fnmatch(nb.with_suffix(".py").name, g) for g in hide), nb  # its pair is hidden
        assert not any(fnmatch(nb.name, g) for g in hide), nb  # the notebook is not
    assert not any(fnmatch(n, g) for g in hide for n in ("my_tool.py", "notes.py", "helpers.py"))  # a learner's own


def test_the_pre_save_hook_drops_only_the_machine_keys():
    model = {"type": "notebook", "content": {"metadata": {"language_info": LANGUAGE_INFO, "kernelspec": {"name": "python3"},
                                                          "jupytext": {"formats": "ipynb,py:percent"}}, "cells": []}}
    lab.pre_save(model, path="x.ipynb", contents_manager=None)
    assert model["content"]["metadata"] == {"kernelspec": {"name": "python3"}, "jupytext": {"formats": "ipynb,py:percent"}}
    text = {"type": "file", "content": '{"metadata": {"language_info": 1}}'}
    lab.pre_save(text)
    assert text["content"] == '{"metadata": {"language_info": 1}}'
    lab.pre_save({"type": "notebook", "content": None})  # nothing to do, no error


@pytest.mark.timeout(300)
def test_every_notebook_saves_back_to_the_same_bytes(tmp_path):
    """Open, let a kernel describe itself, save: every notebook (English, Chinese, the app) and its paired .py
    keep their committed bytes, through jupytext's contents manager configured from etc/jupyter."""
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "app", tmp_path / "app", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    cm = _contents_manager(tmp_path)
    paths = [str(nb.relative_to(ROOT)) for nb in NOTEBOOKS]
    files = [*paths, *(p.removesuffix(".ipynb") + ".py" for p in paths)]
    before = {f: (tmp_path / f).read_bytes() for f in files}

    async def open_and_save():
        for p in paths:
            model = await cm.get(p, content=True)
            model["content"]["metadata"]["language_info"] = dict(LANGUAGE_INFO)
            await cm.save({"type": "notebook", "format": "json", "content": model["content"]}, p)

    asyncio.run(open_and_save())
    changed = [f for f in files if (tmp_path / f).read_bytes() != before[f]]
    assert not changed, changed


def test_the_notebooks_carry_the_pinned_jupytext_version():
    """jupytext writes its version into each .py header: a participant's jupytext of another version rewrites that
    line on the first save. The header names the version constraints.txt pins (and so every install has)."""
    pinned = re.search(r"^jupytext==(\S+)$", (ROOT / "constraints.txt").read_text(encoding="utf-8"), re.M).group(1)
    for nb in NOTEBOOKS:
        header = re.search(r"^#\s+jupytext_version: (\S+)$", nb.with_suffix(".py").read_text(encoding="utf-8"), re.M)
        assert header and header.group(1) == pinned, (nb, header and header.group(1), pinned)


def _lab_env(tmp: Path) -> dict:
    """A fresh Jupyter home, the repository's settings on JUPYTER_CONFIG_PATH (as run.py lab sets them), and this
    work tree's agentlab first on the path (the server imports the save hook from it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "JUPYTER_CONFIG_PATH")}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR"):
        env[name] = str(tmp / name.lower())
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    try:
        import run
        env.update(run.lab_env())
    finally:
        sys.path.remove(str(ROOT))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _get(url: str, *, method: str = "GET", body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"token {TOKEN}",
                                                                         "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as reply:
        raw = reply.read().decode("utf-8")
        return json.loads(raw) if reply.headers.get_content_type() == "application/json" else raw


@contextmanager
def _jupyter_lab(tmp: Path, root: Path):
    port = free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
           "--allow-root", f"--IdentityProvider.token={TOKEN}", "--expose-app-in-browser", f"--ServerApp.root_dir={root}"]
    base = f"http://127.0.0.1:{port}"
    log = tmp / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=_lab_env(tmp), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    _get(f"{base}/api/status")
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError("jupyter lab did not start:\n" + log.read_text()[-3000:]) from None
                    time.sleep(0.3)
            yield base
        finally:
            stop_group(proc)


def _git_copy(tmp: Path) -> Path:
    """The notebooks in a git repository of their own, committed, so ``git status`` shows what a save changed."""
    repo = tmp / "repo"
    shutil.copytree(ROOT / "notebooks", repo / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "notebooks"], cwd=repo, check=True)
    return repo


def _modified(repo: Path) -> list[str]:
    return subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.splitlines()


@pytest.mark.timeout(300)
def test_a_real_jupyter_lab_lists_each_notebook_once_saves_unchanged_and_shows_no_news(tmp_path):
    repo = _git_copy(tmp_path)
    with _jupyter_lab(tmp_path, repo / "notebooks") as base:
        for folder, pattern in (("", "notebooks/*.ipynb"), ("zh", "notebooks/zh/*.ipynb")):
            listing = _get(f"{base}/api/contents/{folder}")
            names = sorted(item["name"] for item in listing["content"] if item["type"] == "notebook")
            files = [item["name"] for item in listing["content"] if item["type"] == "file"]
            assert names == sorted(p.name for p in ROOT.glob(pattern)), names
            assert not [f for f in files if f.endswith(".py")], files  # the pairs are hidden
        for path in ("00_start_here.ipynb", "zh/00_start_here.ipynb"):
            model = _get(f"{base}/api/contents/{path}?content=1")
            model["content"]["metadata"]["language_info"] = dict(LANGUAGE_INFO)
            _get(f"{base}/api/contents/{path}", method="PUT",
                 body={"type": "notebook", "format": "json", "content": model["content"]})
        page = _get(f"{base}/lab?token={TOKEN}")
        config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                                      page, re.S).group(1))
        assert "@jupyterlab/apputils-extension:announcements" in config["disabledExtensions"]
        assert not config.get("news_url")
    assert not _modified(repo), _modified(repo)


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_opening_notebook_00_in_a_browser_modifies_nothing(tmp_path):
    """The measured case: JupyterLab opens 00, its kernel starts, the notebook is saved; git sees no change."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed")
    if not Path(chromium).exists():
        skip_or_fail("chromium is not installed (apt-get install chromium)")
    repo = _git_copy(tmp_path)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with _jupyter_lab(tmp_path, repo / "notebooks") as base, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(tmp_path / "profile"), executable_path=chromium, headless=True,
                                                   args=flags)
        try:
            page = ctx.new_page()
            page.goto(f"{base}/lab/tree/00_start_here.ipynb?reset&token={TOKEN}")
            page.wait_for_function("() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                                   " const k = w && w.sessionContext && w.sessionContext.session"
                                   " && w.sessionContext.session.kernel; return k && k.status === 'idle'; }",
                                   timeout=90_000)
            page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
            page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
            shown = page.evaluate("() => Array.from(document.querySelectorAll('.jp-DirListing-item'))"
                                  ".map(e => e.getAttribute('title') || e.textContent)")
        finally:
            ctx.close()
    assert not _modified(repo), _modified(repo)
    assert not [s for s in shown if re.search(r"\d\d_\w+\.py\b", s or "")], shown


def test_the_notebooks_name_the_kernel_as_ipykernel_installs_it():
    """JupyterLab writes the running kernel's spec into the notebook when it starts one: a committed display name
    other than the installed kernel's ("Python 3" against ipykernel's "Python 3 (ipykernel)") was the change that
    opening notebook 00 made to both its files."""
    from jupyter_client.kernelspec import KernelSpecManager
    spec = KernelSpecManager().get_kernel_spec("python3")
    for nb in NOTEBOOKS:
        meta = json.loads(nb.read_text(encoding="utf-8"))["metadata"]["kernelspec"]
        assert meta == {"display_name": spec.display_name, "language": spec.language, "name": "python3"}, nb

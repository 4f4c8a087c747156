"""Shared by the skill site's tests: a clock to move by hand, a broken and a slow skill written as folders."""
import json
import textwrap
from pathlib import Path


class Clock:
    """Wall-clock seconds that move only when told."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def write_skill(folder: Path, name: str, body: str, *, output_schema=None, rate_class="query", timeout=5.0) -> Path:
    """A skill folder: skill.json and a handler.py whose function body is ``body``."""
    d = folder / name
    d.mkdir(parents=True, exist_ok=True)
    meta = {"skill_name": name, "display_name": name, "description": f"Use for the {name} test.",
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "output_schema": output_schema or {"type": "object"}, "rate_class": rate_class, "timeout": timeout}
    (d / "skill.json").write_text(json.dumps(meta), encoding="utf-8")
    (d / "handler.py").write_text(textwrap.dedent(f'''\
        """A test skill."""
        import time
        from pathlib import Path
        from agentlab.site.skills import read_meta, register_skill

        __all__ = ["{name}"]


        @register_skill(read_meta(Path(__file__).with_name("skill.json")))
        def {name}(arguments, ctx):
        ''') + textwrap.indent(textwrap.dedent(body), "    "), encoding="utf-8")
    return d


def test_skills(folder: Path) -> Path:
    """A broken skill (its output breaks its schema), a scalar, a secret-leaking failure, a slow write."""
    write_skill(folder, "broken_output", 'return {"wrong": 1}',
                output_schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})
    write_skill(folder, "scalar_answer", 'return 42')
    write_skill(folder, "leaky_failure", 'raise RuntimeError("db login failed: password=hunter2 at 10.0.0.7")')
    write_skill(folder, "slow_write", 'time.sleep(arguments.get("n", 3)); return {"done": True}', rate_class="write",
                timeout=1.0)
    return folder


test_skills.__test__ = False  # a helper, not a test

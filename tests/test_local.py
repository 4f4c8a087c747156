"""The small local model: weights are assembled and hash-checked, and a real run ends within its budget.

These need ``requirements-local.txt`` (about 0.5 GB); they skip with the reason
where it is not installed, and CI installs it so they always run there.
"""
import sys
import types

import pytest

from agentlab.scenarios import aftersales
from agentlab.models import local
from agentlab.runs import STATUSES
from agentlab.guards import GuardConfig
from agentlab.loop import run_guarded
from conftest import IN_CI


def _need_local():
    missing = local.what_is_missing("0.5b")
    if missing:
        if IN_CI:
            pytest.fail(missing + " (CI must not skip this)")
        pytest.skip(missing)


def _fake_weights(tmp_path, monkeypatch, name: str, data: bytes, sha256: str) -> None:
    """Weights of one part, served by a stand-in for a part package."""
    piece = tmp_path / f"{name}.bin"
    piece.write_bytes(data)
    mod = types.ModuleType(f"agentlab_{name}_part1")
    mod.get_part_path = lambda: str(piece)
    monkeypatch.setitem(sys.modules, f"agentlab_{name}_part1", mod)
    monkeypatch.setitem(local.WEIGHTS, name, local.Weights(f"{name}.gguf", f"agentlab_{name}_part{{i}}", 1, len(data), sha256))
    monkeypatch.setenv("AGENTLAB_CACHE", str(tmp_path / "cache"))


def test_weights_with_a_wrong_hash_are_refused(tmp_path, monkeypatch):
    _fake_weights(tmp_path, monkeypatch, "fake", b"not a model", "0" * 64)
    with pytest.raises(local.LocalModelMissing):
        local.weights_path("fake")
    assert not (tmp_path / "cache" / "fake.gguf").exists()  # never a half-checked file under the final name


def test_packaged_weights_match_the_pinned_hash():
    _need_local()
    path = local.weights_path("0.5b")
    assert path.stat().st_size == local.WEIGHTS["0.5b"].size
    assert local._sha256(path) == local.WEIGHTS["0.5b"].sha256


def test_a_changed_weights_file_is_verified_again(tmp_path, monkeypatch):
    import hashlib
    _fake_weights(tmp_path, monkeypatch, "tiny", b"tiny model", hashlib.sha256(b"tiny model").hexdigest())
    path = local.weights_path("tiny")
    assert path.read_bytes() == b"tiny model"
    path.write_bytes(b"tampered!!")  # same size, other bytes
    again = local.weights_path("tiny")  # the stamp no longer matches: re-assembled from the parts
    assert again.read_bytes() == b"tiny model"


@pytest.mark.timeout(600)
def test_guarded_after_sales_agent_on_the_real_local_model(tmp_path):
    _need_local()
    from agentlab.models.openai_model import OpenAIModel
    with local.LocalServer("0.5b", log=tmp_path / "server.log") as server:
        desk, reg = aftersales.SCENARIO.setup()
        model = OpenAIModel("qwen2.5-coder-0.5b", base_url=server.base_url, max_tokens=200)
        run = run_guarded(model, reg, "Where is my order A1002? Has it shipped?",
                          system_prompt=aftersales.SYSTEM_PROMPT["en"], config=GuardConfig(step_budget=4))
    assert run.status in STATUSES and run.status != "failed" and run.steps <= 4
    calls = run.tool_events
    assert calls, "the real model made no tool call"
    assert all(e.parse_ok is not None for e in calls)  # every call went through the boundary check
    assert any(e.tool_name in reg for e in calls)
    assert sum(e.prompt_tokens for e in run.events) > 0

"""The small local model: weights are assembled and hash-checked, and a real run ends within its budget.

These need ``requirements-local.txt`` (about 0.5 GB); they skip with the reason
where it is not installed, and CI installs it so they always run there.
"""
import sys
import types

import pytest

from agentlab import aftersales, local
from agentlab.loop import STATUSES, GuardConfig, run_guarded
from conftest import IN_CI


def _need_local():
    missing = local.available("0.5b")
    if missing:
        if IN_CI:
            pytest.fail(missing + " (CI must not skip this)")
        pytest.skip(missing)


def test_weights_with_a_wrong_hash_are_refused(tmp_path, monkeypatch):
    piece = tmp_path / "piece.bin"
    piece.write_bytes(b"not a model")
    mod = types.ModuleType("agentlab_fake_part1")
    mod.get_part_path = lambda: str(piece)
    monkeypatch.setitem(sys.modules, "agentlab_fake_part1", mod)
    monkeypatch.setitem(local.WEIGHTS, "fake", local.Weights("fake.gguf", "agentlab_fake_part{i}", 1, 11, "0" * 64))
    monkeypatch.setenv("AGENTLAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(local.LocalModelMissing):
        local.weights_path("fake")
    assert not (tmp_path / "cache" / "fake.gguf").exists()  # never a half-checked file under the final name


def test_packaged_weights_match_the_pinned_hash():
    _need_local()
    path = local.weights_path("0.5b")
    assert path.stat().st_size == local.WEIGHTS["0.5b"].size
    assert local._sha256(path) == local.WEIGHTS["0.5b"].sha256


def test_a_changed_weights_file_is_verified_again(tmp_path, monkeypatch):
    piece = tmp_path / "piece.bin"
    piece.write_bytes(b"tiny model")
    import hashlib
    mod = types.ModuleType("agentlab_tiny_part1")
    mod.get_part_path = lambda: str(piece)
    monkeypatch.setitem(sys.modules, "agentlab_tiny_part1", mod)
    monkeypatch.setitem(local.WEIGHTS, "tiny", local.Weights("tiny.gguf", "agentlab_tiny_part{i}", 1, 10,
                                                             hashlib.sha256(b"tiny model").hexdigest()))
    monkeypatch.setenv("AGENTLAB_CACHE", str(tmp_path / "cache"))
    path = local.weights_path("tiny")
    assert path.read_bytes() == b"tiny model"
    path.write_bytes(b"tampered!!")  # same size, other bytes
    again = local.weights_path("tiny")  # the stamp no longer matches: re-assembled from the parts
    assert again.read_bytes() == b"tiny model"


@pytest.mark.timeout(600)
def test_guarded_after_sales_agent_on_the_real_local_model(tmp_path):
    _need_local()
    from agentlab.openai_model import OpenAIModel
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

"""The small local model: weights are assembled and hash-checked, and a real run ends within its budget.

These need ``requirements-local.txt`` (about 0.5 GB); they skip with the reason
where it is not installed, and CI installs it so they always run there.
"""
import sys

import pytest
from conftest import IN_CI

from agentlab.guards import GuardConfig
from agentlab.loop import run_guarded
from agentlab.models import local
from agentlab.runs import STATUSES
from agentlab.scenarios import aftersales

# The real model's tests share one server (loading it is the slow part) and one worker under pytest-xdist: two
# servers at once would share the machine's two cores with each other, each test twice as slow.
real_model = pytest.mark.xdist_group("local_model")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One local model server for this module's real-model tests (each asks it something different)."""
    _need_local()
    with local.LocalServer("0.5b", log=tmp_path_factory.mktemp("local") / "server.log") as running:
        yield running


def _need_local():
    missing = local.what_is_missing("0.5b")
    if missing:
        if IN_CI:
            pytest.fail(missing + " (CI must not skip this)")
        pytest.skip(missing)


def _fake_weights(tmp_path, monkeypatch, name: str, data: bytes, sha256: str) -> None:
    """Weights of one part, found where the metadata lookup would find a part package's file."""
    piece = tmp_path / f"{name}.bin"
    piece.write_bytes(data)
    dist = f"agentlab-{name}-part1"
    real = local.part_file
    monkeypatch.setattr(local, "part_file", lambda d: piece if d == dist else real(d))
    monkeypatch.setitem(local.WEIGHTS, name, local.Weights(f"{name}.gguf", f"agentlab-{name}-part{{i}}", 1, len(data), sha256))
    monkeypatch.setenv("AGENTLAB_CACHE", str(tmp_path / "cache"))


def _installed_part(site, dist: str, files: dict[str, bytes]) -> None:
    """A part package as pip leaves it: its files, and a dist-info whose RECORD lists them."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
    (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in [*files, f"{info.name}/METADATA", f"{info.name}/RECORD"]))


def _trap_weights(tmp_path, monkeypatch, parts: list[bytes], sha256: str | None = None) -> list[str]:
    """Installed part packages whose code, if it ever ran, would leave a mark and then fail."""
    import hashlib
    site = tmp_path / "site"
    mods = []
    for i, data in enumerate(parts, 1):
        mod = f"agentlab_trap_part{i}"
        trap = (f"open({str(tmp_path / 'ran')!r}, 'a').write({mod!r})\n"
                "raise RuntimeError('a weights part ran code')\n").encode()
        _installed_part(site, f"agentlab-trap-part{i}", {f"{mod}/__init__.py": trap, f"{mod}/data/part{i:02d}.bin": data})
        mods.append(mod)
    monkeypatch.syspath_prepend(str(site))
    blob = b"".join(parts)
    monkeypatch.setitem(local.WEIGHTS, "trap", local.Weights(
        "trap.gguf", "agentlab-trap-part{i}", len(parts), len(blob), sha256 or hashlib.sha256(blob).hexdigest()))
    monkeypatch.setenv("AGENTLAB_CACHE", str(tmp_path / "cache"))
    return mods


def test_weights_parts_are_found_from_metadata_and_their_code_never_runs(tmp_path, monkeypatch):
    mods = _trap_weights(tmp_path, monkeypatch, [b"first half|", b"second half"])
    assert local.what_is_missing("trap") in (None, local.what_is_missing("0.5b"))  # only the runtime may be missing
    path = local.weights_path("trap")
    assert path.read_bytes() == b"first half|second half"
    assert not (tmp_path / "ran").exists() and not set(mods) & set(sys.modules)


def test_weights_of_a_wrong_hash_are_refused_before_any_part_code_runs(tmp_path, monkeypatch):
    mods = _trap_weights(tmp_path, monkeypatch, [b"swapped", b"weights"], sha256="0" * 64)
    with pytest.raises(local.LocalModelMissing, match="sha256"):
        local.weights_path("trap")
    assert not (tmp_path / "ran").exists() and not set(mods) & set(sys.modules)
    assert not (tmp_path / "cache" / "trap.gguf").exists()


def test_a_missing_part_or_a_part_without_its_file_is_named(tmp_path, monkeypatch):
    _trap_weights(tmp_path, monkeypatch, [b"only one"])
    monkeypatch.setitem(local.WEIGHTS, "trap", local.Weights("trap.gguf", "agentlab-trap-part{i}", 2, 8, "0" * 64))
    with pytest.raises(local.LocalModelMissing, match="part 2") as exc:
        local.weights_path("trap")
    assert "第 2 部分" in exc.value.localized("zh")
    _installed_part(tmp_path / "site2", "agentlab-empty-part1", {"agentlab_empty_part1/__init__.py": b""})
    monkeypatch.syspath_prepend(str(tmp_path / "site2"))
    assert local.part_file("agentlab-empty-part1") is None and local.part_file("agentlab-no-such-part9") is None


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


@real_model
@pytest.mark.timeout(600)
def test_guarded_after_sales_agent_on_the_real_local_model(server):
    from agentlab.models.openai_model import OpenAIModel
    _desk, reg = aftersales.SCENARIO.setup()
    model = OpenAIModel("qwen2.5-coder-0.5b", base_url=server.base_url, max_tokens=200)
    run = run_guarded(model, reg, "Where is my order A1002? Has it shipped?",
                      system_prompt=aftersales.SYSTEM_PROMPT["en"], config=GuardConfig(step_budget=4))
    assert run.status in STATUSES and run.status != "failed" and run.steps <= 4
    calls = run.tool_events
    assert calls, "the real model made no tool call"
    assert all(e.parse_ok is not None for e in calls)  # every call went through the boundary check
    assert any(e.tool_name in reg for e in calls)
    assert sum(e.prompt_tokens for e in run.events) > 0


@real_model
@pytest.mark.timeout(600)
def test_trimming_counts_with_the_local_models_own_tokenizer(server):
    from agentlab.context import estimate_tokens, protocol_problems, trim_messages
    from agentlab.evals import load_cases
    from agentlab.resources import data_file
    case = next(c for c in load_cases(data_file("expense_cases.jsonl")) if c.id == "boundary-long-chat-taxi")
    history = [{"role": "system", "content": "You keep the books."}, *case.history, {"role": "user", "content": case.task}]
    count = local.token_counter(server.base_url)
    whole = count(history)
    kept = trim_messages(history, max_tokens=1500, count=count)
    assert count(kept) <= 1500 < whole and not protocol_problems(kept)
    # the labelled estimate is only that: the real count of this history differs from it
    assert whole != estimate_tokens(history)


@real_model
@pytest.mark.timeout(600)
def test_a_grammar_keeps_the_real_models_call_inside_the_contract(server):
    """Free, the 0.5B writes what it was told ("purple", "three"); under the grammar the same prompt gives a call
    the contract accepts. (The chat endpoint is not the free baseline: it adds a grammar of its own to tool calls.)"""
    from agentlab import Registry
    from agentlab.models.constrained import ConstrainedModel
    tools = [{"type": "function", "function": {"name": "set_color", "description": "Set the lamp's color.", "parameters": {
        "type": "object", "properties": {"color": {"type": "string", "enum": ["red", "green"]},
                                         "brightness": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["color", "brightness"]}}}]
    reg = Registry.from_specs(tools)
    ask = [{"role": "user", "content": "Set the lamp to purple with brightness 'three'. Use the tool."}]
    free = ConstrainedModel(server.base_url, grammar=False).complete(ask, tools)
    held = ConstrainedModel(server.base_url).complete(ask, tools)
    assert held.tool_calls and all(reg.check(c.name, c.arguments).ok for c in held.tool_calls)
    assert not free.tool_calls or not all(reg.check(c.name, c.arguments).ok for c in free.tool_calls)


def test_the_model_never_takes_every_core_and_the_hub_and_the_command_follow_the_rule(tmp_path):
    """On two busy cores 2 threads answered at 0.3 tokens/s against 4.5 with 1 (docs/workshop.md): the default is
    half the cores, one on two, and both `python -m agentlab local` and the hub's model start with it."""
    from agentlab.commands import _local_configure
    from agentlab.hub import config
    assert [local.default_threads(n) for n in (1, 2, 3, 4, 8, 16)] == [1, 1, 1, 2, 4, 8]
    assert local.default_threads() == local.default_threads(local.cpu_count()) < max(2, local.cpu_count())
    assert local.LocalServer(port=1).threads == local.default_threads()
    parser = __import__("argparse").ArgumentParser()
    _local_configure(parser)
    assert parser.parse_args([]).threads is None  # serve() then takes default_threads()
    s = config.HubSettings(root=tmp_path, state=tmp_path, python=tmp_path / "python", proxy=tmp_path / "proxy",
                           workshop_password="pw", gguf=tmp_path / "m.gguf")
    model = next(x for x in config.build(s)["JupyterHub"]["services"] if x["name"] == "model")
    assert model["command"][model["command"].index("--threads") + 1] == str(local.default_threads())

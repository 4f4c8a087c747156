"""Discovery on the skill site: every skill against the search's top 6, measured the routing way."""
import pytest

from agentlab.evals.discovery_eval import discovery_cassette, measure_discovery, replay_discovery, site_asks
from agentlab.evals.routing_eval import MODES, figures, load_asks
from agentlab.models import Reply, ToolCall


class FirstOffered:
    """Calls the tool whose name shares most words with the ask, among those offered (a fake with no model)."""

    name = "first-offered"

    def complete(self, messages, tools):
        ask = messages[-1]["content"].lower()
        names = [t["function"]["name"] for t in tools]
        best = max(names, key=lambda n: sum(w in ask for w in n.split("_")))
        return Reply(None, (ToolCall(best, "{}", "c1"),))


def test_either_hand_over_is_right_on_the_site():
    asks = site_asks(load_asks())
    person = next(a for a in asks if a.id == "escalate-person-en")
    assert {"escalate_to_human", "expense_escalate_to_human"} <= person.right and not person.needed


def test_the_search_offers_fewer_skills_and_says_how_often_it_missed():
    asks = load_asks()
    every = figures(measure_discovery(FirstOffered(), asks, search=False))
    top = figures(measure_discovery(FirstOffered(), asks, search=True))
    assert every["tools_per_turn"] == 19 and every["hit_rate"] == 1.0
    assert top["tools_per_turn"] <= 6 and 0.5 < top["hit_rate"] < 1.0
    assert every["invalid_call_rate"] > 0  # "{}" misses required fields: invalid calls are counted


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_the_recorded_local_models_replay_offline(size):
    path = discovery_cassette(size)
    if not path.exists():
        pytest.skip(f"{path.name} not recorded (python benchmarks/bench_discovery_local.py --sizes {size})")
    from agentlab.models.cassette import read_cassette
    broken = [e["label"] for e in read_cassette(path) if "error" in e and not e["error"].get("unparsable")]
    assert not broken, f"the recording holds API failures, not the model's behaviour: {broken[:3]}"
    got = replay_discovery(path)
    assert sorted(t.ask_id for t in got["all"]) == sorted(t.ask_id for t in got["routed"]) and len(got["all"]) >= 24
    for mode in MODES:
        fig = figures(got[mode])
        assert 0 <= fig["right_tool_rate"] <= 1 and fig["tools_per_turn"] == (19 if mode == "all" else fig["tools_per_turn"])


def test_the_search_sites_folder_goes_when_the_process_ends(tmp_path):
    """Each kernel or command that measured discovery left a folder of its own in the temporary directory."""
    import os
    import subprocess
    import sys

    from conftest import ROOT
    code = "from agentlab.evals.discovery_eval import _site; print(_site().data_dir); assert _site().data_dir.is_dir()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    folder = done.stdout.strip()
    assert folder.startswith(str(tmp_path)) and not os.path.exists(folder) and not list(tmp_path.iterdir())

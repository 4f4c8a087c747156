"""Notebook 18's second look (agentlab/evals/bfcl_compare.py, data/bfcl/official.json).

The shipped file reads back whole and says where it came from and under which license; wherever the ``bfcl``
extra is installed (CI installs it) it is checked against a fresh grading of the recordings, and every probe of
every single-turn category is graded alike by both checkers.
"""
import json

import pytest
from conftest import ROOT, skip_or_fail

from agentlab.evals import bfcl, bfcl_compare, bfcl_official

SHIPPED = ROOT / "data" / bfcl_compare.SHIPPED


@pytest.fixture(scope="module")
def shipped():
    return bfcl_compare.read_official(SHIPPED)


@pytest.fixture(scope="module")
def live():
    if not bfcl_official.evaluator_installed():
        skip_or_fail(f"the bfcl extra is not installed ({bfcl_official.INSTALL})")
    return bfcl_compare.compare_live()


def test_the_shipped_file_says_where_it_came_from_and_its_license(shipped):
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert doc["license"] == "Apache-2.0" and "Apache-2.0" in doc["about"]
    assert (SHIPPED.parent / doc["license_file"]).read_text(encoding="utf-8").lstrip().startswith("Apache License")
    assert doc["upstream"]["package"] == "bfcl-eval" and doc["upstream"]["version"] == bfcl_official.PINNED
    assert set(doc["like_for_like"]) == {"ours", "leaderboard"}
    assert not shipped.live and shipped.said("en") != shipped.said("zh")


def test_the_shipped_figures_hold_every_view(shipped):
    assert set(shipped.single) == {"0.5b", "1.5b"}
    for size in shipped.single:
        table = shipped.checker_table(size)
        assert list(table) == list(bfcl.CATEGORIES) and all(0 <= r["agreement"] <= 1 for r in table.values())
        assert shipped.agreement_said(size, "zh")
    assert list(shipped.probes) == list(bfcl_compare.PROBE_CATEGORIES)
    for size, rows in shipped.multi_rows.items():
        assert {r["mode"] for r in rows} <= {"raw", "guarded"}
        assert sum(r["correct"] for r in rows if r["mode"] == "raw") == round(shipped.multi[size]["raw"]["accuracy"] * len(rows) / 2)


def test_the_shipped_file_is_a_fresh_grading(shipped, live):
    assert bfcl_compare.as_json(live) == json.loads(SHIPPED.read_text(encoding="utf-8"))


def test_both_checkers_grade_every_probe_alike(live):
    """Every question of every single-turn category: the accepted answer and systematic changes of it."""
    assert {c: v["agree"] for c, v in live.probes.items()} == {c: v["probes"] for c, v in live.probes.items()}
    assert sum(v["questions"] for v in live.probes.values()) > 3000 and not any(live.disagreements.values())


def test_probes_change_the_accepted_answer_in_every_way_listed():
    q = bfcl.Question("p_1", "parallel", (), ({"name": "f", "parameters": {"type": "dict", "properties": {}}},),
                      ({"f": {"city": ["Paris", "paris"], "days": [3], "units": ["", "metric"]}},
                       {"f": {"city": ["Rome"], "days": [2], "units": [""]}}))
    made = dict(bfcl_compare.probes(q))
    assert made["expected"] == [("f", {"city": "Paris", "days": 3}), ("f", {"city": "Rome", "days": 2})]
    assert made["reversed"] == made["expected"][::-1] and made["none"] == [] and made["bad json"] == [("f", "{")]
    kinds = [k for k, _ in bfcl_compare.probes(q)]
    assert {"dropped", "value", "number type", "capitals", "added", "renamed", "repeated"} <= set(kinds)
    assert [k for k, _ in bfcl_compare.probes(bfcl.Question("i", "live_irrelevance", (), (), ()))] == ["none", "call", "bad json"]


@pytest.mark.parametrize("readme, lang", [("README.md", "en"), ("README.zh.md", "zh")])
def test_the_readmes_table_is_the_shipped_figures(shipped, readme, lang):
    """category × model × (leaderboard, ours raw, official raw, official guarded), n per row: typed by no hand."""
    table = bfcl_compare.summary_table(shipped, lang)
    assert table in (ROOT / readme).read_text(encoding="utf-8")
    assert len(table.splitlines()) == 2 + sum(len(m.get("single", {})) for m in shipped.single.values()) + sum(
        {"raw", "guarded"} <= set(m) for m in shipped.multi.values())

"""Notebook 18's results shipped with the workbook (agentlab/evals/bfcl_results.py, data/bfcl/graded.json).

The loader is checked on its own (the file reads back whole, holds every figure the notebook shows, says where it
came from and under which license, and is what the notebook gets without the data); the file is checked against a
fresh grading of the recordings wherever the BFCL data is (skipped on a laptop without it, failed in CI).
"""
import json
import tomllib

import pytest
from conftest import DATASETS, ROOT, need

from agentlab.evals import bfcl, bfcl_results
from agentlab.i18n import label, t
from agentlab.models import Reply, ScriptedModel, ToolCall

SHIPPED = ROOT / "data" / bfcl_results.SHIPPED


@pytest.fixture(scope="module")
def shipped():
    return bfcl_results.read_shipped(SHIPPED)


def test_the_shipped_file_reads_back_whole(shipped):
    assert not shipped.live and list(shipped.sizes) == list(bfcl_results.SIZES)
    assert bfcl_results.as_json(shipped) == json.loads(SHIPPED.read_text(encoding="utf-8"))


def test_the_shipped_figures_hold_everything_the_notebook_shows(shipped):
    for size, fig in shipped.sizes.items():
        assert fig.n == {c: bfcl.PER_CATEGORY for c in bfcl.CATEGORIES}, size
        for table in (fig.accuracy, fig.copies_wrong):
            assert list(table) == list(bfcl.MODES)
            assert all(set(row) == {*bfcl.CATEGORIES, "mean"} and all(0 <= v <= 1 for v in row.values()) for row in table.values())
        assert all(list(fig.kinds[m]) == list(bfcl.KINDS) for m in bfcl.MODES)
        for mode in bfcl.MODES:  # every question is either right or one kind of wrong
            right = sum(round(fig.accuracy[mode][c] * fig.n[c]) for c in bfcl.CATEGORIES)
            assert right + sum(fig.kinds[mode].values()) == sum(fig.n.values()), (size, mode)
        for after, moves in fig.transitions.items():
            assert sum(n for _, _, n in moves) == sum(fig.n.values()) and after in bfcl.MODES
            assert all(isinstance(m, tuple) and {m[0], m[1]} <= {"right", *bfcl.KINDS} for m in moves)
        assert set(fig.examples) == set(bfcl.KINDS)
        for kind, rows in fig.examples.items():
            assert len(rows) == min(fig.kinds["single"][kind], bfcl_results.EXAMPLE_LIMIT), (size, kind)
            assert all(list(r) == ["question", *bfcl.MODES] and r["single"].startswith("✗ ") for r in rows)
        assert fig.runaway == fig.kinds["constrained"]["bad_json"] and len(fig.runaway_first) == min(fig.runaway, 2)
        assert 0 <= fig.copies <= fig.n_irrelevance == bfcl.PER_CATEGORY
    # the sample's first question: its function doc is what the notebook turns into a grammar
    ex = shipped.example
    assert isinstance(ex, bfcl.Question) and ex.category == bfcl.CATEGORIES[0]
    assert bfcl.tools_for(ex)[0][0]["function"]["parameters"]["type"] == "object"


def test_the_shipped_file_says_where_it_came_from_and_its_license():
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert doc["license"] == doc["upstream"]["license"] == "Apache-2.0" and "Apache-2.0" in doc["about"]
    assert (SHIPPED.parent / doc["upstream"]["license_file"]).read_text(encoding="utf-8").lstrip().startswith("Apache License")
    assert doc["upstream"]["repository"] == "ShishirPatil/gorilla" and doc["upstream"]["commit"]
    assert doc["sample"] == {"seed": bfcl.SEED, "per_category": bfcl.PER_CATEGORY, "categories": list(bfcl.CATEGORIES)}
    assert set(doc["inputs"]) == set(doc["sizes"]) and all(len(i["sha256"]) == 64 for i in doc["inputs"].values())
    assert "--ship" in doc["about"]
    # what the notebook shows, never the dataset: one question, and small
    assert SHIPPED.stat().st_size < 100_000 and len(json.dumps(doc["example"])) < 2_000


def test_the_wheel_ships_the_results_and_their_license():
    # .ci/check_wheel builds the real wheel; this checks that the package-data globs cover the files, in a second
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    covered = {path for glob in globs["agentlab.data"] for path in (ROOT / "data").glob(glob)}
    assert {SHIPPED, SHIPPED.parent / "LICENSE"} <= covered


def test_without_the_data_the_notebook_gets_the_shipped_results_and_says_how_to_grade_live(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLAB_DATASETS", str(tmp_path / "absent"))
    assert not bfcl_results.have_data()
    got = bfcl_results.graded()
    assert not got.live and bfcl_results.as_json(got) == bfcl_results.as_json(bfcl_results.read_shipped())
    for lang in ("en", "zh"):
        line = got.said(lang)
        assert line == t("nb18.shipped", lang, n=100, categories=label(", ".join(bfcl.CATEGORIES), lang))
        assert "AGENTLAB_DATASETS" in line and "../shared/datasets" in line and "\n" not in line
    (tmp_path / "partial" / "bfcl" / "data").mkdir(parents=True)  # a folder without the questions is not the data
    monkeypatch.setenv("AGENTLAB_DATASETS", str(tmp_path / "partial"))
    assert not bfcl_results.have_data() and not bfcl_results.graded().live


def _q(category="simple_python"):
    fn = {"name": "spotify.play", "description": "Play an artist.", "parameters": {
        "type": "dict", "properties": {"artist": {"type": "string"}, "duration": {"type": "float"}}, "required": ["artist", "duration"]}}
    answers = () if category == "irrelevance" else ({"spotify.play": {"artist": ["Taylor Swift"], "duration": [20.0]}},)
    return bfcl.Question(f"{category}_1", category, ({"role": "user", "content": "Play Taylor Swift for 20 minutes."},), (fn,), answers)


def _call(args):
    return Reply(None, (ToolCall("spotify_play", args if isinstance(args, str) else json.dumps(args), "c1"),))


def test_figures_are_those_of_the_attempts_and_survive_the_file(tmp_path):
    q, irr = _q(), _q("irrelevance")
    bad, good = _call({"artist": "Taylor Swift", "duration": "x"}), _call({"artist": "Taylor Swift", "duration": 20})
    copy = _call('{"<argument name>": <value>}')
    attempts = [bfcl.run_question(q, "single", ScriptedModel([bad])), bfcl.run_question(q, "reask", ScriptedModel([bad, good])),
                bfcl.run_question(q, "constrained", ScriptedModel([_call('{"artist": "Taylor Swift", "duration": 2000000')])),
                *(bfcl.run_question(irr, m, ScriptedModel([copy] * 3)) for m in ("single", "reask")),
                bfcl.run_question(irr, "constrained", ScriptedModel([Reply("No function fits.")]))]
    fig = bfcl_results.figures_of(attempts)
    assert fig.n == {"simple_python": 1, "multiple": 0, "parallel": 0, "irrelevance": 1}
    assert fig.accuracy["single"] == {"simple_python": 0.0, "irrelevance": 1.0, "mean": 0.5}
    assert fig.copies_wrong["single"]["irrelevance"] == 0.0 and fig.copies == 1 and fig.n_irrelevance == 1
    assert fig.kinds["single"]["wrong_type"] == 1 and fig.kinds["constrained"]["bad_json"] == 1
    assert ("wrong_type", "right", 1) in fig.transitions["reask"] and ("wrong_type", "bad_json", 1) in fig.transitions["constrained"]
    (row,) = fig.examples["wrong_type"]
    assert row["question"] == q.id and row["single"].startswith("✗ ") and row["reask"].startswith("✓ ")
    assert fig.runaway == 1 and fig.runaway_first == [(q.id, "spotify.play", '{"artist": "Taylor Swift", "duration": 2000000')]
    assert bfcl_results.most_repaired(fig) == (["wrong_type"], {k: int(k == "wrong_type") for k in bfcl.KINDS})
    # written and read back: the same figures, tuples and all
    g = bfcl_results.Graded(True, {"0.5b": fig}, q, {"seed": 1, "per_category": 1, "categories": ["simple_python"]})
    path = tmp_path / "graded.json"
    path.write_text(json.dumps(bfcl_results.as_json(g), ensure_ascii=False), encoding="utf-8")
    back = bfcl_results.read_shipped(path)
    assert back.sizes == {"0.5b": fig} and back.example == q and not back.live


def test_ties_are_all_right():
    fig = bfcl_results.read_shipped(SHIPPED).sizes["0.5b"]
    kinds = {m: dict.fromkeys(bfcl.KINDS, 0) for m in bfcl.MODES}
    kinds["single"].update(bad_json=3, unknown_tool=3)
    tied = bfcl_results.Figures(**{**vars(fig), "kinds": kinds})
    assert bfcl_results.most_repaired(tied)[0] == ["bad_json", "unknown_tool"]


@pytest.mark.dataset
def test_the_shipped_results_are_what_a_fresh_grading_gives():
    """Regrade the recordings against the BFCL data: the file must say the same, figure for figure (after a new
    recording or a change to the grading, regenerate it: python benchmarks/bench_bfcl_local.py --replay --ship)."""
    root = need(DATASETS / "bfcl" / "data", "BFCL dataset").parent
    live = bfcl_results.grade_live(root)
    assert live.live and bfcl_results.have_data(root)
    fresh = bfcl_results.as_json(live)
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    stale = [k for k in fresh if fresh[k] != shipped.get(k)] + [f"sizes.{s}.{k}" for s in fresh["sizes"]
                                                                 for k in fresh["sizes"][s] if fresh["sizes"][s][k] != shipped["sizes"].get(s, {}).get(k)]
    assert fresh == shipped, f"data/bfcl/graded.json is stale in {stale}: python benchmarks/bench_bfcl_local.py --replay --ship"


def test_the_exercise_judges_truly_in_both_languages(shipped):
    """Notebook 18's check said "not quite" to the right answer and "right" to "None" without the data (its truth
    was None). The truth is now the shipped (or live) figures' own: the blank is not yet, None or "None" never right."""
    from agentlab.workbook.exercises import most_repaired_kind
    fig = shipped.sizes["0.5b"]
    (truth,), drop = bfcl_results.most_repaired(fig)
    assert truth == "bad_json" and drop[truth] == 5  # 12 wrong replies in the single shot, 7 after re-asking
    for lang in ("en", "zh"):
        word = {state: t("exercise.word." + state.replace(" ", "_"), lang) for state in ("not yet", "right", "wrong")}
        blank = most_repaired_kind(None, fig, lang=lang)
        assert blank.state == "not yet" and blank.message.startswith("… " + word["not yet"])
        assert blank.message.endswith(t("nb18.exercise.hint", lang))
        right = most_repaired_kind(" Bad-JSON ", fig, lang=lang)
        colon = "：" if lang == "zh" else ": "
        assert right.ok and right.message == "✓ " + word["right"] + colon + t("nb18.exercise.why", lang, kinds=truth, drop=5)
        for wrong in ("None", "none", "wrong_value", "unwanted_call"):
            assert most_repaired_kind(wrong, fig, lang=lang).state == "wrong", (lang, wrong)
        # the kind as its row of the table reads, in either language: the Chinese learner types what they see
        for said in (t("bfcl.kind.bad_json", "zh"), t("bfcl.kind.bad_json", "en"), f"“{t('bfcl.kind.bad_json', 'zh')}”。"):
            assert most_repaired_kind(said, fig, lang=lang).ok, (lang, said)
        assert most_repaired_kind(t("bfcl.kind.wrong_value", "zh"), fig, lang=lang).state == "wrong"

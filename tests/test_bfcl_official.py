"""The leaderboard's own evaluator, called (agentlab/evals/bfcl_official.py).

These need the ``bfcl`` extra (requirements-bfcl.txt); they skip without it on a user's machine and fail in CI,
which installs it. The AST checker grades every recorded single-turn reply of both local models exactly as
agentlab's grader does; the multi-turn checker accepts every ground truth of the base category and refuses a
conversation that leaves the state elsewhere; two environments of one entry never share a state.
"""
import json

import pytest
from conftest import DATASETS, ROOT, need, skip_or_fail

from agentlab.evals import bfcl, bfcl_official


@pytest.fixture(scope="module", autouse=True)
def extra():
    if not bfcl_official.evaluator_installed():
        skip_or_fail(f"the bfcl extra is not installed ({bfcl_official.INSTALL})")


def test_the_installed_evaluator_is_the_pinned_one():
    assert bfcl_official.version() == bfcl_official.PINNED
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line)
    assert pins["bfcl-eval"] == bfcl_official.PINNED and {"mpmath", "filelock", "tree-sitter", "tree-sitter-java",
                                                                "tree-sitter-javascript", "tenacity"} <= set(pins)


def test_the_extra_installs_without_the_declared_dependencies():
    """Seven packages, no more: the handlers' SDKs and the memory categories' models are never imported."""
    import run
    lines = [x.strip() for x in (ROOT / "requirements-bfcl.txt").read_text().splitlines() if x.strip() and not x.startswith("#")]
    assert lines == ["bfcl-eval", "mpmath", "filelock", "tree_sitter", "tree-sitter-java", "tree-sitter-javascript",
                     "tenacity"]
    assert "requirements-bfcl.txt" in run.NO_DEPS and "--no-deps" in run.install_command(ROOT / "py", None, ["requirements-bfcl.txt"])
    assert "python3 run.py setup requirements-bfcl.txt" in (ROOT / ".ci" / "run").read_text()


def test_the_checker_is_called_not_copied():
    src = (ROOT / "agentlab" / "evals" / "bfcl_official.py").read_text()
    assert "import_module(\"bfcl_eval.eval_checker.ast_eval.ast_checker\")" in src
    assert "def ast_checker" not in src and "def multi_turn_checker" not in src


def test_the_wheels_data_is_the_datasets_folders():
    folder = need(DATASETS / "bfcl", "BFCL dataset")
    for name in ("BFCL_v4_simple_python.json", "BFCL_v4_multi_turn_base.json"):
        assert (bfcl_official.wheel_data() / name).read_bytes() == (folder / "data" / name).read_bytes(), name


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_the_official_checker_grades_every_recorded_reply_as_ours_does(size):
    """The recordings of notebook 18, every mode: 1,200 replies per model, graded by both checkers."""
    qs = bfcl.questions(root=bfcl_official.wheel_data())
    by_id = {q.id: q for q in qs}
    attempts = bfcl.replay_attempts(bfcl.bfcl_cassette(size), qs)
    assert len(attempts) == 3 * len(qs)
    differ = [(a.id, a.mode) for a in attempts
              if bfcl_official.ast_verdict(a.category, by_id[a.id].functions, by_id[a.id].answers, a.calls).valid != a.correct]
    assert not differ


def test_the_ast_verdict_follows_the_leaderboards_decoding():
    q = bfcl.load("simple_python", bfcl_official.wheel_data())[1]
    (name, accepted), = q.answers[0].items()
    right = [(name, {k: v[0] for k, v in accepted.items() if v and v[0] != ""})]
    assert bfcl_official.ast_verdict(q.category, q.functions, q.answers, right).valid  # a dotted name, kept
    broken = bfcl_official.ast_verdict(q.category, q.functions, q.answers, [(name, "{")])
    assert broken == bfcl_official.OfficialVerdict(False, "ast_decoder:decoder_failed", broken.error)
    assert not bfcl_official.ast_verdict(q.category, q.functions, q.answers, []).valid
    # irrelevance: a call that does not decode is no call, and that is right
    assert bfcl_official.ast_verdict("irrelevance", q.functions, (), [(name, "{")]).valid
    assert not bfcl_official.ast_verdict("live_irrelevance", q.functions, (), right).valid


def test_every_ground_truth_of_the_base_category_passes_the_multi_turn_checker():
    entries = bfcl_official.multi_turn_entries()
    assert len(entries) == 200
    assert all(bfcl_official.multi_turn_verdict(e, [[g] for g in e["ground_truth"]]).valid for e in entries)


def test_the_multi_turn_checker_refuses_a_wrong_state_and_a_short_conversation():
    e = bfcl_official.multi_turn_entries()[0]
    gt = e["ground_truth"]
    skipped_a_step = [[turn[1:]] if i == 0 else [turn] for i, turn in enumerate(gt)]
    assert not bfcl_official.multi_turn_verdict(e, skipped_a_step).valid
    assert bfcl_official.multi_turn_verdict(e, [[g] for g in gt[:-1]]).error_type == "multi_turn:force_terminated"


def test_two_environments_of_one_entry_keep_their_own_state():
    e = next(x for x in bfcl_official.multi_turn_entries() if x["involved_classes"] == ["GorillaFileSystem"])
    with bfcl_official.Environment(e) as a, bfcl_official.Environment(e) as b:
        a.run(["mkdir(dir_name='only_in_a')"])
        assert "only_in_a" in a.run(["ls()"])[0] and "only_in_a" not in b.run(["ls()"])[0]
        assert json.loads(b.run(["cd(folder='no_such_folder')"])[0])["error"]
    assert not [k for k in vars(__import__("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils",
                                           fromlist=["x"])) if k.startswith(a.name)]


def test_call_strings_are_what_the_environments_execute():
    assert bfcl_official.call_string("mv", {"source": "a.txt", "destination": "b"}) == "mv(source='a.txt',destination='b')"
    assert bfcl_official.call_string("ls", {}) == "ls()"


def test_the_checker_gets_a_fresh_plain_copy_of_a_question_each_time():
    """The JSON text of a question's functions is kept between its replies and probes; the checker still gets a copy
    of its own each time, in plain lists (not tuples), and a new question never gets another one's text."""
    functions = ({"name": "f", "parameters": {"type": "dict", "required": ("a",)}},)
    first = bfcl_official._fresh(functions)
    assert first == [{"name": "f", "parameters": {"type": "dict", "required": ["a"]}}] and type(first) is list
    first[0]["parameters"]["required"].append("changed by the checker")
    again = bfcl_official._fresh(functions)
    assert again == [{"name": "f", "parameters": {"type": "dict", "required": ["a"]}}] and again is not first
    others = [({"name": f"g{i}"},) for i in range(3)]
    assert [bfcl_official._fresh(o) for o in others] == [[{"name": f"g{i}"}] for i in range(3)]
    changing = [{"name": "h"}]  # a caller's list, changed between two verdicts: never graded from its old text
    assert bfcl_official._fresh(changing) == [{"name": "h"}]
    changing.append({"name": "i"})
    assert bfcl_official._fresh(changing) == [{"name": "h"}, {"name": "i"}]

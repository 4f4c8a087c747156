"""BFCL graded three ways (agentlab.evals.bfcl) and the grammar-constrained model (agentlab.models.constrained).

The grader is checked against BFCL's own ground truth (every expected call is right, every mutation of
one is wrong); the modes against scripted models; the constrained model against a stub llama.cpp server
(what it sends, how it reads the reply); the recordings by replaying them.
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import DATASETS, need
from test_bfcl import _first, _omitted

from agentlab.evals import bfcl
from agentlab.models import ModelError, Reply, ScriptedModel, ToolCall
from agentlab.models.cassette import RecordingModel
from agentlab.models.constrained import ConstrainedModel, call_grammar, call_schema, parse_fenced

BFCL = DATASETS / "bfcl"


def _expected_calls(q):
    return [(name, {k: _first(v) for k, v in acc.items() if not _omitted(v)}) for c in q.answers for name, acc in c.items()]


@pytest.fixture(scope="module")
def sample():
    need(BFCL, "BFCL dataset")
    return {c: bfcl.sample_category(c) for c in bfcl.CATEGORIES}


def test_every_expected_answer_grades_right_except_the_upstream_broken_ones():
    need(BFCL, "BFCL dataset")
    broken = {x["id"] for x in json.loads((BFCL / "derived" / "gt_not_schema_valid.json").read_text())}
    wrong = []
    for cat in bfcl.CATEGORIES:
        for q in bfcl.load(cat):
            calls = [] if cat == "irrelevance" else _expected_calls(q)
            if bfcl.grade_calls(q, calls) is not None:
                wrong.append(q.id)
    assert wrong == ["simple_python_200"] and set(wrong) <= broken  # its answer leaves out a required argument


def test_the_sample_is_fixed_and_spread(sample):
    again = {c: bfcl.sample_category(c) for c in bfcl.CATEGORIES}
    for cat, qs in sample.items():
        assert len(qs) == 100 and [q.id for q in qs] == [q.id for q in again[cat]]
        ids = [int(q.id.rsplit("_", 1)[1]) for q in qs]
        assert ids == sorted(ids) and ids[-1] > 150  # upstream order, not the first hundred
    other = bfcl.sample_category("multiple", seed=16)
    assert [q.id for q in other] != [q.id for q in sample["multiple"]]


def _q(category="simple_python", answers=None, functions=None):
    functions = functions or [{"name": "spotify.play", "description": "Play an artist.", "parameters": {
        "type": "dict", "properties": {"artist": {"type": "string"}, "duration": {"type": "float"},
                                       "shuffle": {"type": "boolean"}},
        "required": ["artist", "duration"]}}]
    answers = answers if answers is not None else [
        {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20.0], "shuffle": ["", False]}}]
    return bfcl.Question("x_1", category, ({"role": "user", "content": "Play Taylor Swift for 20 minutes."},),
                         tuple(functions), tuple(answers))


@pytest.mark.parametrize("calls, why", [
    ([("spotify.play", {"artist": "taylor swift", "duration": 20})], None),  # case and int-for-float accepted
    ([("spotify.play", {"artist": "Taylor Swift", "duration": 20.0, "shuffle": False})], None),
    ([("spotify.play", {"artist": "Taylor Swift"})], "missing required duration"),
    ([("spotify.play", {"artist": "Adele", "duration": 20})], "wrong value for artist"),
    ([("spotify.play", {"artist": "Taylor Swift", "duration": "20"})], "wrong type for duration"),
    ([("spotify.play", {"artist": "Taylor Swift", "duration": 20, "volume": 3})], "unexpected argument volume"),
    ([("spotify.stop", {})], "unknown function"),
    ([], "no call"),
    ([("spotify.play", {"artist": "Taylor Swift", "duration": 20})] * 2, "2 calls for 1"),
])
def test_grading_rule(calls, why):
    assert bfcl.grade_calls(_q(), calls) == why


def test_irrelevance_is_right_only_without_a_call():
    q = _q("irrelevance", answers=[])
    assert bfcl.grade_calls(q, []) is None
    assert bfcl.grade_calls(q, [("spotify.play", {"artist": "x", "duration": 1})]) == "called a function"


def test_live_irrelevance_wants_no_call_as_irrelevance_does():
    """BFCL decides by the category's name: a live irrelevance question is right without a call. The leaderboard's
    checker says so on all 884 of them; this grader matched the name "irrelevance" exactly and graded them as
    questions whose answer is a call, so that no call at all was wrong ("no call")."""
    q = _q("live_irrelevance", answers=[])
    assert bfcl.grade_calls(q, []) is None and bfcl.grade_calls(q, [("spotify.play", "{broken")]) is None
    assert bfcl.grade_calls(q, [("spotify.play", {"artist": "x", "duration": 1})]) == "called a function"
    assert bfcl.no_call_wanted("live_irrelevance") and not bfcl.no_call_wanted("live_simple")


def test_parallel_calls_pair_up_in_any_order_greedily_as_bfcl_does():
    q = _q("parallel", answers=[{"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
                                {"spotify.play": {"artist": ["Adele"], "duration": [15]}}])
    a, b = ("spotify.play", {"artist": "Taylor Swift", "duration": 20}), ("spotify.play", {"artist": "Adele", "duration": 15})
    assert bfcl.grade_calls(q, [a, b]) is None and bfcl.grade_calls(q, [b, a]) is None and bfcl.grade_calls(q, [b, b]) is not None
    # an expected call that accepts several values takes the first that fits, even when a later pairing
    # would have worked: BFCL's rule, kept so that the figures compare with the published ones
    q = _q("parallel", answers=[{"spotify.play": {"artist": ["Taylor Swift", "Adele"], "duration": [20]}},
                                {"spotify.play": {"artist": ["Adele"], "duration": [20]}}])
    a, b = ("spotify.play", {"artist": "Adele", "duration": 20}), ("spotify.play", {"artist": "Taylor Swift", "duration": 20})
    assert bfcl.grade_calls(q, [b, a]) is None and bfcl.grade_calls(q, [a, b]) == "no call matches spotify.play"


def test_bfcl_type_rules():
    doc = [{"name": "f", "description": "", "parameters": {"type": "dict", "properties": {
        "xs": {"type": "array", "items": {"type": "float"}}, "venue": {"type": "string"}, "mod": {"type": "integer"}},
        "required": []}}]
    q = _q(functions=doc, answers=[{"f": {"xs": [[1.0, 3.0]], "venue": ["", True], "mod": ["", None]}}])
    assert bfcl.grade_calls(q, [("f", {"xs": [1.0, 3.0]})]) is None
    assert bfcl.grade_calls(q, [("f", {"xs": [1, 3]})]) == "wrong type for xs"  # no int for float inside a list
    assert bfcl.grade_calls(q, [("f", {"xs": [1.0, 3.0], "venue": True, "mod": None})]) is None  # the answer's own type
    # an answer list whose type is not the doc's holds a variable: compared exactly, nothing normalised
    assert bfcl.grade_calls(q, [("f", {"xs": [1.0, 3.0], "venue": "-"})]) == "wrong value for venue"
    strings = _q(functions=doc, answers=[{"f": {"xs": [[1.0, 3.0]], "venue": ["", "Hall A"]}}])
    assert bfcl.grade_calls(strings, [("f", {"xs": [1.0, 3.0], "venue": "-"})]) is None  # normalises to the optional mark
    assert bfcl.grade_calls(strings, [("f", {"xs": [1.0, 3.0], "venue": "hall-a"})]) is None
    irrelevant = _q("irrelevance", answers=[])
    assert bfcl.grade_calls(irrelevant, [("spotify.play", '{"artist": ')]) is None  # undecodable: no call


def test_bfcl_list_item_types_follow_each_accepted_list():
    """BFCL holds a list's items against each accepted list in turn: the items' type, or that list's own type; one
    accepted list that fits is enough, and an accepted blank skips the check."""
    doc = [{"name": "f", "description": "", "parameters": {"type": "dict", "properties": {
        "names": {"type": "array", "items": {"type": "string"}}, "xs": {"type": "array", "items": {"type": "float"}}},
        "required": ["names"]}}]
    q = _q(functions=doc, answers=[{"f": {"names": [["Apple", "Microsoft"], [["Apple"], ["Microsoft"]]],
                                          "xs": ["", [1.0, 2.0]]}}])
    assert bfcl.grade_calls(q, [("f", {"names": [["Apple"], ["Microsoft"]]})]) is None  # simple_python_149's form
    assert bfcl.grade_calls(q, [("f", {"names": [1, 2]})]) == "wrong type for names"
    assert bfcl.grade_calls(q, [("f", {"names": ["Apple", "Microsoft"], "xs": [1, 2]})]) is None  # blank: unchecked
    ints = _q(functions=doc, answers=[{"f": {"names": [["a"]], "xs": [[1, 2]]}}])
    assert bfcl.grade_calls(ints, [("f", {"names": ["a"], "xs": [1, 2]})]) is None  # the accepted list's own type
    # the fallback type is the first accepted value's, not any of them
    mixed = _q(functions=[{"name": "g", "description": "", "parameters": {"type": "dict", "properties": {
        "v": {"type": "string"}}, "required": ["v"]}}], answers=[{"g": {"v": ["seven", 7]}}])
    assert bfcl.grade_calls(mixed, [("g", {"v": "Seven"})]) is None
    assert bfcl.grade_calls(mixed, [("g", {"v": 7})]) == "wrong type for v"


def test_tools_get_api_names_and_json_schema_types():
    specs, names = bfcl.tools_for(_q())
    fn = specs[0]["function"]
    assert fn["name"] == "spotify_play" and names == {"spotify_play": "spotify.play"}
    assert fn["parameters"]["type"] == "object" and fn["parameters"]["properties"]["duration"]["type"] == "number"


def _call(args, name="spotify_play"):
    return Reply(None, (ToolCall(name, args if isinstance(args, str) else json.dumps(args), "c1"),))


def test_reask_repairs_what_the_guard_can_see_and_single_shot_does_not():
    bad = _call({"artist": "Taylor Swift", "duration": "twenty"})
    good = _call({"artist": "Taylor Swift", "duration": 20})
    single = bfcl.run_question(_q(), "single", ScriptedModel([bad]))
    reask = bfcl.run_question(_q(), "reask", ScriptedModel([bad, good]))
    assert not single.correct and single.kind == "wrong_type" and not single.valid_first
    assert reask.correct and reask.turns == 2 and reask.problems == ("INVALID_ARGS",) and not reask.valid_first


def test_reask_cannot_see_a_wrong_value_and_stops_at_the_valid_call():
    model = ScriptedModel([_call({"artist": "Adele", "duration": 20}), _call({"artist": "Taylor Swift", "duration": 20})])
    a = bfcl.run_question(_q(), "reask", model)
    assert not a.correct and a.kind == "wrong_value" and a.turns == 1 and model.unused == 1


def test_reask_gives_up_within_its_budget():
    a = bfcl.run_question(_q(), "reask", ScriptedModel([_call("{\"artist\": ")] * 5))
    assert not a.correct and a.kind == "bad_json" and a.turns == 3  # the first reply and two re-asks


@pytest.mark.parametrize("reply, kind", [
    (_call("{\"artist\": "), "bad_json"),
    (_call({"artist": "Taylor Swift", "duration": 20}, name="spotify_stop"), "unknown_tool"),
    (_call({"artist": "Taylor Swift", "duration": 20, "volume": 3}), "unknown_field"),
    (_call({"artist": "Taylor Swift"}), "missing_required"),
    (_call({"artist": "Adele", "duration": 20}), "wrong_value"),
    (Reply("I cannot play music."), "no_call"),
])
def test_every_failure_has_one_kind(reply, kind):
    a = bfcl.run_question(_q(), "single", ScriptedModel([reply]))
    assert a.kind == kind and kind in bfcl.KINDS


def test_a_copied_template_example_is_found_and_can_be_counted_wrong():
    """The local template's example, copied on an irrelevance question, is not JSON: BFCL reads no call and grades it
    right. The figures can say so, and count it as what it is."""
    irrelevant = _q("irrelevance", answers=[])
    copy = bfcl.run_question(irrelevant, "single", ScriptedModel([_call('{"<argument name>": <value>}')]))
    words = bfcl.run_question(irrelevant, "single", ScriptedModel([Reply("No function fits.")]))
    assert copy.correct and words.correct  # BFCL's rule, kept
    assert bfcl.copied_example(copy) and not bfcl.copied_example(words)
    strict = bfcl.copies_counted_wrong([copy, words])
    assert [a.correct for a in strict] == [False, True] and strict[0].kind == "unwanted_call"
    assert bfcl.accuracy([copy, words])["single"]["irrelevance"] == 1.0
    assert bfcl.accuracy(strict)["single"]["irrelevance"] == 0.5


def test_transitions_follow_each_question_from_one_mode_to_another():
    q = _q()
    bad = _call({"artist": "Taylor Swift", "duration": "20 minutes"})
    good = _call({"artist": "Taylor Swift", "duration": 20})
    attempts = [bfcl.run_question(q, "single", ScriptedModel([bad])), bfcl.run_question(q, "reask", ScriptedModel([bad, good])),
                bfcl.run_question(q, "constrained", ScriptedModel([_call({"artist": "Adele", "duration": 20})]))]
    assert bfcl.transitions(attempts, "single", "reask") == {("wrong_type", "right"): 1}
    assert bfcl.transitions(attempts) == {("wrong_type", "wrong_value"): 1}
    assert bfcl.mean_of({"a": 1.0, "b": 0.0, "c": 0.5}, ["a", "c"]) == 0.75


def test_an_api_error_is_graded_as_no_call_except_for_irrelevance():
    err = ModelError("UNAVAILABLE", "failed to parse tool call")
    assert bfcl.run_question(_q(), "single", ScriptedModel([err])).kind == "no_call"
    assert bfcl.run_question(_q("irrelevance", answers=[]), "single", ScriptedModel([err])).correct


def test_replay_of_a_recording_gives_the_live_attempts(tmp_path):
    path = tmp_path / "bfcl.jsonl"
    q = _q()
    bad, good = _call({"artist": "Taylor Swift", "duration": "x"}), _call({"artist": "Taylor Swift", "duration": 20})
    live = [bfcl.run_question(q, "reask", RecordingModel(ScriptedModel([bad, good]), path, label=f"{q.id}/loop")),
            bfcl.run_question(q, "constrained", RecordingModel(ScriptedModel([good]), path, label=f"{q.id}/constrained"))]
    replayed = bfcl.replay_attempts(path, [q])
    assert [a.mode for a in replayed] == ["single", "reask", "constrained"]
    assert replayed[1].correct == live[0].correct and replayed[1].turns == live[0].turns == 2
    assert not replayed[0].correct and replayed[2].correct
    fig = bfcl.accuracy(replayed)
    assert fig["single"]["simple_python"] == 0 and fig["reask"]["mean"] == 1


# --- the constrained model --------------------------------------------------------------------
TOOLS = [{"type": "function", "function": {"name": "set_color", "description": "Set a color.", "parameters": {
    "type": "object", "properties": {"color": {"type": "string", "enum": ["red", "green"]}}, "required": ["color"]}}}]


def test_the_grammar_is_made_of_the_tools_contracts():
    g = call_grammar(TOOLS)
    assert g.startswith("%llguidance") and "| answer" in g
    schema = json.loads(g.split("call: %json ", 1)[1].splitlines()[0])
    assert schema == call_schema(TOOLS[0]) and schema["properties"]["arguments"]["additionalProperties"] is False
    assert "answer" not in call_grammar(TOOLS, allow_text=False)
    two = json.loads(call_grammar(TOOLS * 2).split("call: %json ", 1)[1].splitlines()[0])
    assert len(two["anyOf"]) == 2


@pytest.mark.parametrize("text, n, content", [
    ('```json\n{"name": "set_color", "arguments": {"color": "red"}}\n```', 1, None),
    ('```json\n{"name": "a", "arguments": {}}\n```\n```json\n{"name": "b", "arguments": {}}\n```', 2, None),
    ('```json\n{"name": "set_color", "arguments": {"n": 2000000000', 1, None),  # cut by the token limit
    ("No tool fits.", 0, "No tool fits."),
])
def test_fenced_calls_are_read(text, n, content):
    got_content, calls = parse_fenced(text)
    assert len(calls) == n and got_content == content
    if "2000" in text:
        assert calls[0].name == "set_color" and calls[0].arguments.startswith('{"n": 2000')


class _StubServer:
    """A llama.cpp server's /apply-template and /completion, recording what it was sent."""

    def __init__(self, content: str, status: int = 200):
        self.sent: list[tuple[str, dict]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.sent.append((self.path, body))
                out = {"prompt": "PROMPT"} if self.path == "/apply-template" else \
                    {"content": content, "tokens_evaluated": 12, "tokens_predicted": 5}
                data = json.dumps(out).encode()
                self.send_response(status if self.path == "/completion" else 200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.mark.parametrize("grammar", [True, False])
def test_constrained_model_sends_the_grammar_and_reads_the_call(grammar):
    stub = _StubServer('```json\n{"name": "set_color", "arguments": {"color": "red"}}\n```')
    try:
        reply = ConstrainedModel(stub.url, grammar=grammar).complete([{"role": "user", "content": "red"}], TOOLS)
    finally:
        stub.close()
    (p1, b1), (p2, b2) = stub.sent
    assert p1 == "/apply-template" and b1["tools"] == TOOLS
    assert p2 == "/completion" and b2["prompt"] == "PROMPT" and b2["temperature"] == 0
    assert ("grammar" in b2) is grammar
    assert reply.tool_calls[0].name == "set_color" and json.loads(reply.tool_calls[0].arguments) == {"color": "red"}
    assert reply.usage.prompt_tokens == 12


def test_a_server_error_is_a_model_error_with_nothing_of_the_server_in_it():
    stub = _StubServer("", status=400)
    try:
        with pytest.raises(ModelError) as info:
            ConstrainedModel(stub.url).complete([{"role": "user", "content": "x"}], TOOLS)
    finally:
        stub.close()
    assert info.value.code == "BAD_REQUEST"
    with pytest.raises(ModelError) as info:
        ConstrainedModel("http://127.0.0.1:9/v1", timeout=2).complete([{"role": "user", "content": "x"}], TOOLS)
    assert info.value.code == "UNAVAILABLE"


# --- the recordings ---------------------------------------------------------------------------
@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_the_recorded_sample_replays_in_every_mode(size, sample):
    path = bfcl.bfcl_cassette(size)
    if not path.exists():
        pytest.skip(f"{path.name} not recorded")
    from agentlab.models.cassette import read_cassette
    entries = read_cassette(path)
    # a recording is of the model, never of a server that failed under it
    assert not [e["label"] for e in entries if "error" in e and e["error"]["code"] != "BAD_REQUEST"]
    attempts = bfcl.replay_attempts(path, [q for qs in sample.values() for q in qs])
    n = {c: sum(1 for a in attempts if a.category == c and a.mode == "single") for c in bfcl.CATEGORIES}
    assert all(v == 100 for v in n.values()), n  # both models answer the whole sample
    fig = bfcl.accuracy(attempts)
    assert set(fig) == set(bfcl.MODES) and all(0 <= x <= 1 for row in fig.values() for x in row.values())
    # the guard only re-asks: a reply the checks accept is graded as the single shot was
    by = {(a.id, a.mode): a for a in attempts}
    for (qid, mode), a in by.items():
        if mode == "single" and a.valid_first:
            assert by[(qid, "reask")].correct == a.correct and by[(qid, "reask")].turns == 1


def test_a_recording_cut_short_is_left_out_not_raised(tmp_path):
    path = tmp_path / "bfcl.jsonl"
    q = _q()
    bad = _call({"artist": "Taylor Swift", "duration": "x"})
    RecordingModel(ScriptedModel([bad]), path, label=f"{q.id}/loop").complete([], [])  # the re-ask never recorded
    assert bfcl.replay_attempts(path, [q]) == []

"""Routing measured on the bookkeeping desk: the asks file, the rates by hand, record and replay (no real model)."""
import json
import math
from collections import Counter

import pytest

from agentlab.evals.routing_eval import (
    Ask,
    cassette_path,
    desk_router,
    figures,
    load_asks,
    measure,
    replay,
    spec_digest,
    turn_label,
)
from agentlab.models import ModelError, ScriptedModel, call, say
from agentlab.models.cassette import RecordingModel, labels
from agentlab.models.interface import Reply, ToolCall, Usage
from agentlab.routing import words
from agentlab.scenarios import expense

BOOK = {"date": "2026-10-15", "item": "taxi", "amount": 45, "category": "transport"}
TAXI = Ask("t-en", "en", "I took a taxi today for 45 yuan, please book it", ("book_expense_record",))
COFFEE = Ask("c-en", "en", "Delete yesterday's coffee", (), ("search_expense_records", "list_expense_records"))


class WordOverlap:
    """Calls the offered tool whose name shares most words with the ask (ties: the first offered),
    with the arguments the registry's example would give; says something when nothing overlaps."""

    name = "word-overlap"

    def complete(self, messages, tools):
        ask = set(words(messages[-1]["content"]))
        best, score = None, 0
        for t in tools:
            s = len(ask & set(words(t["function"]["name"])))
            if s > score:
                best, score = t["function"], s
        if best is None:
            return Reply("I can only help with bookkeeping.", usage=Usage(100 + 10 * len(tools), 5))
        args = {k: "x" for k in best["parameters"].get("required", [])}
        return Reply(None, (ToolCall(best["name"], json.dumps(args), "call_1"),), Usage(100 + 10 * len(tools), 5))


# --- the asks file ------------------------------------------------------------------------

def test_the_asks_cover_every_tool_in_both_languages():
    asks = load_asks()
    assert len(asks) >= 24
    by_lang = Counter(a.lang for a in asks)
    assert by_lang["en"] == by_lang["zh"] == len(asks) // 2
    intents = {lang: sorted(a.id.rsplit("-", 1)[0] for a in asks if a.lang == lang) for lang in ("en", "zh")}
    assert intents["en"] == intents["zh"], "every intent is asked in both languages"
    for a in asks:
        assert a.id.endswith("-" + a.lang)
        twin = next(b for b in asks if b.id == a.id.rsplit("-", 1)[0] + ("-zh" if a.lang == "en" else "-en"))
        assert (a.needed, a.needed_any) == (twin.needed, twin.needed_any), a.id
        registry = expense.make_registry(expense.Ledger(), lang=a.lang)
        assert a.right <= set(registry.names), f"{a.id} names a tool the desk does not have"
    covered = Counter(n for a in asks for n in a.right)
    assert set(covered) == set(expense.make_registry(expense.Ledger()).names)
    assert min(covered.values()) >= 2 and max(covered.values()) <= 8, covered  # roughly even


def test_a_broken_asks_file_is_refused(tmp_path):
    bad = tmp_path / "a.jsonl"
    bad.write_text(json.dumps({"id": "x", "lang": "fr", "ask": "?", "needed": ["get_budget"]}) + "\n")
    with pytest.raises(ValueError, match="line 1"):
        load_asks(bad)
    bad.write_text(json.dumps({"id": "x", "lang": "en", "ask": "?"}) + "\n")
    with pytest.raises(ValueError):
        load_asks(bad)


# --- the rates, by hand ----------------------------------------------------------------------

def test_rates_by_hand_and_invalid_calls_count():
    asks = [TAXI, Ask("t2-en", "en", TAXI.ask, TAXI.needed), Ask("t3-en", "en", TAXI.ask, TAXI.needed),
            Ask("t4-en", "en", TAXI.ask, TAXI.needed), COFFEE, Ask("c2-en", "en", COFFEE.ask, (), COFFEE.needed_any)]
    model = ScriptedModel([
        call("book_expense_record", BOOK),                                  # right, valid
        call("book_expense_record", '{"date": "2026-10-15", "amount": 45'),  # right tool, broken JSON: invalid
        call("book_expense_record", {**BOOK, "amount": "45元"}),            # right tool, schema refuses: invalid
        call("book_taxi", BOOK),                                             # unknown tool: invalid, wrong
        call("list_expense_records", {"month": "2026-10"}),                  # an acceptable alternative: right
        say("Which coffee do you mean?"),                                    # no call
    ])
    turns = measure(model, asks, routed=False)
    assert [t.right_tool for t in turns] == [True, True, True, False, True, False]
    assert [t.problem for t in turns] == ["", "BAD_JSON", "INVALID_ARGS", "UNKNOWN_TOOL", "", ""]
    assert [t.no_call for t in turns] == [False] * 5 + [True]
    fig = figures(turns)
    assert fig["turns"] == 6
    assert fig["right_tool_rate"] == pytest.approx(4 / 6)
    assert fig["invalid_call_rate"] == pytest.approx(3 / 5)  # 3 invalid of 5 calls; the text reply is no call
    assert fig["no_call_rate"] == pytest.approx(1 / 6)
    assert fig["tools_per_turn"] == 13 and fig["hit_rate"] == 1.0
    assert math.isnan(fig["prompt_tokens"])  # the scripted model reports no usage


def test_the_business_rules_are_not_what_makes_a_call_invalid():
    future = {**BOOK, "date": "2026-12-01"}  # schema-valid; refused only by the desk's "not in the future" rule
    turns = measure(ScriptedModel([call("book_expense_record", future)]), [TAXI], routed=False)
    assert turns[0].invalid == 0 and turns[0].right_tool


def test_every_call_of_a_reply_is_checked_and_the_first_decides_the_tool():
    reply = Reply(None, (ToolCall("book_expense_record", json.dumps(BOOK), "a"), ToolCall("nope", "{}", "b")))
    turn = measure(ScriptedModel([reply]), [TAXI], routed=False)[0]
    assert (turn.first_call, turn.calls, turn.invalid, turn.problem) == ("book_expense_record", 2, 1, "")
    assert figures([turn])["invalid_call_rate"] == 0.5


def test_an_unparsable_call_is_invalid_and_other_api_failures_are_errors():
    unparsable = ModelError("UNAVAILABLE", "failed to parse tool call", status=500)
    unparsable.unparsable = True
    turns = measure(ScriptedModel([unparsable, ModelError("TIMEOUT")]), [TAXI, TAXI], routed=False)
    assert (turns[0].calls, turns[0].invalid, turns[0].problem, turns[0].error) == (1, 1, "UNPARSABLE", "")
    assert (turns[1].calls, turns[1].error, turns[1].no_call) == (0, "TIMEOUT", False)
    fig = figures(turns)
    assert fig["invalid_call_rate"] == 1.0 and fig["error_rate"] == 0.5 and fig["no_call_rate"] == 0.0


def test_prompt_tokens_come_from_usage():
    reply = Reply(None, (ToolCall("book_expense_record", json.dumps(BOOK), "a"),), Usage(2600, 70))
    assert figures(measure(ScriptedModel([reply, say("?")]), [TAXI, TAXI], routed=False))["prompt_tokens"] == 2600


# --- routing -------------------------------------------------------------------------------

def test_routed_turns_offer_what_the_desk_router_offers():
    asks = load_asks()
    model = ScriptedModel([], then=say("ok"))
    turns = measure(model, asks, routed=True)
    for ask, turn, asked in zip(asks, turns, model.calls, strict=True):
        registry = expense.make_registry(expense.Ledger(), lang=ask.lang)
        expected = desk_router(registry)([{"role": "user", "content": ask.ask}])
        assert set(turn.offered) == set(expected) and len(turn.offered) <= 5, ask.id
        assert "escalate_to_human" in turn.offered
        assert list(asked.tools) == list(turn.offered)  # the model saw exactly those, in the registry's order
        assert asked.messages[0]["role"] == "system" and "2026-10-15" in asked.messages[0]["content"]
    fig = figures(turns)
    assert fig["tools_per_turn"] <= 5 and 0 < fig["hit_rate"] <= 1
    assert figures(measure(model, asks, routed=False))["tools_per_turn"] == 13


def test_a_needed_any_ask_is_a_hit_when_one_alternative_is_offered():
    registry = expense.make_registry(expense.Ledger())
    assert COFFEE.routing_turn(["list_expense_records", "escalate_to_human"], registry.names).needed == \
        {"list_expense_records"}
    assert not COFFEE.routing_turn(["escalate_to_human"], registry.names).needed <= {"escalate_to_human"}
    assert desk_router(registry).k == 5


def test_the_word_overlap_fake_does_better_routed():
    """The fake picks among the offered tools only: fewer, better tools should not make it worse."""
    asks = load_asks()
    every, routed = (figures(measure(WordOverlap(), asks, routed=r)) for r in (False, True))
    assert routed["right_tool_rate"] >= every["right_tool_rate"]
    assert routed["prompt_tokens"] < every["prompt_tokens"]


# --- record and replay -------------------------------------------------------------------

def test_replay_gives_the_live_turns(tmp_path):
    path = tmp_path / "expense-routing-fake.jsonl"
    asks = load_asks()[:8]
    live = {}
    for mode in ("all", "routed"):
        live[mode] = measure(lambda label: RecordingModel(WordOverlap(), path, label=label), asks,
                             routed=mode == "routed")
    assert [x.split("#")[0] for x in labels(path)[:2]] == [f"{asks[0].id}/all", f"{asks[1].id}/all"]
    assert labels(path)[0] == live["all"][0].label == turn_label(asks[0].id, "all", live["all"][0].label[-8:])
    again = replay(path, asks)
    assert again == live
    assert {m: figures(t) for m, t in again.items()} == {m: figures(t) for m, t in live.items()}


def test_an_unparsable_call_survives_the_cassette(tmp_path):
    path = tmp_path / "c.jsonl"
    err = ModelError("UNAVAILABLE", "failed to parse tool call", status=500)
    err.unparsable = True
    live = {}
    for mode in ("all", "routed"):
        live[mode] = measure(lambda label: RecordingModel(ScriptedModel([err]), path, label=label),
                             [TAXI], routed=mode == "routed")
    assert replay(path, [TAXI]) == live and live["all"][0].problem == "UNPARSABLE"


@pytest.mark.parametrize("change,error", [
    (lambda e: e.update(tools=e["tools"][:2]), "other tools"),
    (lambda e: e["messages"][0].update(content="Today is 2026-09-21."), "another prompt"),
    (lambda e: e.update(label=e["label"].split("#")[0] + "#00000000"), "other tool specs"),  # a reworded description
])
def test_replay_refuses_a_turn_asked_otherwise_than_recorded(tmp_path, change, error):
    path = tmp_path / "c.jsonl"
    for mode in ("all", "routed"):
        measure(lambda label: RecordingModel(WordOverlap(), path, label=label), [TAXI], routed=mode == "routed")
    assert replay(path, [TAXI])["routed"][0].right_tool
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    change(lines[1])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(ValueError, match=error):
        replay(path, [TAXI])


def test_the_label_changes_with_any_offered_spec():
    registry = expense.make_registry(expense.Ledger())
    specs = registry.specs()
    reworded = [dict(s, function={**s["function"], "description": s["function"]["description"] + "."}) if i == 3 else s
                for i, s in enumerate(specs)]
    assert spec_digest(specs) == spec_digest(registry.specs()) != spec_digest(reworded)
    assert spec_digest(specs) != spec_digest(specs[:5])


def test_replay_compares_only_asks_recorded_under_both_modes(tmp_path):
    path = tmp_path / "c.jsonl"
    measure(lambda label: RecordingModel(WordOverlap(), path, label=label), [TAXI, COFFEE], routed=False)
    measure(lambda label: RecordingModel(WordOverlap(), path, label=label), [TAXI], routed=True)
    got = replay(path, [TAXI, COFFEE])
    assert [t.ask_id for t in got["all"]] == [t.ask_id for t in got["routed"]] == ["t-en"]


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_the_recorded_local_models_replay_offline(size):
    path = cassette_path(size)
    if not path.exists():
        pytest.skip(f"{path.name} not recorded (python benchmarks/bench_routing_local.py --sizes {size})")
    asks = load_asks()
    from agentlab.models.cassette import read_cassette
    broken = [e["label"] for e in read_cassette(path) if "error" in e and not e["error"].get("unparsable")]
    assert not broken, f"the recording holds API failures, not the model's behaviour: {broken[:3]}"
    got = replay(path, asks)
    ids = {mode: sorted(t.ask_id for t in turns) for mode, turns in got.items()}
    assert ids["all"] == ids["routed"]  # the two modes compared on the same asks
    for mode, turns in got.items():
        # every ask, or (for a slower model) a sample of whole intents, each asked in both languages
        assert len(turns) >= 24, f"{size} {mode}: only {len(turns)} of {len(asks)} asks recorded under both modes"
        langs = {}
        for t in turns:
            langs.setdefault(t.ask_id.rsplit("-", 1)[0], set()).add(t.ask_id.rsplit("-", 1)[1])
        assert all(v == {"en", "zh"} for v in langs.values()), langs
        fig = figures(turns)
        for key in ("right_tool_rate", "invalid_call_rate", "no_call_rate", "tools_per_turn", "prompt_tokens",
                    "hit_rate"):
            assert math.isfinite(fig[key]), (size, mode, key, fig)
        assert 0 <= fig["right_tool_rate"] <= 1 and fig["prompt_tokens"] > 0
    assert figures(got["routed"])["tools_per_turn"] < figures(got["all"])["tools_per_turn"] == 13
    assert figures(got["routed"])["prompt_tokens"] < figures(got["all"])["prompt_tokens"]


def _miss(keywords, lang, part=None):
    from agentlab.evals.routing_eval import Ledger, desk_router, load_asks, make_registry
    from agentlab.routing import routing_metrics
    asks = load_asks()
    intents = sorted({a.id.rsplit("-", 1)[0] for a in asks})
    turns = []
    for a in asks:
        if a.lang != lang or (part is not None and intents.index(a.id.rsplit("-", 1)[0]) % 2 != part):
            continue
        reg = make_registry(Ledger(), lang=lang)
        turns.append(a.routing_turn(desk_router(reg, keywords=keywords)([{"role": "user", "content": a.ask}]),
                                    reg.names))
    return routing_metrics(turns)["miss_rate"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_keyword_router_misses_fewer_labelled_asks_in_each_half_and_language(lang):
    """The plain router missed 25% of the English and 14% of the Chinese labelled asks, so routing could not make
    a model pick better. Words for what each tool does (both languages), and every tool when unsure, miss fewer in
    both halves of the intents (every second one), not only on the whole set."""
    for part in (0, 1, None):
        assert _miss(True, lang, part) < _miss(False, lang, part) or _miss(False, lang, part) == 0, (lang, part)
    assert _miss(True, lang) <= 0.05


def test_an_unsure_router_offers_every_tool():
    from agentlab.evals.routing_eval import Ledger, desk_router, make_registry
    reg = make_registry(Ledger(), lang="en")
    assert set(desk_router(reg, keywords=True).offer("hmm")) == set(reg.names)
    assert len(desk_router(reg, keywords=True).offer("delete record E0016")) <= 5


def test_the_default_desk_router_is_the_keyword_router():
    reg = expense.make_registry(expense.Ledger(), lang="en")
    ask = "I need September's expenses as a spreadsheet file for my accountant"
    assert desk_router(reg).offer(ask) == desk_router(reg, keywords=True).offer(ask) != \
        desk_router(reg, keywords=False).offer(ask)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_keyword_router_misses_fewer_held_out_asks(lang):
    """Asks written after the keywords, never used to choose them (data/expense_asks_heldout.jsonl): the keyword
    router must miss fewer of them than the plain one, and no more than two in fourteen."""
    from agentlab.resources import data_file
    from agentlab.routing import routing_metrics
    held = [a for a in load_asks(data_file("expense_asks_heldout.jsonl")) if a.lang == lang]
    labelled = {a.ask for a in load_asks()}
    assert len(held) == 14 and not labelled & {a.ask for a in held}
    reg = expense.make_registry(expense.Ledger(), lang=lang)
    miss = {kw: routing_metrics([a.routing_turn(desk_router(reg, keywords=kw)([{"role": "user", "content": a.ask}]),
                                                reg.names) for a in held])["miss_rate"] for kw in (True, False)}
    assert miss[True] < miss[False] and round(miss[True] * 14) <= 2, miss


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_routed_is_at_least_as_right_as_all_tools_on_the_recordings(size):
    """With the plain router the 1.5B model picked the right tool less often routed (78.6% to 75.0%).
    Recorded again with the keyword router, routed is at least as right as all tools on both models, with under
    half the prompt tokens, and the router offers the needed tool on more than 95% of the asks."""
    path = cassette_path(size)
    if not path.exists():
        pytest.skip(f"{path.name} not recorded")
    got = {mode: figures(turns) for mode, turns in replay(path).items()}
    assert got["routed"]["right_tool_rate"] >= got["all"]["right_tool_rate"], got
    assert got["routed"]["prompt_tokens"] < got["all"]["prompt_tokens"] / 2
    assert got["routed"]["hit_rate"] > 0.95


def test_the_guards_page_quotes_the_recordings():
    """docs/guards.md (both languages) quotes the right-tool rate, prompt tokens and router hit of each recording."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    rows = []
    for size, n in (("0.5b", 56), ("1.5b", 28)):
        if not cassette_path(size).exists():
            pytest.skip(f"{size} not recorded")
        for turns in replay(size).values():
            f = figures(turns)
            rows.append((size.upper(), n, f"{f['right_tool_rate']:.0%}", f"{f['prompt_tokens']:,.0f}",
                         f"{f['hit_rate']:.0%}"))
    for page in ("docs/guards.md", "docs/zh/guards.md"):
        text = (root / page).read_text(encoding="utf-8")
        for size, n, right, tokens, hit in rows:
            assert any(line.startswith(f"| {size} |") and f"| {n} | {right} |" in line and f"| {tokens} | {hit} |" in line
                       for line in text.splitlines()), (page, size, right, tokens, hit)

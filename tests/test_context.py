"""The conversation around the loop: per-turn system prompt, clearing, trimming in pairs."""
import datetime as dt
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlab.context import ContextTooLong, Session, build_system_prompt, clear_chat, estimate_tokens, protocol_problems, trim_messages

SYSTEM = {"role": "system", "content": "You keep the books."}


def test_the_system_prompt_states_today_in_the_users_timezone():
    now = lambda: dt.datetime(2026, 11, 30, 16, 30, tzinfo=dt.UTC)  # noqa: E731
    text = build_system_prompt("Book expenses.", Session(user_id="u42", organisation="acme", page="ledger",
                                                         permissions=("book", "list"), flags={"budgets": True}),
                               now=now)
    assert "2026-12-01 00:30" in text and "Tuesday" in text and "u42" in text and "budgets" in text


def test_clearing_keeps_the_system_prompt_only():
    history = [SYSTEM, {"role": "user", "content": "taxi 45"}, {"role": "assistant", "content": "booked"}]
    assert clear_chat(history) == [SYSTEM]


@st.composite
def conversations(draw):
    """Valid chat histories: a system prompt, then turns of a user message and rounds of tool calls."""
    messages, n = [SYSTEM], 0
    for _ in range(draw(st.integers(1, 6))):
        messages.append({"role": "user", "content": draw(st.text(min_size=1, max_size=60))})
        for _ in range(draw(st.integers(0, 3))):
            k = draw(st.integers(1, 3))
            calls = []
            for _ in range(k):
                n += 1
                calls.append({"id": f"c{n}", "type": "function",
                              "function": {"name": "book", "arguments": json.dumps({"x": draw(st.text(max_size=40))})}})
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": draw(st.text(max_size=80))}
                         for c in calls]
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(st.text(max_size=60))})
    return messages


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.one_of(st.none(), st.integers(1, 400)), st.one_of(st.none(), st.integers(1, 5)))
def test_trimming_keeps_the_protocol_the_system_prompt_and_the_latest_user_turn(history, budget, turns):
    assert protocol_problems(history) == []
    latest = [m for m in history if m["role"] == "user"][-1]
    current = history[max(i for i, m in enumerate(history) if m["role"] == "user"):]
    try:
        out = trim_messages(history, max_tokens=budget, max_turns=turns)
    except ContextTooLong as exc:
        assert budget is not None and estimate_tokens([SYSTEM, *current]) > budget
        assert exc.error.code == "CONTEXT_TOO_LONG" and str(budget) in exc.error.text()
        return
    assert protocol_problems(out) == []
    assert out[0] == SYSTEM and latest in out and out[1]["role"] == "user"
    assert out[-len(current):] == current  # this turn's calls and results are never cut
    if budget is not None:
        assert estimate_tokens(out) <= budget
    if turns is not None:
        assert sum(m["role"] == "user" for m in out) <= turns
    it = iter(history)
    assert all(any(m == h for h in it) for m in out)  # a subsequence: order kept, nothing invented


def test_keeping_the_last_messages_breaks_the_protocol_and_trimming_in_pairs_does_not():
    history = [SYSTEM, {"role": "user", "content": "book three"}]
    history.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "book", "arguments": "{}"}} for i in range(6)]})
    history += [{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(6)]
    history += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "and lunch"}]
    naive = [SYSTEM, *history[-6:]]  # "keep the last few messages"
    assert any("no preceding assistant" in p for p in protocol_problems(naive))
    trimmed = trim_messages(history, max_tokens=estimate_tokens(naive))
    assert protocol_problems(trimmed) == [] and len(trimmed) < len(history)
    assert estimate_tokens(trimmed) <= estimate_tokens(naive)


def test_an_impossible_budget_says_context_too_long_in_both_languages():
    with pytest.raises(ContextTooLong) as exc:
        trim_messages([SYSTEM, {"role": "user", "content": "x" * 4000}], max_tokens=50)
    assert "CONTEXT_TOO_LONG" == exc.value.error.code and "预算" in exc.value.error.text("zh")


def test_the_test_server_refuses_a_broken_history_with_a_400_as_the_real_api_does():
    pytest.importorskip("openai")
    from agentlab.models import ModelError, say
    from agentlab.models.fakeserver import ChatServer
    from agentlab.models.openai_model import OpenAIModel
    history = [SYSTEM, {"role": "user", "content": "book three"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": f"c{i}", "type": "function", "function": {"name": "book", "arguments": "{}"}} for i in range(4)]}]
    history += [{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(4)]
    history += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "and lunch"}]
    with ChatServer([say("fine"), say("fine")]) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="k", sleep=lambda s: None)
        with pytest.raises(ModelError) as exc:
            model.complete([SYSTEM, *history[-5:]], [])  # the naive cut: orphan tool messages
        assert exc.value.code == "BAD_REQUEST" and server.attempts == 1
        trimmed = trim_messages(history, max_tokens=estimate_tokens([SYSTEM, *history[-5:]]))
        assert model.complete(trimmed, []).content == "fine"


def test_a_call_left_unanswered_is_answered_not_run_rather_than_sent_broken():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "two"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}} for i in (1, 2)]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    kept = trim_messages(msgs, max_tokens=10_000)
    assert protocol_problems(msgs) and not protocol_problems(kept)
    assert [m.get("tool_call_id") for m in kept if m["role"] == "tool"] == ["c1", "c2"] and "NOT_RUN" in kept[4]["content"]


# --- trimming: linear, and nothing the docstring promises to keep is dropped ------------------------------
class CountingTokenizer:
    """estimate_tokens, remembering every message it was shown (a tokenizer behind HTTP pays for each)."""

    def __init__(self):
        self.seen: list[str] = []

    def __call__(self, messages):
        self.seen += [json.dumps(m, sort_keys=True) for m in messages]
        return estimate_tokens(messages)


def long_chat(turns: int) -> list[dict]:
    messages = [SYSTEM]
    for i in range(turns):
        messages += [{"role": "user", "content": f"question {i} " + "x" * 200},
                     {"role": "assistant", "content": f"answer {i} " + "y" * 200}]
    return messages


@pytest.mark.parametrize("max_turns", [None, 3])
def test_the_tokenizer_sees_each_message_at_most_once(max_turns):
    history = long_chat(300)
    counter = CountingTokenizer()
    kept = trim_messages(history, max_tokens=1_000, max_turns=max_turns, count=counter)
    assert estimate_tokens(kept) <= 1_000 and kept[0] == SYSTEM and kept[1]["role"] == "user"
    assert len(counter.seen) == len(set(counter.seen)), "a message was counted twice"
    assert len(counter.seen) <= len(kept) + 2  # the kept ones, and the one that no longer fitted


def test_a_leading_developer_prompt_is_kept_like_a_system_prompt():
    developer = {"role": "developer", "content": "Answer in one sentence."}
    history = [developer, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
               {"role": "user", "content": "bye"}]
    assert trim_messages(history) == history
    assert trim_messages(history, max_turns=1) == [developer, history[-1]]
    assert clear_chat(history) == [developer]


def test_a_system_note_mid_conversation_stays_in_place():
    note = {"role": "system", "content": "A person approved refund A1001."}
    history = [SYSTEM, {"role": "user", "content": "refund A1001 " + "x" * 400},
               {"role": "assistant", "content": "held for approval " + "y" * 400}, note,
               {"role": "user", "content": "and now?"}]
    for kw in ({"max_turns": 1}, {"max_tokens": estimate_tokens([SYSTEM, note, history[-1]]) + 5}):
        kept = trim_messages(history, **kw)
        assert kept == [SYSTEM, note, history[-1]], kw


def test_max_tokens_holds_without_any_user_message():
    history = [SYSTEM] + [{"role": "assistant", "content": f"note {i} " + "z" * 400} for i in range(10)]
    kept = trim_messages(history, max_tokens=300)
    assert estimate_tokens(kept) <= 300 and kept[0] == SYSTEM and kept[-1] == history[-1]
    with pytest.raises(ContextTooLong):
        trim_messages([{"role": "system", "content": "s" * 4000}, *history[1:]], max_tokens=300)


def test_list_of_parts_content_is_counted_by_its_text():
    text = "a long question " * 100
    parts = {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "x"}}]}
    assert estimate_tokens([parts]) == estimate_tokens([{"role": "user", "content": text}])
    with pytest.raises(ContextTooLong):
        trim_messages([SYSTEM, parts], max_tokens=100)


# --- trimming messy histories: the two promises, checked over many seeded random chats --------------------------
def _unanswered_or_orphaned(messages):
    """What breaks the chat protocol, by a rule of its own (not protocol_problems, which lives beside the trimmer):
    a tool message that answers no call of the assistant message it follows, or a call with no answer."""
    broken, asked, answered = [], set(), set()
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if m.get("tool_call_id") not in asked or m["tool_call_id"] in answered:
                broken.append(("orphan tool message", i, m.get("tool_call_id")))
            answered.add(m["tool_call_id"])
            continue
        broken += [("call without a result", i, c) for c in sorted(asked - answered)]
        asked, answered = set(), set()
        if m["role"] == "assistant":
            asked = {c["id"] for c in m.get("tool_calls") or ()}
    broken += [("call without a result", len(messages), c) for c in sorted(asked - answered)]
    return broken


def _messy_chat(rng):
    """A history as they arrive in practice: long and short turns, Chinese and English, several calls per message,
    system notes, and the debris of crashes and old bugs (a reply whose call is gone, a call never answered)."""
    words = ["taxi 45 yuan ", "今天坐出租车花了45元，记一笔", "lunch with the team ", '{"ok": true, "data": 1} ', "x"]

    def text():
        return "".join(rng.choice(words) for _ in range(rng.choice([0, 1, 3, 10, 40])))

    messages, n = [SYSTEM], 0
    if rng.random() < 0.2:
        messages.append({"role": "developer", "content": text()})
    for _ in range(rng.randint(1, 9)):
        kind = rng.random()
        if kind < 0.35:
            messages.append({"role": "user", "content": text() or "?"})
        elif kind < 0.45:
            messages.append({"role": "assistant", "content": text() or "ok"})
        elif kind < 0.5:
            messages.append({"role": "system", "content": "note: " + text()})
        elif kind < 0.6:  # a reply whose assistant message was cut away by someone else's trimming
            messages.append({"role": "tool", "tool_call_id": f"gone{rng.randint(0, 3)}", "content": text()})
        else:
            calls = []
            for _ in range(rng.randint(1, 4)):
                n += 1
                calls.append({"id": f"c{n}", "type": "function",
                              "function": {"name": "book_expense_record", "arguments": json.dumps({"item": text()})}})
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for c in calls:
                if rng.random() < 0.85:  # some calls never got their reply (a crash between call and answer)
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": text()})
    if rng.random() < 0.9:
        messages.append({"role": "user", "content": text() or "and now?"})
    return messages


@pytest.mark.parametrize("seed", range(8))
def test_trimming_random_messy_chats_leaves_no_orphan_and_never_exceeds_the_budget(seed):
    """Over a few thousand seeded random histories (with orphans and unanswered calls in them): no tool message
    is kept without the call it answers, no call without its result, and the kept history never counts more
    than the budget. The one exception the docstring makes is ContextTooLong, raised only when the system prompt
    and the current turn alone do not fit (then nothing is returned at all)."""
    rng = random.Random(seed)
    for _ in range(400):
        history = _messy_chat(rng)
        budget = rng.choice([None, rng.randint(10, 120), rng.randint(100, 500), rng.randint(400, 3000)])
        turns = rng.choice([None, None, 1, 2, 4])
        try:
            out = trim_messages(history, max_tokens=budget, max_turns=turns)
        except ContextTooLong as exc:
            minimum = trim_messages(history, max_turns=1)  # the system prompt, the notes and the current turn
            assert budget is not None and estimate_tokens(minimum) > budget, (seed, history, budget)
            assert exc.needed > budget
            continue
        assert _unanswered_or_orphaned(out) == [], (seed, history, budget, turns, out)
        if budget is not None:
            assert estimate_tokens(out) <= budget, (seed, estimate_tokens(out), budget, history, turns)
        assert out[: 1] == [SYSTEM]

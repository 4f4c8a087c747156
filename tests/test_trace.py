import json
import re

import pytest
from typography import ascii_colons

from agentlab.trace import COLORS, Event, first_divergence, outcome, read_jsonl, side_by_side_html, to_dataframe, to_jsonl
from agentlab.workbook.demo import compare_loops

FIELDS = ["session_id", "turn_id", "round_index", "tool_name", "tool_call_id", "args_raw", "parse_ok", "validate_ok",
          "exec_ok", "error_code", "error_category", "error_stage", "retry_count", "latency_ms", "prompt_tokens",
          "completion_tokens", "final_status", "run_id", "guard_config"]


def test_jsonl_roundtrip_and_dataframe(tmp_path):
    c = compare_loops("camel_case")
    path = to_jsonl(c.guarded.events, tmp_path / "t.jsonl")
    back = read_jsonl(path)
    assert back == list(c.guarded.events)
    df = to_dataframe(back)
    assert set(FIELDS) <= set(df.columns) and len(df) == len(back)
    assert (df.final_status == "done_after_self_correction").all()
    assert df.loc[df.error_code == "INVALID_ARGS", "error_category"].iloc[0] == "validation"


def test_side_by_side_marks_the_first_divergence():
    c = compare_loops("camel_case")
    html = side_by_side_html(c.naive.events, c.guarded.events)
    assert html.count("outline:3px solid") == 2  # both cells of one row
    assert "INVALID_ARGS" in html and "TOOL_ERROR" in html
    assert first_divergence(list(c.naive.events), list(c.guarded.events)) is not None
    assert first_divergence(list(c.guarded.events), list(c.guarded.events)) is None


def _ev(**kw):
    return Event(run_id="r", session_id="s", turn_id=1, round_index=1, **kw)


def test_each_outcome_has_its_own_colour():
    """A reader tells a model's mistake, a failure and a guard apart by colour alone."""
    cases = {
        "invalid": _ev(kind="tool", error_code="INVALID_ARGS", error_category="validation", error_stage="structure"),
        "error": _ev(kind="tool", error_code="TOOL_ERROR", error_category="fatal", error_stage="execution"),
        "blocked": _ev(kind="tool", error_code="LOOP_DETECTED", error_category="fatal", error_stage="rule_blocked"),
        "ok": _ev(kind="tool"),
        "text": _ev(kind="model", model_visible="hello"),
    }
    for expected, event in cases.items():
        assert outcome(event) == expected
        html = side_by_side_html([event], [event])
        assert f"background:{COLORS[expected]}" in html
    assert len(set(COLORS.values())) == len(COLORS)
    assert outcome(_ev(kind="end", final_status="done")) == "ok"
    assert outcome(_ev(kind="end", final_status="escalated", error_stage="rule_blocked")) == "blocked"
    assert outcome(_ev(kind="end", final_status="escalated", error_stage="execution")) == "error"


def test_a_structured_error_is_shown_whole_in_a_trace_did_you_mean_included():
    """The trace cut the guarded error at 220 characters, at "problem…", just before what the model should do."""
    for fault, lesson in (("camel_case", "did you mean 'order_id'?"), ("unknown_tool", "Did you mean 'create_refund'?")):
        c = compare_loops(fault)
        html = side_by_side_html(c.naive.events, c.guarded.events)
        assert lesson in html.replace("&#x27;", "'"), fault
        told = next(e.model_visible for e in c.guarded.tool_events if e.error_code)
        for hint in (json.loads(told)["error"].get("hint"),
                     *[p["hint"] for p in json.loads(told)["error"].get("problems", [])]):
            assert hint.replace("'", "&#x27;") in html  # every hint, whole


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_problem_with_the_whole_call_is_said_once_in_words_never_as_its_json_path(lang):
    """The retail desk's refusal read "…找不到这个订单 · $：rule（找不到这个订单）": the JSON path of the whole call and the
    problem's code, and the refusal twice."""
    from agentlab.errors import make_error, render
    from agentlab.tools import rule
    from agentlab.trace import Event
    said = {"en": "no order has that number", "zh": "找不到这个订单"}[lang]
    error = make_error("INVALID_ARGS", problems=[rule("$", "no order has that number", "找不到这个订单"),
                                                 rule("amount", "must not exceed 199.0", "不能超过 199.0")])
    event = Event(run_id="r", session_id="s", turn_id=1, round_index=1, kind="tool", tool_name="get_order",
                  args_raw='{"order_id": "A9"}', parse_ok=True, validate_ok=False, error_code="INVALID_ARGS",
                  model_visible=render(error, lang))
    shown = re.sub(r"<[^>]+>", "", side_by_side_html([event], [event], lang=lang))  # the words, not the tooltips
    assert shown.count(said) == 2 and "$" not in shown, shown  # once in each of the two cells
    assert "amount" in shown  # a problem with one field still names it


def test_two_runs_side_by_side_speak_the_readers_language():
    """A Chinese notebook showed "naive: budget_exhausted", "model" and "(retries 2)" in its traces; the titles,
    roles and marks follow ``lang`` (what the model and the tools said stays as they said it)."""
    from agentlab.runs import compare_html
    from agentlab.workbook.demo import compare_loops

    c = compare_loops("flaky_tool", lang="zh")
    page = compare_html(c.naive, c.guarded, lang="zh")
    assert "朴素循环：" in page and not ascii_colons(page, page=True), ascii_colons(page, page=True)
    # what a validation error told the model, each problem's field and reason, as a Chinese cell shows it
    bad = compare_loops("wrong_type", lang="zh")
    told = compare_html(bad.naive, bad.guarded, lang="zh")
    assert "INVALID_ARGS" in told and not ascii_colons(told, page=True), ascii_colons(told, page=True)
    assert "<b>模型</b>" in page and "<b>model</b>" not in page
    assert "（发出了 2 次）" in page and "(sent" not in page and "<b>完成</b>" in page
    english = compare_html(c.naive, c.guarded)
    assert f"naive: {c.naive.status}" in english and "<b>model</b>" in english and "(sent 2 times)" in english


def test_a_tool_call_resent_says_how_many_times_it_went_out():
    """Under a lost reply the naive trace showed one create_refund "→ ok (retries 1)" beside two refunds written: the
    row now says the call went out twice."""
    from agentlab.runs import compare_html
    from agentlab.workbook.demo import compare_loops
    c = compare_loops("lost_reply")
    assert len(c.naive_state["refunds"]) == 2
    assert "(sent 2 times)" in compare_html(c.naive, c.guarded) and "(retries 1)" not in compare_html(c.naive, c.guarded)


def test_every_note_the_loops_write_can_be_said_in_chinese():
    """A run's reason and an event's note are written by the loops in English; a Chinese reader meets them in
    traces, the app and the demo's report, so each one the guarded loop writes on any fault has its Chinese
    (what the naive loop passed on from a tool or an API, and a tool and its code, stay as they were said)."""
    import re

    from agentlab.models.faults import FAULTS
    from agentlab.trace import note_text
    from agentlab.workbook.demo import compare_loops
    cjk = re.compile(r"[\u3400-\u9fff]")
    technical = re.compile(r"\w+: [A-Z_]+")
    unsaid = set()
    for fault in FAULTS:
        guarded = compare_loops(fault).guarded
        # an error's note is the detail a tool or an API gave (redacted), for a person who reads traces: kept as said
        for note in [guarded.reason, *(e.note for e in guarded.events if not e.error_code)]:
            if note and not technical.fullmatch(note) and not cjk.search(note_text(note, "zh")):
                unsaid.add(note)
    assert not unsaid, unsaid


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_side_is_shown_under_its_own_step_numbers(lang):
    """The side-by-side view paired the two runs' events by position and numbered each row by the left run's step: a
    guarded run that escalated after step 1 showed its ending under the naive run's step 2, while the account above it
    said "in 1 step". Rows now pair the events of one step; every event sits under its own step's number. A model turn
    whose API call failed says the failure, not "(tool calls)"."""
    import re

    from agentlab.i18n import t
    from agentlab.workbook.demo import compare_loops

    def rows(c):
        page = side_by_side_html(c.naive.events, c.guarded.events, lang=lang)
        return [(int(n), re.findall(r"<td style='(?:background|color)[^>]*>(.*?)</td>", cells, re.S))
                for n, cells in re.findall(r"<tr><td[^>]*>(\d+)</td>(.*?)</tr>", page, re.S)]

    for fault in ("leaky_tool", "api_401", "repeat_call", "unknown_tool"):
        c = compare_loops(fault, lang=lang)
        shown = rows(c)
        for side, run in ((0, c.naive), (1, c.guarded)):
            cells = [(n, cell[side]) for n, cell in shown if cell[side] != "—"]
            assert [n for n, _ in cells] == [e.round_index for e in run.events], (fault, side)
    ended = [n for n, cells in rows(compare_loops("leaky_tool", lang=lang)) if f"<b>{t('status.escalated', lang)}</b>" in cells[1]]
    assert ended == [1]
    failed = [cells[0] for _, cells in rows(compare_loops("api_401", lang=lang)) if "UNAUTHENTICATED" in cells[0]]
    assert failed and t("cell.tool_calls", lang) not in failed[0], failed


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_crash_in_the_trace_is_said_in_words_with_pythons_text_on_hover(lang):
    """The naive trace's last row read "why: JSONDecodeError: Unterminated string starting at: line 1 column 27" where
    the account beside it said what happened in words."""
    import re

    from agentlab.i18n import t
    from agentlab.runs import compare_html
    from agentlab.workbook.demo import compare_loops
    c = compare_loops("truncated_json", lang=lang)
    page = compare_html(c.naive, c.guarded, lang=lang)
    from html import escape
    assert escape(t("explain.crash.JSONDecodeError", lang)) in page
    shown = re.sub(r"title='[^']*'", "", page)
    assert "JSONDecodeError" not in shown, shown[shown.find("JSONDecodeError") - 80:][:200]

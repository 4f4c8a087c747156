"""The twelve pre-launch checks run against a desk: both desks pass, and a desk broken behind one check
fails that check and only that one (each check acts on the desk, so a setting that still says "on" over
broken code does not fool it)."""
import dataclasses
import functools
import json

import pytest
from typography import in_chinese_lines

import agentlab.loop
import agentlab.scenarios.conversation as conversation
import agentlab.tools
from agentlab.cli import main
from agentlab.errors import CODES
from agentlab.evals.checklist import CHECKS, run_checklist
from agentlab.guards import GuardConfig
from agentlab.retry import RetryPolicy
from agentlab.routing import Router
from agentlab.scenarios import get
from agentlab.scenarios.conversation import Conversation
from agentlab.tools import Registry
from agentlab.trace import Event

DESKS = ["aftersales", "expense"]
NOT_FOR = {"aftersales": {5}}  # four tools: nothing to route


@pytest.mark.parametrize("name", DESKS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_desks_pass_every_check_that_applies_with_evidence(name, lang):
    results = run_checklist(get(name), lang)
    assert [r.number for r in results] == list(range(1, 13)) == [c.number for c in CHECKS]
    assert [(r.number, r.evidence) for r in results if r.status == "fail"] == []
    assert {r.number for r in results if r.status == "n/a"} == NOT_FOR.get(name, set())
    assert all(r.evidence and r.title for r in results)
    assert all(r.passed == (r.status == "pass") for r in results)


def test_a_check_that_does_not_apply_says_why_and_is_not_a_pass():
    routing = run_checklist(get("aftersales"))[4]
    assert routing.status == "n/a" and not routing.passed
    assert "4 tools" in routing.evidence and "above 10" in routing.evidence


# --- one breakage per check: the part of the desk, its guards or its code that the check is about -----------
def _registry(scenario, change):
    """The desk with every registry it builds passed through ``change``."""
    build = scenario.make_registry
    return dataclasses.replace(scenario, make_registry=lambda state, **kw: change(build(state, **kw)))


def _tools(reg, change):
    return Registry([change(t) for t in reg], lang=reg.lang, clean=reg.clean, resources=reg.resources)


def _guards(monkeypatch, **off):
    """Every chat of the desk built with these guard settings (the desk's own defaults, changed)."""
    monkeypatch.setattr(conversation, "GuardConfig", functools.partial(GuardConfig, **off))


def break_1_the_conversation_freezes_its_date(monkeypatch, s):
    built = Conversation.system_prompt

    def frozen(self):
        if not hasattr(self, "_frozen"):
            self._frozen = built(self)
        return self._frozen
    monkeypatch.setattr(Conversation, "system_prompt", frozen)
    return s


def break_1_the_prompt_reads_no_clock(monkeypatch, s):
    build = s.build_prompt
    return dataclasses.replace(s, build_prompt=lambda lang, *, state=None, session=None, naive=False:
                               build(lang, state=None, session=session, naive=naive))


def break_2_clear_keeps_the_session(monkeypatch, s):
    monkeypatch.setattr(Conversation, "clear", lambda self: setattr(self, "messages", []))
    return s


def break_2_clear_forgets_nothing(monkeypatch, s):
    monkeypatch.setattr(Conversation, "clear", lambda self: None)
    return s


def break_3_trimming_cuts_anywhere(monkeypatch, s):
    def last_six(messages, *, max_tokens=None, max_turns=None, count=None):
        return [messages[0], *messages[1:][-6:]]
    monkeypatch.setattr(conversation, "trim_messages", last_six)
    return s


def break_4_contracts_lose_their_ranges(monkeypatch, s):
    def unbounded(tool):
        props = {k: {x: v for x, v in p.items() if x not in ("maximum", "exclusiveMaximum")}
                 for k, p in tool.parameters.get("properties", {}).items()}
        return dataclasses.replace(tool, parameters={**tool.parameters, "properties": props})
    return _registry(s, lambda reg: _tools(reg, unbounded))


def break_5_the_router_never_offers_the_first_tool(monkeypatch, s):
    offer = Router.offer
    monkeypatch.setattr(Router, "offer", lambda self, q: [n for n in offer(self, q) if n != self.registry.names[0]])
    return s


def break_6_required_fields_are_not_checked_in_code(monkeypatch, s):
    compile_schema = agentlab.tools.compile_schema  # the model still reads "required"; the code no longer checks it
    monkeypatch.setattr(agentlab.tools, "compile_schema",
                        lambda schema, **kw: compile_schema({k: v for k, v in schema.items() if k != "required"}, **kw))
    return s


def break_6_only_an_empty_call_is_refused(monkeypatch, s):
    compile_schema = agentlab.tools.compile_schema  # code that refuses {} but lets a call with one field missing run

    def lax(schema, **kw):
        strict, loose = compile_schema(schema, **kw), compile_schema({k: v for k, v in schema.items() if k != "required"}, **kw)
        return lambda value: strict(value) if value == {} else loose(value)
    monkeypatch.setattr(agentlab.tools, "compile_schema", lax)
    return s


def break_7_no_step_budget_of_its_own(monkeypatch, s):
    return dataclasses.replace(s, step_budget=None)


def break_8_only_the_first_call_is_answered(monkeypatch, s):
    _guards(monkeypatch, all_calls=False)
    return s


def break_9_errors_are_a_bare_500(monkeypatch, s):
    _guards(monkeypatch, readable_errors=False)
    return s


def break_9_no_second_try(monkeypatch, s):
    _guards(monkeypatch, self_correction=0)
    return s


RISKY = {"expense": "delete_expense_record", "aftersales": "create_refund"}


def break_10_the_risky_call_runs_without_confirmation(monkeypatch, s):
    # a delete (a large refund) still carries its business key, so a look at the tools' settings sees it "guarded"
    return _registry(s, lambda reg: _tools(reg, lambda tool: dataclasses.replace(tool, needs_approval=None)
                                           if tool.name == RISKY[s.name] else tool))


def break_10_writes_are_not_deduplicated(monkeypatch, s):
    _guards(monkeypatch, idempotency=False)
    return s


def break_11_a_401_is_resent(monkeypatch, s):
    monkeypatch.setitem(CODES, "UNAUTHENTICATED", ("transient", "execution"))
    return s


def break_11_no_jitter(monkeypatch, s):
    _guards(monkeypatch, retry=RetryPolicy(jitter="none"))
    return s


def break_12_the_trace_loses_latency_and_raw_arguments(monkeypatch, s):
    monkeypatch.setattr(agentlab.loop, "Event", lambda **kw: Event(**{**kw, "latency_ms": 0.0, "args_raw": None}))
    return s


BREAKAGES = [(int(f.__name__.split("_")[1]), f) for f in (
    break_1_the_conversation_freezes_its_date, break_1_the_prompt_reads_no_clock, break_2_clear_keeps_the_session,
    break_2_clear_forgets_nothing, break_3_trimming_cuts_anywhere, break_4_contracts_lose_their_ranges,
    break_5_the_router_never_offers_the_first_tool, break_6_required_fields_are_not_checked_in_code,
    break_6_only_an_empty_call_is_refused,
    break_7_no_step_budget_of_its_own, break_8_only_the_first_call_is_answered, break_9_errors_are_a_bare_500,
    break_9_no_second_try, break_10_the_risky_call_runs_without_confirmation, break_10_writes_are_not_deduplicated,
    break_11_a_401_is_resent, break_11_no_jitter, break_12_the_trace_loses_latency_and_raw_arguments)]
# without the idempotency guard a second refund of an order is still refused by the after-sales desk's own rule
# (only a paid order is refunded): that desk stays safe, so this breakage is only a breakage of the bookkeeping desk
SAFE_ANYWAY = {("aftersales", "break_10_writes_are_not_deduplicated")}


def test_every_check_has_a_breakage():
    assert {n for n, _ in BREAKAGES} == {c.number for c in CHECKS}


@pytest.mark.parametrize("name", DESKS)
@pytest.mark.parametrize("item, breakage", BREAKAGES, ids=[f.__name__[6:] for _, f in BREAKAGES])
def test_a_desk_broken_behind_one_check_fails_that_check_and_no_other(name, item, breakage, monkeypatch):
    results = run_checklist(breakage(monkeypatch, get(name)))
    if (name, breakage.__name__) in SAFE_ANYWAY:
        item = 0
    failed = {r.number: r.evidence for r in results if r.status == "fail"}
    na = {r.number for r in results if r.status == "n/a"}
    if item in NOT_FOR.get(name, set()):
        assert failed == {} and na == {item}  # it still cannot apply, and says so
    else:
        assert set(failed) == ({item} - {0}), failed
        assert na == NOT_FOR.get(name, set())


def test_the_evidence_says_what_went_wrong(monkeypatch):
    s = break_1_the_conversation_freezes_its_date(monkeypatch, get("expense"))
    assert "at 2027-01-15, dated 2026-03-02" in run_checklist(s)[0].evidence
    monkeypatch.undo()
    s = break_12_the_trace_loses_latency_and_raw_arguments(monkeypatch, get("expense"))
    assert "missing or wrong: args_raw, latency_ms" in run_checklist(s)[11].evidence


def test_the_command_prints_pass_or_fail_and_exits_by_the_result(capsys):
    assert main(["checklist", "--scenario", "expense", "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert out.count("通过") >= 12 and "12 项中通过 12 项" in out


@pytest.mark.parametrize("desk", ["aftersales", "expense"])
def test_the_chinese_evidence_lists_as_chinese_does(capsys, desk, monkeypatch):
    """The evidence listed what it saw with ", " and "status: n" in Chinese sentences ("4xx 各发送次数：400: 1, 401: 1"),
    and a long list ended "(+15)"; the lists are each language's own (400（1 次）、401（1 次）, （另 15 个）)."""
    assert main(["checklist", "--scenario", desk, "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "（1 次）、" in out and not in_chinese_lines(out), in_chinese_lines(out)
    broken = break_4_contracts_lose_their_ranges(monkeypatch, get(desk))
    evidence = run_checklist(broken, "zh")[3].evidence
    assert "（没有范围）" in evidence and "no range" not in evidence and not in_chinese_lines(evidence), evidence


def test_the_command_says_na_and_does_not_count_it_as_a_pass(capsys):
    assert main(["checklist", "--scenario", "aftersales"]) == 0
    out = capsys.readouterr().out
    assert "N/A    5." in out and "11 of 11 checks pass; 1 does not apply to this desk." in out
    assert main(["checklist", "--scenario", "aftersales", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["number"], r["status"], r["passed"]) for r in rows if r["status"] != "pass"] == [(5, "n/a", False)]


def test_the_command_exits_1_when_a_check_fails(capsys, monkeypatch):
    break_11_a_401_is_resent(monkeypatch, None)
    assert main(["checklist", "--scenario", "expense"]) == 1
    assert "11 of 12 checks pass." in capsys.readouterr().out


def test_demo_on_the_expense_desk_tells_the_date_lesson(capsys):
    assert main(["demo", "--scenario", "expense"]) == 0
    out = capsys.readouterr().out
    assert "2026-09-21" in out and "2026-10-15" in out and "correct" in out


def test_a_desk_without_its_safeguards_fails_the_checks_that_look_for_them():
    broken = dataclasses.replace(get("expense"), build_prompt=None, context_budget=None, step_budget=None)
    failed = {r.number for r in run_checklist(broken) if not r.passed}
    assert {1, 3, 7} <= failed


# --- item 11 and item 6 must not be fooled: the cases that tell a right desk from a wrong one ---------
@pytest.mark.parametrize("code", ["BAD_REQUEST", "PERMISSION_DENIED", "NOT_FOUND"])
def test_item_11_fails_a_desk_that_resends_a_4xx_that_is_not_transient(code, monkeypatch):
    monkeypatch.setitem(CODES, code, ("transient", CODES[code][1]))  # 1 call becomes 3
    (item,) = [r for r in run_checklist(get("expense")) if r.number == 11]
    assert item.status == "fail", item.evidence


def test_item_11_fails_a_desk_whose_waits_do_not_grow(monkeypatch):
    _guards(monkeypatch, retry=RetryPolicy(base=0.5, cap=0.5))  # jittered, but every wait drawn from the same range
    (item,) = [r for r in run_checklist(get("expense")) if r.number == 11]
    assert item.status == "fail", item.evidence


def test_item_6_does_not_pass_a_desk_whose_tools_declare_no_required_field():
    s = _registry(get("expense"), lambda reg: _tools(reg, lambda tool: dataclasses.replace(
        tool, parameters={k: v for k, v in tool.parameters.items() if k != "required"})))
    (item,) = [r for r in run_checklist(s) if r.number == 6]
    assert item.status == "n/a" and "required" in item.evidence, item.evidence


def test_one_check_that_does_not_apply_is_said_in_the_singular():
    from agentlab.i18n import t
    assert t("checklist.total_na", "en", n=10, total=11, na=1).endswith("1 does not apply to this desk.")
    assert t("capstone.score_na", "en", na=2) == " (2 do not apply to this desk.)"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_check_4_names_each_place_once_with_every_reason_it_was_found_for(lang, tmp_path, capsys):
    """The capstone desk's check 4 read "19 (get_order, get_order.order_id, get_order.order_id, ...)": a field the linter
    found and that lacks a format was listed twice, a tool's own finding had no reason, and the count was of findings."""
    import re

    from agentlab.i18n import t
    assert main(["capstone", "--copy", str(tmp_path / "cap")]) == 0
    capsys.readouterr()
    assert main(["capstone", "--desk", str(tmp_path / "cap" / "desk.py"), "--lang", lang]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if t("checklist.why.no_format", lang) in x)
    places = re.findall(r"([a-z_]+(?:\.[a-z_]+)?) ?[（(][^+]", line)
    assert places and len(places) == len(set(places)), line
    assert t("checklist.why.AL002", lang) in line and t("checklist.why.no_format", lang) in line, line

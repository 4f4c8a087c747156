import re

import pytest

from agentlab.workbook.demo import compare_expense, compare_loops, explain, guards_that_acted, trace_text


@pytest.mark.parametrize("fault,guard", [("camel_case", "validate"), ("lost_reply", "idempotency"),
                                         ("api_429", "retry"), ("hanging_tool", "timeout"),
                                         ("leaky_tool", "escalate"), ("duplicate_call", "idempotency")])
def test_the_guard_that_acted_is_named(fault, guard):
    assert guard in guards_that_acted(compare_loops(fault).guarded)


def test_explanations_in_both_languages():
    c = compare_loops("lost_reply")
    en, zh = explain(c, "en"), explain(c, "zh")
    assert len(en) == len(zh) and "398 yuan" in " ".join(en) and "398 元" in " ".join(zh)  # an amount as a person writes it, not 398.0
    assert "step 2" in trace_text(c.naive)


def test_caught_by_is_read_from_the_trace_for_every_fault():
    """Notebooks 00 and 08 show caught_by_guards: the guarded run's trace, never the fault table's intention."""
    from agentlab.models.faults import FAULTS
    from agentlab.workbook.demo import caught_by_guards
    seen = {}
    for fault in FAULTS:
        c = compare_loops(fault)
        seen[fault] = caught_by_guards(c)
        assert seen[fault] == (", ".join(guards_that_acted(c.guarded)) or "-")
    assert seen["api_401"] == "escalate"  # the trace: it stopped and handed over (the table says "fatal stop")
    assert seen["leaky_tool"] == "readable_errors, escalate"  # the raw exception never reached the model
    assert seen["parallel_call"] == "idempotency, all_calls"
    # a Chinese table's list: each guard named in Chinese, then listed with 、 (idempotency、all_calls was shown)
    assert caught_by_guards(compare_loops("parallel_call"), "zh") == "幂等、执行全部调用"
    assert caught_by_guards(compare_loops("leaky_tool"), "zh") == "结构化错误、转人工"


def test_readable_errors_is_named_only_when_the_model_read_a_record():
    from agentlab.guards import GuardConfig
    bare = compare_loops("leaky_tool", config=GuardConfig(readable_errors=False, timeout=0.1)).guarded
    assert "readable_errors" not in guards_that_acted(bare)


def test_runaway_faults_show_the_breaker_and_the_step_budget():
    """A model that never answers: the same call again is the breaker's, a ping-pong with new arguments the budget's;
    both are in the fault list, so the fault x outcome matrices of notebooks 00 and 08 show them."""
    from agentlab.guards import GuardConfig
    from agentlab.models.faults import FAULTS, MODEL_FAULTS
    from agentlab.workbook.demo import caught_by_guards
    assert {"repeat_call", "ping_pong"} <= set(MODEL_FAULTS)
    assert FAULTS["repeat_call"].caught_by == "repeat_limit" and FAULTS["ping_pong"].caught_by == "step_budget"
    rep = compare_loops("repeat_call")
    assert rep.guarded.status == "escalated" and rep.guarded.tool_events[-1].error_code == "LOOP_DETECTED"
    assert rep.naive.status == "budget_exhausted" and rep.naive.steps == 12  # only the naive loop's hard cap
    assert "breaker" in caught_by_guards(rep)
    pp = compare_loops("ping_pong")
    budget = GuardConfig().step_budget
    assert pp.guarded.status == "budget_exhausted" and pp.guarded.steps == budget
    calls = [(e.tool_name, e.args_raw) for e in pp.guarded.tool_events]
    assert len(set(calls)) == len(calls)  # never the same call twice: the breaker has nothing to catch
    assert "budget" in caught_by_guards(pp)


def test_demo_command_takes_the_runaway_faults(capsys):
    from agentlab.cli import main
    for fault in ("repeat_call", "ping_pong"):
        main(["demo", "--fault", fault])
        assert "budget" in capsys.readouterr().out.lower()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_demos_table_lines_up_in_a_terminal_in_both_languages(lang):
    """Each column of the demo's summary starts at the same column of the terminal on every line, Chinese included
    (its columns were padded by characters, and a Chinese word takes two columns)."""
    from agentlab.i18n import columns
    from agentlab.workbook.demo import demo_report
    lines = demo_report(compare_loops(None), lang).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(("loop", "循环")))
    table = lines[at:at + 3]
    # the outcome, the last column, starts at one terminal column on every line
    assert len({columns(line[:line.rindex("  ") + 2]) for line in table}) == 1, table
    # each number ends at one terminal column on every row
    ends = [[columns(line[:m.end()]) for m in re.finditer(r"\d+(?= )", line)] for line in table[1:]]
    assert len({tuple(e) for e in ends}) == 1, table


def test_a_fault_s_account_says_what_its_guards_would_have_caught_anyway():
    """The opening demo's script writes orderId by design: with a harmless repeated read chosen, "what caught it" named
    the contract check, and a PM read the model's own mistake, caught, as the fault caught."""
    from agentlab.i18n import t
    from agentlab.workbook.demo import make_model, seed_demo_model

    def said(fault, model, lang):
        c = compare_loops(fault, lang=lang, model=lambda: model(lang), question=model is seed_demo_model)
        return explain(c, lang)

    for lang in ("en", "zh"):
        whole = t("explain.caught_anyway_all", lang, guard=t("guard.validate", lang))
        part = t("explain.caught_anyway", lang, guard=t("guard.validate", lang))
        assert whole in said("duplicate_call", seed_demo_model, lang)  # the repeat does nothing: all of it is the script's
        assert part in said("api_429", seed_demo_model, lang)  # the resend is the fault's, the contract check is not
        # the fault put in place of the script's own mistake, on the same step: the guard acted on the fault's call
        replaced = explain(compare_loops("unknown_tool", lang=lang, model=lambda lang=lang: seed_demo_model(lang), question=True,
                                         at_step=1), lang)
        assert not any(line in replaced for line in (whole, part)), replaced
        clean = said("camel_case", make_model, lang)  # a model that makes no mistake of its own: the fault's alone
        assert not any(line in clean for line in (whole, part)) and t("explain.caught", lang, guard=t(
            "guard.validate", lang)) in clean
        # all of it the script's own: no "what caught it" above the line that says none of it is the fault's
        assert t("explain.caught", lang, guard=t("guard.validate", lang)) not in said("duplicate_call", seed_demo_model, lang)


def test_a_tool_fault_on_a_tool_the_model_never_calls_is_said_to_have_never_fired():
    """The demo's question refunds nothing: a write fault (a lost reply) never fired, and the page gave no sign of it."""
    from agentlab.i18n import t
    from agentlab.workbook.demo import seed_demo_model
    for lang in ("en", "zh"):
        c = compare_loops("lost_reply", lang=lang, model=lambda lang=lang: seed_demo_model(lang), question=True)
        assert t("explain.not_injected_tool", lang, tool="create_refund") in explain(c, lang)
        fired = explain(compare_loops("lost_reply", lang=lang), lang)
        assert t("explain.not_injected_tool", lang, tool="create_refund") not in fired


def test_what_the_page_says_acted_is_on_the_trace_it_shows():
    """A PM in a real browser: the bookkeeping desk's flaky tool was credited to the idempotency key alone though its
    trace shows a resend; a 429's resend was named but no row showed it; the retail store's refusals were credited to
    the contract check the page said they passed; a crash read "崩溃 崩溃：…"."""
    from agentlab.i18n import t
    from agentlab.scenarios import retail
    from agentlab.trace import side_by_side_html
    from agentlab.workbook.demo import compare_expense, compare_retail

    flaky = compare_expense("flaky_tool")
    assert "retry" in guards_that_acted(flaky.guarded)
    limited = compare_loops("api_429")
    assert any(e.kind == "model" and e.retry_count for e in limited.guarded.events)
    shown = side_by_side_html(limited.naive.events, limited.guarded.events, lang="en")
    assert t("cell.retries", "en", n=1) in shown
    if retail.available():
        assert "validate" not in guards_that_acted(compare_retail("ping_pong").guarded)
    crashed = compare_loops("api_500")  # the naive loop crashes on the model's 500
    zh = side_by_side_html(crashed.naive.events, crashed.guarded.events, lang="zh")
    assert "崩溃 崩溃" not in zh.replace("</b>", "").replace("<b>", "") and "崩溃" in zh


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_traces_say_a_call_the_same_way_and_a_silent_end_says_so(lang):
    """The guarded trace read "model:  → get_order" beside the naive "model: get_order"; a run out of steps ended
    "用户看到：" and nothing after it."""
    from agentlab.i18n import t
    from agentlab.workbook.demo import compare_loops, trace_text
    c = compare_loops("ping_pong", lang=lang)
    naive, guarded = trace_text(c.naive, lang=lang), trace_text(c.guarded, lang=lang)
    model = t("trace.model", lang, text="")
    assert not any(line.rstrip().endswith(model.strip()) or (model + " →") in line
                   for line in (naive + "\n" + guarded).splitlines()), guarded
    silent = t("trace.end_silent", lang, status=t("status.budget_exhausted", lang))
    assert silent in naive, naive


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_account_says_what_crashed_the_naive_loop_in_words_not_an_exception_name(lang):
    """The account for people who do not read traces said "crashed (JSONDecodeError)", "(KeyError)", "(ModelError)"."""
    import re

    from agentlab.models.faults import FAULTS
    from agentlab.workbook.demo import compare_loops, explain
    crashed = 0
    for fault in FAULTS:
        c = compare_loops(fault, lang=lang)
        if c.naive.status != "failed":
            continue
        crashed += 1
        said = " ".join(explain(c, lang))
        assert not re.search(r"\b\w+(?:Error|Exception)\b", said), (fault, said)
    assert crashed >= 3


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_hanging_tool_says_what_it_cost_the_naive_loop(lang):
    """Under "the tool hangs" the two traces were the same and the naive loop "finished, correct": a PM read a tool
    that hangs as harmless. The account says how long the naive loop waited with nothing to stop it."""
    from agentlab.i18n import t
    from agentlab.scenarios import retail
    from agentlab.workbook.demo import compare_expense, compare_loops, compare_retail, explain
    opening = t("explain.hang", lang, naive="X", guarded="Y").split("X")[0]
    for compare in (compare_loops, compare_expense, *((compare_retail,) if retail.available() else ())):
        said = explain(compare("hanging_tool", lang=lang), lang)
        assert any(line.startswith(opening) for line in said), (compare.__name__, said)
    assert not any(line.startswith(opening) for line in explain(compare_loops("flaky_tool", lang=lang), lang))


def test_a_wrong_run_says_which_data_is_wrong():
    """A refund of 200,000 yuan on a 199-yuan order was "said done, but the data is wrong", the amount named nowhere."""
    from agentlab.workbook.demo import compare_loops, explain
    said = " ".join(explain(compare_loops("out_of_range"), "en"))
    assert "200000" in said, said
    said = " ".join(explain(compare_loops("out_of_range", lang="zh"), "zh"))
    assert "200000" in said, said


def test_a_model_fault_set_past_the_models_last_step_is_said_never_to_have_fired_and_a_hang_that_never_was_waits_nothing():
    """Notebook 09's injector showed duplicate_call at step 4 of a two-step recording as a run where no guard was
    needed, and hanging_tool on a tool the model never called said both "never fired" and "waited 0.00 s"."""
    from agentlab.i18n import t
    for lang in ("en", "zh"):
        late = compare_loops("duplicate_call", at_step=9, lang=lang)
        assert late.injected is False and t("explain.not_injected", lang, step=9) in explain(late, lang)
        assert compare_loops("duplicate_call", lang=lang).injected is True
        from agentlab.models import ScriptedModel, say
        hang = explain(compare_loops("hanging_tool", lang=lang, model=lambda: ScriptedModel([say("No tool needed.")]),
                                     question=True, hang_seconds=0.05), lang)
        assert t("explain.not_injected_tool", lang, tool="get_order") in hang, hang
        assert not any("0.00" in line for line in hang), hang


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_crash_the_api_refused_is_said_as_the_loops_own_mistake_not_the_providers(lang):
    """The bookkeeping desk's naive loop dropped the second call of a message, the API refused the next request (400:
    a call left unanswered), and the page said "the model's service failed": a reader took the provider for flaky."""
    from agentlab.i18n import t
    lines = explain(compare_expense("parallel_call", lang=lang), lang)
    assert any(t("explain.crash.ModelError.BAD_REQUEST", lang) in line for line in lines), lines
    assert not any(t("explain.crash.ModelError", lang) in line for line in lines), lines


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_bookkeeping_verdict_names_what_else_is_wrong_beside_the_date(lang):
    """A made-up category on the bookkeeping desk read only "said done, but the data is wrong": the after-sales desk
    names the wrong data, this one said nothing but the date (its own line above)."""
    lines = explain(compare_expense("out_of_enum", lang=lang), lang)
    verdict = next(line for line in lines if "transportation" in line)
    assert "transport" in verdict and "2026-09-21" not in verdict, lines

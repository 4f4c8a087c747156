"""Every widget, headless: set values, click, read what it shows."""
import html as H
import json
import re

import pytest
from conftest import uploaded

pytest.importorskip("ipywidgets")

from agentlab.guards import GuardConfig
from agentlab.loop import run_guarded
from agentlab.models import SelfCorrectingModel
from agentlab.scenarios import aftersales
from agentlab.store import MemoryStore
from agentlab.workbook.approval_widget import ApprovalDesk
from agentlab.workbook.pm_app import PMApp
from agentlab.workbook.widgets import FaultInjector, GuardPanel, MetricsPanel, SchemaPlayground, playground_html


def test_fault_injector_runs_both_loops_and_highlights_the_divergence():
    app = FaultInjector()
    app.fault.value = "camel_case"
    app.step.value = 2
    app.run.click()
    html = app.view.value
    assert "naive loop: budget exhausted" in html and "guarded loop: done after self-correction" in html
    assert "outline:3px solid" in html and "orderId" in html and "INVALID_ARGS" in html
    assert app.last.naive.invalid_calls > app.last.guarded.invalid_calls


def test_fault_injector_switches_language():
    app = FaultInjector()
    app.fault.value = "lost_reply"
    app.run.click()
    assert "refunded 2 times" in app.view.value
    app.lang.value = "zh"
    assert app.run.description == "运行两个循环" and "退了 2 次款" in app.view.value
    assert app.fault.description == "故障" and "写操作已执行" in dict((v, k) for k, v in app.fault.options)["lost_reply"]


def test_fault_injector_step_changes_where_it_lands():
    app = FaultInjector()
    app.fault.value = "camel_case"
    app.step.value = 1
    app.run.click()
    first = next(e for e in app.last.guarded.tool_events if e.error_code)
    assert first.tool_name == "get_order" and "orderId" in first.args_raw


def test_schema_playground_updates_live():
    p = SchemaPlayground()
    assert "AL004" in p.view.value and "AL003" in p.view.value  # orderId, reason as free text
    schema = json.loads(p.editor.value)
    schema["properties"]["order_id"] = schema["properties"].pop("orderId")
    schema["required"] = ["order_id", "amount", "reason"]
    p.editor.value = json.dumps(schema)
    assert "AL004" not in p.view.value
    p.editor.value = "{not json"
    assert "not a usable schema" in p.view.value
    p.lang.value = "zh"
    assert "不是可用的" in p.view.value


def test_playground_answers_samples_with_the_real_validator():
    html = playground_html(json.dumps({"type": "object", "properties": {"order_id": {"type": "string"}},
                                       "required": ["order_id"], "additionalProperties": False}), ['{"orderId": "A1"}'])
    assert "did_you_mean" in html and "order_id" in html
    loose = json.dumps({"type": "object", "properties": {"amount": {}}})  # findings: a field with no type, no description
    zh, en = playground_html(loose, lang="zh"), playground_html(loose, lang="en")
    assert "agentlab-findings" in zh and not re.search(r"<td>(warning|info|error)</td>", zh)  # severities as said
    assert re.search(r"<td>(warning|info|error)</td>", en)


def test_guard_panel_builds_the_config():
    seen = []
    g = GuardPanel(on_change=seen.append)
    assert g.config == GuardConfig()
    g.boxes["idempotency"].value = False
    g.boxes["step_budget"].value = False
    assert g.config.idempotency is False and g.config.step_budget is None and seen[-1] == g.config
    g.boxes["step_budget"].value = True
    assert g.config.step_budget == 6



def test_guard_panel_names_its_switches_in_the_readers_language():
    """The Chinese notebook 02's panel read all_calls, validate, readable_errors...: each switch is named as the
    tables name the guard, its GuardConfig field (what code switches) as its tooltip."""
    zh = GuardPanel(lang="zh")
    assert zh.boxes["validate"].description == "校验" and zh.boxes["validate"].tooltip == "validate"
    assert not [g for g, box in zh.boxes.items() if box.description == g and g.isascii() and "_" in g]
    assert GuardPanel().boxes["repeat_limit"].description == "repeat_limit"


def test_metrics_panel_shows_table_and_plot():
    from agentlab.workbook.demo import compare_loops
    cs = [compare_loops(f) for f in ("camel_case", "lost_reply")]
    m = MetricsPanel({"naive": [c.naive for c in cs], "guarded": [c.guarded for c in cs]})
    assert "guarded" in m.table.value
    # each of the six under its full name, in English too (the four had been identifiers beside two full names)
    heads = re.findall(r"<th>([^<]*)</th>", m.table.value)[1:]
    assert heads == ["task success rate", "invalid-call rate", "average steps", "human takeover rate",
                     "task success (finished and checked)", "takeover (anything not finished)"], heads
    assert any("image/png" in o.get("data", {}) for o in m.plot.outputs)


def test_approval_desk_buttons():
    store = MemoryStore()
    desk, reg = aftersales.SCENARIO.setup()
    plan = [("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]
    run_guarded(SelfCorrectingModel(plan, "ok"), reg, "x", store=store, sleep=lambda s: None)
    w = ApprovalDesk(store, reg)
    assert w.choice.value == "create_refund:A1003" and "Held for approval" in w.status.value
    w.approve.click()
    assert len(desk.refunds) == 1 and "Approved" in w.status.value and w.choice.options == ()
    w.approve.click()  # nothing left: nothing happens
    assert len(desk.refunds) == 1
    store2 = MemoryStore()
    desk, reg = aftersales.SCENARIO.setup()
    run_guarded(SelfCorrectingModel(plan, "ok"), reg, "x", store=store2, sleep=lambda s: None)
    w2 = ApprovalDesk(store2, reg, lang="zh")
    w2.reject.click()
    assert "已拒绝" in w2.status.value and store2.approvals()[0].state == "rejected"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_request_decided_after_the_desk_was_drawn_is_said_as_decided_never_decided_again(lang):
    """Notebook 05 approves its held refund in code after drawing the desk: the desk still offered it, Reject then
    said "rejected: the next turn will be told why" of a refund already paid, and Approve "approved: ran once" though
    nothing ran."""
    from agentlab import approve
    from agentlab.i18n import t
    plan = [("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]
    for button in ("reject", "approve"):
        store = MemoryStore()
        desk, reg = aftersales.SCENARIO.setup(lang)
        held = run_guarded(SelfCorrectingModel(plan, "ok"), reg, "x", store=store, sleep=lambda s: None).pending[0]
        w = ApprovalDesk(store, reg, lang=lang)
        assert approve(store, reg, held).ran and len(desk.refunds) == 1  # decided elsewhere, the desk still drawn
        assert w.choice.value == held
        getattr(w, button).click()
        assert t("ui.already_approved", lang, id=held) in w.status.value.replace("&#x27;", "'"), w.status.value
        assert store.get_approval(held).state == "approved" and len(desk.refunds) == 1
        assert w.choice.options == () and t("ui.none_pending", lang) in w.status.value
    # approved, its outcome never came back ("unknown", listed with its tag): neither button decides it again, and
    # neither says it did (Reject read "rejected", Approve "ran nothing" with a null result)
    for button in ("reject", "approve"):
        store = MemoryStore()
        desk, reg = aftersales.SCENARIO.setup(lang)
        held = run_guarded(SelfCorrectingModel(plan, "ok"), reg, "x", store=store, sleep=lambda s: None).pending[0]
        store.decide(held, "approved", "ok")
        store.set_approval_result(held, None, state="unknown")
        w = ApprovalDesk(store, reg, lang=lang)
        assert w.choice.value == held
        getattr(w, button).click()
        assert t("ui.already_unknown", lang, id=held) in w.status.value.replace("&#x27;", "'"), w.status.value
        assert store.get_approval(held).state == "unknown" and desk.refunds == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_with_validation_off_the_guarded_count_of_invalid_calls_says_it_checked_none(lang):
    """Notebook 02's switches, validation off: both columns showed the same camelCase call, and the page read "invalid
    calls: naive 11 · guarded 0", as if the guarded side had sent none. Unchecked, it counts none: said beside it."""
    from dataclasses import replace

    from agentlab.guards import GuardConfig
    from agentlab.i18n import t
    from agentlab.workbook.demo import compare_loops
    from agentlab.workbook.widgets import comparison_html
    off = comparison_html(compare_loops("camel_case", config=replace(GuardConfig(), validate=False), lang=lang), lang)
    assert t("ui.invalid_unchecked", lang) in off
    assert t("ui.invalid_unchecked", lang) not in comparison_html(compare_loops("camel_case", lang=lang), lang)


def test_pm_app_in_both_languages_without_code():
    app = PMApp()
    app.fault.value = "leaky_tool"
    app.run.click()
    assert "What happened" in app.view.value and "password" in app.view.value
    app.lang.value = "zh"
    assert "发生了什么" in app.view.value and app.fault.value == "leaky_tool"
    app.model.value = "scripted refund demo"
    app.fault.value = "api_429"
    app.run.click()
    assert "朴素循环直接崩溃" in app.view.value


def test_bad_case_review_tags_shares_and_promotes(tmp_path):
    from agentlab.evals import load_cases, run_suite
    from agentlab.workbook.widgets import BadCaseReview
    cases = load_cases()
    sessions = run_suite(cases, loop="naive")
    suite = tmp_path / "regression.jsonl"
    review = BadCaseReview(sessions, cases, suite, n=12, seed=3)
    assert len(review.tags) == 12 and any(t.value != "ok" for t in review.tags)
    before = review.counts()
    assert "target" in review.top.value and any("image/png" in o.get("data", {}) for o in review.shares.outputs)
    first_bad = next(t for t in review.tags if t.value != "ok")
    old_tag = first_bad.value
    new_tag = "execution" if old_tag != "execution" else "semantic"
    first_bad.value = new_tag  # a person corrects the auto-tag
    after = review.counts()
    assert after.get(new_tag, 0) == before.get(new_tag, 0) + 1
    assert after.get(old_tag, 0) == before.get(old_tag, 0) - 1
    review.promote.click()
    assert suite.exists() and "promoted-" in suite.read_text() and "it ran" in review.result.value
    zh = BadCaseReview(sessions, cases, suite, n=12, seed=3, lang="zh")
    assert "本周目标" in zh.top.value and zh.promote.description == "加入回归集"
    top = max(zh.counts(), key=lambda k: zh.counts()[k])  # the class to fix, said as the chart beside it says it
    from agentlab.i18n import t as said_in
    assert said_in("stage." + top, "zh") in zh.top.value and f"{top}（" not in zh.top.value, zh.top.value


def test_a_failing_action_shows_a_sentence_not_a_traceback():
    def broken(*a, **k):
        raise RuntimeError("the model server went away")
    app = FaultInjector(run_fn=broken)
    app.run.click()
    assert "Something went wrong" in app.view.value and "Traceback" not in app.view.value


def test_pm_app_with_the_recorded_real_model():
    app = PMApp()
    app.model.value = "qwen 1.5b (recorded)"
    app.fault.value = "lost_reply"  # handled inside the loop: the recording needs no new reply
    app.run.click()
    assert "What happened" in app.view.value and "Something went wrong" not in app.view.value
    assert "(replay)" in app.last.guarded.model
    assert len(app.last.naive_state["refunds"]) == 2 and len(app.last.guarded_state["refunds"]) == 1
    assert app.last.guarded_verdict.passed


def test_switching_language_keeps_the_chosen_fault():
    app = FaultInjector()
    app.fault.value = "lost_reply"
    app.lang.value = "zh"
    assert app.fault.value == "lost_reply" and "写操作" in dict((v, k) for k, v in app.fault.options)["lost_reply"]


def test_the_recorded_model_is_offered_only_faults_it_can_replay():
    app = PMApp()
    app.fault.value = "camel_case"
    app.model.value = "qwen 1.5b (recorded)"
    offered = {n for _, n in app.fault.options}
    assert "camel_case" not in offered and "api_429" in offered and app.fault.value in offered
    app.model.value = "self-correcting"
    assert "camel_case" in {n for _, n in app.fault.options}


def test_a_run_that_did_nothing_is_shown_as_a_failure_and_no_guard_is_credited():
    from agentlab.models import ScriptedModel
    from agentlab.workbook.demo import compare_loops, explain
    c = compare_loops("api_429", model=lambda: ScriptedModel(["Thank you for the refund!"]))
    lines = explain(c)
    assert c.guarded.status == "done" and c.guarded_verdict.outcome == "done, nothing done"
    assert any("nothing was done" in line for line in lines)
    assert any("No guard can take credit" in line for line in lines)
    assert not any(line.startswith("What caught it") for line in lines)


def test_review_switches_language_live_and_never_calls_a_naive_cap_a_guard():
    from agentlab.evals import auto_tag, load_cases, run_suite
    from agentlab.workbook.widgets import BadCaseReview
    cases = load_cases()
    sessions = run_suite(cases, loop="naive")
    capped = [r for r in sessions if r.run.status == "budget_exhausted"]
    assert capped and all(auto_tag(r) != "rule_blocked" for r in sessions)
    review = BadCaseReview(sessions, cases, "unused.jsonl", n=12, seed=3)
    review.lang.value = "zh"
    assert "本周目标" in review.top.value and review.promote.description == "加入回归集"
    assert any("转人工" in row.value or "完成" in row.value or "崩溃" in row.value for row in review.rows)


def test_approval_desk_switches_language_live_and_tells_a_failed_approval_truthfully():
    from dataclasses import replace

    from agentlab.errors import ToolFailure
    from agentlab.tools import Registry
    store = MemoryStore()
    desk, reg = aftersales.SCENARIO.setup()

    def down(**kw):
        raise ToolFailure("UNAVAILABLE", "payment service down")

    broken = Registry([replace(t, fn=down) if t.name == "create_refund" else t for t in reg])
    plan = [("create_refund", {"order_id": "A1003", "amount": 2499.0, "reason": "user_cancel"})]
    run_guarded(SelfCorrectingModel(plan, "ok"), broken, "x", store=store, sleep=lambda s: None)
    w = ApprovalDesk(store, broken)
    w.lang.value = "zh"
    assert w.approve.description == "批准" and w.reason.value == "需要主管签字"
    w.approve.click()
    assert "执行失败" in w.status.value and desk.refunds == [] and w.choice.value == "create_refund:A1003"


def test_the_app_reads_entirely_in_chinese():
    app = PMApp()
    app.fault.value = "camel_case"
    app.run.click()
    app.lang.value = "zh"
    view, header = app.view.value, app.header.value
    assert "不写代码" in header and "发生了什么" in view and "自我修正后完成" in view
    assert "模型的调用有误" in view and "被防护拦下" in view  # the trace legend
    assert "校验" in view  # the guard that acted, named in Chinese
    assert "done_after_self_correction" not in view.split("<table")[0]


def test_the_desk_describes_its_tools_in_the_users_language():
    _, en = aftersales.SCENARIO.setup("en")
    _, zh = aftersales.SCENARIO.setup("zh")
    for tool in zh:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in tool.description), tool.name
        for field, spec in tool.parameters["properties"].items():
            assert any("\u4e00" <= ch <= "\u9fff" for ch in spec["description"]), (tool.name, field)
        assert {k: {x: y for x, y in v.items() if x != "description"} for k, v in tool.parameters["properties"].items()} \
            == {k: {x: y for x, y in v.items() if x != "description"} for k, v in en[tool.name].parameters["properties"].items()}


def test_playground_takes_a_pasted_openai_tools_list_and_samples_the_users_own_schema():
    from agentlab.resources import data_file
    pasted = data_file("aftersales_tools.json").read_text(encoding="utf-8")
    html = playground_html(pasted)
    # the list's first tool (get_order) is sampled: its own field, and the camelCase slip of it
    assert "not a usable schema" not in html
    assert "order_id" in html and "orderId" in html
    mine = {"type": "function", "function": {"name": "book_expense", "description": "Book one expense.",
            "parameters": {"type": "object", "required": ["amount_yuan", "item"], "properties": {
                "amount_yuan": {"type": "number", "description": "Amount in yuan, e.g. 45."},
                "item": {"type": "string", "description": "What it was, e.g. taxi."}}}}}
    html = playground_html(json.dumps(mine))
    assert "amountYuan" in html and "45元" in html and "order_id" not in html and "my_tool" not in html
    assert "unknown_field" in html and "wrong_type" in html
    for bad in ("[]", "[1, 2, 3]", '"text"', "{not json"):
        assert "not a usable schema" in playground_html(bad)


@pytest.mark.parametrize("pasted, named", [
    ('{“type”：“object”，“properties”：{}}', "： → :"), ("{'type': 'object'}", "'"), ('{"type": "object"', "JSON"),
    ("[]", "工具"), ('"text"', "JSON 对象"), ('{"type": True}', "true"),
])
def test_the_playground_says_what_is_wrong_with_a_paste_in_chinese_and_names_the_slip(pasted, named):
    """A paste typed on a Chinese keyboard read "Expecting property name enclosed in double quotes: line 1 column 2"
    on the Chinese page, where the probe panel named the full-width marks: every text said through i18n.said now is."""
    import html as H
    shown = H.unescape(playground_html(pasted, lang="zh"))
    assert "这不是可用的 Schema" in shown and named in shown, shown
    assert not re.search(r"Expecting|line \d|char \d|expected a|holds no|got \w+", shown), shown


def test_a_broken_schema_is_said_in_the_learners_language_everywhere_it_is_shown():
    """The probe panel, the schema playground and exercise 01 say what is wrong with a schema in Chinese too."""
    import re as _re

    from agentlab.workbook.exercises import schema_contract
    from agentlab.workbook.widgets import ProbePanel, playground_html
    broken = {"type": "object", "properties": {"a": {"type": "string", "minLength": "5"}}}
    panel = ProbePanel(json.dumps([{"type": "function", "function": {"name": "f", "parameters": broken}}]), lang="zh")
    assert panel.update() is None
    shown = [panel.view.value, playground_html(json.dumps(broken), lang="zh"), str(schema_contract(broken, "x", "zh"))]
    for text in shown:
        assert "minLength" in text and "必须是非负整数" in text and not _re.search(r"must be", text), text


def _han(text):
    return any("\u4e00" <= c <= "\u9fff" for c in text)


# a fragment with no Chinese is fine only when it is made of technical names: create_refund, INVALID_ARGS,
# orderId, Idempotency-Key, numbers, JSON and punctuation
_TECHNICAL = re.compile(r"^(?:[\W\d_]|\b[A-Z0-9_]{2,}\b|\b\w*_\w*\b|\b[a-z]+[A-Z]\w*\b|\bIdempotency-Key\b|\bqwen\b"
                        r"|\b\d+(?:\.\d+)?b?\b|\btrue\b|\bfalse\b|\bnull\b|\buser_\w+\b|\bA\d{4}\b)*$")


def _fragments(page):
    # what the model was told is quoted as it was sent (a naive loop sends the raw exception): that is the lesson
    page = re.sub(r"<span style='color:#555' title='[^']*'>.*?</span>", "", page, flags=re.S)
    page = re.sub(r"<code>.*?</code>", "", page, flags=re.S)  # the arguments as the model wrote them
    return [H.unescape(x).strip() for x in re.split(r"<[^>]+>", page) if H.unescape(x).strip()]


def _shown(app):
    """Everything the no-code app shows a person, apart from the language switch."""
    texts = [app.scenario.description, app.model.description, app.fault.description, app.run.description]
    texts += [label for menu in (app.scenario, app.model, app.fault) for label, _ in menu.options]
    return texts + _fragments(app.header.value) + _fragments(app.view.value)


@pytest.mark.parametrize("model,fault", [("self-correcting", "camel_case"), ("self-correcting", "lost_reply"),
                                         ("self-correcting", "leaky_tool"), ("scripted refund demo", "api_429"),
                                         ("self-correcting", "api_401"), ("self-correcting", "hanging_tool")])
def test_every_label_the_app_shows_in_chinese_is_chinese(model, fault):
    app = PMApp(lang="zh")
    app.model.value, app.fault.value = model, fault
    app.run.click()
    english = [x for x in _shown(app) if not _han(x) and not _TECHNICAL.match(x)]
    assert not english, english
    assert "<b>模型</b>" in app.view.value and "<b>model</b>" not in app.view.value  # the trace's roles


def test_the_app_in_english_reads_as_before():
    app = PMApp()
    app.fault.value = "camel_case"
    app.run.click()
    view = app.view.value
    assert "<b>model</b>" in view and "safety cap of 12 steps" in view and "final answer" in view
    assert "→ <b>ok</b>" in view and "done after self-correction" in view
    labels = [app.scenario.description, app.model.description, app.fault.description, app.run.description,
              *[label for menu in (app.scenario, app.model) for label, _ in menu.options], *_fragments(app.header.value)]
    assert not [x for x in labels if _han(x)], labels
    assert all(label != value for label, value in app.model.options)  # a person reads a sentence, not an internal name


def _ch(value):
    assert value.endswith("ch"), value
    return int(value[:-2])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_menu_label_is_cut(lang):
    from agentlab.i18n import columns as text_width
    from agentlab.workbook.widgets import FaultInjector
    app = PMApp(lang=lang)
    for other in ("en", "zh"):  # the menus keep their width whichever language they were opened in
        app.lang.value = other
        for menu in (app.scenario, app.model, app.fault):
            desc = _ch(menu.style.description_width)
            assert desc >= text_width(menu.description) + 1, (menu.description, desc)
            longest = max(text_width(label) for label, _ in menu.options)
            assert _ch(menu.layout.width) >= desc + longest + 4, (menu.description, menu.layout.width)
    injector = FaultInjector(lang=lang)
    longest = max(text_width(label) for label, _ in injector.fault.options)
    assert _ch(injector.fault.layout.width) >= _ch(injector.fault.style.description_width) + longest + 4


def test_a_trace_note_the_loops_write_reads_in_chinese():
    from agentlab.trace import note_text
    assert note_text("safety cap of 12 steps", "zh") == "到达 12 步的安全上限"
    assert note_text("create_refund: OUTCOME_UNKNOWN", "zh") == "create_refund：OUTCOME_UNKNOWN"
    assert note_text("something new", "zh") == "something new" and note_text("final answer") == "final answer"


def test_log_review_reads_an_uploaded_file_without_code(tmp_path):
    """A PM uploads the team's own log, presses Review and reads the report; in Chinese too; a broken
    file gets its one sentence naming the line."""

    from agentlab.resources import data_file
    from agentlab.workbook.log_widget import LogReview
    app = LogReview()

    app.upload.value = uploaded("our_logs.jsonl", data_file("logs_openai_sample.jsonl").read_bytes())
    assert app.path is not None and app.path.name == "our_logs.jsonl"
    app.run.click()
    assert app.report is not None and app.report["totals"]["runs"] == 5
    assert "Headline rates per day" in app.view.value and "our_logs.jsonl" in app.view.value
    app.lang.value = "zh"
    assert "每日核心指标" in app.view.value and app.run.description == "审查"
    app.upload.value = uploaded("bad.jsonl", data_file("logs_bad_sample.jsonl").read_bytes())
    app.run.click()
    # a line that cannot be read after good ones: read past, and said on the page (the rest reviewed)
    assert "bad.jsonl:3" in app.view.value and "Traceback" not in app.view.value
    assert app.report is not None and app.report["totals"]["unread_lines"] == 1


def test_log_review_sample_in_either_format():
    from agentlab.workbook.log_widget import LogReview
    app = LogReview(fmt="telemetry")
    app.sample.click()
    app.run.click()
    assert app.report is not None and app.report["settings"]["format"] == "telemetry"
    assert app.report["totals"]["runs"] == 8


def test_the_opening_demos_script_is_graded_on_its_own_question_and_offered_only_faults_it_can_meet():
    """The app's "scripted refund demo" is the opening demo's script: it asks whether A1001 can be refunded and
    refunds nothing. Graded on the refund task, its guarded side read "said done, but nothing was done" under every
    fault; and a fault that rewrites one of its fixed replies (camel_case) left it answering without ever having read
    the order. It is graded on its question, and offered only the faults a fixed script can meet."""
    from agentlab.workbook.widgets import REPLAYABLE_FAULTS
    app = PMApp()
    app.model.value = "scripted refund demo"
    offered = [value for _, value in app.fault.options]
    assert offered and set(offered) <= set(REPLAYABLE_FAULTS) and "camel_case" not in offered
    for fault in ("api_429", "api_500", "flaky_tool"):
        app.fault.value = fault
        app.run.click()
        assert app.last.guarded_verdict.outcome == "correct", (fault, app.last.guarded_verdict)
        assert not app.last.guarded_state["refunds"]
    app.model.value = "self-correcting"  # the fault-injection model keeps every fault, and the refund task
    assert "camel_case" in [value for _, value in app.fault.options]
    app.fault.value = "api_429"
    app.run.click()
    assert app.last.guarded_verdict.outcome == "correct" and len(app.last.guarded_state["refunds"]) == 1


def test_a_file_past_the_pages_limit_gets_its_sentence_and_nothing_is_written(monkeypatch):
    """Every upload of the workbook (the log review, the weekly review, the probe's tools file) refuses a file over
    its limit with one sentence in the page's language, writes none of it, and keeps what was read before; the note
    beside each upload says the limit, and carries the same limit and sentence for the app page's check."""
    from agentlab.resources import data_file
    from agentlab.scratch import scratch_folder
    from agentlab.workbook import uploads, widgets
    from agentlab.workbook.log_widget import LogReview
    from agentlab.workbook.weekly_widget import WeeklyReview
    sample = data_file("logs_openai_sample.jsonl").read_bytes()
    monkeypatch.setattr(uploads, "MAX_UPLOAD_MB", len(sample) / 1_000_000)  # the sample just fits
    for lang, says in (("en", "larger than"), ("zh", "超过了")):
        logs = LogReview(lang=lang)
        logs.upload.value = uploaded("ours.jsonl", sample)
        kept = logs.path
        assert kept is not None and kept.read_bytes() == sample
        logs.upload.value = uploaded("huge.jsonl", sample + b"\n")
        assert says in logs.view.value and "huge.jsonl" in logs.view.value, logs.view.value
        assert logs.upload.value == (), "a refused file's bytes stayed in the kernel"
        assert logs.path == kept and not (kept.parent / "huge.jsonl").exists()
        logs.run.click()
        assert logs.report is not None and logs.report["totals"]["runs"] == 5  # the file read before is reviewed
        note = logs.upload_note.value
        assert f"data-limit='{len(sample)}'" in note and "{name}" in note and says in note, note

        week = WeeklyReview(folder=scratch_folder("weekly-"), lang=lang)
        week.upload.value = uploaded("huge.jsonl", sample + b"\n")
        assert says in week.message.value and week.uploaded is None, week.message.value
        assert "data-limit" in week.upload_note.value

        probe = widgets.ProbePanel(lang=lang)
        before = probe.editor.value
        probe.upload.value = uploaded("tools.json", b"[" + b" " * len(sample) + b"]")
        assert says in probe.view.value and probe.editor.value == before, probe.view.value
        assert "data-limit" in probe.upload_note.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_log_review_on_a_page_hands_over_its_cases_as_a_file_not_a_command(lang, tmp_path):
    """On the app's page, the review said "3 of them run with: python -m agentlab eval --suite cases.jsonl", a file
    the page never wrote and a command a PM cannot run. The page now carries the cases as a link the browser saves;
    the file it saves is what ``review --logs`` writes, and the suite's reader takes it."""
    import base64

    from agentlab.evals.log_report import write_report
    from agentlab.evals.suite import load_cases
    from agentlab.workbook.log_widget import LogReview
    app = LogReview(lang=lang)
    app.run.click()
    shown = app.view.value
    assert "python -m agentlab" not in shown and "download=\"cases.jsonl\"" in shown, shown[-800:]
    href = re.search(r'href="data:application/jsonl;charset=utf-8;base64,([^"]+)"', shown)
    assert href is not None
    saved = tmp_path / "cases.jsonl"
    saved.write_bytes(base64.b64decode(href.group(1)))
    written = write_report(app.report, tmp_path / "cli")
    assert saved.read_bytes() == written["cases.jsonl"].read_bytes()
    assert len(load_cases(saved)) == 3
    assert "python -m agentlab eval" in written["report.html"].read_text(encoding="utf-8")  # the CLI's own report


def _every_widget(w):
    yield w
    for c in getattr(w, "children", ()) or ():
        yield from _every_widget(c)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_panel_of_the_app_has_a_heading_and_no_button_label_is_cut(lang, tmp_path):
    """What a PM met in the app: the log review was the one panel with no heading, and the probe's upload button read
    "Upload a tools fi..." (ipywidgets draws a button 148 px wide). Each panel opens with its heading; every file
    upload, and every button whose label is longer than the width it is drawn at, is as wide as its label."""
    import ipywidgets as W

    from agentlab.i18n import columns as text_width
    from agentlab.workbook.log_widget import LogReview
    from agentlab.workbook.pm_app import PMApp
    from agentlab.workbook.weekly_widget import WeeklyReview
    from agentlab.workbook.widgets import ProbePanel
    panels = {"logs": LogReview(lang=lang), "weekly": WeeklyReview(folder=tmp_path, lang=lang),
              "probe": ProbePanel(lang=lang)}
    for name, panel in panels.items():
        assert "<h3>" in panel.header.value, (name, panel.header.value)
    if lang == "zh":  # the probe's model menu said fake / replay to a Chinese PM
        assert all(re.search("[\u4e00-\u9fff]", label) for label, _ in panels["probe"].model.options)
    cut = []
    for name, panel in {**panels, "app": PMApp(lang=lang)}.items():
        for w in _every_widget(panel.widget):
            if isinstance(w, W.FileUpload) and not w.layout.width:
                cut.append((name, w.description))
            elif isinstance(w, W.Button) and w.description and text_width(w.description) > 16 and not w.layout.width:
                cut.append((name, w.description))
    assert not cut, cut


def test_the_page_says_why_it_hands_over_no_cases_link(monkeypatch):
    """Past the size a link carries (a 33.8 MB log made a 43 MB page, sent again at each language toggle), or with no
    case that replays ("save the 0 that run from this link:" and no link), the page says why instead."""
    from agentlab import resources
    from agentlab.evals import log_report
    from agentlab.evals.log_review import review_logs
    from agentlab.i18n import t
    from agentlab.resources import data_file
    report = review_logs(data_file("logs_openai_sample.jsonl"), "openai")
    n, runnable = len(report["cases"]), sum(c["runnable"] for c in report["cases"])
    monkeypatch.setattr(resources, "MAX_LINK_BYTES", 10)  # one cap for every link a page carries its file in
    monkeypatch.setattr(log_report, "MAX_LINK_BYTES", 10)
    page = log_report.review_html(report, "en", page=True)
    assert "data:application/jsonl" not in page
    assert H.escape(t("logs.cases_page_too_large", "en", n=n, runnable=runnable, mb=0)) in page
    none = {**report, "cases": [{**c, "runnable": False} for c in report["cases"]]}
    page = log_report.review_html(none, "zh", page=True)
    assert "data:application/jsonl" not in page and H.escape(t("logs.cases_page_none", "zh", n=n)) in page


def test_the_log_review_page_says_class_and_stage_as_its_tables_do_and_names_no_file_it_cannot_give():
    """On the Chinese page each finding ended "(INVALID_ARGS · validation · structure)" under tables that say 校验 and
    结构, and the page spoke of report.json, a file the page never gives."""
    from agentlab.evals.log_report import review_html
    from agentlab.evals.log_review import review_logs
    from agentlab.i18n import t
    from agentlab.resources import data_file
    report = review_logs(data_file("logs_openai_sample.jsonl"), "openai", lang="zh")
    page = review_html(report, "zh", page=True)
    findings = re.findall(r"<small>\(([A-Z_]+) · ([^·]+) · ([^)]+)\)</small>", page)
    assert findings and all(re.search("[\u4e00-\u9fff]", c + s) for _, c, s in findings), findings[:3]
    # the page names report.json only as the link that gives it (the app's review offers the file, carried in it)
    assert "report.json" not in re.sub(r'<a download="report\.json" href="[^"]*">report\.json</a>', "", page)
    assert '<a download="report.json"' in page
    assert "report.json" in review_html(report, "zh")  # the file written beside report.json still names it
    assert t("class.validation", "zh") in page


def test_the_chinese_account_joins_its_parts_the_chinese_way():
    """The Chinese account read "（幂等）; 逐个执行…" and "无效调用: 朴素循环 12", an exercise's verdict "还没作答: …":
    parts of a Chinese sentence are joined with ；、：, never an English semicolon or colon."""
    from agentlab.workbook.demo import compare_loops, explain
    from agentlab.workbook.exercises import breaker_threshold
    from agentlab.workbook.widgets import comparison_html
    c = compare_loops("repeat_call", lang="zh")
    lines = explain(c, "zh")
    assert any("；" in line for line in lines) and not any(re.search(r"[\u4e00-\u9fff）]; ", x) for x in lines), lines
    page = comparison_html(c, "zh")
    assert "</b>：" in page and not re.search(r"[\u4e00-\u9fff]</b>: ", page)
    assert str(breaker_threshold(None, lang="zh")).startswith("… 还没作答：")


def test_a_log_file_is_reviewed_when_it_arrives_even_after_review_was_pressed():
    """A 30 MB file reaches the kernel seconds after it is picked; a PM who pressed Review meanwhile saw the sample's
    review, and the review of their own file never came (the fresh-clone CI's browser test met exactly this)."""
    from agentlab.resources import data_file
    from agentlab.workbook.log_widget import LogReview
    app = LogReview()
    app.run.click()  # pressed before the file arrived: the sample
    assert app.report is not None and app.report["settings"]["source"] == "logs_openai_sample.jsonl"
    app.upload.value = uploaded("ours.jsonl", data_file("logs_openai_sample.jsonl").read_bytes() * 2)
    assert app.report["settings"]["source"] == "ours.jsonl" and app.report["totals"]["runs"] == 10
    assert "ours.jsonl" in app.view.value


def test_the_app_opens_in_the_language_run_py_app_was_asked_for(monkeypatch):
    """``python run.py app --lang zh`` (AGENTLAB_APP_LANG) wins over the browser's Accept-Language; without it, the
    browser's language is the app's."""
    from agentlab.workbook.widgets import browser_lang
    monkeypatch.setenv("HTTP_ACCEPT_LANGUAGE", "en-US,en;q=0.9")
    monkeypatch.delenv("AGENTLAB_APP_LANG", raising=False)
    assert browser_lang() == "en"
    monkeypatch.setenv("AGENTLAB_APP_LANG", "zh")
    assert browser_lang() == "zh"
    assert browser_lang("en-US") == "en"  # a header given by name is read as given


def test_the_probe_starts_on_the_sample_tools_in_the_page_s_language_and_keeps_what_was_typed():
    """The Chinese app's probe opened on the English tools list though the desk's Chinese descriptions exist."""
    import json

    from agentlab.workbook.widgets import ProbePanel
    panel = ProbePanel(lang="zh")
    assert json.loads(panel.editor.value)[0]["function"]["description"].startswith("按订单号")
    panel.lang.value = "en"  # untouched: the sample follows the page
    assert json.loads(panel.editor.value)[0]["function"]["description"].startswith("Look up one order")
    panel.editor.value = panel.editor.value.replace("Look up one order", "Find an order")
    panel.lang.value = "zh"  # typed in: left as typed
    assert "Find an order" in panel.editor.value
    assert ProbePanel(lang="zh").update() is not None  # the Chinese sample is a tools list the probe takes


def test_the_probe_table_scrolls_in_its_own_box():
    """At 1000 px the probe's table was wider than the page, cut mid-word, with the panel's own scroll bar far below
    (what the page then draws: tests/test_browser.py, every section of the app at a laptop's width)."""
    import re

    from agentlab.workbook.widgets import ProbePanel
    panel = ProbePanel(lang="zh")
    panel.update()
    box = re.search(r"<div class='probe-wrap' style='([^']*)'>\s*<", panel.view.value)
    assert box and "overflow-x:auto" in box.group(1) and "<table" in panel.view.value[box.end() - 1:]


@pytest.mark.parametrize("fmt", ["otel", "telemetry"])
def test_a_file_refused_in_any_format_is_named_on_the_page_never_the_folder_it_was_kept_in(fmt):
    """A chat log reviewed as OTLP said where the upload sat on the serving machine (/tmp/agentlab-logs-…/); as
    telemetry, its name alone."""
    from agentlab.resources import data_file
    from agentlab.workbook.log_widget import LogReview
    app = LogReview(fmt=fmt)
    app.upload.value = uploaded("chat.jsonl", data_file("logs_openai_sample.jsonl").read_bytes())
    app.run.click()
    assert app.report is None and "chat.jsonl:1" in app.view.value, app.view.value
    assert str(app.path.parent) not in app.view.value and "agentlab-logs" not in app.view.value, app.view.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_probe_replaying_with_no_recording_chosen_says_so_in_a_sentence(lang):
    """With the recording box empty it said "- 没有可回放的录制…", the "-" standing for the file nobody gave."""
    import html as h

    from agentlab.i18n import t
    from agentlab.workbook.widgets import ProbePanel
    panel = ProbePanel(lang=lang)
    panel.model.value = "replay"
    panel.cassette.value = ""
    panel.run.click()
    shown = h.unescape(panel.view.value)
    assert t("probe.ui.no_cassette_given", lang) in shown and not shown.split(">", 2)[-1].startswith("- "), shown


def test_a_figure_carries_its_alt_text_where_a_page_reads_it():
    """JupyterLab and Voila draw an image/png output with alt="" whatever its metadata says: a figure also goes out
    as an <img> that carries its text equivalent's summary."""
    import matplotlib
    matplotlib.use("Agg")
    from IPython.core.formatters import DisplayFormatter

    from agentlab.a11y import text_equivalent
    from agentlab.workbook.plots import plot_bars
    from agentlab.workbook.widgets import figure
    shown = figure(lambda ax: plot_bars({"success": {"naive": 0.5, "guarded": 0.9}}, ax=ax, title="metrics"))
    data, _ = DisplayFormatter().format(shown)
    summary = text_equivalent(shown).summary
    assert "image/png" in data and f'alt="{H.escape(summary)}"' in data["text/html"] and summary
    assert data["text/html"].startswith('<img src="data:image/png;base64,' + data["image/png"][:40])


def test_the_playgrounds_first_schema_is_described_in_the_readers_language():
    """The Chinese notebook 01's playground opened on "Order ID", "Refund amount", and its Chinese answers read
    "缺少必填字段。Order ID". Its first schema is described in the reader's language, with the same faults found."""
    import json as _json

    from agentlab.lint import lint as _lint
    from agentlab.tools import Tool
    zh, en = SchemaPlayground(lang="zh"), SchemaPlayground()
    said = _json.loads(zh.editor.value)["properties"]
    assert said["orderId"]["description"] == "订单号" and "Order ID" not in zh.view.value
    assert "Order ID" in en.editor.value

    def rules(text, lang):
        return sorted((f.rule, f.location) for f in _lint([Tool("t", "Refund an order.", _json.loads(text))], lang=lang))
    assert rules(zh.editor.value, "zh") == rules(en.editor.value, "en")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_probe_panel_says_what_the_command_says_and_which_tools_it_probed(lang):
    """After an upload it could not read, Run probed the sample still in the editor without a word ("probed 4 tools
    ... self-correction rate 100%"); and its summary left out what the command line says beside the 100%: that a
    scripted model repairs every call by construction."""
    import html as h

    from agentlab.evals.probe_summary import summary_lines
    from agentlab.i18n import t
    from agentlab.workbook.widgets import ProbePanel
    panel = ProbePanel(lang=lang)
    panel.upload.value = uploaded("tools.json", bytes(range(256)))
    panel.take_upload()
    assert t("probe.ui.not_utf8", lang, at=128) in h.unescape(panel.view.value), panel.view.value
    panel.run.click()
    shown = h.unescape(panel.view.value)
    assert t("probe.ui.sample_probed", lang) in shown, shown
    assert all(line in shown for line in summary_lines(panel.report, lang)), shown
    assert t("probe.scripted_ceiling", lang).strip() in shown
    mine = [{"type": "function", "function": {"name": "ping", "description": "Check that the service answers.",
                                              "parameters": {"type": "object", "properties": {}}}}]
    panel.editor.value = __import__("json").dumps(mine)
    panel.run.click()
    assert t("probe.ui.sample_probed", lang) not in h.unescape(panel.view.value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_tools_file_that_is_not_json_is_named_not_called_pasted_text(lang):
    """An uploaded tools file that was not JSON was refused as "the pasted text is not valid JSON"."""
    import html as h

    from agentlab.workbook.widgets import ProbePanel
    panel = ProbePanel(lang=lang)
    panel.upload.value = uploaded("my_tools.json", b'[{"type": "function", "function": {"name": "a",}}]')
    panel.take_upload()
    shown = h.unescape(panel.view.value)
    assert "my_tools.json" in shown and ("pasted" not in shown if lang == "en" else "粘贴" not in shown), shown
    panel.editor.value = "[1,"  # typed in the editor afterwards: the pasted text, as before
    panel.run.click()
    assert ("pasted text" if lang == "en" else "粘贴的文本") in h.unescape(panel.view.value)

"""The probe (agentlab/evals/probe.py, probe_calls.py, probe_report.py): valid calls from any schema, every
fault category through the guarded loop, the catching guard read from the trace, the report, the CLI."""
import html
import json
import re
from pathlib import Path

import pytest
from conftest import DATASETS, ROOT, skip_or_fail
from typography import ascii_colons

from agentlab import GuardConfig, Registry
from agentlab.cli import main
from agentlab.evals.probe import CATEGORIES, META_LABEL, caught_by, dry_run, fake_source, load_impl, probe, replay_source
from agentlab.evals.probe_calls import NoValidCall, ask_for, valid_call
from agentlab.evals.probe_report import render_html, write
from agentlab.i18n import t
from agentlab.models import SelfCorrectingModel, Step
from agentlab.models.cassette import RecordingModel, labels
from agentlab.models.faults import FAULTS
from agentlab.tools import load_specs

AFTERSALES = ROOT / "data" / "aftersales_tools.json"
EXPENSE = ROOT / "data" / "expense_tools.json"
RETAIL = DATASETS / "tau-bench" / "retail" / "tools.json"
BFCL = DATASETS / "bfcl"


def registry(path=AFTERSALES) -> Registry:
    return load_specs(json.loads(Path(path).read_text(encoding="utf-8")), source=str(path))


def cells(report) -> dict:
    return {(c["tool"], c["category"]): c for c in report["cells"]}


# --- valid calls ---------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [AFTERSALES, EXPENSE, RETAIL], ids=["aftersales", "expense", "retail"])
def test_every_generated_call_validates(path):
    if not path.exists():
        skip_or_fail(f"{path} not found")
    reg = registry(path)
    for tool in reg:
        for seed in range(3):
            args = valid_call(tool.parameters, seed=seed)
            assert reg.check(tool.name, args).ok, (tool.name, args)
            assert args == valid_call(tool.parameters, seed=seed)  # seeded: the same call every time


def test_generated_calls_fill_formats_patterns_ranges_and_nesting():
    schema = {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"}, "month": {"type": "string", "pattern": "^\\d{4}-(0[1-9]|1[0-2])$"},
        "qty": {"type": "integer", "minimum": 3, "maximum": 4}, "price": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
        "items": {"type": "array", "minItems": 2, "uniqueItems": True,
                  "items": {"type": "object", "properties": {"sku": {"type": "string", "pattern": "^S\\d{3}$"}},
                            "required": ["sku"]}},
        "mode": {"enum": ["a", "b"]}, "who": {"$ref": "#/$defs/person"}},
        "required": ["day", "month", "qty", "price", "items", "mode", "who"],
        "$defs": {"person": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                             "required": ["email"]}}}
    reg = Registry.from_specs([{"name": "t", "parameters": schema}])
    args = valid_call(reg["t"].parameters, seed=1)
    assert reg.check("t", args).ok, args
    assert len(args["items"]) == 2 and args["qty"] in (3, 4) and "@" in args["who"]["email"]


def test_an_unsatisfiable_schema_says_so():
    with pytest.raises(NoValidCall):
        valid_call({"type": "object", "properties": {"n": {"type": "integer", "enum": ["1", "2"]}}, "required": ["n"]})


def _bfcl_docs():
    docs = []
    for path in sorted((BFCL / "data").glob("BFCL_v4_*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            docs += json.loads(line).get("function", [])
    for path in sorted((BFCL / "multi_turn_func_doc").glob("*.json")):
        docs += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return docs


def test_generated_calls_validate_on_bfcl_function_docs():
    if not BFCL.exists():
        skip_or_fail(f"{BFCL} not found")
    seen, made, none = set(), 0, []
    for doc in _bfcl_docs():
        key = json.dumps(doc, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        reg = Registry.from_specs([doc], legacy_types=True)
        tool = next(iter(reg))
        try:
            args = valid_call(tool.parameters, seed=len(seen))
        except NoValidCall:
            none.append(tool.name)
            continue
        made += 1
        assert reg.check(tool.name, args).ok, (tool.name, args)  # never an invalid call
    assert made > 2500
    # the few that get no call have an enum whose values contradict the field's own type
    assert len(none) <= 3, none


def test_the_user_message_gives_the_job_and_the_values_not_the_call():
    text = ask_for("create_refund", "Refund a paid order that has not shipped. Call get_order first.",
                   {"order_id": "A1001", "amount": 45}, "en")
    assert "Refund a paid order" in text and "order id: \"A1001\"" in text and "amount: 45" in text
    assert "{" not in text  # the model writes the JSON itself
    assert "请用 create_refund" in ask_for("create_refund", "退款。", {"amount": 45}, "zh")


# --- every category, and which guard the trace shows ---------------------------------------------
def test_each_category_is_caught_by_the_guard_the_trace_shows():
    report = probe(registry(), fake_source())
    got = cells(report)
    for category in ("camel_case", "drop_required", "wrong_type", "amount_in_words", "out_of_enum", "out_of_range",
                     "truncated_json", "unknown_tool"):
        cell = got[("create_refund", category)]
        assert (cell["guard"], cell["verdict"]) == ("validate", "repaired"), cell
        assert cell["self_correction_rate"] == 1.0 and cell["repair_turns"] == 1
    assert got[("create_refund", "wrong_type")]["first_call"].count("元") == 1  # "45元"-style text for a number
    for category in ("duplicate_call", "parallel_call"):
        assert (got[("create_refund", category)]["guard"], got[("create_refund", category)]["effect"]) == ("idempotency", "ran_once")
        # a read asked twice is not caught, and the report says so (harmless, not "caught")
        assert (got[("get_order", category)]["guard"], got[("get_order", category)]["verdict"]) == ("none", "harmless")
    for category in ("api_429", "api_timeout", "api_500"):
        assert got[("get_order", category)]["guard"] == "retry"
    assert report["summary"]["verdicts"].get("not_caught", 0) == 0


def test_a_guard_switched_off_shows_as_not_caught_never_as_the_fault_tables_intention():
    reg = registry()
    report = probe(reg, fake_source(), config=GuardConfig().without("idempotency", "retry"),
                   categories=["duplicate_call", "api_500"], only=["create_refund"])
    got = cells(report)
    for category in ("duplicate_call", "api_500"):
        assert got[("create_refund", category)]["verdict"] == "not_caught"
        assert got[("create_refund", category)]["guard"] == "none" != FAULTS[category].caught_by
    assert got[("create_refund", "duplicate_call")]["effect"] == "ran_twice"
    assert got[("create_refund", "api_500")]["effect"] == "stopped"
    page = render_html(report, "en")
    assert "not caught" in page and "the tool ran twice" in page
    # validate off: the dry-run stub refuses the camelCase call itself, and the trace names the tool, not validate
    off = cells(probe(reg, fake_source(), config=GuardConfig().without("validate"), categories=["camel_case"],
                      only=["get_order"]))[("get_order", "camel_case")]
    assert off["guard"] == "tool" and off["verdict"] == "repaired"


def test_a_chinese_report_joins_each_label_and_its_value_as_chinese_does(tmp_path, capsys):
    """The report's failures, tips, lint findings and tools left out, and the command's own lines, in Chinese: each
    label and its value took ": " (结论: 未拦截), English punctuation inside a Chinese page."""
    specs = json.loads(AFTERSALES.read_text(encoding="utf-8"))
    specs.append({"type": "function", "function": {"name": "lookup", "description": "Lookup.",  # lint: says its name
                  "parameters": {"type": "object", "properties": {"q": {"type": "string", "minLength": 5,
                                                                       "maxLength": 2}}, "required": ["q"]}}})
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(specs), encoding="utf-8")
    assert main(["probe", "--tools", str(tools), "--only", "create_refund,lookup", "--faults", "duplicate_call,api_500",
                 "--without", "idempotency", "--without", "retry", "--out", str(tmp_path / "r"), "--lang", "zh"]) == 0
    said = capsys.readouterr().out
    report = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["verdicts"].get("not_caught") and report["summary"]["unprobed"]  # every part is shown
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "lookup" in page and "未拦截" in page
    assert not ascii_colons(page, page=True) and not ascii_colons(said), (ascii_colons(page, page=True), said)


def test_caught_by_reads_the_events_and_the_guards_they_ran_under():
    from agentlab import run_guarded
    from agentlab.evals.probe import prepare
    from agentlab.models.faults import FaultyModel
    reg, _ = prepare(registry())

    def run(fault, config):
        model = FaultyModel(SelfCorrectingModel([Step("get_order", {"order_id": "A1001"})]), fault)
        return run_guarded(model, reg, "x", config=config, sleep=lambda s: None)
    assert caught_by(run("truncated_json", GuardConfig()), "truncated_json") == "validate"
    # validate off: the loop still refuses what it cannot parse, and the trace's guard label says validate was off
    off = run("truncated_json", GuardConfig().without("validate"))
    assert off.tool_events[0].guard_config == "without validate"
    assert caught_by(off, "truncated_json") == "parse"
    assert caught_by(run(None, GuardConfig()), "clean") is None


def test_categories_that_do_not_apply_are_na_not_a_pass():
    got = cells(probe(registry(), fake_source()))
    assert got[("get_order", "out_of_enum")]["verdict"] == "n/a"
    assert got[("get_order", "amount_in_words")]["na_reason"] == "probe.na.amount_in_words"
    assert got[("search_orders", "camel_case")]["verdict"] == "n/a"  # "phone" has nothing camelCase would change
    assert got[("create_refund", "out_of_enum")]["verdict"] == "repaired"
    report = probe(registry(), fake_source())
    assert report["summary"]["na"] == sum(1 for c in report["cells"] if c["verdict"] == "n/a") > 0
    assert all(c.get("self_correction_rate") is None for c in report["cells"] if not c["applies"])


# --- tools: stubs and implementations --------------------------------------------------------------
def test_a_dry_run_stub_checks_and_echoes():
    from agentlab.errors import ToolFailure
    tool = registry()["get_order"]
    assert dry_run(tool)(order_id="A1001") == {"dry_run": True, "tool": "get_order", "args": {"order_id": "A1001"}}
    with pytest.raises(ToolFailure):
        dry_run(tool)(orderId="A1001")


def test_impl_supplies_real_functions_by_name(tmp_path):
    impl = tmp_path / "desk.py"
    impl.write_text("calls = []\n"
                    "def get_order(order_id):\n    calls.append(order_id)\n    return {'order_id': order_id, 'status': 'paid'}\n"
                    "def helper_not_a_tool():\n    return 1\n"
                    "def anything(**kwargs):\n    return kwargs\n"
                    "TOOLS = {'search_orders': anything}\nWRITES = {'create_refund'}\n", encoding="utf-8")
    fns, writes = load_impl(str(impl))
    assert {"get_order", "search_orders"} <= set(fns) and writes == {"create_refund"}
    report = probe(registry(), fake_source(), impl=fns, writes=writes, config=GuardConfig().without("validate"),
                   categories=["camel_case", "wrong_type"])
    about = {x["name"]: x for x in report["tools"]}
    assert about["get_order"]["implemented"] and not about["create_refund"]["implemented"]
    assert about["escalate_to_human"]["kind"] == "read"  # WRITES overrides the guess from the verb
    got = cells(report)
    # search_orders takes anything: with validate off, a wrong type runs as sent, and nothing caught it
    assert got[("search_orders", "wrong_type")]["verdict"] == "not_caught"
    assert got[("search_orders", "wrong_type")]["effect"] == "ran_as_sent"


def test_a_broken_impl_is_one_line(tmp_path, capsys):
    bad = tmp_path / "broken.py"
    bad.write_text("raise RuntimeError('no database')\n", encoding="utf-8")
    assert main(["probe", "--tools", str(AFTERSALES), "--impl", str(bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "could not be loaded" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# --- recording and replay ------------------------------------------------------------------------
def test_replay_gives_the_same_report_as_the_recording(tmp_path):
    tape = tmp_path / "probe.jsonl"

    def recorded_fake(tool, args, label):
        return RecordingModel(SelfCorrectingModel([Step(tool, args)]), tape, label=label)
    live = probe(registry(), recorded_fake, trials=2, categories=["camel_case", "out_of_range", "api_429"])
    again = probe(registry(), replay_source(tape), trials=2, categories=["camel_case", "out_of_range", "api_429"],
                  recorded=set(labels(tape)))
    assert {k: v for k, v in live.items() if k != "meta"} == {k: v for k, v in again.items() if k != "meta"}
    assert again["meta"]["not_recorded"] == 0


def test_the_cli_replays_a_recording_with_its_own_settings(tmp_path):
    tape = tmp_path / "probe-aftersales-0.5b.jsonl"
    settings = {"trials": 1, "seed": 3, "lang": "en", "offer": "one", "categories": ["clean", "drop_required"],
                "only": ["create_refund"], "tools": str(AFTERSALES)}
    tape.write_text(json.dumps({"label": META_LABEL, "probe": settings}) + "\n", encoding="utf-8")

    def recorded_fake(tool, args, label):
        return RecordingModel(SelfCorrectingModel([Step(tool, args)]), tape, label=label)
    live = probe(registry(), recorded_fake, categories=["drop_required"], only=["create_refund"], seed=3)
    assert main(["probe", "--tools", str(AFTERSALES), "--model", "replay", "--cassette", str(tape),
                 "--out", str(tmp_path / "r")]) == 0
    replayed = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    assert replayed["cells"] == live["cells"] and replayed["meta"]["model"].endswith("(replay)")


# --- the command line ----------------------------------------------------------------------------
def test_cli_end_to_end_on_tau_bench_retail(tmp_path, capsys):
    if not RETAIL.exists():
        skip_or_fail(f"{RETAIL} not found")
    out = tmp_path / "report"
    assert main(["probe", "--tools", str(RETAIL), "--model", "fake", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "probed 16 tools × 14 categories" in said
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["version"] == 1 and len(report["tools"]) == 16 and report["settings"]["categories"] == list(CATEGORIES)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 2 and "cancel_pending_order" in page and "<script" not in page
    assert not list(out.glob(".report*"))  # no temporary file left behind


def test_cli_on_a_bare_tools_file_in_chinese(tmp_path, capsys):
    bare = tmp_path / "tools.json"
    bare.write_text(json.dumps([{"name": "set_alarm", "description": "Set an alarm.", "parameters": {
        "type": "object", "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23},
                                         "label": {"type": "string"}}, "required": ["hour"]}}]), encoding="utf-8")
    assert main(["probe", "--tools", str(bare), "--out", str(tmp_path / "r"), "--lang", "zh"]) == 0
    assert "已探测 1 个工具" in capsys.readouterr().out
    report = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    got = cells(report)
    assert got[("set_alarm", "out_of_range")]["verdict"] == "repaired" and report["tools"][0]["kind"] == "write"
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "探测报告" in page
    # the model named in the reader's language (it read "fake (self-correcting)"); report.json keeps the recorded name
    assert t("probe.model_fake", "zh") in page and "self-correcting" not in page, page
    assert report["meta"]["model"] == "fake (self-correcting)"


@pytest.mark.parametrize("content,lang,expected", [
    (None, "en", "no such file"),
    ("{not json", "en", "not valid JSON"),
    ("[1, 2]", "zh", "需要带 \"name\" 的对象"),
    ('{"answer": 42}', "en", "expected an object with a \"name\""),
    ('[{"name": "x", "parameters": {"type": "strnig"}}]', "en", "has a schema that cannot be used"),
])
def test_bad_input_exits_2_with_one_clear_line(tmp_path, capsys, content, lang, expected):
    path = tmp_path / "tools.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["probe", "--tools", str(path), "--out", str(tmp_path / "r"), "--lang", lang]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r" / "report.json").exists()


def test_unknown_fault_or_tool_names_exit_2(tmp_path, capsys):
    assert main(["probe", "--tools", str(AFTERSALES), "--faults", "camel,drop_required", "--out", str(tmp_path)]) == 2
    assert main(["probe", "--tools", str(AFTERSALES), "--only", "get_ordr", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "camel" in err and "get_ordr" in err


def test_write_replaces_a_report_whole(tmp_path):
    report = probe(registry(), fake_source(), categories=["clean"])
    write(report, tmp_path)
    first = (tmp_path / "report.json").read_text(encoding="utf-8")
    write(report, tmp_path, lang="zh")
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == first
    assert "lang=\"zh-CN\"" in (tmp_path / "report.html").read_text(encoding="utf-8")


# --- the widget, headless ------------------------------------------------------------------------
def test_the_probe_widget_runs_and_refuses_bad_paste_kindly():
    pytest.importorskip("ipywidgets")
    from agentlab.workbook.widgets import ProbePanel
    app = ProbePanel()
    app.run.click()
    assert "probed 4 tools" in app.view.value and "create_refund" in app.view.value
    assert len(app.plots.outputs) == 4 and "image/png" in app.plots.outputs[0]["data"]  # each with its text
    app.editor.value = "[{\"name\": "
    app.run.click()
    assert "not valid JSON" in app.view.value and "Traceback" not in app.view.value and app.report is None
    app.lang.value = "zh"
    app.run.click()
    assert "不是合法 JSON" in app.view.value and app.run.description == "运行探针"
    app.editor.value = json.dumps([{"name": "a", "parameters": {"type": "strnig"}}])
    app.run.click()
    assert "Schema 无法使用" in app.view.value
    app.editor.value = AFTERSALES.read_text(encoding="utf-8")
    app.model.value = "replay"
    app.cassette.value = "/no/such/cassette.jsonl"
    app.run.click()
    assert "不是页面能读取的文件" in app.view.value  # no file there: said as such


# --- the review's findings (probe-fixes): each a class of bug, each test failed before -------------
def _one_tool(name="set_level", properties=None, required=None) -> Registry:
    properties = properties or {"level": {"type": "integer", "enum": [1, 2, 3]}, "note": {"type": "string"}}
    return load_specs([{"name": name, "description": "Set a level.", "parameters": {
        "type": "object", "properties": properties, "required": required or ["level"]}}], source="t")


def test_a_tool_that_fails_on_a_valid_call_is_tool_failed_never_ok(tmp_path, capsys):
    """Before, a tool that raised on every call got a green "ok" in the clean cell (the verdict counted only
    validation errors). Now every cell whose valid call the tool failed on says so, everywhere."""
    import sys

    from agentlab.evals.probe import VERDICTS, summary_lines
    from agentlab.i18n import t

    def boom(**kw):
        raise ValueError("database down")

    def exits(**kw):
        sys.exit(3)  # in the probe a tool's exit is its failure, not the end of the run
    attempts = []

    def flaky(**kw):  # fails once, then works: a resend repairs it, so not a tool failure
        attempts.append(kw)
        if len(attempts) == 1:
            raise ConnectionError("blip")
        return {"ok": True}
    for fn in (boom, exits):
        report = probe(_one_tool(), fake_source(), impl={"set_level": fn}, categories=["wrong_type", "out_of_enum"])
        got = cells(report)
        for cat in ("clean", "wrong_type", "out_of_enum"):
            assert got[("set_level", cat)]["verdict"] == "tool_failed", (fn.__name__, cat, got[("set_level", cat)])
            assert got[("set_level", cat)]["effect"] == "failed"
        assert "database down" in got[("set_level", "clean")]["tool_error"] or fn is exits
        assert "sys.exit(3)" in got[("set_level", "clean")]["tool_error"] or fn is boom
        s = report["summary"]
        assert s["tool_failed"] == 3 and s["tools_failed"] == ["set_level"] and "ok" not in s["verdicts"]
        assert s["worst_tools"][0]["tool"] == "set_level" and not s["worst_fields"]  # no field's fault
        assert "tool_failed" in VERDICTS and VERDICTS.index("tool_failed") < VERDICTS.index("ok")
        for lang in ("en", "zh"):
            assert t("probe.cli_tool_failed", lang, n=3, tools="set_level") in summary_lines(report, lang)
            page = render_html(report, lang)
            assert t("probe.v.tool_failed", lang) in page and t("probe.effect.failed", lang) in page
    report = probe(_one_tool(), fake_source(), impl={"set_level": flaky}, writes=set(), categories=["clean"])  # a read: resent
    assert cells(report)[("set_level", "clean")]["verdict"] == "ok" and report["summary"]["tool_failed"] == 0
    # with validate off, a faulty call the tool chokes on is the fault reaching the tool: still not_caught
    report = probe(_one_tool(), fake_source(), impl={"set_level": boom}, categories=["wrong_type"],
                   config=GuardConfig().without("validate"))
    assert cells(report)[("set_level", "wrong_type")]["verdict"] == "not_caught"
    # and from the command line: the run goes on, the report is written, the line says it
    impl = tmp_path / "desk.py"
    impl.write_text("import sys\nTOOLS = {'set_level': lambda **kw: sys.exit(3)}\n", encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([_one_tool()["set_level"].spec()]), encoding="utf-8")
    assert main(["probe", "--tools", str(tools), "--impl", str(impl), "--out", str(tmp_path / "r"),
                 "--faults", "clean"]) == 0
    assert "the tool failed (set_level): not ok" in capsys.readouterr().out
    assert json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))["cells"][0]["verdict"] == "tool_failed"


def test_a_tool_that_raises_keyboard_interrupt_stops_the_probe_with_one_line(tmp_path, capsys):
    """A KeyboardInterrupt cannot be told from Ctrl-C: the probe stops (exit 130, as for Ctrl-C), and says where."""
    impl = tmp_path / "desk.py"
    impl.write_text("def set_level(**kw):\n    raise KeyboardInterrupt\n", encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([_one_tool()["set_level"].spec()]), encoding="utf-8")
    assert main(["probe", "--tools", str(tools), "--impl", str(impl), "--out", str(tmp_path / "r"), "--lang", "zh"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "set_level/clean/1" in err[0] and "KeyboardInterrupt" in err[0]
    assert not (tmp_path / "r" / "report.json").exists()


def test_names_from_the_file_are_drawn_literally_and_cjk_names_render_quietly():
    """Before, a tool called ``price$\\frac{$`` killed the report (matplotlib read it as mathtext) after the whole
    probe ran, ``a$b$c`` was drawn as math, and a Chinese name printed glyph warnings on stderr."""
    import warnings

    import matplotlib

    from agentlab.evals import probe_report
    from agentlab.workbook import plots
    names = ["price$\\frac{$", "a$b$c", "查询订单", "x^2_$y$"]
    reg = load_specs([{"name": n, "parameters": {"type": "object", "properties": {"n": {"type": "integer"}},
                                                 "required": ["n"]}} for n in names], source="t")
    report = probe(reg, fake_source(), categories=["clean"])
    with warnings.catch_warnings(record=True) as seen, matplotlib.rc_context({"svg.fonttype": "none"}):
        warnings.simplefilter("always")
        page = render_html(report, "zh")
    assert not [w for w in seen if "Glyph" in str(w.message)], [str(w.message) for w in seen]
    svg = page[page.index("<svg"):page.index("</svg>")]
    for n in names:  # each as text, exactly as written (html-escaped in the SVG)
        assert html.escape(n, quote=False) in svg, n
    assert probe_report._CJK_FONTS == plots.CJK_FONTS and probe_report._CJK_FILES == plots.CJK_FILES


def test_tools_no_valid_call_can_be_made_for_are_named_with_why_and_nothing_probed_exits_1(tmp_path, capsys):
    """Before, such schemas gave "0 cells apply", only n/a notes, and exit 0."""
    from agentlab.i18n import t
    bad = [{"name": "enum_vs_type", "parameters": {"type": "object", "properties": {
               "x": {"type": "integer", "enum": ["a", "b"]}}, "required": ["x"]}},
           {"name": "lengths", "parameters": {"type": "object", "properties": {
               "x": {"type": "string", "minLength": 5, "maxLength": 2}}, "required": ["x"]}},
           {"name": "not_object", "parameters": {"type": "string"}}]
    why = {"enum_vs_type": "probe.why.enum", "lengths": "probe.why.lengths", "not_object": "probe.why.not_object"}
    report = probe(load_specs(bad, source="t"), fake_source(), categories=["clean"])
    s = report["summary"]
    assert s["probed"] == 0 and {u["tool"]: u["why"] for u in s["unprobed"]} == why
    assert all(u["en"] and u["zh"] for u in s["unprobed"])
    for lang in ("en", "zh"):
        lines = summary_lines_of(report, lang)
        assert any(line.startswith(t("probe.cli_unprobed", lang, n=3, total=3, tools="")[:12]) for line in lines), lines
        assert t("probe.h_unprobed", lang) in render_html(report, lang)
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["probe", "--tools", str(path), "--out", str(tmp_path / "r"), "--faults", "clean"]) == 1
    out, err = capsys.readouterr()
    assert "3 of 3 tools could not be probed" in out and "no tool could be probed" in err
    assert (tmp_path / "r" / "report.html").exists()  # the report still says why, tool by tool
    # one tool that can be probed among them: exit 0, and the line still names the others
    path.write_text(json.dumps([*bad, _one_tool()["set_level"].spec()]), encoding="utf-8")
    assert main(["probe", "--tools", str(path), "--out", str(tmp_path / "r"), "--faults", "clean", "--lang", "zh"]) == 0
    assert "4 个工具中有 3 个无法探测" in capsys.readouterr().out
    # a $ref that loops without moving into the value is refused when the file is read, with the reason
    loop = {"name": "self_ref", "parameters": {"type": "object", "properties": {"x": {"$ref": "#/properties/x"}},
                                               "required": ["x"]}}
    path.write_text(json.dumps([loop]), encoding="utf-8")
    assert main(["probe", "--tools", str(path), "--out", str(tmp_path / "r2"), "--faults", "clean"]) == 2
    assert "loops back" in capsys.readouterr().err


def summary_lines_of(report, lang):
    from agentlab.evals.probe import summary_lines
    return summary_lines(report, lang)


def test_realistic_deep_and_recursive_schemas_get_a_call_and_a_cycle_is_bounded():
    """Before, a valid 10-level nested schema was refused (the depth limit was 8)."""
    from agentlab.evals.probe_calls import MAX_DEPTH
    schema: dict = {"type": "string"}
    for _ in range(12):
        schema = {"type": "object", "properties": {"n": schema}, "required": ["n"]}
    reg = Registry.from_specs([{"name": "deep", "parameters": schema}])
    args = valid_call(reg["deep"].parameters)
    assert reg.check("deep", args).ok
    tree = {"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"],
            "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {
                "type": "array", "items": {"$ref": "#/$defs/node"}}, "left": {"$ref": "#/$defs/node"}}, "required": ["v"]}}}
    reg = Registry.from_specs([{"name": "tree", "parameters": tree}])
    assert reg.check("tree", valid_call(reg["tree"].parameters)).ok
    with pytest.raises(NoValidCall) as caught:
        valid_call({"type": "object", "properties": {"x": {"$ref": "#/properties/x"}}, "required": ["x"]})
    # a loop that never moves into the value is refused by the schema check itself; the probe says so
    assert caught.value.why == "probe.why.uncheckable" and MAX_DEPTH >= 64
    assert "minLength" in NoValidCall("probe.why.lengths", least=5, most=2, field="x").localized("zh")


@pytest.mark.parametrize("tape", sorted((Path(__file__).resolve().parent.parent / "data" / "cassettes").glob("probe-*-*.jsonl")),
                         ids=lambda p: p.stem)
def test_every_checked_in_probe_recording_replays_whole(tape):
    """A recording of the local model gives its report again with no model running: every trial it was made with
    is in it, and two replays agree."""
    from agentlab.evals.probe import cassette_settings, replay_source
    from agentlab.models.cassette import labels
    files = {"aftersales": "data/aftersales_tools.json", "expense": "data/expense_tools.json",
             "retail": str(DATASETS / "tau-bench" / "retail" / "tools.json")}
    name = tape.stem.split("-", 2)[1]
    tools = Path(__file__).resolve().parent.parent / files[name] if name != "retail" else Path(files[name])
    if not tools.exists():
        skip_or_fail(f"{tools} absent")
    saved = cassette_settings(tape)
    assert saved, "a probe recording keeps the settings it was made with"
    reg = load_specs(json.loads(tools.read_text(encoding="utf-8")), source=tools.name)

    def replay():
        return probe(reg, replay_source(tape), recorded=set(labels(tape)), trials=saved.get("trials") or 1,
                     categories=saved.get("categories"), only=saved.get("only"), seed=saved.get("seed") or 0,
                     lang=saved.get("lang") or "en", source=tools.name)
    first = replay()
    assert first["meta"]["not_recorded"] == 0 and first["summary"] == replay()["summary"]
    assert first["summary"]["applicable"] > 0


# --- the probe's bounds: sizes, enum values, numbers, time ----------------------------------------
HUGE = {  # each field once grew the probe to gigabytes, ran it for minutes, or raised OverflowError
    "min_length": ({"type": "string", "minLength": 500_000_000}, "probe.why.over_limit"),
    "min_items": ({"type": "array", "items": {"type": "string"}, "minItems": 10**12}, "probe.why.over_limit"),
    "min_properties": ({"type": "object", "minProperties": 10**9}, "probe.why.over_limit"),
    "pattern_repeat": ({"type": "string", "pattern": "^a{4000000000}$"}, "probe.why.over_limit"),
    "enum": ({"type": "string", "enum": list(range(20_000))}, "probe.why.enum_tried"),
    "minimum": ({"type": "number", "minimum": 1e308}, "probe.why.number_too_big"),
    "minimum_int": ({"type": "integer", "minimum": 10**400}, "probe.why.number_too_big"),
    "maximum": ({"type": "number", "maximum": -1e308}, "probe.why.number_too_big"),
}


def _tool_with(field: dict, name: str = "set_x") -> Registry:
    return Registry.from_specs([{"name": name, "description": "Set x. Use it when asked.",
                                 "parameters": {"type": "object", "properties": {"x": field}, "required": ["x"]}}])


@pytest.mark.parametrize("case", list(HUGE))
def test_a_schema_past_the_probes_bounds_ends_at_once_with_a_named_reason(case):
    """Before: MemoryError (6.2 GB for the minLength), OverflowError (the numbers), 26 minutes (the enum)."""
    import tracemalloc
    field, why = HUGE[case]
    tracemalloc.start()
    try:
        report = probe(_tool_with(field), fake_source(), categories=["clean"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20, peak  # nothing of the size asked for was built
    (unprobed,) = report["summary"]["unprobed"]
    assert unprobed["why"] == why and unprobed["en"] and unprobed["zh"] and unprobed["en"] != unprobed["zh"]
    assert "(at x)" in unprobed["en"] and "字段 x" in unprobed["zh"]
    for lang in ("en", "zh"):
        assert any(unprobed[lang] in line for line in summary_lines_of(report, lang))


@pytest.mark.parametrize("field", [{"type": "number", "multipleOf": 1e-300, "minimum": 5},
                                   {"type": "integer", "multipleOf": 1e-300, "minimum": 1, "maximum": 1e300},
                                   {"type": "number", "multipleOf": 1e308},
                                   {"type": "number", "minimum": 5e9},
                                   {"type": "integer", "maximum": 10**400, "minimum": -10**400}])
def test_numbers_at_the_edges_are_reckoned_without_overflow(field):
    """A multipleOf of 1e-300 with a minimum raised OverflowError; a minimum of 5e9 was "minimum over maximum?"."""
    reg = _tool_with(field)
    args = valid_call(reg["set_x"].parameters, seed=0)
    assert reg.check("set_x", args).ok, args
    assert abs(args["x"]) <= 10**15


def test_a_fault_past_a_huge_max_length_is_not_built_and_the_tool_is_probed_in_part():
    """Before, out_of_range wrote a string one past maxLength 10**12: MemoryError. Now that cell is n/a, with why."""
    report = probe(_tool_with({"type": "string", "maxLength": 10**12}), fake_source(),
                   categories=["out_of_range", "wrong_type"])
    got = cells(report)
    assert got[("set_x", "out_of_range")]["na_reason"] == "probe.na.beyond_reach"
    assert got[("set_x", "wrong_type")]["applies"]  # the rest of the tool was probed
    (partial,) = report["summary"]["partial"]
    assert partial["why"] == "probe.partial.beyond_reach" and partial["categories"] == ["out_of_range"]
    assert "100000" in partial["en"] and "100000" in partial["zh"]
    for lang in ("en", "zh"):
        page = html.unescape(render_html(report, lang))  # the page escapes the catalogue's sentences too
        assert t_("probe.h_partial", lang) in page and partial[lang] in page
        assert partial[lang] in "\n".join(summary_lines_of(report, lang))
    # a limit within reach is still faulted
    small = probe(_tool_with({"type": "string", "maxLength": 8}), fake_source(), categories=["out_of_range"])
    assert cells(small)[("set_x", "out_of_range")]["applies"] and not small["summary"]["partial"]


def t_(key, lang, **kw):
    from agentlab.i18n import t
    return t(key, lang, **kw)


def _two_tools() -> Registry:
    spec = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"]}
    return Registry.from_specs([{"name": "set_a", "description": "Set a.", "parameters": spec},
                                {"name": "set_b", "description": "Set b.", "parameters": spec}])


def _stepping(step: float):
    """A clock that moves only when a trial starts (the model is asked for), ``step`` seconds each time."""
    now = [0.0]

    def source(tool, args, label):
        now[0] += step
        return fake_source()(tool, args, label)
    return (lambda: now[0]), source


def test_the_time_budget_per_tool_cuts_a_tool_short_and_says_which_categories_were_not_run():
    clock, source = _stepping(10)
    report = probe(_two_tools(), source, categories=["clean", "wrong_type", "out_of_range"], trials=2,
                   tool_time_limit=35, time_limit=None, clock=clock)
    s = report["summary"]
    assert s["probed"] == 2 and not s["unprobed"]
    ran = {(c["tool"], c["category"]): c["trials"] for c in report["cells"]}
    assert ran == {("set_a", "clean"): 2, ("set_a", "wrong_type"): 2, ("set_b", "clean"): 2, ("set_b", "wrong_type"): 2}
    assert [(p["tool"], p["why"], p["categories"]) for p in s["partial"]] == [
        ("set_a", "probe.why.tool_time", ["out_of_range"]), ("set_b", "probe.why.tool_time", ["out_of_range"])]
    assert "35 s" in s["partial"][0]["en"] and "35 秒" in s["partial"][0]["zh"]
    assert report["settings"]["tool_time_limit"] == 35
    page = render_html(report, "zh")
    assert s["partial"][0]["zh"] in page and "未运行：out_of_range" in page
    # the guards the probe ran with, as a Chinese reader reads them ("all guards" before)
    assert report["settings"]["guards"] == "all guards" and "全部防护" in page and "all guards" not in page
    assert "all guards" in render_html(report, "en")


def test_a_guard_config_is_said_in_either_language():
    from agentlab.guards import NO_GUARDS, GuardConfig, said_guards
    assert said_guards(GuardConfig().label, "zh") == "全部防护" and GuardConfig().said("en") == "all guards"
    off = GuardConfig().without("validate", "retry")
    assert off.said("zh") == "关掉校验、重试" and off.said("en") == "without validate, retry" == off.label
    assert not re.search(r"[a-z]{3,}", NO_GUARDS.said("zh")), NO_GUARDS.said("zh")
    assert said_guards("something else", "zh") == "something else"


def test_the_total_time_budget_leaves_later_tools_unprobed_with_why_and_never_raises():
    clock, source = _stepping(10)
    report = probe(_two_tools(), source, categories=["clean", "wrong_type", "out_of_range"], time_limit=15,
                   tool_time_limit=None, clock=clock)
    s = report["summary"]
    assert [(p["tool"], p["why"], p["categories"]) for p in s["partial"]] == [
        ("set_a", "probe.why.total_time", ["out_of_range"])]
    assert [(u["tool"], u["why"]) for u in s["unprobed"]] == [("set_b", "probe.why.total_time")]
    assert not [c for c in report["cells"] if c["tool"] == "set_b"]  # not run is not n/a
    lines = summary_lines_of(report, "en")
    assert any("1 of 2 tools were not probed" in line and "15 s in all" in line for line in lines), lines
    assert not any("no valid call can be made" in line for line in lines)
    page = html.unescape(render_html(report, "en"))
    assert "Tools that could not be probed" not in page and t_("probe.h_partial", "en") in page


def test_a_slow_schema_search_stops_at_the_tool_budget():
    """The clock is read while a call is built, too: a search still running when the budget ends stops."""
    ticks = [0.0]

    def clock():
        ticks[0] += 1.0
        return ticks[0]
    field = {"anyOf": [{"type": "string", "pattern": "^(?=x)y$"}] * 50}  # every option built, none passes
    report = probe(_tool_with(field), fake_source(), categories=["clean"], tool_time_limit=30, clock=clock)
    (unprobed,) = report["summary"]["unprobed"]
    assert unprobed["why"] == "probe.why.tool_time" and "30 s" in unprobed["en"]


def test_the_probe_names_a_failure_of_its_own_instead_of_raising(monkeypatch):
    from agentlab.evals import probe as probe_module

    def broken(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(probe_module, "valid_call", broken)
    report = probe(_tool_with({"type": "string"}), fake_source(), categories=["clean"])
    (unprobed,) = report["summary"]["unprobed"]
    assert unprobed["why"] == "probe.why.internal" and "RuntimeError: boom" in unprobed["en"]
    monkeypatch.undo()
    monkeypatch.setattr(probe_module, "_one", broken)
    report = probe(_tool_with({"type": "string"}), fake_source(), categories=["clean", "wrong_type"])
    (partial,) = report["summary"]["partial"]
    assert partial["why"] == "probe.partial.internal" and partial["categories"] == ["clean", "wrong_type"]


# --- what a figure shows, said where it is shown -------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_scripted_models_rate_is_called_the_ceiling_in_the_summary_line_and_the_report(tmp_path, capsys, lang):
    """`probe --model fake` printed "self-correction rate 100%" as if it were measured."""
    note = {"en": "the ceiling by construction", "zh": "按构造得到的上限"}[lang]
    assert main(["probe", "--tools", str(AFTERSALES), "--model", "fake", "--out", str(tmp_path), "--lang", lang]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "100%" in first and note in first, first
    assert note in (tmp_path / "report.html").read_text(encoding="utf-8")
    tape = tmp_path / "probe.jsonl"  # a model whose answers were recorded is measured: no such note

    def recorded_fake(tool, args, label):
        return RecordingModel(SelfCorrectingModel([Step(tool, args)]), tape, label=label)
    measured = probe(registry(), recorded_fake, categories=["camel_case"], lang=lang)
    from agentlab.evals.probe import summary_lines
    assert note not in summary_lines(measured, lang)[0] and note not in render_html(measured, lang)


def test_the_category_plot_counts_whole_tools_and_its_legend_covers_nothing():
    import matplotlib
    matplotlib.use("Agg")
    from agentlab.evals.probe_report import plot_probe_categories
    ax = plot_probe_categories(probe(registry(RETAIL if RETAIL.exists() else AFTERSALES), fake_source()))
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(ax.figure)  # the report draws on a bare Figure: give it a canvas that renders
    ax.figure.tight_layout()
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    lo, hi = ax.get_ylim()
    assert all(float(v).is_integer() for v in ax.get_yticks() if lo <= v <= hi)
    legend = ax.get_legend().get_window_extent(renderer)
    covered = [ax.get_window_extent(renderer)] + [lb.get_window_extent(renderer) for lb in ax.get_xticklabels()]
    assert not any(legend.overlaps(box) for box in covered)


def test_what_a_model_did_after_an_error_is_counted_from_the_same_recording_as_its_rate():
    """Notebook 17 shows the 0.5B repairing 91-97% and the 1.5B 10-15%; the reason (the 1.5B answers in words after
    an error) is counted from the very recordings the rates come from, so the sentence cannot drift from the table."""
    from agentlab.evals.probe import cassette_settings
    from agentlab.evals.probe_report import after_an_error
    for name, tools in (("aftersales", AFTERSALES), ("expense", EXPENSE)):
        for size in ("0.5b", "1.5b"):
            tape = ROOT / "data" / "cassettes" / f"probe-{name}-{size}.jsonl"
            if not tape.exists():
                continue
            saved = cassette_settings(tape) or {}
            s = probe(registry(tools), replay_source(tape), recorded=set(labels(tape)), trials=saved.get("trials") or 1,
                      categories=saved.get("categories"), only=saved.get("only"), seed=saved.get("seed") or 0,
                      lang=saved.get("lang") or "en")["summary"]
            moves = after_an_error(tape)
            assert moves["call"] + moves["words"] == s["cells_with_a_wrong_call"]
            assert s["self_correction_rate"] <= moves["call"] / (moves["call"] + moves["words"]) + 1e-4  # the report rounds to 4 places
            if size == "1.5b":
                assert moves["words"] > moves["call"]  # the notebook's sentence


HOSTILE = "<script>alert('x')</script> & \"quoted\""


@pytest.fixture
def hostile_catalogue(monkeypatch):
    """Every sentence of the catalogue with markup, quotes and an ampersand after it, as a careless translation might."""
    from agentlab import i18n
    real = i18n._catalog()
    marked = {k: {lang: text + HOSTILE for lang, text in entry.items()} for k, entry in real.items()}
    monkeypatch.setattr(i18n, "_catalog", lambda: marked)
    return marked


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_report_escapes_catalogue_text_and_the_tools_files_words(hostile_catalogue, lang):
    # the page is a template with autoescaping: a sentence from the catalogue is escaped like a tool's name
    spec = {"type": "function", "function": {"name": "evil_tool", "description": HOSTILE,
                                             "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}
    report = probe(load_specs([spec], source="evil.json"), fake_source(), categories=["camel_case", "out_of_range"])
    report["settings"]["source"] = HOSTILE
    report["lint"].append({"rule": HOSTILE, "location": "evil_tool", "message": HOSTILE, "suggestion": HOSTILE,
                           "severity": "warning"})
    page = render_html(report, lang)
    import re
    text = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)  # matplotlib escapes its own (quotes stay in its comments)
    assert "<script" not in page.lower() and '"quoted"' not in text and "& " not in text
    assert HOSTILE in html.unescape(page)
    assert page.count("&lt;script&gt;") >= 20  # the catalogue's sentences, not only the file's words
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<table class='probe'>" in page  # markup still markup


def test_the_probe_does_work_linear_in_the_tools_not_quadratic(monkeypatch):
    """Counted, not timed: the tool specs read (every trial used to scan and compare every tool's spec, and the loop
    to list the whole registry) grow with the tools, not with their square. benchmarks/bench_probe.py times 10,000."""
    from agentlab.tools import Tool

    def specs_read(n):
        reg = load_specs([{"type": "function", "function": {"name": f"set_{i}", "description": "Set it.", "parameters": {
            "type": "object", "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["v"]}}}
            for i in range(n)], source="gen")
        read = [0]
        spec = Tool.spec

        def counted(self):
            read[0] += 1
            return spec(self)
        monkeypatch.setattr(Tool, "spec", counted)
        probe(reg, fake_source(), categories=["clean", "wrong_type", "out_of_range"], time_limit=None,
              tool_time_limit=None)
        monkeypatch.setattr(Tool, "spec", spec)
        return read[0]
    small, big = specs_read(20), specs_read(80)
    assert big < 4.5 * small, (small, big)  # four times the tools: about four times the reads, not sixteen


@pytest.mark.parametrize("name, write", [("close_ticket", True), ("assignTicket", True), ("approve_refund", True),
                                         ("tickets.reopen", True), ("revoke_key", True), ("merge_accounts", True),
                                         ("get_ticket", False), ("list_orders", False), ("search", False),
                                         ("top_products", False), ("voucher_for_order", False),
                                         ("退款", True), ("取消订单", True), ("订单退款", True), ("发送邮件", True),
                                         ("查询订单", False), ("查询退款状态", False), ("获取天气", False), ("天气", False),
                                         ("退款查询", False), ("退款详情", False), ("申请退款", True)])
def test_one_guess_of_a_write_by_its_name_for_the_probe_and_the_review(name, write):
    """close_ticket was a read to the probe (a duplicated close filed harmless) and to the log review, which each
    kept a verb list of its own; the one guess errs toward writes."""
    from agentlab.evals.log_tools import write_name
    from agentlab.evals.probe import guess_write
    assert guess_write(name) is write and write_name(name) is write


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_kind_guessed_from_the_name_says_so_on_the_page(lang):
    """A pasted tool named 退款 was a "read" on the page, a second refund "harmless", and nothing said the kind was a
    guess, nor how to say it for sure."""
    from agentlab.evals.probe_report import table_html
    from agentlab.i18n import t
    from agentlab.tools import load_specs
    specs = [{"type": "function", "function": {"name": "退款", "description": "给订单退款", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
    page = table_html(probe(load_specs(specs), model="fake"), lang)
    assert t("probe.kind.write", lang) + "*" in page and t("probe.kind.guessed_note", lang)[:20] in page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_probe_panel_says_a_typed_recording_that_is_no_file_as_such(tmp_path, lang):
    """A path with nothing there, or a folder, read "x.jsonl holds no recording to replay", as a file that was read;
    now it says there is no such file to read, and a file that is no recording keeps its own sentence."""
    from agentlab.i18n import t
    from agentlab.workbook.widgets import ProbePanel
    panel = ProbePanel(lang=lang)
    panel.model.value = "replay"
    for typed in (tmp_path / "nowhere.jsonl", tmp_path):
        panel.cassette.value = str(typed)
        panel.update()
        assert t("probe.ui.no_such_file", lang, path=typed.name) in html.unescape(panel.view.value), panel.view.value
        assert str(tmp_path) not in panel.view.value
    other = tmp_path / "notes.txt"
    other.write_text("hello", encoding="utf-8")
    panel.cassette.value = str(other)
    panel.update()
    assert t("probe.ui.no_cassette", lang, path="notes.txt") in html.unescape(panel.view.value)

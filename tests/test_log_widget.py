"""The log review as a PM meets it (agentlab/workbook/log_widget.py): the sample button, the format menu, a file in
another format than the one chosen."""
import html
import json

import pytest

from agentlab.i18n import t
from agentlab.resources import data_file
from agentlab.workbook.log_widget import LogReview


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_sample_button_reviews_the_sample_in_a_format_it_has(lang):
    """"Use the sample" changed nothing on the page (an earlier file's error stayed); with the format set to otel the
    openai sample was read as OTLP spans and the report said nothing had been read."""
    app = LogReview(lang=lang, fmt="otel")
    app.view.value = "<p style='color:#d93025'>notjson.jsonl:1: not valid JSON</p>"
    app.sample.click()
    assert app.format.value == "openai" and app.report is not None and app.report["totals"]["runs"] > 0
    assert "notjson" not in app.view.value and t("logs.nothing_read", lang, format="otel") not in app.view.value
    app.format.value = "telemetry"
    app.run.click()  # the sample in the format now chosen, not the openai one read as rows
    assert app.report is not None and app.report["settings"]["source"] == "logs_telemetry_sample.jsonl"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_file_in_another_format_names_the_format_to_choose(tmp_path, lang):
    """A telemetry log reviewed as openai said `has neither "messages" nor "request"."messages" (keys: ...)`."""
    app = LogReview(data_file("logs_telemetry_sample.jsonl"), lang=lang, fmt="openai")
    app.path = tmp_path / "rows.jsonl"
    app.path.write_bytes(data_file("logs_telemetry_sample.jsonl").read_bytes())
    app.update()
    assert "telemetry" in app.view.value and ("choose the format" if lang == "en" else "把格式选为") in app.view.value
    conversation = tmp_path / "chat.jsonl"
    conversation.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8")
    app.path, app.format.value = conversation, "telemetry"
    app.update()
    assert "openai" in app.view.value and ("choose the format" if lang == "en" else "把格式选为") in app.view.value
    # read as telemetry, a chat-completions line was said to be "not a chat-completions exchange"
    assert ("not a line of telemetry logs" if lang == "en" else "这不是 telemetry 日志的一行") in app.view.value
    # the format is chosen with the page's menu: the command line's flag is no help to a person on a page
    assert "--format" not in app.view.value and t("ui.format_menu", lang, format="openai") in app.view.value
    for key in ("otel.is_openai", "otel.is_telemetry"):  # each message the page rewrites holds the flag's clause
        assert t("ui.format_flag", lang, format=key.rsplit("_", 1)[1]) in t(key, lang)


def test_switching_language_leaves_no_finding_in_the_other():
    """After 中文→English the findings (第 2 条消息：一条回复 'call_zz' 的工具消息…) stayed Chinese: they were written
    when the file was reviewed."""
    import re
    app = LogReview(lang="zh")
    app.sample.click()
    assert re.search("[\u4e00-\u9fff]", app.view.value)
    app.lang.value = "en"
    assert app.report["settings"]["lang"] == "en"
    assert not re.search("[\u4e00-\u9fff]", app.view.value.replace("中文", "")), "Chinese left after the switch"


def test_an_upload_named_as_the_sample_is_the_one_reviewed_and_an_error_follows_the_language(tmp_path):
    """An upload called logs_openai_sample.jsonl was taken for the sample (by its name) and dropped; an error shown
    before a language switch stayed in the earlier language."""
    import re
    mine = tmp_path / "logs_openai_sample.jsonl"
    mine.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8")
    app = LogReview(lang="en")
    app.path = mine  # as take_upload leaves it
    app.update()
    assert app.path == mine and app.report["totals"]["runs"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"foo": 1}\n', encoding="utf-8")
    app.path = bad
    app.update()
    assert "messages" in app.view.value and not re.search("[\u4e00-\u9fff]", app.view.value)
    app.lang.value = "zh"
    assert re.search("[\u4e00-\u9fff]", app.view.value), app.view.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_review_pressed_with_no_file_says_it_is_the_samples_review(lang):
    """A fresh page, Review pressed: "Bad cases in logs_openai_sample.jsonl", and nothing said no file was chosen."""
    from agentlab.i18n import t
    from agentlab.workbook.log_widget import LogReview
    app = LogReview(lang=lang)
    app.run.click()
    assert app.report is not None and t("ui.logs_no_file", lang) in html.unescape(app.view.value)
    app.sample.click()  # chosen on purpose: no such sentence
    assert t("ui.logs_no_file", lang) not in html.unescape(app.view.value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_gives_the_review_as_the_command_writes_it(tmp_path, lang):
    """The app offered cases.jsonl alone: a PM could not keep or share the review itself (report.html, report.json)
    without the command line. The page's links carry the very files the command writes."""
    import base64
    import re

    from agentlab.evals.log_report import write_report
    app = LogReview(lang=lang)
    app.sample.click()
    links = dict(re.findall(r'<a download="([^"]+)" href="data:[^;]+;charset=utf-8;base64,([^"]+)"', app.view.value))
    assert {"report.html", "report.json", "cases.jsonl"} <= set(links), list(links)
    assert t("logs.keep", lang) in html.unescape(app.view.value)
    written = write_report(app.report, tmp_path, lang=lang)
    for name in ("report.html", "report.json"):
        assert base64.b64decode(links[name]).decode("utf-8") == written[name].read_text(encoding="utf-8"), name
    assert json.loads(base64.b64decode(links["report.json"]))["totals"] == app.report["totals"]


def _log_without_tools(tmp_path, ask, tool, args):
    """A chat-completions log of one conversation that records no tools list: a user's ask, one call."""
    log = tmp_path / "mine.jsonl"
    call = {"id": "c1", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
    log.write_text(json.dumps({"messages": [{"role": "user", "content": ask},
                                            {"role": "assistant", "content": None, "tool_calls": [call]}]}) + "\n",
                   encoding="utf-8")
    return log


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_names_no_command_line_option(tmp_path, lang):
    """A product manager's log with no tools list read "Give the tools with --tools FILE." on the app's page, which
    has no command line. The page says what would let the calls be checked, in the reader's words."""
    app = LogReview(lang=lang)
    app.path = _log_without_tools(tmp_path, "refund 🙂", "create_refund", {"order_id": "A1"})
    app.update()
    assert app.report["totals"]["unchecked_calls"] == 1
    assert "--tools" not in app.view.value and "python -m" not in app.view.value, app.view.value[-1500:]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_sample_asked_for_in_a_format_without_one_says_which_it_reviews(lang):
    """otel chosen, then the sample: the openai sample was reviewed and the menu switched to it, with no word."""
    from agentlab.i18n import t
    app = LogReview(lang=lang)
    app.format.value = "otel"
    app.sample.click()
    assert app.format.value == "openai"
    assert html.escape(t("ui.logs_no_sample_in", lang, format="otel", sample="openai")) in app.view.value
    app.sample.click()  # asked again in openai: nothing to say
    assert "otel" not in app.view.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_pm_uploads_the_teams_tools_file_and_the_calls_are_checked_against_it(tmp_path, lang):
    """The app had no way to give a tools file: calls in logs without one were read as JSON only, and the page said
    to use a command-line option. The tools file uploaded beside the log checks them (an unknown field found)."""
    from conftest import uploaded

    from agentlab.resources import data_file
    log = _log_without_tools(tmp_path, "where is A1001", "get_order", {"orderId": "A1001"})
    app = LogReview(lang=lang)
    app.upload.value = uploaded("mine.jsonl", log.read_bytes())
    assert app.report["totals"]["unchecked_calls"] == 1
    app.tools_upload.value = uploaded("tools.json", data_file("aftersales_tools.json").read_bytes())
    assert app.report["totals"]["unchecked_calls"] == 0 and app.report["totals"]["findings"] >= 1, app.report["totals"]
    assert "orderId" in app.view.value
    app.tools_upload.value = uploaded("tools.json", b"[{not json")  # a broken tools file: its sentence, no traceback
    assert "Traceback" not in app.view.value and "tools.json" in app.view.value, app.view.value[:500]

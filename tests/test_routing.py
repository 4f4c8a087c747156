"""Routing: offer the model the few tools a turn needs; measure whether the needed one was offered."""
import pytest

from agentlab import Registry, Tool, run_guarded
from agentlab.models import ScriptedModel, call, say
from agentlab.routing import Router, RoutingTurn, routing_metrics, words

OBJ = {"type": "object", "properties": {}}
TOOLS = [
    ("book_expense_record", "Book one expense: date, item, amount in yuan, category. 记账：记一笔支出"),
    ("list_expense_records", "List the expense records of a month. 查看某月的账目"),
    ("search_expense_records", "Search expense records by keyword, e.g. taxi. 按关键字搜索账目"),
    ("update_expense_record", "Change one expense record after the user confirmed. 修改一笔账目"),
    ("delete_expense_record", "Delete one expense record after the user confirmed. 删除一笔账目"),
    ("monthly_summary", "Totals by category for one month. 月度分类汇总"),
    ("set_budget", "Set the monthly budget of a category. 设置分类预算"),
    ("get_budget", "The budget and what is left of it this month. 查看预算余额"),
    ("list_categories", "The closed set of categories an expense can have. 列出全部分类"),
    ("export_csv", "Export a month of records as CSV. 导出 CSV"),
    ("get_exchange_rate", "Exchange rate between two currencies. 查询汇率"),
    ("get_weather", "Today's weather in a city. 查询天气"),
    ("create_reminder", "Remind the user of something at a time. 创建提醒"),
    ("escalate_to_human", "Hand the conversation to a person. 转人工"),
]
REG = Registry([Tool(n, d, OBJ, lambda **kw: {"ok": 1}) for n, d in TOOLS])
ASKS = [("I took a taxi today for 45 yuan, please book it", {"book_expense_record"}),
        ("今天坐出租车花了45元，记一笔", {"book_expense_record"}),
        ("delete the taxi record from yesterday", {"delete_expense_record"}),
        ("how much of my food budget is left?", {"get_budget"}),
        ("show me the totals by category for March", {"monthly_summary"}),
        ("what is the dollar exchange rate", {"get_exchange_rate"}),
        ("export my records of last month as csv", {"export_csv"}),
        ("我要找人工客服", {"escalate_to_human"})]


def test_words_split_names_and_read_chinese_in_pairs():
    assert words("bookExpenseRecords") == ["book", "expense", "record"]
    assert words("打车花了") == ["打", "车", "花", "了", "打车", "车花", "花了"]


def test_the_needed_tool_is_offered_among_a_few():
    router = Router(REG, k=3, always=["escalate_to_human"])
    turns = [RoutingTurn(frozenset(needed), tuple(router.offer(ask)), tuple(REG.names)) for ask, needed in ASKS]
    m = routing_metrics(turns, REG)
    assert m["hit_rate"] == 1.0 and m["miss_rate"] == 0.0 and m["tools_per_turn"] <= 3
    assert m["spec_chars_saved_per_turn"] > 0
    assert routing_metrics([RoutingTurn(frozenset({"get_weather"}), ("export_csv",), tuple(REG.names))])["miss_rate"] == 1


def test_the_loop_shows_the_model_only_the_offered_tools_but_checks_any_call():
    model = ScriptedModel([call("delete_expense_record", {}), say("done")])
    run = run_guarded(model, REG, "delete the taxi record", offer=Router(REG, k=2), sleep=lambda s: None)
    shown = model.calls[0].tools
    assert len(shown) == 2 and "delete_expense_record" in shown and run.status == "done"
    off_menu = ScriptedModel([call("get_weather", {}), say("sunny")])
    ran = run_guarded(off_menu, REG, "delete it", offer=Router(REG, k=2), sleep=lambda s: None)
    assert ran.tool_events[0].exec_ok is True and ran.tool_events[0].error_code is None


def test_a_broken_or_empty_router_shows_every_tool():
    for offer in (lambda m: [], lambda m: 1 / 0):
        model = ScriptedModel([say("ok")])
        run_guarded(model, REG, "hello", offer=offer, sleep=lambda s: None)
        assert len(model.calls[0].tools) == len(TOOLS)
    with pytest.raises(ValueError):
        Router(REG, k=0)


# --- tool_choice per turn ------------------------------------------------------------------
def test_tool_choice_none_shows_no_tools_and_refuses_a_call():
    model = ScriptedModel([call("get_weather", {}), say("It is sunny.")])
    run = run_guarded(model, REG, "hi", tool_choice="none", sleep=lambda s: None)
    assert model.calls[0].tools == () and run.tool_events[0].error_code == "WRONG_TOOL" and run.status.startswith("done")


def test_a_named_tool_choice_forces_the_confirmation_step_before_a_delete():
    def confirm_first(messages):
        asked = any(m.get("role") == "tool" and "confirm" in (m.get("content") or "") for m in messages)
        return "auto" if asked else "create_reminder"

    model = ScriptedModel([call("delete_expense_record", {}), call("create_reminder", {}), call("delete_expense_record", {}),
                           say("deleted")])
    def answers(name):  # one function per tool, each naming its own tool
        return lambda **kw: {"did": name, "note": "confirm"}

    reg = Registry([Tool(n, d, OBJ, answers(n)) for n, d in TOOLS])
    run = run_guarded(model, reg, "delete the taxi record", tool_choice=confirm_first, sleep=lambda s: None)
    assert model.calls[0].tools == ("create_reminder",)
    assert [e.error_code for e in run.tool_events] == ["WRONG_TOOL", None, None] and run.status.startswith("done")


def test_required_re_asks_a_text_answer_within_the_budget():
    model = ScriptedModel([say("Sure!"), say("Sure!"), say("Sure!")])
    run = run_guarded(model, REG, "book a taxi", tool_choice="required", sleep=lambda s: None)
    assert run.status == "escalated" and run.events[-1].error_code == "SELF_CORRECTION_EXHAUSTED"
    ok = ScriptedModel([say("Sure!"), call("book_expense_record", {}), say("Booked.")])
    assert run_guarded(ok, REG, "book a taxi", tool_choice=lambda m: "required" if len(m) < 5 else "auto",
                       sleep=lambda s: None).status == "done_after_self_correction"


def test_the_openai_adapter_sends_the_turns_tool_choice():
    pytest.importorskip("openai")
    from agentlab.models.fakeserver import ChatServer
    from agentlab.models.openai_model import OpenAIModel
    with ChatServer([say("ok")]) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="k", sleep=lambda s: None)
        run_guarded(model, REG, "book it", tool_choice="book_expense_record", sleep=lambda s: None)
        sent = server.requests[0]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "book_expense_record"}}
    assert [t["function"]["name"] for t in sent["tools"]] == ["book_expense_record"]

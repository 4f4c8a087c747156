import json

import pytest
from conftest import ROOT

from agentlab import Registry, Tool, rule
from agentlab.schema import SchemaError

TOOLS_FILE = ROOT / "data" / "aftersales_tools.json"


@pytest.fixture
def reg():
    return Registry.from_json(TOOLS_FILE)


def code(checked):
    return None if checked.ok else checked.error.code


def test_load_wrapped_and_bare_specs(tmp_path, reg):
    specs = json.loads(TOOLS_FILE.read_text())
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([s["function"] for s in specs]))
    assert Registry.from_json(bare).names == reg.names == ["get_order", "search_orders", "create_refund", "escalate_to_human"]
    assert reg.specs()[0]["type"] == "function" and reg.specs()[0]["function"]["name"] == "get_order"


def test_pipeline_codes(reg):
    assert code(reg.check("get_order", '{"order_id": "A1001"}')) is None
    assert code(reg.check("get_order", '{"order_id": "A1001"')) == "BAD_JSON"
    assert code(reg.check("get_order", "[1]")) == "BAD_JSON"
    assert code(reg.check("get_ordr", '{"order_id": "A1001"}')) == "UNKNOWN_TOOL"
    assert code(reg.check("get_order", '{"orderId": "A1001"}')) == "INVALID_ARGS"


def test_unknown_tool_lists_tools_and_closest(reg):
    err = reg.check("add_refund", "{}").error.to_dict()
    assert "create_refund" in err["hint"] and "get_order" in err["hint"]
    zh = reg.check("creat_refund", "{}").error.to_dict("zh")["hint"]
    assert "“create_refund”" in zh and "get_order、search_orders" in zh and ", " not in zh, zh  # listed the Chinese way


def test_bad_json_says_where(reg):
    err = reg.check("create_refund", '{"order_id": "A1001", "amount": 45').error.to_dict()
    assert "line 1 column" in err["message"] and err["stage"] == "structure" and err["category"] == "validation"


def test_wrong_type_45_yuan_and_cleaning(reg):
    raw = '{"order_id": "A1001", "amount": "45元", "reason": "user_cancel"}'
    bad = reg.check("create_refund", raw).error.to_dict()
    assert bad["problems"][0]["reason"] == "wrong_type" and bad["problems"][0]["got"] == "45元"
    ok = reg.check("create_refund", raw, clean=True)
    assert ok.ok and ok.args["amount"] == 45 and json.loads(ok.render())["cleaned"][0]["before"] == "45元"


def test_business_validation_is_semantic():
    def not_above(args):
        if args["amount"] > 199:
            yield rule("amount", "must not exceed the order amount 199.0", "不得超过订单金额 199.0")
    reg = Registry([Tool("refund", "Refund an order. Use after get_order.", {
        "type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}, check=not_above)])
    err = reg.check("refund", '{"amount": 500}').error
    assert err.code == "INVALID_ARGS" and err.stage == "semantic"
    assert err.to_dict("zh")["problems"][0]["hint"] == "不得超过订单金额 199.0"
    assert reg.check("refund", '{"amount": 5}').ok


def test_language_per_registry_and_per_call():
    reg = Registry.from_json(TOOLS_FILE, lang="zh")
    assert "参数没有通过检查" in reg.check("get_order", "{}").render()
    assert "did not pass" in reg.check("get_order", "{}", lang="en").render()


def test_registration_errors_are_loud():
    with pytest.raises(SchemaError):
        Registry([Tool("x", "d", {"type": "object", "properties": {"a": {"type": "strnig"}}})])
    with pytest.raises(ValueError):
        Registry([Tool("x", "d"), Tool("x", "d")])


def test_no_leak_in_rendered_errors(reg):
    text = reg.check("get_order", '{"order_id": "postgres://u:p@db.internal/x"}').render()
    assert "db.internal" not in text


# --- keywords that registered before and were then ignored ----------------------------------
PAY = {"type": "object", "properties": {
    "method": {"type": "string", "enum": ["card", "cash"]},
    "card_number": {"type": "string", "description": "The card's 16 digits, like 4111111111111111"}},
    "required": ["method"],
    "if": {"properties": {"method": {"const": "card"}}, "required": ["method"]},
    "then": {"required": ["card_number"]}}


@pytest.mark.parametrize("closed", [False, True])
def test_a_conditional_requirement_reaches_the_model_as_missing(closed):
    reg = Registry.from_specs([{"name": "pay", "description": "Take a payment.", "parameters": PAY}], close=closed)
    err = json.loads(reg.check("pay", '{"method": "card"}').render())["error"]
    assert err["code"] == "INVALID_ARGS"
    assert [(p["field"], p["reason"]) for p in err["problems"]] == [("card_number", "missing")]
    assert reg.check("pay", '{"method": "cash"}').ok
    assert reg.check("pay", '{"method": "card", "card_number": "4111111111111111"}').ok
    if closed:  # closing must not break the condition: the if-subschema stays open
        assert reg.check("pay", '{"method": "cash", "note": 1}').error.problems[0].reason == "unknown_field"


def test_a_ref_to_a_document_nobody_supplied_is_refused_at_registration():
    schema = {"type": "object", "properties": {"price": {"$ref": "https://example.com/money.json"}}}
    with pytest.raises(SchemaError, match="resources="):
        Registry([Tool("price", "Set a price.", schema)])
    money = {"$id": "https://example.com/money.json", "type": "number", "minimum": 0}
    reg = Registry([Tool("price", "Set a price.", schema)], resources={"https://example.com/money.json": money})
    assert reg.check("price", '{"price": 3}').ok
    assert reg.check("price", '{"price": -3}').error.problems[0].field == "price"
    assert reg.subset(["price"]).check("price", '{"price": -3}').error.problems[0].reason == "out_of_range"


def test_id_and_anchor_work_through_the_registry():
    schema = {"$id": "https://example.com/order.json", "type": "object",
              "properties": {"items": {"type": "array", "items": {"$ref": "#line"}}}, "required": ["items"],
              "$defs": {"line": {"$anchor": "line", "type": "object", "properties": {"sku": {"type": "string"}},
                                 "required": ["sku"], "unevaluatedProperties": False}}}
    reg = Registry([Tool("order", "Place an order.", schema)])
    assert reg.check("order", '{"items": [{"sku": "S1"}]}').ok
    problems = reg.check("order", '{"items": [{"sku": 5}, {"SKU": "S2"}]}').error.problems
    assert {(p.field, p.reason) for p in problems} == {
        ("items[0].sku", "wrong_type"), ("items[1].sku", "missing"), ("items[1].SKU", "unknown_field")}
    assert next(p for p in problems if p.reason == "unknown_field").suggestion == "sku"


def test_a_tool_with_a_catastrophic_pattern_is_refused_at_registration():
    """Before, lint flagged ``^(a+)+$`` (AL011) but the registry took it, and a model could stall every call."""
    from agentlab.tools import ToolsInputError, load_specs
    spec = {"name": "find_code", "description": "Find a code.", "parameters": {
        "type": "object", "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["code"]}}
    with pytest.raises(SchemaError, match=r"'\^\(a\+\)\+\$' at #/properties/code/pattern can take exponential time"):
        Registry.from_specs([spec])
    with pytest.raises(ToolsInputError) as info:
        load_specs([spec], source="tools.json")
    assert "find_code" in str(info.value) and "exponential" in str(info.value)
    assert "指数级" in info.value.localized("zh")


# --- business limits (Tool.limits): the business says no, before the write ---------------------------------------
def test_a_limit_refuses_the_call_as_rule_violation_after_the_correctable_rules():
    """A rule the model can correct (a wrong value) is INVALID_ARGS; a declared limit the call would pass is
    RULE_VIOLATION, fatal and rule-blocked: no change of arguments makes it right, a person decides."""
    from agentlab.tools import over_limit
    schema = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
    spend = Tool("spend", "Spend.", schema, fn=lambda amount: amount, side_effect=True,
                 check=lambda a: [rule("amount", "must be whole")] if a["amount"] % 1 else [],
                 limits=lambda a: [over_limit("amount", a["amount"], 100, "only 100 left")] if a["amount"] > 100 else [])
    reg = Registry([spend])
    assert reg.check("spend", {"amount": 100}).ok
    assert reg.check("spend", {"amount": 100.5}).error.code == "INVALID_ARGS"  # the correctable rule is said first
    err = reg.check("spend", {"amount": 300}).error
    assert (err.code, err.category, err.stage, err.retryable) == ("RULE_VIOLATION", "fatal", "rule_blocked", False)
    (p,) = err.to_dict()["problems"]
    assert (p["field"], p["reason"], p["got"], p["limit"], p["hint"]) == ("amount", "over_limit", 300, 100, "only 100 left")


def test_a_refund_past_what_is_left_of_the_order_is_refused_as_rule_blocked():
    """The after-sales desk had the same gap: its rules read the order's status and amount, not what was refunded
    already, so a full refund after a partial one (recorded while the order stayed paid) went through: 193.5 back on
    a 129 order. Now what is left to refund is a limit of create_refund, checked before the write."""
    from agentlab.loop import run_guarded
    from agentlab.models import ScriptedModel, call, say
    from agentlab.scenarios import aftersales
    from agentlab.store import MemoryStore
    partial = {"refund_id": "R0000", "order_id": "A1010", "amount": 64.5, "reason": "out_of_stock", "remark": ""}
    desk, reg = aftersales.SCENARIO.setup(start={"refunds": [partial]})
    full = {"order_id": "A1010", "amount": 129, "reason": "user_cancel"}
    run = run_guarded(ScriptedModel([call("create_refund", full), say("Refunded.")]), reg, "refund A1010",
                      store=MemoryStore(), sleep=lambda s: None)
    assert run.status == "escalated" and desk.refunded("A1010") == 64.5 and len(desk.refunds) == 1
    end = run.events[-1]
    assert (end.error_code, end.error_stage) == ("RULE_VIOLATION", "rule_blocked")
    (p,) = json.loads(run.tool_events[0].model_visible)["error"]["problems"]
    assert (p["reason"], p["got"], p["limit"]) == ("over_limit", 129, 64.5)
    rest = {**full, "amount": 64.5}  # what is left: still refundable
    run = run_guarded(ScriptedModel([call("create_refund", rest), say("Refunded.")]), reg, "refund the rest",
                      store=MemoryStore(), sleep=lambda s: None)
    assert run.status == "done" and desk.refunded("A1010") == 129


@pytest.mark.parametrize("raw", [b'{"order_id": "A1001"}', bytearray(b"{}"), [], [("order_id", "A1001")], 42, None])
def test_arguments_that_are_neither_text_nor_an_object_are_refused_as_not_an_object(reg, raw):
    """A framework may hand over anything; only the model's text or an already-read object is checked (a list of
    pairs passed as arguments, a crash before)."""
    name = next(iter(reg)).name
    checked = reg.check(name, raw)
    assert not checked.ok and checked.error.code == "BAD_JSON" and checked.parse_ok is False


_CHANNEL = {"type": "object", "properties": {
    "channel": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "phone"}, "number": {"type": "string"}},
         "required": ["kind", "number"]},
        {"type": "object", "properties": {"kind": {"const": "email"}, "address": {"type": "string"}},
         "required": ["kind", "address"]}]},
    "custom_fields": {"type": "object", "patternProperties": {"^cf_[a-z_]+$": {"type": "string"}},
                      "additionalProperties": False}}, "required": ["channel"]}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_model_is_told_every_branch_a_tagged_one_of_allows_and_the_pattern_a_field_name_must_match(lang):
    """A kind of "fax" was told "Use one of: phone" (email was as good); {"kind": "email"} without its address was
    told its kind was wrong; a name patternProperties refused was told "Allowed fields: -"."""
    import json

    from agentlab import Registry, Tool
    reg = Registry([Tool("t", "d", _CHANNEL)])

    def problems(args: dict) -> list[dict]:
        return json.loads(reg.check("t", json.dumps(args)).render(lang))["error"]["problems"]
    (fax,) = problems({"channel": {"kind": "fax", "number": "1"}})
    assert fax["field"] == "channel.kind" and fax["allowed"] == ["phone", "email"]
    (email,) = problems({"channel": {"kind": "email", "number": "1"}})
    assert email["field"] == "channel.address" and email["reason"] == "missing"
    (name,) = problems({"channel": {"kind": "phone", "number": "1"}, "custom_fields": {"region": "x"}})
    assert name["reason"] == "unknown_field" and "^cf_[a-z_]+$" in name["hint"] and " -" not in name["hint"]

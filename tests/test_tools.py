import json

import pytest

from agentlab import Registry, Tool, rule
from agentlab.schema import SchemaError
from conftest import ROOT

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
    assert "'create_refund'" in reg.check("creat_refund", "{}").error.to_dict("zh")["hint"]


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
    assert "参数校验" in reg.check("get_order", "{}").render()
    assert "did not pass" in reg.check("get_order", "{}", lang="en").render()


def test_registration_errors_are_loud():
    with pytest.raises(SchemaError):
        Registry([Tool("x", "d", {"type": "object", "properties": {"a": {"type": "strnig"}}})])
    with pytest.raises(ValueError):
        Registry([Tool("x", "d"), Tool("x", "d")])


def test_no_leak_in_rendered_errors(reg):
    text = reg.check("get_order", '{"order_id": "postgres://u:p@db.internal/x"}').render()
    assert "db.internal" not in text

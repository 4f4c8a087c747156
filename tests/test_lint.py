import re

import pytest
from conftest import ROOT

from agentlab import Registry, lint

BAD = [
    {"name": "get_order_and_refund", "description": "get order and refund", "parameters": {"type": "object", "properties": {
        "orderId": {"type": "string", "description": "Order ID"},
        "amount": {"type": "number", "description": "Refund amount"},
        "reason": {"type": "string", "description": "Refund reason, one of user_cancel, out_of_stock or price_error"},
        "when": {"type": "string", "maxLenght": 10}},
        "required": ["orderId", "amount"]}},
    {"name": "get_order", "description": "", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                           "required": ["order_id"]}},
]


def rules(findings):
    return {(f.rule, f.location) for f in findings}


def test_each_rule_fires():
    found = rules(lint(BAD))
    assert ("AL005", "get_order_and_refund") in found
    assert ("AL002", "get_order_and_refund.orderId") in found
    assert ("AL003", "get_order_and_refund.reason") in found
    assert ("AL004", "get_order_and_refund.orderId") in found
    assert ("AL006", "get_order_and_refund.amount") in found
    assert ("AL007", "get_order_and_refund.amount") in found
    assert ("AL001", "get_order") in found and ("AL001", "get_order.order_id") in found
    assert ("AL008", "get_order_and_refund.when") in found


def test_findings_are_structured_and_bilingual():
    for lang in ("en", "zh"):
        for f in lint(BAD, lang=lang):
            d = f.to_dict()
            assert set(d) == {"rule", "severity", "location", "message", "suggestion"}
            assert d["severity"] in ("error", "warning", "info") and d["message"] and d["suggestion"]
    assert any("拆开" in f.suggestion for f in lint(BAD, lang="zh"))


def test_the_shipped_aftersales_tools_are_clean():
    reg = Registry.from_json(ROOT / "data" / "aftersales_tools.json")
    assert [f for f in lint(reg) if f.severity != "info"] == []


def test_naming_advice_follows_the_workbook_unless_the_registry_is_clearly_camel_case():
    def spec(name, fields=()):
        return {"name": name, "description": f"{name} does one thing and says when to use it.",
                "parameters": {"type": "object", "properties": {f: {"type": "string", "description": "x, like A1"}
                                                                for f in fields}}}
    one_each = lint(Registry.from_specs([spec("get_order", ["order_id"]), spec("createRefund", ["orderId"])]))
    al004 = [f for f in one_each if f.rule == "AL004"]
    assert al004 and all("snake_case" in f.message for f in al004)
    camel = lint(Registry.from_specs([spec("getOrder", ["orderId", "phoneNo"]), spec("create_refund", ["refundId"])]))
    assert [f.location for f in camel if f.rule == "AL004"] == ["create_refund"]


def test_examples_advice_fits_the_field_type():
    reg = Registry.from_specs([{"name": "place_order", "description": "Place an order for the items the user chose.",
                                "parameters": {"type": "object", "required": ["items"], "properties": {
                                    "items": {"type": "array", "description": "The items to buy.",
                                              "items": {"type": "object"}}}}}])
    (f,) = [f for f in lint(reg) if f.rule == "AL007"]
    assert "A1001" not in f.suggestion and "examples" in f.suggestion


def test_a_format_that_is_not_checked_is_flagged_in_both_languages():
    tool = {"name": "notify", "description": "Send a note to a customer when an order ships.", "parameters": {
        "type": "object", "properties": {
            "site": {"type": "string", "format": "uri", "description": "Shop address, like https://a.example"},
            "when": {"type": "string", "format": "date-time", "description": "When it ships, like 2026-01-02T10:00:00Z"},
            "to": {"type": "array", "items": {"type": "string", "format": "hostname"}}}}}
    en = [f for f in lint([tool]) if f.rule == "AL010"]
    assert [f.location for f in en] == ["notify.site", "notify.to.items"]
    assert "'uri' is not checked" in en[0].message and "date-time" in en[0].suggestion
    zh = [f for f in lint([tool], lang="zh") if f.rule == "AL010"]
    assert len(zh) == 2 and "不会被校验" in zh[0].message


def test_al011_warns_about_patterns_that_backtrack_catastrophically():
    from agentlab.lint import slow_pattern
    spec = {"name": "find_code", "description": "Use this when the user gives a code.",
            "parameters": {"type": "object", "properties": {
                "code": {"type": "string", "pattern": "^(a+)+$", "description": "A code like aaa."},
                "ok": {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "description": "A slug like a-b."}},
                "patternProperties": {"^(a|aa)+$": {"type": "string"}}}}
    found = [(f.rule, f.location, f.severity) for f in lint([spec]) if f.rule == "AL011"]
    assert sorted(found) == [("AL011", "find_code", "warning"), ("AL011", "find_code.code", "warning")]
    zh = [f for f in lint([spec], lang="zh") if f.rule == "AL011"]
    assert all("指数" in f.message and "maxLength" in f.suggestion for f in zh)
    for bad in ("^(a+)+$", "(a*)*", r"(\w+\s?)*$", "^(a|aa)+$", "(a{1,3})+", "^(m[a-z]+)*$", "(?:x+y?)+"):
        assert slow_pattern(bad), bad
    for fine in ("^a+$", "^(a|b)+$", r"^(\d{1,3}\.){3}\d{1,3}$", r"^(\d+\.)+\d+$", "^[(a+)+]$", r"^\(a+\)+$",
                 r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$", "((a+)b)*", "{", "a{,3}"):
        assert not slow_pattern(fine), fine


def test_a_required_name_the_schema_does_not_define_is_an_error_in_both_languages():
    """A misspelt required name (orderid beside order_id) read clean: every call then lacks a field nobody defined."""
    spec = {"name": "create_refund", "description": "Refund a paid order; use after get_order.", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string", "description": "The order, like A1001."},
                                         "items": {"type": "array", "description": "The lines, each an object.",
                                                   "items": {"type": "object", "properties": {}, "required": ["sku"]}}},
        "required": ["orderid", "order_id"]}}
    found = sorted((f.rule, f.location, f.severity) for f in lint([spec]) if f.rule == "AL012")
    assert found == [("AL012", "create_refund", "error"), ("AL012", "create_refund.items.items", "error")], found
    zh = next(f for f in lint([spec], lang="zh") if f.rule == "AL012")
    assert "orderid" in zh.message and "required" in zh.message and "没有定义" in zh.message
    spec["parameters"]["required"] = ["order_id"]
    spec["parameters"]["properties"]["items"]["items"]["required"] = []
    assert not [f for f in lint([spec]) if f.rule == "AL012"]


def test_a_required_name_a_pattern_property_defines_is_no_finding():
    spec = {"name": "tag_order", "description": "Tag an order; use after get_order.", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string", "description": "The order, like A1001."}},
        "patternProperties": {"^meta_[a-z]+$": {"type": "string"}}, "required": ["order_id", "meta_source"]}}
    assert not [f for f in lint([spec]) if f.rule == "AL012"]
    spec["parameters"]["required"].append("source")
    assert any("source" in f.message for f in lint([spec]) if f.rule == "AL012")


def test_the_chinese_hurried_schema_has_the_same_faults_as_the_english_one():
    """The Chinese notebook 01 linted data/bad_tools.json, whose descriptions are English, and quoted them in Chinese
    findings ("描述 'get order and refund' 只是重复了名字"). Its Chinese version is described in Chinese and gives the
    same findings, rule for rule and place for place, so both notebooks plot the same counts."""
    from agentlab import Registry
    from agentlab.resources import data_file, data_file_in

    def found(lang):
        reg = Registry.from_json(data_file_in("bad_tools.json", lang), close=False)
        return [(f.rule, f.location) for f in lint(reg, lang=lang)], reg
    (en, _), (zh, reg) = found("en"), found("zh")
    assert zh == en and data_file_in("bad_tools.json", "zh") != data_file("bad_tools.json")
    described = [reg[name].description for name in reg.names] + [
        p.get("description", "") for name in reg.names for p in reg[name].parameters["properties"].values()]
    assert not [d for d in described if re.search(r"[A-Za-z]{3,} [A-Za-z]{3,}", d.replace("user_cancel", ""))]
    assert data_file_in("aftersales_cases.jsonl", "zh") == data_file("aftersales_cases.jsonl")  # none: the file itself


@pytest.mark.parametrize("lang, words", [("en", "too short"), ("zh", "太短")])
def test_a_description_too_short_to_say_anything_is_not_said_to_repeat_the_name(lang, words):
    """A description 'x' was reported as "only repeats the field name", which it does not do."""
    spec = {"name": "get_order", "description": "Use to look an order up by its id; returns its status and items.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string", "description": "x"}}}}
    said = [f.message for f in lint([spec], lang=lang) if f.rule == "AL002"]
    assert said and words in said[0], said

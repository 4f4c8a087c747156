"""Flat results are the rule (agentlab/site/flat.py): nested output fields are flagged, and a result without a
summary of its own is summed up from its fields, never just "done"."""
from agentlab.site.execute import shape_result
from agentlab.site.flat import flat_summary, nested_fields, nested_warning


def test_nested_fields_are_objects_and_lists_of_objects_only():
    schema = {"type": "object", "properties": {
        "city": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
        "order": {"type": "object"}, "lines": {"type": "array", "items": {"properties": {"sku": {"type": "string"}}}},
        "maybe": {"type": ["object", "null"]}}}
    assert nested_fields(schema) == ["order", "lines", "maybe"]
    assert nested_fields({"type": "object"}) == [] and nested_warning("x", {"type": "object"}) is None


def test_a_nested_result_is_summed_up_from_its_fields_not_done():
    result = {"order": {"id": "A1", "status": "shipped", "items": [1, 2]}, "lines": [{"sku": "X"}] * 3}
    said = shape_result("get_order", result)["summary"]
    assert said == "get_order: order.id A1, order.status shipped, lines (3)."
    flat = shape_result("current", {"city": "Beijing", "t": 7})["summary"]
    assert flat == "current: city Beijing, t 7."
    many = flat_summary("s", {f"f{i}": i for i in range(8)})
    assert many == "s: f0 0, f1 1, f2 2, f3 3, f4 4 (+3)."
    assert flat_summary("s", {"deep": {"inner": {"x": 1}}}) == "s: deep (1)."
    assert flat_summary("s", {}) == "s: done."


def test_a_summary_is_said_in_the_callers_language_and_an_empty_field_or_a_truth_value_reads_as_json():
    """A Chinese caller read "create_refund: refund_id R0002, ..., shipped False, remark ." over MCP: English words
    around the fields, Python's False and a field with nothing in it. Now the words are the caller's language."""
    from agentlab.site.execute import one_line_summary, shape_result
    from agentlab.site.flat import flat_summary
    result = {"refund_id": "R0002", "shipped": False, "note": None, "remark": ""}
    zh, en = flat_summary("create_refund", result, "zh"), flat_summary("create_refund", result, "en")
    assert zh == "create_refund：refund_id R0002，shipped false，note null。", zh
    assert en == "create_refund: refund_id R0002, shipped false, note null.", en
    assert flat_summary("f", {}, "zh") == "f：已完成。" and flat_summary("f", {"remark": ""}) == "f: done."
    assert one_line_summary("f", {"items": [1, 2]}, "zh") == "f：2 项。" and one_line_summary("f", {"items": [1]}) == "f: 1 item."
    assert shape_result("get_order", {"order_id": "A1001"}, "zh")["summary"] == "get_order：order_id A1001。"

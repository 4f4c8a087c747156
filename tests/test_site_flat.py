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

import json

import pytest

from agentlab.errors import CODES, Problem, ToolFailure, friendly, make_error, redact, render


@pytest.mark.parametrize("code", sorted(CODES))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_code_renders_in_both_taxonomies(code, lang):
    fields = dict(detail="x", example="{}", name="t", seconds=5, reason="r", key="k", count=3, steps=6, rounds=2)
    body = json.loads(render(make_error(code, **fields), lang))
    err = body["error"]
    assert body["ok"] is False and err["code"] == code
    assert err["category"] in ("transient", "validation", "fatal")
    assert err["stage"] in ("structure", "semantic", "execution", "rule_blocked")
    assert err["retryable"] is (err["category"] != "fatal")
    assert err["message"] and err["hint"]


def test_shape_matches_the_opening_demo():
    err = make_error("INVALID_ARGS", problems=[Problem("order_id", "missing", description="Order number, like A1001"),
                                               Problem("orderId", "unknown_field", allowed=("order_id",), suggestion="order_id")])
    body = json.loads(render(err, "zh"))
    assert set(body["error"]) >= {"code", "message", "category", "retryable", "problems", "hint"}
    assert body["error"]["problems"][0] == {"field": "order_id", "reason": "missing", "hint": "缺少必填字段。Order number, like A1001"}
    assert body["error"]["problems"][1]["did_you_mean"] == "order_id"


def test_success_render():
    assert json.loads(render(None, data={"a": 1})) == {"ok": True, "data": {"a": 1}}


LEAKS = [
    'Traceback (most recent call last):\n  File "/srv/app/db.py", line 12, in q\nOperationalError: boom',
    "could not connect to postgresql://admin:hunter2@db.internal:5432/orders",
    "SELECT * FROM refunds WHERE order_id = 'A1001'",
    "timeout talking to 10.0.3.7:6379",
    "config at /etc/agentlab/secrets.yaml not readable",
    r"C:\Users\ops\keys.txt missing",
    "api_key=sk-live-abcdefghijklmnop rejected",
    "Authorization: Bearer eyJhbGciOi.abc.def",
    "payments.svc.cluster.local:8443 refused",
]


@pytest.mark.parametrize("text", LEAKS)
def test_redact_removes_leaks(text):
    out = redact(text)
    for secret in ("hunter2", "db.internal", "SELECT", "10.0.3.7", "/etc/agentlab", "keys.txt", "sk-live",
                   "eyJhbGciOi", "svc.cluster", "File \"", "db.py"):
        assert secret not in out


def test_tool_failure_message_is_redacted():
    """A tool author's message keeps what they wrote on purpose, never a credential, a trace, a host or a URL."""
    exc = ToolFailure("UNAVAILABLE", "upstream at https://svc:tok3n-9f8e@pay.example.com/v1 is down", retry_after=2)
    body = json.loads(render(exc.error))
    assert "tok3n" not in body["error"]["message"] and body["error"]["retry_after"] == 2
    assert body["error"]["message"] == "upstream at [address removed] is down"
    assert body["error"]["category"] == "transient"
    exc = ToolFailure("UNAVAILABLE", "upstream is down\nTraceback (most recent call last):\n  File \"/srv/x.py\"")
    assert "Traceback" not in render(exc.error) and "/srv/x.py" not in render(exc.error)



def test_a_failure_written_from_an_exception_reaches_the_model_without_its_file_host_address_or_query():
    """An author writes str(exc) into a failure as often as a sentence: with credentials alone removed, the model
    read the database's file, its host, its address and the query. Prose that merely reads like SQL stays."""
    exc = ToolFailure("NOT_FOUND", "Ticket T-1 not found in /srv/app/data/tickets.sqlite on db-prod-7.internal.corp "
                      "(10.1.2.3:5432); SELECT * FROM tickets WHERE id = 'T-1'",
                      hint="Check postgresql://svc:S3cret@db-prod-7.internal.corp/tickets, or select a ticket from "
                           "the list and update its status from the page")
    told = render(exc.error)
    for leak in ("/srv/app", "tickets.sqlite", "db-prod-7", "10.1.2.3", "SELECT", "S3cret", "postgresql"):
        assert leak not in told, leak
    body = json.loads(told)["error"]
    assert body["message"].startswith("Ticket T-1 not found in [path removed] on [address removed]")
    assert "select a ticket from the list and update its status from the page" in body["hint"]
    rule = Problem("date", "rule", detail={"en": "dates after /var/lib/pg/data.db fail; pick one from the calendar"})
    said = render(make_error("INVALID_ARGS", problems=[rule]))
    assert "/var/lib" not in said and "pick one from the calendar" in said

def test_friendly_messages_have_no_codes():
    for code in CODES:
        for lang in ("en", "zh"):
            text = friendly(make_error(code, detail="", example="", name="", seconds=1, reason="", key="",
                                       count=3, steps=6, rounds=2), lang)
            assert text and code not in text and "Error" not in text


def test_a_length_limit_says_what_was_sent_not_its_length_as_a_value():
    import json as _json

    from agentlab import Registry
    reg = Registry.from_specs([{"name": "place_order", "description": "Place an order.", "parameters": {
        "type": "object", "required": ["items", "note"], "properties": {
            "items": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "note": {"type": "string", "maxLength": 3}}}}])
    problems = _json.loads(reg.check("place_order", '{"items": [], "note": "toolong"}').render())["error"]["problems"]
    by = {p["field"]: p for p in problems}
    assert by["items"]["hint"].startswith("Got an empty list") and by["items"]["got_size"] == 0
    assert "a text of 7 characters" in by["note"]["hint"] and "got" not in by["note"]
    zh = _json.loads(reg.check("place_order", '{"items": [], "note": "ok"}').render("zh"))["error"]["problems"]
    assert "空列表" in zh[0]["hint"]


def test_a_huge_enum_is_listed_in_part_with_how_many_more():
    import json

    from agentlab.errors import ALLOWED_SHOWN, render
    from agentlab.schema import compile_schema
    schema = {"type": "object", "properties": {"code": {"type": "string", "enum": [f"c{i}" for i in range(100_000)]}}}
    problems = compile_schema(schema)({"code": "nope"})
    error = json.loads(render(make_error("INVALID_ARGS", problems=problems)))["error"]
    (p,) = error["problems"]
    assert len(p["allowed"]) == ALLOWED_SHOWN and p["allowed_total"] == 100_000
    assert "99950 more" in p["hint"] and len(json.dumps(error)) < 5_000


@pytest.mark.parametrize("value", [
    {"status": "paid", "amount": 10.5}, [1, 2.5, None, True], "x\ud800y", 1e16, -0.0, {"nested": [{"c": "退款"}]},
    {"password": "hunter2"}, {"note": "key sk-abcdefghijklmnopqrstuvwx1234"}, {"trace": 'File "/srv/app.py", line 3'},
    float("nan"), {"a", "b"}, b"bytes", "\ud83d\ude00", {"pair": ["\ud83d", "\ude00"]}, 10 ** 400,
    json.loads("[" * 120 + "]" * 120), {"k": 10 ** 30}])
@pytest.mark.parametrize("extra", [{}, {"cleaned": [{"field": "amount", "before": "10 yuan", "after": 10}]},
                                   {"replayed": True}, {"cleaned": [{"field": "q", "before": "token: abc123", "after": "x"}]},
                                   {"cleaned": [{"field": "session_id", "before": " s1 ", "after": "s1"}]},
                                   {"note": "\ud800"}])
def test_a_result_rendered_around_its_stored_text_reads_as_one_serialised_again(value, extra):
    """The guarded call hands render the result's stored JSON: the text is the one serialising it again gives,
    secrets removed either way."""
    from agentlab.store import result_json
    stored = result_json(value)
    plain = json.loads(stored)
    fast = render(None, "en", data=plain, data_json=stored, **extra)
    assert fast == render(None, "en", data=plain, **extra)
    assert json.loads(fast).keys() == {"ok", "data", *extra}
    assert "hunter2" not in fast and "sk-abcdef" not in fast and "/srv/app.py" not in fast


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_result_past_the_limit_reaches_the_model_cut_and_said_so(lang):
    """A tool that returned five megabytes filled the model's context with them, and the run said done."""
    from agentlab.errors import RESULT_LIMIT
    from agentlab.store import result_json
    huge = {"rows": [{"id": i, "text": "x" * 40} for i in range(20_000)]}
    for told in (render(None, lang, data=huge), render(None, lang, data=huge, data_json=result_json(huge))):
        body = json.loads(told)
        assert len(told) <= RESULT_LIMIT and body["ok"] is True and body["data"] is None
        assert body["cut"]["characters"] > RESULT_LIMIT and body["cut"]["start"].startswith('{"ok": true')
        assert f"{RESULT_LIMIT:,}" in body["note"]
    small = render(None, lang, data={"rows": [1, 2]})
    assert json.loads(small) == {"ok": True, "data": {"rows": [1, 2]}}


def test_an_error_made_quickly_is_the_record_its_dataclass_makes():
    """make_error fills the ToolError in one step (its frozen __init__ set ten fields one at a time, then coerced the
    wait): equal, hashed and printed as the dataclass's own, the wait coerced the same way, and still frozen."""
    import dataclasses

    from agentlab.errors import CODES, Problem, ToolError, make_error
    for code, retry_after, extra in (("INVALID_ARGS", None, None), ("RATE_LIMITED", "5", {"a": 1}),
                                     ("TIMEOUT", float("nan"), None), ("UNAVAILABLE", 10**9, None)):
        problems = (Problem("a", "missing"), Problem("b", "unknown_field", suggestion="a"))
        quick = make_error(code, problems=list(problems), retry_after=retry_after, extra=extra, hint="do x", seconds=5)
        category, stage = CODES[code]
        slow = ToolError(code=code, category=category, stage=stage, retryable=category != "fatal", problems=problems,
                         fields={"seconds": 5}, message=None, hint={"en": "do x"}, retry_after=retry_after, extra=extra)
        assert quick == slow and repr(quick) == repr(slow) and quick.retry_after == slow.retry_after
        assert quick.to_dict("zh") == slow.to_dict("zh") and render(quick) == render(slow)
        with pytest.raises(dataclasses.FrozenInstanceError):
            quick.code = "X"  # type: ignore[misc]
    assert Problem("a", "missing") == Problem(field="a", reason="missing", expected=None)

"""What render() and friendly() produce on hostile values: always valid JSON, never an exception.

Three faults an attacker's review found (its second round):

* NaN and Infinity are not JSON: the loop's own strict parser refuses them, so a
  result holding one could not be read back (here they become ``null``);
* a Retry-After of the wrong shape (a header string, NaN, a negative or absurd
  number) must neither raise nor print "nan seconds";
* echoing a value the renderer cannot serialise (deep nesting, a broken ``__str__``,
  tuple keys, sets, cycles) must give some safe text, not an exception.
"""
import json
import math

import pytest

from agentlab.errors import Problem, ToolFailure, friendly, make_error, render, retry_seconds
from agentlab.jsonutil import parse_strict
from agentlab.models.interface import ModelError


def strict(text: str):
    """Parse as the loop does: NaN and Infinity are refused."""
    def refuse(name):
        raise AssertionError(f"{name} is not JSON: {text[:200]}")
    value = json.loads(text, parse_constant=refuse)
    assert parse_strict(text)[1] is None
    return value


NAN, INF = float("nan"), float("inf")


# --- 3. render() always produces valid JSON -----------------------------------------------
def test_non_finite_numbers_in_returned_data_become_null():
    body = strict(render(None, data={"x": NAN, "rows": [INF, -INF, 1.5], "n": 3, "nested": {"y": NAN}}))
    assert body["data"] == {"x": None, "rows": [None, None, 1.5], "n": 3, "nested": {"y": None}}


def test_non_finite_numbers_with_a_credential_in_the_data_become_null():
    body = strict(render(None, data={"x": NAN, "note": "token=abc123def456"}))
    assert body["data"]["x"] is None and "abc123def456" not in json.dumps(body)


def test_non_finite_numbers_in_extras_and_errors_become_null():
    err = make_error("RATE_LIMITED", retry_after=NAN, extra={"limit": INF})
    body = strict(render(err, score=NAN))
    assert body["score"] is None and body["error"]["limit"] is None
    assert "retry_after" not in body["error"]  # NaN is unknown: no retry_after at all
    got = make_error("INVALID_ARGS", problems=[Problem("amount", "out_of_range", got=NAN, limit=("maximum", 100)),
                                               Problem("amount", "wrong_type", expected="number", got=INF)])
    for lang in ("en", "zh"):
        strict(render(got, lang))


def test_non_finite_dict_keys_do_not_break_json():
    strict(render(None, data={NAN: 1, INF: 2, 1.5: 3}))


# --- 4. Retry-After of the wrong shape ------------------------------------------------------
RETRY_CASES = [
    ("5", 5.0), (" 2.5 ", 2.5), (5, 5.0), (0, 0.0), (3.0, 3.0), (86400, 86400.0),
    (NAN, None), (-INF, None), (-1, None), ("-3", None), ("nan", None),
    ("soon", None), ("", None), ("Wed, 21 Oct 2015 07:28:00 GMT", None), ("9" * 300, None), (True, None),
    (None, None), ([5], None), ({"s": 5}, None),
    # a wait past a day is capped, never dropped: nobody may resend before the server said
    (INF, 86400.0), ("inf", 86400.0), (86401, 86400.0), (1e300, 86400.0), (10 ** 300, 86400.0),
]


@pytest.mark.parametrize("value,expected", RETRY_CASES, ids=[repr(c[0])[:20] for c in RETRY_CASES])
def test_retry_after_is_coerced_everywhere(value, expected):
    assert retry_seconds(value) == expected
    errors = [make_error("RATE_LIMITED", retry_after=value),
              ToolFailure("RATE_LIMITED", "slow down", retry_after=value).error,
              ModelError("RATE_LIMITED", retry_after=value).to_error(),
              make_error("RATE_LIMITED", _key="RATE_LIMITED", retry_after=value)]
    assert ModelError("RATE_LIMITED", retry_after=value).retry_after == expected
    for err in errors:
        assert err.retry_after == expected
        for lang in ("en", "zh"):
            body = strict(render(err, lang))
            assert body["error"].get("retry_after") == expected
            for text in (friendly(err, lang), body["error"]["hint"], body["error"]["message"]):
                low = text.lower()
                assert "nan" not in low and "inf" not in low and "999" not in text and "e+" not in low, text


def test_friendly_wait_gives_a_whole_number_of_seconds():
    err = make_error("RATE_LIMITED", _key="RATE_LIMITED", retry_after="2.4")
    assert "about 3 seconds" in friendly(err)
    err = make_error("RATE_LIMITED", _key="RATE_LIMITED", retry_after=0.2)
    assert "about 1 second." in friendly(err)  # never "about 0 seconds", nor "1 seconds"


def test_a_tool_error_built_directly_is_coerced_too():
    from dataclasses import replace
    err = replace(make_error("RATE_LIMITED", _key="RATE_LIMITED"), retry_after=NAN)
    assert err.retry_after is None
    strict(render(err))
    assert "nan" not in friendly(err).lower()


# --- 5. hostile values echoed back ---------------------------------------------------------
class BadStr:
    def __str__(self):
        raise RuntimeError("password=hunter2 in __str__")

    __repr__ = __str__


def nested(depth: int) -> list:
    root: list = []
    cur = root
    for _ in range(depth):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    return root


def cyclic_list() -> list:
    a: list = [1]
    a.append(a)
    return a


def cyclic_dict() -> dict:
    d: dict = {"a": 1}
    d["self"] = d
    return d


HOSTILE = {
    "deep_990": lambda: nested(990), "deep_5000": lambda: nested(5000), "deep_dict": lambda: {"a": nested(990)},
    "bad_str": BadStr, "bad_str_in_list": lambda: [BadStr(), 1], "bad_str_key": lambda: {BadStr(): 1},
    "tuple_keys": lambda: {("a", "b"): 1, ("c",): [2]}, "set": lambda: {1, 2, 3}, "frozenset": lambda: frozenset("ab"),
    "cycle_list": cyclic_list, "cycle_dict": cyclic_dict, "bytes": lambda: b"\xff\x00", "nan_list": lambda: [NAN],
    "object": object,
}
REASONS = [("wrong_type", {"expected": "string"}), ("bad_format", {"expected": "date"}),
           ("not_in_enum", {"allowed": ("a", "b")}), ("out_of_range", {"limit": ("maximum", 3)}),
           ("out_of_range", {"limit": ("maxItems", 3)}), ("no_match", {}), ("not_unique", {})]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_values_as_got_render_as_safe_text(kind):
    value = HOSTILE[kind]()
    problems = [Problem("x", reason, got=value, **kw) for reason, kw in REASONS]  # type: ignore[arg-type]
    for lang in ("en", "zh"):
        text = render(make_error("INVALID_ARGS", problems=problems), lang)
        body = strict(text)
        assert len(body["error"]["problems"]) == len(REASONS)
        assert "hunter2" not in text


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_values_as_returned_data_render_as_safe_text(kind):
    value = HOSTILE[kind]()
    for data in (value, {"v": value, "note": "token=abc123def456"}, [value, value]):
        text = render(None, data=data)
        body = strict(text)
        assert body["ok"] is True and "hunter2" not in text and "abc123def456" not in text


def test_hostile_values_as_message_fill_ins_do_not_raise():
    for kind, make in HOSTILE.items():
        text = render(make_error("MODEL_ERROR", detail=make()))
        assert strict(text)["error"]["code"] == "MODEL_ERROR", kind


def test_short_clean_values_keep_their_shape():
    body = strict(render(make_error("INVALID_ARGS", problems=[Problem("x", "wrong_type", expected="string",
                                                                      got=[1, 2])])))
    assert body["error"]["problems"][0]["got"] == [1, 2]
    assert not math.isnan(strict(render(None, data={"x": 1.5}))["data"]["x"])

import re

import pytest

from agentlab.jsonutil import canonical, json_eq, parse_strict


@pytest.mark.parametrize("raw", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', "{'a': 1}",
                                 '{"a": 1} trailing', '{"a": 1', '', '{"a": 1,}', '{"a": 01}'])
def test_strict_parse_rejects(raw):
    value, failure = parse_strict(raw)
    assert value is None and failure is not None
    assert failure.line >= 1 and failure.column >= 1


def test_failure_says_where():
    _, f = parse_strict('{"date": "2026-09-21", "amount": 45')
    assert "truncated" in f.reason and f.position == 35


def test_parse_ok():
    assert parse_strict('{\n  "a": [1, 2.5, true, null]\n}') == ({"a": [1, 2.5, True, None]}, None)


def test_canonical_sorts_keys_and_normalises_numbers():
    assert canonical({"b": 2.0, "a": [1.0, {"y": 1, "x": 0.5}]}) == canonical({"a": [1, {"x": 0.5, "y": 1}], "b": 2})
    assert canonical({"a": True}) != canonical({"a": 1})


def test_json_equality():
    assert json_eq(1, 1.0) and not json_eq(True, 1) and not json_eq([False], [0]) and json_eq({"a": [1]}, {"a": [1.0]})


@pytest.mark.parametrize("raw, words", [
    ('{"amount": 1e400}', "too large"),
    ('{"amount": -1e400}', "too large"),
    ('{"amount": ' + "9" * 400 + "}", "64 digits"),
    ('{"a": ' + "[" * 70 + "]" * 70 + "}", "64 levels"),
])
def test_what_no_check_could_take_is_refused_while_reading(raw, words):
    value, failure = parse_strict(raw, max_depth=64)
    assert value is None and words in failure.describe() and "sys." not in failure.describe()


def test_a_check_that_cannot_handle_a_value_refuses_it_instead_of_raising():
    """1e400 used to become infinity and take down multipleOf (and with it the whole run)."""
    from agentlab import Registry
    reg = Registry.from_specs([{"name": "pay", "description": "Pay an amount.", "parameters": {
        "type": "object", "properties": {"amount": {"type": "number", "multipleOf": 0.01}}}}])
    for raw in ('{"amount": 1e400}', '{"amount": ' + "9" * 400 + "}", {"amount": float("inf")},
                {"amount": [[[[[[]]]]]] and None}):
        checked = reg.check("pay", raw)
        assert checked.render("en") and checked.render("zh")
    inf = reg.check("pay", {"amount": float("inf")})
    assert not inf.ok and inf.error.problems[0].reason in ("uncheckable", "wrong_type", "out_of_range")
    deep: list = []
    for _ in range(100):
        deep = [deep]
    assert reg.check("pay", {"amount": deep}).error.code == "BAD_JSON"


# every way a text can fail to be JSON that the decoder or this module names (CPython's decoder messages included)
NOT_JSON = ['{"a": "x', '{"a": "\x01"}', '{"a": "\\q"}', '{"a": "\\u12"}', '{', '{"a" 1}', '{"a": 1 "b": 2}',
            "{'a': 1}", '{"a": 1} x', '{"a": NaN}', '{"a": -Infinity}', '{"a": 1e999}', '{"a": ' + '1' * 80 + '}',
            '[' * 70 + ']' * 70, '{"a":}', '{a:1}', '', 5]


@pytest.mark.parametrize("text", NOT_JSON)
def test_why_a_text_is_not_json_is_said_in_chinese_to_a_chinese_reader(text):
    """The reason in a BAD_JSON message was the decoder's English inside the Chinese sentence ("Unterminated string
    starting at at line 1 ..."): each reason is said in the reader's language, the English kept as it was."""
    from agentlab.jsonutil import parse_strict
    _, failure = parse_strict(text, max_depth=64)
    assert failure is not None
    zh = failure.describe("zh")
    reason = zh.split("：第 ")[0]
    assert re.search(r"[\u4e00-\u9fff]", reason) and not re.search(r"[A-Za-z]{3,}", reason.replace("JSON", "")
                                                                     .replace("arguments", "").replace("Infinity", "")
                                                                     .replace("NaN", "").replace("int", "")), zh
    assert f"第 {failure.line} 行第 {failure.column} 列" in zh
    assert failure.describe() == failure.describe("en") and f"line {failure.line}" in failure.describe("en")


def test_a_bad_json_error_reads_in_the_language_it_is_rendered_in():
    from agentlab.scenarios import aftersales
    _, reg = aftersales.SCENARIO.setup()
    checked = reg.check("get_order", '{"order_id": "A1')
    zh, en = checked.error.text("zh"), checked.error.text("en")
    assert "有个字符串没有结束引号" in zh and "Unterminated" not in zh
    # the English in plain words too: the decoder's "Unterminated string starting at at line 1" read doubled, and
    # a file's line said "not valid JSON (Unterminated string starting at)" with nothing after "at"
    assert "a string with no closing quote at line 1 column 14" in en


def test_a_files_bad_line_is_said_in_chinese_whole(tmp_path):
    """A suite or a log file with a line that is not JSON: the error line names the file and the line, and its reason,
    said in the reader's language ("不是合法的 JSON（Unterminated string starting at）" before)."""
    from agentlab.evals.logs import _object
    from agentlab.evals.suite import load_cases
    from agentlab.i18n import said
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "x", "task": "refund A1001\n', encoding="utf-8")
    errors = []
    for attempt in (lambda: load_cases(bad), lambda: _object("log.jsonl", 3, '{"role": "user", "content": "hi')):
        with pytest.raises(ValueError) as caught:
            attempt()
        errors.append(caught.value)
    for err in errors:
        zh, en = said(err, "zh"), said(err, "en")
        assert "有个字符串没有结束引号" in zh and "Unterminated" not in zh, zh
        assert "a string with no closing quote" in en and "starting at" not in en and str(err) == en


@pytest.mark.parametrize("text", ["", "1 2", "{'a': 1}", '{"a" 1}', "[1 2]", '{"a": 1,}', '"abc', '"a\x01"', '"\\q"',
                                  '"\\u12"'])
def test_every_reason_the_decoder_gives_is_said_in_chinese(text):
    """A case file read with json.loads was refused with the decoder's own English inside a Chinese sentence (不是合法的
    JSON（Extra data）): each reason Python's decoder gives has its sentence in the catalogue."""
    import json

    from agentlab.jsonutil import said_reason
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    said = said_reason(caught.value.msg, "zh")
    assert said != caught.value.msg and re.search(r"[\u4e00-\u9fff]", said), (text, caught.value.msg)


@pytest.mark.parametrize("text, en, zh", [
    ("［｛“name”：“退款”，“x”：1｝］", "full-width marks where JSON wants half-width ones", "［ → [、｛ → {"),
    ('[{"a": 1,}]', "a comma before the closing } at column 10", "第 10 列的 } 前面多了一个逗号"),
    ("{'a': 1}", "a ' at column 2", "第 2 列有一个 '"),
    ('{"a": True}', "True at column 7: JSON writes true, false and null", "JSON 写作 true、false 和 null"),
])
def test_a_persons_slip_in_json_is_named_where_the_decoder_only_says_expecting_value(text, en, zh):
    """A product manager's JSON typed on a Chinese keyboard read "line 1: a value was expected here", a trailing comma
    "line 108: ...", in English on the English page: the slip itself is said, and where."""
    import json

    from agentlab.jsonutil import JsonReason
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    reason = JsonReason.of(caught.value)
    assert en in reason.localized("en") and zh in reason.localized("zh"), (reason.localized("en"), reason.localized("zh"))
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads('{"a": }')
    assert JsonReason.of(caught.value).localized("en") == JsonReason("Expecting value").localized("en")
    with pytest.raises(json.JSONDecodeError) as caught:  # a Chinese text inside quotes holds ，and ： as it likes
        json.loads('{"描述": "退款，金额：十元", "a": ]')
    assert "全角" not in JsonReason.of(caught.value).localized("zh")


def test_a_text_cut_short_or_a_word_that_only_starts_like_pythons_is_no_slip():
    """'[1,' (a line cut mid-write) was named "a comma before the closing  at column 4", an empty mark; 'Truely' was
    named Python's True."""
    import json

    from agentlab.jsonutil import JsonReason
    for text in ("[1,", '{"a": 1,', '{"a": Truely}'):
        with pytest.raises(json.JSONDecodeError) as caught:
            json.loads(text)
        said = JsonReason.of(caught.value).localized("en")
        assert "comma before" not in said and "JSON writes true" not in said, (text, said)


def test_the_canonical_text_of_a_flat_object_is_the_encoders_own_on_random_objects():
    """canonical() writes one object of plain values with the encoder's C part directly (half the cost of a call's
    key): the same text as json.dumps with its options, on every kind of plain value and key."""
    import json
    import random

    from agentlab.jsonutil import canonical
    rng = random.Random(7)
    values = ["a", "é中", "\u2028", "\x00", "\"", 0, -5, 10**20, True, False, None, 1.5, -0.5, 1e-7, float("nan"),
              float("inf")]
    for _ in range(5000):
        d = {rng.choice(["a", "b", "中", "z9", "\"q", "k\n", ""]): rng.choice(values) for _ in range(rng.randint(0, 5))}
        assert canonical(d) == json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":")), d


def _mutated(rng, seeds, alphabet) -> str:
    s = list(rng.choice(seeds))
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(s) + 1)
        roll = rng.random()
        if roll < 0.4:
            s.insert(at, rng.choice(alphabet))
        elif roll < 0.7 and s:
            s.pop(min(at, len(s) - 1))
        elif s:
            s[min(at, len(s) - 1)] = rng.choice(alphabet)
    return "".join(s)


def test_a_text_read_quickly_is_the_text_json_reads_on_fuzzed_texts():
    """quick_loads (orjson) gives what json.loads gives, key order and number types included, or leaves the text to
    the caller's decoder: on texts with every kind of break, escape, constant and number in them."""
    import json
    import random

    from agentlab.jsonutil import UNREAD, quick_loads
    rng = random.Random(11)
    seeds = ['{"a": 1, "b": [1, 2.5, "x"], "c": {"d": null, "e": true}}', '{"order_id": "A1", "amount": 10.5}',
             '[1,2,3]', '"\\u00e9"', '{"k": "v\\n\\t"}', '{"n": -0.0e0}', '\ufeff{"a":1}', '{"a":1, "a": 2}',
             '{"a":"\\ud83d\\ude00x"}', '{"t": "1733540000000000000", "n": 9223372036854775807}',
             '{"n": 18446744073709551616}', '[-9223372036854775809]', '{"x": 1e308}', '12345678901234567890']
    alphabet = '{}[]":,. -+eE0123456789abcdefnultrsNIxy\\u\t\n\r\x00\x7f\ufeff\u2028é中\ud800'
    read = 0
    for _ in range(40_000):
        text = _mutated(rng, seeds, alphabet)
        got = quick_loads(text)
        if got is UNREAD:
            continue
        read += 1
        want = json.loads(text)  # raises when orjson took a text json refuses
        assert repr(got) == repr(want) and json.dumps(got) == json.dumps(want), text
    assert read > 4_000  # the quick way is taken, not left every time


@pytest.mark.parametrize("text", ['{"a": 18446744073709551616}', '[-9223372036854775809]', '12345678901234567890',
                                  '{"a": [1,\n 123456789012345678901]}', '{"a": NaN}', '{"a": Infinity}',
                                  '{"a": "\\ud800"}', '{"a": 1e400}', '\ufeff{"a": 1}', '{"a": 1', '',
                                  '[' * 1000 + ']' * 1000, '{"a": ' + '[' * 990 + ']' * 990 + '}'])
def test_what_orjson_would_read_otherwise_or_refuse_is_left_to_the_callers_decoder(text):
    from agentlab.jsonutil import UNREAD, quick_loads
    assert quick_loads(text) is UNREAD


def test_a_text_that_breaks_off_is_told_apart_only_when_asked():
    from agentlab.jsonutil import CUT_OFF, UNREAD, quick_loads
    assert quick_loads('{"order_id": "A2", "amou', cut_off=True) is CUT_OFF
    assert quick_loads('{"order_id": "A2", "amou') is UNREAD
    assert quick_loads('{"a": NaN}', cut_off=True) is UNREAD  # json reads it: never told apart as broken
    assert quick_loads('{"t": "1733540000000000000"}') == {"t": "1733540000000000000"}  # digits in a text: quick


def test_arguments_read_quickly_are_refused_and_accepted_as_the_strict_reader_does():
    from agentlab import jsonutil
    for raw in ('{"a": 1}', '{"a": 12345678901234567890}', '{"a": NaN}', '{"a": 1e400}', '{"a": 1', '[1]',
                '{"a": "\\ud800"}', '{"a": ' + "9" * 70 + "}", '{"a": [[[[1]]]]}', '[' * 1000 + ']' * 1000,
                '{"a": ' + '{"b": ' * 995 + '1' + '}' * 996):
        quick = jsonutil.parse_strict(raw, max_depth=3)
        slow = jsonutil.quick_loads
        try:
            jsonutil.quick_loads = lambda text, cut_off=False: jsonutil.UNREAD  # the strict reader alone
            want = jsonutil.parse_strict(raw, max_depth=3)
        finally:
            jsonutil.quick_loads = slow
        assert repr(quick) == repr(want), raw


def test_the_canonical_text_of_plain_values_is_the_encoders_own_on_random_texts_and_numbers():
    """canonical() has orjson write an object of texts, integers, true, false and null: byte for byte json.dumps's
    text with canonical's options, on texts of every character class (controls, quotes, line separators, a byte-order
    mark, emoji, a lone surrogate) and integers to past 64 bits."""
    import json
    import random

    from agentlab.jsonutil import canonical
    rng = random.Random(3)
    chars = [chr(i) for i in range(0x250)] + ["\u2028", "\u2029", "中", "😀", "\ufeff", "\ud800", "\udfff"]
    for _ in range(20_000):
        d = {}
        for _ in range(rng.randint(0, 5)):
            key = "".join(rng.choice(chars) for _ in range(rng.randint(0, 6)))
            roll = rng.random()
            d[key] = ("".join(rng.choice(chars) for _ in range(rng.randint(0, 8))) if roll < 0.5
                      else rng.randint(-2**70, 2**70) if roll < 0.6 else rng.randint(-2**63, 2**64 - 1) if roll < 0.8
                      else rng.choice([True, False, None]))
        assert canonical(d) == json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":")), d

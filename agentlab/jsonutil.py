"""Strict JSON in, canonical JSON out.

The model's ``arguments`` are a string, not a dict (docs/guards.md#validate). This module
reads that string strictly (no ``NaN``, no ``Infinity``, no number too large for a float or longer than
``MAX_DIGITS``, no trailing text; for arguments, no nesting deeper than ``MAX_DEPTH``) and
says exactly where it broke, and gives the canonical form used for idempotency
keys and the repeated-call breaker: sorted keys, ``1.0`` written as ``1``.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .i18n import Lang

__all__ = ["CUT_OFF", "FULL_WIDTH", "MAX_DEPTH", "MAX_DIGITS", "UNREAD", "JsonReason", "ParseFailure", "canonical", "depth",
           "escape_surrogates", "finite", "json_eq", "lone_surrogates", "normalize", "parse_strict", "quick_loads"]

try:  # a core dependency; on a platform without its wheel, json's own decoder and encoder do everything
    from orjson import OPT_SORT_KEYS as _SORTED
    from orjson import JSONDecodeError as _QuickError
    from orjson import JSONEncodeError as _QuickEncodeError
    from orjson import dumps as _quick_dumps
    from orjson import loads as _quick
except ImportError:  # pragma: no cover
    _quick = _quick_dumps = None  # type: ignore[assignment]


@dataclass(frozen=True)
class ParseFailure:
    """Where and why a JSON text could not be read."""

    reason: str
    line: int
    column: int
    position: int
    near: str

    def describe(self, lang: Lang = "en") -> str:
        """Why and where, in ``lang``: the reason said in the reader's language (a reason nobody wrote down is kept as
        the decoder said it), then the line, the column and the text near it."""
        from .i18n import t
        reason = said_reason(self.reason, lang)
        return t("json.where", lang, reason=reason, line=self.line, column=self.column, near=repr(self.near))

    localized = describe  # a message's fill-in that says itself in the reader's language (agentlab.i18n.said)


class JsonReason:
    """Why a text is not JSON, as the decoder (or this module) said it in English, able to say itself in either
    language (:meth:`localized`): a file's error line in Chinese read the decoder's English inside it."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    def localized(self, lang: Lang = "en") -> str:
        return said_reason(self.text, lang)

    @classmethod
    def of(cls, exc: json.JSONDecodeError) -> JsonReason:
        """Why ``exc``'s text is not JSON, the slip a person makes named where one is recognised (the decoder only
        says "Expecting value"): marks a Chinese keyboard types (［｛“：，), a comma after the last item, single
        quotes, Python's True/False/None; else the decoder's own reason."""
        doc, pos = exc.doc or "", exc.pos
        at = doc[pos:pos + 1]
        column = exc.colno
        if at in FULL_WIDTH:
            from .i18n import Listed
            marks = list(dict.fromkeys(c for c in _outside_strings(doc) if c in FULL_WIDTH))[:8]
            return _Slip(exc.msg, "json.slip.full_width", marks=Listed(f"{m} → {FULL_WIDTH[m]}" for m in marks))
        before = doc[:pos].rstrip()
        if at and at in "]}" and before.endswith(","):  # (a text cut short after a comma ends with no mark at all)
            return _Slip(exc.msg, "json.slip.trailing_comma", mark=at, column=column)
        if at == "'":
            return _Slip(exc.msg, "json.slip.single_quote", column=column)
        word = re.match(r"(?:True|False|None)(?![A-Za-z0-9_])", doc[pos:pos + 6])
        if word:
            return _Slip(exc.msg, "json.slip.python_word", word=word.group(), column=column)
        return cls(exc.msg)


class _Slip(JsonReason):
    """A slip of the person who wrote the text, said by its catalogue line; the decoder's words as its text."""

    __slots__ = ("fields", "key")

    def __init__(self, text: str, key: str, **fields: Any):
        super().__init__(text)
        self.key, self.fields = key, fields

    def localized(self, lang: Lang = "en") -> str:
        from .i18n import said, t
        return t(self.key, lang, **{k: said(v, lang) for k, v in self.fields.items()})


#: full-width marks a Chinese keyboard types where code or JSON wants the half-width one: the full-width form of every
#: ASCII mark and digit (U+FF01-FF5E; not the letters, which Python reads as the half-width ones in a name), and the
#: Chinese marks that stand for one ("２" read only "invalid character '２' (U+FF12)", and 「lost_reply」 nothing more).
#: One table for both readers of a person's text: a learner's code (agentlab.workbook.plain_errors) and JSON here
FULL_WIDTH = {**{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F) if not chr(c - 0xFEE0).isalpha()},
              "“": '"', "”": '"', "‘": "'", "’": "'", "「": '"', "」": '"', "『": '"', "』": '"', "。": ".", "、": ",",
              "《": "<", "》": ">", "【": "[", "】": "]", "　": " "}


def _outside_strings(doc: str) -> str:
    """``doc`` without its double-quoted strings (a Chinese text inside quotes may hold ，and ： as it likes)."""
    return re.sub(r'"(?:\\.|[^"\\\n])*"', "", doc)


def said_reason(text: str, lang: Lang = "en") -> str:
    """The decoder's reason ``text`` in ``lang``; one nobody wrote down is kept as it was said."""
    from .i18n import t
    for pattern, key in _REASONS:
        found = pattern.fullmatch(text)
        if found:
            return t(key, lang, **found.groupdict())
    return text


# what the decoder (and this module) says when a text is not JSON, each with its sentence in the catalogue
_REASONS = tuple((re.compile(pattern), key) for pattern, key in (
    (r"Expecting value", "json.expecting_value"),
    (r"Expecting property name enclosed in double quotes", "json.property_name"),
    (r"Expecting ':' delimiter", "json.colon"),
    (r"Expecting ',' delimiter", "json.comma"),
    (r"Unterminated string starting at", "json.unterminated"),
    (r"Invalid control character (?:at|%r at)", "json.control"),
    (r"Invalid \\uXXXX escape", "json.u_escape"),
    (r"Invalid \\escape", "json.escape"),
    (r"keys and strings need double quotes, not single quotes", "json.single_quotes"),
    (r"unexpected text after the JSON value", "json.extra"),
    (r"Extra data", "json.extra"),  # the decoder's own words for it, as a file's reader gets them
    (r"the JSON ends too early \(truncated\?\)", "json.truncated"),
    (r"(?P<name>NaN|-?Infinity) is not valid JSON", "json.constant"),
    (r"the number (?P<text>.*) is too large", "json.number_too_large"),
    (r"a number with more than (?P<n>\d+) digits", "json.too_many_digits"),
    (r"nesting is too deep", "json.too_deep"),
    (r"nested too deeply", "json.nested"),
    (r"arrays and objects nest more than (?P<n>\d+) levels deep", "json.depth"),
    (r"arguments must be a string, got (?P<type>\w+)", "json.not_string"),
))


MAX_DEPTH = 64  # arrays and objects inside each other; no tool's arguments come near it
MAX_DIGITS = 64  # digits in one number; more is no amount, count or id a tool can take as a number


class _Unreadable(ValueError):
    """A number or nesting the model wrote that no check may be asked to handle."""

    def __init__(self, reason: str, text: str):
        super().__init__(reason)
        self.text = text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _number(text: str) -> float:
    # 1e400 is valid JSON, but Python reads it as infinity, which no check or store can take
    value = float(text)
    if not math.isfinite(value):
        raise _Unreadable(f"the number {text[:24]} is too large", text)
    return value


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:  # also keeps Python's own digit limit message away from the model
        raise _Unreadable(f"a number with more than {MAX_DIGITS} digits", text)
    return int(text)


_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_number, parse_int=_integer)


_SCALARS = frozenset({str, int, float, bool, type(None)})  # exact types: a subclass of dict is walked as one


def depth(value: Any, *, stop: int | None = None) -> int:
    """How deeply arrays and objects nest in ``value`` (0 for a scalar), without recursion.

    ``stop``: return as soon as the depth is past it. A dict a framework hands over may contain itself, and
    its depth is then endless: without ``stop`` the walk would never end (and its stack would fill memory)."""
    if type(value) is dict and (stop is None or stop >= 0) and _SCALARS.issuperset(map(type, value.values())):
        return 1  # the common case, a model's arguments: one object of plain values, no walk needed
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if stop is not None and d > stop:
            return d
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, d + 1) for x in v)
        else:
            deepest = max(deepest, d)
            continue
        deepest = max(deepest, d + 1)
    return deepest


#: what :func:`quick_loads` returns for a text it leaves to the caller's own decoder
UNREAD: Any = object()
#: what :func:`quick_loads` returns, when asked, for a text that ends before its JSON value does
CUT_OFF: Any = object()

# digits to "0", commas and brackets to ":", white space and minus signs dropped: a number with an integer part of 19
# digits or more (orjson reads one past 64 bits as a float, where json reads it exactly) then shows as ":" and nineteen
# zeros, or as nineteen zeros at the start. Digits inside a text (a timestamp in nanoseconds) show the same way only
# after a colon, comma or bracket: such a text is read the careful way, as it would be anyway
_NUMBERS = bytes.maketrans(b"123456789,[", b"000000000::")
_LONG = b"0" * 19
# more brackets than this, and the text might nest deeper than json reads where it is called (its limit is what is
# left of the interpreter's recursion limit, a thousand less the caller's own frames), where orjson reads to 1024:
# such a text is left to json, which reads or refuses it as it always did. Valid JSON nests at most half its length
# deep, so a text of up to twice this length is not counted (a log's line, a call's arguments: most texts)
_NESTED = 400
_LONG_AFTER = b":" + _LONG


def quick_loads(text: str, *, cut_off: bool = False) -> Any:
    """``text`` as ``json.loads`` reads it, read by orjson (four to five times faster on a log's line), or
    :data:`UNREAD` where the two might differ: JSON orjson refuses (NaN, Infinity, a lone surrogate's escape, a number
    past a float, any error: the caller's decoder reads it, or says why not, its own way) and a number of 19 digits or
    more. Equal, key order included, on everything else: a test holds the two alike on fuzzed texts.

    ``cut_off``: a text that ends before its JSON value does (arguments a model's reply broke off in, common in a
    log) is :data:`CUT_OFF`, for a caller that only needs to know it does not parse: no decoder reads that."""
    if _quick is None or (len(text) > 2 * _NESTED and text.count("[") + text.count("{") > _NESTED):  # see _NESTED
        return UNREAD
    try:
        value = _quick(text)
    except _QuickError as exc:
        return CUT_OFF if cut_off and exc.msg == "unexpected end of data" else UNREAD
    numbers = text.encode("utf-8", "surrogatepass").translate(_NUMBERS, b" \t\n\r-")
    if _LONG_AFTER in numbers or numbers.startswith(_LONG):
        return UNREAD
    return value


def parse_strict(raw: str, *, max_depth: int | None = None) -> tuple[Any, ParseFailure | None]:
    """Parse ``raw``; return ``(value, None)`` or ``(None, failure)``. Never raises.

    ``max_depth``: refuse arrays and objects nested deeper (a model's arguments: :data:`MAX_DEPTH`). Other
    JSON (a tool's own result) is read at any depth the decoder can take."""
    if not isinstance(raw, str):
        return None, ParseFailure(f"arguments must be a string, got {type(raw).__name__}", 1, 1, 0, "")
    value = quick_loads(raw)  # the usual arguments; what it leaves is read (and refused) below, by the strict rules
    try:
        if value is UNREAD:
            value = _decoder.decode(raw)
    except json.JSONDecodeError as exc:
        msg = exc.msg
        if msg.startswith("Expecting property name enclosed in double quotes") and "'" in raw:
            msg = "keys and strings need double quotes, not single quotes"
        elif msg == "Extra data":
            msg = "unexpected text after the JSON value"
        elif msg.startswith("Expecting") and exc.pos >= len(raw.rstrip()):
            msg = "the JSON ends too early (truncated?)"
        return None, ParseFailure(msg, exc.lineno, exc.colno, exc.pos, _near(raw, exc.pos))
    except _Unreadable as exc:
        pos = max(raw.find(exc.text), 0)
        line = raw.count("\n", 0, pos) + 1
        return None, ParseFailure(str(exc), line, pos - (raw.rfind("\n", 0, pos) + 1) + 1, pos, _near(raw, pos))
    except ValueError as exc:  # NaN / Infinity from parse_constant
        pos = _find_constant(raw)
        line = raw.count("\n", 0, pos) + 1
        col = pos - (raw.rfind("\n", 0, pos) + 1) + 1
        return None, ParseFailure(str(exc), line, col, pos, _near(raw, pos))
    except RecursionError:
        return None, ParseFailure("nesting is too deep", 1, 1, 0, raw[:20])
    if max_depth is not None and depth(value, stop=max_depth) > max_depth:  # every later check walks the value: keep them finite
        return None, ParseFailure(f"arrays and objects nest more than {max_depth} levels deep", 1, 1, 0, raw[:20])
    return value, None


def _near(raw: str, pos: int) -> str:
    return raw[max(0, pos - 12): pos + 12]


def _find_constant(raw: str) -> int:
    hits = [raw.find(c) for c in ("NaN", "-Infinity", "Infinity")]
    hits = [h for h in hits if h >= 0]
    return min(hits) if hits else 0


def normalize(value: Any) -> Any:
    """Numbers in one form (``2.0`` -> ``2``), so equal arguments compare equal."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    return value


# json.dumps with these options is this encoder's encode, made again (with its options checked) on each call: the
# guarded loop and every adapter make the canonical text of each call's arguments
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode
# the same encoder's C part, called as encode calls it less encode's own Python (half the cost of a call's key): for
# one object of plain values only, which can hold no cycle (no markers kept) and no value needing ``default``
_FLAT = None if c_make_encoder is None else c_make_encoder(None, None, encode_basestring, None, ":", ",", True, False, True)
_AS_IS = frozenset({str, int, bool, type(None)})  # exact types normalize returns unchanged
_STR = frozenset({str})


def canonical(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, normalised numbers, no spaces."""
    if type(value) is dict and _STR.issuperset(map(type, value)):
        kinds = set(map(type, value.values()))
        # the usual arguments, one object of plain values: nothing for normalize to change, unless a float is whole
        # (2.0 is written 2); its walk (a call per value) was most of this function's cost
        if kinds <= _AS_IS and _quick_dumps is not None:
            # texts, integers, true, false and null: orjson writes them as this encoder does, byte for byte (a test
            # holds the two alike on random objects, every character class in their texts), in a ninth of the time
            try:
                return _quick_dumps(value, option=_SORTED).decode()
            except _QuickEncodeError:  # an integer past 64 bits, a lone surrogate: written below
                pass
        if kinds <= _AS_IS or (kinds <= _AS_IS | {float} and not any(
                [v.is_integer() for v in value.values() if type(v) is float])):
            return "".join(_FLAT(value, 0)) if _FLAT is not None else _CANONICAL(value)
    return _CANONICAL(normalize(value))


def json_eq(a: Any, b: Any) -> bool:
    """Equality as JSON defines it: ``1 == 1.0``, but ``true != 1`` and ``[false] != [0]``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_eq(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """Write each lone surrogate in ``text`` as its ``\\uXXXX`` escape.

    Models emit half of an escaped emoji now and then. A lone surrogate cannot be encoded
    as UTF-8, so it would crash whatever stores or sends the text next; as an escape it
    is plain ASCII, and inside a JSON string it still decodes to (and is caught as) itself.
    """
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def lone_surrogates(value: Any, path: str = "$") -> list[str]:
    """Paths (``$.summary``, ``$.items[0]``) of strings in ``value`` holding a lone surrogate."""
    found: list[str] = []
    if isinstance(value, str):
        if _SURROGATE.search(value):
            found.append(path)
    elif isinstance(value, dict):
        for k, v in value.items():
            child = f"{path}.{k}" if path != "$" else str(k)
            if _SURROGATE.search(str(k)):
                found.append(child)
            found += lone_surrogates(v, child)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += lone_surrogates(v, f"{path}[{i}]" if path != "$" else f"[{i}]")
    return found


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinity (not graded, not measured) as None: a report's JSON is read by tools that
    take JSON only, where ``json.dumps`` writes ``NaN``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value

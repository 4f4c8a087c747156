"""How a learner's typed answer is read (agentlab/workbook/exercises.py): as a person types it, not as Python sees it.

A word is compared without case, quotes, brackets, full-width forms, spaces, hyphens or underscores, and in any
language a table shows it in (every glossary label of the truth, ``data/i18n/labels/``, and the other words people
type for it, ``data/i18n/answers.json``); a Chinese one without the particles around it (升高了, 更高). A number reads
with its unit or its order around it ("2 秒", "3rd", "第三次", "three"), and a unit of another quantity is not that
number ("2元" is no wait). Whatever cannot be read as what was asked is said to be so, never a traceback.
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from decimal import Decimal
from functools import cache
from numbers import Real
from typing import Any

from ..i18n import label_glossary
from ..resources import data_file

__all__ = ["answer_key", "answer_number", "judge_answer", "plain_text"]


_QUOTES = "'\"`“”‘’「」『』 \t\r\n"  # ASCII and Chinese quotes, spaces
_SEPARATORS = re.compile(r"[\s_-]+")


_BRACKETS = "()[]【】《》〈〉"
_FINAL = "。.,;:!?、"  # after NFKC: a Chinese comma, semicolon, colon, mark of a question or of surprise too


def plain_text(value: str) -> str:
    """What a person typed, without what does not matter: full-width forms (NFKC), surrounding quotes, brackets and
    spaces, final punctuation (a Chinese comma as much as a full stop: "lost_reply，" was refused while "2，" was
    read), case."""
    text, before = unicodedata.normalize("NFKC", value), None
    while text != before:
        before, text = text, text.strip(_QUOTES).strip(_BRACKETS).rstrip(_FINAL)
    return text.casefold()


def answer_key(value: Any) -> str:
    """Answers compare as words: case, quotes, full-width forms, and spaces, hyphens and underscores do not matter."""
    return _SEPARATORS.sub("", plain_text(str(value)))


@cache
def _glossary_forms() -> dict[str, frozenset[str]]:
    """Each glossary label (compared as a word) -> every way the glossary says it: the English label and its
    translations, from every ``data/i18n/labels/*.json`` file. A Chinese table shows the translation."""
    out: dict[str, set[str]] = {}
    for table in label_glossary().values():
        for english, translated in table.items():
            out.setdefault(answer_key(english), {answer_key(english)}).add(answer_key(translated))
    # the other words people type for some of them (提高 where the table says 升高): data/i18n/answers.json
    others = json.loads(data_file("i18n/answers.json").read_text(encoding="utf-8"))
    for lang, table in others.items():
        if lang.startswith("_"):
            continue
        for english, words in table.items():
            out.setdefault(answer_key(english), {answer_key(english)}).update(answer_key(w) for w in words)
    return {word: frozenset(forms) for word, forms in out.items()}


def _word(given: Any) -> str | None:
    """The answer as a word to compare, or None when it is not one (a list, a dict, True, a blank)."""
    if isinstance(given, bool) or not isinstance(given, (str, Real)):
        return None
    return answer_key(given) or None


# a number, with a unit or an ordinal around it: "2 秒", "2s", "3rd", "第 3 次", "the 3rd", "12 cases"
_NUMBER = re.compile(r"(?:第|the\s)?\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?:st|nd|rd|th)?\s*"
                     r"(?![^\d]*(?:[零〇一二两三四五六七八九十百千]|不到|以上|以下|以内|之内|多|或|\bor\b|\bto\b))[^\d]*")


# the words a person puts before a number that only carry it ("约2秒", "等待2秒", "最多2秒", "做对十二条", "about 2 s"):
# never a "不到" or "less than", which changes the number's meaning, so that is still no number
_LEAD = re.compile(r"^(?:(?:(?:答案|回答|结果)\s*(?:是|为|:)?|应该是|应当是|应为|只有|一共有|共有|推荐了?|给了|"
                   r"约|大约|大概|差不多|等待|等|最多|至多|最长|一共|共|总共|做对了?|答对了?|对了|是|为|"
                   r"the\s+answer\s+is|answer:?|it\s+is|about|around|roughly|approximately|wait|waits|up\s+to|at\s+most"
                   r")\s*)+(?=[第\d零〇一二两三四五六七八九十百千.+-])")


# a number written in Chinese, with a unit or an ordinal around it: "三", "三次", "第三", "十二", "一百零五"
_CHINESE_NUMBER = re.compile(r"第?\s*([零〇一二两三四五六七八九十百千]+)(?:点([零〇一二三四五六七八九]+))?\s*"
                             r"(?![^\d]*(?:不到|以上|以下|以内|之内|多|或))[^\d零〇一二两三四五六七八九十百千]*")
# the numerals written on cheques and receipts (叁, 拾), as the everyday ones
_FORMAL = str.maketrans("壹贰貳叁參肆伍陆陸柒捌玖拾佰仟", "一二二三三四五六六七八九十百千")
_CHINESE_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CHINESE_UNITS = {"十": 10, "百": 100, "千": 1000}


def _chinese_number(text: str) -> int | None:
    """The number Chinese numerals write (up to 9999), or None for what nobody writes ("三二", "十十")."""
    total, digit, last_unit = 0, None, 10_000
    for ch in text:
        if ch in _CHINESE_UNITS:
            unit = _CHINESE_UNITS[ch]
            if unit >= last_unit:  # units only fall: 一百二十, never 十百
                return None
            total += (1 if digit is None else digit) * unit  # 十 alone is 10
            digit, last_unit = None, unit
        elif _CHINESE_DIGITS[ch] == 0 and text != ch:  # 一百零五: the zero only holds a place
            continue
        elif digit is not None:  # two digits with no unit between them
            return None
        else:
            digit = _CHINESE_DIGITS[ch]
    return total + (digit or 0)


# a number written in English words, up to twenty, as a count or an order ("three", "the third", "third time"): the
# look-ups ask "(1st, 2nd, 3rd...)", and "third" was refused as no number while "3rd" was read
_EN_COUNTS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
              "seventeen eighteen nineteen twenty").split()
_EN_ORDERS = ("zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
              "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()
_EN_AT = re.compile(r"^(?:on|at|after|by|from|in)\s+(?=the\s|\d|[a-z]+(?:st|nd|rd|th)?\b)")
_EN_NUMBERS = {**{w: n for n, w in enumerate(_EN_COUNTS)}, **{w: n for n, w in enumerate(_EN_ORDERS)}}
_EN_NUMBER = re.compile(r"(?:the\s+)?([a-z]+)(?:\s+(?![^\d]*\b(?:or|to|and|than|more|less|plus|minus)\b)[^\d]*)?")


# the units of a quantity other than a count, as a learner types them after a number: what each is in its own base
# (a time in seconds) and which quantity it measures. "2元" read as 2 seconds was right, "2000毫秒" wrong
_UNITS = {**dict.fromkeys(("s", "sec", "secs", "second", "seconds", "秒", "秒钟"), ("time", 1.0)),
          **dict.fromkeys(("ms", "millisecond", "milliseconds", "毫秒"), ("time", 0.001)),
          **dict.fromkeys(("min", "mins", "minute", "minutes", "分钟"), ("time", 60.0)),
          **dict.fromkeys(("元", "块", "块钱", "yuan", "rmb", "¥", "$", "dollars"), ("money", 1.0)),
          **dict.fromkeys(("%", "percent", "个百分点"), ("share", 1.0)),
          # a count's own words: read as the count, never as seconds ("2次" was a right wait of 2 seconds)
          **dict.fromkeys(("次", "条", "个", "种", "步", "项", "轮", "times", "calls", "messages", "replies", "tools",
                           "steps", "turns", "cases"), ("count", 1.0))}
_AMOUNT = re.compile(r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)|[零〇一二两三四五六七八九十百千]+(?:点[零〇一二三四五六七八九]+)?)\s*(\S.*)")


def _unit(given: Any) -> tuple[str, float] | None:
    """The quantity a number's unit measures and its factor (``("time", 0.001)`` for "2000毫秒"), or None for a bare
    number, a count's word ("3 次", "3 calls") or anything else."""
    if not isinstance(given, str):
        return None
    text = _LEAD.sub("", plain_text(given).translate(_FORMAL), count=1)
    if text[:1] in ("¥", "$"):  # the currency first: ¥2
        return _UNITS["元"]
    found = _AMOUNT.fullmatch(text)
    return _UNITS.get(found.group(2).strip()) if found else None


def answer_number(given: Any) -> float | None:
    """The answer as a number, or None when it does not read as one ("many", [], True, "2-3"); Chinese numerals
    read as the number they write ("三次" is 3), and English words up to twenty ("three", "the third")."""
    if isinstance(given, bool):
        return None
    if isinstance(given, str):
        if plain_text(given)[:1] in ("¥", "$"):  # ¥2: the unit first
            given = plain_text(given)[1:]
        given = _LEAD.sub("", plain_text(given), count=1)  # "约2秒", "等待 2 秒", "做对十二条": the number they say
        given = _EN_AT.sub("", given)  # "on the third identical call", "after 2 s": when, said as the number
        match = _NUMBER.fullmatch(given)
        if not match:
            chinese = _CHINESE_NUMBER.fullmatch(given.translate(_FORMAL))
            if chinese is not None:
                whole = _as_float(_chinese_number(chinese.group(1)))
                if whole is None or not chinese.group(2):
                    return whole
                return float(f"{whole:.0f}." + "".join(str(_CHINESE_DIGITS[d]) for d in chinese.group(2)))  # 二点五
            word = _EN_NUMBER.fullmatch(given.lower())
            return float(_EN_NUMBERS[word.group(1)]) if word and word.group(1) in _EN_NUMBERS else None
        given = match.group(1)
    elif not isinstance(given, (Real, Decimal)):
        return None
    try:
        value = float(given)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def _as_float(value: int | None) -> float | None:
    return None if value is None else float(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (Real, Decimal)) and not isinstance(value, bool)


def judge_answer(given: Any, right: Any, unit: str | None = None) -> bool | str:
    """True or False, or the catalogue key of why ``given`` cannot be read as what ``right`` is.

    ``right`` may be several truths (a tie): any of them is right. A number compares as a number, anything else
    as a word, against the truth and every glossary label of it. ``unit``: what a number truth is, ``"time"`` (in
    seconds: "2 秒", "2000 ms" and "2" are all 2) or ``"count"``; a unit of another quantity ("2元" for a wait, "3
    秒" for a count of messages) is not read as the number. None: any unit is read past."""
    if isinstance(right, (list, tuple, set, frozenset)):
        verdicts = [judge_answer(given, one, unit) for one in right]
        return True if True in verdicts else next((v for v in verdicts if isinstance(v, str)), False)
    if _is_number(right):
        number = answer_number(given)
        if number is None:
            return "exercise.not_a_number"
        measured = _unit(given) if unit is not None else None
        if measured is not None:
            quantity, factor = measured
            if quantity != unit:
                return "exercise.wrong_unit_time" if unit == "time" else "exercise.wrong_unit_count"
            number *= factor
        return abs(number - float(right)) <= 1e-9 * max(1.0, abs(float(right)))
    word = _word(given)
    if word is None:
        return "exercise.not_a_word"
    truth = answer_key(right)
    forms = _glossary_forms().get(truth, frozenset()) | {truth}
    if word in forms or not forms.isdisjoint(_bares(word)):
        return True
    # a short English sentence around the words ("it raises", "the lost reply"): what it says, once the words that
    # only carry it are gone; a "not" stays ("not caught" is no "caught")
    said = _en_bare(given)
    if said is not None and said != word and (said in forms or not forms.isdisjoint(_bares(said))):
        return True
    # the answer with its meaning added in brackets ("validate（校验）", "lost_reply（写操作已执行…）"): read by its head
    head = word.split("(", 1)[0]
    return bool(head) and head != word and (head in forms or not forms.isdisjoint(_bares(head)))


#: the words an English answer carries its one word in: "it raises", "the semantic class", "answer: higher"
_EN_AROUND = frozenset("it its it's they the a an is are will would should goes go gets get be answer answer: class "
                       "one rate".split())


def _en_bare(given: Any) -> str | None:
    """A short English answer without the words around it ("the lost reply" is lost reply), compared as a word; None
    when nothing is left."""
    if not isinstance(given, str):
        return None
    words = [w for w in plain_text(given).split() if w.strip(_FINAL) not in _EN_AROUND]
    return answer_key(" ".join(words)) if words else None


# what a Chinese answer says around its word: a final 了 (升高了), a leading 更, 变得 or 有所 (更高, 有所提高), the
# metric or the question it answers (成功率升高了, 答案是, 会升高), the setting (只开校验), the word for a stage or a
# field the table names it with (执行阶段, _meta 字段)
_BEFORE_WORD = re.compile(r"^(?:更|变得|有所|成功率|答案是|答案为|答案:|答案|应该是|应为|角色是|角色为|是|会|只开|仅开|只用|only)+")
# ... and after it: a final 了, the word for a stage or a field, or for what kind of thing it is (熔断器 is the breaker,
# 结构类, 结构问题 and 结构错误 the structure class, 熔断机制 the breaker again)
_AFTER_WORD = re.compile(r"(?:了|阶段|字段|器|类|问题|错误|机制)+$")


def _bares(word: str) -> set[str]:
    """``word`` without the particles a Chinese answer puts around it, each way they can be taken off: "升高了" is
    升高, "更高" is 高, and "更好了" is 更好 as well as 好 (a list of words may hold either)."""
    out: set[str] = set()
    todo = [word]
    while todo:  # its quotes too, once the words around them are gone ("答案是“工具”。")
        now = todo.pop()
        for pattern in (_BEFORE_WORD, _AFTER_WORD):
            cut = plain_text(pattern.sub("", now))
            if cut and cut != now and cut not in out:
                out.add(cut)
                todo.append(cut)
    return out

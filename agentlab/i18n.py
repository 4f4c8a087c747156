"""Every sentence a model or an end user reads, in English and Chinese.

Keeping the catalogue in one place means a translation can be checked for
completeness by a test, and no module builds user-facing text on its own.

The sentences are data, one file per language: ``data/i18n/en.json`` and
``data/i18n/zh.json`` (``agentlab.data`` in a wheel), so a translator edits a
data file, not Python. JSON rather than TOML or gettext ``.po``: the standard
library reads it (no new dependency), its escaping is the one every other data
file of the project uses, and any translator's editor checks that it parses.
Both files list the keys in the same order, grouped by topic with a blank line
between groups; ``data/i18n/README.md`` names the groups. The files are read
once, the first time a sentence is asked for, so importing the package does not
pay for them.
"""
from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any, Literal, TypeVar, cast

__all__ = ["LANGS", "Lang", "Listed", "LocalizedError", "Sentence", "accepted_lang", "both", "check_lang", "colon", "joined", "keys", "label",
           "label_glossary", "missing_labels", "os_reason", "said", "said_marks", "t"]

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")
_T = TypeVar("_T")


@cache
def _catalog() -> dict[str, dict[str, str]]:
    """Every entry as ``{key: {lang: text}}``, read from the language files once.

    English decides which keys exist; a key missing in another language falls back to English in :func:`t`
    (tests/test_i18n.py keeps both files in step)."""
    from .resources import data_file  # importlib.resources is loaded only when a sentence is first needed

    texts = {lang: json.loads(data_file(f"i18n/{lang}.json").read_text(encoding="utf-8")) for lang in LANGS}
    return {key: {lang: texts[lang][key] for lang in LANGS if key in texts[lang]} for key in texts["en"]}


def __getattr__(name: str) -> dict[str, dict[str, str]]:
    # ``i18n._CATALOG`` (read by tests and older code) is the loaded catalogue, loaded on first use
    if name == "_CATALOG":
        return _catalog()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def t(key: str, lang: Lang = "en", /, **fields: object) -> str:
    """Look up ``key`` in ``lang`` and fill in ``fields``.

    A count says its noun the way the number needs it: ``{n:count:step/steps}`` is "1 step", "3 steps" (English
    has the two forms; the Chinese text writes ``{n}`` and its noun, which has one)."""
    entry = _catalog()[key]
    text = entry.get(lang) or entry["en"]
    if not fields:
        return text
    status = fields.get("status")
    if lang != "en" and isinstance(status, str):
        # a run's status (budget_exhausted) is said in the reader's words wherever a sentence names it: each caller
        # passing run.status had to remember, and a dozen sentences showed 结束状态 done
        said_ = _status_words().get(lang, {}).get(status)
        if said_ is not None:
            fields = {**fields, "status": said_}
    if lang == "zh" and "!r" in text:  # a value quoted as Chinese quotes it (see _Quoted), with no space around it
        # (the space goes only beside a quoted text: a number or None keeps it, 实际是 -1, not 实际是-1)
        return _BESIDE_QUOTE.sub("", _QUOTED.vformat(text, (), fields)).replace(_MARK, "")
    return _COUNTED.vformat(text, (), fields) if ":count:" in text else text.format(**fields)


def both(key: str, /, **fields: object) -> dict[str, str]:
    """``key`` said in every language, ``{"en": ..., "zh": ...}``: for text handed on in both languages at once (an
    exercise's explanation, a scripted reply, a desk's name), the language chosen where it is shown."""
    return {lang: t(key, lang, **fields) for lang in LANGS}


class _Counted(string.Formatter):
    """``str.format``, plus ``{n:count:one/many}``: the number, then the noun's form for that number."""

    def format_field(self, value: object, format_spec: str) -> str:
        if format_spec.startswith("count:"):
            one, _, many = format_spec[len("count:"):].partition("/")
            shown = format(value, "g") if isinstance(value, float) else value  # 1.0 is "1 turn", 1.5 "1.5 turns"
            return f"{shown} {one if value == 1 else many or one}"
        return format(value, format_spec)


_COUNTED = _Counted()


class _Quoted(_Counted):
    """For Chinese: ``{name!r}`` puts a text in “” (Chinese quotation marks), escaped as ``repr`` escapes it (a
    newline shows as \\n, nothing is hidden); Python's own '…' read 没有名为 'lookup' 的工具 to a Chinese reader.
    Anything but a text (None, a number) is shown as ``repr`` shows it."""

    def convert_field(self, value: object, conversion: str | None) -> object:
        if conversion == "r" and isinstance(value, str):
            inner = repr(value)[1:-1]
            return f"{_MARK}“{inner}”{_MARK}"  # marked, so that the template's space beside it can go (and only it)
        return super().convert_field(value, conversion)


_QUOTED = _Quoted()
#: the space a template leaves between a Chinese word and a quoted value ({name!r}), which Chinese quotation marks do not
#: take; taken out of the template, never out of the values filled in
_MARK = "\x1f"  # around a quoted text while its sentence is made; never in what t() returns
_BESIDE_QUOTE = re.compile("(?<=[\u4e00-\u9fff]) \x1f|\x1f (?=[\u4e00-\u9fff])")


# an identifier joined by hyphens (a case id "adv-bad-key", a run label "2-no-validation") is a name too, when it
# holds a digit or three parts: a two-word phrase ("hand-over") still needs its translation
_TECHNICAL = re.compile(r"[\w.:/<>=+^-]*[_.:/<>=+^][\w.:/<>=+^-]*|[A-Z0-9_ -]+|[-+]?[\d.,%]+|"
                        r"|(?=[a-z-]*\d|(?:[a-z]+-){2})[a-z0-9]+(?:-[a-z0-9]+)+"
                        r"|[\w.-]+: [A-Z][A-Z0-9_]+"  # a tool and its error code (get_order: LOOP_DETECTED)
                        r"|[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)+"  # an HTTP header's name (Idempotent-Replayed)
                        r"|[A-Za-z]*\d[A-Za-z0-9]*"  # an id: a record E0020, a session 5039b2eb4e8f, a message
                        r"|[\w.]+ \([-+\d.,%]+\)")  # a name and its score (current_weather (18.8))
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")  # CJK punctuation, ideographs, full-width forms
_missing: set[str] = set()


@cache
def label_glossary() -> dict[str, dict[str, str]]:
    """The glossary of the workbook's short labels (table headers, category values, plot titles and legends):
    ``{lang: {english label: translation}}``, from ``data/i18n/labels/*.json`` (one file per topic, merged)."""
    from .resources import data_file

    out: dict[str, dict[str, str]] = {lang: {} for lang in LANGS if lang != "en"}
    folder = data_file("i18n/labels")
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        for lang, table in json.loads(path.read_text(encoding="utf-8")).items():
            out.setdefault(lang, {}).update(table)
    return out


@cache
def _status_words() -> dict[str, dict[str, str]]:
    """A run's statuses in each language (``data/i18n/labels/statuses.json``, also part of the glossary)."""
    from .resources import data_file
    return json.loads(data_file("i18n/labels/statuses.json").read_text(encoding="utf-8"))


# What a program said (a JSON value, a call with its arguments) is shown as it was said: its ", " is not a
# list of labels, and its keys are names, not words to translate.
_MACHINE = re.compile(r"\s*(?:[\[{].*[\]}]|[A-Za-z_][\w.]*\(.*\))\s*", re.S)


def label(text: _T, lang: Lang = "en", /) -> _T:
    """A short label of a table, a plot or a printed line, in ``lang``.

    The notebooks' code names its columns and categories in English (the code is shared by both languages); the
    glossary says them in Chinese. A technical name (``create_refund``, ``INVALID_ARGS``, ``pass^k``), a number,
    text already in Chinese and what a program said (a JSON value, a call with its arguments) stay as they are;
    anything else missing from the glossary stays English and is noted, so that a test can list what a Chinese
    reader would still meet in English (:func:`missing_labels`).
    """
    if lang == "en" or not isinstance(text, str) or _MACHINE.fullmatch(text):
        return text
    said_ = label_glossary().get(lang, {}).get(text)
    if said_ is not None:
        return cast(_T, said_)
    if _TECHNICAL.fullmatch(text) or _CJK.search(text) or not re.search(r"[A-Za-z]{2}", text):
        return text
    if ", " in text:  # a list of labels (the guards that caught a fault): each said on its own
        return cast(_T, joined((label(part, lang) for part in text.split(", ")), lang, "list"))
    _missing.add(text)
    return text


#: how each language joins the parts of a sentence (items of a list, clauses) and sentences; a label and its value are
#: joined by the catalogue's ``join.colon``, which pages use too
_JOINS = {"zh": {"list": "、", "comma": "，", "clause": "；", "sentence": ""},
          "en": {"list": ", ", "comma": ", ", "clause": "; ", "sentence": " "}}


def joined(parts: Iterable[object], lang: Lang = "en",
           how: Literal["list", "comma", "clause", "colon", "sentence"] = "clause") -> str:
    """``parts`` joined as ``lang`` writes them: a Chinese sentence takes 、 between items and ； between clauses, never
    an English comma or semicolon (a Chinese account read "（幂等）; 逐个执行"); ``how="comma"`` joins two phrases of one
    clause (完成，等了 500 ms: the Chinese comma, where 、 would make them a list). ``how="colon"`` joins a label and its
    value (无效调用：朴素循环 12); ``how="sentence"`` puts whole sentences one after another (a space in English)."""
    sep = colon(lang) if how == "colon" else _JOINS.get(lang, _JOINS["en"])[how]
    return sep.join(str(p) for p in parts)


def colon(lang: Lang = "en") -> str:
    """What joins a label and its value in ``lang``: ": " in English, a full-width "：" in Chinese, where "退款笔数: 1"
    is English punctuation in a Chinese line (``f"{label}{colon(lang)}{value}"``)."""
    return t("join.colon", lang)


def aside(text: object, lang: Lang = "en") -> str:
    """``text`` as an aside after what it explains: " (text)" in English, "（text）" in Chinese, where ASCII brackets
    are English punctuation (已退款 (3 轮次)). Written right after the word: ``f"{label}{aside(count, lang)}"``."""
    return t("join.aside", lang, text=text)


def columns(text: str) -> int:
    """How many columns ``text`` takes in a terminal: a wide character (Chinese) takes two, as a terminal draws it."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: object, width: int, align: Literal["<", ">"] = "<") -> str:
    """``text`` padded with spaces to ``width`` columns (:func:`columns`): ``f"{text:10}"`` counts characters, so a
    column of Chinese words pushed every column after it out of line."""
    shown = str(text)
    gap = " " * max(width - columns(shown), 0)
    return shown + gap if align == "<" else gap + shown


def missing_labels() -> set[str]:
    """Labels asked for in another language that the glossary lacks (since the process started)."""
    return set(_missing)


def t_or(key: str, otherwise: str, lang: Lang = "en", /) -> str:
    """``key``'s sentence in ``lang`` when the catalogue has one, else ``otherwise``: a name that may come from outside
    (a desk's own table, field or status, a log's status) is said where the catalogue knows it and kept where not."""
    return t(key, lang) if key in _catalog() else otherwise


def keys() -> list[str]:
    """All catalogue keys (a test checks each has every language)."""
    return list(_catalog())


@lru_cache(maxsize=512)
def accepted_lang(accept_language: str, default: Lang = "en") -> Lang:
    """The language of an ``Accept-Language`` header: the browser's most preferred of English and Chinese (zh-* is
    Chinese), by its q-values; ``default`` when it names neither. Every page, the site, the gateway and the hub read
    a request's language here (a first-tag reading of their own answered "fr,zh;q=0.8" in English). Remembered per
    header: the site asks at every call, and a client sends the same one each time."""
    ranked = []
    for i, part in enumerate(accept_language.split(",")):
        tag, _, params = part.strip().partition(";")
        q = re.search(r"\bq=([^;,\s]*)", params)
        try:
            weight = float(q.group(1)) if q else 1.0
        except ValueError:
            weight = 0.0
        ranked.append((-weight, i, tag.strip().lower()))
    for weight, _, tag in sorted(ranked):
        if weight < 0 and (tag == "zh" or tag.startswith("zh-")):
            return "zh"
        if weight < 0 and (tag == "en" or tag.startswith("en-")):
            return "en"
    return default


def check_lang(lang: str) -> Lang:
    """Return ``lang`` if supported, else raise a :class:`LocalizedError` (a ``ValueError``): a learner's code hands
    one on too (``lang=query_lang(ask) + "-CN"``), and a Chinese check read the English line."""
    if lang not in LANGS:
        raise LocalizedError("lang.unsupported", langs=joined(LANGS, "en", "list"), got=_cut(str(lang)))
    return lang


def said(value: object, lang: Lang = "en") -> str:
    """``value`` in ``lang`` when it can say itself in either language (a SchemaError, a LocalizedError), an exception
    as :func:`py_reason` says it, else as text."""
    localized = getattr(value, "localized", None)
    if callable(localized):
        return localized(lang)
    if isinstance(value, BaseException):  # Python's own message, said plainly where it is a common one (py_reason)
        reason = py_reason(value)
        return reason.localized(lang) if isinstance(reason, Sentence) else str(reason)
    return str(value)


def said_marks(text: str, lang: Lang = "en") -> str:
    """``text`` with each mark redaction left (:data:`agentlab.redaction.MARKS`) said in ``lang``: a Chinese page read
    [address removed] among its Chinese. The text itself is left as it is, and English as written."""
    if lang == "en" or "[" not in text:
        return text
    from .redaction import MARKS
    return MARKS.sub(lambda m: t(f"redaction.{m[1]}", lang) if m[1] else t(f"redaction.{m[2]}", lang, last=m[3]), text)


def os_reason(exc: OSError) -> str:
    """Why a call to the operating system failed, as a field of a sentence: said in the reader's language where the
    catalogue knows its errno (``os.ENOENT``...), else the system's own words (a Chinese error read "无法读取（Input/output
    error）")."""
    import errno
    import socket
    if isinstance(exc, socket.gaierror):  # a host name that resolves to nothing: its errno is the resolver's, not one
        return Sentence("os.unknown_host")
    name = errno.errorcode.get(exc.errno) if isinstance(exc.errno, int) else None
    if name and f"os.{name}" in _catalog():
        return Sentence(f"os.{name}")
    return exc.strerror or type(exc).__name__


def py_reason(exc: BaseException) -> str:
    """What Python said ``exc`` was, as a field of a sentence: said plainly in the reader's language where its message
    is one a learner's code commonly raises (a keyword argument a function lacks, a key a dict lacks, a name not defined
    yet...), else Python's own words. A Chinese check read "TypeError（f() got an unexpected keyword argument 'x'）".
    An error that says itself in either language (a :class:`LocalizedError`) is handed back able to; every name taken
    from a message is cut to :data:`_FIELD_CHARS`, so the sentence stays a line; and an exception whose own text
    cannot be made (its ``__str__`` raises) is named by its type."""
    if callable(getattr(exc, "localized", None)):
        return _SaidBy(exc)
    if type(exc) is KeyError and len(exc.args) == 1:  # a subclass (a zone not found...) says its own words
        missing = exc.args[0]
        return Sentence("py.no_key", key=_cut(missing) if isinstance(missing, str) else _Literal(_cut(_text_of(missing, repr))))
    if isinstance(exc, json.JSONDecodeError):  # a stored file cut short, a reply that is not JSON
        return Sentence("py.not_json_at", line=exc.lineno, column=exc.colno)
    text = _text_of(exc, str)
    for kind, pattern, key in _PY_REASONS:
        found = pattern.fullmatch(text) if isinstance(exc, kind) else None
        if found:
            fields: dict[str, Any] = {k: _cut(v) for k, v in found.groupdict().items()}
            if "names" in fields:  # "'a', 'b' and 'c'": listed, and quoted, the reader's way
                fields["names"] = _Names(_cut(n) for n in re.findall(r"'([^']*)'", found["names"])[:6])
            if "type" in fields:
                fields["type"] = _TYPE_NAMES.get(fields["type"], fields["type"])
            if "takes" in fields:
                fields["takes"] = re.sub(r"from (\d+) to (\d+)", r"\1-\2", fields["takes"])
                key += "_one" if fields["takes"] == "1" else ""
            if "text" in fields:  # Python wrote it as a literal ('a\\nb'): the sentence quotes the text itself
                fields["text"] = _cut(_unquoted(found["text"]))
            return Sentence(key, **fields)
    return text


_FIELD_CHARS = 60  # a name or a value taken from Python's message, in a sentence: a learner's 5,000-character name cut


def _cut(text: str) -> str:
    return text if len(text) <= _FIELD_CHARS else text[:_FIELD_CHARS - 1] + "…"


def _text_of(value: object, how: Any) -> str:
    try:
        return how(value)
    except Exception:  # noqa: BLE001 - a __str__ that raises, a 5,000-digit key: named by its type, never a traceback
        return type(value).__name__


def _unquoted(literal: str) -> str:
    import ast
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return literal
    return value if isinstance(value, str) else literal


class _Literal:
    """A value as Python writes it (``3``, ``(1, 2)``), for ``{key!r}``: its repr is the text it was given."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return _Literal, (self.text,)


class _SaidBy(str):
    """An error that says itself (:class:`LocalizedError`), as text: English, and :meth:`localized` in ``lang``."""

    def __new__(cls, error: Any) -> _SaidBy:
        text = super().__new__(cls, _text_of(error, str))
        text.error = error
        return text

    error: Any

    def localized(self, lang: Lang = "en") -> str:
        return self.error.localized(lang)


# Python's messages (3.11-3.13) that learners' code raises most, each with its plain sentence in the catalogue
_PY_REASONS: tuple[tuple[type[BaseException], re.Pattern[str], str], ...] = tuple(
    (kind, re.compile(pattern, re.S), key) for kind, pattern, key in (
        (TypeError, r"(?P<fn>.+?\(\)) got an unexpected keyword argument '(?P<name>[^']*)'", "py.unexpected_keyword"),
        (TypeError, r"(?P<fn>.+?\(\)) missing \d+ required (?:positional|keyword-only) arguments?: (?P<names>.+)",
         "py.missing_arguments"),
        (TypeError, r"(?P<fn>.+?\(\)) takes (?P<takes>\d+|from \d+ to \d+) positional arguments? but (?P<given>\d+)"
                    r" (?:was|were) given", "py.too_many_positional"),
        (TypeError, r"'NoneType' object is not subscriptable", "py.none_indexed"),
        (TypeError, r"'(?P<type>[^']+)' object is not subscriptable", "py.not_indexable"),
        (TypeError, r"'(?P<type>[^']+)' object is not callable", "py.not_callable"),
        (TypeError, r"unsupported operand type\(s\) for (?P<op>\S+): '(?P<left>[^']+)' and '(?P<right>[^']+)'",
         "py.operand"),
        (TypeError, r"'(?P<op>[<>]=?)' not supported between instances of '(?P<left>[^']+)' and '(?P<right>[^']+)'",
         "py.compare"),
        (TypeError, r'can only concatenate (?P<kind>\w+) \(not "(?P<other>\w+)"\) to \w+', "py.concatenate"),
        (TypeError, r"'(?P<type>[^']+)' object is not iterable", "py.not_iterable"),
        (TypeError, r"object of type '(?P<type>[^']+)' has no len\(\)", "py.no_len"),
        (UnboundLocalError, r"cannot access local variable '(?P<name>[^']+)' where it is not associated with a value",
         "py.unbound"),
        (NameError, r"name '(?P<name>true|false|null)' is not defined(?:\. Did you mean: .*)?", "py.json_literal"),
        (NameError, r"name '(?P<name>[^']+)' is not defined(?:\. Did you mean: .*)?", "py.not_defined"),
        (AttributeError, r"module '(?P<module>[^']+)' has no attribute '(?P<name>[^']+)'(?:\. Did you mean: .*)?",
         "py.module_attribute"),
        (AttributeError, r"'(?P<type>[^']+)' object has no attribute '(?P<name>[^']+)'(?:\. Did you mean: .*)?",
         "py.no_attribute"),
        (IndexError, r"(?P<type>list|tuple|string|range object) index out of range", "py.index_range"),
        (ValueError, r"invalid literal for int\(\) with base 10: (?P<text>'.*'|\".*\")", "py.not_whole"),
        (ValueError, r"could not convert string to float: (?P<text>'.*'|\".*\")", "py.not_number"),
        (ZeroDivisionError, r".*", "py.zero_division"),
        (RecursionError, r"maximum recursion depth exceeded.*", "py.recursion"),
    ))


_TYPE_NAMES = {"string": "str", "range object": "range"}  # as the other messages name a type: by its Python name


class Sentence(str):
    """A sentence of the catalogue as its English text (a ``str``: it prints, compares and serialises as one) that also
    knows its key and fields, so :meth:`localized` (and :func:`said`) says it in another language."""

    key: str
    fields: dict[str, Any]

    def __new__(cls, key: str, /, **fields: Any) -> Sentence:
        # its English text says its fields as they say themselves in English (a JSON slip named, not the decoder's words)
        text = super().__new__(cls, t(key, "en", **{k: said(v, "en") if hasattr(v, "localized") else v
                                                  for k, v in fields.items()}))
        text.key, text.fields = key, fields
        return text

    def localized(self, lang: Lang = "en") -> str:
        # a field that can say itself in either language (a list of names, another sentence) does
        return t(self.key, lang, **{k: said(v, lang) if hasattr(v, "localized") else v for k, v in self.fields.items()})

    def __reduce__(self) -> tuple[Any, ...]:
        # copied or pickled as its key and fields: a str subclass is otherwise rebuilt from its text alone
        return _sentence, (self.key, self.fields)


class Listed(str):
    """Names in a list, for a sentence said later in either language: as text (English) joined with ", ", and with
    :meth:`localized` (and :func:`said`) joined as ``lang`` lists (、 in Chinese). An error raised before its reader's
    language is known lists its names with this (a Chinese reader read "应为以下之一：aftersales, expense")."""

    items: tuple[str, ...]

    def __new__(cls, items: Iterable[object]) -> Listed:
        parts = tuple(str(item) for item in items)
        text = super().__new__(cls, ", ".join(parts))
        text.items = parts
        return text

    def localized(self, lang: Lang = "en") -> str:
        return joined(self.items, lang, "list")

    def __reduce__(self) -> tuple[Any, ...]:
        return Listed, (self.items,)  # as its names: rebuilt from its text, a copy listed its letters


class _Names(Listed):
    """Names a Python message quoted, each quoted the way its reader's language quotes a name (“a”、“b” in Chinese)."""

    def __new__(cls, items: Iterable[object]) -> _Names:
        parts = tuple(str(item) for item in items)
        text = str.__new__(cls, joined((f"'{n}'" for n in parts), "en", "list"))  # as text: quoted as Python quotes
        text.items = parts
        return text

    def localized(self, lang: Lang = "en") -> str:
        return joined((f"“{n}”" if lang == "zh" else f"'{n}'" for n in self.items), lang, "list")

    def __reduce__(self) -> tuple[Any, ...]:
        return _Names, (self.items,)


def _sentence(key: str, fields: dict[str, Any]) -> Sentence:
    return Sentence(key, **fields)


class LocalizedError(ValueError):
    """A bad input whose sentence lives in the catalogue. ``str()`` is the English line;
    :meth:`localized` gives either language (a field called ``what`` is itself a catalogue key)."""

    def __init__(self, key: str, /, **fields: object):  # a field may itself be called 'key'
        self.key, self.fields = key, fields
        super().__init__(self.localized("en"))

    def localized(self, lang: Lang = "en") -> str:
        # a field that can say itself in either language (a SchemaError) does; an OSError is said by its errno
        fields = {k: t(str(v), lang) if k == "what" else said(v, lang) if hasattr(v, "localized")
                  else said(os_reason(v), lang) if isinstance(v, OSError) else v for k, v in self.fields.items()}
        return t(self.key, lang, **fields)

"""How a Chinese reader's text is punctuated, checked on what they are shown (a page, a notebook's output, a command's).

A label and its value are joined by a full-width colon in Chinese (退款笔数：1): code that joined them with ``": "``
printed 退款笔数: 1 in Chinese for every page, report and notebook line built that way. The check looks at text as a
reader gets it (tags removed, entities read), so it finds the class wherever the joining happened."""
from __future__ import annotations

import html
import re

_HAN = "\u3400-\u4dbf\u4e00-\u9fff"
#: an ASCII colon written as Chinese punctuation: after a Chinese character (or a closing full-width mark), or before
#: one with a space between. A colon that is part of a URL or an address (http://, 127.0.0.1:端口) has neither shape.
ASCII_COLON = re.compile(rf"[{_HAN}）」》”][ \t]*:(?!//)|:[ \t]+[{_HAN}（「《“]")
#: an ASCII comma or semicolon beside Chinese (完成, 等了 500 ms; 3 次错误调用, 3 轮次): Chinese takes ， 、 or ；.
#: A comma between digits (1,200) or inside a list of codes (0.5b, 1.5b) has no Chinese beside it.
ASCII_COMMA = re.compile(rf"[{_HAN}）」》”][ \t]*[,;](?!\d)|[,;][ \t]*[{_HAN}（「《“]")
#: ASCII brackets in Chinese text (已退款 (3 轮次), 调用次数 (calls)): Chinese takes （）. Either they hold Chinese, or
#: they follow it. A call in code (connect("你的名字")) and a link's address (](#工作坊)) are neither: their bracket
#: follows a letter, a digit, a dot or a closing square bracket.
ASCII_PAREN = re.compile(rf"(?<![A-Za-z0-9_.\]])\((?=[^()\n]*[{_HAN}])[^()\n]*\)|[{_HAN}，。：；、）」》”][ \t]*\([^()\n]*\)")
#: a space after a full-width mark, before Chinese (…对象。 请求体…: two sentences joined the English way)
SPACED = re.compile(rf"[。！？；，、：][ \t]+[{_HAN}（「《“]")


def readable(page: str) -> str:
    """An HTML page's text as a reader sees it: tags gone, entities read (what is not HTML comes back unchanged), and
    what a pointer or a screen reader shows (``title``, ``aria-label``, ``alt``) on lines of its own after it."""
    shown = [m.group(2) for m in re.finditer(r"""\b(?:title|aria-label|alt)=(["'])(.*?)\1""", page, re.S)]
    return html.unescape("\n".join([re.sub(r"<[^>]+>", "", page), *shown]))


def ascii_colons(text: str, *, page: bool = False) -> list[str]:
    """The places in ``text`` (``page``: HTML, read as above) where Chinese is punctuated with an ASCII colon, each
    with the characters around it."""
    return _around(ASCII_COLON, readable(text) if page else text)


def ascii_commas(text: str, *, page: bool = False) -> list[str]:
    """The same for an ASCII comma or semicolon."""
    return _around(ASCII_COMMA, readable(text) if page else text)


def ascii_parens(text: str, *, page: bool = False) -> list[str]:
    """The same for ASCII brackets."""
    return _around(ASCII_PAREN, readable(text) if page else text)


def english_punctuation(text: str, *, page: bool = False) -> list[str]:
    """Every ASCII colon, comma, semicolon or bracket a Chinese reader meets in ``text``, and every space after a
    full-width mark (sentences joined the English way)."""
    return (ascii_colons(text, page=page) + ascii_commas(text, page=page) + ascii_parens(text, page=page)
            + _around(SPACED, readable(text) if page else text))


def _around(pattern: re.Pattern[str], text: str) -> list[str]:
    return [text[max(m.start() - 12, 0):m.end() + 12].replace("\n", " ") for m in pattern.finditer(text)]


def in_chinese_lines(text: str) -> list[str]:
    """Stricter, for a command's own report: in each line that holds Chinese, an ASCII colon, comma or semicolon
    followed by a space anywhere outside quotes, brackets and inline code ("400: 1, 401: 1" between two Chinese
    clauses, which the marks' neighbours alone do not show)."""
    found = []
    for line in text.splitlines():
        if not re.search(f"[{_HAN}]", line):
            continue
        bare = re.sub(r"“[^”]*”|\"[^\"]*\"|'[^']*'|`[^`]*`|\[[^\]]*\]|\{[^}]*\}|https?://\S+", "", line)
        found += [bare[max(m.start() - 12, 0):m.end() + 12] for m in re.finditer(r"[,;:] ", bare)]
    return found


#: a table cell that is nothing but names joined with ", " (idempotency, all_calls): a list a Chinese table gives with 、
LISTED_THE_ENGLISH_WAY = re.compile(r"\s*[\w.:/-]+(?:, [\w.:/-]+)+\s*")


def untranslated_items(page: str, glossary: dict[str, str]) -> list[str]:
    """The cells of a Chinese page's tables that list names (with 、) one of which is a label the glossary says in
    Chinese but the cell gives in English: a list joined before its names were said (idempotency、all_calls)."""
    cells = (html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
             for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", page, re.S))
    return [c for c in cells if _NAMES_LISTED.fullmatch(c) and any(glossary.get(p, p) != p for p in c.split("、"))]


#: a cell that is nothing but names listed with 、 (a sentence that holds a list is prose, not this)
_NAMES_LISTED = re.compile(r"[^\s、，。：；（）:;,()]+(?:、[^\s、，。：；（）:;,()]+)+")


def english_list_cells(page: str) -> list[str]:
    """The cells of an HTML page's tables that list names the English way (for a page in Chinese)."""
    cells = (html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", page, re.S))
    return [c.strip() for c in cells if LISTED_THE_ENGLISH_WAY.fullmatch(c)]

"""ECMA-262 patterns, as JSON Schema means them, translated for Python's ``re``.

Shared by the compiled path (compiler.py, checks.py) and the delegated one (delegate.py), so a pattern matches
the same strings whichever path checks it.
"""
from __future__ import annotations

import re

__all__ = ["ecma_to_python"]


# ECMA-262's classes are ASCII (\d \w \b) or a fixed list (\s), Python's are Unicode: spelt out as code point ranges
_DIGIT_RANGES = ((0x30, 0x39),)
_WORD_RANGES = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE_RANGES = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
                 (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
_ESCAPE_RANGES = {"d": _DIGIT_RANGES, "w": _WORD_RANGES, "s": _SPACE_RANGES}
_UNICODE_CLASSES = {"L": r"[^\W\d_]", "Letter": r"[^\W\d_]", "N": r"\d", "Nd": r"\d", "Number": r"\d",
                    "digit": r"\d"}  # Unicode on purpose: \p{...} is how ECMA asks for it
_ASCII_WORD = "[0-9A-Z_a-z]"
_WORD_EDGE = f"(?:(?<={_ASCII_WORD})(?!{_ASCII_WORD})|(?<!{_ASCII_WORD})(?={_ASCII_WORD}))"
_NOT_WORD_EDGE = f"(?:(?<={_ASCII_WORD})(?={_ASCII_WORD})|(?<!{_ASCII_WORD})(?!{_ASCII_WORD}))"
_ECMA_ESCAPE = re.compile(r"\\(?:([pP])\{(\w+)\}|c([A-Za-z])|u\{([0-9A-Fa-f]{1,6})\}|k<(\w+)>|(.))", re.S)


def _class_body(ranges: tuple[tuple[int, int], ...], negate: bool) -> str:
    """The inside of a character class holding ``ranges`` (or every other code point)."""
    if negate:
        flipped, lo = [], 0
        for a, b in ranges:
            if a > lo:
                flipped.append((lo, a - 1))
            lo = b + 1
        flipped.append((lo, 0x10FFFF))
        ranges = tuple(flipped)
    return "".join(_code(a) if a == b else f"{_code(a)}-{_code(b)}" for a, b in ranges)


def _code(c: int) -> str:
    return f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def ecma_to_python(pattern: str) -> str:
    """An ECMA-262 pattern (JSON Schema's dialect) as a Python one with the same meaning.

    Python's ``\\d``, ``\\w`` and ``\\b`` are Unicode where ECMA's are ASCII ("２０２６" is no number), its
    ``\\s`` is a different list, its ``.`` matches a carriage return and its ``$`` also matches before a
    final newline ("E1234\\n"): each is spelt out. ``\\cX``, ``\\u{...}``, ``\\p{Letter}``, ``(?<name>...)``
    and ``\\k<name>`` are translated; an unknown ``\\p{...}`` stays and fails to compile."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            m = _ECMA_ESCAPE.match(pattern, i)
            if m is None:  # a lone backslash at the end: let re say so
                out.append(ch)
                i += 1
                continue
            prop, name, ctrl, code, group, other = m.groups()
            i = m.end()
            if prop and name in _UNICODE_CLASSES and not in_class:
                cls = _UNICODE_CLASSES[name]
                out.append(cls if prop == "p" else ("[" + cls[2:] if cls.startswith("[^") else cls.upper()))
            elif ctrl:
                out.append(f"\\x{ord(ctrl) % 32:02x}")
            elif code:
                out.append(f"\\U{int(code, 16):08x}")
            elif group and not in_class:
                out.append(f"(?P={group})")
            elif other and other.lower() in _ESCAPE_RANGES:
                body = _class_body(_ESCAPE_RANGES[other.lower()], negate=other.isupper())
                out.append(body if in_class else f"[{body}]")
            elif other == "b":
                out.append("\\x08" if in_class else _WORD_EDGE)  # [\b] is a backspace in both dialects
            elif other == "B" and not in_class:
                out.append(_NOT_WORD_EDGE)
            elif other == "/":
                out.append("/")  # ECMA writes a slash escaped (from /.../ literals); Python needs no escape
            else:
                out.append(m.group(0))
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
            if pattern.startswith("^", i + 1):  # a negated class: "]" right after "[^" is literal in neither
                out.append("^")
                i += 1
        elif ch == "$":
            out.append(r"\Z")  # the end of the text, not "before a final newline"
        elif ch == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")  # ECMA's dot stops at every line terminator, Python's at \n only
        elif ch == "(" and pattern.startswith("?<", i + 1) and pattern[i + 3: i + 4] not in ("=", "!"):
            out.append("(?P")  # a named group: (?<name>...) in ECMA, (?P<name>...) in Python
            i += 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)

"""Patterns shaped for catastrophic backtracking, refused where a schema is loaded.

Python's ``re`` has no timeout: a pattern such as ``^(a+)+$``, once loaded, lets whoever writes the
value stall every check of it. :func:`slow_pattern` reads a pattern's text cheaply (no regex is run)
and :func:`refuse_slow_patterns` applies it to every ``pattern`` and ``patternProperties`` name of a
schema, in every dialect. The linter (AL011) uses the same reading.
"""
from __future__ import annotations

import itertools
import re
from typing import Any

from .base import Pointer, SchemaError, _children, _short_repr, _where
from .ecma import ecma_to_python

__all__ = ["refuse_slow_patterns", "slow_pattern"]

_QUANTIFIER = re.compile(r"[*+?]|\{(\d*)(,?)(\d*)\}")
_GROUP_OPENER = re.compile(r"\?(?::|=|!|<=|<!|<[A-Za-z_]\w*>|P<[A-Za-z_]\w*>)?")


class _Group:
    """One open group while :func:`slow_pattern` reads: what it holds so far."""

    def __init__(self, begin: int):
        self.repeats = False  # holds a repetition of variable length
        self.alts: list[str] = []  # its alternatives as written, the current one not yet
        self.begin = begin  # where the current alternative began
        self.atoms: list[list[Any]] = []  # [text, repeated] for each character it can match, nested ones too


def slow_pattern(pattern: str) -> bool:
    """Whether ``pattern`` has the shape of catastrophic backtracking, by a cheap reading of its text.

    Two shapes, the classic ones: a group repeated without bound that holds a repetition of variable
    length itself (``(a+)+``, ``(\\w*x)*``, ``(a{1,3})+``), unless a character that nothing else in the
    group can match begins or ends it (``(-[a-z]+)*``, ``(\\d{1,3}\\.)+`` are fine: each turn has one way
    to end); or whose alternatives overlap, one being the same as another or its beginning (``(a|aa)+``).
    A heuristic: it can miss a slow pattern and flag a harmless one; it never runs the pattern.

    The one reading both uses share: :func:`compile_schema` refuses such a pattern when a schema is loaded
    (:func:`refuse_slow_patterns`), and the linter names it (AL011) in a file not yet loaded.
    """
    stack = [_Group(0)]
    last: _Group | list[Any] | None = None  # the atom just read: a closed group, or [text, repeated]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        q = _QUANTIFIER.match(pattern, i)
        if q is not None and (ch != "{" or q.group(1) or q.group(3)):
            if last is None:
                i = q.end()
                continue
            unbounded = ch in "*+" or (ch == "{" and bool(q.group(2)) and not q.group(3))
            variable = ch in "*+?" or (ch == "{" and bool(q.group(2)) and q.group(1) != q.group(3))
            if isinstance(last, _Group):
                if unbounded and last.repeats and not _delimited(last.atoms):
                    return True  # a repetition inside a repetition
                if unbounded and _overlap(last.alts):
                    return True  # alternatives that overlap, repeated
                if variable or last.repeats:
                    stack[-1].repeats = True
                for atom in last.atoms:
                    atom[1] = atom[1] or variable
            else:
                last[1] = True
                stack[-1].repeats = stack[-1].repeats or variable
            i = q.end() + pattern.startswith("?", q.end())  # a lazy quantifier is as slow
            last = None
            continue
        if ch == "(":
            m = _GROUP_OPENER.match(pattern, i + 1)
            i = m.end() if m else i + 1
            stack.append(_Group(i))
            last = None
            continue
        if ch == ")" and len(stack) > 1:
            group = stack.pop()
            group.alts.append(pattern[group.begin:i])
            stack[-1].atoms += group.atoms
            last, i = group, i + 1
            continue
        if ch == "|":
            stack[-1].alts.append(pattern[stack[-1].begin:i])
            stack[-1].begin = i + 1
            last, i = None, i + 1
            continue
        if ch == "\\":
            j = i + 2
        elif ch == "[":
            j = i + 1 + pattern.startswith("^", i + 1)
            j += pattern.startswith("]", j)  # a "]" first in a class is literal
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            j += 1
        else:
            j = i + 1
        if ch in "^$":
            last = None
        else:
            last = [pattern[i:j], False]
            stack[-1].atoms.append(last)
        i = j
    return False


def _overlap(alts: list[str]) -> bool:
    """Whether one alternative is the same as another or its beginning. Sorted, such a pair has the shorter one
    right before a string it begins (everything between them begins with it too): a pass over neighbours, not
    over every pair, since this runs on every schema that is loaded and a pattern may have thousands of them."""
    ordered = sorted(a for a in alts if a)
    return any(b.startswith(a) for a, b in itertools.pairwise(ordered))


def _delimited(atoms: list[list[Any]]) -> bool:
    """Whether the group's first or last atom is one fixed character that none of its other atoms matches."""
    for edge in (atoms[:1], atoms[-1:]):
        if not edge or edge[0][1]:
            continue
        text = edge[0][0]
        char = text[1] if len(text) == 2 and text[0] == "\\" and not text[1].isalnum() else text
        if len(char) != 1 or text == "." or text.startswith("["):  # the dot and a class are no one character
            continue
        if all(not _matches(a[0], char) for a in atoms if a is not edge[0]):
            return True
    return False


def _matches(atom: str, char: str) -> bool:
    try:
        return re.fullmatch(ecma_to_python(atom), char) is not None
    except re.error:
        return True  # cannot tell: assume it does


def refuse_slow_patterns(schema: Any) -> None:
    """Raise :class:`SchemaError` for the first ``pattern`` or ``patternProperties`` name in ``schema`` that
    :func:`slow_pattern` reads as catastrophic. Python's ``re`` has no timeout: such a pattern, once loaded,
    lets whoever writes the value (a model, or text injected into its context) stall every check of it, so it
    is refused where the schema is loaded, in every dialect, as a pattern that does not compile is."""
    todo: list[tuple[Any, Pointer]] = [(schema, ())]
    while todo:
        node, at = todo.pop()
        if not isinstance(node, dict):
            continue
        patterns = [(node["pattern"], (*at, "pattern"))] if isinstance(node.get("pattern"), str) else []
        if isinstance(node.get("patternProperties"), dict):
            patterns += [(p, (*at, "patternProperties", p)) for p in node["patternProperties"] if isinstance(p, str)]
        for p, where in patterns:
            if slow_pattern(p):
                raise SchemaError("schema.slow_pattern", pattern=_short_repr(p), where=_where(where))
        for k, name, sub in _children(node):
            todo.append((sub, at + (k,) + (() if name is None else (str(name),))))

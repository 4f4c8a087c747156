"""A learner's own Python error, said plainly under Python's traceback, in the notebook's language.

A Chinese typist's most likely slip is a full-width mark in code (``，`` ``：`` ``“``): Python then says only
``SyntaxError: invalid character '，' (U+FF0C)``, in English. And an error raised in the learner's own line
(``GuardConfig(stepbudget=10)``) is a traceback with an English last line. In a kernel, importing any workbook module
adds one line under each (:func:`install`): the mark and the half-width one to type instead, the other syntax slips
of a first Python (a colon, an indent, a bracket, a quote, a comma), or what Python said, in the words of
:func:`agentlab.i18n.py_reason`. The language is the notebook's ``LANG``; in English, Python's own line already says
it, so only the full-width mark gets a line. Python's traceback is left as it is: the line is added.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from ..i18n import Lang, Sentence, joined, py_reason, said, t
from ..jsonutil import FULL_WIDTH

__all__ = ["FULL_WIDTH", "install", "plain_line"]

#: marks said by a name, not shown: a full-width space is invisible, and a full stop is deleted, not replaced
_SAID = {"　": "plain.mark.space", "。": "plain.mark.stop"}

_INVALID = re.compile(r"invalid (?:non-printable )?character (?:'.' )?\(?U\+(?P<code>[0-9A-F]+)\)?")


def plain_line(exc: BaseException, lang: Lang, *, compiling: bool = True) -> str | None:
    """The line said under ``exc``'s traceback, or None when Python's own says enough (English, or a message the
    catalogue does not know). ``compiling``: a SyntaxError of the cell itself (one raised by code the cell runs, an
    ``eval`` of a text, is about that text: its line is not the cell's, and its marks may sit inside quotes there)."""
    if isinstance(exc, SyntaxError):
        found = _INVALID.search(str(exc.msg or "")) if compiling else None
        # Python names the mark itself, or not: after a digit, 3.11.2 says "invalid decimal literal" of "1，2", where
        # 3.11.7 says "invalid character '，'": the line's own first full-width mark outside a quoted text, then
        named = chr(int(found["code"], 16)) if found else ""
        marks = _marks(exc.text) if compiling else []
        if named in FULL_WIDTH and named not in marks:
            marks.insert(0, named)
        if marks:  # every one of the line's marks at once: one fixed a run, and three runs for print（f（a，b））
            pairs = [t(_SAID[m], lang) if m in _SAID else t("plain.mark.pair", lang, mark=m, ascii=FULL_WIDTH[m])
                     for m in marks]
            return t("plain.full_width", lang, marks=joined(pairs, lang, "list"), line=exc.lineno or "?")
        if lang == "en" or not compiling:  # Python's own line says it in English; an eval's text is not the cell
            return None
        # the other slips of a learner's first Python (a colon, an indent, a bracket, a quote), said in their language
        if str(exc.msg or "") == "incomplete input":  # the slip on a cell's last line: IPython names none
            key, fields = _incomplete(exc.text or "")
            return t(key, lang, line=exc.lineno or "?", **fields)
        for pattern, key in _SYNTAX:
            found = pattern.match(str(exc.msg or ""))
            if found:
                return t(key, lang, line=exc.lineno or "?", **found.groupdict())
        return None
    if lang == "en":
        return None
    if callable(getattr(exc, "localized", None)):  # agentlab's own error says itself in Chinese
        return t("plain.python_said", lang, error=type(exc).__name__, reason=said(exc, lang).rstrip("。."))
    reason = py_reason(exc)
    if not isinstance(reason, Sentence):
        return None
    return t("plain.python_said", lang, error=type(exc).__name__, reason=said(reason, lang).rstrip("。."))


_QUOTED = re.compile(r"""(["'])(?:\\.|(?!\1).)*\1""")

def _incomplete(line: str) -> tuple[str, dict[str, str]]:
    """Which slip left a cell's last line unfinished ("incomplete input"): a triple quote never closed, a line that
    opens a block with nothing under it, a bracket never closed (the last one opened), or none of these."""
    bare = _QUOTED.sub("", line)
    if line.count("\'\'\'") % 2 or line.count('"""') % 2:
        return "plain.syntax.unterminated", {}
    if bare.rstrip().endswith(":"):
        return "plain.syntax.block_empty", {}
    opened: list[str] = []
    for ch in bare:
        if ch in "([{":
            opened.append(ch)
        elif ch in ")]}" and opened:
            opened.pop()
    return ("plain.syntax.never_closed", {"mark": opened[-1]}) if opened else ("plain.syntax.incomplete", {})


#: Python's words for the syntax slips of a learner's first lines -> the catalogue's sentence for each
_SYNTAX = ((re.compile(r"expected ':'"), "plain.syntax.colon"),
           (re.compile(r"expected an indented block"), "plain.syntax.indent_needed"),
           (re.compile(r"unexpected indent"), "plain.syntax.indent_extra"),
           (re.compile(r"unindent does not match"), "plain.syntax.indent_mismatch"),
           (re.compile(r"'(?P<mark>[(\[{])' was never closed"), "plain.syntax.never_closed"),
           (re.compile(r"unmatched '(?P<mark>[)\]}])'"), "plain.syntax.unmatched"),
           (re.compile(r"closing parenthesis '(?P<mark>[)\]}])' does not match"), "plain.syntax.unmatched"),
           (re.compile(r"unterminated (?:triple-quoted )?string literal"), "plain.syntax.unterminated"),
           (re.compile(r"invalid syntax\. Perhaps you forgot a comma"), "plain.syntax.comma"),
           (re.compile(r"invalid syntax"), "plain.syntax.invalid"))


_FULL_QUOTED = re.compile(r"([“‘「『])[^“”‘’「」『』\n]*([”’」』])")


def _marks(line: str | None) -> list[str]:
    """The full-width marks of a line of code outside its quoted texts (half- or full-width quotes) and its comment, each once, in the order they
    come; a full-width digit inside a name (``x２``, which Python reads as ``x2``) is no slip."""
    # a text between full-width quotes is a text too, its quotes the slip: the Chinese words inside them (their ，
    # and 。) are the learner's message, and told to make them half-width, a learner mangled it
    bare = _FULL_QUOTED.sub(r"\1\2", _QUOTED.sub("", line or "")).split("#", 1)[0]
    return list(dict.fromkeys(ch for i, ch in enumerate(bare) if ch in FULL_WIDTH
                              and not (ch.isdigit() and i and (bare[i - 1].isalnum() or bare[i - 1] == "_"))))


def _lang(shell: Any) -> Lang:
    lang = shell.user_ns.get("LANG") if hasattr(shell, "user_ns") else None
    if lang is None:  # no LANG yet (a kernel restarted, a cell run before the first): the notebook's folder says it
        lang = "zh" if "zh" in Path(os.environ.get("JPY_SESSION_NAME") or os.getcwd()).parts else "en"
    return "zh" if lang == "zh" else "en"


def install(shell: Any = None) -> bool:
    """Add the plain line under each error of the running kernel's cells (once; outside a kernel, nothing).
    Returns whether it is in place.

    It listens to the cell having run (IPython's ``post_run_cell`` event), after Python's traceback is shown as it
    always is: nothing of IPython's own display is replaced (a custom exception handler lost the traceback's frames,
    and unregistered itself for good when an exception's ``__str__`` raised)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    if getattr(shell, "_agentlab_plain_errors", False):
        return True

    def after(result: Any) -> None:
        try:
            exc = getattr(result, "error_before_exec", None)
            compiling = exc is not None
            exc = exc if compiling else getattr(result, "error_in_exec", None)
            if not isinstance(exc, Exception):  # KeyboardInterrupt (a stop, a check's time limit), SystemExit
                return
            line = plain_line(exc, _lang(shell), compiling=compiling)
            if line:
                print(line, file=sys.stderr)
        except Exception:  # noqa: BLE001 - a line added to help never becomes an error of its own
            return

    shell.events.register("post_run_cell", after)
    shell._agentlab_plain_errors = True
    return True

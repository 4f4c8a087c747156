"""A learner's own Python error, said plainly under Python's traceback, in the notebook's language.

A Chinese typist's most likely slip is a full-width mark in code (``，`` ``：`` ``“``): Python then says only
``SyntaxError: invalid character '，' (U+FF0C)``, in English. And an error raised in the learner's own line
(``GuardConfig(stepbudget=10)``) is a traceback with an English last line. In a kernel, importing any workbook module
adds one line under each (:func:`install`): the mark and the half-width one to type instead, or what Python said, in
the words of :func:`agentlab.i18n.py_reason`. The language is the notebook's ``LANG``; in English, Python's own line
already says it, so only the full-width mark gets a line. Python's traceback is left as it is: the line is added.
"""
from __future__ import annotations

import re
import sys
from typing import Any

from ..i18n import Lang, Sentence, py_reason, said, t

__all__ = ["FULL_WIDTH", "install", "plain_line"]

#: full-width marks a Chinese keyboard types where code wants the half-width one
FULL_WIDTH = {"，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "“": '"', "”": '"', "‘": "'", "’": "'",
              "。": ".", "！": "!", "？": "?", "【": "[", "】": "]", "、": ",", "＝": "=", "《": "<", "》": ">",
              "｛": "{", "｝": "}", "　": " "}

_INVALID = re.compile(r"invalid (?:non-printable )?character (?:'.' )?\(?U\+(?P<code>[0-9A-F]+)\)?")


def plain_line(exc: BaseException, lang: Lang) -> str | None:
    """The line said under ``exc``'s traceback, or None when Python's own says enough (English, or a message the
    catalogue does not know)."""
    if isinstance(exc, SyntaxError):
        found = _INVALID.search(str(exc.msg or ""))
        mark = chr(int(found["code"], 16)) if found else ""
        if mark in FULL_WIDTH:
            return t("plain.full_width", lang, mark=mark, ascii=FULL_WIDTH[mark], line=exc.lineno or "?")
        return None
    if lang == "en":
        return None
    reason = py_reason(exc)
    if not isinstance(reason, Sentence):
        return None
    return t("plain.python_said", lang, error=type(exc).__name__, reason=said(reason, lang))


def _lang(shell: Any) -> Lang:
    lang = shell.user_ns.get("LANG", "en") if hasattr(shell, "user_ns") else "en"
    return "zh" if lang == "zh" else "en"


def install(shell: Any = None) -> bool:
    """Add the plain line under each error of the running kernel's cells (once; outside a kernel, nothing).
    Returns whether it is in place."""
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
    shown_syntax = shell.showsyntaxerror

    def showsyntaxerror(*args: Any, **kwargs: Any) -> Any:
        out = shown_syntax(*args, **kwargs)
        _say(sys.exc_info()[1] or getattr(sys, "last_value", None), shell)
        return out

    def on_error(self: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> Any:
        shown = self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        _say(value, self)
        return shown

    shell.showsyntaxerror = showsyntaxerror
    shell.set_custom_exc((Exception,), on_error)
    shell._agentlab_plain_errors = True
    return True


def _say(exc: BaseException | None, shell: Any) -> None:
    if exc is None or getattr(shell, "_agentlab_plain_said", None) is exc:  # IPython may show one error twice
        return
    shell._agentlab_plain_said = exc
    try:
        line = plain_line(exc, _lang(shell))
    except Exception:  # noqa: BLE001 - a line added to help never becomes an error of its own
        return
    if line:
        print(line, file=sys.stderr)

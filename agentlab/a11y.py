"""Accessibility, in one place: the colour-blind-safe palette every plot draws with (Okabe-Ito), the symbol each
status carries besides its colour, and the text equivalent each plot shows beside its figure.

A figure is a picture of numbers: a reader who cannot see it (a screen reader), or cannot tell its colours apart,
gets the same numbers as a :class:`TextEquivalent`, a sentence and a table made from the same data as the figure,
in the reader's language. The plot functions of :mod:`agentlab.workbook.plots` (and the probe report's) attach
one to the axes they draw (:func:`text_equivalent` reads it back) and, in a notebook, display it with the figure.
No import of matplotlib here.
"""
from __future__ import annotations

import contextlib
import functools
import html
import numbers
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .i18n import Lang, colon, joined, t

__all__ = ["NEUTRALS", "OKABE_ITO", "PALETTE", "TextEquivalent", "described", "fmt_number", "ink", "quiet", "symbol",
           "text_equivalent"]

#: Okabe & Ito (2008), "Color Universal Design": eight colours told apart with every common colour-vision deficiency
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9", "bluish_green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "reddish_purple": "#CC79A7"}
#: greys for what is neither good nor bad (not applicable, not run): no hue to misread
NEUTRALS = {"grey": "#999999", "light_grey": "#DDDDDD", "white": "#F7F7F7"}
#: the order a plot's series take when nothing else gives them a colour (matplotlib's default cycle is replaced)
PALETTE = [OKABE_ITO[k] for k in ("blue", "orange", "bluish_green", "vermillion", "reddish_purple", "sky_blue",
                                  "yellow", "black")]

#: a status is never told by colour alone: ✓ it worked, ⚠ it stopped safely (or a person must look), ✗ it went wrong
_GOOD = ("done", "done_after_self_correction", "correct", "correct hand-over", "ok", "repaired", "caught", "harmless")
_SAFE = ("escalated", "budget_exhausted", "budget exhausted", "wrong data, stopped", "blocked", "no_call",
         "not_repaired", "invalid")
_BAD = ("failed", "done, nothing done", "done, wrong data", "leaked", "crashed", "error", "not_caught", "tool_failed")


def symbol(status: str) -> str:
    """✓, ⚠ or ✗ for a final status, a graded outcome, a trace cell's outcome or a probe verdict; "" for the rest."""
    return "✓" if status in _GOOD else "⚠" if status in _SAFE else "✗" if status in _BAD else ""


def ink(background: str) -> str:
    """Black or white, whichever reads better on ``background`` (white text on yellow reads as an empty cell)."""
    r, g, b = (int(background.lstrip("#")[k:k + 2], 16) / 255 for k in (0, 2, 4))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "#FFFFFF"


def fmt_number(v: Any) -> str:
    """A number as a figure's text says it: a whole number whole, any other to two decimals."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return str(v)
    if float(v).is_integer():
        return str(int(float(v)))
    return f"{float(v):.2f}"


@dataclass(frozen=True)
class TextEquivalent:
    """What a figure shows, in words: a sentence and a table of its numbers, in ``lang``."""
    lang: Lang
    summary: str
    header: Sequence[str] = ()
    rows: Sequence[Sequence[str]] = ()
    notes: Sequence[str] = field(default_factory=tuple)

    def lines(self) -> list[str]:
        """The sentence, then a line per row of the table ("row: column value, ..."), then the notes."""
        out = [self.summary]
        for row in self.rows:
            cells = [f"{h} {c}" if h else c for h, c in zip(self.header[1:], row[1:], strict=False)]
            out.append(f"- {row[0]}{colon(self.lang)}" + joined(cells, self.lang, "list"))
        return [*out, *self.notes]

    def __str__(self) -> str:
        return joined((t("a11y.in_words", self.lang), "\n".join(self.lines())), self.lang, "sentence")

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<th scope='col' style='text-align:left;padding:2px 8px'>{e(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join((f"<th scope='row' style='text-align:left;padding:2px 8px'>{e(c)}</th>" if i == 0
                                          else f"<td style='text-align:left;padding:2px 8px'>{e(c)}</td>")
                                         for i, c in enumerate(row)) + "</tr>" for row in self.rows)
        table = (f"<table style='border-collapse:collapse;font-size:14px'><thead><tr>{head}</tr></thead>"
                 f"<tbody>{body}</tbody></table>") if self.rows else ""
        notes = "".join(f"<p style='margin:2px 0'>{e(n)}</p>" for n in self.notes)
        return ("<div class='agentlab-text-equivalent' role='note' style='font-size:14px'>"
                "<p style='margin:2px 0'>"
                + joined((f"<b>{e(t('a11y.in_words', self.lang))}</b>", e(self.summary)), self.lang, "sentence") + "</p>"
                f"{table}{notes}</div>")

    def combine(self, *others: TextEquivalent) -> TextEquivalent:
        """This one's sentence, then each other's, their tables as notes: one text for a figure of several panels."""
        return TextEquivalent(self.lang, self.summary, self.header, self.rows,
                              (*self.notes, *[line for o in others for line in o.lines()]))


def attach(obj: Any, te: TextEquivalent) -> Any:
    """``te`` becomes the text equivalent of ``obj`` (an axes, a figure); ``obj`` is returned."""
    obj._agentlab_text_equivalent = te
    return obj


def text_equivalent(obj: Any) -> TextEquivalent | None:
    """The text equivalent a plot function gave ``obj`` (its axes, its figure, or what it returned)."""
    if isinstance(obj, tuple):
        obj = obj[-1]
    return getattr(obj, "_agentlab_text_equivalent", None)


_state = {"depth": 0, "quiet": 0}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Plots drawn inside show no text of their own (a widget shows the text beside its own image)."""
    _state["quiet"] += 1
    try:
        yield
    finally:
        _state["quiet"] -= 1


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def described(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A plot function whose text equivalent is displayed in a notebook, beside the figure it draws: once, by the
    outermost plot function (a figure of several panels shows its own, made of theirs)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _state["depth"] += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            _state["depth"] -= 1
        te = text_equivalent(result)
        if te is not None and _state["depth"] == 0 and not _state["quiet"] and _in_kernel():
            from IPython.display import display
            display(te)
        return result
    return wrapper

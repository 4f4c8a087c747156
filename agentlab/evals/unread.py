"""The lines a log reader reads past (:mod:`agentlab.evals.logs`, :mod:`agentlab.evals.otel`): one record both
readers keep, so each line's refusal is the same three lines whatever the format."""
from __future__ import annotations

from ..i18n import LocalizedError

__all__ = ["Unread"]


class Unread:
    """The lines a reader read past: how many, and the first :data:`SHOWN` of them as the errors they gave.

    A line that cannot be read before any line of the file was read well still stops the reading (the file is in
    another format, or no log at all: its first line says which); after one, it is counted here and the reading
    goes on, so that one line cut short by a crash does not cost the review of a million good ones. ``strict``:
    every such line stops the reading, as the readers' own callers have it. A line read with a part of it that
    could not be (:meth:`partly`) is counted apart: its rows are in the figures."""

    SHOWN = 5

    __slots__ = ("count", "encoding", "first", "first_partial", "partial", "started", "strict")

    def __init__(self, *, strict: bool = False) -> None:
        self.count = 0
        self.partial = 0  # lines read, a part of which could not be (an attribute cut short): said, not left out
        self.first_partial: list[LocalizedError] = []
        self.first: list[LocalizedError] = []
        self.started = False  # a line of the file was read well
        self.strict = strict
        #: how the file's text was read: "utf-8", or "gb18030" for a file a Chinese Windows saved (GBK is part of it)
        self.encoding = "utf-8"

    def skip(self, error: LocalizedError) -> None:
        """``error``'s line read past, or ``error`` raised (strict, or no line read well yet)."""
        if self.strict or not self.started:
            raise error from None
        self.count += 1
        if len(self.first) < self.SHOWN:
            self.first.append(error)

    def partly(self, error: LocalizedError) -> None:
        """``error``'s line read, and a part of it not: counted and said apart from the lines read past, which no
        figure holds. Never raised, strict or not: the line's rows are read (a weekly review stopped on one)."""
        self.partial += 1
        if len(self.first_partial) < self.SHOWN:
            self.first_partial.append(error)

"""How alike two spellings are by their characters: the did-you-mean's second test, when words do not decide.

names.py ranks candidates on the words they share with a misspelt name first. Where too few words are shared
(gte_order, getordr), only a clear typo of one candidate is suggested: its character similarity (difflib's ratio
on the words sorted and joined) at least ``least`` and ahead of every other by ``margin``. The ratio is the dear
part of a suggestion on the error path, so it is reached through bounds, and only where a bound left can still
change the answer.
"""
from __future__ import annotations

import difflib
import functools
import heapq
import operator
from collections.abc import Callable
from typing import NamedTuple, Protocol

__all__ = ["FLOOR", "Spellings", "Walk", "letter_bits", "letters_counted", "matched", "positions", "subsequence",
           "walk"]

FLOOR = 0.6  # a candidate below this character similarity can neither be suggested nor spoil a margin


def letter_bits(spelling: str) -> int:
    """The letters of a spelling as a set of bits. Two edits (substitutions, insertions, deletions or swaps, what
    names._word_similarity allows at most) change at most four letters of the set, so a word whose set differs by more
    cannot be a typo of it: one XOR and a bit count instead of an edit distance."""
    if spelling.isascii():  # each letter's bit from a table, or-ed in C
        return functools.reduce(operator.or_, map(_ASCII_BITS.__getitem__, spelling), 0)
    bits = 0
    for ch in spelling:
        bits |= 1 << (ord(ch) & 63)
    return bits


_ASCII_BITS = {chr(c): 1 << (c & 63) for c in range(128)}


def letters_counted(spellings: tuple[str, ...]) -> tuple[tuple[int, ...], dict[str, tuple[int, ...]]]:
    """Each spelling's letters counted, as bits: one bit per letter and occurrence (the second "e" has a bit of its
    own), so that the letters two spellings share, counted, are one AND and a bit count (difflib's quick_ratio);
    and each letter's bits, first occurrence first, with which :func:`walk` writes a query's letters the same way."""
    slots: dict[str, list[int]] = {}
    counted, taken = [], 0
    for spelling in spellings:
        seen: dict[str, int] = {}
        bits = 0
        for ch in spelling:
            k = seen[ch] = seen.get(ch, 0) + 1
            mine = slots.setdefault(ch, [])
            if k > len(mine):
                mine.append(1 << taken)
                taken += 1
            bits |= mine[k - 1]
        counted.append(bits)
    return tuple(counted), {ch: tuple(bits) for ch, bits in slots.items()}


def positions(text: str) -> dict[str, int]:
    """Each character of ``text`` -> the positions holding it, as bits: what :func:`subsequence` reads."""
    at: dict[str, int] = {}
    for pos, ch in enumerate(text):
        at[ch] = at.get(ch, 0) | 1 << pos
    return at


def subsequence(at: dict[str, int], size: int, other: str) -> int:
    """The length of the longest common subsequence of a text (its ``positions``, ``size`` characters) and
    ``other``: bit-parallel, a few integer operations per character of ``other`` rather than a table of both."""
    ones = (1 << size) - 1
    rest, get = ones, at.get
    for ch in other:
        hit = rest & get(ch, 0)
        rest = (rest + hit) | (rest - hit)
    return size - (rest & ones).bit_count()


_AUTOJUNK = 200  # from this length of its second text on, difflib treats the most frequent characters as junk


def matched(a: str, b: str) -> int:
    """How many characters ``difflib.SequenceMatcher(None, a, b)`` matches: the numerator of its ratio.

    The same blocks difflib finds (the longest common block, the first in ``a`` then in ``b`` of equally long ones,
    then the same on either side of it), found by growing a block while ``str.find`` still meets it: at most
    one search per character and per character of growth, each in C. difflib's own search is a Python loop
    over every pair of equal characters, 2-3 times slower on names and far slower on long unlike ones.
    From _AUTOJUNK characters of ``b`` on, difflib itself answers: its junk rule changes what it matches.
    """
    if len(b) >= _AUTOJUNK:
        return sum(block.size for block in difflib.SequenceMatcher(None, a, b).get_matching_blocks())
    total = 0
    find = b.find
    spans = [(0, len(a), 0, len(b))]
    while spans:
        alo, ahi, blo, bhi = spans.pop()
        size, start = 0, -1
        for i in range(alo, ahi):
            if ahi - i <= size:  # no block starting here or later can be longer
                break
            while i + size < ahi and find(a[i:i + size + 1], blo, bhi) >= 0:
                size += 1
                start = i
        if not size:
            continue
        j = find(a[start:start + size], blo, bhi)
        total += size
        if alo < start and blo < j:
            spans.append((alo, start, blo, j))
        if start + size < ahi and j + size < bhi:
            spans.append((start + size, ahi, j + size, bhi))
    return total


class Spellings(Protocol):
    """What the walk reads of the candidates, computed once per list (names.py's index holds it)."""

    @property
    def flats(self) -> tuple[str, ...]: ...  # each candidate's spellings sorted and joined
    @property
    def flat_lengths(self) -> tuple[int, ...]: ...
    @property
    def counted(self) -> tuple[int, ...]: ...  # each flat spelling's letters counted (letters_counted)
    @property
    def occurrences(self) -> dict[str, tuple[int, ...]]: ...  # letter -> the bits of its first, second ... occurrence
    @property
    def lengths(self) -> list[tuple[int, int]]: ...  # (length of the flat spelling, candidate), shortest first
    @property
    def by_flat_length(self) -> dict[int, list[int]]: ...  # length -> the candidates, in their order
    @property
    def length_masks(self) -> dict[int, int]: ...  # length -> the letters of all those spellings, as bits


class Walk(NamedTuple):
    """One query's ranking by characters (:func:`walk`)."""

    leaders: Callable[[list[int]], tuple[int, float] | None]
    runner_up: Callable[[list[int], float], float]
    nearest: Callable[[set[int]], list[int]]


def walk(flat: str, ix: Spellings, margin: float, least: float, cap: int) -> Walk:
    """The character ranking of ``flat`` (a query's spellings sorted and joined) among ``ix``'s candidates."""
    # A candidate's character similarity (difflib's ratio, the dear part) is known through bounds that only
    # tighten: the letters both hold, counted (one AND of bits), then the longest subsequence both share (difflib's
    # matches are one, so never fewer), then the ratio itself. Candidates wait in a heap by the best bound known;
    # the top is refined until it is a ratio, so ratios come out highest first and a walk stops as soon as no
    # bound left can change the answer. Letters alone are loose where names differ by the order of their digits
    # (field_4416_beta among field_N_beta: a score of fields hold 1, 4 and 6); difflib ran for a score of them,
    # where the subsequence tells them apart for a few bit operations per character.
    qmask, counted, flat_lengths, size = letter_bits(flat), ix.counted, ix.flat_lengths, len(flat)
    repeated = size - qmask.bit_count()
    seen: dict[str, int] = {}
    mine = 0  # the query's letters counted, as the candidates' bits (a letter or an occurrence none has: no bit)
    occurrences = ix.occurrences
    for ch in flat:
        k = seen[ch] = seen.get(ch, 0) + 1
        if k <= len(slots := occurrences.get(ch, ())):
            mine |= slots[k - 1]
    at: dict[str, int] = {}  # the query's positions(), made when first asked

    def common(i: int) -> float:
        """At least the ratio and at most the letters' bound: the longest common subsequence over both lengths,
        as difflib's ratio counts matches."""
        if not at:
            at.update(positions(flat))
        return 2 * subsequence(at, size, ix.flats[i]) / (size + flat_lengths[i])

    def heap(group: list[int]) -> list[tuple[float, int, int]]:
        """``group`` as (-bound, -how refined, candidate), the bound its letters shared with the query, counted, in
        any order (difflib's quick_ratio), those under FLOOR left out. Of equal bounds, a ratio comes out
        first (it may end the walk; refining the others would not change it)."""
        floor = -FLOOR
        waiting = [entry for i in group
                   if (entry := (-2 * (mine & counted[i]).bit_count() / (size + flat_lengths[i]), 0, i))[0] <= floor]
        heapq.heapify(waiting)
        return waiting

    def ratio(i: int) -> float:
        return 2 * matched(flat, ix.flats[i]) / (size + flat_lengths[i])

    def refine(waiting: list[tuple[float, int, int]]) -> None:
        """The top's next bound (the subsequence, then difflib's ratio); dropped under FLOOR, where it can
        neither be suggested nor spoil a margin."""
        _, level, i = waiting[0]
        bound = common(i) if level == 0 else ratio(i)
        if bound < FLOOR:
            heapq.heappop(waiting)
        else:
            heapq.heapreplace(waiting, (-bound, level - 1, i))

    def leaders(group: list[int]) -> tuple[int, float] | None:
        """The candidate of ``group`` highest on characters and its character similarity, every other at least
        ``margin`` behind it. None when no suggestion can come of the group: none reaches ``least``, or another is
        within the margin (a tie too, whichever of the two the ranking puts first)."""
        waiting = heap(group)
        if not waiting or -waiting[0][0] < least:  # no candidate's letters can reach ``least``: no ratio is needed
            return None
        # The highest on letters gets its ratio at once, and the next one too while it may come within the margin of
        # it. Two candidates about as near as each other are the usual reason for no suggestion, and two such ratios
        # end the walk whatever the bounds of the rest: the runner-up is at least the lower of them, the first at
        # most the highest bound.
        ratios: list[float] = []
        known: list[tuple[float, int, int]] = []  # their entries, back in the heap once both are known
        for _ in range(2):
            if not waiting:
                break
            bound = -waiting[0][0]
            first = ratios[0] if ratios else -1.0
            if max(bound, first) < least or (ratios and bound <= first - margin):
                break  # neither can reach ``least``, or the next cannot come within the margin of the first
            i = heapq.heappop(waiting)[2]
            if (c := ratio(i)) >= FLOOR:
                known.append((-c, -2, i))
                ratios.append(c)
        for entry in known:
            heapq.heappush(waiting, entry)
        second = min(ratios) if len(ratios) == 2 else -1.0
        best, best_c = -1, -1.0
        while waiting:
            top, level, i = waiting[0]
            if max(best_c, -top) - second < margin:  # two within the margin: a tie, or a runner-up too close
                return None
            if best < 0 and -top < least:
                return None
            if best >= 0 and best_c + top >= margin:  # nothing left within the margin
                break
            if level > -2:
                refine(waiting)
            elif best < 0:
                heapq.heappop(waiting)
                best, best_c = i, -top
            else:
                return None  # a runner-up within the margin
        return (best, best_c) if best >= 0 else None

    def runner_up(group: list[int], best_c: float) -> float:
        """The highest character similarity in ``group`` (0 when all are under FLOOR), or a bound at least
        ``margin`` under ``best_c`` that every one of them is under: the answer is the same."""
        waiting = heap(group)
        while waiting:
            top, level, _ = waiting[0]
            if level == -2 or best_c + top >= margin:
                return -top
            refine(waiting)
        return 0.0

    def nearest(exclude: set[int]) -> list[int]:
        """The candidates whose character similarity to ``flat`` may reach FLOOR, among the first cap of them.

        The ratio is at most ``2 * min(a, b) / (a + b)`` for lengths a and b: a candidate much shorter or
        longer than the query cannot be near it, so none is compared; the nearest lengths are taken first. A block
        of one length whose letters together (bits) are too few for the floor is counted but not listed: none of
        its candidates can pass the letter-bits bound (``qmask``, ``repeated``).
        """
        a = len(flat)
        shortest, longest = ix.lengths[0][0], ix.lengths[-1][0]
        by_length, length_masks = ix.by_flat_length, ix.length_masks
        out: list[int] = []
        room = cap  # how many more candidates the first cap hold, listed or not

        def take(length: int, backwards: bool) -> None:
            nonlocal room
            block = by_length.get(length, ())
            if not block or room <= 0:
                return
            members = [i for i in (reversed(block) if backwards else block) if i not in exclude] if exclude \
                else (block[::-1] if backwards else block)
            members = members[:room]
            room -= len(members)
            if 2 * ((qmask & length_masks[length]).bit_count() + repeated) / (a + length) >= FLOOR:
                out.extend(members)

        # outwards from the query's length, a block of one length at a time: the same length, then one shorter (by
        # descending position), one longer (by ascending position), two shorter ... (a tie in distance goes shorter first)
        take(a, False)
        d = 1
        while room > 0:
            short, long = a - d, a + d
            short_in = short >= shortest and 2 * short >= FLOOR * (a + short)
            long_in = long <= longest and 2 * a >= FLOOR * (a + long)
            if not short_in and not long_in:
                break
            if short_in:
                take(short, True)
            if long_in:
                take(long, False)
            d += 1
        return out

    return Walk(leaders, runner_up, nearest)

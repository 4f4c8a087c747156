"""Did you mean: the closest allowed name to a misspelt tool or field, or none.

Nothing here is about JSON Schema: the schema check, the tool registry, the errors and the site all
ask it. A wrong suggestion costs a wrong call, no suggestion costs nothing, so it answers only when
one candidate is clearly ahead.
"""
from __future__ import annotations

import contextlib
import functools
import operator
import re
from collections.abc import Callable, Collection, Iterable
from typing import NamedTuple

from agentlab.likeness import letter_bits, letters_counted, walk

__all__ = ["closest", "name_words", "suggest", "suggester", "to_camel", "to_snake"]


# --- suggestions for unknown fields and tools ------------------------------------------
# A model follows "did you mean", so a wrong suggestion costs a wrong call while no
# suggestion costs nothing (every allowed name is listed anyway). So: rank by the
# words two names share (what they are about), then by characters (typos), and
# suggest only a candidate that is clearly ahead of the runner-up.
_CAMEL_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# one word of a name: "IDs", "HTTP" before "Server", "Order", "get", "42"; the first
# alternative keeps a plural acronym whole, which the camel split alone would cut as I_Ds
_NAME_WORD = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?![a-z])|[A-Z][a-z]*|[a-z]+|\d+")
_NAME_CHUNK = re.compile(r"[^\W_]+")
NAME_LIMIT = 128  # no real tool or field name is longer; a longer one is cut before any comparison
_MARGIN = 0.1  # how far ahead of the runner-up a candidate must be to be suggested
_MIN_WORDS = 0.25  # the least word overlap worth suggesting (1 of 4 weighted words)
_MIN_CHARS = 0.75  # with no shared word, the least character similarity (a typo, not a guess)

# Verbs that name the same action in tool names; a model that calls fetch_order means get_order.
# Only near-certain synonyms: "list" vs "get" or "find" vs "search" differ often enough to mislead.
_SYNONYMS = {w: head for head, words in {
    "get": ("fetch", "retrieve", "obtain", "read", "load", "lookup"),
    "create": ("add", "make", "new", "insert"),
    "delete": ("remove", "del", "erase", "destroy"),
    "update": ("modify", "edit", "change", "patch"),
}.items() for w in (head, *words)}


def to_snake(name: str) -> str:
    if name == name.lower():  # no capital to split before: the regular expression would change nothing
        return name.replace("-", "_")
    return _CAMEL_SPLIT.sub("_", name).replace("-", "_").lower()


def to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _stem(word: str) -> str:
    """Fold the plural: orders -> order, entries -> entry, matches -> match (status stays).

    Not English stemming, only enough that a plural and its singular are one word.
    """
    if not word.endswith(("s", "e")):  # (most words: every rule below needs one of these last)
        return word
    if len(word) > 4 and word.endswith(("ies", "ie")):  # entries -> entry; movies and movie -> movy
        return word[:-3 if word.endswith("s") else -2] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _terms(name: str) -> list[tuple[str, str]]:
    """``(word, spelling)`` pairs: the word with synonyms merged, and as it was written."""
    name = name[:NAME_LIMIT]
    if name.isascii() and name.isalpha() and name.islower():  # one lower-case word ("categroy"): no pattern needed
        spelt = _stem(name)
        return [(_SYNONYMS.get(spelt, spelt), spelt)]
    terms: list[tuple[str, str]] = []
    seen: set[str] = set()
    # snake_case in lower case ("feild_7_gama"), the usual field name: its chunks are what split("_") gives
    snake = name.isascii() and name.islower() and name.replace("_", "").isalnum()
    for chunk in name.split("_") if snake else _NAME_CHUNK.findall(name):
        if not chunk.isascii():
            parts = [chunk]
        elif (chunk.islower() and chunk.isalpha()) or chunk.isdigit():  # one lower-case word or one number:
            parts = [chunk]  # what the pattern would find, found faster
        elif not chunk:  # (two underscores in a row)
            continue
        else:
            parts = _NAME_WORD.findall(chunk)
        for part in parts:
            spelt = _stem(part if snake else part.lower())
            word = _SYNONYMS.get(spelt, spelt)
            if word not in seen:
                seen.add(word)
                terms.append((word, spelt))
    return terms


def name_words(name: str) -> list[str]:
    """The words of a tool or field name, lower-case, plural folded, verb synonyms merged.

    ``getOrderDetails``, ``get_order_details`` and ``fetch-order-detail`` all give
    ``["get", "order", "detail"]``. Only the first :data:`NAME_LIMIT` characters count.
    """
    return [w for w, _ in _terms(name)]


def _edits(a: str, b: str, most: int) -> int:
    """Edit distance with swaps of neighbours (uesr/user is one edit), or ``most + 1`` if larger."""
    la, lb = len(a), len(b)
    if abs(la - lb) > most:
        return most + 1
    # What both share at either end costs no edit: only the middle goes through the table ("categroy" and
    # "category" leave "ro" and "or"), so a typo in a long word costs what it costs in a short one.
    n = min(la, lb)
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a, b = a[head:la - tail], b[head:lb - tail]
    if not a or not b:
        return min(max(len(a), len(b)), most + 1)
    # The middles of most typos are a letter or two ("ro" against "or"): their distance needs no table. Both
    # middles differ at either end (what was equal is stripped), so one letter is one substitution plus an
    # insertion per extra letter of the other, less one if the letter is inside it.
    if len(a) == 1 or len(b) == 1:
        one, other = (a, b) if len(a) == 1 else (b, a)
        return min(len(other) - (one in other[1:-1]), most + 1)
    if len(a) == len(b) == 2:
        return 1 if a == b[::-1] else 2
    if len(set(a).symmetric_difference(b)) > 2 * most:  # an edit changes at most two letters of the set: too far
        return most + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) > most:
            return most + 1
        prev2, prev = prev, row
    return min(prev[-1], most + 1)


# (not cached: a query asks each pair once, and the suggester remembers its answers to whole names)
def _word_similarity(a: tuple[str, str], b: tuple[str, str]) -> float:
    """1 for the same word; for a typo of it, a little less; else 0.

    A typo is one edit in a short word, two in a long one, counted on the spelling
    (so "retreve" is near "retrieve", not near its synonym "get"). Character ratios
    are not used here: "arae" is 0.8 like "garage", one swap away from "area".
    """
    if a[0] == b[0]:
        return 1.0
    x, y = a[1], b[1]
    lx, ly = len(x), len(y)
    shorter = min(lx, ly)
    if shorter < 4:  # get/set, add/and: one letter apart and unrelated
        # but two letters swapped (usb/sub, gte/get) is a slip of the fingers, not a word
        return 0.6 if lx == ly == 3 and sorted(x) == sorted(y) and _edits(x, y, 1) == 1 else 0.0
    most = 1 if shorter < 7 else 2
    d = _edits(x, y, most)
    return 1.0 - d / max(lx, ly) if d <= most else 0.0


# per query word: its weight when it pairs with nothing, and each similar word with the similarity and the
# lower and higher of the two words' weights
_Option = tuple[tuple[str, str], float, float, float]
_Pairings = list[tuple[float, list[_Option]]]


def _word_score(pairings: _Pairings, paired: Collection[tuple[str, str]], count: int) -> float:
    """Weighted overlap (Jaccard: sum of minima over sum of maxima) of two names' words.

    A word most candidates share weighs little: for ``refund_order`` against ``get_order``,
    ``search_orders`` and ``create_refund``, "order" is in two names and "refund" in one,
    so ``create_refund`` scores highest. A typo pairs with its word at its similarity.

    The candidate is given by its ``count`` words, of which ``paired`` are those some query word is similar to;
    ``pairings`` (:func:`_word_candidates`, once per query) holds, per query word, its weight alone and the words
    similar to it: every other word scores 0 with it, so it only counts in the union.
    """
    shared = union = 0.0
    left = set(paired)
    for alone, options in pairings:
        # the best of the words left for this query word: the highest similarity, a tie going to the greater pair
        # (max() on (similarity, pair)); the options come in that order (_pairing), so the first left is the best
        for pair, sim, low, high in options:
            if pair in left:
                left.remove(pair)
                count -= 1
                shared += sim * low
                union += high
                break
        else:
            union += alone
    # A candidate's own extra words count in full: a name is not a better guess for
    # carrying words that many other names also carry (get_adriel_projects beside
    # get_adriel_list_projects is no nearer to "get_adriel" than get_adriel_education).
    union += count
    return shared / union if union else 0.0


# --- the cost of a suggestion, bounded --------------------------------------------------
# A suggestion is made on the error path, for every unknown field of every invalid call: it must cost
# no more than the check that found the field (a tool may have hundreds). What depends only on the
# candidates (their words, weights, spellings) is computed once per candidate list and kept; a query
# then scores only the candidates that share a word, or a typo of one, with it (every other one scores
# 0 on words), at most _CAP of them, and compares characters (difflib) only when words did not decide,
# again for at most _CAP candidates, the nearest in length first. Up to _CAP candidates, the answer is
# exactly the full ranking's; past it, the few candidates scored are the ones that can win. Candidates of
# one shape (the same words pair with the query) share one score, the shapes found with operations on sets of
# candidates held as int bits; each query word's similar words are found once (the scores read them); cheap
# bounds (letter sets as bits, lengths, a length's letters together) come before every edit distance and difflib
# ratio, and difflib runs highest bound first, only while a bound left can still change the answer. The answers
# are checked against the code before these shortcuts on 9,000 misspellings (tests/data/suggest_corpus.json) and
# against scoring every candidate in full on fresh random misspellings (tests/test_suggest.py).
_CAP = 64


# A set of candidates is an int, bit i for candidate i: the sets a query combines (a word's candidates, the 64
# scored, the shapes among them) are split and joined by one integer operation each, whatever their size.
# A list of candidates in their order: (how many, all of them as bits, the first k as bits for k up to 2 * _CAP,
# the list itself), so that "the first k" is read, not counted out.
_Members = tuple[int, int, tuple[int, ...], list[int]]


def _members(ids: list[int]) -> _Members:
    prefix = [0]
    for i in ids[:2 * _CAP]:
        prefix.append(prefix[-1] | 1 << i)
    full = prefix[-1] if len(ids) <= 2 * _CAP else _bits(ids)
    return len(ids), full, tuple(prefix), ids


def _bits(ids: Iterable[int]) -> int:
    return functools.reduce(operator.or_, (1 << i for i in ids), 0)


def _first(members: _Members, k: int) -> int:
    """The first ``k`` candidates of a list, as bits."""
    length, full, prefix, ids = members
    if k >= length:
        return full
    if k < len(prefix):
        return prefix[k]
    return prefix[-1] | _bits(ids[len(prefix) - 1:k])


def _bits_of(sets: Iterable[int]) -> int:
    return functools.reduce(operator.or_, sets, 0)


def _indices(bits: int) -> list[int]:
    """The candidates a set of bits holds, in their order."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


class _Index(NamedTuple):
    names: tuple[str, ...]
    terms: tuple[list[tuple[str, str]], ...]
    weight: dict[str, float]  # a word shared by many candidates weighs little
    flats: tuple[str, ...]  # the spellings sorted and joined: what characters are compared on
    by_word: dict[str, _Members]  # word -> the candidates that have it
    # length of a query word -> the candidates' distinct (word, spelling) pairs of a length it may be a typo of
    # (_word_similarity), each with the letters of the spelling as bits, how many letters of the set a typo of
    # that length can change (_letter_limit), and the candidates that have it
    typo_pool: dict[int, tuple[tuple[int, int, tuple[str, str], _Members], ...]]
    folded: dict[str, list[str]]  # name without case or separators -> the candidates spelt so
    members: frozenset[str]
    joined: bool  # some candidate has no underscore: a camel twin (never one) may be a candidate
    lengths: list[tuple[int, int]]  # (length of the flat spelling, candidate), shortest first
    having: dict[str, int]  # spelling -> the candidates that have it, as bits
    by_count: dict[int, int]  # number of words -> the candidates with that many, as bits
    pairs: dict[str, tuple[tuple[str, str], ...]]  # word -> its (word, spelling) pairs among the candidates
    flat_masks: tuple[int, ...]  # the letters of each flat spelling as bits
    counted: tuple[int, ...]  # the letters of each flat spelling counted, as bits (likeness.letters_counted)
    occurrences: dict[str, tuple[int, ...]]  # letter -> the bits of its first, second ... occurrence
    flat_lengths: tuple[int, ...]  # the length of each flat spelling
    by_flat_length: dict[int, list[int]]  # length of a flat spelling -> the candidates, in their order
    length_masks: dict[int, int]  # length of a flat spelling -> the letters of all those spellings, as bits
    # the 3-letter entries of typo_pool (kept out of it) by their letters as bits: a 3-letter typo is an anagram
    # (_letter_limit 0), so only the entries with the query's very letters can pair, found by one look-up rather
    # than one bit count per 3-letter word (a 500-field schema numbered 0-499 has 400 of them)
    anagrams: dict[int, tuple[tuple[int, int, tuple[str, str], _Members], ...]]
    # query word -> what _pairing found for it, kept for the spellings the candidates hold themselves ("field",
    # "gamma" in "feild_7_gama"): a misspelt name is mostly real words, and their pairings depend on the
    # candidates alone, so each is worked out once per list (bounded by the words the candidates hold)
    known: dict[tuple[str, str], tuple[tuple[_Members, ...], tuple[float, list[_Option]]]]


@functools.lru_cache(maxsize=256)
def _index(candidates: tuple[str, ...]) -> _Index:
    """Everything about ``candidates`` a query needs, computed once per list (a tool's fields, a registry's tools)."""
    candidates = tuple(dict.fromkeys(candidates))  # a name listed twice is one candidate
    terms = tuple(_terms(c) for c in candidates)
    df: dict[str, int] = {}
    by_word: dict[str, list[int]] = {}
    by_spelling: dict[str, list[int]] = {}
    for i, ts in enumerate(terms):
        for w, spelt in ts:
            df[w] = df.get(w, 0) + 1
            by_word.setdefault(w, []).append(i)
            by_spelling.setdefault(spelt, []).append(i)
    spelt_as = {spelt: w for ts in terms for w, spelt in ts}
    spelling_members = {spelt: _members(ids) for spelt, ids in by_spelling.items()}
    by_length: dict[int, list[tuple[int, tuple[str, str], _Members]]] = {}
    for spelt, members in spelling_members.items():
        by_length.setdefault(len(spelt), []).append((letter_bits(spelt), (spelt_as[spelt], spelt), members))
    folded: dict[str, list[str]] = {}
    for a in candidates:
        folded.setdefault(to_snake(a).replace("_", ""), []).append(a)
    flats = tuple("_".join(sorted(s for _, s in ts)) for ts in terms)
    pairs: dict[str, dict[tuple[str, str], None]] = {}
    by_flat_length: dict[int, list[int]] = {}
    for i, ts in enumerate(terms):
        for t in ts:
            pairs.setdefault(t[0], {})[t] = None
        by_flat_length.setdefault(len(flats[i]), []).append(i)
    pool = {n: tuple((mask, _letter_limit(n, len(pair[1])), pair, members)
                     for length in range(max(4, n - 2), n + 3)
                     for mask, pair, members in by_length.get(length, ()))
            for n in range(4, max(by_length, default=0) + 3)}
    anagrams: dict[int, list[tuple[int, int, tuple[str, str], _Members]]] = {}
    for mask, pair, members in by_length.get(3, ()):
        anagrams.setdefault(mask, []).append((mask, 0, pair, members))
    flat_masks = tuple(letter_bits(f) for f in flats)
    counted, occurrences = letters_counted(flats)
    return _Index(candidates, terms, {w: 1.0 / n for w, n in df.items()}, flats,
                  {w: _members(ids) for w, ids in by_word.items()}, pool,
                  folded, frozenset(candidates), any("_" not in c for c in candidates), sorted((len(f), i) for i, f in enumerate(flats)),
                  {spelt: members[1] for spelt, members in spelling_members.items()},
                  {n: _bits(i for i, ts in enumerate(terms) if len(ts) == n) for n in {len(ts) for ts in terms}},
                  {w: tuple(ps) for w, ps in pairs.items()},
                  flat_masks, counted, occurrences,
                  tuple(map(len, flats)), by_flat_length,
                  {n: functools.reduce(operator.or_, (flat_masks[i] for i in members), 0)
                   for n, members in by_flat_length.items()},
                  {mask: tuple(entries) for mask, entries in anagrams.items()}, {})


def _letter_limit(a: int, b: int) -> int:
    """How many letters of the set a typo between words of lengths ``a`` and ``b`` can change (_word_similarity):
    two per edit allowed, one edit below 7 letters and two from 7; 3-letter words are a typo only as anagrams."""
    if a == b == 3:
        return 0
    return 2 if min(a, b) < 7 else 4


def _pairing(q: tuple[str, str], ix: _Index) -> tuple[tuple[_Members, ...], tuple[float, list[_Option]]]:
    """For one query word: the lists of candidates it leads to (its own word's, its typos'), its weight when it
    pairs with nothing and the candidates' words similar to it, as _word_score reads them."""
    word, spelt = q
    weight = ix.weight
    same = ix.by_word.get(word)
    lists = [same] if same is not None else []
    alone = weight.get(word, 1.0)
    options = [(pair, 1.0, alone, alone) for pair in ix.pairs.get(word, ())]  # the same word, however spelt
    # a typo counts between words of 4+ letters, or two 3-letter anagrams (those share their letters' bits)
    near = ix.typo_pool.get(len(spelt)) if len(spelt) != 3 else ix.anagrams.get(letter_bits(spelt))
    if near:
        # letter sets further apart than a typo can move them: no edit distance needed; with two or three
        # words to look at, asking each costs less than the letters' bits (an anagram's are the query's)
        qmask = letter_bits(spelt) if len(near) > 3 and len(spelt) != 3 else -1
        for mask, limit, b, members in near:
            if (qmask < 0 or (qmask ^ mask).bit_count() <= limit) and b[0] != word:
                sim = _word_similarity(q, b)
                if sim:
                    lists.append(members)
                    wc = weight.get(b[0], 1.0)
                    wq = weight.get(word, wc)  # a typo weighs what the word it misspells weighs
                    options.append((b, sim, min(wq, wc), max(wq, wc)))
    if len(options) > 1:  # best first, as _word_score takes them: by similarity, a tie going to the greater pair
        options.sort(key=lambda option: (option[1], option[0]), reverse=True)
    return tuple(lists), (alone, options)


def _word_candidates(query: list[tuple[str, str]], ix: _Index) -> tuple[int, _Pairings]:
    """The candidates whose word score can be above 0 (they share a word or a typo of one), at most _CAP;
    and for each query word, the candidates' words similar to it (_word_similarity above 0), as _word_score
    reads them.

    Rare words are followed first: a word most candidates carry says little, and its list may be long.
    """
    lists: list[_Members] = []
    pairings: _Pairings = []
    known = ix.known
    for q in query:
        got = known.get(q)
        if got is None:
            got = _pairing(q, ix)
            if q[1] in ix.having:  # a spelling of the candidates' own: kept, at most one per word they hold
                known[q] = got
        lists += got[0]
        pairings.append(got[1])
    if len(lists) == 1:  # one word (or typo) leads anywhere, the usual case: its first candidates
        return _first(lists[0], _CAP), pairings
    # Which candidates are scored matters, not in what order (the scores, then characters and names, rank them):
    # bits, joined a list at a time.
    found = count = 0
    for members in sorted(lists, key=operator.itemgetter(0)):
        room = _CAP - count
        if room <= 0:
            break
        if members[0] <= room:  # all of them fit: added in one go
            found |= members[1]
            count = found.bit_count()
            continue
        # the first ``room`` ones not found yet, in their order: a longer start of the list while some were found
        end = room
        grown = found | _first(members, end)
        count = grown.bit_count()
        while count < _CAP and end < members[0]:
            end += _CAP - count
            grown = found | _first(members, end)
            count = grown.bit_count()
        found = grown
    return found, pairings


def _word_scores(query: list[tuple[str, str]], ix: _Index) -> list[tuple[float, int]]:
    """The candidates that score above 0 on words, as (score, candidates as bits) classes, each shape scored once.

    A score depends only on the candidate's words that pair with a query word, and on how many do not (each
    counts 1 in the union): field_3_gamma and field_8_gamma are one shape for "feild_7_gama", so a
    500-field schema costs a few scores rather than one per field, and no score is written per field.
    """
    group, pairings = _word_candidates(query, ix)
    if not group:
        return []
    # the candidates' words _word_score can pair: the query's own words (however spelt) and their typos
    pairable = {option[0] for _, options in pairings for option in options}
    if group.bit_count() <= 4:  # a few candidates: scoring each costs less than finding their shapes
        scored = ((_word_score(pairings, [t for t in ix.terms[i] if t in pairable], len(ix.terms[i])), 1 << i)
                  for i in _indices(group))
        return [(w, bit) for w, bit in scored if w]
    # Split the group into shapes with set operations (in C): by each pairable word had or not, then by the number
    # of words. Every candidate of a class has the same shape, so one score stands for all of them.
    classes: list[tuple[int, tuple[tuple[str, str], ...]]] = [(group, ())]
    for pair in pairable:  # (a spelling is one word's: one pair each)
        having = ix.having[pair[1]]
        split: list[tuple[int, tuple[tuple[str, str], ...]]] = []
        for members, has in classes:
            inside = members & having
            if inside == members:  # all or none of them have it: the class stays whole
                split.append((members, (*has, pair)))
            elif not inside:
                split.append((members, has))
            else:
                split += ((inside, (*has, pair)), (members ^ inside, has))
        classes = split
    if len(ix.by_count) > 1:
        shaped = [(members & same, has, n) for members, has in classes for n, same in ix.by_count.items()]
        return [(w, members) for members, has, n in shaped
                if members and (w := _word_score(pairings, has, n))]
    (n,) = ix.by_count
    return [(w, members) for members, has in classes if (w := _word_score(pairings, has, n))]


def closest(name: str, candidates: list[str]) -> str | None:
    """The one candidate ``name`` clearly means, by shared words then characters, else None.

    Ranked as if every candidate were scored on words, then characters; see _CAP for what is scored."""
    if not candidates:
        return None
    return _closest(name, _index(tuple(candidates)))


def _closest(name: str, ix: _Index) -> str | None:
    query = _terms(name[:NAME_LIMIT])
    if not query:
        return None
    classes = _word_scores(query, ix)
    best_w = next_w = 0.0
    if classes:
        classes.sort(key=operator.itemgetter(0), reverse=True)
        best_w = classes[0][0]
        # the runner-up: the best score again if two candidates share it (in one class or two), else the next one
        tied = classes[0][1].bit_count() > 1 or (len(classes) > 1 and classes[1][0] == best_w)
        next_w = best_w if tied else classes[1][0] if len(classes) > 1 else 0.0
    if best_w >= _MIN_WORDS:
        # Enough shared words: suggest only a clear winner. A tie on words (get_activity_by_range
        # between ..._by_price_range and ..._by_accessibility_range) is not broken by characters,
        # which would only prefer the shorter name.
        return ix.names[classes[0][1].bit_length() - 1] if best_w - next_w >= _MARGIN else None  # (one bit)
    # Too few shared words to go by (gte_order, getordr): a clear typo of one name, by characters
    flat = "_".join(sorted(s for _, s in query))
    chars = walk(flat, ix, _MARGIN, _MIN_CHARS, _CAP)
    if best_w:
        group = _indices(_bits_of(m for w, m in classes if w == best_w))
        found = chars.leaders(group)
        if found is None:
            return None
        (best, best_c), next_c = found, 0.0  # the rest of a group of several: behind by the margin (leaders)
        lower = [w for w, _ in classes if w < best_w]
        if len(group) == 1 and lower:  # alone on its score: the runner-up is the next score's best
            next_c = chars.runner_up(_indices(_bits_of(m for w, m in classes if w == lower[0])), best_c)
        elif len(group) == 1:
            scored = set(_indices(_bits_of(m for _, m in classes)))
            next_c = chars.runner_up(chars.nearest(scored), best_c)
    else:
        found = chars.leaders(chars.nearest(set()))
        if found is None:
            return None
        (best, best_c), next_c = found, 0.0
    return ix.names[best] if best_c - next_c >= _MARGIN else None


def suggest(name: str, allowed: list[str]) -> str | None:
    """The name the model probably meant: camel/snake twin, other case, or a clear best match.

    Used for unknown fields and unknown tools alike. ``None`` when no candidate is
    clearly ahead: pointing the wrong way is worse than listing the names.
    """
    if not allowed:
        return None
    return _suggest(name, _index(tuple(allowed)))


def _suggest(name: str, ix: _Index) -> str | None:
    name = name[:NAME_LIMIT]  # difflib is quadratic: a megabyte of name must not reach it
    snake = to_snake(name)
    if snake != name and snake in ix.members:
        return snake
    if "_" in name and ix.joined:  # (without one, the camel twin is the name itself)
        camel = to_camel(name)
        if camel != name and camel in ix.members:
            return camel
    same = ix.folded.get(snake.replace("_", ""), [])
    if len(same) == 1:
        return same[0]
    return _closest(name, ix)


_REMEMBERED = 256  # names a suggester keeps the answer for: a model resends its typo, a flood of new names is bounded


def suggester(allowed: tuple[str, ...] | list[str]) -> Callable[[str], str | None]:
    """:func:`suggest` over a fixed list, for a list known in advance (a schema's fields at compile time).

    Everything about the candidates is computed here, once, and kept by the function returned rather
    than looked up per call; it also remembers its last answers, so the typo a model repeats on its
    retry costs a dictionary look-up.
    """
    if not allowed:
        return lambda name: None
    ix = _index(tuple(allowed))
    memo: dict[str, str | None] = {}

    def near(name: str) -> str | None:
        name = name[:NAME_LIMIT]
        if name in memo:
            return memo[name]
        found = _suggest(name, ix)
        if len(memo) >= _REMEMBERED:  # the oldest goes: bounded whatever the model sends (a check, and so its
            with contextlib.suppress(RuntimeError, StopIteration):  # memo, is shared by threads: one may evict first)
                memo.pop(next(iter(memo)), None)
        memo[name] = found
        return found

    return near

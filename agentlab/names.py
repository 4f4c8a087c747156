"""Did you mean: the closest allowed name to a misspelt tool or field, or none.

Nothing here is about JSON Schema: the schema check, the tool registry, the errors and the site all
ask it. A wrong suggestion costs a wrong call, no suggestion costs nothing, so it answers only when
one candidate is clearly ahead.
"""
from __future__ import annotations

import difflib
import re

__all__ = ["closest", "name_words", "suggest", "to_camel", "to_snake"]


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
    return _CAMEL_SPLIT.sub("_", name).replace("-", "_").lower()


def to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _stem(word: str) -> str:
    """Fold the plural: orders -> order, entries -> entry, matches -> match (status stays).

    Not English stemming, only enough that a plural and its singular are one word.
    """
    if len(word) > 4 and word.endswith(("ies", "ie")):  # entries -> entry; movies and movie -> movy
        return word[:-3 if word.endswith("s") else -2] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _terms(name: str) -> list[tuple[str, str]]:
    """``(word, spelling)`` pairs: the word with synonyms merged, and as it was written."""
    terms: list[tuple[str, str]] = []
    for chunk in _NAME_CHUNK.findall(name[:NAME_LIMIT]):
        parts = _NAME_WORD.findall(chunk) if chunk.isascii() else [chunk]
        for part in parts:
            spelt = _stem(part.lower())
            word = _SYNONYMS.get(spelt, spelt)
            if all(word != w for w, _ in terms):
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
    if abs(len(a) - len(b)) > most:
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


def _word_similarity(a: tuple[str, str], b: tuple[str, str]) -> float:
    """1 for the same word; for a typo of it, a little less; else 0.

    A typo is one edit in a short word, two in a long one, counted on the spelling
    (so "retreve" is near "retrieve", not near its synonym "get"). Character ratios
    are not used here: "arae" is 0.8 like "garage", one swap away from "area".
    """
    if a[0] == b[0]:
        return 1.0
    x, y = a[1], b[1]
    if min(len(x), len(y)) < 4:  # get/set, add/and: one letter apart and unrelated
        # but two letters swapped (usb/sub, gte/get) is a slip of the fingers, not a word
        return 0.6 if len(x) == len(y) == 3 and sorted(x) == sorted(y) and _edits(x, y, 1) == 1 else 0.0
    most = 1 if min(len(x), len(y)) < 7 else 2
    d = _edits(x, y, most)
    return 1.0 - d / max(len(x), len(y)) if d <= most else 0.0


def _word_score(query: list[tuple[str, str]], cand: list[tuple[str, str]], weight: dict[str, float]) -> float:
    """Weighted overlap (Jaccard: sum of minima over sum of maxima) of two names' words.

    A word most candidates share weighs little: for ``refund_order`` against ``get_order``,
    ``search_orders`` and ``create_refund``, "order" is in two names and "refund" in one,
    so ``create_refund`` scores highest. A typo pairs with its word at its similarity.
    """
    shared = union = 0.0
    left = list(cand)
    for q in query:
        sim, c = max(((_word_similarity(q, c), c) for c in left), default=(0.0, ("", "")))
        if sim:
            left.remove(c)
            wc = weight.get(c[0], 1.0)
            wq = weight.get(q[0], wc)  # a typo weighs what the word it misspells weighs
            shared += sim * min(wq, wc)
            union += max(wq, wc)
        else:
            union += weight.get(q[0], 1.0)
    # A candidate's own extra words count in full: a name is not a better guess for
    # carrying words that many other names also carry (get_adriel_projects beside
    # get_adriel_list_projects is no nearer to "get_adriel" than get_adriel_education).
    union += len(left)
    return shared / union if union else 0.0


def closest(name: str, candidates: list[str]) -> str | None:
    """The one candidate ``name`` clearly means, by shared words then characters, else None."""
    query = _terms(name[:NAME_LIMIT])
    if not query or not candidates:
        return None
    terms = {c: _terms(c) for c in candidates}
    df: dict[str, int] = {}
    for ts in terms.values():
        for w, _ in ts:
            df[w] = df.get(w, 0) + 1
    weight = {w: 1.0 / n for w, n in df.items()}
    flat = "_".join(sorted(s for _, s in query))
    scored = sorted(((_word_score(query, ts, weight),
                      difflib.SequenceMatcher(None, flat, "_".join(sorted(s for _, s in ts))).ratio(), c)
                     for c, ts in terms.items()), reverse=True)
    (best_w, best_c, best), (next_w, next_c, _) = scored[0], (scored[1] if len(scored) > 1 else (0.0, 0.0, ""))
    if best_w >= _MIN_WORDS:
        # Enough shared words: suggest only a clear winner. A tie on words (get_activity_by_range
        # between ..._by_price_range and ..._by_accessibility_range) is not broken by characters,
        # which would only prefer the shorter name.
        return best if best_w - next_w >= _MARGIN else None
    if best_c >= _MIN_CHARS and best_c - next_c >= _MARGIN:
        return best  # too few shared words to go by (gte_order, getordr): a clear typo of one name
    return None


def suggest(name: str, allowed: list[str]) -> str | None:
    """The name the model probably meant: camel/snake twin, other case, or a clear best match.

    Used for unknown fields and unknown tools alike. ``None`` when no candidate is
    clearly ahead: pointing the wrong way is worse than listing the names.
    """
    if not allowed:
        return None
    name = name[:NAME_LIMIT]  # difflib is quadratic: a megabyte of name must not reach it
    for candidate in (to_snake(name), to_camel(name)):
        if candidate in allowed and candidate != name:
            return candidate
    folded: dict[str, list[str]] = {}
    for a in allowed:
        folded.setdefault(to_snake(a).replace("_", ""), []).append(a)
    same = folded.get(to_snake(name).replace("_", ""), [])
    if len(same) == 1:
        return same[0]
    return closest(name, list(allowed))

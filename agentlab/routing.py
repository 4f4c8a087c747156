"""Offering the model the few tools a turn needs, not all thirty (docs/guards.md#routing).

With many tools in the prompt a model picks the wrong one more often and every turn
costs more tokens. :class:`Router` scores each tool against what the user said with
BM25 over the words of its name and description (snake_case and camelCase split,
Chinese read as characters and character pairs) and offers the top ``k``. :func:`routing_metrics`
says whether that worked: was the needed tool offered (hit rate), how many were
offered, how many prompt tokens it saved.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .i18n import Lang
from .tools import Registry

__all__ = ["BilingualIndex", "Router", "RoutingTurn", "query_lang", "routing_metrics", "search_words", "words"]

_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[\u4e00-\u9fff]+")
_STOP = frozenset("a an the of to for and or in on by with is are be it this that when use call one".split())


def words(text: str) -> list[str]:
    """Search words: lower-case English words (``orderId`` -> order, id), Chinese characters and their pairs."""
    out: list[str] = []
    for tok in _SPLIT.findall(text or ""):
        if "\u4e00" <= tok[0] <= "\u9fff":  # no spaces in Chinese: single characters and pairs both count
            out += list(tok) + [tok[i:i + 2] for i in range(len(tok) - 1)]
        else:
            w = tok.lower()
            if w not in _STOP:
                out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


class Router:
    """BM25 over each tool's name and description; ``always`` tools are offered every turn."""

    def __init__(self, registry: Registry, *, k: int = 5, always: Sequence[str] = (), k1: float = 1.2,
                 b: float = 0.75, keywords: Mapping[str, str] | None = None, unsure_below: float = 0.0):
        """``keywords``: per tool, more words for what it does (synonyms, in either language), indexed with its
        description. ``unsure_below``: when the best tool scores below this (or nothing scores at all, with any
        value above 0), the router is unsure and offers every tool rather than guess (docs/guards.md#routing)."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        self.registry, self.k, self.always = registry, k, tuple(always)
        self.k1, self.b, self.unsure_below = k1, b, unsure_below
        extra = keywords or {}
        self._docs = {t.name: Counter(words(t.name) * 2 + words(t.description) + words(extra.get(t.name, "")))
                      for t in registry}
        self._avg = sum(sum(d.values()) for d in self._docs.values()) / max(len(self._docs), 1)
        df: Counter = Counter()
        for d in self._docs.values():
            df.update(set(d))
        n = len(self._docs)
        self._idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def __repr__(self) -> str:
        return f"Router({len(self._docs)} tools, k={self.k})"

    def scores(self, query: str) -> dict[str, float]:
        q = words(query)
        out = {}
        for name, doc in self._docs.items():
            length = sum(doc.values())
            s = 0.0
            for w in q:
                f = doc.get(w, 0)
                if f:
                    s += self._idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self._avg))
            out[name] = s
        return out

    def offer(self, query: str) -> list[str]:
        """The tool names to offer for ``query``: the ``always`` ones, then the best scored up to ``k``."""
        ranked = sorted(self.scores(query).items(), key=lambda kv: (-kv[1], kv[0]))
        if self.unsure_below > 0 and (not ranked or ranked[0][1] < self.unsure_below):
            return list(self._docs)  # unsure: every tool, as if there were no router
        chosen = [n for n in self.always if n in self._docs]
        for name, score in ranked:
            if len(chosen) >= max(self.k, len(self.always)):
                break
            if score > 0 and name not in chosen:
                chosen.append(name)
        return chosen

    def __call__(self, messages: Sequence[Mapping]) -> list[str]:
        """The offer for a conversation: what the latest user message asks for."""
        latest = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        return self.offer(str(latest))


@dataclass(frozen=True)
class RoutingTurn:
    """One routed turn: the tools it needed, the ones offered, and the full list it was chosen from."""

    needed: frozenset[str]
    offered: tuple[str, ...]
    all_tools: tuple[str, ...]


def routing_metrics(turns: Iterable[RoutingTurn], registry: Registry | None = None) -> dict[str, float]:
    """Hit rate (every needed tool was offered), miss rate, tools offered per turn, and the prompt
    characters of tool specs saved per turn (a token estimate is about a quarter of that)."""
    turns = list(turns)
    n = max(len(turns), 1)
    hits = sum(t.needed <= set(t.offered) for t in turns)
    spec_chars = {}
    if registry is not None:
        spec_chars = {t.name: len(json.dumps(t.spec(), ensure_ascii=False)) for t in registry}
    saved = sum(sum(spec_chars.get(x, 0) for x in t.all_tools) - sum(spec_chars.get(x, 0) for x in t.offered)
                for t in turns)
    return {"hit_rate": hits / n, "miss_rate": 1 - hits / n if turns else 0.0,
            "tools_per_turn": sum(len(t.offered) for t in turns) / n,
            "spec_chars_saved_per_turn": saved / n}


# --- searching in either language (the skill site, docs/site.md#search) ---------------------------
# A person asks in the language they think in, and a client rarely sends a language header. So each name is
# indexed once per language and a query is scored against both: first the index of the language it is written
# in (told by its share of Chinese characters), then the other at a lower weight, so a mixed query
# ("退款 A1001 order") still finds what either half names. Chinese has no spaces: it is read as character
# pairs plus the single characters that carry meaning alone (not "帮", "我", "的": they are in every
# description and would rank the chattiest one first).

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LETTER = re.compile(r"[A-Za-z]")
_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# characters that say who asks or how politely, not what for: alone they match every description
_FILLER = frozenset("我你他她它们的了吗呢吧啊呀帮请把给一个下是在要想和有这那么就也都还没不用时")
# how much the other language's index counts (a Chinese query still matches an English name it spells out)
OTHER_WEIGHT = 0.5


def query_lang(text: str) -> Lang:
    """``zh`` when the query's Chinese characters, each counted as three letters, are at least as many as its
    Latin letters, else ``en``."""
    han = len(_HAN.findall(text or ""))
    latin = len(_LETTER.findall(text or ""))
    # a Chinese character says about as much as three letters: "退款 order A1001" is a Chinese ask
    return "zh" if han and han * 3 >= latin else "en"


def search_words(text: str) -> list[str]:
    """Search terms: English words as :func:`agentlab.routing.words` reads them; Chinese as character pairs
    plus the characters that mean something alone."""
    out: list[str] = []
    for run in _RUN.findall(text or ""):
        if _HAN.match(run):
            out += [c for c in run if c not in _FILLER]
            out += [run[i:i + 2] for i in range(len(run) - 1)]
        else:
            out += words(run)
    return out


class _Bm25:
    """BM25 over a few short documents (a skill's texts in one language)."""

    def __init__(self, docs: Mapping[str, list[str]], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.docs = {name: Counter(terms) for name, terms in docs.items()}
        self.avg = sum(sum(d.values()) for d in self.docs.values()) / max(len(self.docs), 1)
        df: Counter = Counter()
        for d in self.docs.values():
            df.update(set(d))
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def scores(self, query: list[str]) -> dict[str, float]:
        out = {}
        for name, doc in self.docs.items():
            length = sum(doc.values()) or 1
            s = 0.0
            for w in query:
                f = doc.get(w, 0)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            out[name] = s
        return out


class BilingualIndex:
    """Texts in English and Chinese per name (a skill's, a tool's), searched with BM25 in the query's language first.

    ``docs`` maps a name to its text in each language; a language it lacks falls back to English."""

    def __init__(self, docs: Mapping[str, Mapping[str, str]]):
        self._index = {lg: _Bm25({name: search_words(texts.get(lg) or texts.get("en", "")) for name, texts in docs.items()})
                       for lg in ("en", "zh")}

    def __repr__(self) -> str:
        return f"BilingualIndex({len(self._index['en'].docs)} names, en+zh)"

    def scores(self, query: str) -> dict[str, float]:
        """Every skill's score for ``query``: its own language's index, plus the other at ``OTHER_WEIGHT``."""
        terms = search_words(query)
        mine = query_lang(query)
        other: Lang = "en" if mine == "zh" else "zh"
        first, second = self._index[mine].scores(terms), self._index[other].scores(terms)
        return {name: first[name] + OTHER_WEIGHT * second[name] for name in first}

"""Discovery against injecting every skill: the skill site's search as a model sees it (docs/site.md).

The same asks as the routing measurement (``data/expense_asks.jsonl``: the bookkeeping desk's intents in
English and Chinese), put to a model that is offered the skill site's tools: either every skill the site
hosts (both desks, the weather read, the notifying write) or the site's search's top ``k`` for the ask
(``GET /api/skills/search``, run here in-process on a site in a temporary folder, so no server is needed).
One turn per ask; nothing runs. The figures are :func:`agentlab.evals.routing_eval.figures` (right tool,
invalid calls, no call, tools per turn, prompt tokens, hit rate), so the two measurements read the same.

On the site the bookkeeping desk's hand-over is ``expense_escalate_to_human`` (the after-sales desk has the
other): either counts as the right hand-over.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from ..models.cassette import CassetteModel, read_cassette
from ..models.interface import Model
from ..resources import data_file
from ..routing import Router
from ..scenarios.expense import Ledger, expense_prompt
from ..scratch import scratch_folder
from ..site.service import SkillSite
from ..site.skills import skill_tools
from ..tools import Registry
from .routing_eval import MODES, Ask, Mode, Turn, _Replayed, load_asks, one_turn

__all__ = ["SkillAsk", "discovery_cassette", "load_skill_asks", "measure_discovery", "replay_discovery", "search_hits",
           "site_asks"]

HAND_OVERS = ("escalate_to_human", "expense_escalate_to_human")


@lru_cache(maxsize=1)
def _site() -> SkillSite:
    # the shipped skills and both desks; its folder holds nothing that matters to a search, and goes when the
    # process ends (a folder of its own per kernel or command, left behind each time, filled a shared /tmp)
    return SkillSite(scratch_folder("agentlab-discovery-"))


#: skills shipped after the recordings of 2026-11-30: the turns offer the skills offered then, so a replay matches
#: its cassette; record again (benchmarks/bench_discovery_local.py) to measure with them
NOT_RECORDED = ("extract_page_text",)


def _registry(lang: str) -> Registry:
    skills = [s for s in _site().skills.values() if s.name not in NOT_RECORDED]
    return skill_tools(skills, lang)  # type: ignore[arg-type]


def site_asks(asks: Iterable[Ask] | None = None) -> list[Ask]:
    """The asks with the site's names for the hand-over: either desk's hand-over is a right one."""
    out = []
    for a in asks if asks is not None else load_asks():
        if set(a.right) & set(HAND_OVERS):
            a = dataclasses.replace(a, needed=tuple(n for n in a.needed if n not in HAND_OVERS),
                                    needed_any=tuple(dict.fromkeys((*a.needed_any, *HAND_OVERS))))
        out.append(a)
    return out


def _search(query: str, k: int, lang: str) -> list[str]:
    return [r["skill_name"] for r in _site().search(query, k, None, lang)["results"]]  # type: ignore[arg-type]


@lru_cache(maxsize=2)
def _one_language(lang: str) -> Router:
    return Router(_registry(lang), k=6)


def _recorded_search(query: str, k: int, lang: str) -> list[str]:
    """The search the cassettes were recorded with (2026-11-30): one language's index, the caller's. The site now
    searches both (agentlab/site/search.py); replaying a recording must offer what was offered then."""
    scores = _one_language(lang).scores(query)
    return [n for n, sc in sorted(scores.items(), key=lambda x: (-x[1], x[0])) if sc > 0][:k]


def measure_discovery(model: Model | Callable[[str], Model], asks: Iterable[Ask], *, search: bool,
                      k: int = 6, searcher: Callable[[str, int, str], list[str]] = _search) -> list[Turn]:
    """Each ask once, offering every skill (``search=False``) or the site search's top ``k`` (``searcher``)."""
    mode: Mode = "routed" if search else "all"
    turns = []
    for ask in site_asks(asks):
        registry = _registry(ask.lang)
        every = registry.names
        offered = every
        if search:
            found = searcher(ask.ask, k, ask.lang)
            offered = [n for n in every if n in found] or every  # nothing matched: the loop shows everything
        messages = [{"role": "system", "content": expense_prompt(ask.lang, state=Ledger())},
                    {"role": "user", "content": ask.ask}]
        turns.append(one_turn(model, ask, mode, registry, offered, messages))
    return turns


def discovery_cassette(size: str) -> Path:
    """Where the discovery turns of the local model ``size`` are recorded."""
    return data_file("cassettes") / f"site-discovery-{size}.jsonl"


def replay_discovery(source: str | Path, asks: Sequence[Ask] | None = None, *, k: int = 6) -> dict[Mode, list[Turn]]:
    """Both modes again from a recording, with no model; a turn recorded with other specs is refused."""
    path = Path(source) if isinstance(source, Path) or str(source).endswith(".jsonl") else discovery_cassette(str(source))
    entries: dict[str, dict] = {}
    for e in read_cassette(path):
        entries.setdefault(str(e.get("label")), e)
    done = {label.split("#", 1)[0] for label in entries}
    both = [a for a in (asks if asks is not None else load_asks()) if all(f"{a.id}/{m}" in done for m in MODES)]

    def model_of(label: str) -> Model:
        entry = entries.get(label)
        if entry is None:
            raise ValueError(f"{path.name}: {label} was recorded with other skill specs than now; record it again")
        return _Replayed(CassetteModel(path, label), entry, f"{path.name}: {label}")

    return {mode: measure_discovery(model_of, both, search=mode == "routed", k=k, searcher=_recorded_search)
            for mode in MODES}


@dataclasses.dataclass(frozen=True)
class SkillAsk:
    """One thing a person asks the site for, in Chinese and in English, and the skill that does it."""

    id: str
    skill: str
    zh: str
    en: str


def load_skill_asks(path: str | Path | None = None) -> list[SkillAsk]:
    """The search's ask set (``data/skill_asks.jsonl``): both desks' skills and the shipped ones."""
    import json
    source = Path(path) if path is not None else data_file("skill_asks.jsonl")
    return [SkillAsk(**json.loads(line)) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]


def search_hits(asks: Iterable[SkillAsk] | None = None, *, lang: str = "zh", header: str = "en",
                tops: Sequence[int] = (1, 3)) -> dict[str, float]:
    """How often the site's search puts the expected skill first (``top1``) or in its top 3 (``top3``), asked in
    ``lang`` by a caller whose Accept-Language is ``header`` (``en``: the default, as when none is sent)."""
    asks = list(asks if asks is not None else load_skill_asks())
    out = {}
    for top in tops:
        hits = sum(a.skill in _search(getattr(a, lang), top, header) for a in asks)
        out[f"top{top}"] = hits / max(len(asks), 1)
    return out

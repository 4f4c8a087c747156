"""A scenario is data plus tools: a starting state, the tools over it, a system prompt.

Later scenarios (expense booking, tools behind an HTTP skill site) plug in the
same way; loops, evaluation and notebooks only ever see a :class:`Scenario`.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..guards import GuardConfig
from ..i18n import Lang
from ..resources import data_file
from ..tools import Registry

__all__ = ["Scenario", "contract_specs", "in_language"]


@dataclass(frozen=True)
class Scenario:
    """Args:
        make_state: a fresh, private copy of the world (orders, refunds...).
        make_registry: the tools bound to one state, in a language.
        snapshot: the parts of a state a check or a person looks at afterwards.
    """

    name: str
    title: Mapping[str, str]
    system_prompt: Mapping[str, str]
    make_state: Callable[[], Any]
    make_registry: Callable[..., Registry]
    snapshot: Callable[[Any], dict]
    apply: Callable[[Any, dict], None] | None = None  # set a case's starting state on a fresh state
    # the system prompt for a turn, from the state (its clock), the session and the loop; None: the fixed one
    build_prompt: Callable[..., str] | None = None
    step_budget: int | None = None  # model turns per user turn, when the desk sets its own (the bookkeeping desk: 5)
    context_budget: int | None = None  # tokens of conversation the guarded desk keeps (trimmed in whole blocks)
    # the suite's fakes meet the chat API's rules (a broken history is a 400, a long one too long) and read
    # today's date from the prompt (agentlab.models.DatedModel)
    strict_api: bool = False
    # a participant's own desk (docs/capstone.md) says three more things the shipped desks keep elsewhere:
    # its loop's policy (retries, step budget...; None: every guard at its default), the calls the pre-launch
    # checks act with (``read``, ``write``, ``risky``: [tool, args]; ``wrong``: [tool, bad args, corrected args]),
    # and its own regression suites (JSONL files, every case run on this desk)
    guards: GuardConfig | None = None
    calls: Mapping[str, Sequence[Any]] | None = None
    cases: tuple[str | Path, ...] = ()

    def __repr__(self) -> str:
        return f"Scenario({self.name!r})"

    def prompt(self, lang: Lang = "en", *, state: Any = None, session: Any = None, naive: bool = False) -> str:
        """The system prompt for one turn: built per turn (today's date, the user...) where the desk does
        that; ``naive=True`` gives the naive variant's prompt (a date frozen into it)."""
        if self.build_prompt is None:
            return self.system_prompt[lang]
        return self.build_prompt(lang, state=state, session=session, naive=naive)

    def setup(self, lang: Lang = "en", *, start: dict | None = None, **kwargs: Any) -> tuple[Any, Registry]:
        """A fresh state (with a case's ``start`` changes applied) and its registry."""
        state = self.make_state()
        if start:
            if self.apply is None:
                raise ValueError(f"scenario {self.name!r} takes no starting state")
            self.apply(state, start)
        return state, self.make_registry(state, lang=lang, **kwargs)


def contract_specs(desk: str, lang: Lang = "en") -> dict[str, dict]:
    """A desk's tool contracts (``data/<desk>_tools.json``) by name, in ``lang``: the model reads the
    descriptions in the user's language (``data/<desk>_tools.zh.json``); the schemas are the same."""
    specs = {s["function"]["name"]: s["function"]
             for s in json.loads(data_file(f"{desk}_tools.json").read_text(encoding="utf-8"))}
    return in_language(specs, desk, lang)


def in_language(specs: dict[str, dict], desk: str, lang: Lang) -> dict[str, dict]:
    """``specs`` (tool name -> its function spec) with the descriptions of ``data/<desk>_tools.zh.json`` in Chinese.
    A tool or a field that file does not name keeps its own words: a dataset read from this machine (the retail
    store's) may hold one the file was not written for."""
    if lang != "zh":
        return specs
    words = json.loads(data_file(f"{desk}_tools.zh.json").read_text(encoding="utf-8"))
    out = {}
    for name, spec in specs.items():
        zh = words.get(name)
        if not isinstance(zh, dict):
            out[name] = spec
            continue
        fields = zh.get("fields", {})
        params = spec.get("parameters") or {}
        props = {k: {**v, "description": fields[k]} if k in fields else v
                 for k, v in (params.get("properties") or {}).items()}
        out[name] = {**spec, "description": zh.get("description", spec.get("description", "")),
                     "parameters": {**params, "properties": props} if params else params}
    return out

"""A scenario is data plus tools: a starting state, the tools over it, a system prompt.

Later scenarios (expense booking, tools behind an HTTP skill site) plug in the
same way; loops, evaluation and notebooks only ever see a :class:`Scenario`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..i18n import Lang
from ..tools import Registry

__all__ = ["Scenario"]


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

    def __repr__(self) -> str:
        return f"Scenario({self.name!r})"

    def setup(self, lang: Lang = "en", *, start: dict | None = None, **kwargs: Any) -> tuple[Any, Registry]:
        """A fresh state (with a case's ``start`` changes applied) and its registry."""
        state = self.make_state()
        if start:
            if self.apply is None:
                raise ValueError(f"scenario {self.name!r} takes no starting state")
            self.apply(state, start)
        return state, self.make_registry(state, lang=lang, **kwargs)

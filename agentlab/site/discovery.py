"""Which skills a caller sees, and how it finds one: the listing, BM25 search, one skill, the 404 with a hint."""
from __future__ import annotations

from collections.abc import Mapping

from ..errors import make_error
from ..i18n import Lang, joined, t
from ..names import suggest
from ..routing import BilingualIndex
from .keys import ApiKey
from .replies import HttpReply, reply
from .skills import Skill, skill_texts

__all__ = ["Catalog"]

_LISTED = ("skill_name", "display_name", "description", "tags", "input_schema", "rate_class", "timeout", "limits",
           "idempotency", "version")


class Catalog:
    """The site's skills as a caller discovers them (only those its key allows, when it sent one)."""

    def __init__(self, skills: Mapping[str, Skill]):
        self.skills = skills
        self._search = BilingualIndex(skill_texts(skills.values()))  # both languages, whatever the header

    def visible(self, key: ApiKey | None) -> list[Skill]:
        return [s for s in self.skills.values() if key is None or key.allows(s.name)]

    def listing(self, key: ApiKey | None, lang: Lang) -> dict:
        return {"skills": [{k: v for k, v in s.meta.to_dict(lang).items() if k in _LISTED} for s in self.visible(key)]}

    def search(self, query: str, k: int, key: ApiKey | None, lang: Lang) -> dict:
        """The ``k`` skills whose texts, in either language, best match ``query`` (BM25), with scores; ``lang``
        only says which language the results are written in."""
        allowed = {s.name for s in self.visible(key)}
        scores = self._search.scores(query)
        ranked = sorted(((n, sc) for n, sc in scores.items() if n in allowed and sc > 0), key=lambda x: (-x[1], x[0]))
        listed = {s["skill_name"]: s for s in self.listing(key, lang)["skills"]}
        return {"query": query, "k": k, "results": [{**listed[n], "score": round(sc, 4)} for n, sc in ranked[:k]]}

    def describe(self, name: str, lang: Lang) -> HttpReply:
        skill = self.skills.get(name)
        if skill is None:
            return self.unknown(name, lang)
        return HttpReply(200, skill.meta.to_dict(lang))

    def unknown(self, name: str, lang: Lang, key: ApiKey | None = None) -> HttpReply:
        """404 with every skill the caller can use and the closest name when one is clearly meant."""
        names = [s.name for s in self.visible(key)]
        closest = suggest(name, names)
        hint = {lg: t("hint.closest_tool", lg, name=closest, tools=joined(names, lg, "list")) if closest
                else t("hint.tools", lg, tools=joined(names, lg, "list")) for lg in ("en", "zh")}
        extra = {"available": names, "closest": closest}
        return reply(make_error("UNKNOWN_TOOL", _key="site.unknown_skill", name=name, hint=hint, extra=extra), lang,
                     status=404)

"""Who may call what, and how often: the key (401), the whitelist (403), the body (400/413), the
Idempotency-Key (400/428), the rate and the quota (429), and the cap on refused calls a key may send."""
from __future__ import annotations

import traceback
from dataclasses import replace
from typing import Any

from ..errors import make_error
from ..i18n import Lang, joined, t
from .discovery import Catalog
from .keys import ApiKey, KeyStore
from .limits import Limiter, RedisLimiter
from .replies import HttpReply, StoreDown, bad_body, call_store, read_body, reply
from .skills import Skill

__all__ = ["REFUSALS_PER_MINUTE", "Gate", "quota_used"]

#: refused calls (4xx) a key may send in a minute before it hears 429 and its lines go to the overflow log
REFUSALS_PER_MINUTE = 60


class Gate:
    """The checks in front of a skill, in the order the HTTP contract fixes. The keys and the limiter are
    read through the site at each call (a test, or an operator, may swap either)."""

    def __init__(self, site: Any, catalog: Catalog):
        self.site, self.catalog = site, catalog

    @property
    def keys(self) -> KeyStore:
        return self.site.keys

    @property
    def limiter(self) -> Limiter | RedisLimiter:
        return self.site.limiter

    def authorize(self, api_key: str | None, lang: Lang) -> tuple[ApiKey | None, HttpReply | None]:
        """The key's record, or the 401 reply; :class:`StoreDown` when the keys cannot be read."""
        if api_key is not None and (len(api_key) > 200 or not api_key.isprintable()):
            api_key = None  # no key is that long or holds control characters: refused like a missing one
        record = call_store(self.keys.check, api_key)
        if record is None:
            hint = {lg: t("site.no_key.hint", lg) for lg in ("en", "zh")}
            return None, reply(make_error("UNAUTHENTICATED", _key="site.no_key", hint=hint), lang)
        return record, None

    def admit(self, name: str, skill: Skill | None, key: ApiKey, raw_body: bytes, idem: str | None,
              lang: Lang, *, count: bool = True, key_in: str = "header") -> tuple[HttpReply | None, Any]:
        """The refusal, if any, and the arguments of a well-formed body. ``count=False`` leaves a read's rate
        and quota to the caller (:meth:`limit`, where a call to shared limits may wait for their store).
        ``key_in``: where this caller sends a write's key (``header``; ``meta``, MCP's ``_meta``), as a write
        without one is told: an MCP client cannot send the header it was told to."""
        if skill is None:
            return self.catalog.unknown(name, lang, key), None
        if not key.allows(name):
            names = [s.name for s in self.catalog.visible(key)]
            hint = {lg: t("site.not_allowed.hint", lg, allowed=joined(names, lg, "list") or "-") for lg in ("en", "zh")}
            return reply(make_error("PERMISSION_DENIED", _key="site.not_allowed", name=name, hint=hint), lang,
                         status=403), None
        args, problem = read_body(raw_body, self.site.max_body)
        if problem is not None:
            return bad_body(problem, lang, self.site.max_body), None
        if idem is not None and not (1 <= len(idem) <= 200 and idem.isascii() and idem.isprintable()):
            return reply(make_error("BAD_REQUEST", _key="site.bad_idempotency_key"), lang, status=400), args
        if skill.meta.writes and not idem:
            said = "site.needs_idempotency_key" + (".meta" if key_in == "meta" else "")
            return reply(make_error("BAD_REQUEST", _key=said, name=name), lang, status=428), args
        if skill.meta.writes or not count:
            return None, args  # a write is counted once it has its claim: a replay or a wait runs nothing
        return self.limit(key, skill, lang), args

    def limit(self, key: ApiKey, skill: Skill, lang: Lang) -> HttpReply | None:
        """429 when ``key`` is past the skill's rate or its own quota; else the call is counted."""
        return self._limited(call_store(self.limiter.admit, key, skill.name, skill.meta.per_minute), skill, lang)

    async def limit_async(self, key: ApiKey, skill: Skill, lang: Lang) -> HttpReply | None:
        """:meth:`limit` awaited on the running event loop, for limits kept in Redis (``admit_async``)."""
        try:
            verdict = await self.limiter.admit_async(key, skill.name, skill.meta.per_minute)  # type: ignore[union-attr]
        except Exception as exc:  # as call_store: the limits' failure, told apart from the site's bugs
            raise StoreDown(traceback.format_exc()) from exc
        return self._limited(verdict, skill, lang)

    def _limited(self, verdict: Any, skill: Skill, lang: Lang) -> HttpReply | None:
        name = skill.name
        if verdict.ok:
            return None
        if verdict.kind == "rate":
            err = make_error("RATE_LIMITED", _key="site.rate", name=name, limit=verdict.limit,
                             retry_after=verdict.retry_after)
        else:
            err = quota_used(verdict)
        return reply(err, lang, status=429, headers={"Retry-After": verdict.retry_after_header},
                     hint=None if verdict.kind == "rate" else "quota")

    def may_be_refused(self, key: ApiKey) -> bool:
        """Whether ``key`` is still within its refusals this minute (they never count toward its quota)."""
        try:
            return bool(self.limiter.admit(replace(key, quota=None), "(refused)", REFUSALS_PER_MINUTE).ok)
        except Exception:  # noqa: BLE001 - the limits cannot be read: the refusal stands as it is
            return True

    async def may_be_refused_async(self, key: ApiKey) -> bool:
        """:meth:`may_be_refused` awaited on the running event loop, for limits kept in Redis."""
        try:
            verdict = await self.limiter.admit_async(replace(key, quota=None), "(refused)",  # type: ignore[union-attr]
                                                     REFUSALS_PER_MINUTE)
            return bool(verdict.ok)
        except Exception:  # noqa: BLE001 - the limits cannot be read: the refusal stands as it is
            return True

    @staticmethod
    def refused_too_often(lang: Lang) -> HttpReply:
        message = {lg: t("site.refused_too_often", lg, limit=REFUSALS_PER_MINUTE) for lg in ("en", "zh")}
        return reply(make_error("RATE_LIMITED", message=message, retry_after=60), lang, status=429,
                     headers={"Retry-After": "60"}, hint="refused")


def quota_used(verdict: Any) -> Any:
    """The error of a key whose quota for the period is used up (a limiter's ``quota`` verdict), as the site and the
    gateway send it: said as a quota, with its own hint (tell the user, or ask the operator). The gateway said it as
    a per-minute rate, "temporary", with a Retry-After of hours."""
    periods = {lg: t(f"site.period.{verdict.period}", lg) for lg in ("en", "zh")}
    return make_error("RATE_LIMITED", message={lg: t("site.quota", lg, limit=verdict.limit, period=periods[lg])
                                               for lg in ("en", "zh")},
                      hint={lg: t("site.hint.quota", lg) for lg in ("en", "zh")}, retry_after=verdict.retry_after)

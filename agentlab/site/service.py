"""The skill site without HTTP: one request in, one status, body and headers out.

:class:`SkillSite` holds everything a request needs (skills, keys, limits, idempotency
claims, logs, the desks' shared state) and :meth:`SkillSite.execute` takes a call through
the checks in the order the HTTP contract fixes::

    key? (401) -> skill? (404) -> whitelisted? (403) -> body (400) -> Idempotency-Key for a write? (428)
    -> a read: rate and quota (429 + Retry-After) -> input schema (422)
    -> a write: claim the key (replay: the recorded reply + Idempotent-Replayed; other arguments: 422;
       running: wait for it, then replay, or 409), then rate and quota: a replay costs nothing
    -> business check, handler, output check (agentlab.site.execute) -> 200 / 422 / 500 / 504

``app.py`` only translates HTTP to these calls, so the contract can be tested with or
without a server.
"""
from __future__ import annotations

import hashlib
import json
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ToolError, make_error
from ..i18n import Lang, t
from ..jsonutil import canonical
from ..redis_store import RedisStore
from ..routing import Router
from ..schema import suggest
from ..store import SQLiteStore, Store, open_store
from .desks import desk_skills, desk_state
from .execute import Execution, body, http_status, input_problems, run_skill
from .keys import ApiKey, KeyStore
from .limits import Limiter, RedisLimiter
from .logs import SiteLogs
from .skills import Skill, SkillContext, load_skills, shipped_dir, skill_tools

__all__ = ["HttpReply", "SkillSite"]


@dataclass(frozen=True)
class HttpReply:
    """What goes back over HTTP."""

    status: int
    body: dict
    headers: Mapping[str, str] = field(default_factory=dict)


class SkillSite:
    """Skills, keys, limits, claims and logs under one data folder.

    Args:
        data_dir: ``keys.db``, ``idempotency.db``, ``logs/`` and what skills keep (the outbox, a cache).
        skills_dirs: more skill folders, after the shipped ones.
        desks: host the after-sales and bookkeeping desks' tools, over one shared state.
        clock: wall-clock seconds, for limits, quotas, leases and log times (injected in tests).
        store: where idempotency claims, rate windows and quotas live, as a URL
            (:func:`agentlab.store.open_store`): ``redis://host:port/db`` for several replicas sharing them
            (docs/site.md#several-replicas). Default: ``idempotency.db`` in ``data_dir``, limits in memory.
        lease_grace: a write's claim is leased for its timeout plus this; past it, a replica that never
            reported back left the outcome unknown.
    """

    def __init__(self, data_dir: str | Path, *, skills_dirs: Iterable[str | Path] = (), desks: bool = True,
                 extra: Iterable[Skill] = (), clock: Callable[[], float] = time.time, max_log_bytes: int = 5_000_000,
                 store: str | None = None, lease_grace: float = 60.0):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.state: dict[str, Any] = desk_state() if desks else {}
        found = (desk_skills(self.state) if desks else []) + load_skills(shipped_dir(), *skills_dirs) + list(extra)
        self.skills: dict[str, Skill] = {}
        for s in found:
            if s.name in self.skills:
                raise ValueError(f"skill {s.name!r} is defined twice")
            self.skills[s.name] = s
        self.keys = KeyStore(self.data_dir / "keys.db", clock=clock)
        self.claims: Store = open_store(store) if store else SQLiteStore(self.data_dir / "idempotency.db", clock=clock)
        self.limiter: Limiter | RedisLimiter = Limiter(clock=clock)
        if isinstance(self.claims, RedisStore):  # shared state goes where the claims go
            self.limiter = RedisLimiter(self.claims.client, prefix=self.claims.prefix, clock=clock)
        self.lease_grace = lease_grace
        self.logs = SiteLogs(self.data_dir / "logs", clock=clock, max_bytes=max_log_bytes)
        self._ctx = SkillContext(self.data_dir, self.state)
        self._routers = {lg: Router(skill_tools(self.skills.values(), lg), k=6) for lg in ("en", "zh")}

    def __repr__(self) -> str:
        return f"SkillSite({len(self.skills)} skills, {self.data_dir})"

    # ---------------------------------------------------------------- discovery
    def authorize(self, api_key: str | None, lang: Lang) -> tuple[ApiKey | None, HttpReply | None]:
        """The key's record, or the 401 reply."""
        record = self.keys.check(api_key)
        if record is None:
            hint = {lg: t("site.no_key.hint", lg) for lg in ("en", "zh")}
            return None, _reply(make_error("UNAUTHENTICATED", _key="site.no_key", hint=hint), lang)
        return record, None

    def visible(self, key: ApiKey | None) -> list[Skill]:
        return [s for s in self.skills.values() if key is None or key.allows(s.name)]

    def listing(self, key: ApiKey | None, lang: Lang) -> dict:
        fields = ("skill_name", "display_name", "description", "tags", "input_schema", "rate_class", "timeout",
                  "limits", "idempotency", "version")
        return {"skills": [{k: v for k, v in s.meta.to_dict(lang).items() if k in fields} for s in self.visible(key)]}

    def search(self, query: str, k: int, key: ApiKey | None, lang: Lang) -> dict:
        """The ``k`` skills whose names and descriptions best match ``query`` (BM25), with scores."""
        allowed = {s.name for s in self.visible(key)}
        scores = self._routers[lang].scores(query)
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
        listed = ", ".join(names)
        hint = {lg: t("hint.closest_tool", lg, name=closest, tools=listed) if closest else t("hint.tools", lg, tools=listed)
                for lg in ("en", "zh")}
        extra = {"available": names, "closest": closest}
        return _reply(make_error("UNKNOWN_TOOL", _key="site.unknown_skill", name=name, hint=hint, extra=extra), lang,
                      status=404)

    # ---------------------------------------------------------------- execution
    def execute(self, name: str, raw_body: bytes, *, api_key: str | None, idempotency_key: str | None,
                session_id: str | None, request_id: str | None = None, lang: Lang = "en") -> HttpReply:
        """One ``POST /api/skills/{name}/execute``, logged in call, error and audit."""
        request_id = request_id or uuid.uuid4().hex[:16]
        t0 = time.perf_counter()
        key: ApiKey | None = None
        skill = self.skills.get(name)
        args: Any = None
        try:
            key, refused = self.authorize(api_key, lang)
            if refused is None and key is not None:
                refused = self._admit(name, skill, key, raw_body, idempotency_key, lang)
            if refused is None and key is not None and skill is not None:
                args = json.loads(raw_body)["arguments"]
                reply = self._run(skill, args, key, idempotency_key, lang, request_id, session_id)
            else:
                reply = refused  # type: ignore[assignment]  # one of the checks above refused
        except Exception:  # noqa: BLE001 - the site's own state (keys, claims, limits) is unreachable
            # nothing ran, or the claim keeps a write from running twice; the caller may try again later
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=name, status=503,
                            code="UNAVAILABLE", stack=traceback.format_exc())
            reply = _reply(make_error("UNAVAILABLE"), lang, status=503, headers={"Retry-After": "5"})
        ms = round((time.perf_counter() - t0) * 1000, 2)
        who = {"key_id": key.id, "key_name": key.name} if key is not None else {}
        ids: dict[str, Any] = {"request_id": request_id, "session_id": session_id}
        self.logs.write("call", **ids, skill=name, arguments=args, status=reply.status, latency_ms=ms,
                        success=reply.body.get("success"), result=reply.body.get("result"),
                        error=(reply.body.get("error") or {}).get("code"),
                        replayed=reply.headers.get("Idempotent-Replayed") == "true", **who)
        if skill is not None and skill.meta.writes and key is not None:
            self.logs.write("audit", **ids, action="execute", skill=name, status=reply.status, **who,
                            idempotency_key=_short_hash(idempotency_key),
                            replayed=reply.headers.get("Idempotent-Replayed") == "true")
        return HttpReply(reply.status, reply.body, {**reply.headers, "X-Request-Id": request_id})

    def _admit(self, name: str, skill: Skill | None, key: ApiKey, raw_body: bytes, idem: str | None,
               lang: Lang) -> HttpReply | None:
        if skill is None:
            return self.unknown(name, lang, key)
        if not key.allows(name):
            allowed = ", ".join(s.name for s in self.visible(key)) or "-"
            hint = {lg: t("site.not_allowed.hint", lg, allowed=allowed) for lg in ("en", "zh")}
            return _reply(make_error("PERMISSION_DENIED", _key="site.not_allowed", name=name, hint=hint), lang,
                          status=403)
        try:
            parsed = json.loads(raw_body or b"null")
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("arguments", {}), dict):
            return _reply(make_error("BAD_REQUEST", _key="site.bad_body"), lang, status=400)
        if idem is not None and not 1 <= len(idem) <= 200:  # bounded, like everything a caller sends
            return _reply(make_error("BAD_REQUEST", _key="site.needs_idempotency_key", name=name), lang, status=400)
        if skill.meta.writes and not idem:
            return _reply(make_error("BAD_REQUEST", _key="site.needs_idempotency_key", name=name), lang, status=428)
        if skill.meta.writes:
            return None  # a write is counted once it has its claim: a replay or a wait runs nothing, costs nothing
        return self._limit(key, skill, lang)

    def _limit(self, key: ApiKey, skill: Skill, lang: Lang) -> HttpReply | None:
        name = skill.name
        verdict = self.limiter.admit(key, name, skill.meta.per_minute)
        if not verdict.ok:
            if verdict.kind == "rate":
                err = make_error("RATE_LIMITED", _key="site.rate", name=name, limit=verdict.limit,
                                 retry_after=verdict.retry_after)
            else:
                periods = {lg: t(f"site.period.{verdict.period}", lg) for lg in ("en", "zh")}
                err = make_error("RATE_LIMITED", message={lg: t("site.quota", lg, limit=verdict.limit, period=periods[lg])
                                                          for lg in ("en", "zh")}, retry_after=verdict.retry_after)
            return _reply(err, lang, status=429, headers={"Retry-After": verdict.retry_after_header})
        return None

    def _run(self, skill: Skill, args: dict, key: ApiKey, idem: str | None, lang: Lang, request_id: str,
             session_id: str | None) -> HttpReply:
        problems = input_problems(skill, args)  # before any claim: an invalid call holds no key
        if problems:
            return _reply(make_error("INVALID_ARGS", problems=problems), lang)
        if not skill.meta.writes:
            outcome = run_skill(skill, args, self._ctx, lang=lang, check_input=False)
            self._log_internal(outcome, skill, request_id, session_id)
            return HttpReply(outcome.status, outcome.body)
        claim_key = f"{key.id}:{skill.name}:{idem}"
        fingerprint = canonical({"skill": skill.name, "arguments": args})
        claim = self.claims.claim(claim_key, fingerprint, lease=skill.meta.timeout + self.lease_grace)
        if claim.status == "in_flight":  # someone runs it now: wait for its reply rather than run it twice
            claim = self._wait(claim_key, fingerprint, skill.meta.timeout + 1.0)
        if claim.status == "replay":
            recorded = json.loads(claim.result or "{}")
            return HttpReply(recorded["status"], recorded["body"], {"Idempotent-Replayed": "true"})
        if claim.status == "conflict":
            hint = {lg: t("site.key_reused.hint", lg) for lg in ("en", "zh")}
            return _reply(make_error("CONFLICT", _key="site.key_reused", hint=hint), lang, status=422)
        if claim.status == "in_flight":
            return _reply(make_error("IN_PROGRESS"), lang)
        if claim.status == "unknown":
            return _reply(make_error("OUTCOME_UNKNOWN"), lang)
        limited = self._limit(key, skill, lang)
        if limited is not None:
            self.claims.release(claim_key)
            return limited
        # what the backend dedups on is scoped to the caller too: the desk's own map is one per site,
        # and a key sent by one tenant must never answer another tenant's call with its effect
        ctx = SkillContext(self.data_dir, self.state, _scoped(key.id, skill.name, idem), self._ctx.lock)

        def late(outcome: Execution) -> None:  # a write that timed out finished after all: that settles the key
            self.claims.finish(claim_key, json.dumps({"status": outcome.status, "body": outcome.body}))
            self._log_internal(outcome, skill, request_id, session_id)

        outcome = run_skill(skill, args, ctx, lang=lang, check_input=False, on_late=late)
        self._log_internal(outcome, skill, request_id, session_id)
        if outcome.pending is not None:
            pass  # the claim stays "running" until the write reports back (late)
        elif not outcome.ran:
            self.claims.release(claim_key)  # refused by its check: nothing happened, the same call may come back
        elif outcome.internal is not None:
            self.claims.mark_unknown(claim_key)  # it failed unexpectedly half-way: a person must look
        elif not outcome.ok and outcome.body["error"]["category"] == "transient":
            self.claims.release(claim_key)  # the skill said nothing happened and a resend may work
        else:
            self.claims.finish(claim_key, json.dumps({"status": outcome.status, "body": outcome.body}))
        return HttpReply(outcome.status, outcome.body)

    def _wait(self, claim_key: str, fingerprint: str, seconds: float) -> Any:
        deadline = time.monotonic() + seconds
        while True:
            time.sleep(0.02)
            claim = self.claims.claim(claim_key, fingerprint, lease=seconds)
            if claim.status != "in_flight" or time.monotonic() > deadline:
                if claim.status == "new":  # released by its runner (refused): not ours to run now, say so
                    self.claims.release(claim_key)
                    return _InFlight()
                return claim

    def _log_internal(self, outcome: Execution, skill: Skill, request_id: str, session_id: str | None) -> None:
        if outcome.internal is not None:
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=skill.name,
                            status=outcome.status, code=(outcome.body.get("error") or {}).get("code"),
                            stack=outcome.internal)

    def create_key(self, name: str, skills: Iterable[str] = ("*",), *, quota: int | None = None,
                   period: str = "day") -> tuple[str, ApiKey]:
        """A new key (returned once) and its record; the creation is audited, the key is not in the log."""
        key, record = self.keys.create(name, skills, quota=quota, period=period)
        self.logs.write("audit", request_id=uuid.uuid4().hex[:16], session_id=None, action="key_created",
                        key_id=record.id, key_name=name, skills=list(record.skills), quota=quota, period=period)
        return key, record


@dataclass(frozen=True)
class _InFlight:
    status: str = "in_flight"
    result: str | None = None


def _reply(error: ToolError, lang: Lang, *, status: int | None = None, headers: Mapping[str, str] | None = None) -> HttpReply:
    return HttpReply(status or http_status(error), body(None, error, lang), dict(headers or {}))


def _scoped(key_id: str, skill: str, idem: str | None) -> str:
    """The idempotency key a handler (and the backend behind it) sees: the caller's key id and the skill
    folded in, so equal keys from two tenants are two keys below the site as they are in its claims."""
    return hashlib.sha256(f"{key_id}\x00{skill}\x00{idem}".encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _short_hash(value: str | None) -> str | None:
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()[:16]

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
import math
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ToolError, make_error
from ..i18n import Lang, LocalizedError, t
from ..jsonutil import MAX_DEPTH, canonical, lone_surrogates, parse_strict
from ..names import suggest
from ..redis_store import RedisStore
from ..routing import Router
from ..store import SQLiteStore, Store, open_store, quietly
from .desks import desk_skills, desk_state
from .execute import Execution, body, http_status, input_problems, run_skill
from .keys import ApiKey, KeyStore
from .limits import Limiter, RedisLimiter
from .logs import SiteLogs
from .skills import Skill, SkillContext, load_skills, shipped_dir, skill_tools

__all__ = ["MAX_BODY", "REFUSALS_PER_MINUTE", "HttpReply", "SkillSite", "StoreDown", "bad_body", "read_body"]

#: the largest body an execute call may send; larger is refused before it is parsed
MAX_BODY = 1_000_000
#: refused calls (4xx) a key may send in a minute before it hears 429 and its lines go to the overflow log
REFUSALS_PER_MINUTE = 60


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
        max_body: the largest execute body, in bytes (413 above it).
        volatile_store: accept a Redis that may lose what it recorded in a crash (no ``appendonly`` with
            ``appendfsync always``). Off by default: a claim lost in an outage would let a resend run a write
            twice (docs/site.md#what-the-store-must-keep). For a throwaway demo only.
    """

    def __init__(self, data_dir: str | Path, *, skills_dirs: Iterable[str | Path] = (), desks: bool = True,
                 extra: Iterable[Skill] = (), clock: Callable[[], float] = time.time, max_log_bytes: int = 5_000_000,
                 store: str | None = None, lease_grace: float = 60.0, max_body: int = MAX_BODY,
                 volatile_store: bool = False):
        if not (isinstance(lease_grace, (int, float)) and math.isfinite(lease_grace) and lease_grace >= 0):
            raise LocalizedError("site.bad_lease_grace", got=lease_grace)
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.desks = desks
        self._tenants: dict[str, dict[str, Any]] = {}  # API key id -> its own back office (the desks' state)
        self._tenants_lock = threading.Lock()
        found = (desk_skills() if desks else []) + load_skills(shipped_dir(), *skills_dirs) + list(extra)
        self.skills: dict[str, Skill] = {}
        for s in found:
            if s.name in self.skills:
                raise ValueError(f"skill {s.name!r} is defined twice")
            self.skills[s.name] = s
        self.keys = KeyStore(self.data_dir / "keys.db", clock=clock)
        self.claims: Store = open_store(store) if store else SQLiteStore(self.data_dir / "idempotency.db", clock=clock)
        self.limiter: Limiter | RedisLimiter = Limiter(clock=clock)
        if isinstance(self.claims, RedisStore):  # shared state goes where the claims go
            why = None if volatile_store else self.claims.durability()
            if why is not None:
                raise LocalizedError("site.volatile_store", why=why)
            self.limiter = RedisLimiter(self.claims.client, prefix=self.claims.prefix, clock=clock)
        self.lease_grace = float(lease_grace)
        self.max_body = max_body
        self.logs = SiteLogs(self.data_dir / "logs", clock=clock, max_bytes=max_log_bytes)
        self._ctx = SkillContext(self.data_dir)  # its lock serialises the files skills append to
        self._routers = {lg: Router(skill_tools(self.skills.values(), lg), k=6) for lg in ("en", "zh")}

    def __repr__(self) -> str:
        return f"SkillSite({len(self.skills)} skills, {self.data_dir})"

    def state_for(self, key_id: str) -> dict[str, Any]:
        """The back office one API key works on: its own orders, refunds and ledger. Another tenant can neither
        read it nor change it (docs/site.md#tenants). Made on the key's first call."""
        with self._tenants_lock:
            if key_id not in self._tenants:
                self._tenants[key_id] = desk_state() if self.desks else {}
            return self._tenants[key_id]

    # ---------------------------------------------------------------- discovery
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
        """One ``POST /api/skills/{name}/execute``, logged in call, error and audit.

        Who is to blame decides the status: the caller's mistake is a 4xx with a sentence showing what
        was expected; only a store that cannot be reached before anything ran is 503 (try again); a write
        whose record could not be kept after it ran is "outcome unknown" (never resent); the site's own
        bug is 500, logged with its stack, never retryable.
        """
        request_id = request_id or uuid.uuid4().hex[:16]
        t0 = time.perf_counter()
        key: ApiKey | None = None
        skill = self.skills.get(name)
        args: Any = None
        try:
            key, refused = self.authorize(api_key, lang)
            if refused is None and key is not None:
                refused, args = self._admit(name, skill, key, raw_body, idempotency_key, lang)
            if refused is None and key is not None and skill is not None:
                reply = self._run(skill, args, key, idempotency_key, lang, request_id, session_id)
            else:
                reply = refused  # type: ignore[assignment]  # one of the checks above refused
        except StoreDown as down:  # the site's own state (keys, claims, limits) is unreachable: nothing ran
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=name, status=503,
                            code="UNAVAILABLE", stack=down.stack)
            reply = _reply(make_error("UNAVAILABLE"), lang, status=503, headers={"Retry-After": "5"})
        except Exception:  # noqa: BLE001 - a bug of the site itself: logged, never retryable, never shown
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=name, status=500,
                            code="TOOL_ERROR", stack=traceback.format_exc())
            reply = _reply(make_error("TOOL_ERROR"), lang, status=500)
        overflow = reply.status == 429
        if key is not None and 400 <= reply.status < 500 and not overflow and not self._may_be_refused(key):
            # refused calls cost nothing to send and each is a line in the log: past its share, a key hears
            # 429 and its lines go to the capped overflow log, never pushing other tenants' calls out
            reply, overflow = self._refused_too_often(lang), True
        ms = round((time.perf_counter() - t0) * 1000, 2)
        who = {"key_id": key.id, "key_name": key.name} if key is not None else {}
        ids: dict[str, Any] = {"request_id": request_id, "session_id": session_id}
        self.logs.write("call", **ids, skill=name, arguments=args, status=reply.status, latency_ms=ms,
                        success=reply.body.get("success"), result=reply.body.get("result"),
                        error=(reply.body.get("error") or {}).get("code"),
                        replayed=reply.headers.get("Idempotent-Replayed") == "true", overflow=overflow, **who)
        if skill is not None and skill.meta.writes and key is not None and not overflow:
            self.logs.write("audit", **ids, action="execute", skill=name, status=reply.status, **who,
                            idempotency_key=_short_hash(idempotency_key),
                            replayed=reply.headers.get("Idempotent-Replayed") == "true")
        return HttpReply(reply.status, reply.body, {**reply.headers, "X-Request-Id": request_id})

    def authorize(self, api_key: str | None, lang: Lang) -> tuple[ApiKey | None, HttpReply | None]:
        """The key's record, or the 401 reply; :class:`StoreDown` when the keys cannot be read."""
        if api_key is not None and (len(api_key) > 200 or not api_key.isprintable()):
            api_key = None  # no key is that long or holds control characters: refused like a missing one
        record = _store(self.keys.check, api_key)
        if record is None:
            hint = {lg: t("site.no_key.hint", lg) for lg in ("en", "zh")}
            return None, _reply(make_error("UNAUTHENTICATED", _key="site.no_key", hint=hint), lang)
        return record, None

    def _admit(self, name: str, skill: Skill | None, key: ApiKey, raw_body: bytes, idem: str | None,
               lang: Lang) -> tuple[HttpReply | None, Any]:
        """The refusal, if any, and the arguments of a well-formed body."""
        if skill is None:
            return self.unknown(name, lang, key), None
        if not key.allows(name):
            allowed = ", ".join(s.name for s in self.visible(key)) or "-"
            hint = {lg: t("site.not_allowed.hint", lg, allowed=allowed) for lg in ("en", "zh")}
            return _reply(make_error("PERMISSION_DENIED", _key="site.not_allowed", name=name, hint=hint), lang,
                          status=403), None
        args, problem = read_body(raw_body, self.max_body)
        if problem is not None:
            return bad_body(problem, lang, self.max_body), None
        if idem is not None and not (1 <= len(idem) <= 200 and idem.isascii() and idem.isprintable()):
            return _reply(make_error("BAD_REQUEST", _key="site.bad_idempotency_key"), lang, status=400), args
        if skill.meta.writes and not idem:
            return _reply(make_error("BAD_REQUEST", _key="site.needs_idempotency_key", name=name), lang,
                          status=428), args
        if skill.meta.writes:
            return None, args  # a write is counted once it has its claim: a replay or a wait runs nothing
        return self._limit(key, skill, lang), args

    def _may_be_refused(self, key: ApiKey) -> bool:
        """Whether ``key`` is still within its refusals this minute (they never count toward its quota)."""
        try:
            return bool(self.limiter.admit(replace(key, quota=None), "(refused)", REFUSALS_PER_MINUTE).ok)
        except Exception:  # noqa: BLE001 - the limits cannot be read: the refusal stands as it is
            return True

    def _refused_too_often(self, lang: Lang) -> HttpReply:
        message = {lg: t("site.refused_too_often", lg, limit=REFUSALS_PER_MINUTE) for lg in ("en", "zh")}
        return _reply(make_error("RATE_LIMITED", message=message, retry_after=60), lang, status=429,
                      headers={"Retry-After": "60"})

    def _limit(self, key: ApiKey, skill: Skill, lang: Lang) -> HttpReply | None:
        name = skill.name
        verdict = _store(self.limiter.admit, key, name, skill.meta.per_minute)
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
            ctx = SkillContext(self.data_dir, self.state_for(key.id), None, self._ctx.lock)
            outcome = run_skill(skill, args, ctx, lang=lang, check_input=False)
            self._log_internal(outcome, skill, request_id, session_id)
            return HttpReply(outcome.status, outcome.body)
        claim_key = f"{key.id}:{skill.name}:{idem}"
        fingerprint = canonical({"skill": skill.name, "arguments": args})
        lease = skill.meta.timeout + self.lease_grace
        claim = _store(self.claims.claim, claim_key, fingerprint, lease=lease)
        if claim.status == "in_flight":  # someone runs it now: wait for its reply rather than run it twice
            claim = self._wait(claim_key, fingerprint, skill.meta.timeout + 1.0, lease)
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
        try:
            limited = self._limit(key, skill, lang)
        except StoreDown:
            quietly(self.claims.release, claim_key)  # nothing ran
            raise
        if limited is not None:
            quietly(self.claims.release, claim_key)
            return limited
        # what the backend dedups on is scoped to the caller too: the desk's own map is one per site,
        # and a key sent by one tenant must never answer another tenant's call with its effect
        ctx = SkillContext(self.data_dir, self.state_for(key.id), _scoped(key.id, skill.name, idem), self._ctx.lock)

        def late(outcome: Execution) -> None:  # a write that timed out finished after all: that settles the key
            quietly(self.claims.finish, claim_key, json.dumps({"status": outcome.status, "body": outcome.body}))
            self._log_internal(outcome, skill, request_id, session_id)

        outcome = run_skill(skill, args, ctx, lang=lang, check_input=False, on_late=late)
        self._log_internal(outcome, skill, request_id, session_id)
        # From here the effect may have happened: a store that fails now must never read "retry" to the
        # caller, or a resend (after the store comes back, or comes back empty) would do it twice.
        if outcome.pending is not None:
            return HttpReply(outcome.status, outcome.body)  # the claim stays "running" until the write reports back
        if not outcome.ran:
            settled = quietly(self.claims.release, claim_key)  # refused by its check: nothing happened
        elif outcome.internal is not None:
            settled = quietly(self.claims.mark_unknown, claim_key)  # it failed unexpectedly half-way: a person looks
        elif not outcome.ok and outcome.body["error"]["category"] == "transient":
            settled = quietly(self.claims.release, claim_key)  # the skill said nothing happened; a resend may work
        else:
            settled = quietly(self.claims.finish, claim_key, json.dumps({"status": outcome.status, "body": outcome.body}))
        if not settled and outcome.ran:
            # it ran, and its record could not be kept: nobody can promise a resend would not repeat it
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=skill.name, status=409,
                            code="OUTCOME_UNKNOWN", stack="the idempotency store failed after the write ran: "
                            f"{self.claims!r}; the claim stays running until its lease ends, then reads unknown")
            return _reply(make_error("OUTCOME_UNKNOWN"), lang)
        return HttpReply(outcome.status, outcome.body)

    def _wait(self, claim_key: str, fingerprint: str, seconds: float, lease: float) -> Any:
        deadline = time.monotonic() + seconds
        while True:
            time.sleep(0.02)
            claim = _store(self.claims.claim, claim_key, fingerprint, lease=lease)
            # "new": its runner released it (refused, rate limited, nothing happened): this request now holds
            # the claim and goes through every check itself, so it hears its own 429 or runs once
            if claim.status != "in_flight" or time.monotonic() > deadline:
                return claim

    def _log_internal(self, outcome: Execution, skill: Skill, request_id: str, session_id: str | None) -> None:
        if outcome.internal is not None:
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=skill.name,
                            status=outcome.status, code=(outcome.body.get("error") or {}).get("code"),
                            stack=outcome.internal)

    def create_key(self, name: str, skills: Iterable[str] = ("*",), *, quota: int | None = None,
                   period: str = "day", operator: bool = False) -> tuple[str, ApiKey]:
        """A new key (returned once) and its record; the creation is audited, the key is not in the log.
        ``operator``: the key also opens the call log (every tenant's calls, docs/site.md#pages)."""
        key, record = self.keys.create(name, skills, quota=quota, period=period, operator=operator)
        self.logs.write("audit", request_id=uuid.uuid4().hex[:16], session_id=None, action="key_created",
                        key_id=record.id, key_name=name, skills=list(record.skills), quota=quota, period=period,
                        operator=operator)
        return key, record


class StoreDown(Exception):
    """The site's own state (keys, claims, limits) could not be reached. Raised only before anything ran."""

    def __init__(self, stack: str):
        super().__init__("store unreachable")
        self.stack = stack


def _store(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Call the keys, claims or limits; a failure of theirs is :class:`StoreDown`, told apart from the site's bugs."""
    try:
        return fn(*args, **kw)
    except Exception as exc:
        raise StoreDown(traceback.format_exc()) from exc


def read_body(raw: bytes, limit: int = MAX_BODY) -> tuple[dict | None, str | None]:
    """The arguments of ``{"arguments": {...}}``, or the reason the body is not that (a catalogue key's tail)."""
    if len(raw) > limit:
        return None, "too_large"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not_utf8"
    parsed, failure = parse_strict(text or "null", max_depth=MAX_DEPTH + 2)
    if failure is not None:
        return None, "not_json"
    if not isinstance(parsed, dict) or "arguments" not in parsed or not isinstance(parsed["arguments"], dict):
        return None, "shape"
    if lone_surrogates(parsed):
        return None, "surrogate"
    return parsed["arguments"], None


def bad_body(problem: str, lang: Lang, limit: int = MAX_BODY) -> HttpReply:
    """The 4xx for a body :func:`read_body` refused: what was wrong, and the shape that is expected."""
    message = {lg: t(f"site.bad_body.{problem}", lg, limit=limit) + " " + t("site.bad_body", lg) for lg in ("en", "zh")}
    return _reply(make_error("BAD_REQUEST", message=message), lang, status=413 if problem == "too_large" else 400)


def _reply(error: ToolError, lang: Lang, *, status: int | None = None, headers: Mapping[str, str] | None = None) -> HttpReply:
    return HttpReply(status or http_status(error), body(None, error, lang), dict(headers or {}))


def _scoped(key_id: str, skill: str, idem: str | None) -> str:
    """The idempotency key a handler (and the backend behind it) sees: the caller's key id and the skill
    folded in, so equal keys from two tenants are two keys below the site as they are in its claims."""
    return hashlib.sha256(f"{key_id}\x00{skill}\x00{idem}".encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _short_hash(value: str | None) -> str | None:
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()[:16]

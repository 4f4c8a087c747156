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
without a server. Each step is its own module: ``discovery.py`` (what a caller sees and finds),
``admission.py`` (key, whitelist, body, limits), ``claims.py`` (a write's idempotency claim, a
small state machine), ``execute.py`` (the skill itself), ``replies.py`` (replies and bodies),
``logs.py``; :class:`SkillSite` holds them together and logs every call.
"""
from __future__ import annotations

import math
import threading
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import make_error
from ..i18n import Lang, LocalizedError
from ..jsonutil import canonical
from ..redis_store import RedisStore
from ..store import SQLiteStore, Store, open_store
from ..workers import NoWorker
from .admission import REFUSALS_PER_MINUTE, Gate
from .claims import WriteClaim, answer, transition
from .desks import desk_skills, desk_state
from .discovery import Catalog
from .execute import Execution, Handoff, Steps, input_problems, run_steps, run_steps_async, run_steps_in_worker, skill_steps
from .keys import ApiKey, KeyStore
from .limits import Limiter, RedisLimiter
from .logs import SiteLogs
from .replies import MAX_BODY, HttpReply, StoreDown, bad_body, read_body, reply, scoped, short_hash
from .skills import Skill, SkillContext, load_skills, shipped_dir

T = TypeVar("T")

__all__ = ["MAX_BODY", "REFUSALS_PER_MINUTE", "HttpReply", "SkillSite", "StoreDown", "bad_body", "read_body"]


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
        self.catalog = Catalog(self.skills)
        self.gate = Gate(self, self.catalog)

    def __repr__(self) -> str:
        return f"SkillSite({len(self.skills)} skills, {self.data_dir})"

    def state_for(self, key_id: str) -> dict[str, Any]:
        """The back office one API key works on: its own orders, refunds and ledger. Another tenant can neither
        read it nor change it (docs/site.md#tenants). Made on the key's first call."""
        with self._tenants_lock:
            if key_id not in self._tenants:
                self._tenants[key_id] = desk_state() if self.desks else {}
            return self._tenants[key_id]

    # ---------------------------------------------------------------- discovery and admission (their modules)
    def visible(self, key: ApiKey | None) -> list[Skill]:
        return self.catalog.visible(key)

    def listing(self, key: ApiKey | None, lang: Lang) -> dict:
        return self.catalog.listing(key, lang)

    def search(self, query: str, k: int, key: ApiKey | None, lang: Lang) -> dict:
        """The ``k`` skills whose names and descriptions best match ``query`` (BM25), with scores."""
        return self.catalog.search(query, k, key, lang)

    def describe(self, name: str, lang: Lang) -> HttpReply:
        return self.catalog.describe(name, lang)

    def unknown(self, name: str, lang: Lang, key: ApiKey | None = None) -> HttpReply:
        """404 with every skill the caller can use and the closest name when one is clearly meant."""
        return self.catalog.unknown(name, lang, key)

    def authorize(self, api_key: str | None, lang: Lang) -> tuple[ApiKey | None, HttpReply | None]:
        """The key's record, or the 401 reply; :class:`StoreDown` when the keys cannot be read."""
        return self.gate.authorize(api_key, lang)

    # ---------------------------------------------------------------- execution
    def execute(self, name: str, raw_body: bytes, *, api_key: str | None, idempotency_key: str | None,
                session_id: str | None, request_id: str | None = None, lang: Lang = "en",
                checked: ApiKey | None = None, key_in: str = "header") -> HttpReply:
        """One ``POST /api/skills/{name}/execute``, logged in call, error and audit.

        Who is to blame decides the status: the caller's mistake is a 4xx with a sentence showing what
        was expected; only a store that cannot be reached before anything ran is 503 (try again); a write
        whose record could not be kept after it ran is "outcome unknown" (never resent); the site's own
        bug is 500, logged with its stack, never retryable. ``checked``: the record of ``api_key``
        when the caller has just looked it up (the HTTP route does, before it reads the body). ``key_in``: where
        the caller sends a write's key (``header``, or ``meta``: MCP's ``_meta``), as a write without one is told.
        """
        return run_steps(self._steps(name, raw_body, api_key=api_key, idempotency_key=idempotency_key,
                                     session_id=session_id, request_id=request_id, lang=lang, checked=checked,
                                     key_in=key_in))

    async def execute_async(self, name: str, raw_body: bytes, *, api_key: str | None, idempotency_key: str | None,
                            session_id: str | None, request_id: str | None = None, lang: Lang = "en",
                            checked: ApiKey | None = None) -> HttpReply:
        """:meth:`execute` on the running event loop, for a call :meth:`runs_on_loop` accepts: the checks,
        the schemas and the logs run on the loop, the skill's own code in one worker thread, awaited."""
        return await run_steps_async(self._steps(name, raw_body, api_key=api_key, idempotency_key=idempotency_key,
                                                 session_id=session_id, request_id=request_id, lang=lang,
                                                 checked=checked))

    async def execute_in_worker(self, name: str, raw_body: bytes, *, api_key: str | None, idempotency_key: str | None,
                                session_id: str | None, request_id: str | None = None, lang: Lang = "en",
                                checked: ApiKey | None = None, alone: bool = False) -> HttpReply:
        """:meth:`execute` in one worker thread, awaited on the running event loop, for any call (a write): the
        skill's handler runs in that same thread and the loop keeps its deadline (:func:`run_steps_in_worker`).
        ``alone``: no other call is in progress on the loop (its thread may then wait for a write's worker)."""
        skill = self.skills.get(name)
        writes = skill is not None and skill.meta.writes  # a name kept for a skill only: never one a caller made up
        request_id = request_id or uuid.uuid4().hex[:16]
        try:
            return await run_steps_in_worker(self._steps(name, raw_body, api_key=api_key,
                                                         idempotency_key=idempotency_key, session_id=session_id,
                                                         request_id=request_id, lang=lang, checked=checked),
                                             check_every=skill.meta.timeout if skill is not None else 1.0,
                                             name=f"{name}:write" if writes else "", alone=alone and writes)
        except NoWorker as exc:  # no worker for the call (out of threads or descriptors): none of it ran, no claim
            if exc.started:
                raise
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=name, status=503,
                            code="UNAVAILABLE", stack=str(exc))
            result = reply(make_error("UNAVAILABLE"), lang, status=503, headers={"Retry-After": "5"})
            return HttpReply(result.status, result.body, {**result.headers, "X-Request-Id": request_id})

    #: the largest body a call on the event loop may have: parsing and checking it holds every other request
    LOOP_BODY = 64_000

    def runs_on_loop(self, name: str, raw_body: bytes, checked: ApiKey | None) -> bool:
        """Whether a call may be carried out on the event loop: nothing it does before or after the skill
        blocks. True for a read of a known skill, by a key already looked up, with a small body, when
        the rate windows are in this process's memory or handed to a worker thread (Redis: :meth:`_limits`).
        A write (its claim is a store's round trips) takes a thread for the whole call."""
        skill = self.skills.get(name)
        return (checked is not None and skill is not None and not skill.meta.writes
                and len(raw_body) <= self.LOOP_BODY)

    def _limits(self, fn: Callable[[], T], aio: Callable[[], Awaitable[T]] | None = None) -> Steps[T]:
        """``fn()``, a call on the rate windows and quotas: at once when they are this process's memory; else
        (Redis) handed out like a skill's code, so that on the event loop their round trip (or a frozen
        server's 3 s) never holds the loop: awaited there as ``aio()`` when given (the round trip holds no
        thread either), else in a worker thread. Outside the loop ``fn`` runs in the calling thread."""
        if type(self.limiter) is Limiter:
            return fn()
        if not hasattr(self.limiter, "admit_async"):  # a limiter swapped in (a test's) that has only admit
            aio = None
        return (yield Handoff(fn, None, False, "limits", aio))

    def _steps(self, name: str, raw_body: bytes, *, api_key: str | None, idempotency_key: str | None,
               session_id: str | None, request_id: str | None, lang: Lang, checked: ApiKey | None,
               key_in: str = "header") -> Steps[HttpReply]:
        request_id = request_id or uuid.uuid4().hex[:16]
        t0 = time.perf_counter()
        key: ApiKey | None = None
        skill = self.skills.get(name)
        args: Any = None
        checks: dict[str, bool] = {}  # "valid": whether the body and arguments passed validation, once checked
        try:
            key, refused = (checked, None) if checked is not None else self.gate.authorize(api_key, lang)
            if refused is None and key is not None:
                refused, args = self.gate.admit(name, skill, key, raw_body, idempotency_key, lang, count=False,
                                                key_in=key_in)
                if refused is not None and args is None and refused.status in (400, 413):
                    checks["valid"] = False  # the body itself was refused (read_body): not JSON, not the shape
                if refused is None and skill is not None and not skill.meta.writes:
                    counted = key
                    refused = yield from self._limits(lambda: self.gate.limit(counted, skill, lang),
                                                      lambda: self.gate.limit_async(counted, skill, lang))
            if refused is None and key is not None and skill is not None:
                result = yield from self._run(skill, args, key, idempotency_key, lang, request_id,
                                              session_id, checks)
            else:
                result = refused  # type: ignore[assignment]  # one of the checks above refused
        except StoreDown as down:  # the site's own state (keys, claims, limits) is unreachable: nothing ran
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=name, status=503,
                            code="UNAVAILABLE", stack=down.stack)
            result = reply(make_error("UNAVAILABLE"), lang, status=503, headers={"Retry-After": "5"})
        except Exception:  # noqa: BLE001 - a bug of the site itself: logged, never retryable, never shown
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=name, status=500,
                            code="TOOL_ERROR", stack=traceback.format_exc())
            result = reply(make_error("TOOL_ERROR"), lang, status=500)
        overflow = False
        refusing = key
        if refusing is not None and 400 <= result.status < 500 \
                and not (yield from self._limits(lambda: self.gate.may_be_refused(refusing),
                                                 lambda: self.gate.may_be_refused_async(refusing))):
            # refused calls cost nothing to send and each is a line in the log: past its share, a key hears
            # 429 and its lines go to the capped overflow log, never pushing other tenants' calls out. A call
            # refused by its rate or quota is one of these refusals: within the share it is in the call log
            # (refused, with its code), so a skill's success rate counts it; past the share it keeps its own 429
            overflow = True
            if result.status != 429:
                result = self.gate.refused_too_often(lang)
        self._log_call(name, skill, key, args, result, idempotency_key, overflow, checks.get("valid"),
                       request_id=request_id, session_id=session_id, ms=round((time.perf_counter() - t0) * 1000, 2))
        return HttpReply(result.status, result.body, {**result.headers, "X-Request-Id": request_id})

    def _log_call(self, name: str, skill: Skill | None, key: ApiKey | None, args: Any, result: HttpReply,
                  idem: str | None, overflow: bool, valid: bool | None = None, *, request_id: str,
                  session_id: str | None, ms: float) -> None:
        """The call's line, and for a write its audit line (never for a caller past its share, nor for a write
        its rate or quota refused: nothing was written). ``valid``: whether the body and arguments passed
        validation; None when they were never checked (no key, a skill the key may not call, a rate limit)."""
        who = {"key_id": key.id, "key_name": key.name} if key is not None else {}
        ids: dict[str, Any] = {"request_id": request_id, "session_id": session_id}
        replayed = result.headers.get("Idempotent-Replayed") == "true"
        self.logs.write("call", **ids, skill=name, arguments=args, status=result.status, latency_ms=ms,
                        success=result.body.get("success"), result=result.body.get("result"),
                        error=(result.body.get("error") or {}).get("code"), replayed=replayed, overflow=overflow,
                        stage=(result.body.get("error") or {}).get("stage"),  # schema or semantic: the pages' pass rate
                        args_valid=valid, **who)
        if skill is not None and skill.meta.writes and key is not None and not overflow and result.status != 429:
            self.logs.write("audit", **ids, action="execute", skill=name, status=result.status, **who,
                            idempotency_key=short_hash(idem), replayed=replayed)

    def _run(self, skill: Skill, args: dict, key: ApiKey, idem: str | None, lang: Lang, request_id: str,
             session_id: str | None, checks: dict[str, bool]) -> Steps[HttpReply]:
        problems = input_problems(skill, args, lang)  # before any claim: an invalid call holds no key
        checks["valid"] = not problems
        if problems:
            return reply(make_error("INVALID_ARGS", problems=problems), lang)
        if not skill.meta.writes:
            ctx = SkillContext(self.data_dir, self.state_for(key.id), None, self._ctx.lock, lang)
            outcome = yield from skill_steps(skill, args, ctx, lang=lang, check_input=False)
            self._log_internal(outcome, skill, request_id, session_id)
            return HttpReply(outcome.status, outcome.body)
        return (yield from self._write(skill, args, key, idem, lang, request_id, session_id))

    def _write(self, skill: Skill, args: dict, key: ApiKey, idem: str | None, lang: Lang, request_id: str,
               session_id: str | None) -> Steps[HttpReply]:
        """A write under its claim: taken, answered without running unless NEW, then settled once."""
        claim = WriteClaim(self.claims, f"{key.id}:{skill.name}:{idem}",
                           canonical({"skill": skill.name, "arguments": args}),
                           lease=skill.meta.timeout + self.lease_grace, wait=skill.meta.timeout + 1.0)
        state, recorded = claim.take()
        early = answer(state, recorded, lang)
        if early is not None:
            return early
        try:  # the rate and the quota count a write only now: a replay or a wait costs nothing
            limited = self.gate.limit(key, skill, lang)
        except StoreDown:
            claim.release()  # nothing ran
            raise
        if limited is not None:
            claim.release()
            return limited
        # what the backend dedups on is scoped to the caller too: the desk's own map is one per site,
        # and a key sent by one tenant must never answer another tenant's call with its effect
        ctx = SkillContext(self.data_dir, self.state_for(key.id), scoped(key.id, skill.name, idem), self._ctx.lock,
                           lang)

        def late(outcome: Execution) -> None:  # a write that timed out finished after all: that settles the key
            claim.finish(outcome)
            self._log_internal(outcome, skill, request_id, session_id)

        outcome = yield from skill_steps(skill, args, ctx, lang=lang, check_input=False, on_late=late)
        self._log_internal(outcome, skill, request_id, session_id)
        # From here the effect may have happened: a store that fails now must never read "retry" to the
        # caller, or a resend (after the store comes back, or comes back empty) would do it twice.
        if not claim.apply(transition(outcome), outcome) and outcome.ran:
            # it ran, and its record could not be kept: nobody can promise a resend would not repeat it
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=skill.name, status=409,
                            code="OUTCOME_UNKNOWN", stack="the idempotency store failed after the write ran: "
                            f"{self.claims!r}; the claim stays running until its lease ends, then reads unknown")
            return reply(make_error("OUTCOME_UNKNOWN"), lang)
        return HttpReply(outcome.status, outcome.body)

    def _log_internal(self, outcome: Execution, skill: Skill, request_id: str, session_id: str | None) -> None:
        if outcome.internal is not None:
            self.logs.write("error", request_id=request_id, session_id=session_id, skill=skill.name,
                            status=outcome.status, code=(outcome.body.get("error") or {}).get("code"),
                            stack=outcome.internal)

    def close(self) -> None:
        """Write the log lines still waiting and close the log files and the limits' Redis connections (a site whose
        folder is about to go: a later call opens them again)."""
        self.logs.close()
        if isinstance(self.limiter, RedisLimiter):
            self.limiter.close()

    def create_key(self, name: str, skills: Iterable[str] = ("*",), *, quota: int | None = None,
                   period: str = "day", operator: bool = False) -> tuple[str, ApiKey]:
        """A new key (returned once) and its record; the creation is audited, the key is not in the log.
        ``operator``: the key also opens the call log (every tenant's calls, docs/site.md#pages)."""
        key, record = self.keys.create(name, skills, quota=quota, period=period, operator=operator)
        self.logs.write("audit", request_id=uuid.uuid4().hex[:16], session_id=None, action="key_created",
                        key_id=record.id, key_name=name, skills=list(record.skills), quota=quota, period=period,
                        operator=operator)
        return key, record

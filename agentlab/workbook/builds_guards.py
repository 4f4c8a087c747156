"""The build exercises of notebooks 00-09: the learner writes or changes working code, and the check runs it.

Each check takes what the learner wrote (a function, a config), runs it against the notebook's own faults
through a real loop on a scripted model, and says, in the learner's language, how many faults it now handles
and what still breaks ("2 of 3 faults handled. Still breaking: lost_reply: order A1001 was refunded 2 times.").
A stub (``None``, or a function whose body is ``...``) says "not yet"; code that raises gets a sentence naming
the error, never a traceback. The verdict goes to the trainer's view as notebook ``NNb`` (``build_ids()``,
``data/trainer/builds.json``), beside the notebook's look-up exercise. Model solutions live in
``data/trainer/solutions/``, which is never copied to participants.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..i18n import Lang, said, t
from ..tools import Registry
from . import exercises
from .exercises import Feedback, _say

__all__ = ["LOOSE_REFUND_SCHEMA", "build_answer_every_call", "build_business_key", "build_loop_limits",
           "build_refund_contract", "build_refund_failure", "build_refund_once", "build_resend",
           "build_tighter_contract", "build_which_guard",
           "build_write_check"]

_log = logging.getLogger(__name__)


class _LearnerRaised(Exception):
    """The learner's code raised: carried out of the loop, which would otherwise hide it from the model."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _raised(exc: BaseException, lang: Lang) -> str:
    detail = " ".join(str(exc).split())[:120]
    return t("build.raised", lang, error=type(exc).__name__, detail=detail or "-")


def _tally(notebook: str, broken: dict[str, str | None], lang: Lang, right: str) -> Feedback:
    """The verdict from each fault's outcome (None: handled; else what still breaks), reported as ``NNb``."""
    handled = sum(1 for v in broken.values() if v is None)
    total = len(broken)
    if handled == total:
        feedback = _say("right", t("build.all_handled", lang, total=total) + ("" if lang == "zh" else " ") + right, lang)
    else:
        still = ("；" if lang == "zh" else "; ").join(f"{fault}: {why}" for fault, why in broken.items() if why is not None)
        feedback = _say("wrong", t("build.some_handled", lang, handled=handled, total=total, still=still), lang)
    _send(feedback, notebook, f"{handled}/{total}")
    return feedback


def _send(feedback: Feedback, notebook: str, answer: str | None) -> None:
    try:
        exercises.report(feedback, f"{notebook}b", answer=answer)  # looked up here: a test can watch it
    except Exception as exc:  # noqa: BLE001 - a report never breaks the learner's cell
        _log.debug("progress report not sent: %s", type(exc).__name__)


def _not_yet(notebook: str, key: str, lang: Lang) -> Feedback:
    feedback = _say("not yet", t(key, lang), lang)
    _send(feedback, notebook, None)
    return feedback


def _wrong(notebook: str, text: str, lang: Lang) -> Feedback:
    feedback = _say("wrong", text, lang)
    _send(feedback, notebook, None)
    return feedback


# --- 00: a refund tool that refunds once, whatever the naive loop does ---------------------------------------------

_00_FAULTS = ("lost_reply", "duplicate_call", "repeat_call")


def _refunds_under(fn: Callable[..., Any], fault: str | None, lang: Lang) -> int:
    """Run notebook 00's refund task through the naive loop with the learner's ``create_refund``: the refunds made."""
    from ..models.faults import FAULTS, FaultyModel, inject_tool_fault
    from ..naive import run_naive
    from ..scenarios import aftersales
    from .demo import TASK, make_model

    desk, reg = aftersales.SCENARIO.setup(lang)
    raised: list[BaseException] = []

    def learner(**kwargs: Any) -> Any:
        try:
            return fn(desk, **kwargs)
        except Exception as exc:
            raised.append(exc)
            raise

    reg = Registry([replace(tool, fn=learner) if tool.name == "create_refund" else tool for tool in reg],
                   lang=reg.lang)
    model: Any = make_model(lang)
    if fault and FAULTS[fault].kind == "tool":
        reg = inject_tool_fault(reg, "create_refund", fault)
    elif fault:
        model = FaultyModel(model, fault, at_step=2)
    run_naive(model, reg, TASK[lang], system_prompt=aftersales.SYSTEM_PROMPT[lang],
              retry_everything=fault == "lost_reply")
    if raised:
        raise _LearnerRaised(raised[0])
    return sum(1 for r in desk.refunds if r["order_id"] == "A1001")


def build_refund_once(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """00: ``fn(desk, order_id, amount, reason, remark="")``, the refund tool the naive loop calls. Right when, under
    every fault of the notebook that refunded twice, order A1001 is refunded exactly once."""
    from ..scenarios import aftersales

    if fn is None:
        return _not_yet("00", "build.nb00.not_yet", lang)
    if not callable(fn):
        return _wrong("00", t("build.not_a_function", lang, name="my_create_refund"), lang)
    desk = aftersales.Desk()
    try:
        first = fn(desk, order_id="A1001", amount=199.0, reason="user_cancel")
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("00", _raised(exc, lang), lang)
    if first is None and not desk.refunds:
        return _not_yet("00", "build.nb00.not_yet", lang)
    broken: dict[str, str | None] = {}
    try:
        plain = _refunds_under(fn, None, lang)
        if plain != 1:
            return _wrong("00", t("build.nb00.no_fault", lang, n=plain), lang)
        for fault in _00_FAULTS:
            n = _refunds_under(fn, fault, lang)
            broken[fault] = None if n == 1 else t("build.nb00.refunds", lang, n=n)
    except _LearnerRaised as exc:
        return _wrong("00", _raised(exc.exc, lang), lang)
    return _tally("00", broken, lang, t("build.nb00.right", lang))


# --- 01: a refund contract that refuses the notebook's bad arguments and lets good ones through -------------------

_01_GOOD = ({"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"},
            {"order_id": "A1002", "amount": 59.9, "reason": "out_of_stock"},
            {"order_id": "A1003", "amount": 120, "reason": "price_error", "remark": "customer changed mind"})
_01_FAULTS = ("camel_case", "drop_required", "wrong_type", "out_of_enum", "out_of_range")


def _bad_arguments(fault: str, good: dict) -> str:
    """The arguments a model sends under ``fault``, made by the fault injector from the shipped after-sales contract
    (so they are the same whatever schema the learner wrote)."""
    import json

    from ..models.faults import mutate_call
    from ..models.interface import ToolCall
    from ..resources import data_file

    specs = json.loads(data_file("aftersales_tools.json").read_text(encoding="utf-8"))
    return mutate_call(fault, ToolCall("create_refund", json.dumps(good, ensure_ascii=False)), specs).arguments


def build_refund_contract(schema: Any, lang: Lang = "en") -> Feedback:
    """01: ``schema``, the JSON Schema of ``create_refund``'s arguments. Right when the validator, with that schema
    alone (no cleaning), lets the notebook's good refunds through and refuses the call under each argument fault."""
    if schema is None:
        return _not_yet("01", "build.nb01.not_yet", lang)
    if not isinstance(schema, dict):
        return _wrong("01", t("build.nb01.not_a_dict", lang, given=type(schema).__name__), lang)
    bad = {fault: _bad_arguments(fault, _01_GOOD[0]) for fault in _01_FAULTS}
    return _boundary("01", schema, _01_GOOD, bad, lang, t("build.nb01.right", lang))


def _boundary(notebook: str, schema: dict, good: tuple[dict, ...], bad: dict[str, str], lang: Lang,
              right: str) -> Feedback:
    """Check ``schema`` as ``create_refund``'s contract: every ``good`` call passes, each of ``bad`` is refused."""
    import json

    from ..schema import SchemaError
    from ..tools import Tool

    try:
        reg = Registry([Tool("create_refund", "Refund an order.", schema)], lang=lang)
        for args in good:
            checked = reg.check("create_refund", args, clean=False)
            if not checked.ok:
                return _wrong(notebook, t("build.nb01.refused_good", lang, args=json.dumps(args, ensure_ascii=False),
                                          error=checked.render(lang)), lang)
        broken: dict[str, str | None] = {
            fault: None if not reg.check("create_refund", raw, clean=False).ok else
            t("build.nb01.accepted", lang, args=raw) for fault, raw in bad.items()}
    except SchemaError as exc:
        return _wrong(notebook, t("build.nb01.no_compile", lang, why=said(exc, lang)), lang)
    except Exception as exc:  # noqa: BLE001 - a schema the compiler cannot read: a sentence, never a traceback
        return _wrong(notebook, _raised(exc, lang), lang)
    return _tally(notebook, broken, lang, right)


# --- 02: tighten a loose contract until the boundary refuses the notebook's bad calls ------------------------------

#: the contract a hurried desk shipped for create_refund: every call of notebook 02 passes it
LOOSE_REFUND_SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "order_id": {"type": "string", "description": "Order number, like A1001."},
    "amount": {"description": "Refund amount in yuan, e.g. 45."},
    "reason": {"type": "string", "description": "Why: user_cancel, out_of_stock or price_error."},
    "remark": {"type": "string", "description": "Optional note for the finance team."}}}
_02_GOOD = ({"order_id": "A1001", "amount": 45, "reason": "user_cancel"},
            {"order_id": "A1002", "amount": 199.0, "reason": "price_error", "remark": "wrong tag price"})
#: the notebook's bad create_refund calls (its camelCase one on create_refund, as the injector sends it)
_02_BAD = {"drop_required": '{"order_id": "A1001", "reason": "user_cancel"}',
           "wrong_type": '{"order_id": "A1001", "amount": "45元", "reason": "user_cancel"}',
           "out_of_enum": '{"order_id": "A1001", "amount": 45, "reason": "不想要了"}',
           "camel_case": '{"orderId": "A1001", "amount": 45, "reason": "user_cancel"}'}


def build_tighter_contract(fn: Callable[[dict], Any] | None, lang: Lang = "en") -> Feedback:
    """02: ``fn(schema)`` gets a copy of :data:`LOOSE_REFUND_SCHEMA` and returns it with constraints added (or
    changes it in place). Right when the boundary, with no cleaning, refuses each of the notebook's bad
    create_refund calls and still lets good refunds through."""
    import copy

    if fn is None:
        return _not_yet("02", "build.nb02.not_yet", lang)
    if not callable(fn):
        return _wrong("02", t("build.not_a_function", lang, name="my_tighten"), lang)
    schema = copy.deepcopy(LOOSE_REFUND_SCHEMA)
    try:
        out = fn(schema)
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("02", _raised(exc, lang), lang)
    if out is None:
        if schema == LOOSE_REFUND_SCHEMA:
            return _not_yet("02", "build.nb02.not_yet", lang)
        out = schema  # changed in place
    if not isinstance(out, dict):
        return _wrong("02", t("build.nb02.not_a_dict", lang, given=type(out).__name__), lang)
    return _boundary("02", out, _02_GOOD, dict(_02_BAD), lang, t("build.nb02.right", lang))


# --- 03: a failure the model can read and act on --------------------------------------------------------------------

#: order -> (what the model asks, what was paid): the backend refuses a refund above the order's amount
_03_CASES = {"A1001": (299.0, 199.0), "A1004": (999.0, 899.0)}


class _Reader:
    """A model that acts on what it reads, as a careful model does: it asks for ``asked``; told of a failure, it
    sends the paid amount when the error names the field ``amount`` and that amount, else the same call again."""

    name = "reader"

    def __init__(self, order_id: str, asked: float, paid: float, lang: Lang) -> None:
        self.order_id, self.asked, self.paid, self.lang = order_id, asked, paid, lang
        self.told: list[str] = []

    def complete(self, messages: list[dict], tools: list[dict]) -> Any:
        from ..models.interface import call, say, tool_calls

        last = messages[-1]
        if last.get("role") != "tool":
            return tool_calls(call("create_refund", self._args(self.asked)))
        text = str(last.get("content", ""))
        self.told.append(text)
        if '"ok": true' in text.replace('":true', '": true'):
            return say({"en": "Refunded.", "zh": "已退款。"}[self.lang])
        names_it = "amount" in text and f"{self.paid:g}" in text
        return tool_calls(call("create_refund", self._args(self.paid if names_it else self.asked)))

    def _args(self, amount: float) -> dict:
        return {"order_id": self.order_id, "amount": amount, "reason": "user_cancel"}


def build_refund_failure(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """03: ``fn(order_id, amount, paid)`` returns the :class:`~agentlab.errors.ToolFailure` the refund backend raises
    when asked for more than the order's amount. The check runs the guarded loop with a model that repairs its call
    only when the failure names the field and the amount that would be right. Right when, for each order, the run
    ends with one refund of the paid amount."""
    from ..errors import ToolFailure
    from ..guards import GuardConfig
    from ..loop import run_guarded
    from ..scenarios import aftersales

    if fn is None:
        return _not_yet("03", "build.nb03.not_yet", lang)
    if not callable(fn):
        return _wrong("03", t("build.not_a_function", lang, name="my_amount_failure"), lang)
    try:
        sample = fn("A1001", 299.0, 199.0)
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("03", _raised(exc, lang), lang)
    if sample is None:
        return _not_yet("03", "build.nb03.not_yet", lang)
    if not isinstance(sample, ToolFailure):
        return _wrong("03", t("build.nb03.not_a_failure", lang, given=type(sample).__name__), lang)
    broken: dict[str, str | None] = {}
    for order_id, (asked, paid) in _03_CASES.items():
        desk, reg = aftersales.SCENARIO.setup(lang)
        raised: list[BaseException] = []

        def backend(order_id: str, amount: float, reason: str, remark: str = "", idempotency_key: str | None = None,
                    *, _desk: Any = desk, _paid: float = paid, _raised_: list = raised) -> Any:
            if amount > _paid:
                try:
                    failure = fn(order_id, amount, _paid)
                except Exception as exc:
                    _raised_.append(exc)
                    raise
                if not isinstance(failure, ToolFailure):
                    _raised_.append(TypeError(f"returned {type(failure).__name__}, not a ToolFailure"))
                    raise RuntimeError("not a ToolFailure")
                raise failure
            return _desk.create_refund(order_id, amount, reason, remark, idempotency_key=idempotency_key)

        # the contract and the business rules let the call through: the backend is the one that knows
        reg = Registry([replace(tool, fn=backend, check=None, limits=None, needs_approval=None)
                        if tool.name == "create_refund" else tool for tool in reg], lang=reg.lang)
        model = _Reader(order_id, asked, paid, lang)
        run = run_guarded(model, reg, {"en": f"Refund order {order_id}, I changed my mind.",
                                       "zh": f"订单 {order_id} 不想要了，请退款。"}[lang],
                          system_prompt=aftersales.SYSTEM_PROMPT[lang], config=GuardConfig(), sleep=lambda s: None,
                          lang=lang)
        if raised:
            return _wrong("03", _raised(raised[0], lang), lang)
        made = [r["amount"] for r in desk.refunds if r["order_id"] == order_id]
        if made == [paid]:
            broken[order_id] = None
        elif not model.told:  # the failure ended the run: the model never read it
            broken[order_id] = t("build.nb03.stopped", lang, code=sample.error.code, status=run.status)
        else:
            told = " ".join(model.told[0].split())[:300]
            broken[order_id] = t("build.nb03.not_fixed", lang, asked=f"{asked:g}", paid=f"{paid:g}", told=told,
                                 status=run.status)
    return _tally("03", broken, lang, t("build.nb03.right", lang))


# --- 04: resend what is transient, with waits that grow; stop at once on what is not ------------------------------

#: the notebook's model-API faults: (fault, how many times in a row it fails). The last never recovers.
_04_FAULTS = {"api_429": ("api_429", 2), "api_timeout": ("api_timeout", 2), "api_500": ("api_500", 2),
              "api_401": ("api_401", 99), "api_500_never_recovers": ("api_500", 99)}
_04_MOST = 6  # resends after which the check calls it "resending forever"


class _Top:
    """An rng at the top of every range: a jittered wait shows its ceiling, so growth is visible."""

    def uniform(self, a: float, b: float) -> float:
        return max(a, b)

    def random(self) -> float:
        return 0.999


class _Resending:
    """Wraps a model: on a ModelError, asks the learner's ``fn(error, attempt, rng)`` how long to wait (None: stop),
    sleeps that long through ``sleeps`` and sends again."""

    def __init__(self, inner: Any, fn: Callable[..., Any], raised: list[BaseException]) -> None:
        self.inner, self.fn, self.raised = inner, fn, raised
        self.name = getattr(inner, "name", "model")
        self.sleeps: list[float] = []
        self.sends = 0

    def complete(self, messages: list[dict], tools: list[dict]) -> Any:
        from ..models.interface import ModelError

        attempt = 0
        while True:
            self.sends += 1
            try:
                return self.inner.complete(messages, tools)
            except ModelError as err:
                if attempt >= _04_MOST:
                    raise
                try:
                    wait = self.fn(err, attempt, _Top())
                    if wait is not None:
                        wait = float(wait)
                except Exception as exc:
                    self.raised.append(exc)
                    raise
                if wait is None:
                    raise
                self.sleeps.append(wait)
                attempt += 1


def build_resend(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """04: ``fn(error, attempt, rng)``, asked after the model API fails (``error`` a ModelError with ``code`` and
    ``retry_after``; ``attempt`` 0 for the first resend): the seconds to wait before resending, or None to stop.
    The check runs the naive loop, which resends nothing itself, with the learner's resends around the model under
    each of the notebook's API faults. Right when transient failures are resent with waits that grow (and never
    sooner than a Retry-After) until the refund is made, a 401 is never resent, and a failure that never recovers
    is given up after a few resends."""
    from ..models.faults import FaultyModel
    from ..models.interface import ModelError
    from ..naive import run_naive
    from ..scenarios import aftersales
    from .demo import TASK, make_model

    if fn is None:
        return _not_yet("04", "build.nb04.not_yet", lang)
    if not callable(fn):
        return _wrong("04", t("build.not_a_function", lang, name="my_wait"), lang)
    probe = ModelError("UNAVAILABLE", "500 Internal Server Error", status=500)
    try:
        if fn(probe, 0, _Top()) is None and fn(ModelError("TIMEOUT", "request timed out"), 0, _Top()) is None \
                and fn(ModelError("RATE_LIMITED", "429", status=429, retry_after=2.0), 0, _Top()) is None:
            return _not_yet("04", "build.nb04.not_yet", lang)
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("04", _raised(exc, lang), lang)
    broken: dict[str, str | None] = {}
    for label_, (fault, times) in _04_FAULTS.items():
        desk, reg = aftersales.SCENARIO.setup(lang)
        raised: list[BaseException] = []
        model = _Resending(FaultyModel(make_model(lang), fault, at_step=2, times=times, retry_after=2.0), fn, raised)
        run = run_naive(model, reg, TASK[lang], system_prompt=aftersales.SYSTEM_PROMPT[lang])
        if raised:
            return _wrong("04", _raised(raised[0], lang), lang)
        resends = len(model.sleeps)
        refunded = sum(1 for r in desk.refunds if r["order_id"] == "A1001")
        shown = ", ".join(f"{w:g}" for w in model.sleeps) or "-"
        if fault == "api_401":
            broken[label_] = None if resends == 0 else t("build.nb04.resent_fatal", lang, n=resends, waits=shown)
        elif times > _04_MOST:
            broken[label_] = None if resends < _04_MOST else t("build.nb04.forever", lang, n=resends)
        elif refunded != 1:
            broken[label_] = t("build.nb04.gave_up", lang, n=resends, status=run.status)
        elif fault == "api_429" and model.sleeps[0] < 2.0:
            broken[label_] = t("build.nb04.too_soon", lang, wait=f"{model.sleeps[0]:g}")
        elif fault != "api_429" and not model.sleeps[0] < model.sleeps[1]:  # a Retry-After may flatten a 429's
            broken[label_] = t("build.nb04.flat", lang, waits=shown)
        else:
            broken[label_] = None
    return _tally("04", broken, lang, t("build.nb04.right", lang))


# --- 05: the business key of a write --------------------------------------------------------------------------------

_05_CASES = ("lost_reply", "duplicate_call", "parallel_call", "reworded_repeat", "two_orders")


def _refund_call(order_id: str, amount: float, remark: str = "") -> Any:
    from ..models.interface import call

    return call("create_refund", {"order_id": order_id, "amount": amount, "reason": "user_cancel", "remark": remark})


def build_business_key(fn: Callable[[dict], Any] | None, lang: Lang = "en") -> Feedback:
    """05: ``fn(args)``, the business key of a refund: the loop keys ``create_refund`` with it. The check runs the
    guarded loop with only the key between a repeat and a second payment (the desk's status rule is off): under a
    lost reply, a repeated call, two calls in one message and a repeat with a reworded remark, order A1001 must be
    refunded once; asked to refund two orders of the same amount, each once."""
    import random

    from ..guards import GuardConfig
    from ..loop import run_guarded
    from ..models import ScriptedModel, say
    from ..models.faults import FaultyModel, inject_tool_fault
    from ..scenarios import aftersales
    from ..store import MemoryStore
    from .demo import TASK, make_model

    if fn is None:
        return _not_yet("05", "build.nb05.not_yet", lang)
    if not callable(fn):
        return _wrong("05", t("build.not_a_function", lang, name="my_business_key"), lang)
    try:
        sample = fn({"order_id": "A1001", "amount": 199.0, "reason": "user_cancel", "remark": ""})
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("05", _raised(exc, lang), lang)
    if sample is None:
        return _not_yet("05", "build.nb05.not_yet", lang)
    broken: dict[str, str | None] = {}
    for case in _05_CASES:
        desk, reg = aftersales.SCENARIO.setup(lang)
        raised: list[BaseException] = []

        def key(args: dict, _raised_: list = raised) -> str:
            try:
                return str(fn(args))
            except Exception as exc:
                _raised_.append(exc)
                raise

        # only the key stands between a repeat and a second payment: the status rule that refuses a refunded order
        # is off, as in the "every call, no key" column
        reg = Registry([replace(tool, business_key=key, check=None, limits=None, needs_approval=None)
                        if tool.name == "create_refund" else tool for tool in reg], lang=reg.lang)
        model: Any = make_model(lang)
        if case == "lost_reply":
            reg = inject_tool_fault(reg, "create_refund", case)
        elif case == "reworded_repeat":
            model = ScriptedModel([_refund_call("A1001", 199.0), _refund_call("A1001", 199.0, "customer changed mind"),
                                   say("Refunded.")])
        elif case == "two_orders":
            model = ScriptedModel([_refund_call("A1005", 19.9), _refund_call("A1008", 19.9), say("Refunded both.")])
        else:
            model = FaultyModel(model, case, at_step=2)
        run_guarded(model, reg, TASK[lang], system_prompt=aftersales.SYSTEM_PROMPT[lang],
                    config=GuardConfig(timeout=0.1), store=MemoryStore(), sleep=lambda s: None,
                    rng=random.Random(0), lang=lang)
        if raised:
            return _wrong("05", _raised(raised[0], lang), lang)
        per_order = {o: sum(1 for r in desk.refunds if r["order_id"] == o) for o in ("A1001", "A1005", "A1008")}
        if case == "two_orders":
            broken[case] = None if per_order["A1005"] == per_order["A1008"] == 1 else t(
                "build.nb05.blocked", lang, a=per_order["A1005"], b=per_order["A1008"], key=key(
                    {"order_id": "A1008", "amount": 19.9, "reason": "user_cancel", "remark": ""}))
        else:
            broken[case] = None if per_order["A1001"] == 1 else t("build.nb00.refunds", lang, n=per_order["A1001"])
    return _tally("05", broken, lang, t("build.nb05.right", lang))


# --- 06: a step budget and a breaker that stop runaways and let healthy runs finish --------------------------------

_06_PING_PONG_MOST = 12  # turns a runaway may cost: a little more than the longest healthy run (9)
_06_REPEATS_MOST = 4


def _06_ping_pong() -> Any:
    from ..models import ScriptedModel, call

    return ScriptedModel([call("get_order", {"order_id": f"A{1001 + i}"}) if i % 2 else
                          call("search_orders", {"phone": f"1380013{i:04d}"}) for i in range(40)], then="?")


def _06_repeater() -> Any:
    from ..models import ScriptedModel, call

    return ScriptedModel([call("get_order", {"order_id": "A1001"})] * 40, then="?")


def build_loop_limits(config: Any, lang: Lang = "en") -> Feedback:
    """06: ``config``, a GuardConfig. The check runs the guarded loop with it on the notebook's ping-pong model, its
    repeater and forty wandering but healthy runs (the budget sweep's). Right when the ping-pong is stopped within
    12 turns, the repeater within 4, and all forty healthy runs finish."""
    from ..guards import GuardConfig
    from ..loop import run_guarded
    from ..models import DistractedModel
    from ..scenarios import aftersales
    from ..store import MemoryStore
    from .demo import ANSWER, PLAN, TASK

    if config is None:
        return _not_yet("06", "build.nb06.not_yet", lang)
    if not isinstance(config, GuardConfig):
        return _wrong("06", t("build.nb06.not_a_config", lang, given=type(config).__name__), lang)
    broken: dict[str, str | None] = {}
    try:
        _, reg = aftersales.SCENARIO.setup(lang)
        pp = run_guarded(_06_ping_pong(), reg, "where is my order?", config=config, sleep=lambda s: None, lang=lang)
        broken["ping_pong"] = None if pp.steps <= _06_PING_PONG_MOST and pp.status != "done" else t(
            "build.nb06.ran_on", lang, steps=pp.steps, most=_06_PING_PONG_MOST, status=pp.status)
        _, reg = aftersales.SCENARIO.setup(lang)
        rp = run_guarded(_06_repeater(), reg, "where is my order?", config=config, sleep=lambda s: None, lang=lang)
        broken["repeat_call"] = None if rp.steps <= _06_REPEATS_MOST and rp.status != "done" else t(
            "build.nb06.ran_on", lang, steps=rp.steps, most=_06_REPEATS_MOST, status=rp.status)
        cut = []
        for seed in range(40):
            _, reg = aftersales.SCENARIO.setup(lang)
            run = run_guarded(DistractedModel(PLAN, ANSWER[lang], detour=0.35, seed=seed), reg, TASK[lang],
                              config=config, store=MemoryStore(), sleep=lambda s: None, lang=lang)
            if run.status != "done":
                cut.append(run.status)
    except Exception as exc:  # noqa: BLE001 - a setting the loop cannot use: a sentence, never a traceback
        return _wrong("06", _raised(exc, lang), lang)
    broken["healthy_runs"] = None if not cut else t("build.nb06.cut_off", lang, n=len(cut),
                                                    statuses=", ".join(sorted(set(cut))))
    return _tally("06", broken, lang, t("build.nb06.right", lang))


# --- 07: answer every call of a message -----------------------------------------------------------------------------

_07_CASES = ("two_at_once", "three_lookups", "bad_call_between")


def _07_model(case: str, lang: Lang) -> Any:
    from ..models import ScriptedModel, call, say, tool_calls

    done = say({"en": "Done.", "zh": "办好了。"}[lang])
    if case == "two_at_once":
        first = tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}),
                           call("escalate_to_human", {"summary": "User wants a call about shipped order A1002."}))
    elif case == "three_lookups":
        first = tool_calls(*(call("get_order", {"order_id": o}) for o in ("A1001", "A1002", "A1003")))
    else:
        first = tool_calls(call("get_order", {"order_id": "A1001"}), call("create_refund", '{"order_id": "A10'),
                           call("escalate_to_human", {"summary": "User wants a call about shipped order A1002."}))
    return ScriptedModel([first, done], name=case)


def _run_one(reg: Registry, lang: Lang) -> Callable[[dict], str]:
    """What the learner's step calls for one tool call (OpenAI format): the text the model reads, never a raise."""
    from ..errors import ToolFailure, make_error, render

    def run_one(tool_call: dict) -> str:
        fn_part = tool_call.get("function", {}) if isinstance(tool_call, dict) else {}
        name, raw = str(fn_part.get("name", "")), fn_part.get("arguments", "")
        if name not in reg.names:
            return render(reg.unknown_tool(name), lang)
        checked = reg.check(name, raw, lang=lang)
        if not checked.ok:
            return checked.render(lang)
        tool = reg[name]
        try:
            return render(None, lang, data=tool.fn(**(checked.args or {})) if tool.fn else None)
        except ToolFailure as exc:
            return render(exc.error, lang)
        except Exception:  # noqa: BLE001 - a tool's own crash: the model reads a code, never the text
            return render(make_error("TOOL_ERROR"), lang)

    return run_one


def build_answer_every_call(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """07: ``fn(message, run_one)``: ``message`` is the assistant message (its ``tool_calls`` in the OpenAI
    format), ``run_one(tool_call)`` runs one call and returns the text for the model; ``fn`` returns the ``tool``
    messages that must follow. The check runs a loop with that step on the notebook's message of two calls, a
    message of three look-ups, and one with a broken call between two good ones. Right when every call is
    answered once, in order, by its ``tool_call_id``, and every action asked for is done."""
    from ..scenarios import aftersales

    if fn is None:
        return _not_yet("07", "build.nb07.not_yet", lang)
    if not callable(fn):
        return _wrong("07", t("build.not_a_function", lang, name="my_tool_messages"), lang)
    broken: dict[str, str | None] = {}
    for case in _07_CASES:
        desk, reg = aftersales.SCENARIO.setup(lang)
        model = _07_model(case, lang)
        messages: list[dict] = [{"role": "user", "content": "Refund A1001, and please have someone call me about A1002."}]
        why: str | None = None
        for _ in range(3):
            reply = model.complete(list(messages), reg.specs())
            message = reply.message()
            messages.append(message)
            if not reply.tool_calls:
                break
            asked = [c.id for c in reply.tool_calls]
            try:
                out = fn(message, _run_one(reg, lang))
            except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
                return _wrong("07", _raised(exc, lang), lang)
            if out is None and case == _07_CASES[0]:
                return _not_yet("07", "build.nb07.not_yet", lang)
            out = list(out or []) if isinstance(out, (list, tuple)) else out
            if not isinstance(out, list) or not all(isinstance(m, dict) and m.get("role") == "tool" for m in out):
                return _wrong("07", t("build.nb07.not_messages", lang, given=type(out).__name__), lang)
            answered = [m.get("tool_call_id") for m in out]
            messages.extend(out)
            if answered != asked:
                why = t("build.nb07.protocol", lang, asked=", ".join(asked), answered=", ".join(map(str, answered))
                        or "-")
                break
        if why is None and case == "two_at_once" and (len(desk.refunds), len(desk.tickets)) != (1, 1):
            why = t("build.nb07.not_done", lang, refunds=len(desk.refunds), tickets=len(desk.tickets))
        if why is None and case == "bad_call_between" and len(desk.tickets) != 1:
            why = t("build.nb07.not_done", lang, refunds=len(desk.refunds), tickets=len(desk.tickets))
        broken[case] = why
    return _tally("07", broken, lang, t("build.nb07.right", lang))


# --- 08: which guard catches which fault ----------------------------------------------------------------------------

_08_FAULTS = ("camel_case", "duplicate_call", "api_429", "lost_reply", "repeat_call", "ping_pong")


def build_which_guard(guards: Any, lang: Lang = "en") -> Feedback:
    """08: ``guards``, a dict fault -> the GuardConfig field that catches it. The check runs the fault through the
    guarded loop twice, with every guard and with that one switched off: the guard catches the fault when switching
    it off changes how the run ends (graded on the final data, and its status)."""
    from ..guards import GUARDS, GuardConfig
    from .demo import compare_loops

    if guards is None or (isinstance(guards, dict) and all(v is None for v in guards.values())):
        return _not_yet("08", "build.nb08.not_yet", lang)
    if not isinstance(guards, dict):
        return _wrong("08", t("build.nb08.not_a_dict", lang, given=type(guards).__name__), lang)
    unknown = [str(g) for g in guards.values() if g is not None and g not in GUARDS]
    if unknown:
        return _wrong("08", t("build.nb08.unknown_guard", lang, given=", ".join(unknown), guards=", ".join(GUARDS)),
                      lang)
    base = GuardConfig(timeout=0.1)
    broken: dict[str, str | None] = {}
    for fault in _08_FAULTS:
        guard = guards.get(fault)
        if guard is None:
            broken[fault] = t("build.nb08.no_guard", lang)
            continue
        on, off = compare_loops(fault, config=base, lang=lang), compare_loops(fault, config=base.without(guard), lang=lang)
        same = (on.guarded_verdict.passed, on.guarded.status) == (off.guarded_verdict.passed, off.guarded.status)
        broken[fault] = None if not same else t("build.nb08.no_change", lang, guard=guard, status=off.guarded.status)
    return _tally("08", broken, lang, t("build.nb08.right", lang))


# --- 09: a guard the real-model recordings show is needed -----------------------------------------------------------


def _09_writes() -> list[tuple[str, str, dict, tuple[str, ...], bool]]:
    """Every write the recorded real models made in their guarded runs: (run, tool, args, what had been seen by then:
    the user's words and the read tools' results, whether every order id in the args is in it)."""
    import json
    import re

    from ..evals import load_cases, paired_cases, replay_cassette
    from ..resources import data_file
    from ..scenarios import aftersales

    cases = {c.id: c for c in load_cases(data_file("aftersales_cases.jsonl"))}
    _, tools = aftersales.SCENARIO.setup()
    out = []
    for path in sorted(data_file("cassettes").glob("aftersales-*.jsonl")):
        for r in replay_cassette(path, cases, "guarded", paired_cases(path, cases)):
            seen = [cases[r.case_id].task]
            for e in r.run.tool_events:
                tool = tools[e.tool_name] if e.tool_name in tools.names else None
                if tool is None or not e.exec_ok:
                    continue
                if not tool.side_effect:
                    seen.append(e.model_visible or "")
                    continue
                try:
                    args = json.loads(e.args_raw or "{}")
                except ValueError:
                    continue
                ids = re.findall(r"A\d{4}", json.dumps(args, ensure_ascii=False))
                asked = all(any(i in s for s in seen) for i in ids)
                out.append((f"{path.stem.split('-')[-1]} {r.case_id}", tool.name, args, tuple(seen), asked))
    return out


def build_write_check(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """09: ``fn(tool_name, args, seen)`` -> True to let a write run, False to stop it; ``seen`` lists what the user
    wrote and what the read tools returned so far. The check asks it about every write the recorded real models
    made in their guarded runs: each write on an order nobody mentioned (an id copied from a tool's description)
    must be stopped, and every write the user asked for must run."""
    if fn is None:
        return _not_yet("09", "build.nb09.not_yet", lang)
    if not callable(fn):
        return _wrong("09", t("build.not_a_function", lang, name="my_write_check"), lang)
    writes = _09_writes()
    try:
        said = [(run, tool, args, asked, fn(tool, dict(args), list(seen))) for run, tool, args, seen, asked in writes]
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("09", _raised(exc, lang), lang)
    if all(v is None for *_, v in said):
        return _not_yet("09", "build.nb09.not_yet", lang)
    broken: dict[str, str | None] = {}
    for run, tool, args, asked, allowed in said:
        if not asked:
            if allowed and broken.get(run) is None:
                import json
                broken[run] = t("build.nb09.let_through", lang, tool=tool, args=json.dumps(args, ensure_ascii=False))
            else:
                broken.setdefault(run, None)
    refused = [(run, tool) for run, tool, _args, asked, allowed in said if asked and not allowed]
    broken["asked_writes"] = None if not refused else t(
        "build.nb09.refused_asked", lang, n=len(refused), total=sum(1 for w in said if w[3]),
        example=f"{refused[0][0]}: {refused[0][1]}")
    return _tally("09", broken, lang, t("build.nb09.right", lang))

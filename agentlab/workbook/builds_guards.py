"""The build exercises of notebooks 00-04 (05-09: :mod:`agentlab.workbook.builds_loops`): the learner writes or changes working code, and the check runs it.

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
from itertools import pairwise
from typing import Any

from ..i18n import Lang, LocalizedError, colon, joined, label, py_reason, said, t
from ..tools import Registry
from . import exercises
from .exercises import Feedback, _say, clipped
from .learner_code import Said, bounded, returned_instead, said_none, unanswered

__all__ = ["build_refund_contract", "build_refund_failure", "build_refund_once", "build_resend", "build_tighter_contract",
           "loose_refund_schema"]

_log = logging.getLogger(__name__)


class _LearnerRaised(Exception):
    """The learner's code raised: carried out of the loop, which would otherwise hide it from the model."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _detail(exc: BaseException, lang: Lang, cut: int = 240) -> str:
    """What a learner's code raised, in a line: an error of agentlab's own says itself, whole, in the learner's
    language (its full stop left to the sentence around it); Python's own, plainly where it is a common one
    (:func:`~agentlab.i18n.py_reason`), cut."""
    text = said(exc, lang) if isinstance(exc, LocalizedError) else said(py_reason(exc), lang)[:cut]
    return " ".join(text.split()).rstrip("。.")


def _raised(exc: BaseException, lang: Lang) -> str:
    if isinstance(exc, Said):  # what the learner's code returned, not raised: said as it is
        return exc.sentence
    return t("build.raised", lang, error=type(exc).__name__, detail=_detail(exc, lang) or "-")


def _tally(notebook: str, broken: dict[str, str | None], lang: Lang, right: str, *, cases: bool = False) -> Feedback:
    """The verdict from each fault's outcome (None: handled; else what still breaks), reported as ``NNb``. ``cases``:
    what is tallied is not faults alone (notebook 06 counts its healthy runs too, which are no fault)."""
    handled = sum(1 for v in broken.values() if v is None)
    total = len(broken)
    suffix = "_cases" if cases else ""
    if handled == total:
        feedback = _say("right", t("build.all_handled" + suffix, lang, total=total) + ("" if lang == "zh" else " ")
                        + right, lang)
    else:
        still = joined((f"{fault}{colon(lang)}{why}" for fault, why in broken.items() if why is not None), lang)
        feedback = _say("wrong", t("build.some_handled" + suffix, lang, handled=handled, total=total, still=still),
                        lang)
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
    # the payments themselves, counted where the desk pays: the desk's list of refunds is the learner's to change, and
    # a tool that emptied it before paying again read as "refunded once" after paying three times
    paid: list[str] = []
    made: list[Any] = []  # each refund the desk made, by identity: one the desk's own key handed back again is no payment
    pay = desk.create_refund

    def counted(order_id: str, *args: Any, **kwargs: Any) -> Any:
        refund = pay(order_id, *args, **kwargs)
        if not any(refund is r for r in made):
            made.append(refund)
            paid.append(order_id)
        return refund

    desk.create_refund = counted

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
    return paid.count("A1001")


@bounded("00")
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
    if first is None and not desk.refunds and unanswered(fn):
        return _not_yet("00", "build.nb00.not_yet", lang)
    broken: dict[str, str | None] = {}
    try:
        plain = _refunds_under(fn, None, lang)
        if plain != 1:
            return _wrong("00", t("build.nb00.no_fault", lang, n=plain), lang)
        # another order on the same desk is another refund: a tool that refunds once in all guards every order but one
        try:
            fn(desk, order_id="A1005", amount=19.9, reason="out_of_stock")
        except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
            raise _LearnerRaised(exc) from None
        if sum(1 for r in desk.refunds if r["order_id"] == "A1005") != 1:
            return _wrong("00", t("build.nb00.other_order", lang), lang)
        for fault in _00_FAULTS:
            n = _refunds_under(fn, fault, lang)
            broken[fault] = None if n == 1 else t("build.nb00.refunds", lang, n=n)
        # what the tool answers a repeat: the refund on record, or something else (the verdict says which it saw)
        try:
            again = fn(desk, order_id="A1001", amount=199.0, reason="user_cancel")
        except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
            raise _LearnerRaised(exc) from None
    except _LearnerRaised as exc:
        return _wrong("00", _raised(exc.exc, lang), lang)
    recorded = [r for r in desk.refunds if r["order_id"] == "A1001"]
    try:
        handed_back = any(again is r or (isinstance(again, dict) and again == r) for r in recorded)
    except Exception:  # noqa: BLE001 - a learner's object that cannot be compared: not the refund on record
        handed_back = False
    right = t("build.nb00.right", lang) if handed_back else \
        t("build.nb00.right_other", lang, given=exercises._shown(again))
    return _tally("00", broken, lang, right)


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


@bounded("01")
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
                                          error=exercises.plain_problems(checked.error, lang)), lang)
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
def loose_refund_schema(lang: Lang = "en") -> dict[str, Any]:
    """Notebook 02's starting contract for create_refund: every field described (in ``lang``, as the learner reads
    it), none constrained. A new dict at each call, so a learner's change in place reaches nothing else."""
    def described(field: str, **kind: Any) -> dict[str, Any]:
        return {**kind, "description": t(f"build.nb02.field.{field}", lang)}
    return {"type": "object", "properties": {"order_id": described("order_id", type="string"),
                                             "amount": described("amount"), "reason": described("reason", type="string"),
                                             "remark": described("remark", type="string")}}
_02_GOOD = ({"order_id": "A1001", "amount": 45, "reason": "user_cancel"},
            {"order_id": "A1002", "amount": 199.0, "reason": "price_error", "remark": "wrong tag price"},
            {"order_id": "A1003", "amount": 45.5, "reason": "user_cancel"})  # yuan and jiao: an integer type refuses it
#: the notebook's bad create_refund calls (its camelCase one on create_refund, as the injector sends it)
_02_BAD = {"drop_required": '{"order_id": "A1001", "reason": "user_cancel"}',
           "wrong_type": '{"order_id": "A1001", "amount": "45元", "reason": "user_cancel"}',
           "out_of_enum": '{"order_id": "A1001", "amount": 45, "reason": "不想要了"}',
           "camel_case": '{"orderId": "A1001", "amount": 45, "reason": "user_cancel"}'}


@bounded("02")
def build_tighter_contract(fn: Callable[[dict], Any] | None, lang: Lang = "en") -> Feedback:
    """02: ``fn(schema)`` gets :func:`loose_refund_schema` (in ``lang``) and returns it with constraints added (or
    changes it in place). Right when the boundary, with no cleaning, refuses each of the notebook's bad
    create_refund calls and still lets good refunds through."""
    if fn is None:
        return _not_yet("02", "build.nb02.not_yet", lang)
    if not callable(fn):
        return _wrong("02", t("build.not_a_function", lang, name="my_tighten"), lang)
    schema = loose_refund_schema(lang)
    try:
        out = fn(schema)
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("02", _raised(exc, lang), lang)
    if out is None:
        if schema == loose_refund_schema(lang):
            return _not_yet("02", "build.nb02.not_yet", lang)
        # changed in place and given back as None (a print at its end): the task asks for the contract back, as every
        # other build exercise does, since code that uses the returned contract gets None; it passed before
        return _wrong("02", t("build.nb02.in_place", lang), lang)
    if not isinstance(out, dict):
        return _wrong("02", t("build.nb02.not_a_dict", lang, given=type(out).__name__), lang)
    return _boundary("02", out, _02_GOOD, dict(_02_BAD), lang, t("build.nb02.right", lang))


# --- 03: a failure the model can read and act on --------------------------------------------------------------------

#: order -> (what the model asks, what was paid): the backend refuses a refund above the order's amount
_03_CASES = {"A1001": (299.0, 199.0), "A1004": (999.0, 899.0)}


class _Reader:
    """A model that acts on what it reads, as a careful model does: it asks for ``asked``; told of a failure, it
    sends the paid amount when the error names the field (``amount``, or its name in the reader's language) and that
    amount, else the same call again."""

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
            return say(t("script.refunded", self.lang))
        # the field named as the learner's language names it (a Chinese message says 金额, not amount)
        field = any(name in text for name in t("build.nb03.field_names", self.lang).split("|"))
        names_it = field and f"{self.paid:g}" in text
        return tool_calls(call("create_refund", self._args(self.paid if names_it else self.asked)))

    def _args(self, amount: float) -> dict:
        return {"order_id": self.order_id, "amount": amount, "reason": "user_cancel"}


@bounded("03")
def build_refund_failure(fn: Callable[..., Any] | None, lang: Lang = "en") -> Feedback:
    """03: ``fn(order_id, amount, paid)`` returns the :class:`~agentlab.errors.ToolFailure` the refund backend raises
    when asked for more than the order's amount. The check runs the guarded loop with a model that repairs its call
    only when the failure names the field and the amount that would be right. Right when, for each order, the run
    ends with one refund of the paid amount."""
    from ..errors import ToolFailure
    from ..guards import GuardConfig
    from ..loop import run_guarded
    from ..redaction import removed_here
    from ..scenarios import aftersales

    if fn is None:
        return _not_yet("03", "build.nb03.not_yet", lang)
    if not callable(fn):
        return _wrong("03", t("build.not_a_function", lang, name="my_amount_failure"), lang)
    try:
        sample = fn("A1001", 299.0, 199.0)
    except ToolFailure as exc:  # raised, as a backend raises it: the very failure, given
        sample = exc
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("03", _raised(exc, lang), lang)
    if sample is None:
        if unanswered(fn):
            return _not_yet("03", "build.nb03.not_yet", lang)
        return _wrong("03", said_none(fn, "my_amount_failure", "A1001", "failure", lang), lang)
    if not isinstance(sample, ToolFailure):
        return _wrong("03", t("build.nb03.not_a_failure", lang, given=type(sample).__name__), lang)
    if sample.unknown is not None:  # a code agentlab has not: said, with the codes there are
        return _wrong("03", said(sample.unknown, lang), lang)
    if sample.error.category == "transient":  # the loop resends such a call as it is: it can never succeed
        return _wrong("03", t("build.nb03.transient", lang, code=sample.error.code), lang)
    written = sample.error.message
    seen = (written.get(lang) or written.get("en") or "") if isinstance(written, dict) else str(written or "")
    if removed_here(seen):  # a trace, a path, a host or a secret was cut from it: the learner wrote one in
        return _wrong("03", t("build.nb03.leaks", lang, seen=clipped(" ".join(seen.split()), 240)), lang)
    broken: dict[str, str | None] = {}
    for order_id, (asked, paid) in _03_CASES.items():
        desk, reg = aftersales.SCENARIO.setup(lang)
        raised: list[BaseException] = []

        def backend(order_id: str, amount: float, reason: str, remark: str = "", idempotency_key: str | None = None,
                    *, _desk: Any = desk, _paid: float = paid, _raised_: list = raised) -> Any:
            if amount > _paid:
                try:
                    failure = fn(order_id, amount, _paid)
                except ToolFailure as exc:  # raised rather than returned: the same failure
                    failure = exc
                except Exception as exc:
                    _raised_.append(exc)
                    raise
                if not isinstance(failure, ToolFailure):
                    _raised_.append(Said(
                        said_none(fn, "my_amount_failure", order_id, "failure", lang) if failure is None
                        else t("build.nb03.not_a_failure", lang, given=type(failure).__name__)))
                    raise RuntimeError("not a ToolFailure")
                raise failure
            return _desk.create_refund(order_id, amount, reason, remark, idempotency_key=idempotency_key)

        # the contract and the business rules let the call through: the backend is the one that knows
        reg = Registry([replace(tool, fn=backend, check=None, limits=None, needs_approval=None)
                        if tool.name == "create_refund" else tool for tool in reg], lang=reg.lang)
        model = _Reader(order_id, asked, paid, lang)
        run = run_guarded(model, reg, t("script.refund_ask", lang, order_id=order_id),
                          system_prompt=aftersales.SYSTEM_PROMPT[lang], config=GuardConfig(), sleep=lambda s: None,
                          lang=lang)
        if raised:
            return _wrong("03", _raised(raised[0], lang), lang)
        made = [r["amount"] for r in desk.refunds if r["order_id"] == order_id]
        if made == [paid]:
            broken[order_id] = None
        elif not model.told:  # the failure ended the run: the model never read it
            broken[order_id] = t("build.nb03.stopped", lang, code=sample.error.code, status=label(run.status, lang))
        else:
            told = clipped(" ".join(model.told[0].split()), 300)
            broken[order_id] = t("build.nb03.not_fixed", lang, asked=f"{asked:g}", paid=f"{paid:g}", told=told,
                                 status=label(run.status, lang))
    return _tally("03", broken, lang, t("build.nb03.right", lang), cases=True)  # orders, not faults


# --- 04: resend what is transient, with waits that grow; stop at once on what is not ------------------------------

#: the notebook's model-API faults: (fault, how many times in a row it fails). The last never recovers.
_04_FAULTS = {"api_429": ("api_429", 2), "api_timeout": ("api_timeout", 2), "api_500": ("api_500", 2),
              "api_401": ("api_401", 99), "api_500_never_recovers": ("api_500", 99)}
#: failures that are not transient and that no fault of the notebook's model gives: status -> (code, what it says)
_04_STOPS = {403: ("PERMISSION_DENIED", "403 Forbidden"), 400: ("BAD_REQUEST", "400 Bad Request")}
_04_MOST = 6  # resends after which the check calls it "resending forever"
_04_LONGEST = 30.0  # seconds: the longest wait before a resend anyone sits through (RetryPolicy's longest_wait)


class _Top:
    """An rng at the top of every range: a jittered wait shows its ceiling, so growth is visible."""

    def uniform(self, a: float, b: float) -> float:
        return max(a, b)

    def random(self) -> float:
        return 0.999


class _Resending:
    """Wraps a model: on a ModelError, asks the learner's ``fn(error, attempt, rng)`` how long to wait (None: stop),
    sleeps that long through ``sleeps`` and sends again."""

    def __init__(self, inner: Any, fn: Callable[..., Any], raised: list[BaseException], lang: Lang = "en") -> None:
        self.inner, self.fn, self.raised, self.lang = inner, fn, raised, lang
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
                    wrong = returned_instead(wait, "number", "my_wait", err.code, self.lang, fn=self.fn, none_ok=True)
                    if wrong is not None:  # "2" is no number of seconds, though float() reads it as one
                        raise Said(wrong)
                    if wait is not None:
                        wait = float(wait)
                except Exception as exc:
                    self.raised.append(exc)
                    raise
                if wait is None:
                    raise
                self.sleeps.append(wait)
                attempt += 1


@bounded("04")
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
                and fn(ModelError("RATE_LIMITED", "429", status=429, retry_after=2.0), 0, _Top()) is None \
                and unanswered(fn):
            return _not_yet("04", "build.nb04.not_yet", lang)
    except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
        return _wrong("04", _raised(exc, lang), lang)
    broken: dict[str, str | None] = {}
    # every failure that is not transient stops at once, not the 401 alone: asked directly, as no fault of the
    # notebook's model gives them (a rule that named UNAUTHENTICATED alone resent a 403 and a 400, and passed)
    for status, (code, text) in _04_STOPS.items():
        try:
            wait = fn(ModelError(code, text, status=status), 0, _Top())
        except Exception as exc:  # noqa: BLE001 - the learner's code: a sentence, never a traceback
            return _wrong("04", _raised(exc, lang), lang)
        wrong = returned_instead(wait, "number", "my_wait", code, lang, fn=fn, none_ok=True)
        if wrong is not None:
            return _wrong("04", wrong, lang)
        broken[f"api_{status}"] = None if wait is None else t("build.nb04.resent_stop", lang, code=code, status=status,
                                                               wait=f"{float(wait):g}")
    for label_, (fault, times) in _04_FAULTS.items():
        desk, reg = aftersales.SCENARIO.setup(lang)
        raised: list[BaseException] = []
        model = _Resending(FaultyModel(make_model(lang), fault, at_step=2, times=times, retry_after=2.0), fn, raised,
                           lang)
        run = run_naive(model, reg, TASK[lang], system_prompt=aftersales.SYSTEM_PROMPT[lang])
        if raised:
            return _wrong("04", _raised(raised[0], lang), lang)
        resends = len(model.sleeps)
        refunded = sum(1 for r in desk.refunds if r["order_id"] == "A1001")
        shown = joined((f"{w:g}" for w in model.sleeps), lang, "list") or "-"
        # a wait nobody would sit through (a billion seconds, inf) or none at all (negative, NaN) handled nothing
        odd = next((w for w in model.sleeps if not 0 <= w <= _04_LONGEST), None)
        if fault == "api_401":
            broken[label_] = None if resends == 0 else t("build.nb04.resent_fatal", lang, n=resends, waits=shown)
        elif odd is not None:  # too long to sit through, or no wait at all (negative, NaN)
            key = "build.nb04.too_long" if odd > _04_LONGEST else "build.nb04.not_a_wait"
            broken[label_] = t(key, lang, wait=f"{odd:g}", most=f"{_04_LONGEST:g}")
        elif times > _04_MOST and resends >= _04_MOST:
            broken[label_] = t("build.nb04.forever", lang, n=resends)
        elif times > _04_MOST and any(b < a for a, b in pairwise(model.sleeps)):
            broken[label_] = t("build.nb04.flat", lang, waits=shown)
        elif times > _04_MOST:
            broken[label_] = None
        elif refunded != 1:
            broken[label_] = t("build.nb04.gave_up", lang, n=resends, status=label(run.status, lang))
        elif model.sleeps[0] == 0:
            broken[label_] = t("build.nb04.at_once", lang, waits=shown)
        elif any(b < a for a, b in pairwise(model.sleeps)):  # every wait, not the first two alone
            broken[label_] = t("build.nb04.flat", lang, waits=shown)
        elif fault == "api_429" and model.sleeps[0] < 2.0:
            broken[label_] = t("build.nb04.too_soon", lang, wait=f"{model.sleeps[0]:g}")
        elif fault != "api_429" and not model.sleeps[0] < model.sleeps[1]:  # a Retry-After may flatten a 429's
            broken[label_] = t("build.nb04.flat", lang, waits=shown)
        else:
            broken[label_] = None
    return _tally("04", broken, lang, t("build.nb04.right", lang))

"""The guards of the guarded loop, as one value (``GuardConfig``).

Each field is one guard; ``None`` or ``False`` switches it off. Notebooks turn
them off one at a time to show what each one buys (docs/guards.md).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .i18n import Listed, LocalizedError
from .retry import RetryPolicy

if TYPE_CHECKING:
    from .i18n import Lang

__all__ = ["GUARDS", "HARD_CAP", "NO_GUARDS", "BadSetting", "GuardConfig", "guards_off", "said_guards"]

HARD_CAP = 50  # even with every guard off, no run is endless (in turns; a model that never answers is not bounded then)


@dataclass(frozen=True, kw_only=True)
class GuardConfig:
    """The guards of :func:`~agentlab.loop.run_guarded`. ``None``/``False`` switches one off.

    Args:
        all_calls: answer every tool call of a message, in order (else only the first).
        validate: parse, schema and business checks before running a tool.
        readable_errors: tell the model what went wrong as structured JSON (else a bare 500).
        self_correction: invalid calls allowed in a row (since the last call that ran) before escalating:
            the re-ask budget.
        timeout: seconds a tool may take. A read-only tool gets a SIGALRM deadline in the calling
            thread (main thread, POSIX); a write, which must never be interrupted half-way, runs in a
            worker thread the loop stops waiting for. Neither can stop C code that holds the GIL.
        retry: how to resend transient failures (only for read-only or keyed tools).
        idempotency: claim side-effect calls under a key; a repeat replays the first result.
        approval: hold risky calls (``Tool.needs_approval``) for a person.
        step_budget: model turns before ``budget_exhausted``.
        max_calls_per_turn: tool calls run from one model message; the calls past it are not run, and the
            model is told so (a structured error) and may send them in its next message.
        run_deadline: wall-clock seconds a run may take (on the loop's injected clock), checked before every
            model call and every tool call; past it the run ends ``budget_exhausted`` and nothing more is
            started. A model call is waited for only until the deadline (see :func:`~agentlab.loop.run_guarded`).
        repeat_limit: the Nth identical call (same tool, same canonical arguments) escalates.
        clean: clean values (``"45元"`` -> 45) before validation, with an audit.
        lease: seconds a claim on an idempotency key is held while its call runs; a claim older
            than this whose call never finished (its process died) is "outcome unknown".
    """

    all_calls: bool = True
    validate: bool = True
    readable_errors: bool = True
    self_correction: int | None = 2
    timeout: float | None = 5.0
    retry: RetryPolicy | None = RetryPolicy()
    idempotency: bool = True
    approval: bool = True
    step_budget: int | None = 6
    repeat_limit: int | None = 3
    max_calls_per_turn: int | None = 16  # no task of the desks needs more at once; 100 refunds in one reply do not run
    run_deadline: float | None = 300.0  # a local model on a CPU needs a minute or two for a whole run
    clean: bool = False
    lease: float = 60.0

    def checked(self) -> GuardConfig:
        """This config, once every setting is one its guard can use; else :class:`BadSetting`, saying which and what
        it takes. Each loop and adapter asks before it runs anything: GuardConfig(step_budget="10") ended in a
        TypeError ("can only concatenate str") deep in the loop, and a step budget of -1 stopped every run before it
        began. Asked at use, not when the config is made, so a notebook's check can say it in the learner's words."""
        if self.__dict__.get("_checked"):  # frozen: its settings cannot change once checked
            return self
        for f in fields(self):
            value = getattr(self, f.name)
            if not _fits(value, _KINDS[f.name]):
                raise BadSetting("guards.bad_setting", name=f.name, given=value, what=f"guards.wanted.{_KINDS[f.name]}")
        self.__dict__["_checked"] = True
        return self

    def without(self, *guards: str) -> GuardConfig:
        """This config with the named guards switched off."""
        off: dict[str, Any] = {}
        for g in guards:
            if g not in GUARDS:
                raise BadSetting("guards.unknown", name=g, guards=Listed(GUARDS))
            off[g] = False if isinstance(getattr(self, g), bool) else None
        return replace(self, **off)

    def is_on(self, guard: str) -> bool:
        """Whether ``guard`` is switched on (a budget of 0 is on: it allows no re-asks)."""
        value = getattr(self, guard)
        return value is not None and value is not False

    @property
    def label(self) -> str:
        """Which guards are off, as trace rows and reports keep it (English, names as written in code)."""
        off = [g for g in GUARDS if not self.is_on(g)]
        return "all guards" if not off else "without " + ", ".join(off)

    def said(self, lang: Lang = "en") -> str:
        """:attr:`label` as a person reads it in ``lang`` (each guard by the name the workbook's tables give it)."""
        return said_guards(self.label, lang)


class BadSetting(UsageError, LocalizedError):
    """A :class:`GuardConfig` given a value its guard cannot use, or asked to switch off a guard there is none of."""


#: what each setting takes: a switch, a count (from 0, or from 1), seconds, a retry policy
_KINDS = {"all_calls": "switch", "validate": "switch", "readable_errors": "switch", "self_correction": "count0",
          "timeout": "seconds", "retry": "retry", "idempotency": "switch", "approval": "switch", "step_budget": "count1",
          "repeat_limit": "count1", "max_calls_per_turn": "count1", "run_deadline": "seconds", "clean": "switch",
          "lease": "lease"}


def _fits(value: Any, kind: str) -> bool:
    if kind == "switch":
        return isinstance(value, bool)
    if value is None:
        return kind != "lease"
    if kind == "retry":
        return isinstance(value, RetryPolicy)
    # any number a notebook holds (numpy's int64, a Fraction, a Decimal), not only Python's own; never a bool
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        return False
    try:
        number = float(value)
    except (OverflowError, ValueError):  # 10**400: no finite number of anything
        return False
    if kind in ("count0", "count1"):
        return number.is_integer() and number >= (0 if kind == "count0" else 1)
    return math.isfinite(number) and number > 0


GUARDS = ("all_calls", "validate", "readable_errors", "self_correction", "timeout", "retry",
          "idempotency", "approval", "step_budget", "repeat_limit", "max_calls_per_turn", "run_deadline")
NO_GUARDS = GuardConfig().without(*GUARDS)


def guards_off(label: str) -> set[str]:
    """The guards a :attr:`GuardConfig.label` (a trace row's or a run's ``config``) says were off: ``"without validate,
    retry"`` is ``{"validate", "retry"}``; any other label, none."""
    return set(label.removeprefix("without ").split(", ")) & set(GUARDS) if label.startswith("without ") else set()


def said_guards(label: str, lang: Lang = "en") -> str:
    """A config's :attr:`GuardConfig.label` (``"all guards"``, ``"without validate, retry"``), as kept in a report or
    a trace row, said in ``lang``; a label of another shape is kept as it is."""
    from .i18n import label as name_of
    from .i18n import t
    if label == "all guards":
        return t("guards.label.all", lang)
    if label.startswith("without "):
        return t("guards.label.without", lang, guards=name_of(label[len("without "):], lang))
    return label

"""The learner's code, run by a build check: stopped when it runs too long, and a stop said in a sentence.

A build check runs what the learner wrote (a tool, a key, a rule) through a real loop. Code that never ends (a
``while True`` left in, a wait for something that never comes) held the cell for good, and the stop button then
printed a ``KeyboardInterrupt`` traceback through the package's files. :func:`bounded` gives every build check a
time limit (:data:`LEARNER_SECONDS`) and turns both stops into a verdict in the learner's language.

The limit is a SIGALRM timer in the kernel's main thread, where a check runs; a timer already running that is due
sooner (a test's own) is left to ring, and one due later is put back with its time. Its exception is a
:class:`KeyboardInterrupt`, as the stop button's is, because every loop and guard a check runs hands those on
instead of making them a tool's failure. Code that runs in a worker thread (a write under the guarded loop's
timeout) is given up on by the loop itself at that timeout.
"""
from __future__ import annotations

import dis
import functools
import inspect
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from numbers import Real
from typing import Any, TypeVar

from ..i18n import Lang, t
from .exercises import Feedback, _say, _shown

__all__ = ["LEARNER_SECONDS", "OutOfTime", "Said", "bounded", "returned_instead", "returns_nothing", "said_none", "unanswered", "unsteady_key"]

_log = logging.getLogger(__name__)
_F = TypeVar("_F", bound=Callable[..., Feedback])

#: seconds one check lets the learner's code run: every right answer of the workbook takes under two
LEARNER_SECONDS = 20.0


def unanswered(fn: Any) -> bool:
    """Whether ``fn`` is still a notebook's stub: a body that only gives None back (``...``, ``pass``, ``return
    None``, with or without a docstring), read from its bytecode. A check told "not answered yet" by a None alone
    said so to a learner whose function had an answer and a path that ended with no ``return``."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, type(unanswered.__code__)):  # a callable object, a builtin, a __code__ that is no code
        return False
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code)
           if i.opname not in ("RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "MAKE_CELL")]
    return ops in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("RETURN_CONST", None)])


def returns_nothing(fn: Any) -> bool:
    """Whether ``fn`` has no ``return`` of a value anywhere: each way out of its body gives None (a body that ends
    in ``print(...)``). Its None is then no answer: a check that reads None as a verdict ("stop", "no retry") had
    told such a learner that their decision was wrong, not that it never came back."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, type(unanswered.__code__)) or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE):
        return False
    ops = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "NOP")]
    for before, op in zip([None, *ops], ops, strict=False):
        if op.opname == "RETURN_CONST" and op.argval is not None:
            return False
        # a return reached by a jump (the end of "x if c else None") returns what that path left: a value
        if op.opname == "RETURN_VALUE" and (op.is_jump_target or not (
                before is not None and before.opname == "LOAD_CONST" and before.argval is None)):
            return False
    return True


#: what a learner's function is to give back, by kind: the sentence's words (``build.kind.<kind>``). A number is any
#: real number but a truth value (numpy's float32 too); a verdict anything Python reads as true or false but a text
#: ("stop" is true): a re.Match or None, as an ``if`` reads them, is a verdict
_KINDS: dict[str, Callable[[Any], bool]] = {
    "text": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, Real) and not isinstance(v, bool) and type(v).__name__ != "bool_",
    "bool": lambda v: not isinstance(v, str | bytes),
}


def returned_instead(value: Any, kind: str, name: str, case: str, lang: Lang, *, fn: Any = None,
                     none_ok: bool = False) -> str | None:
    """None when ``value`` is of ``kind`` (``text``, ``number``, ``bool``), or is None and ``none_ok``; else the
    sentence that says what came back instead, for which ``case``. A None from a function with a body is a path with
    no ``return``; a None, even one ``none_ok`` allows, from an ``fn`` that returns nothing anywhere
    (:func:`returns_nothing`) is said as that, with no case (a learner's explicit ``return None`` for the one case
    where None is right was blamed as the path with no return); a ``"2"`` for a number of seconds, ``"allow"`` for True or a tuple for a key
    string were taken as answers before."""
    if value is None and fn is not None and returns_nothing(fn):  # no case to blame: no way out gives a value
        return t("build.returns_nothing", lang, name=name, kind=t(f"build.kind.{kind}", lang))
    if _KINDS[kind](value) or (value is None and none_ok):
        return None
    if value is None:
        return t("build.returned_none", lang, name=name, case=case)
    # the exercises' one way of showing a learner's value (reprlib: a __repr__ that raises, 5,000 digits, never a traceback)
    return t("build.returned_kind", lang, name=name, case=case, given=f"{type(value).__name__} {_shown(value)}",
             kind=t(f"build.kind.{kind}", lang))


def said_none(fn: Any, name: str, case: str, kind: str, lang: Lang) -> str:
    """The sentence for a None from the learner's ``fn`` (called ``name``) for ``case``: a function with no ``return``
    of a value anywhere is said as that (it never gives ``kind``, a ``build.kind.*`` word); else it is the one path
    that ends without a return. Blamed on one path, a function that returns nothing at all misled its writer."""
    if returns_nothing(fn):
        return t("build.returns_nothing", lang, name=name, kind=t(f"build.kind.{kind}", lang))
    return t("build.returned_none", lang, name=name, case=case)


def unsteady_key(fn: Callable[..., Any], args: dict, *rest: Any, name: str, call: str, lang: Lang) -> str | None:
    """The sentence when ``fn`` gives the same call two different text keys (random, timed), else None; what ``fn``
    raises goes to the caller. Such a key was said as the situations it broke (a lost reply refunded twice), never as
    what it was."""
    first, second = (fn(dict(args), *rest) for _ in range(2))
    if isinstance(first, str) and isinstance(second, str) and first != second:
        return t("build.key_random", lang, name=name, call=call, a=_shown(first), b=_shown(second))
    return None


class Said(Exception):
    """What a learner's code gave back that a check cannot use, said as a sentence (:func:`returned_instead`): raised
    out of the loop the check runs, and reported as it is, never as an exception the learner's code raised."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


class OutOfTime(KeyboardInterrupt):
    """The learner's code was still running at the check's time limit."""


class _Limit:
    """One check's time limit: whether its own timer rang (a stop may reach the check as another exception: the
    probe turns an interrupt into its own, and an outer check's timer is not this one's)."""

    __slots__ = ("armed", "rang")

    def __init__(self) -> None:
        self.armed, self.rang = False, False


#: seconds between a limit's rings once it has rung, until its check has ended (see ``ring`` in :func:`_limited`)
RING_AGAIN = 1.0


@contextmanager
def _limited(seconds: float, limit: _Limit | None = None) -> Iterator[_Limit]:
    """:class:`OutOfTime` raised in this thread after ``seconds`` (the main thread, POSIX; elsewhere no limit).

    The check's own handler and timer are always set, never left to a timer found running: one left behind (due in
    a millisecond, with a handler that no longer acts) let a check sleep for good. A timer found running is put back
    with its time, and when it falls due first its own handler runs, as it would have."""
    limit = limit if limit is not None else _Limit()
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield limit
        return
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    outer_first = 0 < left < seconds  # pytest-timeout's, an outer check's: due before this limit
    previous: Any = None
    outer_rang = False  # the timer found running fell due here: put back, it would ring a second time

    def ring(signum: int, frame: Any) -> None:
        nonlocal outer_rang
        if limit.armed and not outer_first:
            if not limit.rang:
                limit.rang = True
                # rung again each second until the check ends: a handler that runs inside a garbage collector's
                # callback or a finalizer has its exception swallowed (printed as "ignored"), and the learner's
                # time.sleep(30) then ran its whole 30 s past the limit (seen once in CI, in hypothesis's gc callback)
                signal.setitimer(signal.ITIMER_REAL, RING_AGAIN, RING_AGAIN)
            raise OutOfTime()
        if outer_first and callable(previous):  # the timer found running fell due first: its handler acts
            outer_rang = True
            previous(signum, frame)
        # else: this limit's own timer, ringing as the check ends (between its end and the timer's cancel): nothing
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, ring)
    try:
        limit.armed = True
        signal.setitimer(signal.ITIMER_REAL, left if outer_first else seconds)
        yield limit
    finally:
        limit.armed = False
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)
            if outer_rang:  # it rang already (once): only a repeating timer goes on
                if interval > 0:
                    signal.setitimer(signal.ITIMER_REAL, interval, interval)
            elif left > 0:
                signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 1e-3), interval)


def bounded(notebook: str | None = None, *, seconds: float | None = None) -> Callable[[_F], _F]:
    """A build check whose run of the learner's code stops at the time limit (``seconds``, default
    :data:`LEARNER_SECONDS`), and whose stop (the limit, or the kernel's stop button) is a verdict: "still running
    after 20 s", "stopped before the check finished". With ``notebook``, that verdict is reported to the trainer's
    view as ``NNb`` (notebooks 00-09 report their own); without, the check's ``_reports`` reports it."""
    def wrap(check: _F) -> _F:
        signature = inspect.signature(check)

        @functools.wraps(check)
        def run(*args: Any, **kwargs: Any) -> Feedback:
            limit_s = LEARNER_SECONDS if seconds is None else seconds
            lang = _lang(signature, args, kwargs)
            # made before the timer starts: a limit that rang while it was being set (a timer of half a millisecond)
            # is this check's own, and was taken for an outer check's, out of every handler, as a KeyboardInterrupt
            limit = _Limit()
            exited = False
            try:
                with _limited(limit_s, limit):
                    return check(*args, **kwargs)
            except KeyboardInterrupt as exc:
                if isinstance(exc, OutOfTime) and not limit.rang:
                    raise  # an outer check's limit: that check says it
            except SystemExit:  # sys.exit() or exit() in the learner's code: IPython's English, and no verdict
                exited = True
            if exited:
                feedback = _say("wrong", t("build.exited", lang), lang)
            elif limit.rang:  # however the stop reached here (the probe makes it its own interrupt)
                feedback = _say("wrong", t("build.too_long", lang, seconds=limit_s), lang)
            else:
                feedback = _say("not yet", t("build.stopped", lang), lang)
            if notebook is not None:
                from . import exercises
                try:
                    exercises.report(feedback, f"{notebook}b", answer=None)
                except Exception as exc:  # noqa: BLE001 - a report never breaks the learner's cell
                    _log.debug("progress report not sent: %s", type(exc).__name__)
            return feedback
        return run  # type: ignore[return-value]
    return wrap


def _lang(signature: inspect.Signature, args: tuple, kwargs: dict) -> Lang:
    try:
        lang = signature.bind_partial(*args, **kwargs).arguments.get("lang", "en")
    except TypeError:
        return "en"
    return "zh" if lang == "zh" else "en"

"""One definition of "correct": a run is graded on the final state of the data (docs/metrics.md).

The run's own status says what the loop *believes* happened; the data says what did.
Every place that shows a success (the notebooks, the app, ``demo``, ``eval``) classifies
runs here, so that no two of them can disagree::

    correct              the final state is the expected one, and the run finished (done)
    correct hand-over    the final state is the expected one, and the task expects a person
    done, wrong data     the run says done, but the data is wrong (twice, "199元", wrong reason, wrong day)
                         or half done (one of two refunds or deletes)
    done, nothing done   the run says done, but the expected effect never happened
    escalated            handed over (or a guard stopped it) where the task did not expect it;
                         nothing wrong was written
    wrong data, stopped  stopped, handed over or crashed after writing something wrong
    budget exhausted     ran out of steps without damage
    crashed              the naive loop raised, before anything wrong was written
    leaked               internal detail (a password, a stack trace) was shown to the model

Only the first two are a success.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from ..errors import find_secrets
from ..i18n import Lang, Listed, Sentence, joined, keys, label, t
from ..runs import Run

__all__ = ["INFRASTRUCTURE", "OUTCOMES", "SUCCESS", "FailedBecause", "Outcome", "Verdict", "grade", "leaks", "reasons_in"]


class FailedBecause(Sentence):
    """Why a run failed its case: a :class:`~agentlab.i18n.Sentence` whose nouns (refunds, record) are said as the
    glossary says them in another language."""

    def __new__(cls, key: str, /, **fields: Any) -> FailedBecause:
        made = cast(FailedBecause, super().__new__(cls, key, **fields))
        english = made.localized("en")  # its text is its English, statuses in words, as every reader gets it
        if english == str.__str__(made):
            return made
        again = str.__new__(cls, english)
        again.key, again.fields = key, fields
        return again

    def localized(self, lang: Lang = "en") -> str:
        # the nouns a sentence names (refunds, record) and the statuses of a run (budget_exhausted) are labels of the
        # glossary (a Listed of them is listed as the language lists them); values stay as they were
        fields = dict(self.fields)
        if lang != "en" and "noun" in fields and "name" in fields:
            # a language with no plural says the collection by one name whatever the count: the English noun's
            # singular and plural, each put into Chinese, read 退款：1 in one line and 退款笔数：2 in the next
            fields["noun"] = fields["name"]
        return t(self.key, lang, **{k: _said_field(k, v, lang) for k, v in fields.items()})

    said = localized

    def __reduce__(self) -> tuple[Any, ...]:
        return _failed_because, (self.key, self.fields)  # copied or pickled as what it is, not a plain Sentence


def _failed_because(key: str, fields: dict[str, Any]) -> FailedBecause:
    return FailedBecause(key, **fields)


#: the fields of a reason that name something the glossary says (never a value a run produced)
_LABELS = frozenset({"name", "noun", "singular", "status", "wanted"})


def _said_field(key: str, value: Any, lang: Lang) -> Any:
    """A reason's field in ``lang``: a run's status (and the statuses wanted) in the words the catalogue has for
    them in every language (an English reader read "status budget_exhausted, expected one of done,
    done_after_self_correction"); another label by the glossary; a value as it was."""
    if key == "reason" and lang != "en" and isinstance(value, str):  # what crashed a run, in the reader's words
        from ..trace import crash_said
        return crash_said(value, lang) or value
    if key in ("status", "wanted"):
        many = isinstance(value, Listed)
        statuses = list(value.items) if many else [value]
        if all(isinstance(s, str) and f"status.{s}" in keys() for s in statuses):
            said = [t(f"status.{s}", lang) for s in statuses]
            return joined(said, lang, "list") if many else said[0]
    return label(value, lang) if key in _LABELS else value


def reasons_in(failures: Any, lang: Lang = "en") -> list[str]:
    """A verdict's (or a case result's) failures in ``lang``: each reason said, any other text as it is."""
    return [f.said(lang) if isinstance(f, FailedBecause) else str(f) for f in failures]

Outcome = Literal["correct", "correct hand-over", "done, wrong data", "done, nothing done", "escalated",
                  "wrong data, stopped", "budget exhausted", "crashed", "leaked"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "correct hand-over", "done, wrong data", "done, nothing done",
                                 "escalated", "wrong data, stopped", "budget exhausted", "crashed", "leaked")
SUCCESS: frozenset[str] = frozenset({"correct", "correct hand-over"})


@dataclass(frozen=True)
class Verdict:
    """A graded run: its outcome, whether that is a success, and every reason it is not."""

    outcome: Outcome
    failures: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.outcome in SUCCESS

    def __repr__(self) -> str:
        return f"Verdict({self.outcome!r}{', ' + '; '.join(self.failures) if self.failures else ''})"


def leaks(run: Run) -> list[str]:
    """What internal detail the tool results in ``run`` showed the model (a stack trace, a password in a
    URL, an API key...), by the same rules that remove it (:func:`agentlab.errors.find_secrets`)."""
    found: set[str] = set()
    for m in run.messages:
        if m.get("role") == "tool":
            found.update(find_secrets(str(m.get("content") or "")))
    return sorted(found)


def _state_failures(expect: Mapping[str, Any], snapshot: Mapping[str, Any], run: Run,
                    unmentioned: frozenset[str] = frozenset()) -> tuple[list[FailedBecause], bool]:
    """Why the final state is not the expected one, and whether anything *wrong* was written
    (as opposed to something expected that simply did not happen). ``unmentioned``: the collections the case does
    not name, expected empty (a write there is said as one the case does not name, not as "expected 0")."""
    why: list[FailedBecause] = []
    wrong = False
    for name in ("refunds", "records", "changed", "budgets"):  # things written: each must be as expected
        if name in expect:
            w, bad = _compare_items(name, list(snapshot.get(name, [])), list(expect[name]), name in unmentioned)
            why += w
            wrong = wrong or bad
    if "deleted" in expect:
        got_ids, want_ids = sorted(snapshot.get("deleted", [])), sorted(expect["deleted"])
        if got_ids != want_ids:
            why.append(FailedBecause("grade.deleted", got=got_ids, want=want_ids))
            # one deleted that should not have been, or some of the expected done and some not: wrong,
            # as for the items written (a half-done change is not "nothing done")
            wrong = wrong or bool(set(got_ids) - set(want_ids)) or bool(set(got_ids) & set(want_ids))
    if "tickets" in expect:
        n = len(snapshot.get("tickets", []))
        if n != expect["tickets"]:
            why.append(FailedBecause("grade.tickets", n=n, want=expect["tickets"]))
            wrong = wrong or n > expect["tickets"]
    if "pending" in expect and len(run.pending) != expect["pending"]:
        why.append(FailedBecause("grade.pending", n=len(run.pending), want=expect["pending"]))
    for word in expect.get("answer_contains", []):  # (expect.because is checked in grade)
        if word not in run.answer:
            why.append(FailedBecause("grade.answer_lacks", word=word))
    return why, wrong


def _same(key: str, got: Any, want: Any) -> bool:
    if key == "amount":  # money compares as a number: "45元" is not 45
        return isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - want) < 0.005
    return bool(got == want)


def _compare_items(name: str, got: list, want: list, unmentioned: bool = False) -> tuple[list[FailedBecause], bool]:
    """Why the written ``got`` items are not the expected ``want`` ones, and whether a wrong one was written.

    Each expected item is paired with the written one that agrees with it on the most fields (so two
    right items written in another order are not "wrong data"); only the fields an expected item
    names are compared."""
    why: list[FailedBecause] = []
    wrong = False
    singular = name[:-1] if name.endswith("s") else name
    if len(got) != len(want):
        # the collection's name as the count needs it in English ("1 refund", "2 refunds"); name stays for the classes
        why.append(FailedBecause("grade.unmentioned" if unmentioned else "grade.count", n=len(got),
                                 noun=singular if len(got) == 1 else name, name=name, want=len(want)))
        wrong = len(got) > len(want) or 0 < len(got) < len(want)  # some done, some not: wrong
    pool = list(got)
    for w in want:
        if not pool:
            break
        best = max(pool, key=lambda g: sum(_same(k, g.get(k), v) for k, v in w.items()))
        pool.remove(best)
        for k, v in w.items():
            if not _same(k, best.get(k), v):
                why.append(FailedBecause("grade.field", singular=singular, field=k, got=best.get(k), want=v))
                wrong = True
    return why, wrong


# A run that ends "escalated" is the hand-over a task expects when the business or a guard said so
# (a rule, an approval, a record that does not exist, a brake on a request that cannot be done)
# or the agent wrote a ticket. A broken model or service is never that hand-over: a dead API key
# would otherwise "pass" every case that expects a person. A case that is *about* such a failure
# names the codes it accepts in ``expect.because``.
INFRASTRUCTURE = frozenset({"MODEL_ERROR", "UNAUTHENTICATED", "UNAVAILABLE", "TIMEOUT", "RATE_LIMITED",
                            "BAD_REQUEST", "CONTEXT_TOO_LONG", "TOOL_ERROR", "OUTCOME_UNKNOWN", "IN_PROGRESS"})


def _handed_over_for_the_task(run: Run, snapshot: Mapping[str, Any], because: Any) -> bool:
    end = run.events[-1] if run.events else None
    code = end.error_code if end is not None else None
    if because:
        return code in because or bool(snapshot.get("tickets") and "ticket" in because)
    return bool(snapshot.get("tickets")) or code not in INFRASTRUCTURE


def grade(expect: Mapping[str, Any], snapshot: Mapping[str, Any], run: Run) -> Verdict:
    """Classify ``run`` against what the task expects (``expect``: refunds or records, changed, deleted,
    budgets, tickets, pending, statuses).

    ``statuses`` lists the acceptable ending(s): ``["escalated"]`` for a task that a person must
    take over, ``["done", "done_after_self_correction"]`` (the default) for one the agent must finish.
    """
    wanted = tuple(expect.get("statuses") or ("done", "done_after_self_correction"))
    # what a case does not mention must not have been written: a run that booked the right taxi and also
    # deleted a record, or changed a budget nobody asked about, did not do its task
    unmentioned: dict[str, list] = {k: [] for k in ("refunds", "records", "changed", "budgets", "deleted") if k in snapshot and k not in expect}
    if unmentioned:
        expect = {**expect, **unmentioned}
    if run.status == "failed":
        # (the naive loop's reason opens with "crashed: ", which the sentence already says)
        crashed = FailedBecause("grade.crashed", reason=run.reason.removeprefix("crashed: "))
        why, wrong = _state_failures(expect, snapshot, run, frozenset(unmentioned))
        # a crash after a wrong write is a stop after writing something wrong: "crashed" alone read as harmless
        # beside a ledger line booked on the wrong day
        return Verdict("wrong data, stopped", (crashed, *why)) if wrong else Verdict("crashed", (crashed,))
    shown = leaks(run)
    if shown:
        return Verdict("leaked", tuple(FailedBecause("grade.leaked", what=w) for w in shown))
    tickets_set = "tickets" in expect
    if not tickets_set and all(s.startswith("done") for s in wanted):
        expect = {**expect, "tickets": 0}  # a task the agent must finish expects no stray hand-over ticket
    why, wrong = _state_failures(expect, snapshot, run, frozenset(unmentioned))
    done = run.status.startswith("done")
    if not why and run.status in wanted:
        if run.status == "escalated" and not _handed_over_for_the_task(run, snapshot, expect.get("because")):
            code = run.events[-1].error_code
            why.append(FailedBecause("grade.handed_over", code=code) if code else FailedBecause("grade.handed_over_failure"))
            return Verdict("escalated", tuple(why))
        return Verdict("correct hand-over" if run.status == "escalated" else "correct")
    if run.status not in wanted:
        why.insert(0, FailedBecause("grade.status", status=run.status, wanted=Listed(wanted)))  # its text too: no repr
    if done:
        return Verdict("done, wrong data" if wrong else "done, nothing done", tuple(why))
    if wrong:
        return Verdict("wrong data, stopped", tuple(why))
    return Verdict("budget exhausted" if run.status == "budget_exhausted" else "escalated", tuple(why))

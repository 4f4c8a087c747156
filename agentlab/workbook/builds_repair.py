"""Notebook 18's build exercise: when to re-ask, decided by the learner's code and run against the recorded re-asks.

The reask mode of notebook 18 re-asks after every refused reply, up to its budget (:data:`agentlab.evals.bfcl.REASK`).
The learner writes ``my_reask(refused)``: given the replies the checks refused so far in one question (oldest first,
each ``{"calls": [{"name", "arguments"}], "errors": [the errors the model read]}``), True to re-ask, False to stop.
The check replays every recorded re-ask conversation of both local models (``data/cassettes/bfcl-<size>.jsonl``,
offline) through that decision and says, per error code, which repairs it keeps and which turns it spends on a model
that sent back, unchanged, the call it had just been refused.

What a re-ask got is read from the recording alone: a conversation that ended before the budget ended on a reply the
checks passed (a call) or on words; one that used the whole budget ended on a reply the checks refused
(``tests/test_builds_repair.py`` checks both against the BFCL function docs wherever the dataset is).
"""
from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..i18n import Lang, colon, joined, t
from .builds_systems import _raised
from .exercises import Feedback, _reports, _say, _shown
from .learner_code import bounded, said_none, unanswered

__all__ = ["RecordedReask", "reask_policy_holds", "recorded_reasks"]

SIZES = ("0.5b", "1.5b")
PREVIEW = 70  # characters of a call's arguments quoted in a verdict


@dataclass(frozen=True)
class RecordedReask:
    """One question's recorded re-ask conversation: every reply's calls, the errors each refused reply got, and
    whether the last reply is a call the checks passed (a repair)."""

    size: str
    question: str
    replies: tuple[tuple[dict, ...], ...]  # each reply's calls, {"name", "arguments"}, in order
    errors: tuple[tuple[dict, ...], ...]  # the errors each refused reply got (every reply but the last)
    repaired: bool  # the last reply is a call the checks passed

    def refused(self, i: int) -> list[dict]:
        """The first ``i`` refused replies, as the learner's function gets them (a fresh copy each time)."""
        return [{"calls": copy.deepcopy(list(self.replies[j])), "errors": copy.deepcopy(list(self.errors[j]))}
                for j in range(i)]

    def code(self, i: int) -> str:
        """The error code of the ``i``-th refused reply (1-based): what the model was told last."""
        return str((self.errors[i - 1][:1] or [{}])[0].get("code", "?"))


def _calls(reply: dict) -> tuple[dict, ...]:
    return tuple({"name": c["name"], "arguments": c["arguments"]} for c in reply.get("tool_calls") or ())


def _refusals(messages: Sequence[dict]) -> list[tuple[dict, ...]]:
    """The errors answering each assistant message that held calls, in order (the refused replies)."""
    out: list[list[dict]] = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            out.append([])
        elif m.get("role") == "tool" and out:
            try:
                content = json.loads(m.get("content") or "")
            except ValueError:
                continue
            if isinstance(content, dict) and content.get("ok") is False:
                out[-1].append(content.get("error") or {})
    return [tuple(e) for e in out]


@cache
def recorded_reasks() -> tuple[RecordedReask, ...]:
    """Every recorded question of both models whose first reply the checks refused, in the recordings' order."""
    from ..evals import bfcl
    from ..models.cassette import read_cassette
    budget = (bfcl.REASK.self_correction or 0) + 1  # replies a conversation may hold: the first and each re-ask's
    out = []
    for size in SIZES:
        path = bfcl.bfcl_cassette(size)
        if not path.exists():
            continue
        conversations: dict[str, list[dict]] = {}
        for e in read_cassette(path):
            label = str(e.get("label", ""))
            if label.endswith("/loop"):
                conversations.setdefault(label.rsplit("/", 1)[0], []).append(e)
        for question, entries in conversations.items():
            if len(entries) < 2 or any("reply" not in e for e in entries):
                continue
            replies = tuple(_calls(e["reply"]) for e in entries)
            errors = _refusals(entries[-1].get("messages") or ())
            if len(errors) != len(replies) - 1 or not all(errors):
                continue
            out.append(RecordedReask(size, question, replies, tuple(errors),
                                     repaired=len(replies) < budget and bool(replies[-1])))
    return tuple(out)


def _telling(conv: RecordedReask) -> tuple[bool, bool]:
    """How well a kept call shows a repair (the example a verdict quotes): the same functions, fixed, on a question
    some function fits."""
    names = [sorted(c["name"] for c in reply) for reply in conv.replies[-2:]]
    return names[0] == names[1], not conv.question.startswith("irrelevance")


def _preview(calls: Sequence[dict]) -> str:
    """The calls as a verdict quotes them: each on one line, its arguments cut to :data:`PREVIEW` characters."""
    def one(c: dict) -> str:
        args = c["arguments"].replace("\n", "\\n")
        return f"{c['name']}({args[:PREVIEW]}{'…' if len(args) > PREVIEW else ''})"
    return "; ".join(one(c) for c in calls) or "-"


def _codes(counted: Counter[str], lang: Lang) -> str:
    return joined((f"{code} {n}" for code, n in sorted(counted.items())), lang, "list")


@_reports("18b")
@bounded()
def reask_policy_holds(my_reask: Any, lang: Lang = "en") -> Feedback:
    """18: ``my_reask(refused)`` -> True to re-ask, False to stop, consulted after each refused reply of every
    recorded re-ask conversation (both models): it must keep every re-ask that got a call the checks passed, and
    never re-ask a model that sent back, unchanged, the call it had just been refused."""
    if my_reask is None:
        return _say("not yet", t("build.nb18.todo", lang, name="my_reask"), lang)
    if not callable(my_reask):
        return _say("wrong", t("build.sys.not_a_function", lang, given=_shown(my_reask)), lang)
    conversations = recorded_reasks()
    lost: Counter[str] = Counter()
    wasted: Counter[str] = Counter()
    first_lost = first_wasted = None
    made = always = second = 0
    for conv in conversations:
        for i in range(1, len(conv.replies)):  # after the i-th refused reply, the recording holds reply i + 1
            always += 1
            try:
                verdict = my_reask(conv.refused(i))
            except Exception as exc:  # noqa: BLE001 - the learner's function raised: a sentence
                return _raised(exc, lang)
            if verdict is None:
                if unanswered(my_reask):
                    return _say("not yet", t("build.nb18.todo", lang, name="my_reask"), lang)
                return _say("wrong", said_none(my_reask, "my_reask", repr(conv.question), "bool", lang), lang)
            if not isinstance(verdict, bool):
                return _say("wrong", t("build.nb18.not_a_verdict", lang, question=conv.question, size=conv.size,
                                       given=_shown(verdict)), lang)
            repeated = i >= 2 and conv.replies[i - 1] == conv.replies[i - 2]
            if not verdict:
                if conv.repaired and i == len(conv.replies) - 1:
                    lost[conv.code(i)] += 1
                    if first_lost is None or _telling(conv) > _telling(first_lost):
                        first_lost = conv
                break
            made += 1
            second += int(i >= 2 and not repeated)
            if repeated:
                wasted[conv.code(i)] += 1
                first_wasted = first_wasted or (conv, i)
    repairs = Counter(c.size for c in conversations if c.repaired)
    after_repeat = sum(1 for c in conversations for i in range(2, len(c.replies)) if c.replies[i - 1] == c.replies[i - 2])
    broken, holds = [], []
    if lost and first_lost is not None:
        broken.append(t("build.nb18.lost", lang, n=sum(lost.values()), codes=_codes(lost, lang), question=first_lost.question,
                        size=first_lost.size, refused=_preview(first_lost.replies[-2]),
                        repaired=_preview(first_lost.replies[-1])))
    else:
        holds.append(t("build.nb18.kept", lang, n=sum(repairs.values())))
    if wasted and first_wasted is not None:
        conv, i = first_wasted
        broken.append(t("build.nb18.wasted", lang, n=sum(wasted.values()), codes=_codes(wasted, lang), question=conv.question,
                        size=conv.size, refused=_preview(conv.replies[i - 1])))
    else:
        holds.append(t("build.nb18.stopped", lang, n=after_repeat))
    if broken:
        return _say("wrong", joined(broken + holds, lang, "sentence"), lang)
    by_size = joined((f"{s}{colon(lang)}{repairs[s]}" for s in SIZES if s in repairs), lang, "list")
    said_ = t("build.nb18.right", lang, kept=sum(repairs.values()), by_size=by_size, made=made, always=always,
              saved=always - made)
    if second:
        said_ = joined((said_, t("build.nb18.second", lang, n=second)), lang, "sentence")
    return _say("right", said_, lang)

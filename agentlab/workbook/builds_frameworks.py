"""Notebook 19's build exercise: which of a framework's tools agentlab's guard claims, and under which key.

The learner's ``writes`` (the tools that change the world, or each with its business key) wire a guard around three
framework tools; the check runs each situation of :data:`WIRE_SITUATIONS` through a fresh guard on one store that
outlives the process (a restart between calls) and counts what ran. Split from ``builds_systems.py`` (notebooks 10-18)
as the adapters are a family of their own.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from ..i18n import Lang, joined, said, t
from .builds_systems import _raised
from .exercises import Feedback, _reports, _say, _shown
from .learner_code import Said, bounded, returned_instead, unsteady_key

__all__ = ["WIRE_SITUATIONS", "guard_wired"]


# --- 19 · which framework tools the guard claims, and under which key -------------------------------------------

#: Notebook 19's situations: calls a framework hands the guard (tool, arguments, conversation id), each through a
#: fresh guard on one store that outlives the process (a restart between calls), and what must have run.
WIRE_SITUATIONS: tuple[tuple[str, tuple[tuple[str, dict, str], ...], str, int], ...] = (
    ("twice", (("refund", {"order_id": "A1", "amount": 30}, "thread-1"),
               ("refund", {"order_id": "A1", "amount": 30}, "thread-1")), "refund", 1),
    ("second_amount", (("refund", {"order_id": "A1", "amount": 30}, "thread-1"),
                       ("refund", {"order_id": "A1", "amount": 20}, "thread-1")), "refund", 1),
    ("new_thread", (("refund", {"order_id": "A1", "amount": 30}, "thread-1"),
                    ("refund", {"order_id": "A1", "amount": 30}, "thread-2")), "refund", 1),
    ("note_twice", (("note", {"order_id": "A1", "text": "call back after 6 pm"}, "thread-1"),
                    ("note", {"order_id": "A1", "text": "call back after 6 pm"}, "thread-1")), "note", 1),
    ("two_notes", (("note", {"order_id": "A1", "text": "call back after 6 pm"}, "thread-1"),
                   ("note", {"order_id": "A1", "text": "call back after 6 pm"}, "thread-2")), "note", 2),
    ("fresh_read", (("lookup", {"order_id": "A1"}, "thread-1"), ("refund", {"order_id": "A1", "amount": 30}, "thread-1"),
                    ("lookup", {"order_id": "A1"}, "thread-1")), "lookup", 2),
    ("two_orders", (("refund", {"order_id": "A1", "amount": 30}, "thread-1"),
                    ("refund", {"order_id": "A2", "amount": 30}, "thread-1")), "refund", 2),
)
_19_TOOLS = ("refund", "lookup", "note")


def _wired(my_writes: Any, steps: Sequence[tuple[str, dict, str]]) -> dict[str, int]:
    """How many times each tool ran when ``steps`` went through the guard wired with ``my_writes``."""
    from collections import Counter

    from ..adapters.core import Contract, Guard
    ran: Counter[str] = Counter()
    obj = {"type": "object", "required": ["order_id"]}
    contracts = [Contract("refund", "Refund an order (once per order).", {**obj, "properties": {
                     "order_id": {"type": "string"}, "amount": {"type": "number"}}}),
                 Contract("lookup", "An order's status.", {**obj, "properties": {"order_id": {"type": "string"}}}),
                 Contract("note", "Add a note to an order's file.", {**obj, "properties": {
                     "order_id": {"type": "string"}, "text": {"type": "string"}}})]

    def tool(name: str) -> Callable[[dict], Any]:
        def run(args: dict) -> dict:
            ran[name] += 1
            return {"ran": name, "order_id": args.get("order_id"), "refunds": ran["refund"]}
        return run
    with tempfile.TemporaryDirectory(prefix="agentlab-build-19-") as tmp:
        store = f"sqlite:///{tmp}/claims.db"
        for name, args, conversation in steps:  # a fresh guard each call: the caller restarted, the store did not
            Guard("langgraph", writes=my_writes, store=store, sleep=lambda s: None).call(
                contracts, name, dict(args), tool(name), conversation=conversation)
    return dict(ran)


def _recording(key: Callable[[dict], Any], raised: list[BaseException], tool: str, lang: Lang) -> Callable[[dict], Any]:
    def recorded(args: dict) -> Any:
        try:
            value = key(args)
            # a key is text the store keeps: hash() of a text changes from process to process, and a number or a
            # tuple made str() by the guard hid that (notebook 05 refuses the same)
            wrong = returned_instead(value, "text", t("build.nb19.key_of", lang, tool=tool), str(args.get("order_id")), lang)
            if wrong is not None:
                raise Said(wrong)
            return value
        except Exception as exc:
            raised.append(exc)
            raise
    return recorded


@_reports("19b")
@bounded()
def guard_wired(my_writes: Any, lang: Lang = "en") -> Feedback:
    """19: the ``writes`` a framework's tools are wrapped with (``refund``, ``lookup``, ``note``): a list of the tools
    that change the world, or a dict of each to its business key (a function of the arguments) or None. Run in the
    situations of :data:`WIRE_SITUATIONS`."""
    from ..errors import UsageError
    if my_writes is None:
        return _say("not yet", t("build.nb19.todo", lang), lang)
    if isinstance(my_writes, str) or not isinstance(my_writes, (list, tuple, set, frozenset, dict)):
        return _say("wrong", t("build.nb19.not_writes", lang, given=_shown(my_writes)), lang)
    unknown = [name for name in my_writes if name not in _19_TOOLS]
    if unknown:  # a name the agent has no tool for guards nothing: said, not passed over
        return _say("wrong", t("build.nb19.unknown", lang, names=joined(map(_shown, unknown), lang, "list"),
                               tools=joined(_19_TOOLS, lang, "list")), lang)
    raised: list[BaseException] = []
    if isinstance(my_writes, dict):
        for name, key in my_writes.items():
            if key is not None and not callable(key):
                return _say("wrong", t("build.nb19.not_key", lang, tool=name, given=_shown(key)), lang)
            try:  # a random or timed key: said as such, not as the situations it broke
                unsteady = None if key is None else unsteady_key(
                    key, {"order_id": "A1001", "amount": 30.0, "text": "called back"}, name=t("build.nb19.key_of", lang, tool=name),
                    call=f"{name} A1001", lang=lang)
            except Exception as exc:  # noqa: BLE001 - the learner's function raised: a sentence
                return _raised(exc, lang)
            if unsteady is not None:
                return _say("wrong", unsteady, lang)
        # a key function's own failure is the learner's to hear: the guard would answer it as a failed call
        my_writes = {name: None if key is None else _recording(key, raised, name, lang) for name, key in my_writes.items()}
    wrong = []
    for name, steps, tool, right in WIRE_SITUATIONS:
        try:
            ran = _wired(my_writes, steps).get(tool, 0)
        except UsageError as exc:
            return _say("wrong", said(exc, lang), lang)
        except Exception as exc:  # noqa: BLE001 - writes the guard cannot read: a sentence
            return _raised(exc, lang)
        if raised:
            return _raised(raised[0], lang)
        if ran != right:
            wrong.append(t(f"build.nb19.{name}", lang, ran=ran, right=right))
    if wrong:
        return _say("wrong", joined(wrong, lang, "sentence"), lang)
    return _say("right", t("build.nb19.right", lang), lang)

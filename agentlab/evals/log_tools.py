"""The tools a log offers, as ``review --logs`` checks calls against them (docs/metrics.md#bring-your-own-logs): the
team's tools file (:func:`tools_file`), and each tools list a log line offers compiled once into a
:class:`~agentlab.tools.Registry` (:class:`Registries`), every call checked by ``Registry.check`` as the guarded
loop checks it, the same call (tool and arguments text) checked once; and what a review reads of a call and of its
answer: a write, a hand-over, its arguments' canonical form, whether the tool ran.
"""
from __future__ import annotations

import json
import pickle
import re
from collections import OrderedDict
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..jsonutil import CUT_OFF, UNREAD, JsonReason, canonical, quick_loads
from ..resources import read_text
from ..schema import SchemaError
from ..tools import Registry, guess_write
from .logs import LogError

__all__ = ["HANDOVER", "REGISTRIES", "Registries", "hands_over", "plain_args", "signature",
           "tools_file", "write_name"]

REGISTRIES = 32  # distinct tools lists kept compiled
_CHECKS = 512  # distinct calls (registry, tool, arguments text) whose check is kept: at most a few MB
_CHECKED_TEXT = 1024  # longer arguments are checked each time: a cache of megabytes would not be bounded


def tools_file(path: str | Path | None) -> tuple[Registry | None, frozenset[str]]:
    """The team's tools file (OpenAI-format specs) as a Registry, and the tools it marks as writes
    (``"side_effect": true`` beside the spec or its ``function``)."""
    if path is None:
        return None, frozenset()
    from ..tools import load_specs
    where = {"path": str(path), "what": "what.tools"}
    text = read_text(path, "what.tools", LogError)
    if not text.strip():  # said as empty, as every other file the commands read: not "line 1: Expecting value"
        raise LogError("input.empty", **where)
    try:
        specs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogError("input.not_json", line=exc.lineno, detail=JsonReason.of(exc), **where) from None
    except RecursionError:  # brackets nested past what the parser takes
        raise LogError("input.not_json", line=1, detail=JsonReason("nested too deeply"), **where) from None
    registry = load_specs(specs, source=str(path))
    items = specs.get("tools", [specs]) if isinstance(specs, dict) else specs
    writes = set()
    for spec in items if isinstance(items, list) else ():
        fn = spec.get("function", spec) if isinstance(spec, dict) else {}
        if isinstance(fn, dict) and (spec.get("side_effect") is True or fn.get("side_effect") is True):
            writes.add(str(fn.get("name")))
    return registry, frozenset(writes)


#: what a review reads of one call's check: parsed, valid (None when it did not parse), the error's code (None when
#: it passed), and the canonical JSON of the arguments it passed with (None when it did not pass)
Checked = tuple[bool, bool | None, str | None, str | None]


class Registries:
    """Registries by tools list, compiled once each (a log repeats the same list on every line), and the checks of
    calls made with them."""

    def __init__(self, fallback: Registry | None):
        self.fallback = fallback
        self.cache: OrderedDict[str, Registry | None] = OrderedDict()
        self.keys: dict[bytes, str] = {}  # a tools list pickled -> its key in ``cache``
        # a tools tuple given again (logs.read_logs(shared_tools=True) gives the same tuple for the same text) ->
        # its key: no pickle. The tuple is held, so its id is never another's while it is here.
        self.same: dict[int, tuple[tuple[dict, ...], str]] = {}
        self.checks: dict[tuple[Registry, str, str], Checked] = {}

    def get(self, tools: tuple[dict, ...]) -> Registry | None:
        if not tools:
            return self.fallback
        held = self.same.get(id(tools))
        if held is not None and held[0] is tools:
            key = held[1]
        else:
            key = self._key(tools)
            if len(self.same) >= REGISTRIES:
                self.same.pop(next(iter(self.same)))
            self.same[id(tools)] = (tools, key)
        if key not in self.cache:
            try:
                self.cache[key] = Registry.from_specs(tools)
            except (SchemaError, ValueError, TypeError, AttributeError):
                self.cache[key] = self.fallback  # a tools list that cannot be compiled checks nothing itself
            if len(self.cache) > REGISTRIES:
                self.cache.popitem(last=False)
        return self.cache[key]

    def _key(self, tools: tuple[dict, ...]) -> str:
        # The key is the list as sorted JSON; a list met before is found by its pickle first, a quarter of the cost
        # on every line. A pickle tells 1 from 1.0 and from true, keys in another order apart: one pickle, one list,
        # one key, so the registry is the one the sorted JSON finds (a list in another order just costs its JSON).
        try:
            fast: bytes | None = pickle.dumps(tools, protocol=5)
        except (RecursionError, pickle.PicklingError):
            fast = None
        key = self.keys.get(fast) if fast is not None else None
        if key is None:
            key = json.dumps(tools, sort_keys=True)  # the C encoder: this runs once a new list
            if fast is not None:
                if len(self.keys) >= REGISTRIES:
                    self.keys.pop(next(iter(self.keys)))
                self.keys[fast] = key
        return key

    def check_all(self, registry: Registry, name: str, raw: Any) -> Checked:
        """:meth:`check` against the tools the conversation was sent, then against the team's tools file too (its
        contract of the same tool, where it has one): a call the conversation's own list let through and the file
        refuses (an order id of the wrong form, a refund above the file's limit) is the file's finding. The file was
        read only for a conversation that carried no tools list, while the page said every call was checked against it."""
        checked = self.check(registry, name, raw)
        team = self.fallback
        if checked[2] is None and team is not None and team is not registry and name in team:
            also = self.check(team, name, raw)
            if also[2] is not None:
                return also
        return checked

    def check(self, registry: Registry, name: str, raw: Any) -> Checked:
        """``registry.check(name, raw, rules=False)`` as a review reads it. A check is a function of the registry
        (compiled once, never changed), the name and the text: a call a log repeats (the same lookup, a model's
        retry, the same broken call) is checked once."""
        if not isinstance(raw, str) or len(raw) > _CHECKED_TEXT:
            return _read(registry.check(name, raw, rules=False))
        at = (registry, name, raw)
        known = self.checks.get(at)
        if known is None:
            known = _read(registry.check(name, raw, rules=False))
            if len(self.checks) >= _CHECKS:
                self.checks.pop(next(iter(self.checks)))
            self.checks[at] = known
        return known


def _read(checked: Any) -> Checked:
    ok = checked.ok if checked.parse_ok else None
    if checked.error is not None:
        return checked.parse_ok, ok, checked.error.code, None
    args = checked.args
    return checked.parse_ok, ok, None, canonical(args) if isinstance(args, dict) else None


# --- calls and answers, as a review reads them -------------------------------------------------
#: a call to one of these hands the user to a person: the run ended in a takeover
HANDOVER = re.compile(r"escalat|hand_?off|hand_?over|transfer_to_(?:human|agent)|human", re.I)
_NAME = 256  # a tool's name longer than this is read each time: a log calls a few short ones, again and again


def write_name(name: str) -> bool:
    """Whether a tool is a write by its name (:func:`agentlab.tools.guess_write`: its first verb), when no tools file
    says. A long name is read each time (the guess keeps short ones: a log calls a few, again and again)."""
    return guess_write(name) if len(name) <= _NAME else guess_write.__wrapped__(name)


@lru_cache(maxsize=1024)
def _hands_over(name: str) -> bool:
    return bool(HANDOVER.search(name))


def hands_over(name: str) -> bool:
    """Whether a call to ``name`` hands the user to a person (:data:`HANDOVER`)."""
    return _hands_over(name) if len(name) <= _NAME else bool(HANDOVER.search(name))


@lru_cache(maxsize=1024)
def _plain_args_text(raw: str) -> str | None:
    try:
        args = json.loads(raw)
    except ValueError:
        return None
    return canonical(args) if isinstance(args, dict) else None


def plain_args(raw: str | Mapping) -> str | None:
    """The canonical JSON of a call's arguments when no tools list checks it, None when they are not an object (a
    log repeats the same arguments text often: a short one's is kept)."""
    if not isinstance(raw, str):
        return canonical(dict(raw))
    return _plain_args_text(raw) if len(raw) <= _CHECKED_TEXT else _plain_args_text.__wrapped__(raw)


@lru_cache(maxsize=4096)
def _canonical_args(raw: str) -> str | None:
    try:
        value = quick_loads(raw or "{}", cut_off=True)
        if value is CUT_OFF:  # (a call a model's reply broke off in: refused by json.loads too, at twice the cost)
            return None
        return canonical(value if value is not UNREAD else json.loads(raw or "{}"))
    except (ValueError, RecursionError):  # (nested past the parser's depth: read as arguments that do not parse)
        return None


def signature(tool: str, raw: str) -> str:
    """``tool:canonical arguments`` of a telemetry row's call (a repeat, a duplicate write), or "" for arguments that
    do not parse. A log repeats the same arguments text often (the same lookup, a model's retry): the canonical form
    of a short one is kept."""
    args = _canonical_args(raw) if len(raw) <= _CHECKED_TEXT else _canonical_args.__wrapped__(raw)
    return "" if args is None else f"{tool}:{args}"

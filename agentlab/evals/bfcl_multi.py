"""BFCL multi-turn, executed: the local models in the leaderboard's stateful environments, raw against guarded.

A multi-turn entry is a short conversation (three to five user turns) against one or two stateful APIs from
the leaderboard's own package (:mod:`agentlab.evals.bfcl_official`): a file system, a trading bot, a travel
booking desk, a car, a messaging app... Each turn may need several dependent calls (``cd`` then ``mv`` then
``grep``); a wrong argument or a call repeated changes the state, and the official checker compares the state
and the results with the ground truth's after every turn. Two ways of asking the same model:

``raw``
    the leaderboard's loop for function-calling models: the model's reply is decoded and every call in it
    executed, the results go back, and the model is asked again, one reply per step, until it answers with no
    call (or a reply that does not decode) and the next user turn starts; past :data:`STEP_LIMIT` steps in one
    turn the conversation is forced to stop, and scored wrong.
``guarded``
    :func:`agentlab.loop.run_guarded` for each user turn, with :data:`GUARDED`: every call checked against its
    function's schema before it runs (a readable error and a re-ask when it fails), the Nth identical call
    stopping the turn (the repeat breaker), and a step budget per turn.

Both are graded by the official multi-turn checker on the calls that were executed, step by step. The model's
replies are recorded to ``data/cassettes/bfcl-multi-<size>.jsonl`` (:func:`record_entry`) and replayed offline
(:func:`replay_conversations`); the environments are deterministic, so a replay reproduces the run.
"""
from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..guards import GuardConfig
from ..loop import run_guarded
from ..models.cassette import RecordingModel, read_cassette
from ..models.interface import Model, ModelError, Reply
from ..resources import data_file
from ..tools import Registry, Tool
from . import bfcl, bfcl_official
from .bfcl_check import check_recording, read_recording

__all__ = [
    "CATEGORY",
    "GUARDED",
    "MODES",
    "SEED",
    "STEP_LIMIT",
    "MultiTurnRun",
    "cassette",
    "graded_conversations",
    "multi_turn_figures",
    "record_entry",
    "replay_conversations",
    "run_entry",
    "sample_ids",
]

Mode = Literal["raw", "guarded"]
MODES: tuple[Mode, ...] = ("raw", "guarded")
CATEGORY = "multi_turn_base"
SEED = bfcl.SEED
STEP_LIMIT = 20  # the leaderboard's steps per user turn before it forces a conversation to stop
MAX_TOKENS = 384  # one reply: a few calls with their arguments
SAMPLE = 20  # entries of the sample the recordings are held to (the recorder's default --n)
#: the guarded loop's configuration here: checks, readable errors and re-asks, the repeat breaker, a budget;
#: the guards that serve a production desk (timeouts, retries, idempotency keys, approval) are off
GUARDED = GuardConfig(self_correction=2, step_budget=12, repeat_limit=3, timeout=None, retry=None,
                      idempotency=False, approval=False, run_deadline=None)


def cassette(size: str) -> Path:
    return data_file("cassettes") / f"bfcl-multi-{size}.jsonl"


def sample_ids(n: int, *, seed: int = SEED) -> list[str]:
    """A fixed sample of the category's entries, in the drawn order: the same ``n`` draws the same entries, another
    ``n`` another sample (not a prefix of it), so a recording is graded with the ``n`` it was recorded with."""
    ids = [e["id"] for e in bfcl_official.multi_turn_entries(CATEGORY)]
    return random.Random(f"{seed}/{CATEGORY}").sample(ids, min(n, len(ids)))


@dataclass(frozen=True)
class MultiTurnRun:
    """One entry asked one way: the executed calls, step by step, and the official checker's verdict."""

    id: str
    mode: Mode
    correct: bool
    error_type: str | None  # the checker's, when wrong
    steps: tuple[tuple[tuple[str, ...], ...], ...]  # per user turn, per model step, the calls executed
    model_turns: int
    refused: int = 0  # calls the guard answered with an error instead of running them (guarded only)
    endings: tuple[str, ...] = field(default=())  # how each user turn ended (the guarded loop's statuses)
    forced: bool = False  # the raw loop hit the step limit

    @property
    def calls(self) -> int:
        return sum(len(s) for turn in self.steps for s in turn)


def _tools(entry: Mapping) -> tuple[list[dict], dict[str, str]]:
    q = bfcl.Question(entry["id"], CATEGORY, (), tuple(bfcl_official.functions_for(entry)), ())
    return bfcl.tools_for(q)


def _decode(reply: Reply, names: Mapping[str, str]) -> list[str] | None:
    """The reply's calls as call strings, or None where the leaderboard's decoding fails (arguments that are
    not a JSON object) or finds no call."""
    out = []
    for c in reply.tool_calls:
        try:
            args = json.loads(c.arguments) if c.arguments.strip() else {}
        except ValueError:
            return None
        if not isinstance(args, dict):
            return None
        out.append(bfcl_official.call_string(names.get(c.name, c.name), args))
    return out or None


def _assistant(reply: Reply) -> dict:
    return {"role": "assistant", "content": reply.content or "",
            "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                           for c in reply.tool_calls]}


def _run_raw(entry: Mapping, model: Model) -> MultiTurnRun:
    specs, names = _tools(entry)
    messages: list[dict] = []
    steps: list[tuple[tuple[str, ...], ...]] = []
    turns, forced = 0, False
    with bfcl_official.Environment(entry) as env:
        for question in entry["question"]:
            messages += [dict(m) for m in question]
            turn: list[tuple[str, ...]] = []
            while True:
                turns += 1
                try:
                    reply = model.complete(messages, specs)
                except ModelError:  # no reply to decode: the turn ends, as a reply that does not decode would
                    break
                messages.append(_assistant(reply))
                calls = _decode(reply, names)
                if calls is None:
                    break
                turn.append(tuple(calls))
                for c, result in zip(reply.tool_calls, env.run(calls), strict=True):
                    messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
                if len(turn) > STEP_LIMIT:
                    forced = True
                    break
            steps.append(tuple(turn))
            if forced:
                break
    return _graded(entry, "raw", steps, turns, forced=forced)


class _Steps:
    """The guarded run's model, counting its steps, so that each executed call is filed under the reply it
    came from."""

    def __init__(self, inner: Model):
        self.inner, self.name, self.turns = inner, getattr(inner, "name", "model"), 0

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        self.turns += 1
        return self.inner.complete(messages, tools)


def _run_guarded(entry: Mapping, model: Model, config: GuardConfig) -> MultiTurnRun:
    specs, names = _tools(entry)
    counted = _Steps(model)
    steps: list[tuple[tuple[str, ...], ...]] = []
    endings: list[str] = []
    refused = 0
    history: list[dict] | None = None
    with bfcl_official.Environment(entry) as env:
        executed: dict[int, list[str]] = {}

        def tool(api: str) -> Tool:
            def fn(**args: Any) -> Any:
                call = bfcl_official.call_string(names[api], args)
                executed.setdefault(counted.turns, []).append(call)
                result = env.run([call])[0]
                try:
                    return json.loads(result)
                except ValueError:
                    return result
            spec = specs[[s["function"]["name"] for s in specs].index(api)]["function"]
            return Tool(api, spec["description"], spec["parameters"], fn=fn)

        reg = Registry([tool(s["function"]["name"]) for s in specs])
        for question in entry["question"]:
            *before, last = [dict(m) for m in question]
            executed.clear()
            run = run_guarded(counted, reg, str(last.get("content", "")), config=config,
                              history=(history or []) + before or None)
            history = list(run.messages)
            steps.append(tuple(tuple(executed[k]) for k in sorted(executed)))
            endings.append(run.status)
            refused += sum(1 for e in run.tool_events if e.error_code and not e.exec_ok)
    return _graded(entry, "guarded", steps, counted.turns, refused=refused, endings=tuple(endings))


def _graded(entry: Mapping, mode: Mode, steps: Sequence[tuple[tuple[str, ...], ...]], turns: int, *,
            forced: bool = False, refused: int = 0, endings: tuple[str, ...] = ()) -> MultiTurnRun:
    verdict = bfcl_official.multi_turn_verdict(entry, [[list(s) for s in turn] for turn in steps])
    return MultiTurnRun(entry["id"], mode, verdict.valid, verdict.error_type, tuple(steps), turns, refused,
                        endings, forced)


def run_entry(entry: Mapping, mode: Mode, model: Model, *, config: GuardConfig = GUARDED) -> MultiTurnRun:
    """Ask one entry of ``model`` in ``mode`` against fresh environments and grade it officially."""
    return _run_raw(entry, model) if mode == "raw" else _run_guarded(entry, model, config)


# --- recording and replay ---------------------------------------------------------------------
def record_entry(entry: Mapping, mode: Mode, model: Model, path: Path) -> MultiTurnRun:
    """Run one entry live and append its replies to the cassette ``path`` once the conversation is complete
    (a run cut short leaves nothing half-written). Each recorded turn keeps only the messages that are new
    since the label's previous turn (``messages_from`` says where they start): the whole conversation can be
    rebuilt, and the file stays linear in its length."""
    label = f"{entry['id']}/{mode}"
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "part.jsonl"
        done = run_entry(entry, mode, RecordingModel(model, part, label=label))
        lines, seen = [], 0
        for e in read_cassette(part):
            messages = e["messages"]
            e["messages"], e["messages_from"] = messages[seen:], seen
            seen = len(messages)
            lines.append(json.dumps(e, ensure_ascii=False, default=str))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return done


def replay_conversations(path: Path, ids: Iterable[str] | None = None) -> list[MultiTurnRun]:
    """Every recorded conversation of the cassette (or of ``ids`` only), run again from the replies alone. A line that
    is not the recorder's, or a conversation recorded twice, is refused
    (:func:`agentlab.evals.bfcl_check.read_recording`)."""
    by_label = read_recording(path, "multi")
    entries = {e["id"]: e for e in bfcl_official.multi_turn_entries(CATEGORY)}
    # by default the entries recorded both ways (a recording stopped between the two leaves one of them alone)
    wanted = list(ids) if ids is not None else [i for i in dict.fromkeys(k.rsplit("/", 1)[0] for k in by_label)
                                                if all(f"{i}/{m}" in by_label for m in MODES)]
    out = []
    for i in wanted:
        for mode in MODES:
            recorded = by_label.get(f"{i}/{mode}")
            if recorded:
                out.append(run_entry(entries[i], mode, bfcl._Replayed(recorded)))  # replayed as single-turn replays
    return out


def graded_conversations(size: str, n: int = SAMPLE) -> list[MultiTurnRun]:
    """``size``'s recorded conversations, once the recording is held to the sample of ``n`` entries
    (:func:`agentlab.evals.bfcl_check.check_recording`: raises :class:`~agentlab.evals.bfcl_check.Untrusted` for
    conversations outside it, another model's, or entries left out before others recorded), then replayed: those
    recorded both ways, of the sample only."""
    order = sample_ids(n)
    check_recording(cassette(size), "multi", size=size, order=order)
    recorded = read_recording(cassette(size), "multi")
    return replay_conversations(cassette(size), [i for i in order if all(f"{i}/{m}" in recorded for m in MODES)])


def multi_turn_figures(conversations: Iterable[MultiTurnRun]) -> dict[str, dict[str, float]]:
    """Per mode: ``accuracy`` (0..1), ``n``, and what it took (model turns, calls executed, calls refused)."""
    out: dict[str, dict[str, float]] = {}
    conversations = list(conversations)
    for mode in MODES:
        rows = [c for c in conversations if c.mode == mode]
        if rows:
            out[mode] = {"n": len(rows), "accuracy": sum(c.correct for c in rows) / len(rows),
                         "model_turns": sum(c.model_turns for c in rows), "calls": sum(c.calls for c in rows),
                         "refused": sum(c.refused for c in rows), "forced": sum(c.forced for c in rows)}
    return out

"""A paper's table, reproduced: BFCL graded on the local models, with and without the interface's help.

The Berkeley Function-Calling Leaderboard asks a model one question with a few function docs and grades
its call against accepted values (the "AST" rule). This module reads the BFCL data from the public
datasets folder (``$AGENTLAB_DATASETS/bfcl``; never shipped), takes a fixed seeded sample of each
category, and grades three ways of asking the same model the same question:

``single``
    one reply, graded as it is: what the leaderboard measures.
``reask``
    the guarded loop (:func:`~agentlab.loop.run_guarded`): a call that fails the registry's checks (an
    unknown function, broken JSON, a field the doc does not have, a wrong type, a missing required
    argument) is answered with the readable error and the model asked again, within the loop's budget.
    The functions are not run: once every call of a reply passes the checks, the reply is graded. The
    first model turn is the single-shot reply, so one recording serves both modes.
``constrained``
    one reply whose calls a grammar constrains while the model writes them
    (:class:`~agentlab.models.constrained.ConstrainedModel`); words stay possible.

The grading rule follows BFCL's AST checker: the right function; every required argument present; no
argument the doc does not have; each value among the accepted ones (strings compared without case,
spaces and ``,./-_*^``; an integer accepted where a float is expected, but not inside a list of floats;
a value of an accepted answer's own type accepted when the doc's type differs; an optional argument may be
left out only when ``""`` is among its accepted values); for ``parallel`` each expected call, in order, takes
the first unpaired call that matches it (BFCL's greedy pairing, so the order of the calls can matter); for
``irrelevance`` and ``live_irrelevance``, no call (a call whose arguments are not JSON is none). It is a
reimplementation from the rule's description, checked against the upstream ground truth: every expected answer
grades as correct in the order given, except ``simple_python_200``, whose answer leaves out an argument its own doc
requires. The leaderboard's own checker grades the same replies in :mod:`agentlab.evals.bfcl_compare`.
"""
from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..guards import GuardConfig
from ..loop import run_guarded
from ..models.cassette import reply_from_dict
from ..models.fakes import ScriptError
from ..models.interface import Model, ModelError, Reply
from ..resources import datasets_dir
from ..schema import close_objects
from ..tools import Registry, Tool, from_legacy_types

__all__ = [
    "CATEGORIES",
    "CONTRACT_KINDS",
    "EXAMPLE_MARKS",
    "KINDS",
    "MODES",
    "PUBLISHED",
    "Attempt",
    "Question",
    "accuracy",
    "bfcl_cassette",
    "bfcl_dir",
    "copied_example",
    "copies_counted_wrong",
    "failure_kind",
    "grade_calls",
    "graded_attempts",
    "kinds",
    "load",
    "mean_of",
    "no_call_wanted",
    "questions",
    "recording_order",
    "replay_attempts",
    "run_question",
    "sample_category",
    "tools_for",
    "transitions",
]

Mode = Literal["single", "reask", "constrained"]
CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance")
MODES: tuple[Mode, ...] = ("single", "reask", "constrained")
SEED = 15
PER_CATEGORY = 100

# The BFCL paper (Patil et al., ICML 2025), Table 1, function-calling mode: overall accuracy in percent, for
# Qwen2.5-0.5B/1.5B-Instruct. Two differences make it a reference point, not the same measurement: the overall
# figure covers more categories than the four sampled here (live, multi-turn...), and the local models are the
# Coder variants of the same size, quantized (agentlab.models.local.WEIGHTS).
PUBLISHED = {"0.5b": {"overall": 27.1}, "1.5b": {"overall": 36.6}}

# the reask mode: the guarded loop's budget of re-asks, and nothing else of it in the way
REASK = GuardConfig(self_correction=2, step_budget=3, timeout=None, retry=None, idempotency=False,
                    approval=False)


def bfcl_dir() -> Path:
    return datasets_dir() / "bfcl"


@dataclass(frozen=True)
class Question:
    id: str
    category: str
    messages: tuple[dict, ...]
    functions: tuple[dict, ...]  # BFCL's function docs, as published
    answers: tuple[dict, ...]  # [{function name: {argument: [accepted values]}}]; () for irrelevance


def load(category: str, root: Path | None = None) -> list[Question]:
    """Every question of a category, with its accepted answers."""
    from .bfcl_check import check_data, release
    root = root or bfcl_dir()
    # the datasets folder keeps the questions in data/; the evaluator's wheel (bfcl_official.wheel_data()) at its top
    folder = root / "data" if (root / "data").is_dir() else root
    question_file = folder / f"BFCL_v4_{category}.json"
    check_data(question_file, f"data/{question_file.name}")  # the release's questions, or a sentence: never others
    entries = [json.loads(line) for line in question_file.read_text(encoding="utf-8").splitlines() if line]
    answers: dict[str, list] = {}
    answer_file = root / "possible_answer" / f"BFCL_v4_{category}.json"
    if answer_file.exists() or f"possible_answer/{answer_file.name}" in release()["files"]:
        # the release has one: missing, every answer was graded wrong (multiple at 0%), and said nothing
        check_data(answer_file, f"possible_answer/{answer_file.name}")
        answers = {a["id"]: a["ground_truth"]
                   for a in map(json.loads, answer_file.read_text(encoding="utf-8").splitlines()) if a}
    return [Question(e["id"], category, tuple(e["question"][0]), tuple(e["function"]), tuple(answers.get(e["id"], ())))
            for e in entries]


def sample_category(category: str, n: int = PER_CATEGORY, *, seed: int = SEED, root: Path | None = None) -> list[Question]:
    """A fixed sample: the same ``n`` questions for a given seed, in the upstream order."""
    questions = load(category, root)
    if n >= len(questions):
        return questions
    chosen = set(random.Random(f"{seed}/{category}").sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in chosen]


def _api_name(name: str) -> str:
    # what BFCL does for function-calling models: an API's tool names may not hold dots
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def tools_for(q: Question) -> tuple[list[dict], dict[str, str]]:
    """The question's functions as OpenAI tools (JSON Schema types, API-safe names) and the names' map back."""
    specs, names = [], {}
    for fn in q.functions:
        params = from_legacy_types(fn.get("parameters") or {"type": "object", "properties": {}})
        api = _api_name(fn["name"])
        names[api] = fn["name"]
        specs.append({"type": "function", "function": {"name": api, "description": fn.get("description", ""),
                                                       "parameters": params}})
    return specs, names


# --- grading --------------------------------------------------------------------------------
_STRIP = re.compile(r"[ ,./\-_*^]")


def _norm(s: str) -> str:
    return _STRIP.sub("", s).lower().replace("'", '"')


def _same(value: Any, accepted: Any, ptype: str | None) -> bool:
    if isinstance(accepted, str) and isinstance(value, str):
        return _norm(value) == _norm(accepted)
    if isinstance(accepted, list) and isinstance(value, list):
        return len(value) == len(accepted) and all(_same(v, a, None) for v, a in zip(value, accepted, strict=True))
    if isinstance(accepted, dict) and isinstance(value, dict):
        return _dict_ok(value, accepted)
    if isinstance(value, bool) or isinstance(accepted, bool):
        return value is accepted
    return bool(value == accepted)  # numbers: an integer where a float is expected is accepted (5 == 5.0)


def _blank(value: Any) -> bool:
    # "" among the accepted values marks an optional argument; a value that normalises to nothing matches it
    return isinstance(value, str) and _norm(value) == ""


def _dict_ok(value: dict, accepted: dict) -> bool:
    """A nested object: every key accepted, the required ones present."""
    for k, v in value.items():
        if k not in accepted or not any(_same(v, a, None) for a in _choices(accepted[k])):
            return False
    return all(k in value or "" in _choices(a) for k, a in accepted.items())


def _choices(accepted: Any) -> list:
    return accepted if isinstance(accepted, list) else [accepted]


_PY_TYPES: dict[str, tuple[type, ...]] = {"float": (float,), "integer": (int,), "boolean": (bool,), "string": (str,),
                                         "array": (list,), "tuple": (list,), "dict": (dict,)}


def _answer_type(accepted: list) -> type | None:
    """The type of the first accepted value that is not the "optional" blank, as BFCL reads it."""
    return next((type(a) for a in accepted if a != ""), None)


def _type_ok(value: Any, spec: Mapping, accepted: list) -> tuple[bool, bool]:
    """BFCL's type check: (passes, compared as a variable).

    The value must have the doc's type; inside a list each item must have the items' type or the type of the
    accepted list it is held against (one accepted list that fits is enough, and an accepted blank skips the check).
    Failing that, the type of the first accepted value decides. When the accepted values' type is not the doc's, BFCL
    treats the argument as a variable name and compares it exactly, without normalising strings."""
    ptype = spec.get("type")
    if ptype not in _PY_TYPES:
        return True, False
    want, answer = _PY_TYPES[ptype][0], _answer_type(accepted)
    variable = answer is not None and answer is not want
    if type(value) is want:
        inner = (spec.get("items") or {}).get("type") if ptype in ("array", "tuple") else None
        if inner not in _PY_TYPES or not isinstance(value, list):
            return True, variable
        inner_type = _PY_TYPES[inner][0]
        for item in accepted:
            if not isinstance(item, list):
                return True, variable
            item_type = _answer_type(item)
            if all(type(v) is inner_type or type(v) is item_type for v in value):
                return True, variable
        return False, variable
    return (True, True) if answer is not None and type(value) is answer else (False, False)


def _call_ok(doc: Mapping, name: str, args: Any, expected: Mapping[str, Mapping]) -> str | None:
    """None when one call matches one expected call, else why not."""
    (want, accepted), = expected.items()
    if name != want:
        return "wrong function"
    if not isinstance(args, dict):
        return "arguments not an object"
    params = (doc.get("parameters") or {}).get("properties", {})
    for r in (doc.get("parameters") or {}).get("required", []):
        if r not in args:
            return f"missing required {r}"
    for k, v in args.items():
        if k not in params or k not in accepted:
            return f"unexpected argument {k}"
        spec = params[k] if isinstance(params[k], dict) else {}
        if spec.get("type") == "float" and type(v) is int:
            v = float(v)  # only at the top level: inside a list an integer is not a float
        ok, variable = _type_ok(v, spec, _choices(accepted[k]))
        if not ok:
            return f"wrong type for {k}"
        if variable:
            if v not in _choices(accepted[k]):
                return f"wrong value for {k}"
        elif not any(_same(v, a, spec.get("type")) for a in _choices(accepted[k]) if a != "" or _blank(v)):
            return f"wrong value for {k}"
    for k, a in accepted.items():
        if k not in args and "" not in _choices(a):
            return f"missing {k}"
    return None


def no_call_wanted(category: str) -> bool:
    """Is the right answer no call at all? BFCL decides by the category's name: ``irrelevance`` and
    ``live_irrelevance`` both (an earlier version here matched the first name only, and graded a live irrelevance
    question as a question with no accepted call)."""
    return "irrelevance" in category


def grade_calls(q: Question, calls: Sequence[tuple[str, Any]]) -> str | None:
    """None when the calls are right for ``q`` by BFCL's rule, else the first reason they are not.

    ``calls`` are (BFCL function name, arguments) pairs; arguments that are not JSON are a string."""
    if no_call_wanted(q.category):
        # as BFCL decodes a reply: a call whose arguments are not JSON is no call
        return None if not [c for c in calls if not isinstance(c[1], str)] else "called a function"
    if not calls:
        return "no call"
    docs = {fn["name"]: fn for fn in q.functions}
    if len(calls) != len(q.answers):
        return f"{len(calls)} calls for {len(q.answers)}"
    # BFCL's pairing: each expected call, in order, takes the first unpaired call that matches it
    left = list(range(len(calls)))
    for expected in q.answers:
        (want, _), = expected.items()
        reasons = []
        for i in left:
            name, args = calls[i]
            why = _call_ok(docs[name], name, args, expected) if name in docs else "unknown function"
            if why is None:
                left.remove(i)
                break
            reasons.append(why)
        else:
            return reasons[0] if len(calls) == 1 else f"no call matches {want}"
    return None


# --- asking ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attempt:
    """One question asked one way: the calls graded, and what it took."""

    id: str
    category: str
    mode: Mode
    correct: bool
    reason: str | None  # why it is wrong (None when right)
    calls: tuple[tuple[str, Any], ...]
    turns: int  # model turns used
    valid_first: bool  # did the first reply's calls all pass the registry's checks (or was it words)?
    error: str | None = None  # the model API failed (e.g. the server could not parse the reply)
    problems: tuple[str, ...] = field(default=())  # error codes the guard answered with
    kind: str | None = None  # what is wrong with the graded calls (:data:`KINDS`); None when right


# What can be wrong with a reply, first match wins. The first six break the tool's contract: a grammar
# made from the contract should prevent them, and the guard sees them. The other five keep the contract
# and miss the question: no grammar and no guard can see them.
KINDS = ("bad_json", "unknown_tool", "unknown_field", "wrong_type", "missing_required", "out_of_bounds", "wrong_function",
         "wrong_value", "wrong_count", "no_call", "unwanted_call")  # each said by the catalogue's bfcl.kind.<name>
CONTRACT_KINDS = ("bad_json", "unknown_tool", "unknown_field", "wrong_type", "missing_required", "out_of_bounds")
_REASON_KIND = {"unknown_field": "unknown_field", "wrong_type": "wrong_type", "missing": "missing_required"}


def failure_kind(q: Question, reply: Reply, reg: Registry, why: str | None) -> str | None:
    """Which of :data:`KINDS` a graded reply falls in (None when it is right)."""
    if why is None:
        return None
    if no_call_wanted(q.category):
        return "unwanted_call"
    if not reply.tool_calls:
        return "no_call"
    for c in reply.tool_calls:
        checked = reg.check(c.name, c.arguments)
        if checked.ok or checked.error is None:
            continue
        if checked.error.code == "BAD_JSON":
            return "bad_json"
        if checked.error.code == "UNKNOWN_TOOL":
            return "unknown_tool"
        reasons = [p.reason for p in checked.error.problems]
        for r in ("unknown_field", "wrong_type", "missing"):
            if r in reasons:
                return _REASON_KIND[r]
        return "out_of_bounds"
    if len(reply.tool_calls) != len(q.answers):
        return "wrong_count"
    wanted = sorted(_api_name(name) for answer in q.answers for name in answer)
    return "wrong_function" if sorted(c.name for c in reply.tool_calls) != wanted else "wrong_value"


def _decode(reply: Reply, names: Mapping[str, str]) -> tuple[tuple[str, Any], ...]:
    out = []
    for c in reply.tool_calls:
        try:
            args: Any = json.loads(c.arguments) if c.arguments.strip() else {}
        except ValueError:
            args = c.arguments
        out.append((names.get(c.name, c.name), args))
    return tuple(out)


def _registry(specs: list[dict]) -> Registry:
    # the functions are never run: a call that passes the checks has done all this test asks of it. The tools are
    # built as Registry.from_specs builds them (closed objects), each schema compiled once, not once there and again
    return Registry([Tool(f["name"], f.get("description", ""), close_objects(f.get("parameters") or _EMPTY), fn=_passes)
                     for f in (s.get("function", s) if s.get("type") == "function" else s for s in specs)])


_EMPTY = {"type": "object", "properties": {}}


def _passes(**_: Any) -> dict:
    return {"ok": True}


def _all_valid(reg: Registry, reply: Reply) -> bool:
    return all(reg.check(c.name, c.arguments).ok for c in reply.tool_calls)


class _GradeWhenValid:
    """The model of the reask mode: once the last reply's calls all pass the checks, the turn ends
    (an answer in words, never sent to the model), and that reply is graded."""

    def __init__(self, inner: Model, reg: Registry):
        self.inner, self.reg = inner, reg
        self.name = getattr(inner, "name", "model")
        self.replies: list[Reply] = []

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        if self.replies and self.replies[-1].tool_calls and _all_valid(self.reg, self.replies[-1]):
            return Reply("(graded)")
        reply = self.inner.complete(messages, tools)
        self.replies.append(reply)
        return reply


def run_question(q: Question, mode: Mode, model: Model) -> Attempt:
    """Ask ``q`` of ``model`` in ``mode`` and grade the result (``constrained``: pass a ConstrainedModel)."""
    specs, names = tools_for(q)
    reg = _registry(specs)
    if mode in ("single", "constrained"):
        try:
            reply = model.complete([dict(m) for m in q.messages], specs)
        except ModelError as exc:
            right = no_call_wanted(q.category)  # BFCL: an undecodable reply is not a call
            return Attempt(q.id, q.category, mode, right, None if right else "no call", (), 1, False, exc.code,
                           kind=None if right else "no_call")
        calls = _decode(reply, names)
        why = grade_calls(q, calls)
        return Attempt(q.id, q.category, mode, why is None, why, calls, 1, _all_valid(reg, reply),
                       kind=failure_kind(q, reply, reg, why))
    wrapped = _GradeWhenValid(model, reg)
    *history, last = [dict(m) for m in q.messages]
    system = history.pop(0)["content"] if history and history[0].get("role") == "system" else ""
    run = run_guarded(wrapped, reg, str(last.get("content", "")), config=REASK, system_prompt=system,
                      history=history or None)
    replies = wrapped.replies
    error = next((e.error_code for e in run.events if e.kind == "model" and e.error_code), None)
    problems = tuple(e.error_code for e in run.events if e.kind == "tool" and e.error_code)
    final = replies[-1] if replies else Reply(None)
    calls = _decode(final, names)
    why = grade_calls(q, calls)
    first_ok = bool(replies) and _all_valid(reg, replies[0])
    return Attempt(q.id, q.category, mode, why is None, why, calls, len(replies), first_ok, error, problems,
                   failure_kind(q, final, reg, why))


# --- figures and replay ---------------------------------------------------------------------
def kinds(attempts: Iterable[Attempt]) -> dict[str, dict[str, int]]:
    """How many replies fall in each kind of failure, per mode (every kind listed, zeros included)."""
    out: dict[str, dict[str, int]] = {}
    for a in attempts:
        row = out.setdefault(a.mode, dict.fromkeys(KINDS, 0))
        if a.kind is not None:
            row[a.kind] += 1
    return out


def accuracy(attempts: Iterable[Attempt]) -> dict[str, dict[str, float]]:
    """Accuracy per category and mode (0..1), with ``mean`` the unweighted mean of the categories."""
    table: dict[str, dict[str, list[bool]]] = {}
    for a in attempts:
        table.setdefault(a.mode, {}).setdefault(a.category, []).append(a.correct)
    out: dict[str, dict[str, float]] = {}
    for mode, cats in table.items():
        out[mode] = {c: sum(v) / len(v) for c, v in cats.items()}
        out[mode]["mean"] = sum(out[mode][c] for c in cats) / len(cats)
    return out


def mean_of(fig: Mapping[str, float], categories: Iterable[str]) -> float:
    """The unweighted mean of some categories' accuracies (e.g. leaving out one the prompt decides)."""
    cats = [c for c in categories if c in fig]
    return sum(fig[c] for c in cats) / len(cats) if cats else float("nan")


# The example in the local chat template (agentlab/models/templates/qwen_fenced_tools.jinja) holds these placeholders.
# A reply that holds one copied the example instead of answering; its arguments are not JSON, so BFCL reads no call,
# and on an irrelevance question that grades as right.
EXAMPLE_MARKS = ("<argument name>", "<value>")


def copied_example(a: Attempt) -> bool:
    """Did the graded reply copy the template's example (:data:`EXAMPLE_MARKS`) rather than answer?"""
    texts = [args if isinstance(args, str) else json.dumps(args) for _, args in a.calls]
    return any(mark in text for text in texts for mark in EXAMPLE_MARKS)


def copies_counted_wrong(attempts: Iterable[Attempt]) -> list[Attempt]:
    """The attempts again, with a copied example graded wrong (an unwanted call) however BFCL's rule reads it."""
    return [replace(a, correct=False, reason="copied the example", kind="unwanted_call")
            if a.correct and copied_example(a) else a for a in attempts]


def transitions(attempts: Iterable[Attempt], before: str = "single", after: str = "constrained") -> Counter[tuple[str, str]]:
    """Where each question's reply went from one mode to another: (kind or "right", kind or "right") -> questions."""
    by: dict[tuple[str, str], Attempt] = {(a.id, a.mode): a for a in attempts}
    out: Counter[tuple[str, str]] = Counter()
    for (qid, mode), a in by.items():
        b = by.get((qid, after))
        if mode == before and b is not None:
            out[(a.kind or "right", b.kind or "right")] += 1
    return out


def bfcl_cassette(size: str) -> Path:
    from ..resources import data_file
    return data_file("cassettes") / f"bfcl-{size}.jsonl"


def replay_attempts(path: Path, questions: Iterable[Question]) -> list[Attempt]:
    """Every mode of every recorded question, from the cassette alone (no model running). A line that is not the
    recorder's, or a conversation recorded twice, is refused (:func:`agentlab.evals.bfcl_check.read_recording`)."""
    from .bfcl_check import read_recording
    by_label = read_recording(path, "single")  # read once: a label's turns are picked from memory, not from the file
    out: list[Attempt] = []
    for q in questions:
        loop, constrained = by_label.get(f"{q.id}/loop"), by_label.get(f"{q.id}/constrained")
        if loop:
            try:
                reask = run_question(q, "reask", _Replayed(loop))
            except ScriptError:  # a recording cut short (still being made, or stopped): not a result
                continue
            out += [run_question(q, "single", _Replayed(loop[:1])), reask]
        if constrained:
            out.append(run_question(q, "constrained", _Replayed(constrained)))
    return out


class _Replayed:
    """One recorded conversation, reply by reply (a recorded API error is raised again)."""

    def __init__(self, entries: list[dict]):
        self.entries, self.used = entries, 0
        self.name = entries[0].get("model", "replay") if entries else "replay"

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        if self.used >= len(self.entries):
            raise ScriptError(f"the recording has {len(self.entries)} replies; reply {self.used + 1} was asked for")
        e = self.entries[self.used]
        self.used += 1
        if "error" in e:
            raise ModelError(e["error"]["code"], "replayed", status=e["error"].get("status"))
        return reply_from_dict(e["reply"])


def questions(n: int = PER_CATEGORY, *, seed: int = SEED, root: Path | None = None,
              categories: Sequence[str] = CATEGORIES) -> list[Question]:
    """The sample every recording and replay uses: ``n`` per category."""
    return [q for c in categories for q in sample_category(c, n, seed=seed, root=root)]


def graded_attempts(size: str, n: int = PER_CATEGORY, *, categories: Sequence[str] = CATEGORIES,
                    root: Path | None = None) -> list[Attempt]:
    """Every mode of every question of ``categories`` that ``size``'s recording answers, once the recording is held to
    the sample of ``n`` per category (:func:`agentlab.evals.bfcl_check.check_recording`) and every question but its
    last replays whole. Raises :class:`~agentlab.evals.bfcl_check.Untrusted` otherwise."""
    from .bfcl_check import check_recording
    sample = questions(n, root=root)
    path = bfcl_cassette(size)
    covered = check_recording(path, "single", size=size, order=[q.id for q in recording_order(sample)],
                              groups={q.id: q.category for q in sample})
    every = replay_attempts(path, [q for q in sample if q.id in set(covered.ids)])
    whole = {a.id for a in every if a.mode == "reask"} & {a.id for a in every if a.mode == "constrained"}
    covered.check_replayed(whole)
    return [a for a in every if a.category in categories]


def recording_order(questions: Iterable[Question], categories: Sequence[str] = CATEGORIES) -> list[Question]:
    """The order the recorders ask a sample in: round robin over the categories (the first of each, then the second
    of each...), so a recording cut short covers every category alike and lacks only the questions at its end
    (:func:`agentlab.evals.bfcl_check.check_recording` holds a recording to it)."""
    by: dict[str, list[Question]] = {c: [] for c in categories}
    for q in questions:
        if q.category in by:
            by[q.category].append(q)
    return [q for row in itertools.zip_longest(*by.values()) for q in row if q is not None]




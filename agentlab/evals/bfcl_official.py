"""The leaderboard's own evaluator (``bfcl-eval``, Apache-2.0), imported and called, never copied.

agentlab grades BFCL with a checker of its own (:mod:`agentlab.evals.bfcl`). This module puts the official one
beside it: the AST checker for the single-turn categories, and, for multi-turn, the executable environments
(file system, trading bot, travel booking, vehicle control, messaging, tickets, maths) and the multi-turn checker
that compares the model's end state and results with the ground truth's, turn by turn.

It is an optional extra (``requirements-bfcl.txt``): ``bfcl-eval`` installed without its declared dependencies,
plus the two its checker and environments import (``mpmath`` for the maths API, ``filelock`` for its utilities).
The declared ones (sentence-transformers, faiss, a dozen providers' SDKs) serve its model handlers and memory
categories, which nothing here runs. One module of it cannot be imported that way:
``bfcl_eval.constants.model_config`` imports every provider's handler, and the AST checker reads a single flag
from it (``underscore_to_dot``: did the model's API turn dots in function names into underscores?). The calls
graded here carry their names with the dots put back (:func:`agentlab.evals.bfcl.tools_for` keeps the map), which
is what the flag's ``False`` means, so a stand-in module answering ``False`` for every model is registered before
the checker is imported (:func:`_checker`), unless the real module is already loaded.

The data comes from the wheel too (``bfcl_eval/data``): the same files as the public datasets folder
(``../shared/datasets/bfcl``, commit 6ea57973), so CI grades the recorded replies with the extra alone.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import sys
import types
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "INSTALL",
    "MODEL_NAME",
    "PINNED",
    "Environment",
    "OfficialVerdict",
    "ast_verdict",
    "call_string",
    "evaluator_installed",
    "functions_for",
    "multi_turn_entries",
    "multi_turn_verdict",
    "version",
    "wheel_data",
]

PINNED = "2026.3.23"  # the version requirements-bfcl.txt installs (constraints.txt pins it)
#: how to install the extra by hand (run.py setup requirements-bfcl.txt does the same)
INSTALL = "pip install --no-deps -r requirements-bfcl.txt -c constraints.txt"
MODEL_NAME = "agentlab-local"  # what the checker is told the model is called (it names nothing else by it)
_NEEDS = ("bfcl_eval", "mpmath", "filelock")


def evaluator_installed() -> bool:
    """Is the extra installed (``bfcl-eval`` and the two packages its checker and environments import)?"""
    return all(importlib.util.find_spec(m) is not None for m in _NEEDS)


def version() -> str | None:
    try:
        return importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        return None


def wheel_data() -> Path:
    """The BFCL data inside the installed wheel (questions, accepted answers, multi-turn function docs)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"bfcl-eval is not installed ({INSTALL})")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


class _Flags:
    underscore_to_dot = False  # the names graded here carry their dots (see the module's docstring)


class _AnyModel(dict):
    def __missing__(self, key: str) -> _Flags:
        return _Flags()


@cache
def _checker() -> types.SimpleNamespace:
    """The official functions, imported once (the stand-in for the handlers' registry first)."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stand_in = types.ModuleType(name)
        stand_in.MODEL_CONFIG_MAPPING = _AnyModel()  # type: ignore[attr-defined]
        sys.modules[name] = stand_in
    ast = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
    enums = importlib.import_module("bfcl_eval.constants.enums")
    utils = importlib.import_module("bfcl_eval.utils")
    mt = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    mt_utils = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
    return types.SimpleNamespace(ast_checker=ast.ast_checker, python=enums.Language.PYTHON,
                                 is_empty_output=utils.is_empty_output,
                                 is_call_format=utils.is_function_calling_format_output,
                                 multi_turn_checker=mt.multi_turn_checker,
                                 irrelevance_checker=mt.multi_turn_irrelevance_checker,
                                 execute=mt_utils.execute_multi_turn_func_call,
                                 is_empty_execute=mt_utils.is_empty_execute_response,
                                 instances=vars(mt_utils))


@dataclass(frozen=True)
class OfficialVerdict:
    """The official checker's word on one reply: right or not, and its error type and message when not."""

    valid: bool
    error_type: str | None = None
    error: str | None = None


# --- single turn: the AST checker ---------------------------------------------------------------
def _decoded(calls: Sequence[tuple[str, Any]]) -> list[dict] | None:
    """The calls as the leaderboard's function-calling handlers decode them, or None where decoding fails
    (arguments that are not JSON: here a string, as :func:`agentlab.evals.bfcl.grade_calls` receives them)."""
    if any(isinstance(args, str) for _, args in calls):
        return None
    return [{name: args} for name, args in calls]


def ast_verdict(category: str, functions: Sequence[Mapping], answers: Sequence[Mapping],
                calls: Sequence[tuple[str, Any]]) -> OfficialVerdict:
    """Grade one single-turn reply as the leaderboard's evaluation does.

    ``calls`` are (BFCL function name, decoded arguments) pairs, arguments that are not JSON as a string.
    Irrelevance (and live irrelevance): right when no call decodes. Every other category: the decoded calls must
    have the call format, then :func:`ast_checker` decides (simple, multiple, parallel, parallel-multiple, by
    the category's name, as the leaderboard dispatches)."""
    c = _checker()
    decoded = _decoded(calls)
    if "irrelevance" in category:
        called = decoded is not None and not c.is_empty_output(decoded)
        return OfficialVerdict(True) if not called else OfficialVerdict(False, "irrelevance_error:decoder_success",
                                                        "Valid syntax. Successfully decode AST when it should not.")
    if decoded is None:
        return OfficialVerdict(False, "ast_decoder:decoder_failed", "Invalid syntax. Failed to decode AST.")
    if not c.is_call_format(decoded):
        return OfficialVerdict(False, "ast_decoder:decoder_wrong_output_format", "Did not output in the specified format.")
    out = c.ast_checker(_fresh(functions), decoded, _fresh(answers), c.python, category, MODEL_NAME)
    if out["valid"]:
        return OfficialVerdict(True)
    return OfficialVerdict(False, out.get("error_type"), "; ".join(map(str, out.get("error") or [])))


#: id(a question's functions or answers) -> (that object, its JSON text): a question is graded once per reply and
#: per probe (about 30 each), and writing its JSON again each time was an eighth of notebook 18's live grading. The
#: object is kept beside its text, so its id cannot be another object's while the entry lives
_TEXTS: dict[int, tuple[Any, str]] = {}


def _fresh(value: Sequence[Mapping]) -> list:
    """``value`` as the leaderboard's loader gives it to the checker: plain JSON lists and dicts, a new copy each time
    (tuples and read-only mappings would fail its ``type(x) == list`` checks; nothing it changes reaches ``value``).
    Only a tuple's text is kept (a question's, which nothing edits): a list a caller may change is written anew."""
    if type(value) is not tuple:
        return json.loads(json.dumps(list(value)))
    kept = _TEXTS.get(id(value))
    if kept is None or kept[0] is not value:
        if len(_TEXTS) >= 4096:
            _TEXTS.clear()
        kept = _TEXTS[id(value)] = (value, json.dumps(list(value)))
    return json.loads(kept[1])


# --- multi turn: the environments and the checker -----------------------------------------------
def multi_turn_entries(category: str = "multi_turn_base") -> list[dict]:
    """Every entry of a multi-turn category, each with its ``ground_truth`` (one list of call strings per turn)."""
    root = wheel_data()
    answers = {a["id"]: a["ground_truth"] for a in _jsonl(root / "possible_answer" / f"BFCL_v4_{category}.json")}
    return [{**e, "ground_truth": answers[e["id"]]} for e in _jsonl(root / f"BFCL_v4_{category}.json")]


def functions_for(entry: Mapping) -> list[dict]:
    """The function docs an entry offers: those of its involved classes, less any it excludes."""
    cfg = importlib.import_module("bfcl_eval.constants.executable_backend_config")
    root = wheel_data() / "multi_turn_func_doc"
    left_out = set(entry.get("excluded_function") or ())
    docs = [d for cls in entry["involved_classes"] for d in _jsonl(root / cfg.MULTI_TURN_FUNC_DOC_FILE_MAPPING[cls])]
    return [d for d in docs if d["name"] not in left_out]


def call_string(name: str, args: Mapping[str, Any]) -> str:
    """One call in the form the environments execute and the checker reads: ``name(key=value, ...)``, each value
    as Python writes it (the leaderboard's decoding of a function-calling reply gives the same)."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})"


class Environment:
    """One entry's environments, live: calls run against the classes' instances, which keep their state.

    The official executor keeps the instances in its module, named after the model and the entry; each
    Environment takes a name of its own, so two runs of the same entry never share a state, and drops its
    instances when closed (a context manager)."""

    def __init__(self, entry: Mapping):
        self.entry = entry
        self.name = f"{MODEL_NAME}_{uuid.uuid4().hex[:10]}"

    def run(self, calls: Sequence[str]) -> list[str]:
        """Execute call strings in order; what each returned, as the model is shown it."""
        results, _ = _checker().execute(list(calls), self.entry["initial_config"], self.entry["involved_classes"],
                                        self.name, self.entry["id"], long_context=False, is_evaL_run=False)
        return list(results)

    def close(self) -> None:
        _forget(self.name)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _forget(prefix: str) -> None:
    space = _checker().instances
    for key in [k for k in space if isinstance(k, str) and k.startswith(prefix)]:
        del space[key]


@contextmanager
def _graded_name() -> Iterator[str]:
    name = f"{MODEL_NAME}_grade_{uuid.uuid4().hex[:10]}"
    try:
        yield name
    finally:
        _forget(name)


def multi_turn_verdict(entry: Mapping, steps: Sequence[Sequence[Sequence[str]]]) -> OfficialVerdict:
    """Grade one multi-turn conversation with the official checker (state and results, after every turn).

    ``steps``: per user turn, the model's steps, each the call strings it made in one reply (the calls that were
    executed). A conversation that did not reach every turn (forced to stop) is wrong, as the leaderboard scores it."""
    gt = entry["ground_truth"]
    if len(steps) != len(gt):
        return OfficialVerdict(False, "multi_turn:force_terminated", f"{len(steps)} turns of {len(gt)}")
    c = _checker()
    decoded = [[list(s) for s in turn if not c.is_empty_execute(list(s))] for turn in steps]
    with _graded_name() as name:
        out = c.multi_turn_checker(decoded, gt, dict(entry), entry["id"].rsplit("_", 1)[0], name)
        # the ground truth's own instances are named after the model too
        if not out["valid"]:
            return OfficialVerdict(False, out.get("error_type"), str(out.get("error_message", ""))[:300])
    irr = c.irrelevance_checker(decoded, gt)
    if not irr["valid"]:
        return OfficialVerdict(False, irr.get("error_type"), str(irr.get("error_message", ""))[:300])
    return OfficialVerdict(True)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

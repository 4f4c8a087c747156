"""BFCL asked the leaderboard's own way, so that its published figure can be reproduced before the guards are judged.

The leaderboard lists the small Qwen2.5 Instruct models in its "prompt" mode: no tools field, the functions written
into a system prompt of its own that asks for calls as a Python list (``[f(a=1), g(b="x")]``), the reply decoded by
its own parser and graded by its AST checker. The workbook's other recordings (:mod:`agentlab.evals.bfcl`) ask with
the workbook's chat template (fenced json blocks), which is a different test: there, the models never wrote two
calls in one reply, so ``parallel`` scored 0 where the leaderboard prints 53.5% and 70.0%.

This module asks the leaderboard's way, with its parts imported from ``bfcl-eval`` (never copied): the system prompt
(``system_prompt_pre_processing_chat_model``), and the decoder (``default_decode_ast_prompting``). The prompt is
rendered with the model's own chat format (Qwen's ChatML, as the leaderboard's Qwen handler writes it) and completed
greedily by llama.cpp. What is recorded is the model's raw text; decoding and grading happen on replay, so a replay
is the leaderboard's pipeline end to end on the recorded words. One difference is known and kept so the recordings
stay what the code asks: the leaderboard's generation loads each function's description with a closing sentence (that
the function is in Python 3 syntax), and the prompt here is built from the functions as the data holds them.

Two ways of asking, one recording:

``raw``
    one reply, decoded and graded: the figure to hold beside the leaderboard's.
``guarded``
    the guarded loop's re-ask (:func:`agentlab.loop.run_guarded` with :data:`agentlab.evals.bfcl.REASK`): a decoded
    call that fails its function's schema (an unknown function, a missing required argument, a wrong type, an
    argument the function does not have) is answered with the readable error, and the model asked again. The
    first reply is the raw one, so the guarded conversation starts with it.

:func:`reproduced` says whether the leaderboard's figure lies within the 95% interval of the raw sample's figure
(Wilson's): only there does the workbook say what the guards add.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..i18n import Lang, joined, t
from ..loop import run_guarded
from ..models.constrained import post_json
from ..models.fakes import ScriptError
from ..models.interface import ModelError, Reply, ToolCall, Usage
from ..resources import data_file
from ..tools import Registry, Tool, from_legacy_types
from . import bfcl, bfcl_official
from .bfcl_check import Untrusted, check_recording, read_recording, read_results_file

__all__ = [
    "LEADERBOARD_FILE",
    "LeaderboardWay",
    "PromptedAttempt",
    "TextCompletion",
    "ask_prompted",
    "chatml",
    "decode_prompted",
    "grade_prompting",
    "graded_recording",
    "leaderboard",
    "leaderboard_table",
    "multi_turn_rows",
    "prompt_cassette",
    "prompt_messages",
    "prompting_figures",
    "prompting_results",
    "read_prompting",
    "recorded_texts",
    "replay_prompted",
    "reproduced",
    "wilson",
    "write_prompting",
]

Way = Literal["raw", "guarded"]
MAX_TOKENS = 512  # a parallel reply of four calls with long values fits; the leaderboard caps by context instead
LEADERBOARD_FILE = "bfcl/leaderboard.json"


# --- the leaderboard's prompt, its decoder, the model's chat format ----------------------------------------------
@cache
def _utils() -> Any:
    # the stand-in for the evaluator's table of providers (bfcl_official's docstring) must be registered first
    bfcl_official._checker()
    from bfcl_eval.model_handler import utils
    return utils


def prompt_messages(q: bfcl.Question) -> list[dict]:
    """The question's messages with the leaderboard's system prompt for prompt-mode models put first."""
    messages = [dict(m) for m in q.messages]
    return _utils().system_prompt_pre_processing_chat_model(messages, json.loads(json.dumps(list(q.functions))), q.id)


def chatml(messages: Sequence[Mapping[str, Any]]) -> str:
    """ChatML as Qwen2.5's own template writes it when a system message is given and no tools field is used, with
    the assistant's turn opened. A tool message (the guarded loop's readable error) is a user turn."""
    parts = []
    for m in messages:
        role = "user" if m.get("role") == "tool" else str(m.get("role"))
        parts.append(f"<|im_start|>{role}\n{m.get('content') or ''}<|im_end|>\n")
    return "".join(parts) + "<|im_start|>assistant\n"


def decode_prompted(text: str) -> list[tuple[str, Any]] | None:
    """The reply decoded by the leaderboard's prompt-mode decoder: (function name, arguments) pairs, or None where
    it cannot decode it (which the leaderboard grades as no call)."""
    try:
        out = _utils().default_decode_ast_prompting(text)
    except Exception:  # noqa: BLE001 - whatever its parser raises is "does not decode", as the leaderboard counts it
        return None
    if not isinstance(out, list) or not all(isinstance(c, dict) and len(c) == 1 for c in out):
        return None
    return [next(iter(c.items())) for c in out]


class TextCompletion:
    """The local model asked the leaderboard's way: the conversation rendered to ChatML with the leaderboard's
    system prompt, completed greedily by llama.cpp's ``/completion``; the reply is the raw text (``tools`` unused:
    the functions are in the prompt)."""

    def __init__(self, base_url: str, q: bfcl.Question, *, name: str = "local", max_tokens: int = MAX_TOKENS,
                 timeout: float = 900.0):
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.system = prompt_messages(q)[0]
        self.name, self.max_tokens, self.timeout = name, max_tokens, timeout

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        rest = [m for m in messages if m.get("role") != "system"]  # the loop's system notes are not the leaderboard's
        body = {"prompt": chatml([self.system, *_texts(rest)]), "temperature": 0, "n_predict": self.max_tokens,
                "cache_prompt": True}
        out = post_json(self.root, "/completion", body, timeout=self.timeout)
        usage = Usage(int(out.get("tokens_evaluated") or 0), int(out.get("tokens_predicted") or 0))
        return Reply(str(out.get("content") or ""), (), usage)


def _texts(messages: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The conversation as the model saw it: an assistant turn is its raw text (kept as the reply's content)."""
    return [{"role": m.get("role"), "content": m.get("content") or ""} for m in messages]


class _Decoding:
    """A text model's replies decoded into calls by the leaderboard's decoder (the text kept as the content)."""

    def __init__(self, inner: Any):
        self.inner, self.name = inner, getattr(inner, "name", "model")
        self.replies: list[Reply] = []

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        raw = self.inner.complete(messages, tools)
        text = raw.content or ""
        calls = decode_prompted(text) or []
        try:
            made = tuple(ToolCall(name, json.dumps(args, ensure_ascii=False), f"c{i}") for i, (name, args) in enumerate(calls))
        except (TypeError, ValueError):  # a value JSON cannot hold (the decoder evaluates literals): read as words
            made = ()
        reply = Reply(text, made, raw.usage)
        self.replies.append(reply)
        return reply


# --- asking and grading ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptedAttempt:
    """One question asked the leaderboard's way, graded by both checkers."""

    id: str
    category: str
    way: Way
    calls: tuple[tuple[str, Any], ...]
    ours: bool  # the workbook's checker
    official: bool  # the leaderboard's checker
    official_error: str | None
    turns: int
    decoded: bool  # did the graded reply decode (words that are not calls do not)
    resent: bool = False  # re-asked, and every reply the same text as the first (the error went unread)


def _registry(q: bfcl.Question) -> Registry:
    # the functions under their own names (dots kept: the prompt shows them so), schemas closed, never run
    specs = [{"type": "function", "function": {"name": fn["name"], "description": fn.get("description", ""),
                                               "parameters": from_legacy_types(fn.get("parameters") or
                                                                               {"type": "object", "properties": {}})}}
             for fn in q.functions]
    return Registry([Tool(t.name, t.description, t.parameters, fn=lambda **_: {"ok": True})
                     for t in Registry.from_specs(specs)])


class _StopWhenValid:
    """The guarded way's model: once the last reply's calls all pass the checks, the turn ends and that reply is
    graded; words end it too (the loop takes them as the answer)."""

    def __init__(self, inner: _Decoding, reg: Registry):
        self.inner, self.reg, self.name = inner, reg, inner.name

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        last = self.inner.replies[-1] if self.inner.replies else None
        if last is not None and last.tool_calls and all(self.reg.check(c.name, c.arguments).ok for c in last.tool_calls):
            return Reply("(graded)")
        return self.inner.complete(messages, tools)


def _graded(q: bfcl.Question, way: Way, reply: Reply | None, turns: int, resent: bool = False) -> PromptedAttempt:
    text = (reply.content or "") if reply else ""
    decoded = decode_prompted(text)
    calls = tuple(decoded or ())
    ours = bfcl.grade_calls(q, calls) is None
    verdict = bfcl_official.ast_verdict(q.category, q.functions, q.answers, calls) if decoded is not None else (
        bfcl_official.ast_verdict(q.category, q.functions, q.answers, [("?", text)]))
    return PromptedAttempt(q.id, q.category, way, calls, ours, verdict.valid, verdict.error_type, turns,
                           decoded is not None and bool(calls), resent)


def ask_prompted(q: bfcl.Question, way: Way, model: Any) -> PromptedAttempt:
    """Ask ``q`` of a text model (a :class:`TextCompletion`, or a recording of one) the leaderboard's way."""
    decoding = _Decoding(model)
    if way == "raw":
        try:
            reply = decoding.complete(prompt_messages(q)[1:], [])
        except ModelError:
            reply = None
        return _graded(q, way, reply, 1)
    reg = _registry(q)
    *history, last = prompt_messages(q)[1:]
    try:
        run_guarded(_StopWhenValid(decoding, reg), reg, str(last.get("content", "")), config=bfcl.REASK,
                    history=history or None)
    except ModelError:
        pass
    final = decoding.replies[-1] if decoding.replies else None
    texts = {r.content for r in decoding.replies}
    return _graded(q, way, final, len(decoding.replies), resent=len(decoding.replies) > 1 and len(texts) == 1)


# --- recording and replay ----------------------------------------------------------------------------------------
def prompt_cassette(size: str) -> Path:
    return data_file("cassettes") / f"bfcl-prompt-{size}.jsonl"


class _Replayed:
    """One question's recorded texts, reply by reply."""

    def __init__(self, texts: list[str]):
        self.texts, self.used, self.name = texts, 0, "replay"

    def complete(self, messages: list[dict], tools: list[dict]) -> Reply:
        if self.used >= len(self.texts):
            raise ScriptError(f"the recording has {len(self.texts)} replies; reply {self.used + 1} was asked for")
        self.used += 1
        return Reply(self.texts[self.used - 1])


def recorded_texts(path: Path) -> dict[str, list[str]]:
    """Each question's recorded texts, in the order the model wrote them (no file: none). A line that is not the
    recorder's, or a question recorded twice, is refused (:func:`agentlab.evals.bfcl_check.read_recording`)."""
    if not path.exists():
        return {}
    return {qid: [e["text"] for e in lines] for qid, lines in read_recording(path, "prompt").items()}


def replay_prompted(path: Path, questions: Iterable[bfcl.Question], *, strict: bool = True) -> list[PromptedAttempt]:
    """Both ways of every recorded question, from the recorded texts alone (a question cut short is left out).

    A question recorded with replies the replay never asks for (the code no longer asks what was recorded) is refused
    (:class:`~agentlab.evals.bfcl_check.Untrusted`); with ``strict=False`` it is left out too, as the recorder's
    ``--resume`` needs: it asks such a question again."""
    texts = recorded_texts(path)
    out: list[PromptedAttempt] = []
    for q in questions:
        if q.id not in texts:
            continue
        replayed = _Replayed(texts[q.id])
        try:
            guarded = ask_prompted(q, "guarded", replayed)
        except ScriptError:
            continue
        if replayed.used != len(texts[q.id]):
            if not strict:
                continue
            raise Untrusted("bfcl.check.replies", file=path.name, id=q.id, recorded=len(texts[q.id]),
                            asked=replayed.used)
        out += [ask_prompted(q, "raw", _Replayed(texts[q.id][:1])), guarded]
    return out


# --- the leaderboard's figures, and whether they are reproduced ----------------------------------------------------
@cache
def leaderboard() -> dict:
    """The leaderboard's published figures for the nearest models (``data/bfcl/leaderboard.json``)."""
    return json.loads(data_file(LEADERBOARD_FILE).read_text(encoding="utf-8"))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval for k successes of n, in percent to one decimal (as the tables show it)."""
    low, high = _wilson(k, n, z)
    return (round(low, 1), round(high, 1))


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 100.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # at k = 0 (or n) the bound is exactly 0 (or 1); the subtraction leaves a rounding error that would exclude it
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return (100 * low, 100 * high)


def reproduced(k: int, n: int, published: float | None) -> bool | None:
    """Does the published figure (percent) lie within the 95% interval of k of n? None when nothing is published."""
    if published is None:
        return None
    low, high = _wilson(k, n)  # unrounded: a figure just outside the shown interval is outside
    return low <= published <= high


def prompting_figures(attempts: Iterable[PromptedAttempt], size: str) -> list[dict]:
    """One row per category: n, the leaderboard's figure, ours and the official checker's on the raw replies, the
    official checker's on the guarded ones, the raw figure's 95% interval, whether the leaderboard's lies in it, and
    what the re-ask did: questions re-asked, of those the ones answered with the same text every time, and the
    questions whose grade the guarded way changed (raw and guarded are paired by question, in the same order)."""
    by: dict[tuple[str, str], list[PromptedAttempt]] = {}
    for a in attempts:
        by.setdefault((a.category, a.way), []).append(a)
    published = leaderboard()["models"].get(size, {}).get("categories", {})
    rows = []
    for cat in bfcl.CATEGORIES:
        raw, guarded = by.get((cat, "raw"), []), by.get((cat, "guarded"), [])
        after = {a.id: a.official for a in guarded}
        if not raw:
            continue
        n, k = len(raw), sum(a.official for a in raw)
        lb = published.get(cat)
        low, high = wilson(k, n)
        rows.append({"category": cat, "n": n, "leaderboard": lb,
                     "ours_raw": round(100 * sum(a.ours for a in raw) / n, 1),
                     "official_raw": round(100 * k / n, 1),
                     "official_guarded": round(100 * sum(a.official for a in guarded) / len(guarded), 1) if guarded else None,
                     "interval": [round(low, 1), round(high, 1)], "reproduced": reproduced(k, n, lb),
                     "reasked": sum(a.turns > 1 for a in guarded), "resent": sum(a.resent for a in guarded),
                     "changed": sum(a.official != after[a.id] for a in raw if a.id in after)})
    return rows


# --- what notebook 18 shows: live, or the shipped file ---------------------------------------------------------------
SHIPPED = "bfcl/prompting.json"
_SEP = {"en": " ", "zh": ""}  # between two sentences


@dataclass(frozen=True)
class LeaderboardWay:
    """Per size, one row per category (:func:`prompting_figures`): live from the recordings, or the shipped file."""

    live: bool
    rows: dict[str, list[dict]]
    evaluator: str

    def said(self, lang: Lang = "en") -> str:
        return t("nb18.prompting_live" if self.live else "nb18.prompting_shipped", lang, version=self.evaluator,
                 command=bfcl_official.INSTALL)

    def table(self, size: str) -> dict[str, dict[str, Any]]:
        """Category -> n, the leaderboard's figure, ours raw, official raw, the interval, official guarded, verdict."""
        yes_no = {True: "yes", False: "no", None: "n/a"}  # English labels: table_view says them in the reader's language
        return {r["category"]: {"n": r["n"], "leaderboard": r["leaderboard"], "ours, raw": r["ours_raw"],
                                "official, raw": r["official_raw"],
                                "95% interval": f"{r['interval'][0]:.1f}-{r['interval'][1]:.1f}",
                                "official, guarded": r["official_guarded"], "reproduced": yes_no[r["reproduced"]]}
                for r in self.rows.get(size, [])}

    def verdict_said(self, size: str, lang: Lang = "en") -> str:
        """Which categories reproduce the leaderboard's figure, and what the guards add in those alone."""
        rows = self.rows.get(size, [])
        same = [r for r in rows if r["reproduced"]]
        differ = [r for r in rows if r["reproduced"] is False]
        if not rows:
            return t("nb18.prompting_none", lang, size=size, command="python benchmarks/bench_bfcl_prompting.py")
        if not same and not differ:
            return t("nb18.prompting_nothing_published", lang, size=size) + _SEP[lang] + self.reasks_said(size, lang)
        differ_said = joined((_against(r, lang) for r in differ), lang, "list")
        if not same:
            return t("nb18.prompting_not_reproduced", lang, size=size, differ=differ_said) + _SEP[lang] \
                + self.reasks_said(size, lang)
        added = joined((f"{r['category']} {r['official_raw']:.1f} → {r['official_guarded']:.1f}" for r in same
                        if r["official_guarded"] is not None), lang, "list")
        said = t("nb18.prompting_reproduced", lang, size=size, same=joined((r["category"] for r in same), lang, "list"),
                 added=added, differ=differ_said or "-")
        return said + _SEP[lang] + self.reasks_said(size, lang)

    def reasks_said(self, size: str, lang: Lang = "en") -> str:
        """What the re-ask did, over every category: questions re-asked, answered with the same text every time,
        and grades changed."""
        rows = [r for r in self.rows.get(size, []) if r.get("reasked") is not None]
        return t("nb18.prompting_reasks", lang, n=sum(r["n"] for r in rows), reasked=sum(r["reasked"] for r in rows),
                 resent=sum(r["resent"] for r in rows), changed=sum(r["changed"] for r in rows))


def graded_recording(size: str, n: int = bfcl.PER_CATEGORY) -> list[PromptedAttempt]:
    """Both ways of every question ``size``'s recording answers, once the recording is held to the sample of ``n``
    per category (:func:`agentlab.evals.bfcl_check.check_recording`: raises
    :class:`~agentlab.evals.bfcl_check.Untrusted` for another sample, another model, or questions taken out)."""
    qs = bfcl.questions(n)
    # every category: the prompt-mode recorder has no --categories, so a category missing was taken out
    covered = check_recording(prompt_cassette(size), "prompt", size=size, order=[q.id for q in bfcl.recording_order(qs)])
    attempts = replay_prompted(prompt_cassette(size), qs)
    covered.check_replayed({a.id for a in attempts})  # a question cut short mid re-ask: only the last may be
    return attempts


def grade_prompting(sizes: Iterable[str] = ("0.5b", "1.5b")) -> LeaderboardWay:
    """Decode and grade every recording now (needs the extra; the questions come from the datasets folder)."""
    rows = {s: prompting_figures(graded_recording(s), s) for s in sizes if prompt_cassette(s).exists()}
    return LeaderboardWay(True, rows, bfcl_official.version() or "?")


def write_prompting(rows: Mapping[str, list[dict]] | None = None, path: Path | None = None) -> Path:
    """Write the shipped file from the recordings (or the rows given)."""
    rows = dict(rows) if rows is not None else grade_prompting().rows
    path = path or data_file(SHIPPED)
    doc = {"about": "Notebook 18's leaderboard view: BFCL asked the leaderboard's prompt-mode way "
                    "(agentlab.evals.bfcl_prompting) on the recorded replies (data/cassettes/bfcl-prompt-*.jsonl), "
                    "graded by bfcl-eval, beside the leaderboard's published figures (leaderboard.json). Derived from "
                    "BFCL, Apache-2.0: see LICENSE beside this file. Regenerate: "
                    "python benchmarks/bench_bfcl_prompting.py --replay --ship",
           "evaluator": bfcl_official.version() or "?", "sample": {"seed": bfcl.SEED, "categories": list(bfcl.CATEGORIES)},
           "rows": rows}
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def read_prompting(path: Path | None = None) -> LeaderboardWay:
    """The shipped file (``data/bfcl/prompting.json``), each row held to its own counts first (:func:`_check_row`)."""
    path = path or data_file(SHIPPED)

    def make(d: Any) -> LeaderboardWay:
        rows = d["rows"]
        for size, size_rows in rows.items():
            if [r["category"] for r in size_rows] != list(d["sample"]["categories"]):  # a row taken out: its "no" gone
                raise Untrusted("bfcl.check.shipped_row", file=path.name, size=size, category="-", field="category")
            for row in size_rows:
                _check_row(row, size, path.name)
        return LeaderboardWay(False, rows, str(d["evaluator"]))
    return read_results_file(path, make)


def _check_row(row: Mapping[str, Any], size: str, file: str) -> None:
    """A shipped row's figures are those its own counts give: the official raw figure is k of n, its interval Wilson's
    of k and n, the leaderboard's figure the published one, and the verdict whether that lies in the interval. A row
    edited by hand ("reproduced": true beside an interval that excludes the figure) was shown as it was."""
    n, raw = row["n"], row["official_raw"]
    k = round(raw * n / 100) if isinstance(n, int) and n > 0 and isinstance(raw, int | float) else None
    published = leaderboard()["models"].get(size, {}).get("categories", {}).get(row["category"])
    guarded = row["official_guarded"]
    kg = round(guarded * n / 100) if k is not None and isinstance(guarded, int | float) else None
    wrong = ("n" if k is None else "official_raw" if round(100 * k / n, 1) != raw
             else "leaderboard" if row["leaderboard"] != published
             else "interval" if list(row["interval"]) != list(wilson(k, n))
             else "reproduced" if row["reproduced"] is not reproduced(k, n, published)
             # the guarded figure is k of n too, and moved from the raw one by no more grades than the re-ask changed
             else "official_guarded" if guarded is not None and (kg is None or round(100 * kg / n, 1) != guarded
                                                             or abs(kg - k) > row["changed"])
             else None)
    if wrong is not None:
        raise Untrusted("bfcl.check.shipped_row", file=file, size=size, category=str(row["category"])[:40], field=wrong)


def prompting_results() -> LeaderboardWay:
    """Live where the evaluator and the questions are, else the shipped file: what notebook 18 shows."""
    if bfcl_official.evaluator_installed() and bfcl.bfcl_dir().exists():
        return grade_prompting()
    return read_prompting()


def multi_turn_rows(multi: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, dict]:
    """The base multi-turn category's row per size, from :class:`agentlab.evals.bfcl_compare.Compared`'s ``multi``
    (asked through the workbook's chat template: the leaderboard's prompt mode has no multi-turn recording here)."""
    out = {}
    for size, m in multi.items():
        if not {"raw", "guarded"} <= set(m):
            continue
        n, k = int(m["raw"]["n"]), round(m["raw"]["accuracy"] * m["raw"]["n"])
        lb = leaderboard()["models"].get(size, {}).get("categories", {}).get("multi_turn_base")
        low, high = wilson(k, n)
        out[size] = {"category": "multi_turn_base", "n": n, "leaderboard": lb, "ours_raw": None,
                     "official_raw": round(100 * k / n, 1), "official_guarded": round(100 * m["guarded"]["accuracy"], 1),
                     # asked through the workbook's template, not the leaderboard's way: a figure beside it, never
                     # a reproduction of it
                     "interval": [round(low, 1), round(high, 1)], "reproduced": None,
                     "reasked": None, "resent": None, "changed": None}
    return out


def leaderboard_table(way: LeaderboardWay, lang: Lang = "en", multi: Mapping[str, Any] | None = None) -> str:
    """The README's table: category × model × (leaderboard, ours raw, official raw, official guarded), with n, the raw
    figure's 95% interval and whether the leaderboard's figure lies in it; ``multi`` adds the multi-turn rows."""
    head = t("nb18.prompting_head", lang).split("|")
    rows = ["| " + " | ".join(head) + " |", "|---|---|---:|---:|---:|---:|---|---:|---|"]
    extra = multi_turn_rows(multi or {})
    for size in sorted(set(way.rows) | set(extra)):
        for r in [*way.rows.get(size, []), *([extra[size]] if size in extra else [])]:
            lb, ours, g = ("–" if r[k] is None else f"{r[k]:.1f}" for k in ("leaderboard", "ours_raw", "official_guarded"))
            verdict = {True: t("word.yes", lang), False: t("word.no", lang), None: "–"}[r["reproduced"]]
            rows.append(f"| {r['category']} | {size} | {r['n']} | {lb} | {ours} | {r['official_raw']:.1f} "
                        f"| {r['interval'][0]:.1f}-{r['interval'][1]:.1f} | {g} | {verdict} |")
    return "\n".join(rows)


def _against(row: dict, lang: Lang) -> str:
    """A category not reproduced: its official grade of the raw replies beside the leaderboard's, as ``lang`` says it."""
    return t("nb18.prompting_against", lang, category=row["category"], official=f"{row['official_raw']:.1f}",
             leaderboard=f"{row['leaderboard']:.1f}")

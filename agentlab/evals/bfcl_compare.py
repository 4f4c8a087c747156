"""Notebook 18's second look: agentlab's BFCL checker against the leaderboard's own, and multi-turn raw against guarded.

Three views, each graded live where the evaluator is installed (the ``bfcl`` extra, requirements-bfcl.txt), else
read from the shipped results (``data/bfcl/official.json``, with BFCL's license beside it):

1. **The recorded replies, graded twice.** Every recorded single-turn reply of both local models
   (``data/cassettes/bfcl-<size>.jsonl``, every mode) by :func:`agentlab.evals.bfcl.grade_calls` and by the
   official AST checker (:func:`agentlab.evals.bfcl_official.ast_verdict`): agreement per category, and every
   disagreement listed.
2. **Probes on every single-turn category.** The recordings cover four categories; the checkers are also compared
   on every question of every single-turn category the data holds (parallel-multiple and the live ones too): the
   accepted answer itself and systematic changes of it (:func:`probes`), so a rule one checker applies and the
   other does not shows up whatever a model happened to write.
3. **Multi-turn, executed** (:mod:`agentlab.evals.bfcl_multi`): the raw loop against the guarded loop on a fixed
   sample of the base category, graded by the official multi-turn checker, replayed from
   ``data/cassettes/bfcl-multi-<size>.jsonl``.

Regenerate the shipped file: ``python benchmarks/bench_bfcl_multi_turn.py --replay --ship``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..i18n import Lang, t
from ..resources import data_file
from . import bfcl, bfcl_multi, bfcl_official
from .bfcl_check import Untrusted, read_results_file

__all__ = [
    "PROBE_CATEGORIES",
    "SHIPPED",
    "SIZES",
    "Compared",
    "compare_live",
    "official_results",
    "probe_agreement",
    "probes",
    "read_official",
    "single_turn_rows",
    "summary_table",
    "write_official",
]

SHIPPED = "bfcl/official.json"
SIZES = ("0.5b", "1.5b")
#: every single-turn category of the data with accepted answers, Python only (irrelevance: no call is right)
PROBE_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple",
                    "live_parallel", "live_parallel_multiple", "irrelevance", "live_irrelevance")
#: how each side asks (notebook 18 and the README say it beside the figures)
LIKE_FOR_LIKE = {
    "ours": "Qwen2.5-Coder-0.5B/1.5B-Instruct GGUF (0.5B quantized to 4 bits) on llama.cpp; the workbook's chat "
            "template (agentlab/models/templates/qwen_fenced_tools.jinja: tools listed in the system message, each "
            "call a fenced json block); greedy decoding (temperature 0), at most 256 tokens per single-turn reply "
            "and 384 per multi-turn step; no system prompt of the leaderboard's",
    "leaderboard": "the evaluator's own generation: the model's own chat template (Qwen's <tool_call> tags in "
                   "function-calling mode), full precision on vLLM or SGLang, temperature 0.001 by default. This "
                   "version of the evaluator lists no Qwen2.5 model (its nearest: Qwen3-0.6B and Qwen3-1.7B), and "
                   "neither its wheel nor the shared datasets hold leaderboard scores",
}


def probes(q: bfcl.Question) -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    """(what was changed, calls) for one question: its accepted answer (the first accepted value of each argument,
    an argument whose first accepted value is the blank left out) and changes of it that a checker must judge: the calls reversed, an argument dropped,
    a value changed, an integer as a float and back, a string in capitals, a list cut short, an argument added, a
    function renamed, arguments that are not JSON, a call repeated, no call. Irrelevance: no call, a call, a broken one."""
    if "irrelevance" in q.category:
        name = q.functions[0]["name"] if q.functions else "no_function_offered"
        yield from (("none", []), ("call", [(name, {})]), ("bad json", [(name, "{")]))
        return
    base = [(name, {k: vals[0] for k, vals in args.items() if vals and vals[0] != ""})
            for answer in q.answers for name, args in answer.items()]
    yield "expected", base
    if len(base) > 1:
        yield "reversed", base[::-1]
    for i, (name, args) in enumerate(base[:2]):
        def swap(new: dict, i: int = i, name: str = name) -> list[tuple[str, Any]]:
            return [*base[:i], (name, new), *base[i + 1:]]
        for k, v in list(args.items())[:3]:
            yield "dropped", swap({kk: vv for kk, vv in args.items() if kk != k})
            if isinstance(v, bool):
                yield "value", swap({**args, k: not v})
            elif isinstance(v, int | float):
                yield "value", swap({**args, k: v + 1})
                yield "number type", swap({**args, k: float(v) if isinstance(v, int) else int(v)})
            elif isinstance(v, str):
                yield "value", swap({**args, k: v + " x"})
                yield "capitals", swap({**args, k: v.upper()})
            elif isinstance(v, list) and v:
                yield "shorter list", swap({**args, k: v[:1]})
        yield "added", swap({**args, "zz_added": 1})
        yield "renamed", [*base[:i], (name + "_x", args), *base[i + 1:]]
    yield "bad json", [(base[0][0], "{")]
    yield "repeated", base + base[:1]
    yield "none", []


def probe_agreement(root: Path | None = None, categories: Iterable[str] = PROBE_CATEGORIES) -> dict[str, dict[str, int]]:
    """Per category: questions, probes graded, and how many both checkers judged alike."""
    root = root or bfcl_official.wheel_data()
    out = {}
    for c in categories:
        qs = bfcl.load(c, root)
        graded = agree = 0
        for q in qs:
            for _, calls in probes(q):
                graded += 1
                agree += (bfcl.grade_calls(q, calls) is None) == bfcl_official.ast_verdict(
                    c, q.functions, q.answers, calls).valid
        out[c] = {"questions": len(qs), "probes": graded, "agree": agree}
    return out


def single_turn_rows(size: str, root: Path | None = None) -> list[dict[str, Any]]:
    """Every recorded single-turn reply of ``size`` graded by both checkers: id, category, mode, both verdicts."""
    qs = bfcl.questions(root=root or bfcl_official.wheel_data())
    by_id = {q.id: q for q in qs}
    rows = []
    # held to the sample first: another sample, another model's, or questions left out are refused
    for a in bfcl.graded_attempts(size, root=root or bfcl_official.wheel_data()):
        q = by_id[a.id]
        v = bfcl_official.ast_verdict(q.category, q.functions, q.answers, a.calls)
        rows.append({"id": a.id, "category": a.category, "mode": a.mode, "ours": a.correct, "official": v.valid,
                     "our_reason": a.reason, "official_error": v.error_type})
    return rows


def _agreement(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in rows:
        cell = out.setdefault(r["mode"], {}).setdefault(r["category"], {"n": 0, "ours": 0, "official": 0, "agree": 0})
        cell["n"] += 1
        cell["ours"] += r["ours"]
        cell["official"] += r["official"]
        cell["agree"] += r["ours"] == r["official"]
    return out


@dataclass(frozen=True)
class Compared:
    """The three views, for every size recorded."""

    live: bool
    single: dict[str, dict[str, dict[str, dict[str, int]]]]  # size -> mode -> category -> n, ours, official, agree
    disagreements: dict[str, list[dict[str, Any]]]  # size -> the replies the checkers judged differently
    probes: dict[str, dict[str, int]]  # category -> questions, probes, agree
    multi: dict[str, dict[str, dict[str, float]]]  # size -> mode -> n, accuracy, model_turns, calls, refused, forced
    multi_rows: dict[str, list[dict[str, Any]]]  # size -> one row per conversation
    evaluator: str  # bfcl-eval's version
    sample: dict[str, Any] = field(default_factory=dict)

    def said(self, lang: Lang = "en") -> str:
        """Where these figures come from."""
        return t("nb18.official_live" if self.live else "nb18.official_shipped", lang, version=self.evaluator,
                 command=bfcl_official.INSTALL)

    def checker_table(self, size: str) -> dict[str, dict[str, float]]:
        """Per category: the single shot's accuracy by each checker, and their agreement over every mode's replies."""
        modes = self.single.get(size, {})
        out = {}
        for c, v in modes.get("single", {}).items():
            n = sum(m[c]["n"] for m in modes.values() if c in m)
            out[c] = {"ours": v["ours"] / v["n"], "official": v["official"] / v["n"], "replies": n,
                      "agreement": sum(m[c]["agree"] for m in modes.values() if c in m) / n}
        return out

    def probe_table(self) -> dict[str, dict[str, float]]:
        """Per category: questions, probes and the share both checkers graded alike."""
        return {c: {"questions": v["questions"], "probes": v["probes"], "agreement": v["agree"] / v["probes"]}
                for c, v in self.probes.items()}

    def multi_table(self, size: str) -> dict[str, dict[str, float]]:
        """Per loop: conversations, the official checker's accuracy, and what each loop spent and refused."""
        return {mode: {"conversations": v["n"], "accuracy": v["accuracy"], "model turns": v["model_turns"],
                       "calls run": v["calls"], "calls refused": v["refused"], "stopped at the step limit": v["forced"]}
                for mode, v in self.multi.get(size, {}).items()}

    def agreement_said(self, size: str, lang: Lang = "en") -> str:
        cells = [v for m in self.single.get(size, {}).values() for v in m.values()]
        n, agree = sum(v["n"] for v in cells), sum(v["agree"] for v in cells)
        return t("nb18.agreement", lang, size=size, n=n, agree=agree, differ=n - agree)

    def probes_said(self, lang: Lang = "en") -> str:
        v = self.probes.values()
        return t("nb18.probes", lang, n=sum(x["probes"] for x in v), agree=sum(x["agree"] for x in v),
                 questions=sum(x["questions"] for x in v), categories=len(self.probes))

    def multi_said(self, size: str, lang: Lang = "en") -> str:
        m = self.multi.get(size, {})
        if not {"raw", "guarded"} <= set(m):
            return t("nb18.multi_none", lang, size=size, command="python benchmarks/bench_bfcl_multi_turn.py")
        return t("nb18.multi", lang, size=size, n=int(m["raw"]["n"]), raw=m["raw"]["accuracy"],
                 guarded=m["guarded"]["accuracy"], refused=int(m["guarded"]["refused"]), forced=int(m["raw"]["forced"]))


_HEAD = ("category", "model", "n", "leaderboard", "ours_raw", "official_raw", "official_guarded", "none")  # bfcl.col.*


def summary_table(c: Compared, lang: Lang = "en") -> str:
    """The README's table: category × model × (leaderboard, ours raw, official raw, official guarded), with n.

    Single turn: raw is the single shot, guarded the guarded loop's validate-and-reask, n the questions; multi-turn:
    the raw and the guarded loop, n the conversations each (agentlab's own checker has no multi-turn rule)."""
    *head, none = (t(f"bfcl.col.{c}", lang) for c in _HEAD)
    rows = ["| " + " | ".join(head) + " |", "|---|---|---:|---|---:|---:|---:|"]
    for size in c.single:
        modes = c.single[size]
        for cat, v in modes.get("single", {}).items():
            g = modes.get("reask", {}).get(cat)
            guarded = f"{g['official'] / g['n']:.0%}" if g else "–"
            rows.append(f"| {cat} | {size} | {v['n']} | {none} | {v['ours'] / v['n']:.0%} | {v['official'] / v['n']:.0%} "
                        f"| {guarded} |")
        m = c.multi.get(size, {})
        if {"raw", "guarded"} <= set(m):
            rows.append(f"| {bfcl_multi.CATEGORY} | {size} | {m['raw']['n']:.0f} | {none} | – | {m['raw']['accuracy']:.0%} "
                        f"| {m['guarded']['accuracy']:.0%} |")
    return "\n".join(rows)


def _multi_rows(conversations: Iterable[bfcl_multi.MultiTurnRun]) -> list[dict[str, Any]]:
    return [{"id": c.id, "mode": c.mode, "correct": c.correct, "error": c.error_type, "model_turns": c.model_turns,
             "calls": c.calls, "refused": c.refused, "forced": c.forced, "endings": list(c.endings)}
            for c in conversations]


def compare_live(sizes: Iterable[str] = SIZES, *, with_probes: bool = True) -> Compared:
    """Grade everything recorded, now (needs the extra; the questions come from its wheel)."""
    single, disagreements, multi, multi_rows = {}, {}, {}, {}
    for s in sizes:
        if bfcl.bfcl_cassette(s).exists():
            rows = single_turn_rows(s)
            single[s] = _agreement(rows)
            disagreements[s] = [r for r in rows if r["ours"] != r["official"]]
        if bfcl_multi.cassette(s).exists():
            conversations = bfcl_multi.graded_conversations(s)
            multi[s] = bfcl_multi.multi_turn_figures(conversations)
            multi_rows[s] = _multi_rows(conversations)
    return Compared(True, single, disagreements, probe_agreement() if with_probes else {}, multi, multi_rows,
                    bfcl_official.version() or "?", _sample(multi_rows))


def _sample(multi_rows: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"single_turn": {"seed": bfcl.SEED, "per_category": bfcl.PER_CATEGORY, "categories": list(bfcl.CATEGORIES)},
            "multi_turn": {"seed": bfcl_multi.SEED, "category": bfcl_multi.CATEGORY,
                           "entries": {s: len({r["id"] for r in rows}) for s, rows in multi_rows.items()}}}


def as_json(c: Compared) -> dict[str, Any]:
    """The shipped file's content: the figures, where they came from, and under which license."""
    doc = {"about": "Notebook 18's official grading: agentlab's BFCL checker beside the leaderboard's own evaluator "
                    "(bfcl-eval) on the recorded replies (data/cassettes/bfcl-*.jsonl), probes on every single-turn "
                    "category, and multi-turn raw against guarded. Derived from BFCL, Apache-2.0: see LICENSE beside "
                    "this file. Regenerate: python benchmarks/bench_bfcl_multi_turn.py --replay --ship",
           "license": "Apache-2.0", "license_file": "LICENSE",
           "upstream": {"package": "bfcl-eval", "version": c.evaluator, "repository": "ShishirPatil/gorilla",
                        "path": "berkeley-function-call-leaderboard/bfcl_eval"},
           "like_for_like": LIKE_FOR_LIKE, "sample": c.sample, "single": c.single, "disagreements": c.disagreements,
           "probes": c.probes, "multi": c.multi, "multi_rows": c.multi_rows}
    return json.loads(json.dumps(doc, ensure_ascii=False))


def write_official(path: Path | None = None) -> Path:
    """Grade live and write the shipped file (needs the extra)."""
    path = path or data_file(SHIPPED)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(as_json(compare_live()), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def read_official(path: Path | None = None) -> Compared:
    """The shipped results (``data/bfcl/official.json``), as the notebook reads them, each multi-turn figure held to
    the conversations listed beside it (a guarded accuracy set to 0.9 of 11 conversations was shown as 90%)."""
    path = path or data_file(SHIPPED)

    def make(d: Any) -> Compared:
        for size, modes in d["multi"].items():
            rows = d["multi_rows"][size]
            for mode, fig in modes.items():
                mine = [r for r in rows if r["mode"] == mode]
                if fig["n"] != len(mine) or round(fig["accuracy"] * fig["n"], 6) != sum(bool(r["correct"]) for r in mine):
                    raise Untrusted("bfcl.check.shipped_figure", file=path.name, size=size, figure=f"multi {mode}")
        return Compared(False, d["single"], d["disagreements"], d["probes"], d["multi"], d["multi_rows"],
                        d["upstream"]["version"], d["sample"])
    return read_results_file(path, make)


def official_results() -> Compared:
    """Live where the evaluator is installed, else the shipped results: what notebook 18 shows."""
    return compare_live() if bfcl_official.evaluator_installed() else read_official()

"""Notebook 18's figures: graded live from the BFCL data when it is there, else read from the shipped results.

The BFCL questions (and the accepted answers the grading needs) live in ``$AGENTLAB_DATASETS/bfcl``, which a
learner's laptop does not have; the model replies are recorded and shipped (``data/cassettes/bfcl-<size>.jsonl``).
So the workbook also ships what the notebook shows, graded once from those recordings: ``data/bfcl/graded.json``,
with BFCL's license (Apache-2.0, ``data/bfcl/LICENSE``), where it came from and which sample it is. It holds the
figures (accuracy, kinds of failure, where each failure went, a few replies per kind) and the sample's first question
(whose function doc the notebook turns into a grammar), never the dataset itself.

:func:`graded` is what the notebook calls: live when the data is present, shipped otherwise. Regenerate the file
from the datasets and the recordings with ``python benchmarks/bench_bfcl_local.py --replay --ship``
(:func:`write_shipped`); ``tests/test_bfcl_results.py`` checks it against a fresh grading wherever the data is.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..i18n import Lang, joined, label, t
from ..resources import data_file
from . import bfcl
from .bfcl_check import Untrusted, read_results_file

__all__ = ["SHIPPED", "SIZES", "UPSTREAM", "Figures", "Graded", "as_json", "figures_of", "grade_live", "graded",
           "have_data", "most_repaired", "read_shipped", "write_shipped"]

SHIPPED = "bfcl/graded.json"  # under the package's data (data/ in a checkout)
SIZES = ("0.5b", "1.5b")
#: where the questions come from (the commit ../shared/datasets/README.md names), and under which license
UPSTREAM = {"repository": "ShishirPatil/gorilla", "path": "berkeley-function-call-leaderboard/bfcl_eval/data",
            "commit": "6ea57973", "license": "Apache-2.0", "license_file": "LICENSE"}
EXAMPLE_LIMIT = 5  # replies shown per kind of failure
PREVIEW = 90  # characters of a reply's calls shown in a table cell
RUNAWAY_LIMIT = 2  # cut-off replies quoted per model
RUNAWAY_PREVIEW = 120


@dataclass(frozen=True)
class Figures:
    """One model's figures, every mode (``single``, ``reask``, ``constrained``) of the same sample."""

    n: dict[str, int]  # questions per category
    accuracy: dict[str, dict[str, float]]  # mode -> category (and "mean") -> 0..1
    copies_wrong: dict[str, dict[str, float]]  # the same, a copied template example graded wrong
    several: dict[str, int]  # mode -> replies holding more than one call
    copies: int  # single-shot replies graded right only because they copied the template's example
    n_irrelevance: int  # single-shot irrelevance questions
    kinds: dict[str, dict[str, int]]  # mode -> kind of failure -> replies
    transitions: dict[str, list[tuple[str, str, int]]]  # other mode -> (single's kind or "right", its, questions)
    examples: dict[str, list[dict[str, str]]]  # kind -> rows: question id, then each mode's mark and calls
    runaway: int  # constrained replies cut off by the token limit
    runaway_first: list[tuple[str, str, str]] = field(default_factory=list)  # (question id, function, arguments)


def _preview(a: bfcl.Attempt) -> str:
    return ("✓ " if a.correct else "✗ ") + str(a.calls)[:PREVIEW]


def figures_of(attempts: Iterable[bfcl.Attempt]) -> Figures:
    """Everything notebook 18 shows of one model, from its graded attempts."""
    a = list(attempts)
    by = {(x.id, x.mode): x for x in a}
    examples: dict[str, list[dict[str, str]]] = {}
    for kind in bfcl.KINDS:
        ids = [x.id for x in a if x.mode == "single" and x.kind == kind][:EXAMPLE_LIMIT]
        examples[kind] = [{"question": i, **{m: _preview(by[(i, m)]) for m in bfcl.MODES if (i, m) in by}} for i in ids]
    runaway = [x for x in a if x.mode == "constrained" and x.kind == "bad_json"]
    return Figures(
        n={c: sum(1 for x in a if x.mode == "single" and x.category == c) for c in bfcl.CATEGORIES},
        accuracy=bfcl.accuracy(a),
        copies_wrong=bfcl.accuracy(bfcl.copies_counted_wrong(a)),
        several={m: sum(1 for x in a if x.mode == m and len(x.calls) > 1) for m in bfcl.MODES},
        copies=sum(1 for x in a if x.mode == "single" and x.correct and bfcl.copied_example(x)),
        n_irrelevance=sum(1 for x in a if x.mode == "single" and x.category == "irrelevance"),
        kinds=bfcl.kinds(a),
        transitions={after: sorted((b, c, n) for (b, c), n in bfcl.transitions(a, "single", after).items())
                     for after in ("reask", "constrained")},
        examples=examples,
        runaway=len(runaway),
        runaway_first=[(x.id, x.calls[0][0], str(x.calls[0][1])[:RUNAWAY_PREVIEW]) for x in runaway[:RUNAWAY_LIMIT]],
    )


def most_repaired(fig: Figures) -> tuple[list[str], dict[str, int]]:
    """The kinds of failure validate-and-reask removed the most of against the single shot (all of them on a
    tie), and how many each lost: the truth of notebook 18's exercise."""
    drop = {kind: fig.kinds["single"][kind] - fig.kinds["reask"][kind] for kind in bfcl.KINDS}
    top = max(drop.values())
    return sorted(k for k, d in drop.items() if d == top), drop


@dataclass(frozen=True)
class Graded:
    """The figures of every recorded model, graded ``live`` from the data or read from the shipped file."""

    live: bool
    sizes: dict[str, Figures]
    example: bfcl.Question | None  # the sample's first question (its function doc makes the grammar shown)
    sample: dict[str, Any]  # which questions: seed, per_category, categories

    def said(self, lang: Lang = "en") -> str:
        """One line: where these figures come from, and (shipped) how to grade them live."""
        if self.live:
            return t("nb18.live", lang, folder=str(bfcl.bfcl_dir()))
        categories = joined((label(c, lang) for c in self.sample.get("categories", ())), lang, "list")  # as the tables say each
        return t("nb18.shipped", lang, n=self.sample.get("per_category"), categories=categories)


def have_data(root: Path | None = None) -> bool:
    """Are the BFCL questions there to grade live?"""
    root = root or bfcl.bfcl_dir()
    return all((root / "data" / f"BFCL_v4_{c}.json").is_file() for c in bfcl.CATEGORIES)


def _sample() -> dict[str, Any]:
    return {"seed": bfcl.SEED, "per_category": bfcl.PER_CATEGORY, "categories": list(bfcl.CATEGORIES)}


def grade_live(root: Path | None = None, sizes: Iterable[str] = SIZES) -> Graded:
    """Grade the recorded replies of every size that has a recording against the BFCL data (``root``)."""
    qs = bfcl.questions(root=root)
    figs = {s: figures_of(bfcl.graded_attempts(s, root=root)) for s in sizes if bfcl.bfcl_cassette(s).exists()}
    return Graded(True, figs, qs[0] if qs else None, _sample())


def _sha256(path: Path) -> str:
    # of the lines a replay reads: a checkout that writes CRLF line ends, or an editor that adds a blank line, holds the
    # same recording (a blank line appended refused the shipped results, though the replay reads no blank line)
    lines = [line.rstrip(b"\r") for line in path.read_bytes().split(b"\n")]
    return hashlib.sha256(b"".join(line + b"\n" for line in lines if line.strip())).hexdigest()


def as_json(g: Graded) -> dict[str, Any]:
    """The shipped file's content for ``g``: its figures, the sample, its source, license and inputs."""
    files = [f"{d}/BFCL_v4_{c}.json" for c in bfcl.CATEGORIES for d in ("data", "possible_answer") if c != "irrelevance" or d == "data"]
    doc = {
        "about": "Notebook 18's figures, graded by agentlab.evals.bfcl from the recorded replies (inputs) on a sample "
                 "of the Berkeley Function-Calling Leaderboard's questions (upstream). Derived from BFCL, "
                 "Apache-2.0: see LICENSE beside this file. Regenerate: python benchmarks/bench_bfcl_local.py --replay --ship",
        "license": UPSTREAM["license"],
        "upstream": {**UPSTREAM, "files": files},
        "sample": g.sample,
        "inputs": {s: {"cassette": f"cassettes/bfcl-{s}.jsonl", "sha256": _sha256(bfcl.bfcl_cassette(s))} for s in g.sizes},
        "example": None if g.example is None else {"id": g.example.id, "category": g.example.category,
                                                   "messages": g.example.messages, "functions": g.example.functions,
                                                   "answers": g.example.answers},
        "sizes": {s: vars(f) for s, f in g.sizes.items()},
    }
    return json.loads(json.dumps(doc, ensure_ascii=False))  # tuples as lists: what reading the file gives back


def write_shipped(path: Path | None = None, root: Path | None = None) -> Path:
    """Grade live and write the shipped file (the datasets must be present)."""
    path = path or data_file(SHIPPED)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(as_json(grade_live(root)), ensure_ascii=False, indent=1, sort_keys=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _figures(d: Mapping[str, Any]) -> Figures:
    return Figures(**{**d, "transitions": {k: [tuple(x) for x in v] for k, v in d["transitions"].items()},
                      "runaway_first": [tuple(x) for x in d["runaway_first"]]})


def read_shipped(path: Path | None = None) -> Graded:
    """The shipped results (``data/bfcl/graded.json``) as the notebook reads them, held first to what they say they
    were graded from (:func:`_check_shipped`)."""
    path = path or data_file(SHIPPED)

    def make(doc: Any) -> Graded:
        _check_shipped(doc, path.name)
        ex = doc.get("example")
        example = None if ex is None else bfcl.Question(ex["id"], ex["category"], tuple(ex["messages"]),
                                                        tuple(ex["functions"]), tuple(ex["answers"]))
        return Graded(False, {s: _figures(f) for s, f in doc["sizes"].items()}, example, doc["sample"])
    return read_results_file(path, make)


def _check_shipped(doc: Mapping[str, Any], file: str) -> None:
    """Each size's figures are of the recording shipped beside them (its SHA-256, when the recording is here) and
    agree with themselves: each accuracy k of n questions, each mean the mean of its categories. A figure edited by hand
    (0.99 beside the recording's 0.74, under a mean left as it was) was shown as the workbook's."""
    if set(doc["sizes"]) != set(doc["inputs"]):  # a size taken out (or added) beside the recordings it names
        raise Untrusted("bfcl.check.shipped_figure", file=file, size="/".join(sorted(doc["inputs"]))[:40],
                        figure="sizes")
    sampled = set(doc["sample"]["categories"])
    for size, fig in doc["sizes"].items():
        recording = bfcl.bfcl_cassette(size)
        if recording.exists() and doc["inputs"][size]["sha256"] != _sha256(recording):
            raise Untrusted("bfcl.check.shipped_stale", file=file, size=size, recording=recording.name)
        for mode, row in fig["accuracy"].items():
            categories = [c for c in row if c != "mean"]
            if not categories or not sampled <= set(categories):  # a category of the sample taken out of the row, its mean made again
                raise Untrusted("bfcl.check.shipped_figure", file=file, size=size, figure=f"{mode} categories")
            total, right = sum(fig["n"][c] for c in categories), 0
            for c in categories:  # each k of its n
                n, rate = fig["n"][c], row.get(c)
                if not (isinstance(n, int) and n > 0 and isinstance(rate, int | float)
                        and abs(rate * n - round(rate * n)) < 1e-6):
                    raise Untrusted("bfcl.check.shipped_figure", file=file, size=size, figure=f"{mode} {c}"[:60])
                right += round(rate * n)
            if abs(row["mean"] - sum(row[c] for c in categories) / len(categories)) > 1e-9:
                raise Untrusted("bfcl.check.shipped_figure", file=file, size=size, figure=f"{mode} mean")
            # every reply is right or one kind of failure: a rate edited with its mean (0.74 -> 0.99) left the
            # failures counted beside it as they were
            if right + sum(fig["kinds"][mode].values()) != total:
                raise Untrusted("bfcl.check.shipped_figure", file=file, size=size, figure=f"{mode} failures")


def graded(root: Path | None = None) -> Graded:
    """Live from the BFCL data when it is present, else the shipped results: what notebook 18 shows."""
    return grade_live(root) if have_data(root) else read_shipped()

"""Suites replayed from recordings (cassettes) of real models, compared on the same cases.

A recording holds, per case, the replies a model gave under one loop. Rates are only
comparable over the same cases, so :func:`paired_cases` finds the cases a cassette
recorded under *both* loops, and every comparison runs on those and says how many.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ..models.cassette import CassetteModel, labels
from .suite import Case, CaseResult, run_case

__all__ = ["paired_cases", "recorded_cases", "replay_cassette"]


def recorded_cases(path: str | Path) -> dict[str, list[str]]:
    """Case ids a cassette recorded, per loop (``{"naive": [...], "guarded": [...]}``), in order."""
    out: dict[str, list[str]] = {}
    for label in labels(path):
        case_id, loop = label.rsplit("/", 1)
        out.setdefault(loop, []).append(case_id)
    return out


def paired_cases(path: str | Path, cases: Iterable[str] | None = None) -> list[str]:
    """Case ids recorded under both loops (and, if given, among ``cases``), in recording order."""
    by_loop = recorded_cases(path)
    guarded = set(by_loop.get("guarded", ()))
    known = set(cases) if cases is not None else None
    return [c for c in by_loop.get("naive", ()) if c in guarded and (known is None or c in known)]


def replay_cassette(path: str | Path, cases: Mapping[str, Case], loop: str, ids: Iterable[str]) -> list[CaseResult]:
    """Replay the recorded replies of ``ids`` through ``loop`` and grade each on the final state."""
    return [run_case(cases[i], model=CassetteModel(path, f"{i}/{loop}", then="(no more recorded replies)"), loop=loop)
            for i in ids]

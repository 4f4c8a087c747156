"""Evaluation: suites graded on final state, the metrics, stored runs, the bad-case review.

    suite.py    cases as JSONL, run_case / run_suite, pass rate, pass^k, ablation
    metrics.py  every metric the workbook shows, defined once (docs/metrics.md)
    stored.py   a graded case's record (CaseResult); save and reopen a suite run
    results.py  replay stored suite runs (and stored.py's names, where they always were)
    recorded.py suites replayed from real models' recordings, on the cases recorded under both loops
    routing_eval.py  the right tool and valid calls, all tools against the routed few (live or replayed)
    tool_choice_eval.py  what auto, required, none and a named tool do to a model (live or replayed)
    discovery_eval.py  the skill site's search against every skill, for a model (live or replayed)
    review.py   sample, tag by stage, promote a bad session into the suite; compare two stored runs
                class by class, and the trend of the headline numbers across stored runs
    probe.py    any tools file against every fault category: the guard that caught each, read from the
                trace, and the model's repairs (probe_calls.py the valid calls, probe_report.py the report)
    logs.py     a team's own logs read as a stream: chat-completions JSONL, telemetry rows, OTLP spans
    log_review.py  those logs checked by the loop's own validator: both taxonomies, rates per day, the class
                to fix, candidate cases; report.html and report.json
    weekly.py   the weekly review of failed conversations: notes shared in SQLite, the team's own categories,
                suggested groups, counts, trend, promotion, CSV and HTML
"""
from __future__ import annotations

from .metrics import failure_breakdown, layers, pass_hat_k, status_counts, summarize
from .recorded import paired_cases, recorded_cases, replay_cassette
from .results import StoredSuite, load_results, replay_results, replies_of, save_results
from .review import HEADLINE, STAGES, RunComparison, auto_tag, compare_runs, promote, sample, tag_cause, trend
from .suite import (
                    Case,
                    CaseResult,
                    ablation,
                    check,
                    compare_groups,
                    fake_model,
                    load_cases,
                    metrics_row,
                    pass_k_curve,
                    pass_rate,
                    run_case,
                    run_suite,
)

__all__ = ["HEADLINE", "STAGES", "Case", "CaseResult", "RunComparison", "StoredSuite", "ablation", "auto_tag", "check",
           "compare_groups", "compare_runs",
           "failure_breakdown", "fake_model", "layers", "load_cases", "load_results", "metrics_row", "paired_cases",
           "pass_hat_k", "pass_k_curve", "pass_rate", "promote", "recorded_cases", "replay_cassette", "replay_results", "replies_of", "run_case",
           "run_suite", "sample", "save_results", "status_counts", "summarize", "tag_cause", "trend"]

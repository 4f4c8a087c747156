"""A probe report in a few numbers and lines: what failed, on which tools and fields, what was left unprobed and why
(:func:`summarize` puts them in the report; :func:`summary_lines` says them on a terminal)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..i18n import Lang, colon, joined, t

__all__ = ["BOUNDED", "FAILING", "summary_lines"]  # summarize: the probe puts it in every report

FAILING = ("not_caught", "tool_failed", "not_repaired", "no_call")


def summarize(report: Mapping[str, Any]) -> dict:
    """The report's totals: verdicts, per category, the worst tools and fields (with the linter's word on them)."""
    cells = list(report["cells"])
    applies = [c for c in cells if c["applies"]]
    by_category = {}
    for cat in report["settings"]["categories"]:
        mine = [c for c in cells if c["category"] == cat]
        rates = [c["self_correction_rate"] for c in mine if c.get("self_correction_rate") is not None]
        by_category[cat] = {"verdicts": dict(Counter(c["verdict"] for c in mine)),
                            "guards": dict(Counter(c["guard"] for c in mine if c["applies"])),
                            "self_correction_rate": round(sum(rates) / len(rates), 4) if rates else None}
    tools = Counter(c["tool"] for c in applies if c["verdict"] in FAILING)
    # a tool that fails on a valid call is no field's fault
    fields = Counter(f'{c["tool"]}.{c["field"]}' for c in applies
                     if c["verdict"] in FAILING and c["verdict"] != "tool_failed" and c.get("field"))
    findings = report.get("lint", [])

    def about(location: str) -> list[dict]:
        return [f for f in findings if f["location"] == location]
    rates = [c["self_correction_rate"] for c in applies if c.get("self_correction_rate") is not None]
    trials_with_wrong = [c for c in applies if c.get("self_correction_rate") is not None]
    return {
        "cells": len(cells), "applicable": len(applies), "na": len(cells) - len(applies),
        "verdicts": dict(Counter(c["verdict"] for c in cells)),
        "self_correction_rate": round(sum(rates) / len(rates), 4) if rates else None,
        "cells_with_a_wrong_call": len(trials_with_wrong),
        "tool_failed": sum(1 for c in applies if c["verdict"] == "tool_failed"),
        "tools_failed": sorted({c["tool"] for c in applies if c["verdict"] == "tool_failed"}),
        "probed": sum(1 for x in report["tools"] if "unprobed" not in x),
        "unprobed": [{"tool": x["name"], **x["unprobed"]} for x in report["tools"] if "unprobed" in x],
        "partial": [{"tool": x["name"], **p} for x in report["tools"] for p in x.get("partial", [])],
        "by_category": by_category,
        "worst_tools": [{"tool": name, "failing": n, "lint": about(name)} for name, n in tools.most_common(5)],
        "worst_fields": [{"field": loc, "failing": n, "lint": about(loc)} for loc, n in fields.most_common(5)],
    }



def summary_lines(report: Mapping[str, Any], lang: Lang = "en") -> list[str]:
    """The report in a few lines: the counts, then (when there are any) the cells where the tool failed on a
    valid call and the tools that could not be probed (the command line prints these; docs/metrics.md#the-probe)."""
    s = report["summary"]
    rate = "n/a" if s["self_correction_rate"] is None else f"{s['self_correction_rate']:.0%}"
    lines = [t("probe.cli_done", lang, tools=len(report["tools"]), cats=len(report["settings"]["categories"]),
               seconds=report.get("meta", {}).get("seconds", 0), applicable=s["applicable"],
               not_caught=s["verdicts"].get("not_caught", 0), not_repaired=s["verdicts"].get("not_repaired", 0), rate=rate)
             + (t("probe.scripted_ceiling", lang) if report.get("meta", {}).get("scripted") else "")]
    if s.get("tool_failed"):
        lines.append(t("probe.cli_tool_failed", lang, n=s["tool_failed"], tools=_names(s["tools_failed"], lang)))
    schema = [u for u in s.get("unprobed", []) if u.get("why") not in BOUNDED]
    other = [u for u in s.get("unprobed", []) if u.get("why") in BOUNDED]
    for key, unprobed in (("probe.cli_unprobed", schema), ("probe.cli_unprobed_other", other)):
        if unprobed:
            lines.append(t(key, lang, n=len(unprobed), total=len(report["tools"]),
                           tools=_names([f'{u["tool"]}{colon(lang)}{u.get(lang) or u["en"]}' for u in unprobed], lang,
                                        how="clause")))
    partial = s.get("partial", [])
    if partial:
        lines.append(t("probe.cli_partial", lang, n=len({p["tool"] for p in partial}),
                       tools=_names([f'{p["tool"]}{colon(lang)}{p.get(lang) or p["en"]}' for p in partial], lang,
                                    how="clause")))
    return lines


#: Reasons a tool was not probed that are the probe's bounds or its own failure, not its schema's fault.
BOUNDED = frozenset({"probe.why.total_time", "probe.why.tool_time", "probe.why.internal"})


def _names(names: Sequence[str], lang: Lang, most: int = 5, how: Literal["list", "clause"] = "list") -> str:
    """The first ``most`` names (or tools with why), as ``lang`` lists them, and how many more."""
    more = [f"…{t('word.and_more', lang, n=len(names) - most).strip()}"] if len(names) > most else []
    return joined([*names[:most], *more], lang, how)

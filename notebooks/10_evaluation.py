# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Prove it got better
#
# "It feels more stable" is not a release criterion. A fixed suite of cases (a regression suite), run before every change
# of prompt, schema, model or guard, and graded on the **final state of the data**: that is the evidence.
# `data/aftersales_cases.jsonl` holds the cases counted below: normal flows, boundary flows (an order that
# does not exist, amount 0, a refund above the order, an over-long remark, an order found by phone only) and
# adversarial ones (baits toward the wrong tool, wrong field names, a request outside the agent's
# permissions, a user asking twice).

# %% [markdown]
# **After this notebook you can:**
#
# - run a fixed regression suite and grade it on the final state of the data
# - read the four headline numbers beside their health lines, and the four layers of metrics
# - measure reliability with pass^k and find which guard buys what with an ablation
#
# **Before it:** [08 · Where each failure is caught](08_where_failures_are_caught.ipynb), [09 · Real models](09_real_models.ipynb).
#
# **Time:** about 30 minutes (reading, running and the exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import random
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab import NO_GUARDS, GuardConfig
from agentlab.evals import (ablation, compare_groups, fake_model, load_cases, pass_k_curve, pass_rate, recorded_cases,
                            replay_cassette, replay_results, run_suite)
from agentlab.i18n import label, t
from agentlab.evals.metrics import LAYER_DEFINITIONS, failure_breakdown, layers, status_counts
from agentlab.models.faults import MODEL_FAULTS, FaultyModel
from agentlab.resources import data_file  # the shipped data, found from notebooks/ and from notebooks/zh/ alike
from agentlab.workbook.exercises import best_single_guard
from agentlab.workbook.plots import (cjk_fonts, compare_plot, plot_bars, plot_hbars, plot_pass_k, plot_shares,
                                     plot_statuses, table_view)

LANG = "en"  # "zh" for 中文

cases = load_cases(data_file("aftersales_cases.jsonl"))
print({"en": f"{len(cases)} cases", "zh": f"共 {len(cases)} 个用例"}[LANG])
table_view(pd.Series([c.category for c in cases]).value_counts().rename_axis("category").to_frame("count"), lang=LANG)

# %% [markdown]
# ## Naive against guarded: the four headline numbers
#
# Task success rate, invalid-call rate, average steps and human-takeover rate, defined in docs/metrics.md#the-four-headline-numbers. Success means the case's check passed: the right refunds, or rightly none, and an
# acceptable final status. A run that "succeeded" but refunded the wrong amount is a failure. Each case runs
# once here, so the figure has no pass^k panel: that needs several trials per case (below).

# %%
suites = {loop: run_suite(cases, loop=loop) for loop in ("naive", "guarded")}
rows, fig = compare_plot(suites, lang=LANG)  # one call: the table and the plots
plt.show()
table_view(pd.DataFrame(rows).set_index("group"), lang=LANG)

# %% [markdown]
# **Health lines.** Beside each headline number, the reference line of `HEALTH_LINES`
# (docs/metrics.md#health-lines): a starting point a team calibrates on its own baseline, not a target. This suite
# is built to fail (every adversarial case injects a fault), so crossing a line here says the suite does its job; on
# production traffic the same line is the alarm of the live curves.

# %%
from agentlab.evals.metrics import HEALTH_LINES, crosses

health = pd.DataFrame([{"metric": m, "health line": line["value"], "unhealthy when": line["bad"],
                        **{loop: row[m] for row in rows for loop in [row["group"]]},
                        "crosses": ", ".join(row["group"] for row in rows if crosses(m, row[m])) or "-"}
                       for m, line in HEALTH_LINES.items() if m in rows[0]]).set_index("metric")
table_view(health, lang=LANG)

# %% [markdown]
# ## The four layers
#
# Each layer answers a different question, and each metric is defined exactly (the same text is in
# `agentlab.evals.metrics.LAYER_DEFINITIONS` and in docs/metrics.md#the-four-layers):

# %%
table_view(pd.DataFrame([{"layer": layer, "metric": m, "definition": d} for layer, ms in LAYER_DEFINITIONS.items()
                         for m, d in ms.items()]), lang=LANG)

# %%
values = {}
for loop, rs in suites.items():
    ok = {r.run.run_id: r.passed for r in rs}
    values[loop] = layers([r.run for r in rs], correct=lambda run, ok=ok: ok[run.run_id])
# one row per metric of its own layer (a pivot over every layer x metric would invent 36 empty rows)
four = pd.DataFrame([{"layer": layer, "metric": m, **{loop: values[loop][layer][m] for loop in suites}}
                     for layer, ms in LAYER_DEFINITIONS.items() for m in ms]).set_index(["layer", "metric"])
unreported = [m for (_, m), row in four.iterrows() if row.isna().all()]
print(t("layers.not_reported", LANG, names=", ".join(unreported) or "-"))
four.rename(index=lambda v: label(v, LANG), columns=lambda v: label(v, LANG)).rename_axis(
    [label(n, LANG) for n in four.index.names]).style.format(precision=3, na_rep="-")

# %% [markdown]
# A `-` is a number these runs did not report, not zero: the fake models report no token usage, so
# `tokens_per_task` is unknown. The real models in notebook 09 do, and the same table fills in for them.

# %% [markdown]
# ## pass^k: reliability, not luck
#
# One trial per case hides flakiness. Here the fake model misbehaves at random (a different fault at a
# different step in each trial), and each case runs 6 times. pass^k is tau-bench's estimator: the mean over
# cases of C(c, k) / C(n, k), the chance that k trials picked from n all succeed.

# %%
def noisy(case, trial):
    rng = random.Random(f"{case.id}/{trial}")
    fault = rng.choice(MODEL_FAULTS + [None, None])
    return FaultyModel(fake_model(case), fault, at_step=rng.randint(1, 3)) if fault else fake_model(case)


trials = {loop: run_suite(cases, model=noisy, loop=loop, trials=6, concurrency=4) for loop in ("naive", "guarded")}
plot_pass_k({loop: pass_k_curve(rs) for loop, rs in trials.items()}, lang=LANG)
plt.show()

# %% [markdown]
# ## Which guard buys what (ablation)
#
# Success with no guard at all, with each guard alone, and with all of them.

# %%
abl = ablation(cases)
with cjk_fonts():  # top to bottom: no guards, each guard alone, all guards
    plot_hbars(abl, title=t("ablation.title", LANG), xlabel=t("ablation.axis", LANG),
               tone={"no guards": "bad", "all guards": "good"}, lang=LANG)
    plt.show()

# %% [markdown]
# "No guards" is not the naive suite two figures above, and the numbers differ. Why, case by case:

# %%
no_guards = run_suite(cases, config=NO_GUARDS)  # the run behind the ablation's "no guards" bar
assert pass_rate(no_guards) == abl["no guards"]
without = {r.case_id: r for r in no_guards}
apart = [(n, without[n.case_id]) for n in suites["naive"] if n.passed != without[n.case_id].passed]
crashed = sum(n.run.status == "failed" for n, _ in apart)
capped = sum(n.run.status == "budget_exhausted" for n, _ in apart)
print(t("ablation.not_naive", LANG, no_guards=abl["no guards"], naive=pass_rate(suites["naive"]), n=len(apart),
        total=len(cases), gained=sum(g.passed for _, g in apart), lost=sum(n.passed for n, _ in apart),
        crashed=crashed, capped=capped, other=len(apart) - crashed - capped))
table_view(pd.DataFrame([{"case": n.case_id, "naive loop": f"{label(n.run.status, LANG)}: {label(n.outcome, LANG)}",
                          "guarded loop, no guards": f"{label(g.run.status, LANG)}: {label(g.outcome, LANG)}"}
                         for n, g in apart]), lang=LANG)

# %% [markdown]
# ## Model against model
#
# The same suite, replayed from recordings of the local models (see notebook 09), next to the fake.

# %%
# Each recording holds only some cases, so each model is compared with the fake **on the cases it was
# recorded with** (the `cases` column), never a rate over 17 cases against one over 52.

# %%
tapes = {p.stem.split("-")[-1]: p for p in sorted(data_file("cassettes").glob("aftersales-*.jsonl"))}
by_id = {c.id: c for c in cases}
groups = {}
for size, tape in tapes.items():
    ids = [i for i in recorded_cases(tape).get("guarded", []) if i in by_id]
    on = {"en": f"{size} cases ({len(ids)})", "zh": f"{size} 的用例（{len(ids)} 个）"}[LANG]
    groups[f"{on}: qwen {size}"] = replay_cassette(tape, by_id, "guarded", ids)
    groups[f"{on}: " + {"en": "fake", "zh": "假模型"}[LANG]] = run_suite([by_id[i] for i in ids])
table = pd.DataFrame(compare_groups(groups)).set_index("group")
plot_bars({m: table[m].to_dict() for m in ("task_success_rate", "invalid_call_rate", "takeover_rate")},
          title="model against model, guarded loop, each pair on the same cases", lang=LANG)
plt.show()
table_view(table, lang=LANG)

# %% [markdown]
# ## Status breakdown, and failures by both taxonomies
#
# Rule-blocked outcomes (approval, breaker, budget, a business rule that fired) are guards doing their job:
# they are counted apart, never as instability.

# %%
plot_statuses({name: status_counts([r.run for r in rs]) for name, rs in {**suites, **groups}.items()}, lang=LANG)
plt.show()
fb = failure_breakdown([r.run for r in suites["guarded"]])
fig, axes = plt.subplots(1, 3, figsize=(13, 2.6))
plot_shares(fb["by_category"], ax=axes[0], title="unstable: by retry class", lang=LANG)
plot_shares(fb["by_stage"], ax=axes[1], title="unstable: by stage", lang=LANG)
plot_shares(fb["rule_blocked"], ax=axes[2], title="rule-blocked (counted apart)", lang=LANG)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## What would a new guard have changed? Replay without the model
#
# Yesterday's naive conversations, their model replies replayed through today's guarded loop.

# %%
replayed = replay_results(suites["naive"], cases, config=GuardConfig())
table_view(pd.DataFrame(compare_groups({"naive, as recorded": suites["naive"], "same replies, guarded": replayed}))
           .set_index("group"), lang=LANG)

# %% [markdown]
# ## Live curves: the same three numbers on a stream of runs
#
# In production the runs come one at a time. `LiveCurves` keeps task success, invalid-call rate and takeover rate
# over the last 20 runs (the same definitions as above), with a reference line per curve, and alerts once when a
# curve crosses its line: a callback and a log line (docs/metrics.md#live-curves-and-alerts). Here: an hour of
# guarded traffic, an hour in which a release shipped the naive loop, and the guarded loop again; a run a minute.
# The default lines are starting points: on this deliberately adversarial case set the healthy loop already
# crosses two of them, so the lines are calibrated on the healthy first hour, as a team would on its own traffic.
# Each alert is logged once, when its curve crosses; it fires again only after the curve has come back past its
# line by 0.05 (hysteresis). The naive hour hardly moves the takeover curve: that loop crashes instead of handing over.

# %%
from agentlab.evals.monitor import CURVES, LINES, LiveCurves, RefLine
from agentlab.workbook.plots import plot_live

mix = random.Random(0)
stream = [r for loop in ("guarded", "naive", "guarded") for r in mix.sample(suites[loop], len(suites[loop]))]
healthy = LiveCurves((), window=20)  # the first hour alone, no lines yet: to calibrate on
for i, r in enumerate(stream[:len(suites["guarded"])]):
    healthy.add(r.run, at=60.0 * i, success=r.passed)
worst = {m: [p.values[m] for p in healthy.points] for m in CURVES}
lines = [RefLine(line.metric, min(worst[line.metric]) - 0.05 if line.bad == "below" else max(worst[line.metric]) + 0.05,
                 line.bad) for line in LINES]
alerts = []
live = LiveCurves(lines, window=20, margin=0.05, on_alert=alerts.append, lang=LANG)
for i, r in enumerate(stream):
    live.add(r.run, at=60.0 * i, success=r.passed)
table_view(pd.DataFrame([{"metric": line.metric, "default line": d.value, "calibrated": round(line.value, 2),
                          "alert when": t("monitor." + line.bad, LANG)} for line, d in zip(lines, LINES, strict=True)]),
           lang=LANG)

# %%
# each alert was logged as it fired (the lines above, on the agentlab.monitor logger); the callback kept them too
minutes = ", ".join(f"{a.point.at / 60:.0f}" for a in alerts)
print({"en": f"{len(alerts)} alerts, at minute {minutes}", "zh": f"共 {len(alerts)} 次告警，分别在第 {minutes} 分钟"}[LANG])
plot_live(live, lang=LANG)
plt.show()

# %% [markdown]
# ## Exercise
#
# Which single guard, on its own, raises the success rate the most in the ablation? Set `my_answer` to its
# name (for example `"retry"`).

# %%
my_answer = None  # a guard's name
print(best_single_guard(my_answer, abl, lang=LANG))

# %% [markdown]
# ## Build it: the case that catches a release
#
# A release switched the idempotency guard off (`GuardConfig().without("idempotency")`). Predict first: which
# model mistake does only that guard catch, and would the suite above notice? Then write the case the suite needs.
# `my_case` is a dict shaped like a line of `data/aftersales_cases.jsonl`: a `task`, the fake model's `fake`
# (its `plan` of calls, and optionally a `fault` from `MODEL_FAULTS` injected `at_step`), and `expect`, what the
# ledger must hold at the end (`cases[0].fake` and `cases[0].expect` show the shape). The check runs it on the
# after-sales desk twice, with every guard and on the release: it must pass on the first and fail on the second.

# %%
from agentlab.workbook.builds_systems import suite_case_catches

my_case = None  # a dict: {"task": ..., "fake": {"plan": [...], "fault": ..., "at_step": ...}, "expect": {...}}
print(suite_case_catches(my_case, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The suite holds normal, boundary and adversarial cases; a run that refunded the wrong amount is a failure.
# - A `-` is a number the runs did not report, not zero.
# - pass^k over six trials per case showed flakiness that one trial hides.
# - Replaying yesterday's conversations through today's loop, and the live curves, showed what a change does before and after it ships.
#
# **Next:** [11 · The weekly bad-case review](11_badcase_review.ipynb). Read alongside: [the metrics](../docs/metrics.md#the-four-headline-numbers); every path through the workbook: [docs/course.md](../docs/course.md).

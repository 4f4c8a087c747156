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
# # 11 · The weekly bad-case review
#
# A routine (docs/metrics.md#the-weekly-bad-case-review), usable without writing code:
#
# 1. **Sample** sessions at random, not only the failed ones: sampling failures alone distorts the shares.
# 2. **Tag** each failure by where it happened: structure, semantic, execution or rule-blocked.
#    Tags are proposed automatically from the trace, by the cause it records: a crash on a 429, a 500 or a dead
#    key is `execution` (the service failed), a history the API refused is `structure`, whatever loop it hit
#    (`tag_cause` gives the tag and the error code behind it). Correct any tag you disagree with.
# 3. **Target** only the largest class this week.
# 4. **Verify** on the same metric next week: compare two stored runs of the suite class by class, and
#    follow the headline numbers across every stored run; between reviews, live curves watch them.
# 5. **Keep** the typical case: promote it into the regression suite in one click.

# %% [markdown]
# **After this notebook you can:**
#
# - run the weekly review: sample sessions at random, tag each failure by stage, pick the class to fix
# - promote a bad session into a regression case that replays without a model
# - compare stored weekly runs case by case (`fixed`, `broken`) and read a trend with care
# - replay a fix on stored conversations, and watch the headline numbers between reviews against their health lines
#
# **Before it:** [10 · Prove it got better](10_evaluation.ipynb).
#
# **Time:** about 40 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab import GuardConfig
from agentlab.models.cassette import CassetteModel, labels
from agentlab.evals import (compare_runs, load_cases, load_results, promote, run_case, run_suite, sample, tag_cause,
                            trend)
from agentlab.workbook.exercises import largest_share
from agentlab.scratch import scratch_folder
from agentlab.resources import data_file  # the shipped data, found from notebooks/ and from notebooks/zh/ alike
from agentlab.i18n import colon, joined, label, t
from agentlab.workbook.plots import plot_comparison, plot_trend, table_view
from agentlab.workbook.widgets import BadCaseReview

LANG = "en"  # "zh" for 中文

cases = load_cases(data_file("aftersales_cases.jsonl"))
by_id = {c.id: c for c in cases}
sessions = []
for tape in sorted(data_file("cassettes").glob("aftersales-*.jsonl")):
    for recorded in labels(tape):
        case_id, loop = recorded.rsplit("/", 1)
        if case_id in by_id:
            sessions.append(run_case(by_id[case_id], loop=loop, model=CassetteModel(tape, recorded, then="(end)")))
sessions += run_suite(cases, loop="naive")
failed = sum(not s.passed for s in sessions)
print(t("nb11.said.sessions", LANG, n=len(sessions), failed=failed))

# %% [markdown]
# ## Sample, tag, target
#
# Twelve sessions at random. Change a tag with its menu; the shares and the target update. The regression suite
# you promote cases into below is a file in a folder that goes when the kernel stops; to keep it, start Jupyter with
# `AGENTLAB_REGRESSION_SUITE` set to a file of your own, and the cases are added there.

# %%
kept = os.environ.get("AGENTLAB_REGRESSION_SUITE")  # a file of your own, kept; else one that goes with the kernel
suite = Path(kept) if kept else scratch_folder() / "regression.jsonl"
review = BadCaseReview(sessions, cases, suite, n=12, seed=17, lang=LANG)
review.widget

# %%
# the grader's reasons are English sentences; a Chinese reader gets the graded outcome, said in Chinese
table_view(pd.DataFrame([{"case": r.case_id, "loop": r.run.loop, "status": r.run.status, "auto tag": tag_cause(r)[0],
                          "cause": tag_cause(r)[1] or "-",
                          "why it failed": "; ".join(r.failures) if LANG == "en" else label(r.outcome, LANG)}
                         for r in review.picked]), lang=LANG)

# %% [markdown]
# ## Keep it: promote a bad case into the regression suite
#
# The button above does this; here is the same in code. The new case replays every message of the bad
# session's model replies (all the tool calls of each), so it reproduces without a model. It is run at once,
# through the loop the session used: it *fails*, the same way the session did. That is the point of a
# regression case: it stays red until the fix lands, then turns green and keeps the bug from coming back.

# %%
bad = next((r for r in review.picked if not r.passed), None)
if bad is not None:
    new = promote(bad, by_id[bad.case_id], suite)
    again = run_case(new, loop=bad.run.loop)
    # in English the grader's own sentences say why it failed; in Chinese, its outcome's name
    why = "; ".join(again.failures) if LANG == "en" else label(again.outcome, LANG)
    verdict = t("nb11.said.passes", LANG) if again.passed else t("nb11.said.fails_as_session", LANG, why=why)
    print(t("nb11.said.added", LANG, case=new.id, suite=suite.name, loop=label(bad.run.loop, LANG),
            status=label(again.run.status, LANG), verdict=verdict))
    print(suite.read_text().splitlines()[-1][:300])

# %% [markdown]
# ## Verify: the same suite before and after a fix
#
# Every week the suite runs once and the run is stored with its time and code version
# (`run_suite(..., store=folder)`, docs/metrics.md#the-weekly-bad-case-review). Here four weeks are stored at
# once, each with one more fix: the naive loop, the guarded loop with validation off, validation on but no
# re-asks (the first invalid call hands over), and every guard. Fake models, offline; a temporary folder.

# %%
store = scratch_folder()  # removed when the kernel ends
weeks = {"1-naive": ("naive", GuardConfig()), "2-no-validation": ("guarded", GuardConfig(validate=False)),
         "3-no-reasks": ("guarded", GuardConfig(self_correction=0)), "4-guarded": ("guarded", GuardConfig())}
for week, (loop, config) in weeks.items():
    run_suite(cases, loop=loop, config=config, store=store, label=week)
stored = {run.meta["label"]: run for run in map(load_results, store.iterdir())}  # each reopened from its folder
table_view(pd.DataFrame([{"label": label(week, LANG), "sessions": len(run.results), "time": run.meta["time"]}
                         for week, run in sorted(stored.items())]), lang=LANG)

# %% [markdown]
# Week 2 against week 4, class by class, on the cases both runs hold (a case only one of them ran is named, and
# counted nowhere else). `fixed` failed before and passes now; `broken` is the reverse: a fix that breaks
# something else shows up here.

# %%
cmp = compare_runs(stored["2-no-validation"], stored["4-guarded"])
print(cmp.said(LANG))
print(f"{label('fixed', LANG)}{colon(LANG)}{joined(cmp.fixed, LANG, 'list') or '-'} | "
      f"{label('broken', LANG)}{colon(LANG)}{joined(cmp.broken, LANG, 'list') or '-'}")
# one column per metric: a rate shows as the percentage the plot below shows, from the same unrounded number
table_view(pd.DataFrame(cmp.metrics).set_index("metric").T, lang=LANG)

# %%
table_view(pd.DataFrame(cmp.shown_rows(LANG)), percent=["before_share", "after_share", "share_change"], lang=LANG)

# %%
plot_comparison(cmp, lang=LANG)
plt.show()

# %% [markdown]
# **Before next week: replay without the model.** A stored run keeps its model replies, so a fix can be tried on
# last week's conversations at once: week 1's naive replies, replayed through the guarded loop (`replay_results`;
# no model is called).

# %%
from agentlab.evals import compare_groups, replay_results

week1 = stored["1-naive"].results  # reopened from its folder, model replies included
replayed = replay_results(week1, cases, config=GuardConfig())
table_view(pd.DataFrame(compare_groups({"naive, as recorded": week1, "same replies, guarded": replayed}))
           .set_index("group"), lang=LANG)

# %% [markdown]
# ## The trend across stored runs
#
# Task success, invalid-call rate and takeover rate of every stored run, oldest first. Read the invalid-call rate
# with care: in week 2 it *falls*, because with validation off nothing checks the calls, so nothing is counted as
# invalid. A number is only comparable across weeks when it is measured the same way. The takeover rate rises
# too, and that is not a regression: most of it is correct hand-overs, tasks that need a person (see the
# outcomes above).

# %%
rows = trend(stored.values())
table_view(pd.DataFrame(rows), lang=LANG)

# %%
plot_trend(rows, lang=LANG)
plt.show()

# %% [markdown]
# ## Between reviews: health lines and live curves
#
# The review compares weeks; in production the runs come one at a time. Beside each headline number, the reference
# line of `HEALTH_LINES` (docs/metrics.md#health-lines): a starting point a team calibrates on its own baseline, not a
# target. This suite is built to fail (every adversarial case injects a fault), so crossing a line here says the
# suite does its job; on production traffic the same line is the alarm of the live curves.

# %%
from agentlab.evals.metrics import HEALTH_LINES, crosses

headline = compare_groups({week: stored[week].results for week in ("1-naive", "4-guarded")})
health = pd.DataFrame([{"metric": m, "health line": line["value"], "unhealthy when": line["bad"],
                        **{row["group"]: row[m] for row in headline},
                        "crosses": ", ".join(row["group"] for row in headline if crosses(m, row[m])) or "-"}
                       for m, line in HEALTH_LINES.items() if m in headline[0]]).set_index("metric").T
table_view(health, lang=LANG)  # a metric a column: its line and its values in one format (a rate as a percentage)

# %% [markdown]
# **Live curves.** `LiveCurves` keeps task success, invalid-call rate and takeover rate over the last 20 runs (the
# same definitions as above), with a reference line per curve, and alerts once when a curve crosses its line: a
# callback and a log line (docs/metrics.md#live-curves-and-alerts). Here: an hour of guarded traffic (week 4's runs),
# an hour in which a release shipped the naive loop (week 1's), and the guarded loop again; a run a minute.
# The default lines are starting points: on this deliberately adversarial case set the healthy loop already
# crosses two of them, so the lines are calibrated on the healthy first hour, as a team would on its own traffic.
# Each alert is logged once, when its curve crosses; it fires again only after the curve has come back past its
# line by 0.05 (hysteresis). In the naive hour the takeover curve falls instead of rising: that loop crashes where the
# guarded one hands over, so a takeover alert would never have caught that release; the success curve does (the
# line under the plot gives each hour's average).

# %%
import random
import statistics

from agentlab.evals.monitor import CURVES, LINES, LiveCurves, RefLine
from agentlab.i18n import t
from agentlab.workbook.plots import plot_live

loops = {"guarded": stored["4-guarded"].results, "naive": stored["1-naive"].results}
mix = random.Random(0)
stream = [r for loop in ("guarded", "naive", "guarded") for r in mix.sample(loops[loop], len(loops[loop]))]
healthy = LiveCurves((), window=20)  # the first hour alone, no lines yet: to calibrate on
for i, r in enumerate(stream[:len(loops["guarded"])]):
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
           percent=("default line", "calibrated"), lang=LANG)  # every curve is a rate

# %%
# each alert was logged as it fired (the lines above, on the agentlab.monitor logger); the callback kept them too
minutes = joined((f"{a.point.at / 60:.0f}" for a in alerts), LANG, "list")
print(t("nb11.said.alerts", LANG, n=len(alerts), minutes=minutes) if alerts else t("nb11.said.no_alerts", LANG))
hour = len(loops["guarded"])


def hourly(metric):
    return " → ".join(f"{statistics.fmean(p.values[metric] for p in live.points[k * hour:(k + 1) * hour]):.0%}"
                      for k in range(3))


print(t("nb11.said.hours", LANG, success=hourly("task_success_rate"), takeover=hourly("takeover_rate")))
plot_live(live, lang=LANG)
plt.show()

# %% [markdown]
# ## Your own logs
#
# The same review on a team's own conversations: upload a log file (chat-completions traffic as JSON lines,
# or agentlab's telemetry rows), or press "Use the sample". Every tool call is checked against the tools
# offered with it, by the validator the guarded loop uses; the report names the class to fix first and
# promotes the bad conversations as cases `eval` can run (docs/metrics.md#bring-your-own-logs). The command
# line does the same: `python -m agentlab review --logs FILE`.

# %%
from agentlab.evals.log_review import largest_text, review_logs
from agentlab.resources import data_file
from agentlab.workbook.log_widget import LogReview

own = review_logs(data_file("logs_openai_sample.jsonl"), "openai", lang=LANG)
print(largest_text(own, LANG))
LogReview(lang=LANG)

# %% [markdown]
# ## Exercise
#
# After your corrections to the tags above, which failure class is this week's target? (The check reads
# the tags as they are now, so correct them first if you disagree with any.)

# %%
my_answer = None  # a tag: structure, semantic, execution or rule_blocked
print(largest_share(my_answer, review.counts(), lang=LANG))

# %% [markdown]
# ## Build it: the case a bad session becomes
#
# Below, a bad session: asked twice to refund A1010, the naive loop refunded twice. Promoting it keeps its model
# replies as the case's script; what the case expects is yours to write. Predict first: if `expect` says what the
# session did, when does the case ever turn red? Write `my_expect`, what the final state must hold (a list of
# `refunds`, each with its `order_id` and `amount`, and the run's acceptable `statuses`). The check replays the
# session's replies through the naive loop, where the case must fail as the session did, and through the guarded
# loop, where it must pass.

# %%
from agentlab.workbook.builds_systems import promoted_expect

twice = run_case(by_id["adv-asks-twice"], loop="naive")  # the bad session
print(label(twice.run.status, LANG), [(r["order_id"], r["amount"]) for r in twice.snapshot["refunds"]])
my_expect = None  # a dict: what the final state must hold, {"refunds": [{"order_id": ..., "amount": ...}], ...}
print(promoted_expect(my_expect, lang=LANG))

# %% [markdown]
# ## Recap
#
# - Tags were proposed from the cause the trace records, and could be changed in a menu.
# - A promoted case fails the way the session did, and stays red until the fix lands.
# - Four stored weeks showed a falling invalid-call rate that only meant nothing was checked.
# - Week 1's replies, replayed through the guarded loop, showed the fix before a week passed; live curves
#   calibrated on a healthy hour alerted when a release shipped the naive loop.
# - The same review ran on a team's own log file, in a widget or with `python -m agentlab review --logs FILE`.
#
# **Next:** [13 · tool_choice and routing](13_tool_choice_and_routing.ipynb). Read alongside: [the metrics](../docs/metrics.md#the-weekly-bad-case-review); every path through the workbook: [docs/course.md](../docs/course.md).

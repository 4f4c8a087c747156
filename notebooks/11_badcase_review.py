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
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · The weekly bad-case review (Badcase 复盘)
#
# A routine (docs/metrics.md#the-weekly-bad-case-review), usable without writing code:
#
# 1. **Sample** sessions at random (随机抽样), not only the failed ones: sampling failures alone distorts the shares.
# 2. **Tag** each failure by where it happened (归因): structure, semantic, execution or rule-blocked.
#    Tags are proposed automatically from the trace, by the cause it records: a crash on a 429, a 500 or a dead
#    key is `execution` (the service failed), a history the API refused is `structure`, whatever loop it hit
#    (`tag_cause` gives the tag and the error code behind it). Correct any tag you disagree with.
# 3. **Target** (定靶) only the largest class this week.
# 4. **Verify** (验证) on the same metric next week: compare two stored runs of the suite class by class, and
#    follow the headline numbers across every stored run.
# 5. **Keep** (沉淀) the typical case: promote it into the regression suite in one click.

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab import GuardConfig
from agentlab.models.cassette import CassetteModel, labels
from agentlab.evals import (compare_runs, load_cases, load_results, promote, run_case, run_suite, sample, tag_cause,
                            trend)
from agentlab.workbook.exercises import largest_share
from agentlab.workbook.plots import plot_comparison, plot_trend
from agentlab.workbook.widgets import BadCaseReview

cases = load_cases("../data/aftersales_cases.jsonl")
by_id = {c.id: c for c in cases}
sessions = []
for tape in sorted(Path("../data/cassettes").glob("aftersales-*.jsonl")):
    for label in labels(tape):
        case_id, loop = label.rsplit("/", 1)
        if case_id in by_id:
            sessions.append(run_case(by_id[case_id], loop=loop, model=CassetteModel(tape, label, then="(end)")))
sessions += run_suite(cases, loop="naive")
print(f"{len(sessions)} sessions to sample from, {sum(not s.passed for s in sessions)} of them failed")

# %% [markdown]
# ## Sample, tag, target
#
# Twelve sessions at random. Change a tag with its menu; the shares and the target update.

# %%
suite = Path(os.environ.get("AGENTLAB_REGRESSION_SUITE", Path(tempfile.mkdtemp()) / "regression.jsonl"))
review = BadCaseReview(sessions, cases, suite, n=12, seed=7)
review.widget

# %%
pd.DataFrame([{"case": r.case_id, "loop": r.run.loop, "status": r.run.status, "auto tag": tag_cause(r)[0],
               "cause": tag_cause(r)[1] or "-", "why it failed": "; ".join(r.failures)} for r in review.picked])

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
    print(f"added {new.id} to {suite.name}; replayed through the {bad.run.loop} loop it ends {again.run.status}, "
          f"{'passes' if again.passed else 'fails as the session did: ' + '; '.join(again.failures)}")
    print(suite.read_text().splitlines()[-1][:300])

# %% [markdown]
# ## Verify: the same suite before and after a fix (修复前后对比)
#
# Every week the suite runs once and the run is stored with its time and code version
# (`run_suite(..., store=folder)`, docs/metrics.md#the-weekly-bad-case-review). Here four weeks are stored at
# once, each with one more fix: the naive loop, the guarded loop with validation off, validation on but no
# re-asks (the first invalid call hands over), and every guard. Fake models, offline; a temporary folder.

# %%
store = Path(tempfile.mkdtemp())
weeks = {"1-naive": ("naive", GuardConfig()), "2-no-validation": ("guarded", GuardConfig(validate=False)),
         "3-no-reasks": ("guarded", GuardConfig(self_correction=0)), "4-guarded": ("guarded", GuardConfig())}
for label, (loop, config) in weeks.items():
    run_suite(cases, loop=loop, config=config, store=store, label=label)
stored = {run.meta["label"]: run for run in map(load_results, store.iterdir())}  # each reopened from its folder
stored

# %% [markdown]
# Week 2 against week 4, class by class, on the cases both runs hold (a case only one of them ran is named, and
# counted nowhere else). `fixed` failed before and passes now; `broken` is the reverse: a fix that breaks
# something else shows up here.

# %%
cmp = compare_runs(stored["2-no-validation"], stored["4-guarded"])
print(cmp)
print("fixed:", ", ".join(cmp.fixed) or "-", "| broken:", ", ".join(cmp.broken) or "-")
pd.DataFrame(cmp.metrics).set_index("metric").round(3)

# %%
pd.DataFrame(cmp.rows).set_index(["kind", "class"]).round(3)

# %%
for lang in ("en", "zh"):  # the same figure, labelled in English and in Chinese
    plot_comparison(cmp, lang=lang)
    plt.show()

# %% [markdown]
# ## The trend across stored runs (指标趋势)
#
# Task success, invalid-call rate and takeover rate of every stored run, oldest first. Read the invalid-call rate
# with care: in week 2 it *falls*, because with validation off nothing checks the calls, so nothing is counted as
# invalid. A number is only comparable across weeks when it is measured the same way. The takeover rate rises
# too, and that is not a regression: most of it is correct hand-overs, tasks that need a person (see the
# outcomes above).

# %%
rows = trend(stored.values())
pd.DataFrame(rows).round(3)

# %%
for lang in ("en", "zh"):
    plot_trend(rows, lang=lang)
    plt.show()

# %% [markdown]
# ## Exercise
#
# After your corrections to the tags above, which failure class is this week's target? (The check reads
# the tags as they are now, so correct them first if you disagree with any.)

# %%
my_answer = None  # a tag: structure, semantic, execution or rule_blocked
print(largest_share(my_answer, review.counts()))

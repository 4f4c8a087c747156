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
# - read the four headline numbers and the four layers of metrics, each defined once in the package
# - measure reliability with pass^k and find which guard buys what with an ablation
#
# **Before it:** [08 · Where each failure is caught](08_where_failures_are_caught.ipynb), [09 · Real models](09_real_models.ipynb).
#
# **Time:** about 40 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import pandas as pd

from agentlab.evals import load_cases
from agentlab.i18n import t
from agentlab.resources import data_file  # the shipped data, found from notebooks/ and from notebooks/zh/ alike
from agentlab.workbook.plots import table_view

LANG = "en"  # "zh" for 中文

cases = load_cases(data_file("aftersales_cases.jsonl"))
print(t("nb10.said.cases", LANG, n=len(cases)))
table_view(pd.Series([c.category for c in cases]).value_counts().rename_axis("category").to_frame("cases"), lang=LANG)

# %% [markdown]
# ## Naive against guarded: the four headline numbers
#
# Task success rate, invalid-call rate, average steps and human-takeover rate, defined in docs/metrics.md#the-four-headline-numbers. Success means the case's check passed: the right refunds, or rightly none, and an
# acceptable final status. A run that "succeeded" but refunded the wrong amount is a failure. Each case runs
# once here, so the figure has no pass^k panel: that needs several trials per case (below).

# %%
import matplotlib.pyplot as plt

from agentlab.evals import run_suite
from agentlab.workbook.plots import compare_plot

suites = {loop: run_suite(cases, loop=loop) for loop in ("naive", "guarded")}
rows, fig = compare_plot(suites, lang=LANG)  # one call: the table and the plots
plt.show()
table_view(pd.DataFrame(rows).set_index("group"), lang=LANG)

# %% [markdown]
# ## Two ways to count success and takeover
#
# The workbook's task success counts a correct hand-over as a success, and its takeover counts only runs that
# ended `escalated` or `budget_exhausted`. A stricter pair counts differently (docs/metrics.md#two-ways-to-count):
# **task success (finished and checked)** is a run that finished *and* whose data the grader passed, and
# **takeover (anything not finished)** is every run that did not finish, a crash included. On this suite the
# naive loop's success is 44.2% either way, but its takeover is 7.7% the workbook's way and 19.2% the strict
# way: its 6 crashes handed nothing over, yet nobody finished them. The guarded loop's success is 100.0% the
# workbook's way and 63.5% the strict way: its 19 correct hand-overs are right, but not finished by the agent;
# its takeover is 36.5% both ways (it never crashes). Say which pair you report.

# %%
from agentlab.evals.metrics import summarize

counted = {}
for loop, results in suites.items():
    passed = {r.run.run_id: r.passed for r in results}
    s = summarize([r.run for r in results], lambda run, passed=passed: passed[run.run_id])
    counted[loop] = {t(k, LANG): f"{s[k.split('.')[1]]:.1%}" for k in (
        "eval.task_success_rate", "metrics2.checked_success_rate", "eval.takeover_rate", "metrics2.unfinished_rate")}
table_view(pd.DataFrame(counted).T, lang=LANG)

# %% [markdown]
# ## The four layers
#
# Each layer answers a different question, and each metric is defined exactly (the same text is in
# `agentlab.evals.metrics.LAYER_DEFINITIONS` and in docs/metrics.md#the-four-layers):

# %%
from agentlab.evals.metrics import LAYER_DEFINITIONS, layers
from agentlab.i18n import colon, joined, label, t

table_view(pd.DataFrame([{"layer": layer, "metric": m, "definition": d} for layer, ms in LAYER_DEFINITIONS.items()
                         for m, d in ms.items()]), lang=LANG)

# %%
values = {}
needs = {c.id: c.needed_tools or None for c in cases}  # the tools each case needs, where it declares them
avoids = {c.id: c.avoided_tools or None for c in cases}  # and the ones it must leave alone
for loop, rs in suites.items():
    ok = {r.run.run_id: r.passed for r in rs}
    need = {r.run.run_id: needs[r.case_id] for r in rs}
    avoid = {r.run.run_id: avoids[r.case_id] for r in rs}
    values[loop] = layers([r.run for r in rs], correct=lambda run, ok=ok: ok[run.run_id],
                          needed_tools=lambda run, need=need: need[run.run_id],
                          avoided_tools=lambda run, avoid=avoid: avoid[run.run_id])
# one row per metric of its own layer (a pivot over every layer x metric would invent 36 empty rows)
four = pd.DataFrame([{"layer": layer, "metric": m, **{loop: values[loop][layer][m] for loop in suites}}
                     for layer, ms in LAYER_DEFINITIONS.items() for m in ms]).set_index(["layer", "metric"])
unreported = [m for (_, m), row in four.iterrows() if row.isna().all()]
print(t("layers.not_reported", LANG, names=joined((label(m, LANG) for m in unreported), LANG, "list") or "-"))
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
import random

from agentlab.evals import fake_model, pass_k_curve
from agentlab.models.faults import MODEL_FAULTS, FaultyModel
from agentlab.workbook.plots import plot_pass_k


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
from agentlab.evals import ablation
from agentlab.workbook.plots import cjk_fonts, plot_hbars

abl = ablation(cases)
with cjk_fonts():  # top to bottom: no guards, each guard alone, all guards
    plot_hbars(abl, title=t("ablation.title", LANG), xlabel=t("ablation.axis", LANG),
               tone={"no guards": "bad", "all guards": "good"}, lang=LANG)
    plt.show()

# %% [markdown]
# "No guards" is not the naive suite two figures above, and the numbers differ. Why, case by case:

# %%
from agentlab import NO_GUARDS
from agentlab.evals import pass_rate

no_guards = run_suite(cases, config=NO_GUARDS)  # the run behind the ablation's "no guards" bar
assert pass_rate(no_guards) == abl["no guards"]
without = {r.case_id: r for r in no_guards}
apart = [(n, without[n.case_id]) for n in suites["naive"] if n.passed != without[n.case_id].passed]
crashed = sum(n.run.status == "failed" for n, _ in apart)
capped = sum(n.run.status == "budget_exhausted" for n, _ in apart)
print(t("ablation.not_naive", LANG, no_guards=abl["no guards"], naive=pass_rate(suites["naive"]), n=len(apart),
        total=len(cases), gained=sum(g.passed for _, g in apart), lost=sum(n.passed for n, _ in apart),
        crashed=crashed, capped=capped, other=len(apart) - crashed - capped))
table_view(pd.DataFrame([{"case": n.case_id, "naive loop": f"{label(n.run.status, LANG)}{colon(LANG)}{label(n.outcome, LANG)}",
                          "guarded loop, no guards": f"{label(g.run.status, LANG)}{colon(LANG)}{label(g.outcome, LANG)}"}
                         for n, g in apart]), lang=LANG)

# %% [markdown]
# ## Exercise
#
# Which single guard, on its own, raises the success rate the most in the ablation? Set `my_answer` to its
# name (for example `"retry"`).

# %%
from agentlab.workbook.exercises import best_single_guard

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
# - Every number came from its one definition in the package; a `-` is a number the runs did not report, not zero.
# - pass^k over six trials per case showed flakiness that one trial hides.
# - The ablation switched on one guard at a time; "no guards" differed from the naive loop, and the cases said why.
#
# **Next:** [11 · The weekly bad-case review](11_badcase_review.ipynb), where the same numbers are watched between releases: health lines, live curves, a fix replayed on stored conversations. Read alongside: [the metrics](../docs/metrics.md#the-four-headline-numbers); every path through the workbook: [docs/course.md](../docs/course.md).

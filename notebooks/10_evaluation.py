# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Prove it got better (评测与指标)
#
# "It feels more stable" is not a release criterion. A fixed suite of cases (回归集), run before every change
# of prompt, schema, model or guard, and graded on the **final state of the data**: that is the evidence.
# `data/aftersales_cases.jsonl` holds the cases counted below: normal flows, boundary flows (an order that
# does not exist, amount 0, a refund above the order, an over-long remark, an order found by phone only) and
# adversarial ones (baits toward the wrong tool, wrong field names, a request outside the agent's
# permissions, a user asking twice).

# %%
import random
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab import GuardConfig
from agentlab.evals import (ablation, compare_groups, fake_model, load_cases, pass_k_curve, recorded_cases,
                            replay_cassette, replay_results, run_suite)
from agentlab.evals.metrics import LAYER_DEFINITIONS, failure_breakdown, layers, status_counts
from agentlab.models.faults import MODEL_FAULTS, FaultyModel
from agentlab.workbook.exercises import best_single_guard
from agentlab.workbook.plots import compare_plot, plot_bars, plot_pass_k, plot_shares, plot_statuses

cases = load_cases("../data/aftersales_cases.jsonl")
print(f"{len(cases)} cases")
pd.Series([c.category for c in cases]).value_counts()

# %% [markdown]
# ## Naive against guarded: the four headline numbers
#
# Task success rate (任务成功率), invalid-call rate (无效调用率), average steps (平均步数), human-takeover
# rate (人工接管率), defined in docs/metrics.md#the-four-headline-numbers. Success means the case's check passed: the right refunds, or rightly none, and an
# acceptable final status. A run that "succeeded" but refunded the wrong amount is a failure.

# %%
suites = {loop: run_suite(cases, loop=loop) for loop in ("naive", "guarded")}
rows, fig = compare_plot(suites)  # one call: the table and the plots
plt.show()
pd.DataFrame(rows).set_index("group").style.format("{:.2f}")

# %% [markdown]
# ## The four layers
#
# Each layer answers a different question, and each metric is defined exactly (the same text is in
# `agentlab.evals.metrics.LAYER_DEFINITIONS` and in docs/metrics.md#the-four-layers):

# %%
pd.DataFrame([{"layer": layer, "metric": m, "definition": d} for layer, ms in LAYER_DEFINITIONS.items()
              for m, d in ms.items()])

# %%
rows = []
for loop, rs in suites.items():
    ok = {r.run.run_id: r.passed for r in rs}
    for layer, ms in layers([r.run for r in rs], correct=lambda run: ok[run.run_id]).items():
        rows += [{"loop": loop, "layer": layer, "metric": m, "value": round(v, 3)} for m, v in ms.items()]
pd.DataFrame(rows).pivot_table(index=["layer", "metric"], columns="loop", values="value", dropna=False)

# %% [markdown]
# `tokens_per_task` is empty (NaN) here, not zero: the fake models report no token usage. The real models
# in notebook 09 do, and the same table fills in for them.

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
plot_pass_k({loop: pass_k_curve(rs) for loop, rs in trials.items()})
plt.show()

# %% [markdown]
# ## Which guard buys what (ablation)
#
# Success with no guard at all, with each guard alone, and with all of them.

# %%
abl = ablation(cases)
fig, ax = plt.subplots(figsize=(9, 3))
ax.bar(list(abl), list(abl.values()), color=["#d93025"] + ["#9aa0a6"] * (len(abl) - 2) + ["#188038"])
ax.set_ylabel("task success rate")
ax.tick_params(axis="x", rotation=45, labelsize=8)
plt.show()

# %% [markdown]
# ## Model against model
#
# The same suite, replayed from recordings of the local models (see notebook 09), next to the fake.

# %%
# Each recording holds only some cases, so each model is compared with the fake **on the cases it was
# recorded with** (the `cases` column), never a rate over 17 cases against one over 52.

# %%
tapes = {p.stem.split("-")[-1]: p for p in sorted(Path("../data/cassettes").glob("aftersales-*.jsonl"))}
by_id = {c.id: c for c in cases}
groups = {}
for size, tape in tapes.items():
    ids = [i for i in recorded_cases(tape).get("guarded", []) if i in by_id]
    groups[f"{size} cases ({len(ids)}): qwen {size}"] = replay_cassette(tape, by_id, "guarded", ids)
    groups[f"{size} cases ({len(ids)}): fake"] = run_suite([by_id[i] for i in ids])
table = pd.DataFrame(compare_groups(groups)).set_index("group")
plot_bars({m: table[m].to_dict() for m in ("task_success_rate", "invalid_call_rate", "takeover_rate")},
          title="model against model, guarded loop, each pair on the same cases")
plt.show()
table

# %% [markdown]
# ## Status breakdown, and failures by both taxonomies
#
# Rule-blocked outcomes (approval, breaker, budget, a business rule that fired) are guards doing their job:
# they are counted apart, never as instability.

# %%
plot_statuses({label: status_counts([r.run for r in rs]) for label, rs in {**suites, **groups}.items()})
plt.show()
fb = failure_breakdown([r.run for r in suites["guarded"]])
fig, axes = plt.subplots(1, 3, figsize=(13, 2.6))
plot_shares(fb["by_category"], ax=axes[0], title="unstable: by retry class")
plot_shares(fb["by_stage"], ax=axes[1], title="unstable: by stage")
plot_shares(fb["rule_blocked"], ax=axes[2], title="rule-blocked (counted apart)")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## What would a new guard have changed? Replay without the model
#
# Yesterday's naive conversations, their model replies replayed through today's guarded loop.

# %%
replayed = replay_results(suites["naive"], cases, config=GuardConfig())
pd.DataFrame(compare_groups({"naive, as recorded": suites["naive"], "same replies, guarded": replayed})).set_index("group")

# %% [markdown]
# ## Exercise
#
# Which single guard, on its own, raises the success rate the most in the ablation? Set `my_answer` to its
# name (for example `"retry"`).

# %%
my_answer = None  # a guard's name
print(best_single_guard(my_answer, abl))

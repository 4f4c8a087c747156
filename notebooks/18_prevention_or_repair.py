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
# # 18 · Prevention or repair: grammars, re-asking, and a leaderboard on the local models (预防还是修复)
#
# Two ways to get a valid tool call out of a small model. **Prevent**: constrain the model while it writes, so that
# only tokens the tool's schema allows can come out (a grammar, "structured outputs"). **Repair**: let it write, check
# the call at the boundary, and hand the readable error back for another try (the guarded loop's validate-and-reask,
# notebooks 02–03). This notebook measures both on the same questions and the same local models, and puts the result
# beside a published leaderboard: the Berkeley Function-Calling Leaderboard (BFCL), whose paper reports Qwen2.5-0.5B
# and 1.5B in function-calling mode. (The local models are the Coder variants of those sizes, quantized, and the
# paper's overall figure spans more categories than the four sampled here: read it as a reference point.)
#
# Nothing runs a model here: every reply was recorded (`benchmarks/bench_bfcl_local.py`) and is replayed from
# `data/cassettes/bfcl-<size>.jsonl`; the grading runs live, from `agentlab.evals.bfcl`
# (docs/metrics.md#bfcl-three-ways).

# %%
from collections import Counter

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from agentlab.evals import bfcl
from agentlab.models.constrained import call_grammar
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import plot_bars

LANG = "en"  # "zh" for 中文
HAVE_DATA = (bfcl.bfcl_dir() / "data").exists()  # BFCL is read from ../shared/datasets, never shipped
SIZES = [s for s in ("0.5b", "1.5b") if bfcl.bfcl_cassette(s).exists()]
questions = bfcl.questions() if HAVE_DATA else []
attempts = {s: bfcl.replay_attempts(bfcl.bfcl_cassette(s), questions) for s in SIZES}
print("BFCL data:", "found" if HAVE_DATA else "absent (set AGENTLAB_DATASETS): the cells below stay empty")
for s, a in attempts.items():
    print(f"{s}: {Counter(x.category for x in a if x.mode == 'single')} questions replayed")

# %% [markdown]
# ## Three ways to ask (三种问法)
#
# Every question is one user turn with one to a few function docs. The same prompt (the same chat template, the same
# tools) is sent three ways:
#
# * **single** — one reply, graded as written: what the leaderboard measures.
# * **reask** — the guarded loop: a call that breaks the contract (broken JSON, a function that does not exist, a field
#   the doc does not have, a wrong type, a missing required argument) is answered with the readable error and the
#   model tries again, at most twice. Nothing is executed; once the checks accept a reply, that reply is graded. Its
#   first turn *is* the single-shot reply, so one recording serves both.
# * **constrained** — one reply written under a grammar made of the same contracts: a fenced call whose name is one of
#   the tools and whose arguments follow that tool's schema, or plain words (a question no function fits must still be
#   answerable without a call). This is the grammar for a question with one function:

# %%
if questions:
    q0 = questions[0]
    print(call_grammar(bfcl.tools_for(q0)[0])[:700], "...")

# %% [markdown]
# The grading follows BFCL's rule: the right function, every required argument, no argument the doc lacks, each value
# among the accepted ones (strings without case or punctuation); for *parallel* the calls pair up with the expected
# ones in any order; for *irrelevance*, the right answer is no call at all. The rule is checked against BFCL's own
# ground truth in `tests/test_bfcl_eval.py` (every expected answer grades as right).
#
# ## The table (表格)

# %%
def accuracy_table(size: str) -> pd.DataFrame:
    fig = bfcl.accuracy(attempts[size])
    rows = {mode: {c: round(100 * fig[mode].get(c, float("nan")), 1) for c in (*bfcl.CATEGORIES, "mean")} for mode in bfcl.MODES}
    table = pd.DataFrame(rows).T
    table["published overall"] = bfcl.PUBLISHED[size]["overall"]
    return table


for size in SIZES:
    print(f"Qwen2.5-Coder-{size}, accuracy in % (n per category: "
          f"{dict(Counter(a.category for a in attempts[size] if a.mode == 'single'))})")
    display(accuracy_table(size))

# %%
if SIZES:
    fig, axes = plt.subplots(1, len(SIZES), figsize=(7 * len(SIZES), 4), squeeze=False)
    for ax, size in zip(axes[0], SIZES, strict=True):
        f = bfcl.accuracy(attempts[size])
        plot_bars({c: {m: f[m][c] for m in bfcl.MODES} for c in bfcl.CATEGORIES if c in f["single"]}, ax=ax,
                  title=f"BFCL, {size}: " + ("accuracy by mode" if LANG == "en" else "各问法的准确率"),
                  ylabel="accuracy" if LANG == "en" else "准确率")
    plt.tight_layout()
    plt.show()

# %% [markdown]
# How to read it, with the numbers computed from the replay (no figure below is typed by hand):

# %%
def what_the_interface_adds(size: str) -> str:
    f = bfcl.accuracy(attempts[size])
    single, reask, con = (100 * f[m]["mean"] for m in bfcl.MODES)
    published = bfcl.PUBLISHED[size]["overall"]
    return (f"{size}: single shot {single:.1f}% on average over the four categories (the paper's overall, over more "
            f"categories: {published}); validate-and-reask {reask:.1f}% ({reask - single:+.1f} points); "
            f"the grammar {con:.1f}% ({con - single:+.1f} points).")


for size in SIZES:
    print(what_the_interface_adds(size))

# %% [markdown]
# ## What each one can fix (各自能修什么)
#
# Each wrong reply falls in one kind (`bfcl.KINDS`, first match wins). The first six break the tool's contract: a
# grammar built from the contract should make them impossible, and the guard sees every one of them. The other five
# keep the contract and still miss the question — a real function but the wrong one, the right one with a wrong
# value, too few calls, words where a call was needed, a call where none fits: no grammar and no schema check can
# see those.

# %%
def kinds_table(size: str) -> pd.DataFrame:
    table = pd.DataFrame(bfcl.kinds(attempts[size])).loc[list(bfcl.KINDS), list(bfcl.MODES)]
    table.index = [f"{k} ({'contract' if k in bfcl.CONTRACT_KINDS else 'meaning'})" for k in table.index]
    return table


for size in SIZES:
    print(f"{size}: wrong replies by kind")
    display(kinds_table(size))

# %%
if SIZES:
    size = SIZES[0]
    k = bfcl.kinds(attempts[size])
    fig, ax = plt.subplots(figsize=(11, 4))
    plot_bars({kind: {m: k[m][kind] for m in bfcl.MODES} for kind in bfcl.KINDS}, ax=ax,
              title=f"{size}: " + ("wrong replies by kind" if LANG == "en" else "错误回复的类别"),
              ylabel="replies" if LANG == "en" else "回复数")
    plt.xticks(rotation=30, ha="right")
    plt.tight_layout()
    plt.show()

# %%
def prevented_and_not(size: str) -> str:
    k = bfcl.kinds(attempts[size])
    contract = {m: sum(k[m][x] for x in bfcl.CONTRACT_KINDS) for m in bfcl.MODES}
    meaning = {m: sum(v for x, v in k[m].items() if x not in bfcl.CONTRACT_KINDS) for m in bfcl.MODES}
    return (f"{size}: contract failures single {contract['single']} → reask {contract['reask']} → grammar "
            f"{contract['constrained']}; failures of meaning single {meaning['single']} → reask {meaning['reask']} → "
            f"grammar {meaning['constrained']}.")


for size in SIZES:
    print(prevented_and_not(size))

# %% [markdown]
# What to look for in these lines:
#
# * A grammar removes contract failures by construction — if some remain under it, they are replies cut off by the
#   token limit (a number forced to go on because the model wanted to write a field the schema does not have: the
#   grammar's own failure mode, shown below).
# * A grammar can move failures rather than remove them: a call that would have been refused for an unknown field is
#   now a *valid* call with a wrong value, which no guard will ever see. Compare the "meaning" line across modes.
# * Re-asking fixes what it is told about, when the model can read the error; it cannot touch the failures of meaning.
#
# ## One reply, three ways (同一个问题，三种回答)
#
# Pick a kind of failure to see the questions where the single-shot reply had it, and what the other two modes made of
# the same question.

# %%
def examples(size: str, kind: str, n: int = 5) -> pd.DataFrame:
    by = {(a.id, a.mode): a for a in attempts[size]}
    ids = [a.id for a in attempts[size] if a.mode == "single" and a.kind == kind][:n]
    return pd.DataFrame([{"question": i, **{m: (("✓ " if by[(i, m)].correct else "✗ ") + str(by[(i, m)].calls)[:90])
                                            for m in bfcl.MODES if (i, m) in by}} for i in ids])


if SIZES:
    pick = widgets.interactive(lambda size, kind: display(examples(size, kind)),
                               size=widgets.Dropdown(options=SIZES, description="model" if LANG == "en" else "模型"),
                               kind=widgets.Dropdown(options=list(bfcl.KINDS), value="unknown_field",
                                                     description="kind" if LANG == "en" else "类别"))
    display(pick)

# %% [markdown]
# ## The grammar's own failure (语法约束自己的失败)
#
# A reply that runs to the token limit under the grammar: the model wanted to stop or to add something the schema does
# not allow, the grammar would not let it, and it went on writing the only thing allowed.

# %%
for size in SIZES:
    runaway = [a for a in attempts[size] if a.mode == "constrained" and a.kind == "bad_json"]
    print(f"{size}: {len(runaway)} constrained replies cut off by the token limit")
    for a in runaway[:2]:
        name, args = a.calls[0]
        print(f"  {a.id}: {name}({str(args)[:120]}...)")

# %% [markdown]
# ## Exercise (练习)
#
# For the 0.5B model: which kind of failure did validate-and-reask remove the most of, compared with the single shot?
# Answer with a key of `bfcl.KINDS`, read from the table above.

# %%
if SIZES:
    k = bfcl.kinds(attempts[SIZES[0]])
    truth = max(bfcl.KINDS, key=lambda kind: k["single"][kind] - k["reask"][kind])
else:
    truth = None
my_answer = None  # a kind, e.g. "wrong_value"
print(answer_is(my_answer, truth, lang=LANG,
                why={"en": "that row fell the most between the single and the reask columns: the error told the model "
                           "exactly what to change, and it could.",
                     "zh": "这一行从 single 到 reask 下降得最多：错误信息准确说出了要改什么，模型也改得了。"},
                hint={"en": "subtract the reask column from the single column in the kinds table.",
                      "zh": "在类别表里用 single 列减去 reask 列。"}))

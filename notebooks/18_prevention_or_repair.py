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
# # 18 · Prevention or repair: grammars, re-asking, and a leaderboard on the local models
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
# (docs/metrics.md#bfcl-three-ways), when the BFCL questions are in `../shared/datasets/bfcl` (or under
# `$AGENTLAB_DATASETS`). Without them, every table and plot below comes from the same grading done once and shipped
# with the workbook (`data/bfcl/graded.json`, derived from BFCL under its Apache-2.0 license); the first line of
# output says which, and how to grade live.

# %% [markdown]
# **After this notebook you can:**
#
# - compare prevention (a grammar from the schema) with repair (validate and re-ask) on the same questions and local models
# - grade replies by BFCL's rule and sort each wrong one into a kind
# - say which failures a grammar removes, which it only moves, and its own failure at the token limit
# - decide, from recorded replies, when a re-ask is worth its turn and when to stop
#
# **Before it:** [03 · Errors the model can read](03_readable_errors.ipynb), [09 · Real models](09_real_models.ipynb).
#
# **Time:** about 45 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from agentlab.evals import bfcl
from agentlab.evals.bfcl_results import graded
from agentlab.i18n import aside, colon, joined, label, t
from agentlab.models.constrained import call_grammar
from agentlab.workbook.exercises import most_repaired_kind
from agentlab.workbook.plots import cjk_fonts, plot_bars, table_view

LANG = "en"  # "zh" for 中文
RESULTS = graded()  # live from the BFCL data when it is there, else the results shipped with the workbook
FIG = RESULTS.sizes  # each model's figures: accuracy, kinds of failure, where each went, a few replies
SIZES = list(FIG)
print(RESULTS.said(LANG))
for s, f in FIG.items():
    print(f"{s}{colon(LANG)}" + t("nb18.said.questions_replayed_per_category", LANG) + colon(LANG)
          + joined([f"{label(c, LANG)} {n}" for c, n in f.n.items()], LANG, "list"))

# %% [markdown]
# ## Three ways to ask
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
print(call_grammar(bfcl.tools_for(RESULTS.example)[0])[:700], "...")

# %% [markdown]
# The grading follows BFCL's rule: the right function, every required argument, no argument the doc lacks, each value
# among the accepted ones (strings without case or punctuation); for *parallel* the calls pair up with the expected
# ones in any order; for *irrelevance*, the right answer is no call at all. The rule is checked against BFCL's own
# ground truth in `tests/test_bfcl_eval.py` (every expected answer grades as right, except `simple_python_200`, whose
# own answer leaves out an argument its doc requires).
#
# ## The table

# %%
def accuracy_table(size: str) -> pd.DataFrame:
    fig = FIG[size].accuracy
    rows = {mode: {c: round(100 * fig[mode].get(c, float("nan")), 1) for c in (*bfcl.CATEGORIES, "mean")} for mode in bfcl.MODES}
    table = pd.DataFrame(rows).T
    table[t("nb18.said.published_overall", LANG)] = bfcl.PUBLISHED[size]["overall"]
    return table


for size in SIZES:
    n = FIG[size].n
    per = joined([f"{label(c, LANG)} {count}" for c, count in n.items()], LANG, "list") if isinstance(n, dict) else n
    print(joined([f"Qwen2.5-Coder-{size}", t("nb18.said.accuracy_in_n_per", LANG, n=per)], LANG, "comma"))
    display(table_view(accuracy_table(size), lang=LANG))

# %%
if SIZES:
    with cjk_fonts():  # the titles may be Chinese: the fonts are needed when the figure is drawn
        fig, axes = plt.subplots(1, len(SIZES), figsize=(7 * len(SIZES), 4), squeeze=False)
        for ax, size in zip(axes[0], SIZES, strict=True):
            f = FIG[size].accuracy
            plot_bars({c: {m: f[m][c] for m in bfcl.MODES} for c in bfcl.CATEGORIES if c in f["single"]}, ax=ax,
                      title=t("nb18.said.accuracy_by_mode", LANG, size=size), ylabel=t("nb18.said.accuracy", LANG), lang=LANG)
        plt.tight_layout()
        plt.show()

# %% [markdown]
# How to read it, with the numbers computed from the replay (no figure below is typed by hand):

# %%
def what_the_interface_adds(size: str) -> str:
    f = FIG[size].accuracy
    single, reask, con = (100 * f[m]["mean"] for m in bfcl.MODES)
    published = bfcl.PUBLISHED[size]["overall"]
    return t("nb18.said.size_single_shot_single", LANG, size=size, single=single, published=published, reask=reask, value=reask - single, con=con, value2=con - single)


for size in SIZES:
    print(what_the_interface_adds(size))

# %% [markdown]
# ### What the prompt decides
#
# Two of these figures say as much about the prompt as about the model, and the replay can show how much. The local
# chat template (`agentlab/models/templates/qwen_fenced_tools.jinja`) asks for "a fenced json block" with an example
# whose arguments are placeholders:
#
# * **parallel.** A question here needs two or more calls. Count the replies that hold more than one: if it is zero
#   in every mode, the category measures the template's singular as much as the model, and the mean over the other
#   three is the fairer summary.
# * **irrelevance.** A reply that copies the example (`{"<argument name>": <value>}`) is not JSON, so BFCL's rule
#   reads it as no call, and on a question no function fits, as right. The grammar cannot write a placeholder, so it
#   loses those "right" answers. Counted as what they are (an attempt to call), the means below move.

# %%
def what_the_prompt_decides(size: str) -> str:
    fig = FIG[size]
    several, f, strict = fig.several, fig.accuracy, fig.copies_wrong  # strict: a copied example counted wrong
    three = [c for c in bfcl.CATEGORIES if c != "parallel"]
    copies, n_irr = fig.copies, fig.n_irrelevance
    without = {m: 100 * bfcl.mean_of(f[m], three) for m in bfcl.MODES}
    s_single, s_con = (100 * strict[m]["mean"] for m in ("single", "constrained"))
    return t("nb18.said.size_replies_with_more", LANG, size=size, several=joined([f"{label(m, LANG)} {n}" for m, n in several.items()], LANG, "list"), single=without['single'], reask=without['reask'], constrained=without['constrained'], n_irr=n_irr, copies=copies, s_single=s_single, s_con=s_con, value=s_con - s_single)


for size in SIZES:
    print(what_the_prompt_decides(size))

# %% [markdown]
# ## What each one can fix
#
# Each wrong reply falls in one kind (`bfcl.KINDS`, first match wins). The first six break the tool's contract: a
# grammar built from the contract should make them impossible, and the guard sees every one of them. The other five
# keep the contract and still miss the question — a real function but the wrong one, the right one with a wrong
# value, too few calls, words where a call was needed, a call where none fits: no grammar and no schema check can
# see those.

# %%
GROUP = {k: t(f"nb18.kind_group.{k}", LANG) for k in ("contract", "meaning")}


def kind_name(kind: str) -> str:
    """A kind as every table, plot and picker below names it: its key, and its group."""
    if kind not in bfcl.KINDS:
        return label(kind, LANG)
    return kind + aside(GROUP["contract"] if kind in bfcl.CONTRACT_KINDS else GROUP["meaning"], LANG)


def kinds_table(size: str) -> pd.DataFrame:
    table = pd.DataFrame(FIG[size].kinds).loc[list(bfcl.KINDS), list(bfcl.MODES)]
    table.index = [kind_name(k) for k in table.index]
    table[t("nb18.what_it_is", LANG)] = [t(f"bfcl.kind.{k}", LANG) for k in bfcl.KINDS]
    return table


for size in SIZES:
    print(f"{size}{colon(LANG)}" + t("nb18.said.wrong_replies_by_kind", LANG))
    display(table_view(kinds_table(size), lang=LANG))

# %%
if SIZES:
    size = SIZES[0]
    k = FIG[size].kinds
    with cjk_fonts():
        fig, ax = plt.subplots(figsize=(11, 4))
        plot_bars({kind_name(kind): {m: k[m][kind] for m in bfcl.MODES} for kind in bfcl.KINDS}, ax=ax,
                  title=t("nb18.said.kinds_title", LANG, size=size), ylabel=t("nb18.said.replies", LANG), lang=LANG)
        plt.xticks(rotation=30, ha="right")
        plt.tight_layout()
        plt.show()

# %%
def prevented_and_not(size: str) -> str:
    k = FIG[size].kinds
    contract = {m: sum(k[m][x] for x in bfcl.CONTRACT_KINDS) for m in bfcl.MODES}
    meaning = {m: sum(v for x, v in k[m].items() if x not in bfcl.CONTRACT_KINDS) for m in bfcl.MODES}
    return t("nb18.said.size_contract_failures_single", LANG, size=size, single=contract['single'], reask=contract['reask'], constrained=contract['constrained'], single2=meaning['single'], reask2=meaning['reask'], constrained2=meaning['constrained'])


for size in SIZES:
    print(prevented_and_not(size))

# %% [markdown]
# Where did each question's failure go? The same question, single shot against the other mode: rows are what the
# single shot was, columns what the other mode made of it (`right` when it was right). The diagonal is unchanged.

# %%
def transition_table(size: str, after: str) -> pd.DataFrame:
    order = ["right", *bfcl.KINDS]
    table = pd.DataFrame(0, index=order, columns=order)
    for a, b, n in FIG[size].transitions[after]:  # (single's kind or "right", the other mode's, questions)
        table.loc[a, b] = n
    table = table.loc[(table.sum(axis=1) > 0), (table.sum(axis=0) > 0)]
    return table.rename(index=kind_name, columns=kind_name)


for size in SIZES[:1]:
    for after in ("reask", "constrained"):
        print(f"{size}{colon(LANG)}{label('single', LANG)} → {label(after, LANG)}")
        display(table_view(transition_table(size, after), lang=LANG))

# %% [markdown]
# What to look for in these tables:
#
# * A grammar removes contract failures by construction. If some remain under it, they are replies cut off by the
#   token limit (the model wanted to stop or to write a field the schema does not have, and the grammar made it go on
#   with a value or with whitespace: the grammar's own failure mode, shown below).
# * A grammar moves failures rather than removing them: read the contract rows of the single → constrained table and
#   see which columns they land in. A call refused for an unknown field can become a valid call that is still wrong
#   (a wrong value, or too few calls), and no guard will ever see it.
# * Re-asking fixes what it is told about, when the model can read the error. It does not fix failures of meaning, and
#   it can move a question *out* of "right": on an irrelevance question, a broken call BFCL would read as no call is
#   re-asked, and the second try may be a real call. The single → reask table shows how often.
#
# ## One reply, three ways
#
# Pick a kind of failure to see the questions where the single-shot reply had it, and what the other two modes made of
# the same question.

# %%
def examples(size: str, kind: str) -> pd.DataFrame:
    return pd.DataFrame(FIG[size].examples[kind], columns=["question", *bfcl.MODES])


def examples_shown(size: str, kind: str) -> None:
    """The modes said in LANG; the cells are what the model wrote (✓ right, ✗ wrong), quoted as they were."""
    shown = examples(size, kind)
    if shown.empty:
        print(t("nb18.said.no_examples", LANG, kind=kind_name(kind)))
    else:
        display(shown.rename(columns=lambda c: label(c, LANG)))


if SIZES:
    pick = widgets.interactive(examples_shown,
                               size=widgets.Dropdown(options=SIZES, description=t("nb18.said.model", LANG)),
                               kind=widgets.Dropdown(options=[(kind_name(k), k) for k in bfcl.KINDS], value="unknown_field",
                                                     description=t("nb18.said.kind", LANG)))
    display(pick)

# %% [markdown]
# ## The grammar's own failure
#
# A reply that runs to the token limit under the grammar: the model wanted to stop or to add something the schema does
# not allow, the grammar would not let it, and it went on writing the only thing allowed (digits, or whitespace).

# %%
for size in SIZES:
    runaway = FIG[size].runaway
    print(f"{size}{colon(LANG)}" + t("nb18.said.runaway_constrained_replies_cut", LANG, runaway=runaway))
    for qid, name, args in FIG[size].runaway_first:
        print(f"  {qid}: {name}({args}...)")

# %% [markdown]
# ## Graded by the leaderboard's own checker
#
# Every figure above comes from a checker the workbook wrote from the rule's description. The leaderboard publishes its
# own evaluator, `bfcl-eval` (Apache-2.0): its AST checker, its data, and executable environments for the multi-turn
# category. Installed without its declared dependencies (`requirements-bfcl.txt`: seven packages, 24 MB), it grades
# the same recordings here, three ways (`agentlab.evals.bfcl_compare`; how they were made: docs/metrics.md#the-official-bfcl-checker).
#
# 1. **The recorded replies, graded by both checkers**: the single shot's accuracy by each, and how often they agree
#    over every mode's replies.
# 2. **Probes on every single-turn category.** The recordings cover four categories. On every question of every
#    single-turn category (parallel-multiple and the live ones too), both checkers grade the accepted answer and
#    systematic changes of it: the calls reversed, an argument dropped or added, a value changed, an integer as a
#    float, capitals, a list cut short, a function renamed, arguments that are not JSON, a call repeated, no call.
# 3. **Multi-turn, executed.** A conversation of three to five user turns against one or two stateful APIs (a file
#    system, a trading bot, a travel desk, a car, a messaging app). The raw loop runs every call the model writes, one
#    reply per step, as the leaderboard does; the guarded loop checks each call against its schema first, answers a
#    broken one with a readable error and a re-ask, stops a call repeated three times, and gives each user turn a step
#    budget. The official checker compares the state of every API and the calls' results with the ground truth's after
#    every turn.
#
# Like for like: the local models are the Coder variants of Qwen2.5 0.5B and 1.5B Instruct (the 0.5B quantized to 4
# bits), asked through the workbook's chat template (tools in the system message, each call a fenced json block) at
# temperature 0. The leaderboard's own runs use each model's chat template (Qwen's `<tool_call>` tags) at temperature
# 0.001 on full-precision weights. So these views compare the checkers, not the models: the leaderboard's figures come
# last, beside replies asked the leaderboard's own way.

# %%
from agentlab.evals.bfcl_compare import official_results

OFFICIAL = official_results()  # live where the evaluator is installed, else the results shipped with the workbook
print(OFFICIAL.said(LANG))
for size in OFFICIAL.single:
    print(OFFICIAL.agreement_said(size, LANG))
    display(table_view(pd.DataFrame(OFFICIAL.checker_table(size)).T, percent=["ours", "official", "agreement"], lang=LANG))

# %%
print(OFFICIAL.probes_said(LANG))
table_view(pd.DataFrame(OFFICIAL.probe_table()).T, percent=["agreement"], lang=LANG)

# %% [markdown]
# Where the two disagree, the list below says so, reply by reply (an empty list: they judged every reply alike).

# %%
for size, rows in OFFICIAL.disagreements.items():
    print(size, rows)

# %% [markdown]
# ### Multi-turn: raw loop against guarded loop
#
# The same fixed sample of the base multi-turn category for both loops, recorded (`benchmarks/bench_bfcl_multi_turn.py`)
# and replayed here in seconds: the environments are deterministic, so the replay reproduces each run and the
# official checker grades it again.

# %%
for size in SIZES:
    print(OFFICIAL.multi_said(size, LANG))
    if OFFICIAL.multi_table(size):
        display(table_view(pd.DataFrame(OFFICIAL.multi_table(size)).T, percent=["accuracy"], lang=LANG))

# %% [markdown]
# ### Beside the leaderboard's figures: asked the leaderboard's way
#
# The leaderboard lists Qwen2.5 0.5B and 1.5B Instruct in its prompt mode: no tools field; its own system prompt lists
# the functions and asks for the calls as a Python list, `[f(a=1), g(b="x")]`; its own parser decodes the reply and its
# checker grades it. Asked through the workbook's template instead, the models never wrote two calls in one reply, so
# `parallel` scored 0% above where the leaderboard prints 53.5% and 70.0%: a different test, not a worse model.
#
# Here the same sample is asked the leaderboard's way (`agentlab.evals.bfcl_prompting`: its prompt and its decoder,
# imported from `bfcl-eval`; Qwen's own chat format; greedy decoding), recorded by
# `benchmarks/bench_bfcl_prompting.py`, and graded by both checkers. The tolerance is stated before any claim: a
# category reproduces the leaderboard when its published figure lies within the 95% interval (Wilson's) of the raw
# replies' figure. Only there does the line below say what the guarded re-ask adds. The remaining differences are
# named: the local models are the Coder variants, the 0.5B quantized to 4 bits, on llama.cpp; the leaderboard ran the
# Instruct models at full precision, on version 3 of the questions. Where no published table gives the figure for the
# same questions (the 0.5B's Python-only `simple`, its non-live `irrelevance`), the leaderboard column stays empty
# and nothing is compared. One sentence of the leaderboard's prompt is missing from these recordings: it ends each
# function's description with a note that the function is in Python 3 syntax.

# %%
from agentlab.evals.bfcl_prompting import prompting_results

LEADERBOARD = prompting_results()  # live where the evaluator and the questions are, else the shipped results
print(LEADERBOARD.said(LANG))
for size in SIZES:
    print(LEADERBOARD.verdict_said(size, LANG))
    if LEADERBOARD.table(size):
        display(table_view(pd.DataFrame(LEADERBOARD.table(size)).T, lang=LANG))

# %% [markdown]
# ## Exercise
#
# For the 0.5B model: which kind of failure did validate-and-reask remove the most of, compared with the single shot?
# Answer with the kind as the table above names it (its key in `bfcl.KINDS` is read too).

# %%
my_answer = None  # a kind, e.g. "wrong_value"
print(most_repaired_kind(my_answer, FIG["0.5b"], lang=LANG))

# %% [markdown]
# ## Build it: when to re-ask
#
# The reask mode re-asks after every refused reply, up to twice. Is each of those re-asks worth its turn? Predict
# first: when the model answers a re-ask by sending back, unchanged, the call it was just refused, how often does the
# next re-ask get a call the checks pass? Then write `my_reask(refused)`. It gets the replies the checks refused so
# far in one question, oldest first, each `{"calls": [{"name": ..., "arguments": ...}], "errors": [...]}` (the errors
# as the model read them, each with its `code`), and returns `True` to re-ask or `False` to stop and hand the failure
# on. The check replays every recorded re-ask of both models through your decision: it must keep every re-ask that
# got back a call the checks passed, and stop re-asking a model that did not read the error.

# %%
from agentlab.workbook.builds_repair import reask_policy_holds


def my_reask(refused):
    return None  # True: re-ask; False: stop


print(reask_policy_holds(my_reask, lang=LANG))

# %% [markdown]
# ## Recap
#
# - Each question was sent three ways: single shot, re-ask through the guarded loop, and under a grammar.
# - The template's wording decided part of the parallel and irrelevance figures.
# - Contract failures can be prevented; a real function with a wrong value is seen by neither a grammar nor a schema check.
# - Under a grammar, a reply that wanted to stop went on writing digits or whitespace until the token limit.
# - A re-ask helps only when the model reads the error: a model that sends back the call it was refused is not repaired by another try, so the loop can stop there.
#
# **Next:** [19 · Take the guards home](19_take_the_guards_home.ipynb). Read alongside: [the guards](../docs/guards.md); every path through the workbook: [docs/course.md](../docs/course.md).

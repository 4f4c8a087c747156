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
# # 17 · Probe your own tools
#
# You bring a tools file and a model; the question is "will a small model call these right, and what happens when it
# does not?" The probe (docs/metrics.md#the-probe) makes a valid call from each tool's schema, injects every fault
# category into the model's first call to that tool, and reads the guarded loop's trace to see which guard caught it.
# The same thing runs from the command line: `python -m agentlab probe --tools FILE --model fake`.

# %% [markdown]
# **After this notebook you can:**
#
# - probe a tools file with a model: a valid call per tool, then every fault category injected into it
# - read the probe's table: which guard caught each fault, how often the model repaired, and where a fault is n/a
# - compare recorded local models by what they do after an error: call again or answer in words
#
# **Before it:** [08 · Where each failure is caught](08_where_failures_are_caught.ipynb), [09 · Real models](09_real_models.ipynb).
#
# **Time:** about 40 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import json
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML

from agentlab import GuardConfig
from agentlab.evals.probe import cassette_settings, fake_source, probe, replay_source
from agentlab.evals.probe_report import after_an_error, plot_probe_categories, plot_probe_matrix, table_html
from agentlab.models.cassette import labels
from agentlab.i18n import t
from agentlab.resources import data_file, datasets_dir
from agentlab.tools import load_specs
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import cjk_fonts, table_view
from agentlab.workbook.widgets import ProbePanel

LANG = "en"  # "zh" for 中文
# found through the package, so the notebook and its twin one folder deeper read the same files
RETAIL = datasets_dir() / "tau-bench" / "retail" / "tools.json"  # tau-bench's store: 16 tools nobody here wrote
TOOLS = RETAIL if RETAIL.exists() else data_file("aftersales_tools.json")  # a fresh clone: the refund desk's four
registry = load_specs(json.loads(TOOLS.read_text(encoding="utf-8")), source=TOOLS.name, lang=LANG)
report = probe(registry, fake_source(), lang=LANG, source=TOOLS.name)
print(t("nb17.said.probed", LANG, name=TOOLS.name, n=len(report["tools"]), applicable=report["summary"]["applicable"],
        na=report["summary"]["na"], seconds=report["meta"]["seconds"]))

# %% [markdown]
# ## The table
#
# One row per tool, one column per fault category. Read a cell left to right:
#
# * **the guard** whose mark is in the trace: `validate` refused the call before the tool ran, `idempotency` answered a
#   repeat from its store instead of running it again, `retry` resent a failed model request, `tool` means the tool
#   refused the call itself (the loop let it through). This is read from the run, not from what the fault table
#   *meant* to happen, so a guard you switch off shows up as **not caught**.
# * **repaired x%**: of the trials where the model's call was refused, the share where its next call ran, after it read
#   the error (the self-correction rate, docs/metrics.md#self-correction-rate), and **turns**: how many model turns that took.
# * **n/a** means the category cannot apply to this tool (no enum to leave, no number to write in words): it is not a pass.
# * `clean` is the call with no fault at all: can the model make it? With the scripted model here it always can;
#   with a real one, it is the first column to read.

# %%
HTML(table_html(report, LANG))

# %%
with cjk_fonts():  # the labels may be Chinese: the fonts are needed when the figure is drawn
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    plot_probe_matrix(report, ax=axes[0], lang=LANG)
    plot_probe_categories(report, ax=axes[1], lang=LANG)
    plt.tight_layout()
    plt.show()

# %% [markdown]
# The scripted model repairs everything it can read, so every cell that applies is caught or repaired: this is the
# ceiling (the white cells are n/a, not passes; the grey ones are the harmless let-throughs below). Two categories
# stay un-caught even so, and the report says so rather than hiding it: `duplicate_call` ("same call again") and
# `parallel_call` ("two calls at once") on a *read* tool are "harmless": a read asked twice runs twice and changes
# nothing, so no guard needs to stop it. On a write they are caught by the idempotency guard. Which tools
# are reads and which are writes is guessed from the verb of the name (`cancel_`, `modify_`...), or declared by your
# `--impl` module's `WRITES`.

# %%
CATEGORY = t("nb17.said.category", LANG)
verdicts = pd.DataFrame([{CATEGORY: c, **{k: v for k, v in row["verdicts"].items()}}
                         for c, row in report["summary"]["by_category"].items()]).fillna(0).set_index(CATEGORY).astype(int)
# the verdicts' names as the report says them (in English the names themselves: report.json's words)
table_view(verdicts.rename(columns=lambda v: t("probe.v." + v, LANG) if LANG != "en" else v,
                           index={"clean": "clean (no fault)"}), lang=LANG)

# %% [markdown]
# ## A real model, replayed
#
# `python -m agentlab probe --tools ... --model local --size 0.5b` records every turn of the local model to
# `data/cassettes/probe-<tools>-<size>.jsonl`; `--model replay` plays it back with no model running and gives the
# same report. Here, if such a recording exists on this machine:

# %%
tape = data_file(f"cassettes/probe-{'retail' if TOOLS == RETAIL else 'aftersales'}-0.5b.jsonl")
if tape.exists():
    saved = cassette_settings(tape) or {}
    real = probe(registry, replay_source(tape), recorded=set(labels(tape)), trials=saved.get("trials") or 1,
                 categories=saved.get("categories"), only=saved.get("only"), seed=saved.get("seed") or 0,
                 lang=saved.get("lang") or LANG, source=TOOLS.name)
    display(HTML(table_html(real, LANG)))
    rate = real["summary"]["self_correction_rate"]
    print(t("nb17.said.rate", LANG, rate="-" if rate is None else f"{rate:.0%}"))
else:
    print(t("nb17.said.no_recording_at_tape", LANG, tape=tape))

# %% [markdown]
# ## Every recording, side by side
#
# The local 0.5B and 1.5B, probed on the refund desk's tools, the bookkeeping desk's and tau-bench's store (the
# recordings that exist here): how often the clean call was right, how many cells saw a wrong call, how often the
# model repaired its call after reading the error, and what it did on the turn after the error: call again, or answer
# the user in words.

# %%
TOOL_FILES = {"aftersales": data_file("aftersales_tools.json"), "expense": data_file("expense_tools.json"),
              "retail": RETAIL}
rows = []
for tape in sorted(data_file("cassettes").glob("probe-*-*.jsonl")):
    _, name, size = tape.stem.split("-", 2)
    saved, tools_file = cassette_settings(tape) or {}, TOOL_FILES.get(name)
    if tools_file is None or not tools_file.exists():
        continue
    reg = load_specs(json.loads(tools_file.read_text(encoding="utf-8")), source=tools_file.name, lang=LANG)
    rep = probe(reg, replay_source(tape), recorded=set(labels(tape)), trials=saved.get("trials") or 1,
                categories=saved.get("categories"), only=saved.get("only"), seed=saved.get("seed") or 0,
                lang=saved.get("lang") or LANG, source=tools_file.name)
    s = rep["summary"]
    clean = s["by_category"].get("clean", {}).get("verdicts", {})
    moves = after_an_error(tape)
    cols = [t(f"nb17.col.{c}", LANG) for c in ("tools", "model", "probed", "clean_right", "wrong_cells", "self_correction",
                                               "called_again", "answered_in_words")]
    rows.append(dict(zip(cols, (name, size, len(rep["tools"]), f"{clean.get('ok', 0)}/{sum(clean.values())}",
                                s["cells_with_a_wrong_call"], s["self_correction_rate"], moves["call"], moves["words"]),
                         strict=True)))
recordings = pd.DataFrame(rows)
table_view(recordings, percent=[recordings.columns[5]]) if rows else print(
    t("nb17.said.no_probe_recordings_here", LANG))

# %% [markdown]
# Read the last two columns before the rate: the 1.5B's low rate is not a model that misreads the error. After a
# refused call the 0.5B calls again; the 1.5B mostly answers the user instead, explaining the error ("The order ID is
# missing. Please provide the order ID.") and asking for what it thinks is missing. The loop's re-ask can only repair
# a model that calls again, so an answer in words ends the trial unrepaired. The same figures, from the recordings:

# %%
def moves_sentence(rows, lang):
    """One sentence per recording: how often the model called again after an error, and how often it answered."""
    out = []
    for r in rows:
        name, size, rate, again, words = (list(r.values())[i] for i in (0, 1, 5, 6, 7))
        rate = "-" if rate is None else f"{rate:.0%}"
        out.append(t("nb17.said.name_size_self_correction", lang, name=name, size=size, rate=rate, again=again, words=words))
    return "\n".join(out)


print(moves_sentence(rows, LANG) if rows else "")

# %% [markdown]
# ## Try your own tools
#
# Paste a tools list (OpenAI format, wrapped or bare), pick the model and the trials, press run. Broken JSON or a
# broken schema gets one sentence, in either language.

# %%
panel = ProbePanel(lang=LANG)
widgets.VBox([panel.widget])

# %% [markdown]
# ## Exercise
#
# Switch off the `idempotency` guard and probe `create_refund` (the refund desk) for `duplicate_call` only. Which
# verdict does that cell get? Answer with the verdict's name as it appears in `report.json` (e.g. `"caught"`).

# %%
from agentlab.workbook.builds_systems import duplicate_call_verdict

my_answer = None  # a verdict, e.g. "caught"
print(duplicate_call_verdict(my_answer, lang=LANG))

# %% [markdown]
# ## Build it: a contract that gives every fault something to catch
#
# A cell the probe marks n/a is a fault the contract cannot even express: with no enum there is no value outside
# it, with no range no number out of it. `draft` is a first contract for the refund desk's `create_refund`. Predict
# first: which categories come out n/a on it? Then write `my_parameters`. The check puts it in the desk's tools list
# and probes `create_refund` with the scripted model in every category: each cell must apply and end caught or
# repaired, and the call with no fault must still run.

# %%
from agentlab.workbook.builds_site import contract_catches_faults

draft = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"},
                                          "reason": {"type": "string"}}}
my_parameters = None  # your schema: start from a copy of draft
print(contract_catches_faults(my_parameters, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The guard in each cell is read from the trace, so a guard switched off shows up as not caught.
# - A repeated read is harmless; on a write the idempotency guard catches it.
# - The 1.5B model's low repair rate came from answering the user in words after an error, which no re-ask can repair.
# - The same probe runs from the command line: `python -m agentlab probe --tools FILE --model fake`.
#
# **Next:** [18 · Prevention or repair: grammars, re-asking, and a leaderboard on the local models](18_prevention_or_repair.ipynb). Read alongside: [the metrics](../docs/metrics.md#the-probe); every path through the workbook: [docs/course.md](../docs/course.md).

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
# # 09 · Real models
#
# Everything so far ran on fake models. Here the same loops talk to real ones, through any
# OpenAI-compatible endpoint: a hosted model (OpenAI, DeepSeek, Qwen/DashScope, Huawei Cloud MaaS...),
# a server of your own (Ollama, vLLM, llama.cpp), or the small Qwen2.5-Coder that runs on this laptop
# (`python run.py local`). Only one thing changes: the model object.
#
# This notebook runs offline by default, **replaying recorded runs** (cassettes) of the local
# 0.5B and 1.5B models. Choose another source with the environment variable `AGENTLAB_SOURCE`:
#
# | `AGENTLAB_SOURCE` | what answers |
# |---|---|
# | `replay` (default) | recorded replies from `data/cassettes/` |
# | `local` | the local model, started by this notebook (needs `requirements-local.txt`) |
# | `openai` | the endpoint in `AGENTLAB_BASE_URL`, `AGENTLAB_API_KEY`, `AGENTLAB_MODEL` |

# %% [markdown]
# **After this notebook you can:**
#
# - point the same loops at a real model through any OpenAI-compatible endpoint by changing only the model object
# - replay recorded runs of the local 0.5B and 1.5B models offline, and compare rates over the same cases
# - explain why a guarded run can still write what nobody asked for, and what catches it
#
# **Before it:** [08 · Where each failure is caught](08_where_failures_are_caught.ipynb).
#
# **Time:** about 35 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import json
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab.i18n import colon, joined, label, t
from agentlab.evals import load_cases, metrics_row, paired_cases, replay_cassette, run_case, run_suite
from agentlab.evals.outcome import reasons_in
from agentlab.models.cassette import CassetteModel
from agentlab.resources import data_file  # the shipped data, found from notebooks/ and from notebooks/zh/ alike
from agentlab.workbook.exercises import guard_effect
from agentlab.workbook.plots import compare_plot, table_view
from agentlab.workbook.widgets import REPLAYABLE_FAULTS, FaultInjector

LANG = "en"  # "zh" for 中文

SOURCE = os.environ.get("AGENTLAB_SOURCE", "replay")
CASSETTES = {p.stem.split("-")[-1]: p for p in sorted(data_file("cassettes").glob("aftersales-*.jsonl"))}
cases = {c.id: c for c in load_cases(data_file("aftersales_cases.jsonl"))}
print(f"{label('source', LANG)}{colon(LANG)}{SOURCE} | {label('recorded sizes', LANG)}{colon(LANG)}{list(CASSETTES)}")

# %% [markdown]
# ## 1. What the small models did, case by case
#
# Each recorded case is replayed through the loop it was recorded with, and graded on the final state of
# the orders, exactly like the fakes were. A rate means something only next to another rate **over the
# same cases**: each model is compared on the cases recorded under *both* loops (column `cases`), and the
# fake model runs on exactly those cases too. The figure draws the guarded rows: the rates, and how each run ended.

# %%
rows, results = [], {}
for size, path in CASSETTES.items():
    ids = paired_cases(path, cases)
    fake = t("nb09.said.fake_same", LANG, n=len(ids))
    for who, model_of in ((f"qwen2.5-coder-{size}", None), (fake, "fake")):
        for loop in ("naive", "guarded"):
            rs = (run_suite([cases[i] for i in ids], loop=loop) if model_of == "fake"
                  else replay_cassette(path, cases, loop, ids))
            results[(who, loop)] = rs
            metrics = {k: v for k, v in metrics_row(rs).items() if k != "statuses"}
            rows.append({"model": who, "loop": loop, "cases": len(rs), **metrics})
table = pd.DataFrame(rows).rename(columns={"task_success_rate": "success",
                                           "invalid_call_rate": "invalid-call rate", "avg_steps": "avg steps",
                                           "takeover_rate": "takeover"})
table_view(table, percent=("success", "invalid-call rate", "takeover", "finished_rate", "checked_success_rate",
                         "unfinished_rate"), lang=LANG)

# %%
_, fig = compare_plot({t("nb09.said.cases_of", LANG, n=len(rs), who=who): rs for (who, loop), rs in results.items() if loop == "guarded"}, lang=LANG)
plt.show()

# %% [markdown]
# **Fake against real, in one table.** Small models do things the fakes were not written to do: they call
# tools for small talk, repeat a call after it succeeded, copy example values out of the descriptions, and
# often do not fix their arguments after an error. Each of those is something a guard has to catch.
# Look at one guarded run where the real model struggled:

# %%
from IPython.display import HTML, display

from agentlab import compare_html

worst = None
for (who, loop), rs in results.items():
    for r in rs:
        if loop == "guarded" and who.startswith("qwen") and not r.passed and (worst is None or r.run.steps > worst[1].run.steps):
            worst = (who, r)
if worst:
    who, r = worst
    print(f"{who} · {r.case_id}{colon(LANG)}{cases[r.case_id].text('en')}\n{label('failed because', LANG)}{colon(LANG)}{joined(reasons_in(r.failures, LANG), LANG)}")
    naive = [x for x in results[(who, 'naive')] if x.case_id == r.case_id]
    if naive:
        display(HTML(compare_html(naive[0].run, r.run, lang=LANG)))

# %% [markdown]
# **Why a guarded run can still write what nobody asked for.** Look for a write in the guarded column above that the
# user never asked for (in the recording shipped here: a refund of order A1001 when the user only gave a bad phone
# number). The guards check a call's *form* and the desk's *rules*: valid JSON, the schema, an order that exists and
# can be refunded, an amount under the approval threshold, one refund per order. A call that copies the example values
# out of the tool's description ("Order number, like A1001") passes every one of them. Whether the user *asked* for the
# refund is not a property of the call, so no boundary check sees it; what catches it is the grading on final data
# (this table), and in production an approval gate on every write or a check that a write's key came from the user or
# a tool result.
# The cell below finds such writes in the run shown, and says where their key came from:

# %%
from agentlab.scenarios import aftersales

_, desk_tools = aftersales.SCENARIO.setup()


def unasked_writes(run, task):
    """Writes that ran with an order id the user never wrote and no earlier tool result contained."""
    seen, out = [task], []
    for e in run.tool_events:
        tool = desk_tools[e.tool_name] if e.tool_name in desk_tools else None
        order = (json.loads(e.args_raw or "{}") if (e.args_raw or "").startswith("{") else {}).get("order_id")
        if e.exec_ok and tool is not None and tool.side_effect and order and not any(order in x for x in seen):
            out.append((e.tool_name, order, order in json.dumps(desk_tools.specs(), ensure_ascii=False)))
        seen.append(e.model_visible or "")
    return out


if worst:
    for name, order, in_specs in unasked_writes(r.run, cases[r.case_id].task):
        print(t("nb09.said.unasked_write_example" if in_specs else "nb09.said.unasked_write", LANG, name=name, order=order))

# %% [markdown]
# ## 2. Inject faults into a real model's calls
#
# The injector wraps any model. Here it wraps the recorded 1.5B (or 0.5B) replies of a plain refund
# request. A recording cannot react to what it is told, so only the faults the loop handles without the
# model's help are offered (API errors, repeated and parallel calls, failing tools); an argument fault
# would need the model to read an error and write a new call, which a replay cannot do.

# %%
size = "1.5b" if "1.5b" in CASSETTES else next(iter(CASSETTES), None)
if size:
    recorded = "normal-01/guarded"
    injector = FaultInjector(lang=LANG, faults=list(REPLAYABLE_FAULTS),
                             model=lambda: CassetteModel(CASSETTES[size], recorded, then="(no more replies)"))
    injector.fault.value = "duplicate_call"
    injector.update()
    display(injector)

# %% [markdown]
# ## 3. Live
#
# These cells talk to a real model when one is configured, and say so plainly when none is.

# %%
live_model = None
server = None
if SOURCE == "openai":
    from agentlab.models.openai_model import OpenAIModel, endpoint_problem
    # configured from the environment; answers capped, as for the local model: in a workshop the model is shared
    live_model = lambda: OpenAIModel(max_tokens=256)  # noqa: E731
elif SOURCE == "local":
    from agentlab.models.local import LocalServer, what_is_missing
    from agentlab.models.openai_model import OpenAIModel
    missing = what_is_missing("0.5b")
    if missing:
        print(t("nb09.said.no_local_model_here", LANG), missing)
    else:
        server = LocalServer("0.5b").start()
        live_model = lambda: OpenAIModel("qwen2.5-coder-0.5b", base_url=server.base_url, max_tokens=256)  # noqa: E731
problem = endpoint_problem() if SOURCE == "openai" else None  # an address no client can use, or nobody there
if problem is not None:
    print(t(problem[0], LANG, **problem[1]))
elif live_model is None:
    print(t("nb09.said.no_live_model_agentlab", LANG, source=SOURCE))
else:
    live = [run_case(cases[cid], model=live_model()) for cid in ("normal-01", "normal-status-01", "adv-chit-chat")]
    display(table_view(pd.DataFrame([{"case": r.case_id, "status": r.run.status, "passed": r.passed,
                                      "why": "; ".join(reasons_in(r.failures, LANG))} for r in live]), lang=LANG))
if server is not None:
    server.stop()

# %% [markdown]
# ## Exercise
#
# In the table of section 1, over the same cases, does the guarded loop raise or lower the real models'
# success rate compared with the naive loop? Set `my_answer` to `"raise"` or `"lower"`.

# %%
my_answer = None  # "raise" or "lower"
print(guard_effect(my_answer, table[table.model.str.startswith("qwen")], lang=LANG))

# %% [markdown]
# ## Build: a guard the recordings show is needed
#
# The recordings show small models writing on orders nobody mentioned: a refund of A1001 when the user only gave a
# bad phone number, hand-overs about A1002 in conversations about other orders. Every such call passes the schema
# and the rules. Write `my_write_check`, a check to run before every write: it gets the tool's name, its arguments
# and `seen`, the texts the user wrote and the read tools returned so far, and returns `True` to let the write run
# or `False` to stop it. The check asks it about every write the recorded models made in their guarded runs, and
# two more the recordings lack (a refund that names a second order nobody mentioned, `two_orders`, and an order
# found by a read tool from the user's phone number, `found_by_phone`), and says which unasked writes it still lets
# through and whether it stops writes the user did ask for (`asked_writes`).

# %%
from agentlab.workbook.builds_loops import build_write_check


def my_write_check(tool_name, args, seen):
    # your code here: True to let the write run, False to stop it
    ...


print(build_write_check(my_write_check, lang=LANG))

# %% [markdown]
# ## Recap
#
# - `AGENTLAB_SOURCE` chose between the recordings, the local model and a hosted endpoint.
# - Small models called tools for small talk, repeated successful calls and copied example values out of descriptions.
# - A call that copies `A1001` from a description passes every boundary check; grading on final data catches it.
# - The injector wrapped a recorded model with the faults a loop handles without the model's help.
#
# **Next:** [10 · Prove it got better](10_evaluation.ipynb). Read alongside: [the guards](../docs/guards.md); every path through the workbook: [docs/course.md](../docs/course.md).

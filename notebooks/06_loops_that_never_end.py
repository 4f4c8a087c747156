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
# # 06 · Loops that never end
#
# A runaway agent looks busy: every step is "reasonable", no step is an answer. Five brakes need no help from the
# model (docs/guards.md); this notebook runs three of them: a **step budget**, a **repeated-call breaker** that stops
# the third identical call, and a **timeout** per tool call. The other two cap what a single model message may ask
# (`max_calls_per_turn`) and how long a whole run may take (`run_deadline`).

# %% [markdown]
# **After this notebook you can:**
#
# - stop a runaway agent with three brakes that need no help from the model: a step budget, a repeated-call breaker and a timeout
# - say what a timeout can and cannot stop (a read, a write, C code holding the GIL)
# - pick a step budget from the trade-off curve of a wandering model
#
# **Before it:** [05 · Side effects: refund once (idempotency)](05_side_effects.ipynb).
#
# **Time:** about 25 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
LANG = "en"  # "zh" for 中文

import pandas as pd

from agentlab import run_guarded, run_naive
from agentlab.i18n import aside, joined, label
from agentlab.models import ScriptedModel, call
from agentlab.scenarios import aftersales
from agentlab.trace import note_text
from agentlab.workbook.demo import budget_sweep, compare_loops
from agentlab.workbook.exercises import breaker_threshold
from agentlab.workbook.plots import plot_statuses, table_view
from agentlab.workbook.widgets import BudgetSlider


def ping_pong():
    """Alternates between two tools with ever new arguments: never repeats, never answers."""
    script = [call("get_order", {"order_id": f"A{1001 + i}"}) if i % 2 else
              call("search_orders", {"phone": f"1380013{i:04d}"}) for i in range(40)]
    return ScriptedModel(script, name="ping-pong")


def repeater():
    """Asks for the same order again and again."""
    return ScriptedModel([call("get_order", {"order_id": "A1001"})] * 40, name="repeater")


rows = []
for make in (ping_pong, repeater):
    desk, reg = aftersales.SCENARIO.setup()
    naive = run_naive(make(), reg, "where is my order?")
    guarded = run_guarded(make(), reg, "where is my order?")
    rows.append({"model": make().name, "naive": label(naive.status, LANG) + aside(f"{naive.steps} {label('steps', LANG)}", LANG),
                 "guarded": label(guarded.status, LANG) + aside(f"{guarded.steps} {label('steps', LANG)}", LANG),
                 "reason": note_text(guarded.reason, LANG)})
hang = compare_loops("hanging_tool", hang_seconds=0.5, lang=LANG)
rows.append({"model": "hanging tool",
             "naive": joined([label(hang.naive.status, LANG), f"{label('waited', LANG)} "
                             f"{max(e.latency_ms for e in hang.naive.tool_events):.0f} ms"], LANG, "comma"),
             "guarded": joined([label(hang.guarded.status, LANG), label("timed out and resent", LANG)], LANG, "comma"),
             "reason": "timeout"})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# **What a timeout can and cannot stop.** A read-only tool is interrupted in place (a SIGALRM deadline in the
# calling thread): stopping a read half-way leaves nothing half-done. A write is never interrupted; it runs
# in a worker thread and the loop stops *waiting* for it, so a timed-out write may still take effect: that
# is `OUTCOME_UNKNOWN`, never "retryable" (notebook 05). Neither kind can stop C code that holds the GIL: a
# catastrophic regular expression or a long computation in a C extension runs to its end, and the deadline
# fires only when it returns (measured: a 0.5 s timeout around such a regex returned after 9.5 s). Guard
# those with limits on the input (cut it first) or run them in a separate process.

# %% [markdown]
# **Name it.** The breaker's refusal is `LOOP_DETECTED` and the budget's is `BUDGET_EXHAUSTED`: both in
# the `rule_blocked` stage. A guard that fires as designed is not an instability, and the metrics count it apart.
#
# **Measure it.** A budget is a trade-off, and runs that all behave the same cannot show one: ping-pong and
# the repeater are stopped by the breaker or the budget whatever its size. So here the model is a
# *wandering* one (`DistractedModel`): it does the refund task, but before each step it may, with a chance
# fixed in advance, look up something useless. Forty runs, each replayable, the same forty for every budget: too small a
# budget cuts off runs that would have finished, a larger one lets them finish (and a runaway run costs
# more turns before it is stopped). Move the slider to see one budget in detail.

# %%
import matplotlib.pyplot as plt

plot_statuses(budget_sweep([2, 3, 4, 6, 8]), title="final statuses of 40 wandering runs, by step budget", lang=LANG)
plt.show()

# %%
BudgetSlider(value=4, lang=LANG)

# %% [markdown]
# ## Exercise
#
# With the default config, on which identical call does the breaker fire (1st, 2nd, 3rd...)? Give a number.

# %%
my_answer = None  # a number: 1, 2, 3...
print(breaker_threshold(my_answer, lang=LANG))

# %% [markdown]
# ## Build: limits that stop runaways, not work
#
# Above, the default budget of 6 cut off some of the forty wandering runs that would have finished. Choose
# `my_config`, a `GuardConfig`, with the `step_budget` and `repeat_limit` you would ship: the check runs the guarded
# loop with it on this notebook's ping-pong model (`ping_pong`: stopped within 12 turns?), its repeater
# (`repeat_call`: stopped within 4?) and the forty wandering runs of the budget sweep (`healthy_runs`: do they all
# finish?), and says, by these names, what still breaks.

# %%
from agentlab import GuardConfig
from agentlab.workbook.builds_loops import build_loop_limits

my_config = None  # your code here: GuardConfig(...)

print(build_loop_limits(my_config, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The breaker refused the third identical call with `LOOP_DETECTED`; the budget ended runs with `BUDGET_EXHAUSTED`.
# - Both are `rule_blocked`: guards firing as designed, counted apart from instability.
# - A timed-out write may still take effect, so it is `OUTCOME_UNKNOWN`, never retryable.
# - Forty replayable runs of a wandering model showed what too small and too large a budget cost.
#
# **Next:** [12 · Messages and context: the date, clearing, trimming in pairs](12_messages_and_context.ipynb) (on the half-day path: [19 · Take the guards home](19_take_the_guards_home.ipynb)). Read alongside: [the guards](../docs/guards.md#step_budget); every path through the workbook: [docs/course.md](../docs/course.md).

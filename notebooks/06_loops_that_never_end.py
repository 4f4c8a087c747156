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
# # 06 · Loops that never end (循环刹车)
#
# A runaway agent looks busy: every step is "reasonable", no step is an answer. Three brakes need no help
# from the model (docs/guards.md: step_budget, repeat_limit, timeout): a **step budget** (步数预算), a **repeated-call breaker** (重复调用熔断) that
# stops the third identical call, and a **timeout** per tool call (工具级超时).

# %%
import ipywidgets as widgets
import pandas as pd

from agentlab.scenarios import aftersales
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import breaker_threshold
from agentlab.guards import GuardConfig
from agentlab.loop import run_guarded
from agentlab.naive import run_naive
from agentlab.evals.metrics import status_counts
from agentlab.models import ScriptedModel, call
from agentlab.workbook.plots import plot_statuses
from agentlab.workbook.widgets import figure


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
    rows.append({"model": make.__name__, "naive": f"{naive.status} after {naive.steps}",
                 "guarded": f"{guarded.status} after {guarded.steps}", "reason": guarded.reason})
hang = compare_loops("hanging_tool", hang_seconds=0.5)
rows.append({"model": "hanging tool", "naive": f"{hang.naive.status}, waited {max(e.latency_ms for e in hang.naive.tool_events):.0f} ms",
             "guarded": f"{hang.guarded.status}, timed out and resent", "reason": "timeout"})
pd.DataFrame(rows)

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
# **Measure it.** Final statuses of 20 ping-pong and 20 repeater runs for each step budget. Move the slider
# to see one budget in detail.

# %%
import matplotlib.pyplot as plt


def statuses_for(budget):
    runs = []
    for make in [ping_pong] * 20 + [repeater] * 20:
        desk, reg = aftersales.SCENARIO.setup()
        runs.append(run_guarded(make(), reg, "x", config=GuardConfig(step_budget=budget)))
    return status_counts(runs)


by_budget = {f"budget {b}": statuses_for(b) for b in (2, 4, 6, 8)}
plot_statuses(by_budget, title="final statuses of 40 runaway runs")
plt.show()

# %%
out = widgets.Output()
slider = widgets.IntSlider(value=6, min=1, max=12, description="Step budget")


def show(change=None):
    out.outputs = ()
    out.append_display_data(figure(lambda ax: plot_statuses({f"budget {slider.value}": statuses_for(slider.value)}, ax=ax),
                                   size=(5, 2.6)))


slider.observe(show, names="value")
show()
widgets.VBox([slider, out])

# %% [markdown]
# ## Exercise
#
# With the default config, on which identical call does the breaker fire (1st, 2nd, 3rd...)? Give a number.

# %%
my_answer = 3
print(breaker_threshold(my_answer)[1])

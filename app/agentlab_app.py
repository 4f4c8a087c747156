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
# # agentlab

# %%
import ipywidgets as W

from agentlab.workbook.log_widget import LogReview
from agentlab.workbook.pm_app import PMApp
from agentlab.workbook.widgets import browser_lang

app = PMApp(lang=browser_lang())  # the browser's language (Accept-Language); the toggle switches it
app

# %%
# your own log file, reviewed below; one language toggle for the whole page (the app's, above)
logs = LogReview(lang=app.lang.value)
logs.lang.layout.display = "none"
W.dlink((app.lang, "value"), (logs.lang, "value"))
logs

# %%
# the weekly review of failed conversations: notes, the team's own categories, counts; the same language toggle
from agentlab.workbook.weekly_widget import WeeklyReview

weekly = WeeklyReview(lang=app.lang.value)
weekly.lang.layout.display = "none"
W.dlink((app.lang, "value"), (weekly.lang, "value"))
weekly

# %%
# your own tools file: which guard catches what on it (the probe's report); the same language toggle
from agentlab.workbook.widgets import ProbePanel

probe = ProbePanel(lang=app.lang.value)
probe.lang.layout.display = "none"
W.dlink((app.lang, "value"), (probe.lang, "value"))
probe

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
# # agentlab

# %%
from agentlab.workbook.widgets import LogReview, PMApp

PMApp(lang="en")

# %%
LogReview(lang="en")

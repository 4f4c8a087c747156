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
# # agentlab · bad cases without code
#
# Pick a scenario, a model and a fault, press **Run both loops**, and read what happened in plain words,
# with the two traces side by side. 选择场景、模型和故障，点击运行，即可看到两个循环的对比和通俗解释。

# %%
from agentlab.workbook.widgets import PMApp

PMApp(lang="en")

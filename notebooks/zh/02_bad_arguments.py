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
# # 02 · 模型写错的参数
#
# `arguments` 是模型写出来的一个**字符串**，不是字典（见 [docs/zh/guards.md](../../docs/zh/guards.md#validate)）。
# 它可能是残缺的 JSON，可能点名一个并不存在的工具，可能漏掉必填字段，可能把 `order_id` 写成 `orderId`，
# 可能把金额写成 `"45元"`，也可能编出一个枚举之外的值。朴素循环照单全收；防护循环逐层检查
# （解析 → schema → 业务规则），并返回一个模型能照着改的错误。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 列出 `arguments` 字符串出错的几种方式：JSON 残缺、不存在的工具、缺字段、`orderId`、`"45元"`、枚举之外的值
# - 跟着一个调用走过边界检查（解析、schema、业务规则），读懂它报告的错误码和问题
# - 用注入器在某一步注入一个故障，对比两种循环的轨迹
#
# **先修：** [01 · Schema 就是契约](01_schema_contract.ipynb)。
#
# **用时：** 约 25 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
LANG = "zh"  # 改成 "en" 就是英文版

import json

import pandas as pd
from IPython.display import HTML, display

from agentlab import Registry
from agentlab.i18n import colon
from agentlab.resources import data_file
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import amount_with_unit_reason
from agentlab.workbook.plots import plot_bars
from agentlab.workbook.plots import table_view
from agentlab.workbook.widgets import FaultInjector, GuardPanel

reg = Registry.from_json(data_file("aftersales_tools.json"))  # data_file：在 notebooks/zh/ 里读到的也是同一个文件
calls = {
    "bad JSON": ("create_refund", '{"order_id": "A1001", "amount": 45'),
    "unknown tool": ("add_refund", '{"order_id": "A1001"}'),
    "missing field": ("create_refund", '{"order_id": "A1001", "reason": "user_cancel"}'),
    "camelCase field": ("get_order", '{"orderId": "A1001"}'),
    "wrong type": ("create_refund", '{"order_id": "A1001", "amount": "45元", "reason": "user_cancel"}'),
    "out of enum": ("create_refund", '{"order_id": "A1001", "amount": 45, "reason": "不想要了"}'),
}

# %% [markdown]
# **给它定性。** 每个调用都过一遍边界检查：错误码、两个分类维度（类别和阶段），以及具体问题。

# %%
rows = []
for label, (name, raw) in calls.items():
    err = json.loads(reg.check(name, raw, lang=LANG).render())["error"]
    rows.append({"fault": label, "code": err["code"], "category": err["category"], "stage": err["stage"],
                 # 名称保持原样
                 "problems": [f"{p['field']}{colon(LANG)}{p['reason']}" for p in err.get("problems", [])],
                 "hint": err["hint"]})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# 对付 `"45元"` 的另一条路是值清洗：默认关闭；打开之后，每一处改动都会在结果旁边如实报告，谁也不会被蒙在鼓里。

# %%
print(reg.check("create_refund", calls["wrong type"][1], clean=True, lang=LANG).render())

# %% [markdown]
# **先看它出错，再修好它。** 同一个故障注入在退款那一步，分别交给两种循环。

# %%
faults = ["truncated_json", "unknown_tool", "drop_required", "camel_case", "wrong_type", "out_of_enum"]
results = {f: compare_loops(f, lang=LANG) for f in faults}
table_view(pd.DataFrame([{"fault": f, **{f"{r['loop']} {k}": r[k] for r in c.table() for k in ("status", "invalid calls", "refunds")}}
                         for f, c in results.items()]), lang=LANG)

# %% [markdown]
# **量一量。** 只看轮次会美化朴素循环：它在 `truncated_json` 和 `unknown_tool` 上两轮就“结束”了，
# 那是因为它在那里崩溃了。所以每根柱子的高度是一次运行的轮次，*颜色*是它的结局（按最终数据评定）：
# 一根短短的红柱子是一次很快的失败，而不是一次很快的成功。

# %%
import matplotlib.pyplot as plt

from agentlab.workbook.plots import plot_turns_by_outcome

plot_turns_by_outcome({f: {"naive": (c.naive.steps, c.naive_verdict.outcome),
                           "guarded": (c.guarded.steps, c.guarded_verdict.outcome)} for f, c in results.items()},
                      title="model turns per run, coloured by outcome (naive stops at its cap of 12)", lang=LANG)
plt.show()

# %% [markdown]
# ## 故障注入器
#
# 选一个故障和注入它的步骤，两种循环各跑一遍，把轨迹并排对照着读。红框标出两者第一次出现差异的那一步；
# 每个工具调用都把原始参数和模型被告知的内容并排显示。

# %%
injector = FaultInjector(faults=faults, lang=LANG)
injector.update()
injector

# %% [markdown]
# 关掉一些防护，再运行一次注入器：刚才到底是哪个防护在起作用？
# （这里值得试的是“校验”和“结构化错误”两个开关，即 `validate` 和 `readable_errors`。）

# %%
def use(config):
    injector.config = config
    injector.update()


GuardPanel(on_change=use, lang=LANG)

# %% [markdown]
# ## 练习
#
# 对于 `"amount": "45元"`，边界检查给出的问题 `reason` 是什么？

# %%
my_answer = None  # 一个问题原因，比如 "missing"
print(amount_with_unit_reason(my_answer, reg, lang=LANG))

# %% [markdown]
# ## 动手改：收紧一份宽松的契约
#
# 一个赶工的业务台发布了下面打印出的 `create_refund` 契约，本笔记本的每个错误调用都能通过它。
# 写好 `my_tighten`：它拿到这份契约（一个字典），加上约束后返回，让边界检查在不做值清洗的情况下拒绝
# 漏掉的字段（`drop_required`）、金额 `"45元"`（`wrong_type`）、编造的原因（`out_of_enum`）和 `orderId`（`camel_case`），
# 同时正确的退款照样通过。检查会用你的契约把本笔记本的错误调用送过边界，告诉你哪些还能溜过去。

# %%
from agentlab.workbook.builds_guards import build_tighter_contract, loose_refund_schema

print(json.dumps(loose_refund_schema(LANG), indent=2, ensure_ascii=False))


def my_tighten(schema):
    # 在这里写你的代码：给 schema（一个字典）加上约束，再返回它
    ...


print(build_tighter_contract(my_tighten, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - `arguments` 是模型写出的字符串；防护循环在执行任何东西之前先解析并检查它。
# - 每个错误调用都得到一个错误码、两种分类，以及模型能据此行动的问题描述。
# - 值清洗可以把 `"45元"` 变成 45：默认关闭，一旦启用每处改动都会报告。
# - 只看轮数会美化朴素循环：它那些短的运行其实是快速失败，结果颜色一看便知。
#
# **下一步：** [03 · 模型读得懂的错误](03_readable_errors.ipynb)。配合阅读：[防护手册](../../docs/zh/guards.md#validate)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

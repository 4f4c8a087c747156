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
# # 01 · Schema 就是契约
#
# 你的数据库和状态机，模型一样也看不见。它对一个工具的全部了解，就是名字、描述和一份 JSON Schema，
# 所以这份 schema 就是模型和你的系统之间的契约。把它当成写给新同事的说明：**一个工具只做一件事**；
# **能用枚举就别用自由文本**；描述里要写清**什么时候该用**这个工具；整个工具库**只用一种命名风格**。
#
# **先看它出错。** 退款的 `reason` 如果是自由文本，模型就可以随手编一个值；朴素循环把它原样传给后端，后端照单全收、存了下来。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 把工具的 schema 写成契约：一个工具只做一件事，用枚举代替自由文本，描述写清何时使用
# - 用 linter 检查一份工具注册表，按规则读懂它的发现
# - 读懂 `not_in_enum` 问题，以及它交给模型的可选值
#
# **先修：** [00 · 从这里开始：同一个模型，两种循环](00_start_here.ipynb)。
#
# **用时：** 约 35 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
LANG = "zh"  # 改成 "en" 就是英文版

import json

import pandas as pd
from IPython.display import HTML, display

from agentlab import Registry, lint
from agentlab.i18n import colon, label
from agentlab.resources import data_file, data_file_in
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import schema_contract
from agentlab.runs import compare_html
from agentlab.workbook.plots import plot_bars, table_view
from agentlab.workbook.widgets import SchemaPlayground

c = compare_loops("out_of_enum", lang=LANG)
print(f"{label('naive refund written', LANG)}{colon(LANG)}{c.naive_state['refunds']}")
print(f"{label('guarded refund written', LANG)}{colon(LANG)}{c.guarded_state['refunds']}")

# %% [markdown]
# **给它定性。** 契约里有了枚举之后，编出来的值就成了 `INVALID_ARGS` 错误里的一个 `not_in_enum` 问题：
# 类别是 `validation`（模型必须改掉这次调用），阶段是 `structure`。
# 错误里列出了允许的取值，模型会从中挑一个，而不是再编出第四个。

# %%
display(HTML(compare_html(c.naive, c.guarded, lang=LANG)))

# %% [markdown]
# **动手修。** 检查器（linter）像模型一样去读一个工具库，把会让模型靠猜的地方标出来。
# 下面是一份匆忙写成的 schema，旁边是 `data/` 里随项目提供的售后契约。

# %%
hurried = Registry.from_json(data_file_in("bad_tools.json", LANG), close=False)  # 它的描述使用 LANG 的语言
careful = Registry.from_json(data_file("aftersales_tools.json"))
findings = pd.DataFrame([f.to_dict() for f in lint(hurried, lang=LANG)])
# 每条消息都完整显示：它就是这一课要看的内容
table_view(findings[["rule", "severity", "location", "message"]], lang=LANG)

# %% [markdown]
# **量一量。** 按规则统计的问题数，改之前和改之后。

# %%
import matplotlib.pyplot as plt

def per_rule(reg):
    counts = {}
    for f in lint(reg):
        if f.severity != "info":
            counts[f.rule] = counts.get(f.rule, 0) + 1
    return counts

before, after = per_rule(hurried), per_rule(careful)
rules = sorted(set(before) | set(after))
plot_bars({r: {"hurried": before.get(r, 0), "contract": after.get(r, 0)} for r in rules},
          title="linter warnings and errors per rule", ylabel="findings", lang=LANG)
plt.show()

# %% [markdown]
# ## 动手试一试
#
# 在下面编辑 schema。检查结果，以及校验器对一组错误调用的回答，会随着你的输入实时更新
# （试试把 `orderId` 改名为 `order_id`，或者给 `reason` 加上 `enum`）。

# %%
SchemaPlayground(description=label("Refund an order", LANG), lang=LANG)

# %% [markdown]
# ## 练习
#
# 写一个 `create_refund` 的 schema，让检查器既不报警告也不报错误，并且退款原因是一个封闭集合。
# 检查还会真的用它校验调用：一笔正确的退款（金额带角，比如 45.5）必须通过，三个字段缺了任何一个的退款都不能通过。
# 修改 `my_schema` 和 `my_description`，然后运行检查。

# %%
my_description = None  # 一句话：这个工具做什么、什么时候用
my_schema = None       # 一个 JSON Schema 字典，和上面练习场里的一样
print(schema_contract(my_schema, my_description, lang=LANG))

# %% [markdown]
# ## 动手改：拒绝故障调用的契约
#
# 本章的故障会把一个正确的退款调用改坏：字段名变成驼峰（`camel_case`）、漏掉字段（`drop_required`）、
# 金额写成文本（`wrong_type`）、编造退款原因（`out_of_enum`）、退款 200000（`out_of_range`）。
# 写出 `create_refund` 参数（`order_id`、`amount`、`reason`、可选的 `remark`）的 JSON Schema，
# 让校验器单靠它、不做任何清洗，就拒绝这些调用，同时放行正确的退款。检查会用本笔记本的正确调用和错误调用
# 逐一校验你的 schema，告诉你哪些故障已经被拒绝、哪些还被放过。

# %%
from agentlab.workbook.builds_guards import build_refund_contract

my_refund_schema = None  # 在这里写你的代码：一个 JSON Schema 字典，和上面练习场里的一样

print(build_refund_contract(my_refund_schema, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 自由文本的 `reason` 让模型编出一个值，朴素循环照单全收存了下来。
# - 改成枚举后，同一个调用变成 `INVALID_ARGS` 错误（类别 `validation`，阶段 `structure`），并列出允许的取值。
# - linter 逐条指出一份仓促写成的 schema 的问题，旁边是随仓库提供的售后契约作对照。
# - 在练习场里，每改一个字，schema 和一组错误调用都会重新检查。
#
# **下一步：** [02 · 模型写错的参数](02_bad_arguments.ipynb)。配合阅读：[防护手册](../../docs/zh/guards.md#validate)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

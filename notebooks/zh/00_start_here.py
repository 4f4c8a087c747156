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
# # 00 · 从这里开始：同一个模型，两种循环
#
# 智能体（agent）本质上就是一个循环：问模型，执行它选中的工具，把结果给它看，再来一轮。
# 接入真实系统后出的问题，大多出在这个循环上，而不是模型本身。
#
# 这个笔记本把同一个售后任务（“给订单 A1001 退款”）交给两种循环来跑，面对的是**同一个会犯错的模型**：
#
# * **朴素循环**的写法和很多线上代码一样：只执行第一个工具调用，不加防护就直接 `json.loads` 参数，
#   把原始异常文本直接丢给模型，除了一个硬性的步数上限之外什么保护都没有；
# * **防护循环**按契约校验每一次调用，返回模型读得懂的错误，只重试可以安全重试的操作，
#   给每一笔退款加上幂等键、保证只执行一次，并且给原地打转的循环踩刹车（熔断器和步数预算）。
#
# 全部离线运行，用的是写好剧本的（假）模型，几秒钟就能跑完。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 说清朴素循环和防护循环遇到错误调用、丢失的回复、重复调用时各自怎么做
# - 并排读两次运行的轨迹，找出它们分开的第一步
# - 按订单的最终状态（“正确”“声称完成，但数据是错的”）给一次运行评分，而不是听模型怎么说
#
# **先修：** 无，从这里开始。
#
# **用时：** 约 30 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
LANG = "zh"  # 改成 "en" 就是英文版

from IPython.display import HTML, display

from agentlab import compare_html
from agentlab.models.faults import FAULTS
from agentlab.workbook.demo import caught_by_guards, compare_loops
from agentlab.i18n import colon, joined, label
from agentlab.workbook.exercises import double_refund_fault
from agentlab.workbook.plots import table_view

# %% [markdown]
# ## 1. 开场演示
#
# 模型先把契约里的 `order_id` 写成了 `orderId`。防护循环返回 `INVALID_ARGS`，同时指出缺了 `order_id`、
# 多了一个不认识的 `orderId`（并附上“你是不是想写”的提示），模型据此改正，第 3 步给出答复
# （这个演示的出处见 [docs/zh/sources.md](../../docs/zh/sources.md#article-000-the-refund-desk)）。

# %%
demo = compare_loops(None, lang=LANG)
display(HTML(compare_html(demo.naive, demo.guarded, lang=LANG)))

# %% [markdown]
# 朴素循环这次是运气好：剧本是写死的，所以模型“改正”了自己，尽管它看到的只有
# `TypeError: ... unexpected keyword argument 'orderId'`。
# 真正需要*读懂*错误的模型就没这么走运了。下一次运行换成一个基于规则的假模型：它只根据结构化错误告诉它的内容来修正调用，
# 就像一个好模型会做的那样。

# %% [markdown]
# ## 2. 模型改不掉的误解：退款这一步写成 `orderId`

# %%
camel = compare_loops("camel_case", lang=LANG)
display(HTML(compare_html(camel.naive, camel.guarded, lang=LANG)))

# %% [markdown]
# 红框标出的是两次运行第一次分道扬镳的那一步。朴素循环给模型看的是一个 Python `TypeError`，
# 模型无从下手，只能重复同样的调用，把步数上限全部耗光。
# 防护循环指出了是哪个字段、该怎么改，退款只发生了一次。
#
# ## 3. 每种故障，两种循环
#
# 每一行注入一种故障：模型故障注入在退款那一步，工具故障注入到它针对的工具里。然后检查订单的最终状态：
# 看实际写了几笔退款，而不是模型声称做了什么。“由哪些防护拦下”一列列出的是防护运行的轨迹里真正出手的防护
# （和笔记本 08 用的是同一个函数），而不是每种故障原本设计要由谁来拦。

# %%
import pandas as pd

rows = []
for name, fault in FAULTS.items():
    c = compare_loops(name)  # 表格里的状态和结局由 table_view 按 LANG 的语言显示
    naive, guarded = c.table()
    rows.append({"fault": name, "what happens": fault.describe(LANG),
                 "naive": naive["status"], "naive refunds": naive["refunds"], "naive outcome": naive["outcome"],
                 "guarded": guarded["status"], "guarded refunds": guarded["refunds"],
                 "guarded outcome": guarded["outcome"], "caught by": caught_by_guards(c, LANG)})
table = pd.DataFrame(rows)
table_view(table, lang=LANG)

# %% [markdown]
# 先看 `refunds`（退款笔数）这几列：任务要求的是恰好一笔 199 元的退款。两笔退款（`lost_reply`、`duplicate_call`）
# 意味着钱退了两次；在 `wrong_type` 下，朴素循环把文本 `"199元"` 当成金额存了进去。`outcome`（结局）几列按这个最终状态
# 给每次运行打分，用的是整本练习册统一的定义（`agentlab.evals.outcome`，见 [docs/zh/metrics.md](../../docs/zh/metrics.md)）：
# 只有数据恰好是任务所需要的，才算 `correct`（正确）。*嘴上说*完成了的运行不会因此得分：
# “声称完成，但数据是错的”是最糟糕的结局，因为没有人会再回头检查。防护循环把对话转给人工的那几次
# （`api_401`、`leaky_tool`）没有写错任何数据，但也没有退款，所以不算正确。
#
# 最后两行是从不回答的模型。在 `repeat_call` 下，朴素循环一直发同一笔退款，直到 12 步的硬上限，写下了十一笔退款；
# 防护循环只写一笔，第二次直接从幂等存储返回第一次的结果，第三次被重复调用熔断拦下（`LOOP_DETECTED`）并转人工。
# 在 `ping_pong` 下，每次查询问的都是一个新订单，从不重复，熔断无从触发：只有步数预算能结束这次运行，用了 6 轮而不是
# 12 轮。失控的循环只会被拦下并转人工，不会被算作“完成”。

# %%
import matplotlib.pyplot as plt

from agentlab.workbook.plots import plot_outcomes

plot_outcomes({"naive": table["naive outcome"].value_counts().to_dict(),
               "guarded": table["guarded outcome"].value_counts().to_dict()},
              title=f"{len(table)} " + label("faults injected into the same task: outcome graded on the final data", LANG),
              lang=LANG)
plt.show()
correct = {loop: int(table[f"{loop} outcome"].eq("correct").sum()) for loop in ("naive", "guarded")}
print(label("correct final state", LANG) + colon(LANG) + joined([f"{label(loop, LANG)} {correct[loop]}/{len(table)}"
                                                             for loop in ("naive", "guarded")], LANG, "comma"))

# %% [markdown]
# ## 练习
#
# 哪种故障会让**朴素**循环把同一个订单退款两次，尽管模型只请求了一次？
# （提示：模型只请求了一次，所以去看工具侧的故障，再看朴素循环的退款笔数那一列。）
# 把故障名填进 `answer`，然后运行这个单元格。

# %%
answer = None  # 在这里作答：一个故障名，比如 "camel_case"

print(double_refund_fault(answer, lang=LANG))

# %% [markdown]
# ## 动手改：只退一次款的退款工具
#
# 上面的表格里，朴素循环把 A1001 退了两次（`lost_reply`、`duplicate_call`），甚至十一次（`repeat_call`）。
# 循环不动，改工具：写好 `my_create_refund`，让退款只发生一次，不管循环或模型把它重发多少遍。
# 检查会让你的工具在这几个故障下各跑一遍朴素循环，告诉你哪些已经处理好了、哪些还会重复退款。
# `desk.refunds` 是已经做过的退款；`desk.create_refund(order_id, amount, reason, remark)` 新建一笔退款。

# %%
from agentlab.workbook.builds_guards import build_refund_once


def my_create_refund(desk, order_id, amount, reason, remark=""):
    # 在这里写你的代码
    ...


print(build_refund_once(my_create_refund, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 同一个脚本化模型走了两种循环，变的只有循环本身。
# - 结构化的 `INVALID_ARGS` 错误让会读错误的模型改好了 `orderId`；原始的 `TypeError` 只让它一再重复，直到步数上限。
# - 所有故障放在一张表里：朴素循环在 `lost_reply` 和 `duplicate_call` 下退了两次款，还把 `"199元"` 当金额存了下来。
# - 说“办好了”而数据是错的，是最糟的结果，因为没人会再去核对。
#
# **下一步：** [01 · Schema 就是契约](01_schema_contract.ipynb)。配合阅读：[指标](../../docs/zh/metrics.md)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

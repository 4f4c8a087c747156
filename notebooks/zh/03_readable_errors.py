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
# # 03 · 模型读得懂的错误
#
# 后端只回一句 `500 internal error` 时，模型唯一能做的就是再试一次，而且往往用的还是同样的参数。
# 结构化错误则会讲清三件事：**哪个字段**、**错在哪里**、**怎样才对**。下面让同样的故障两次遇上防护循环：
# 一次返回结构化错误，一次只返回光秃秃的 500（关掉 `readable_errors` 防护）。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 写出说清“哪个字段、错在哪、怎样才对”的错误
# - 以错误调用最终有没有被改好为准，比较结构化错误和光秃秃的 500
# - 选定自我纠错预算，并说清它在一个永远改不好的模型身上要付出什么
#
# **先修：** [02 · 模型写错的参数](02_bad_arguments.ipynb)。
#
# **用时：** 约 35 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
LANG = "zh"  # 改成 "en" 就是英文版

import json

import pandas as pd

from agentlab import GuardConfig
from agentlab.evals.metrics import rounds_to_recover
from agentlab.i18n import aside, both, colon, joined, label, t
from agentlab.workbook.demo import compare_loops
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import plot_bars, table_view

faults = ["camel_case", "drop_required", "wrong_type", "out_of_enum", "unknown_tool", "truncated_json"]
bare = GuardConfig(readable_errors=False)
rows = []
for f in faults:
    readable = compare_loops(f, lang=LANG).guarded
    blind = compare_loops(f, config=bare, lang=LANG).guarded
    rows.append({"fault": f, "structured: status": readable.status, "structured: invalid calls": readable.invalid_calls,
                 "structured: re-asks to fix": rounds_to_recover(readable),
                 "bare 500: status": blind.status, "bare 500: invalid calls": blind.invalid_calls,
                 "bare 500: re-asks to fix": rounds_to_recover(blind)})
table = pd.DataFrame(rows)
table_view(table, lang=LANG)

# %% [markdown]
# **给它定性。** 对同一个调用，两个版本分别把什么摆在了模型面前：

# %%
c = compare_loops("camel_case", lang=LANG)
blind = compare_loops("camel_case", config=bare, lang=LANG)
structured = [e.model_visible for e in c.guarded.tool_events if e.error_code][0]
# 完整显示：“你是不是想写”的提示就是这一课要看的内容
print(f"{label('structured', LANG)}{colon(LANG)}{json.dumps(json.loads(structured), indent=1, ensure_ascii=False)}")
print(f"{label('bare 500', LANG)}{colon(LANG)}{[e.model_visible for e in blind.guarded.tool_events if e.error_code][0]}")

# %% [markdown]
# **量一量。** 这里两次运行用的模型轮次一样多（4 轮），所以轮次说明不了什么；区别在于那个错误的调用最后有没有被改对。
# 拿到结构化错误时，模型只发了一次错误调用，下一轮就改对了（“结构化错误：改对所需重问次数”一列是 1）。
# 面对光秃秃的 500，它一遍遍发送同样的错误调用，直到自纠预算把对话转给人工：3 次无效调用，始终没有改对（表中记为 `-`）。

# %%
import matplotlib.pyplot as plt

plot_bars({r["fault"]: {"structured: invalid calls (then fixed)": r["structured: invalid calls"],
                        "bare 500: invalid calls (never fixed)": r["bare 500: invalid calls"]} for r in rows},
          title="bad calls sent before the run ended, one injected mistake", ylabel="invalid calls", lang=LANG)
plt.show()

# %% [markdown]
# ## 要重问几次？自纠预算
#
# 默认的 `GuardConfig(self_correction=2)` 允许连续两次无效调用，第三次就把对话转给人工。这是一种取舍，而不是真理。
# 有些智能体框架会重问得更久：一个把同样的错误重复三遍、然后改对的模型，在那里能完成任务，而在这个循环里却以
# **0 笔退款**收场。下面把同一个错误调用（把 `order_id` 写成 `orderId`）先发 *N* 次再发正确的调用，
# 在预算为 2、3、4 的防护循环里实际跑一遍。最后一列是代价：一个永远改不对的模型（就像上面那个面对裸 500 的模型）
# 在转人工之前要花掉多少。每多一次重问，就能多救回一类“错几次才改对”的模型；代价是永远改不对的模型在转人工之前多浪费一轮。

# %%
from agentlab import run_guarded
from agentlab.models import ScriptedModel, call, say
from agentlab.scenarios import aftersales

BAD = call("create_refund", {"orderId": "A1001", "amount": 199.0, "reason": "user_cancel"})
GOOD = call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})


def stubborn(n):
    """同一个错误调用发 n 次，然后发正确的那个（n=None：永远不发正确的）。"""
    script = [BAD] * (n if n is not None else 12) + ([GOOD, say("Refunded.")] if n is not None else [])
    return ScriptedModel(script, then="Sorry.")


def attempt(budget, n):
    desk, reg = aftersales.SCENARIO.setup()
    run = run_guarded(stubborn(n), reg, "Refund order A1001, I changed my mind.",
                      config=GuardConfig(self_correction=budget), sleep=lambda s: None)
    return run, len(desk.refunds)


REFUNDED, TURNS = label("refunded", LANG), label("turns", LANG)
budget_rows = []
for budget in (2, 3, 4):
    row = {"budget": budget if budget != GuardConfig().self_correction else f"{budget}{aside(label('default', LANG), LANG)}"}
    for n in (1, 2, 3, 4):
        run, refunds = attempt(budget, n)
        row[f"needs {n} re-ask{'s' if n > 1 else ''}"] = \
            REFUNDED + aside(f"{run.steps} {TURNS}", LANG) if refunds else label("handed over, 0 refunds", LANG)
    never, _ = attempt(budget, None)
    row["never fixes: bad calls, turns before the hand-over"] = \
        joined([f"{never.invalid_calls} {label('bad calls', LANG)}", f"{never.steps} {TURNS}"], LANG, "comma")
    budget_rows.append(row)
budget_table = pd.DataFrame(budget_rows)
table_view(budget_table, lang=LANG)

# %%
three = budget_table.columns[3]
buys = {b: [c for c in budget_table.columns[1:5] if budget_table.loc[i, c].startswith(REFUNDED)]
        for i, b in enumerate((2, 3, 4))}
print(t("nb03.three_reasks", LANG, two=budget_table.loc[0, three], three=budget_table.loc[1, three]))
print(t("nb03.each_reask", LANG, more=len(buys[3]) - len(buys[2]), at2=budget_table.iloc[0, 5],
        at4=budget_table.iloc[2, 5]))

# %% [markdown]
# 步数预算（笔记本 06）也会给这件事封顶：如果预算是 6 个模型轮次，需要重问 4 次的模型恰好在最后一轮完成。
# 这个数字要根据你自己的模型来定：笔记本 17 会测量一次修复需要几轮（探测结果表每一格里的“N 轮”）；
# 如果你的模型一轮就能修好，加大预算什么也换不来，反而让每个永远修不好的模型多花一轮。

# %% [markdown]
# 关于错误文本本身，有两条规矩（见 [docs/zh/failures.md](../../docs/zh/failures.md#what-the-model-sees)）：
# 永远不要给模型看堆栈、SQL、内部地址或密钥；并且要说清楚重试有没有用（`retryable`）。
# 下面是一个会泄露内部细节的工具，分别经过两种循环：

# %%
leak = compare_loops("leaky_tool", lang=LANG)
print(label("naive showed the model", LANG) + colon(LANG).rstrip() + "\n", leak.naive.tool_events[0].model_visible)
print("\n" + label("guarded showed the model", LANG) + colon(LANG).rstrip() + "\n", leak.guarded.tool_events[0].model_visible)

# %% [markdown]
# ## 练习
#
# 在只返回裸 500 的情况下，驼峰命名（camelCase）那次运行是怎么结束的？给出它的最终状态。

# %%
my_answer = None  # 一个结束状态，比如 "done"
print(answer_is(my_answer, table.set_index("fault").loc["camel_case", "bare 500: status"],
                both("nb03.said.the_model_could_not"),
                hint=both("nb03.said.look_at_the_bare"), lang=LANG))

# %% [markdown]
# ## 动手改：模型能据此行动的失败
#
# 有些错误只有后端看得见：契约放过了 `"amount": 299`，可订单 A1001 只付了 199。
# 写好 `my_amount_failure`：它拿到订单号、模型要退的金额和实付金额，返回后端抛出的
# `ToolFailure(code, message)`。检查会用防护循环运行一个模型：和上面的结构化错误一样，只有失败信息说清哪个字段错了、
# 改成什么才对，它才会改正调用，否则就原样再发一遍（就像裸 500）。检查会逐个订单告诉你模型有没有改正调用、
# 订单是不是只退了一次且全额退款。

# %%
from agentlab.errors import ToolFailure
from agentlab.workbook.builds_guards import build_refund_failure


def my_amount_failure(order_id, amount, paid):
    # 在这里写你的代码：返回 ToolFailure(code, message)；错误码都在 agentlab.errors.CODES 里
    ...


print(build_refund_failure(my_amount_failure, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 有了结构化错误，模型下一轮就改好了调用；面对光秃秃的 500，它一直重复，直到转人工。
# - 两次运行的轮数一样，所以单看轮数说明不了什么。
# - `GuardConfig(self_correction=2)` 的取舍：改得慢的模型本可完成的任务，与永远改不好的模型白白花掉的轮数。
# - 给模型读的错误里绝不出现堆栈、SQL、内部地址或密钥，并且要说明重试有没有用。
#
# **下一步：** [04 · 瞬时、校验、致命：三类错误](04_transient_validation_fatal.ipynb)。配合阅读：[失败分类](../../docs/zh/failures.md#what-the-model-sees)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

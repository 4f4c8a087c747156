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
# # 12 · 消息与上下文：日期、清空会话、成对裁剪
#
# 记账助手：“今天坐出租车花了45元，记一笔”。它的毛病不出在某一次工具调用上，而出在循环外面那段对话里
# （见 [docs/zh/guards.md#context](../../docs/zh/guards.md#context)）：**系统提示词**里写的今天是哪天，
# **清空会话**时留下了什么，很长的历史又是怎么**裁剪**的。助手的时钟是 2026-10-15，星期四；朴素版助手的
# 提示词写于 2026-09-21，里面的日期至今没改。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 说出四种消息角色，并用 `tool_call_id` 把每条 `tool` 回复对应到它的调用
# - 把当天日期放进系统提示，清空会话时不把它丢掉
# - 按完整的块裁剪长历史并保留系统提示，亲眼看到接口用 400 拒绝朴素的截断
#
# **先修：** [02 · 模型写错的参数](02_bad_arguments.ipynb)。
#
# **用时：** 约 35 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import matplotlib.pyplot as plt
import pandas as pd

from agentlab.context import estimate_tokens, protocol_problems, trim_messages
from agentlab.evals import load_cases
from agentlab.evals.outcome import grade
from agentlab.i18n import label, t
from agentlab.models import DatedModel, ModelError, ScriptedModel, call, say
from agentlab.models.fakeserver import ChatServer
from agentlab.models.openai_model import OpenAIModel
from agentlab.resources import data_file  # 随练习册附带的数据，从 notebooks/ 和 notebooks/zh/ 都能找到
from agentlab.scenarios import expense
from agentlab.scenarios.conversation import Conversation
from agentlab.workbook.demo import compare_expense, demo_report
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import cjk_fonts, plot_hbars, table_view

LANG = "zh"  # 改成 "en" 就是英文版


def booking(day: str, item: str = "taxi", amount: float = 45, category: str = "transport"):
    """一个记账调用；日期可以是相对的占位符（"{yesterday}"），由假模型替换成具体日期。"""
    return call("book_expense_record", {"date": day, "item": item, "amount": amount, "category": category})


# %% [markdown]
# ## 四种角色
#
# 一段对话里的消息分四种角色：`system`（系统：规则和当天的事实，每一轮都重新生成）、`user`（用户）、
# `assistant`（助手：要么是一段文字，要么是 `tool_calls`，其中的 `arguments` 是一个 JSON *字符串*）
# 和 `tool`（工具：每个调用对应一条回执，靠 `tool_call_id` 对上号）。下面的表格里，角色用中文显示。

# %%
chat = Conversation(expense.SCENARIO, DatedModel(ScriptedModel([booking("{today}"), say(t("nb12.said.booked_taxi_yuan", LANG))])),
                    lang=LANG, sleep=lambda s: None)
run = chat.ask(expense_task := t("nb12.said.i_took_a_taxi", LANG))
table_view(pd.DataFrame([{"role": m["role"], "content": m.get("content") or "",
               "tool_calls / tool_call_id": m.get("tool_call_id") or ", ".join(
                   f"{c['function']['name']}({c['function']['arguments']})" for c in m.get("tool_calls") or [])}
              for m in run.messages]), lang=LANG)

# %% [markdown]
# ## “今天”是哪天
#
# 同一个模型、同一句话，分别交给两个助手。模型只能从系统提示词里知道今天的日期。

# %%
print(demo_report(compare_expense(lang=LANG), LANG))

# %% [markdown]
# 相对日期，按账本上实际记下的日期评判：“昨天”和“上周五”分别走一遍两个助手。

# %%
rows = []
for words, day, meant in ((t("nb12.said.yesterday_s_lunch_yuan", LANG), "{yesterday}", "2026-10-14"),
                          (t("nb12.said.last_friday_s_hotel", LANG), "{last_friday}", "2026-10-09")):
    for loop in ("naive", "guarded"):
        c = Conversation(expense.SCENARIO, DatedModel(ScriptedModel([booking(day), say(t("nb12.said.booked", LANG))])),
                         loop=loop, lang=LANG, sleep=lambda s: None)
        run = c.ask(words)
        ledger = c.state.snapshot()
        rows.append({"asked": words, "desk": loop, "booked on": ledger["records"][0]["date"], "meant": meant,
                     "graded on the ledger": grade({"records": [{"date": meant}]}, ledger, run).outcome})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# ## 清空会话
#
# 清空会话时，系统提示词必须留下，清掉的是这段对话自己的业务状态（待确认的操作、“已经记过一次”的记忆）。
# 朴素版的清空把所有东西都删了，连系统提示词也不放过：下一轮模型根本看不到日期，只好退回它自以为的“今天”
# （也就是训练数据截止的那天）。

# %%
rows = []
for loop in ("naive", "guarded"):
    c = Conversation(expense.SCENARIO, DatedModel(ScriptedModel([booking("{today}"), say("ok"),
                                                                 booking("{yesterday}", "lunch", 35, "food"), say("ok")])),
                     loop=loop, lang=LANG, sleep=lambda s: None)
    c.ask(t("nb12.said.taxi_today", LANG))
    c.clear()
    after = c.ask(t("nb12.said.yesterday_s_lunch", LANG))
    rows.append({"desk": loop, "roles sent after clearing": ", ".join(m["role"] for m in after.messages[:2]),
                 "lunch booked on": c.state.snapshot()["records"][-1]["date"], "should be": "2026-10-14"})
table_view(pd.DataFrame(rows), lang=LANG)

# %% [markdown]
# ## 成对裁剪
#
# 这是用例集里的一段长对话（前面已有 40 轮）。“只保留最后 10 条消息”是在哪儿凑够 10 条就从哪儿切：这里切出来
# 的第一条是一条工具回执，而发出它的那次调用已经被切掉了，系统提示词也一起丢了。`trim_messages` 只按完整的块
# 来切（一次调用和它的全部回执总在一起），保留系统提示词和最新的问题，并把总量压进 token 预算：有模型自己的
# 分词器时用分词器计数，没有时用 `estimate_tokens` 估算，表里也标明了是估算。

# %%
case = next(c for c in load_cases(data_file("expense_cases.jsonl")) if c.id == "boundary-long-chat-taxi")
system = {"role": "system", "content": expense.expense_prompt(LANG)}
history = [system, *case.history, {"role": "user", "content": case.text(LANG)}]
naive_cut = [*case.history[-10:], history[-1]]  # 朴素的业务台：只留最后 10 条消息，再加上问题
trimmed = trim_messages(history, max_tokens=expense.CONTEXT_BUDGET)
table_view(pd.DataFrame([{"history": name, "messages": len(m), "tokens (estimate)": estimate_tokens(m),
               "first role": m[0]["role"], "protocol problems": len(protocol_problems(m))}
              for name, m in (("whole", history), ("last 10 messages", naive_cut), ("trim_messages", trimmed))]), lang=LANG)

# %%
with cjk_fonts():
    plot_hbars({name: estimate_tokens(m) for name, m in (("whole", history), ("last 10 messages", naive_cut),
                                                      ("trim_messages", trimmed))},
               xlabel="tokens (estimate)", tone={"last 10 messages": "bad", "trim_messages": "good"},
               line=(expense.CONTEXT_BUDGET, f"{label('budget', LANG)} {expense.CONTEXT_BUDGET}"), lang=LANG)
    plt.show()

# %% [markdown]
# 如果连系统提示词加上最新这一轮都放不下，裁剪会直说（`CONTEXT_TOO_LONG`），而不是把问题本身切掉：

# %%
try:
    trim_messages([system, {"role": "user", "content": "receipt line " * 800}], max_tokens=expense.CONTEXT_BUDGET)
except Exception as exc:  # ContextTooLong 失败，按模型和用户会被告知的样子显示
    print(exc.error.text(LANG))

# %% [markdown]
# ## 接口返回的 400
#
# 把同样两段历史通过真实的 `openai` 客户端，发给一个本地测试服务器，它和真实接口执行同样的协议规则。
# 朴素的截断被拒绝，返回 400；裁剪过的历史则得到了正常回复。

# %%
with ChatServer(model=DatedModel(ScriptedModel([booking("{today}"), booking("{today}")]))) as server:
    model = OpenAIModel("test", base_url=server.base_url, api_key="sk-test", sleep=lambda s: None)
    for name, messages in (("last 10 messages", naive_cut), ("trim_messages", trimmed)):
        try:
            reply = model.complete(messages, chat.registry.specs())
            print(t("nb12.said.answered", LANG, name=label(name, LANG), tool=reply.tool_calls[0].name))
        except ModelError as exc:  # detail 是服务器的原话
            print(t("nb12.said.refused", LANG, name=label(name, LANG), status=exc.status, code=exc.code, detail=exc.detail))

# %% [markdown]
# ## 练习
#
# 在上面朴素的截断里，发出的第一条消息（也就是接口拒收的那条）是什么角色？用英文的角色名（`system`、`user`、
# `assistant` 或 `tool`）或表格里的中文作答都可以。

# %%
from agentlab.workbook.builds_systems import first_role_after_cut

my_answer = None  # 一个角色："system"、"user"、"assistant" 或 "tool"
print(first_role_after_cut(my_answer, lang=LANG))

# %% [markdown]
# ## 动手：让调用和回执留在一起的截断
#
# “保留最后 10 条消息”的截断以一条工具回执开头，而它对应的调用被裁掉了。写出 `my_cut(messages, keep)`：先是系统提示词，
# 再是最新的消息，最多 `keep` 条，并且不能以工具回执开头（跳过这样的回执，其余的能留多少留多少）。先预测：只有
# `keep` = 10 时朴素截断才出错吗？检查会在上面那段长对话上，对 `keep` 从 1 到对话长度的每个值运行你的函数，
# 也会在同一段对话里有几次调用是一次发出两个的版本（连着两条工具回执）上运行，用 `protocol_problems` 检查每个结果，
# 并说出还在哪些 `keep` 上出错。请返回一个新列表：循环的下一轮要从传进来的那个列表开始。

# %%
from agentlab.workbook.builds_systems import cut_keeps_pairs


def my_cut(messages, keep):
    """先是系统提示，然后是最近的至多 `keep` 条消息，而且不能从一条工具回执开始。"""
    return None  # 你的代码


print(cut_keeps_pairs(my_cut, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 模型只能从系统提示得知日期：朴素的记账助手把费用记在了提示写成的那一天。
# - 清空会话要保留系统提示，清掉对话的业务状态。
# - “保留最后 10 条消息”让历史从一条失去调用的工具回执开始；`trim_messages` 只按完整的块裁剪。
# - 连系统提示和最新一轮都放不下时，裁剪会明确报 `CONTEXT_TOO_LONG`。
#
# **下一步：** [07 · 一条消息里的多个工具调用](07_parallel_tool_calls.ipynb)。配合阅读：[防护手册](../../docs/zh/guards.md#context)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

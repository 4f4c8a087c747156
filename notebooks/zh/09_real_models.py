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
# # 09 · 接入真实模型
#
# 前面的一切都跑在假模型上。这一节让同样的两个循环和真实模型对话，走任何兼容 OpenAI 的接口都行：
# 托管的模型（OpenAI、DeepSeek、通义千问 / DashScope、华为云 MaaS……）、你自己部署的服务
# （Ollama、vLLM、llama.cpp），或者就在这台笔记本上运行的小模型 Qwen2.5-Coder（`python run.py local`）。
# 唯一要换的，只是那个模型对象。
#
# 这个笔记本默认离线运行，**回放录制好的运行记录**（录制回放，即 cassette），录的是本地的 0.5B 和 1.5B
# 两个模型。这些运行是用英文的用例和英文的系统提示录的，所以下面表格里的任务、模型的回复和它读到的错误都是英文原样：
# 回放必须和录制时一字不差，翻译过的文字就不再是模型当时看到的了。想看中文的运行，用 `AGENTLAB_SOURCE=local`
# 或接入一个真实接口，在 `LANG = "zh"` 下重新运行。想换别的来源，就设置环境变量 `AGENTLAB_SOURCE`：
#
# | `AGENTLAB_SOURCE` | 谁来回答 |
# |---|---|
# | `replay`（默认） | `data/cassettes/` 里录好的回复 |
# | `local` | 本地模型，由这个笔记本启动（需要先装 `requirements-local.txt`） |
# | `openai` | `AGENTLAB_BASE_URL`、`AGENTLAB_API_KEY`、`AGENTLAB_MODEL` 指定的接口 |

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 只换模型对象，就让同样的循环通过任意 OpenAI 兼容接口连上真实模型
# - 离线回放本地 0.5B 和 1.5B 模型的录制，并在同一批用例上比较比率
# - 解释为什么防护后的运行仍可能写下没人要求的东西，以及由什么来发现它
#
# **先修：** [08 · 每种失败在哪里被拦下](08_where_failures_are_caught.ipynb)。
#
# **用时：** 约 35 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import json
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab.i18n import colon, joined, label, t
from agentlab.evals import load_cases, metrics_row, paired_cases, replay_cassette, run_case, run_suite
from agentlab.evals.outcome import reasons_in
from agentlab.models.cassette import CassetteModel
from agentlab.resources import data_file  # 随练习册附带的数据，从 notebooks/ 和 notebooks/zh/ 都能找到
from agentlab.workbook.exercises import guard_effect
from agentlab.workbook.plots import compare_plot, table_view
from agentlab.workbook.widgets import REPLAYABLE_FAULTS, FaultInjector

LANG = "zh"  # 改成 "en" 就是英文版

SOURCE = os.environ.get("AGENTLAB_SOURCE", "replay")
CASSETTES = {p.stem.split("-")[-1]: p for p in sorted(data_file("cassettes").glob("aftersales-*.jsonl"))}
cases = {c.id: c for c in load_cases(data_file("aftersales_cases.jsonl"))}
print(f"{label('source', LANG)}{colon(LANG)}{SOURCE} | {label('recorded sizes', LANG)}{colon(LANG)}{list(CASSETTES)}")

# %% [markdown]
# ## 1. 小模型逐个用例的表现
#
# 每个录下来的用例，都按录制时用的那个循环回放一遍，再根据订单的最终状态打分，和假模型的评分方式完全一样。
# 成功率只有和**同一批用例**上的另一个成功率放在一起才有意义：每个模型只在两种循环**都**录制过的用例上比较
# （见“用例数”一列），假模型也恰好跑这些用例。表后的图画出防护循环那几行：几个比率，以及每次运行怎样结束。

# %%
rows, results = [], {}
for size, path in CASSETTES.items():
    ids = paired_cases(path, cases)
    fake = t("nb09.said.fake_same", LANG, n=len(ids))
    for who, model_of in ((f"qwen2.5-coder-{size}", None), (fake, "fake")):
        for loop in ("naive", "guarded"):
            rs = (run_suite([cases[i] for i in ids], loop=loop) if model_of == "fake"
                  else replay_cassette(path, cases, loop, ids))
            results[(who, loop)] = rs
            metrics = {k: v for k, v in metrics_row(rs).items() if k != "statuses"}
            rows.append({"model": who, "loop": loop, "cases": len(rs), **metrics})
table = pd.DataFrame(rows).rename(columns={"task_success_rate": "success",
                                           "invalid_call_rate": "invalid-call rate", "avg_steps": "avg steps",
                                           "takeover_rate": "takeover"})
table_view(table, percent=("success", "invalid-call rate", "takeover", "finished_rate", "checked_success_rate",
                         "unfinished_rate"), lang=LANG)

# %%
_, fig = compare_plot({t("nb09.said.cases_of", LANG, n=len(rs), who=who): rs for (who, loop), rs in results.items() if loop == "guarded"}, lang=LANG)
plt.show()

# %% [markdown]
# **假模型和真模型，放在一张表里。** 小模型会做出假模型没被写进去的事：闲聊也去调工具，调用成功后又重复
# 调一次，从工具描述里照抄示例值，收到错误后往往也不改参数。每一种行为，都得有一道防护来接住。
# 来看一次真实模型吃了苦头的防护循环运行：

# %%
from IPython.display import HTML, display

from agentlab import compare_html

worst = None
for (who, loop), rs in results.items():
    for r in rs:
        if loop == "guarded" and who.startswith("qwen") and not r.passed and (worst is None or r.run.steps > worst[1].run.steps):
            worst = (who, r)
if worst:
    who, r = worst
    print(f"{who} · {r.case_id}{colon(LANG)}{cases[r.case_id].text('en')}\n{label('failed because', LANG)}{colon(LANG)}{joined(reasons_in(r.failures, LANG), LANG)}")
    naive = [x for x in results[(who, 'naive')] if x.case_id == r.case_id]
    if naive:
        display(HTML(compare_html(naive[0].run, r.run, lang=LANG)))

# %% [markdown]
# **为什么防护循环仍然会写入没人要求的东西。** 在上面防护循环那一列里，找一次用户根本没要求的写操作
# （这里附带的录制里：用户只给了一个错误的手机号，模型却给订单 A1001 退了款）。防护检查的是一次调用的
# *格式*和业务台的*业务规则*：合法的 JSON、符合 schema、订单存在且可以退款、金额低于审批阈值、每个订单只退一次。
# 一次照抄工具描述里示例值（“Order number, like A1001”）的调用，能通过其中每一项检查。用户有没有*要求*这笔退款，
# 不是调用本身的属性，所以任何边界检查都看不出来；能发现它的，是按最终数据打分（也就是这张表），
# 在生产环境里，则是给每个写操作加审批闸门，或者检查写操作用到的键是否来自用户的话或某个工具结果。
# 下面这个单元格会在上面那次运行里找出这样的写操作，并说明它的键是从哪里来的：

# %%
from agentlab.scenarios import aftersales

_, desk_tools = aftersales.SCENARIO.setup()


def unasked_writes(run, task):
    """执行了的写操作里，用户从没写过、之前的工具结果里也从没出现过的订单号。"""
    seen, out = [task], []
    for e in run.tool_events:
        tool = desk_tools[e.tool_name] if e.tool_name in desk_tools else None
        order = (json.loads(e.args_raw or "{}") if (e.args_raw or "").startswith("{") else {}).get("order_id")
        if e.exec_ok and tool is not None and tool.side_effect and order and not any(order in x for x in seen):
            out.append((e.tool_name, order, order in json.dumps(desk_tools.specs(), ensure_ascii=False)))
        seen.append(e.model_visible or "")
    return out


if worst:
    for name, order, in_specs in unasked_writes(r.run, cases[r.case_id].task):
        print(t("nb09.said.unasked_write_example" if in_specs else "nb09.said.unasked_write", LANG, name=name, order=order))

# %% [markdown]
# ## 2. 往真实模型的调用里注入故障
#
# 故障注入器可以包住任何模型。这里它包住的是 1.5B（或 0.5B）模型对一条普通退款请求的录制回复。
# 录制的回复没法对它收到的内容作出反应，所以这里只提供循环自己就能处理、不需要模型配合的故障
# （接口报错、重复调用和并行调用、工具失败）；参数类故障需要模型读懂错误、重新写一次调用，回放做不到。

# %%
size = "1.5b" if "1.5b" in CASSETTES else next(iter(CASSETTES), None)
if size:
    recorded = "normal-01/guarded"
    injector = FaultInjector(lang=LANG, faults=list(REPLAYABLE_FAULTS),
                             model=lambda: CassetteModel(CASSETTES[size], recorded, then="(no more replies)"))
    injector.fault.value = "duplicate_call"
    injector.update()
    display(injector)

# %% [markdown]
# ## 3. 实时调用
#
# 配置了真实模型时，这些单元格会直接和它对话；没有配置时，也会明明白白地告诉你。

# %%
live_model = None
server = None
if SOURCE == "openai":
    from agentlab.models.openai_model import OpenAIModel, endpoint_problem
    # 由环境变量配置；回复长度有上限，和本地模型一样：工作坊里大家共用同一个模型
    live_model = lambda: OpenAIModel(max_tokens=256)  # noqa: E731
elif SOURCE == "local":
    from agentlab.models.local import LocalServer, what_is_missing
    from agentlab.models.openai_model import OpenAIModel
    missing = what_is_missing("0.5b")
    if missing:
        print(t("nb09.said.no_local_model_here", LANG), missing)
    else:
        server = LocalServer("0.5b").start()
        live_model = lambda: OpenAIModel("qwen2.5-coder-0.5b", base_url=server.base_url, max_tokens=256)  # noqa: E731
problem = endpoint_problem() if SOURCE == "openai" else None  # 一个客户端用不了的地址，或者那里没有服务在应答
if problem is not None:
    print(t(problem[0], LANG, **problem[1]))
elif live_model is None:
    print(t("nb09.said.no_live_model_agentlab", LANG, source=SOURCE))
else:
    live = [run_case(cases[cid], model=live_model()) for cid in ("normal-01", "normal-status-01", "adv-chit-chat")]
    display(table_view(pd.DataFrame([{"case": r.case_id, "status": r.run.status, "passed": r.passed,
                                      "why": "; ".join(reasons_in(r.failures, LANG))} for r in live]), lang=LANG))
if server is not None:
    server.stop()

# %% [markdown]
# ## 练习
#
# 在第 1 节的表里，同样的用例上，和朴素循环相比，防护循环让真实模型的成功率升高了还是降低了？
# 把 `my_answer` 设为 `"raise"`（升高）或 `"lower"`（降低）。

# %%
my_answer = None  # "raise"（升高）或 "lower"（降低）
print(guard_effect(my_answer, table[table.model.str.startswith("qwen")], lang=LANG))

# %% [markdown]
# ## 动手改：录制结果表明需要的防护
#
# 录制结果里，小模型会在没人提过的订单上执行写操作：用户只给了一个错误的手机号，它却给 A1001 退了款；
# 在关于别的订单的对话里转人工处理 A1002。这样的调用都能通过 schema 和业务规则。写好 `my_write_check`，
# 每次写操作前都要运行的检查：它拿到工具名、参数和 `seen`（到此为止用户说过的话和读取类工具返回的结果），
# 返回 `True` 放行这次写操作，返回 `False` 拦下它。检查会拿录制模型在防护循环里做过的每一次写操作来问它，
# 再加上录制里没有的两次（一笔退款顺带提到了另一个没人说过的订单 `two_orders`，以及一个由读取类工具根据用户手机号查到的
# 订单 `found_by_phone`），告诉你它还放过了哪些没人要求的写操作，以及有没有拦下用户确实要求的写操作（`asked_writes`）。

# %%
from agentlab.workbook.builds_loops import build_write_check


def my_write_check(tool_name, args, seen):
    # 在这里写你的代码：返回 True 放行这次写操作，返回 False 拦下它
    ...


print(build_write_check(my_write_check, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - `AGENTLAB_SOURCE` 在录制、本地模型和托管接口之间切换。
# - 小模型会为闲聊调用工具、在成功后重复调用、从描述里抄示例值。
# - 从描述里抄来 `A1001` 的调用能通过所有边界检查；按最终数据评分才能发现它。
# - 注入器包住录制的模型，只注入循环无需模型配合就能处理的故障。
#
# **下一步：** [10 · 证明它真的变好了](10_evaluation.ipynb)。配合阅读：[防护手册](../../docs/zh/guards.md)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

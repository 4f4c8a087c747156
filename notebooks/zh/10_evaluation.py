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
# # 10 · 证明它真的变好了
#
# “感觉更稳了”不能当发布标准。证据是一套固定的用例（回归集）：每次改提示词、改 schema、换模型或调防护之前都跑一遍，
# 并按**数据的最终状态**打分。下面统计的用例都在 `data/aftersales_cases.jsonl` 里：正常流程、边界情况
# （订单不存在、金额为 0、退款超过订单金额、备注过长、只凭手机号查订单），以及对抗性用例
# （诱导调错工具、字段名写错、超出智能体权限的请求、用户重复提同一个要求）。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 运行一套固定的回归用例，并按数据的最终状态评分
# - 读懂四个核心指标和四层指标，每个指标在包里只有一处定义
# - 用 pass^k 衡量可靠性，用消融实验找出每个防护各自带来什么
#
# **先修：** [08 · 每种失败在哪里被拦下](08_where_failures_are_caught.ipynb)、[09 · 接入真实模型](09_real_models.ipynb)。
#
# **用时：** 约 40 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import pandas as pd

from agentlab.evals import load_cases
from agentlab.i18n import t
from agentlab.resources import data_file  # 随练习册附带的数据，从 notebooks/ 和 notebooks/zh/ 都能找到
from agentlab.workbook.plots import table_view

LANG = "zh"  # 改成 "en" 就是英文版

cases = load_cases(data_file("aftersales_cases.jsonl"))
print(t("nb10.said.cases", LANG, n=len(cases)))
table_view(pd.Series([c.category for c in cases]).value_counts().rename_axis("category").to_frame("cases"), lang=LANG)

# %% [markdown]
# ## 朴素循环对比防护循环：四个核心指标
#
# 任务成功率、无效调用率、平均步数、人工接管率，定义见[指标文档](../../docs/zh/metrics.md#the-four-headline-numbers)。
# 成功指的是用例的检查通过了：退款做对了（或者本就不该退、也确实没退），并且最终状态可以接受。
# 一次“成功”了却退错金额的运行，算失败。这里每个用例只跑一次，所以图里没有 pass^k 面板：
# 那需要每个用例跑多次（见下文）。

# %%
import matplotlib.pyplot as plt

from agentlab.evals import run_suite
from agentlab.workbook.plots import compare_plot

suites = {loop: run_suite(cases, loop=loop) for loop in ("naive", "guarded")}
rows, fig = compare_plot(suites, lang=LANG)  # 一次调用：表格和图都有了
plt.show()
table_view(pd.DataFrame(rows).set_index("group"), lang=LANG)

# %% [markdown]
# ## 成功率和人工接管率的两种算法
#
# 本书的任务成功率把正确的转人工算作成功，人工接管率只算以转人工或预算用尽结束的运行。
# 更严格的一对算法不同（[指标文档](../../docs/zh/metrics.md#two-ways-to-count)）：
# **任务成功率（完成且数据核对无误）**只算完成了、并且数据通过检查的运行；
# **人工接管率（凡未完成都算）**把所有没完成的运行都算上，崩溃也算。在这套用例上，
# 朴素循环的成功率两种算法都是 44.2%，但人工接管率按本书算是 7.7%，按严格算法是 19.2%：
# 它的 6 次崩溃没有转给任何人，却也没有完成。防护循环的成功率按本书算是 100.0%，按严格算法是 63.5%：
# 它的 19 次正确转人工是对的，但不是由智能体完成的；它的人工接管率两种算法都是 36.5%（它从不崩溃）。
# 报告时要说清用的是哪一对。

# %%
from agentlab.evals.metrics import summarize

counted = {}
for loop, results in suites.items():
    passed = {r.run.run_id: r.passed for r in results}
    s = summarize([r.run for r in results], lambda run, passed=passed: passed[run.run_id])
    counted[loop] = {t(k, LANG): f"{s[k.split('.')[1]]:.1%}" for k in (
        "eval.task_success_rate", "metrics2.checked_success_rate", "eval.takeover_rate", "metrics2.unfinished_rate")}
table_view(pd.DataFrame(counted).T, lang=LANG)

# %% [markdown]
# ## 四个层次
#
# 每一层回答的是不同的问题，每个指标都有精确的定义（同样的文字也在
# `agentlab.evals.metrics.LAYER_DEFINITIONS` 和[指标文档](../../docs/zh/metrics.md#the-four-layers)里）：

# %%
from agentlab.evals.metrics import LAYER_DEFINITIONS, layers
from agentlab.i18n import colon, joined, label, t

table_view(pd.DataFrame([{"layer": layer, "metric": m, "definition": d} for layer, ms in LAYER_DEFINITIONS.items()
                         for m, d in ms.items()]), lang=LANG)

# %%
values = {}
needs = {c.id: c.needed_tools or None for c in cases}  # 每个用例需要的工具（用例声明了的话）
avoids = {c.id: c.avoided_tools or None for c in cases}  # 以及它必须避开的工具
for loop, rs in suites.items():
    ok = {r.run.run_id: r.passed for r in rs}
    need = {r.run.run_id: needs[r.case_id] for r in rs}
    avoid = {r.run.run_id: avoids[r.case_id] for r in rs}
    values[loop] = layers([r.run for r in rs], correct=lambda run, ok=ok: ok[run.run_id],
                          needed_tools=lambda run, need=need: need[run.run_id],
                          avoided_tools=lambda run, avoid=avoid: avoid[run.run_id])
# 每个指标只在它自己的层次里占一行（把所有层次和指标交叉透视，会凭空多出 36 个空行）
four = pd.DataFrame([{"layer": layer, "metric": m, **{loop: values[loop][layer][m] for loop in suites}}
                     for layer, ms in LAYER_DEFINITIONS.items() for m in ms]).set_index(["layer", "metric"])
unreported = [m for (_, m), row in four.iterrows() if row.isna().all()]
print(t("layers.not_reported", LANG, names=joined((label(m, LANG) for m in unreported), LANG, "list") or "-"))
four.rename(index=lambda v: label(v, LANG), columns=lambda v: label(v, LANG)).rename_axis(
    [label(n, LANG) for n in four.index.names]).style.format(precision=3, na_rep="-")

# %% [markdown]
# 表里的 `-` 表示这些运行没有报告这个数，而不是零：假模型不报告 token 用量，所以“每个任务的 token 数”
# （`tokens_per_task`）是未知的。笔记本 09 里的真实模型会报告，换成它们，这张表就会填满。

# %% [markdown]
# ## pass^k：靠的是可靠，不是运气
#
# 每个用例只跑一次，会把不稳定藏起来。这里的假模型会随机出错（每次试验在不同的步骤出不同的故障），
# 每个用例跑 6 次。pass^k 用的是 tau-bench 的估计量：对所有用例取 C(c, k) / C(n, k) 的平均值，
# 也就是从 n 次试验里任取 k 次、这 k 次全部成功的概率。

# %%
import random

from agentlab.evals import fake_model, pass_k_curve
from agentlab.models.faults import MODEL_FAULTS, FaultyModel
from agentlab.workbook.plots import plot_pass_k


def noisy(case, trial):
    rng = random.Random(f"{case.id}/{trial}")
    fault = rng.choice(MODEL_FAULTS + [None, None])
    return FaultyModel(fake_model(case), fault, at_step=rng.randint(1, 3)) if fault else fake_model(case)


trials = {loop: run_suite(cases, model=noisy, loop=loop, trials=6, concurrency=4) for loop in ("naive", "guarded")}
plot_pass_k({loop: pass_k_curve(rs) for loop, rs in trials.items()}, lang=LANG)
plt.show()

# %% [markdown]
# ## 每道防护各买到了什么（消融实验）
#
# 分别看：一道防护都不开、每次只开一道、全部打开时的成功率。

# %%
from agentlab.evals import ablation
from agentlab.workbook.plots import cjk_fonts, plot_hbars

abl = ablation(cases)
with cjk_fonts():  # 从上到下：不开防护、每次只开一个防护、全部防护都开
    plot_hbars(abl, title=t("ablation.title", LANG), xlabel=t("ablation.axis", LANG),
               tone={"no guards": "bad", "all guards": "good"}, lang=LANG)
    plt.show()

# %% [markdown]
# 消融实验里的“不开任何防护”并不是上面第二张图里的朴素循环，两者的数字也不一样。原因逐个用例来看：

# %%
from agentlab import NO_GUARDS
from agentlab.evals import pass_rate

no_guards = run_suite(cases, config=NO_GUARDS)  # 消融实验里“不开防护”那根柱子背后的那次运行
assert pass_rate(no_guards) == abl["no guards"]
without = {r.case_id: r for r in no_guards}
apart = [(n, without[n.case_id]) for n in suites["naive"] if n.passed != without[n.case_id].passed]
crashed = sum(n.run.status == "failed" for n, _ in apart)
capped = sum(n.run.status == "budget_exhausted" for n, _ in apart)
print(t("ablation.not_naive", LANG, no_guards=abl["no guards"], naive=pass_rate(suites["naive"]), n=len(apart),
        total=len(cases), gained=sum(g.passed for _, g in apart), lost=sum(n.passed for n, _ in apart),
        crashed=crashed, capped=capped, other=len(apart) - crashed - capped))
table_view(pd.DataFrame([{"case": n.case_id, "naive loop": f"{label(n.run.status, LANG)}{colon(LANG)}{label(n.outcome, LANG)}",
                          "guarded loop, no guards": f"{label(g.run.status, LANG)}{colon(LANG)}{label(g.outcome, LANG)}"}
                         for n, g in apart]), lang=LANG)

# %% [markdown]
# ## 练习
#
# 在消融实验里，单独打开哪一道防护时，成功率提升得最多？把 `my_answer` 设为它的名字（例如 `"retry"`）。

# %%
from agentlab.workbook.exercises import best_single_guard

my_answer = None  # 一个防护的名字
print(best_single_guard(my_answer, abl, lang=LANG))

# %% [markdown]
# ## 动手：抓住那次发布的用例
#
# 有一次发布把幂等防护关掉了（`GuardConfig().without("idempotency")`）。先预测：哪一种模型错误只有这道防护拦得住？
# 上面的评测集会发现这次发布吗？然后写出评测集缺的那个用例。`my_case` 是一个 dict，格式和
# `data/aftersales_cases.jsonl` 的一行相同：`task`；假模型的 `fake`（调用计划 `plan`，可选的、在第 `at_step` 步注入的
# `fault`，取自 `MODEL_FAULTS`）；以及 `expect`，即账本最终必须是什么样（`cases[0].fake` 和 `cases[0].expect`
# 给出了格式）。检查会在售后台上把它跑两次：所有防护都开着一次，在那次发布上一次；前一次必须通过，后一次必须失败。

# %%
from agentlab.workbook.builds_systems import suite_case_catches

my_case = None  # 一个字典：{"task": ..., "fake": {"plan": [...], "fault": ..., "at_step": ...}, "expect": {...}}
print(suite_case_catches(my_case, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 用例集包括正常、边界和对抗三类；退错金额的运行算失败。
# - 每个数字都出自包里它唯一的定义；`-` 表示运行没有报告这个数，而不是零。
# - 每个用例跑六次的 pass^k 暴露出只跑一次看不到的不稳定。
# - 消融实验每次只打开一道防护；“不开任何防护”和朴素循环不一样，逐个用例看清了原因。
#
# **下一步：** [11 · 每周坏案例复盘](11_badcase_review.ipynb)，在那里，同样这些数字在两次发布之间被盯着：健康线、实时曲线、在存档的对话上回放一次修复。配合阅读：[指标](../../docs/zh/metrics.md#the-four-headline-numbers)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

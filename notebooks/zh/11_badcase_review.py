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
# # 11 · 每周坏案例复盘
#
# 一套不用写代码也能走完的例行流程（见[指标文档](../../docs/zh/metrics.md#the-weekly-bad-case-review)）：
#
# 1. **抽样**：随机抽取会话，而不是只看失败的那些。只抽失败样本，会把各类占比扭曲。
# 2. **归因**：给每个失败标上它发生的位置：结构、语义、执行或规则拦截。标签会根据轨迹里记录的起因自动给出：
#    因为 429、500 或失效的密钥而崩溃，算 `execution`（是服务出了问题）；接口拒收的消息历史，
#    不管出现在哪个循环里，都算 `structure`（`tag_cause` 会给出标签和背后的错误码）。不同意的标签，就改掉它。
# 3. **定靶**：这一周只盯最大的那一类。
# 4. **验证**：下周用同一个指标来检验：把两次保存下来的用例集运行逐类比较，并跟踪每次运行的核心指标；两次复盘之间，由实时曲线盯着它们。
# 5. **沉淀**：把典型的案例一键加入回归集。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 走一遍每周复盘：随机抽样会话，按阶段给每个失败打标签，选出要修的类别
# - 把一次坏会话提升为无需模型即可回放的回归用例
# - 逐个用例比较每周存下的运行（`fixed`、`broken`），并谨慎地读趋势
# - 在存档的对话上回放一次修复，并在两次复盘之间对照健康线盯住核心指标
#
# **先修：** [10 · 证明它真的变好了](10_evaluation.ipynb)。
#
# **用时：** 约 40 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab import GuardConfig
from agentlab.models.cassette import CassetteModel, labels
from agentlab.evals import (compare_runs, load_cases, load_results, promote, run_case, run_suite, sample, tag_cause,
                            trend)
from agentlab.workbook.exercises import largest_share
from agentlab.scratch import scratch_folder
from agentlab.resources import data_file  # 随练习册附带的数据，从 notebooks/ 和 notebooks/zh/ 都能找到
from agentlab.i18n import colon, joined, label, t
from agentlab.workbook.plots import plot_comparison, plot_trend, table_view
from agentlab.workbook.widgets import BadCaseReview

LANG = "zh"  # 改成 "en" 就是英文版

cases = load_cases(data_file("aftersales_cases.jsonl"))
by_id = {c.id: c for c in cases}
sessions = []
for tape in sorted(data_file("cassettes").glob("aftersales-*.jsonl")):
    for recorded in labels(tape):
        case_id, loop = recorded.rsplit("/", 1)
        if case_id in by_id:
            sessions.append(run_case(by_id[case_id], loop=loop, model=CassetteModel(tape, recorded, then="(end)")))
sessions += run_suite(cases, loop="naive")
failed = sum(not s.passed for s in sessions)
print(t("nb11.said.sessions", LANG, n=len(sessions), failed=failed))

# %% [markdown]
# ## 抽样、归因、定靶
#
# 随机抽取十二个会话。用下拉菜单修改标签，占比和靶子会跟着更新。下面晋升进去的回归用例集是一个文件，
# 所在的文件夹会在内核停止时删除；要保留它，启动 Jupyter 前把 `AGENTLAB_REGRESSION_SUITE` 设为你自己的一个文件，
# 用例就会加到那里。

# %%
kept = os.environ.get("AGENTLAB_REGRESSION_SUITE")  # 你自己的文件会保留；否则用一个随内核结束而删除的文件
suite = Path(kept) if kept else scratch_folder() / "regression.jsonl"
review = BadCaseReview(sessions, cases, suite, n=12, seed=17, lang=LANG)
review.widget

# %%
# 评分器给出的理由是英文句子；中文读者看到的是用中文说的评分结局
table_view(pd.DataFrame([{"case": r.case_id, "loop": r.run.loop, "status": r.run.status, "auto tag": tag_cause(r)[0],
                          "cause": tag_cause(r)[1] or "-",
                          "why it failed": "; ".join(r.failures) if LANG == "en" else label(r.outcome, LANG)}
                         for r in review.picked]), lang=LANG)

# %% [markdown]
# ## 沉淀：把一个坏案例加入回归集
#
# 上面的按钮做的就是这件事，这里用代码再做一遍。新用例会回放坏会话里模型的每一条回复（包括每条回复里的全部工具调用），
# 所以不需要模型就能复现。它会立刻用原会话的那个循环跑一遍：结果是*失败*，和原会话失败得一模一样。
# 回归用例的意义正在于此：修复上线之前它一直是红的，修好后变绿，并防止这个问题再回来。

# %%
bad = next((r for r in review.picked if not r.passed), None)
if bad is not None:
    new = promote(bad, by_id[bad.case_id], suite)
    again = run_case(new, loop=bad.run.loop)
    # 英文版用评分器自己的句子说明失败原因；中文版显示它的结局名称
    why = "; ".join(again.failures) if LANG == "en" else label(again.outcome, LANG)
    verdict = t("nb11.said.passes", LANG) if again.passed else t("nb11.said.fails_as_session", LANG, why=why)
    print(t("nb11.said.added", LANG, case=new.id, suite=suite.name, loop=label(bad.run.loop, LANG),
            status=label(again.run.status, LANG), verdict=verdict))
    print(suite.read_text().splitlines()[-1][:300])

# %% [markdown]
# ## 验证：修复前后跑同一套用例
#
# 用例集每周跑一次，每次的结果连同时间和代码版本一起保存下来（`run_suite(..., store=folder)`，
# 见[指标文档](../../docs/zh/metrics.md#the-weekly-bad-case-review)）。这里一次性存下四周的结果，每周多修一处：
# 朴素循环；关掉校验的防护循环；开了校验但不让模型重试（第一次无效调用就转人工）；以及所有防护全开。
# 用的是假模型，离线运行，存在一个临时目录里。

# %%
store = scratch_folder()  # 内核结束时删除
weeks = {"1-naive": ("naive", GuardConfig()), "2-no-validation": ("guarded", GuardConfig(validate=False)),
         "3-no-reasks": ("guarded", GuardConfig(self_correction=0)), "4-guarded": ("guarded", GuardConfig())}
for week, (loop, config) in weeks.items():
    run_suite(cases, loop=loop, config=config, store=store, label=week)
stored = {run.meta["label"]: run for run in map(load_results, store.iterdir())}  # 每一个都从它的文件夹重新打开
table_view(pd.DataFrame([{"label": label(week, LANG), "sessions": len(run.results), "time": run.meta["time"]}
                         for week, run in sorted(stored.items())]), lang=LANG)

# %% [markdown]
# 第 2 周对比第 4 周，逐类比较，只看两次运行都包含的用例（只有一次运行里有的用例会点名列出，但不计入其他任何统计）。
# `fixed` 表示以前失败、现在通过；`broken` 正好相反：一个修复如果弄坏了别的东西，就会在这里现形。

# %%
cmp = compare_runs(stored["2-no-validation"], stored["4-guarded"])
print(cmp.said(LANG))
print(f"{label('fixed', LANG)}{colon(LANG)}{joined(cmp.fixed, LANG, 'list') or '-'} | "
      f"{label('broken', LANG)}{colon(LANG)}{joined(cmp.broken, LANG, 'list') or '-'}")
# 每个指标一列：比率显示成百分比，和下面的图一样，用的是同一个未经舍入的数
table_view(pd.DataFrame(cmp.metrics).set_index("metric").T, lang=LANG)

# %%
table_view(pd.DataFrame(cmp.shown_rows(LANG)), percent=["before_share", "after_share", "share_change"], lang=LANG)

# %%
plot_comparison(cmp, lang=LANG)
plt.show()

# %% [markdown]
# **等不到下周：不用模型，直接回放。** 存下的运行保留了模型的回复，所以一次修复可以马上在上周的对话上试：
# 把第 1 周朴素循环的回复原样放进防护循环里回放（`replay_results`，不调用模型）。

# %%
from agentlab.evals import compare_groups, replay_results

week1 = stored["1-naive"].results  # 从它的文件夹重新打开，连同模型的回复
replayed = replay_results(week1, cases, config=GuardConfig())
table_view(pd.DataFrame(compare_groups({"naive, as recorded": week1, "same replies, guarded": replayed}))
           .set_index("group"), lang=LANG)

# %% [markdown]
# ## 历次保存运行的趋势
#
# 每次保存的运行的任务成功率、无效调用率和人工接管率，按时间从早到晚排列。读无效调用率时要小心：第 2 周它*下降*了，
# 因为关掉校验后没有任何东西检查调用，自然也就没有调用被算作无效。一个数字只有在每周都用同样的方法测量时，
# 才能跨周比较。人工接管率也上升了，但这不是退步：其中大部分是正确的转人工，也就是本来就需要人来处理的任务
# （见上面的结局分布）。

# %%
rows = trend(stored.values())
table_view(pd.DataFrame(rows), lang=LANG)

# %%
plot_trend(rows, lang=LANG)
plt.show()

# %% [markdown]
# ## 两次复盘之间：健康线和实时曲线
#
# 复盘比较的是一周一周的结果；在线上，运行是一次一次来的。每个核心数字旁边是 `HEALTH_LINES` 里的参考线
# （见[指标文档](../../docs/zh/metrics.md#health-lines)）：它是团队拿自己的基线去校准的起点，不是目标。
# 这套用例本来就是为了出错而设计的（每个对抗性用例都注入了一种故障），所以这里越线说明用例集在起作用；
# 在线上流量里，同一条线就是实时曲线的报警线。

# %%
from agentlab.evals.metrics import HEALTH_LINES, crosses

headline = compare_groups({week: stored[week].results for week in ("1-naive", "4-guarded")})
health = pd.DataFrame([{"metric": m, "health line": line["value"], "unhealthy when": line["bad"],
                        **{row["group"]: row[m] for row in headline},
                        "crosses": ", ".join(row["group"] for row in headline if crosses(m, row[m])) or "-"}
                       for m, line in HEALTH_LINES.items() if m in headline[0]]).set_index("metric").T
table_view(health, lang=LANG)  # 每个指标一列：它的参考线和它的数值用同一种格式（比率显示为百分比）

# %% [markdown]
# **实时曲线。** `LiveCurves` 在最近 20 次运行上计算任务成功率、无效调用率和人工接管率（定义和上面相同），
# 每条曲线一条参考线，曲线越线时告警一次：一个回调加一行日志（见[指标文档](../../docs/zh/metrics.md#live-curves-and-alerts)）。这里模拟：
# 一小时的防护循环流量（第 4 周的运行），一小时某次发布误上了朴素循环（第 1 周的运行），然后又回到防护循环；每分钟一次运行。
# 默认参考线只是起点：这套用例故意偏向刁难，健康的循环本身就会越过其中两条线，所以像团队在自己的流量上做的那样，
# 用健康的第一个小时来校准参考线。每次告警在曲线越线时记一行日志；只有曲线回到参考线另一侧并超出 0.05（滞回）后，
# 才会再次触发。朴素循环的那一小时里，人工接管率不升反降：防护循环会转人工的地方，那个循环直接崩溃，所以接管率的告警
# 永远发现不了那次发布，要靠成功率曲线（图下那一行给出每个小时的平均值）。

# %%
import random
import statistics

from agentlab.evals.monitor import CURVES, LINES, LiveCurves, RefLine
from agentlab.i18n import t
from agentlab.workbook.plots import plot_live

loops = {"guarded": stored["4-guarded"].results, "naive": stored["1-naive"].results}
mix = random.Random(0)
stream = [r for loop in ("guarded", "naive", "guarded") for r in mix.sample(loops[loop], len(loops[loop]))]
healthy = LiveCurves((), window=20)  # 只取第一个小时，还没有画线：用来校准
for i, r in enumerate(stream[:len(loops["guarded"])]):
    healthy.add(r.run, at=60.0 * i, success=r.passed)
worst = {m: [p.values[m] for p in healthy.points] for m in CURVES}
lines = [RefLine(line.metric, min(worst[line.metric]) - 0.05 if line.bad == "below" else max(worst[line.metric]) + 0.05,
                 line.bad) for line in LINES]
alerts = []
live = LiveCurves(lines, window=20, margin=0.05, on_alert=alerts.append, lang=LANG)
for i, r in enumerate(stream):
    live.add(r.run, at=60.0 * i, success=r.passed)
table_view(pd.DataFrame([{"metric": line.metric, "default line": d.value, "calibrated": round(line.value, 2),
                          "alert when": t("monitor." + line.bad, LANG)} for line, d in zip(lines, LINES, strict=True)]),
           percent=("default line", "calibrated"), lang=LANG)  # 每条曲线都是比率

# %%
# 每条告警触发时都记了日志（上面那几行，记在 agentlab.monitor 日志器上）；回调函数也保存了它们
minutes = joined((f"{a.point.at / 60:.0f}" for a in alerts), LANG, "list")
print(t("nb11.said.alerts", LANG, n=len(alerts), minutes=minutes) if alerts else t("nb11.said.no_alerts", LANG))
hour = len(loops["guarded"])


def hourly(metric):
    return " → ".join(f"{statistics.fmean(p.values[metric] for p in live.points[k * hour:(k + 1) * hour]):.0%}"
                      for k in range(3))


print(t("nb11.said.hours", LANG, success=hourly("task_success_rate"), takeover=hourly("takeover_rate")))
plot_live(live, lang=LANG)
plt.show()

# %% [markdown]
# ## 你们自己的日志
#
# 同样的复盘，用在团队自己的对话上：上传一个日志文件（按 JSON 行记录的 chat-completions 流量，或 agentlab 的遥测行），
# 或者点“使用示例文件”。每个工具调用都按随调用提供的工具检查，用的是防护循环同一个校验器；报告指出最该先修的一类问题，
# 并把出错的对话提升为 `eval` 可以运行的用例（docs/zh/metrics.md）。命令行也能做同样的事：
# `python -m agentlab review --logs FILE`。

# %%
from agentlab.evals.log_review import largest_text, review_logs
from agentlab.resources import data_file
from agentlab.workbook.log_widget import LogReview

own = review_logs(data_file("logs_openai_sample.jsonl"), "openai", lang=LANG)
print(largest_text(own, LANG))
LogReview(lang=LANG)

# %% [markdown]
# ## 练习
#
# 按你修改后的标签，这一周的靶子是哪一类失败？（检查读取的是标签的当前值，所以如果你不同意某个标签，先改掉它。）

# %%
my_answer = None  # 一个标签：structure、semantic、execution 或 rule_blocked
print(largest_share(my_answer, review.counts(), lang=LANG))

# %% [markdown]
# ## 动手：坏会话变成的用例
#
# 下面是一个坏会话：用户两次要求给 A1010 退款，朴素循环就退了两次。把它晋升为用例时，模型的回复会原样保留为用例的脚本；
# 用例期望什么，由你来写。先预测：如果 `expect` 写的就是这个会话做了什么，这个用例什么时候会变红？写出 `my_expect`，
# 即最终状态里必须有什么（`refunds` 列表，每一笔带 `order_id` 和 `amount`，以及可以接受的结束状态 `statuses`）。
# 检查会把会话里的回复分别用朴素循环和防护循环回放：朴素循环上用例必须像原会话那样失败，防护循环上必须通过。

# %%
from agentlab.workbook.builds_systems import promoted_expect

twice = run_case(by_id["adv-asks-twice"], loop="naive")  # 那个坏会话
print(label(twice.run.status, LANG), [(r["order_id"], r["amount"]) for r in twice.snapshot["refunds"]])
my_expect = None  # 一个字典：最终状态里必须有什么，{"refunds": [{"order_id": ..., "amount": ...}], ...}
print(promoted_expect(my_expect, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 标签由轨迹里记录的原因自动给出，可以在菜单里修改。
# - 提升后的用例会像原会话那样失败，直到修复上线才变绿。
# - 存下的四周运行里，无效调用率下降其实只说明什么都没检查。
# - 第 1 周的回复放进防护循环回放，不用等一周就看到了修复的效果；用健康的一小时校准过的实时曲线，
#   在一次发布误上朴素循环时发出了告警。
# - 同样的复盘可以跑在团队自己的日志上：用小部件，或用 `python -m agentlab review --logs FILE`。
#
# **下一步：** [13 · tool_choice 与动态路由](13_tool_choice_and_routing.ipynb)。配合阅读：[指标](../../docs/zh/metrics.md#the-weekly-bad-case-review)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

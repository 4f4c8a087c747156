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
# - 对照健康线读四个核心指标，并读懂四层指标
# - 用 pass^k 衡量可靠性，用消融实验找出每个防护各自带来什么
#
# **先修：** [08 · 每种失败在哪里被拦下](08_where_failures_are_caught.ipynb)、[09 · 接入真实模型](09_real_models.ipynb)。
#
# **用时：** 约 30 分钟（阅读、运行和练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import random
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from agentlab import NO_GUARDS, GuardConfig
from agentlab.evals import (ablation, compare_groups, fake_model, load_cases, pass_k_curve, pass_rate, recorded_cases,
                            replay_cassette, replay_results, run_suite)
from agentlab.i18n import label, t
from agentlab.evals.metrics import LAYER_DEFINITIONS, failure_breakdown, layers, status_counts
from agentlab.models.faults import MODEL_FAULTS, FaultyModel
from agentlab.resources import data_file  # the shipped data, found from notebooks/ and from notebooks/zh/ alike
from agentlab.workbook.exercises import best_single_guard
from agentlab.workbook.plots import (cjk_fonts, compare_plot, plot_bars, plot_hbars, plot_pass_k, plot_shares,
                                     plot_statuses, table_view)

LANG = "zh"  # "en" for English

cases = load_cases(data_file("aftersales_cases.jsonl"))
print({"en": f"{len(cases)} cases", "zh": f"共 {len(cases)} 个用例"}[LANG])
table_view(pd.Series([c.category for c in cases]).value_counts().rename_axis("category").to_frame("count"), lang=LANG)

# %% [markdown]
# ## 朴素循环对比防护循环：四个核心指标
#
# 任务成功率、无效调用率、平均步数、人工接管率，定义见[指标文档](../../docs/zh/metrics.md#the-four-headline-numbers)。
# 成功指的是用例的检查通过了：退款做对了（或者本就不该退、也确实没退），并且最终状态可以接受。
# 一次“成功”了却退错金额的运行，算失败。这里每个用例只跑一次，所以图里没有 pass^k 面板：
# 那需要每个用例跑多次（见下文）。

# %%
suites = {loop: run_suite(cases, loop=loop) for loop in ("naive", "guarded")}
rows, fig = compare_plot(suites, lang=LANG)  # one call: the table and the plots
plt.show()
table_view(pd.DataFrame(rows).set_index("group"), lang=LANG)

# %% [markdown]
# **健康线。** 每个核心数字旁边是 `HEALTH_LINES` 里的参考线（见[指标文档](../../docs/zh/metrics.md#health-lines)）：
# 它是团队拿自己的基线去校准的起点，不是目标。这套用例本来就是为了出错而设计的（每个对抗性用例都注入了一种故障），
# 所以这里越线说明用例集在起作用；在线上流量里，同一条线就是实时曲线的报警线。

# %%
from agentlab.evals.metrics import HEALTH_LINES, crosses

health = pd.DataFrame([{"metric": m, "health line": line["value"], "unhealthy when": line["bad"],
                        **{loop: row[m] for row in rows for loop in [row["group"]]},
                        "crosses": ", ".join(row["group"] for row in rows if crosses(m, row[m])) or "-"}
                       for m, line in HEALTH_LINES.items() if m in rows[0]]).set_index("metric")
table_view(health, lang=LANG)

# %% [markdown]
# ## 四个层次
#
# 每一层回答的是不同的问题，每个指标都有精确的定义（同样的文字也在
# `agentlab.evals.metrics.LAYER_DEFINITIONS` 和[指标文档](../../docs/zh/metrics.md#the-four-layers)里）：

# %%
table_view(pd.DataFrame([{"layer": layer, "metric": m, "definition": d} for layer, ms in LAYER_DEFINITIONS.items()
                         for m, d in ms.items()]), lang=LANG)

# %%
values = {}
for loop, rs in suites.items():
    ok = {r.run.run_id: r.passed for r in rs}
    values[loop] = layers([r.run for r in rs], correct=lambda run, ok=ok: ok[run.run_id])
# one row per metric of its own layer (a pivot over every layer x metric would invent 36 empty rows)
four = pd.DataFrame([{"layer": layer, "metric": m, **{loop: values[loop][layer][m] for loop in suites}}
                     for layer, ms in LAYER_DEFINITIONS.items() for m in ms]).set_index(["layer", "metric"])
unreported = [m for (_, m), row in four.iterrows() if row.isna().all()]
print(t("layers.not_reported", LANG, names=", ".join(unreported) or "-"))
four.rename(index=lambda v: label(v, LANG), columns=lambda v: label(v, LANG)).rename_axis(
    [label(n, LANG) for n in four.index.names]).style.format(precision=3, na_rep="-")

# %% [markdown]
# 表里的 `-` 表示这些运行没有报告这个数，而不是零：假模型不报告 token 用量，所以 `tokens_per_task`
# 是未知的。笔记本 09 里的真实模型会报告，换成它们，这张表就会填满。

# %% [markdown]
# ## pass^k：靠的是可靠，不是运气
#
# 每个用例只跑一次，会把不稳定藏起来。这里的假模型会随机出错（每次试验在不同的步骤出不同的故障），
# 每个用例跑 6 次。pass^k 用的是 tau-bench 的估计量：对所有用例取 C(c, k) / C(n, k) 的平均值，
# 也就是从 n 次试验里任取 k 次、这 k 次全部成功的概率。

# %%
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
abl = ablation(cases)
with cjk_fonts():  # top to bottom: no guards, each guard alone, all guards
    plot_hbars(abl, title=t("ablation.title", LANG), xlabel=t("ablation.axis", LANG),
               tone={"no guards": "bad", "all guards": "good"}, lang=LANG)
    plt.show()

# %% [markdown]
# 消融实验里的“不开任何防护”并不是上面第二张图里的朴素循环，两者的数字也不一样。原因逐个用例来看：

# %%
no_guards = run_suite(cases, config=NO_GUARDS)  # the run behind the ablation's "no guards" bar
assert pass_rate(no_guards) == abl["no guards"]
without = {r.case_id: r for r in no_guards}
apart = [(n, without[n.case_id]) for n in suites["naive"] if n.passed != without[n.case_id].passed]
crashed = sum(n.run.status == "failed" for n, _ in apart)
capped = sum(n.run.status == "budget_exhausted" for n, _ in apart)
print(t("ablation.not_naive", LANG, no_guards=abl["no guards"], naive=pass_rate(suites["naive"]), n=len(apart),
        total=len(cases), gained=sum(g.passed for _, g in apart), lost=sum(n.passed for n, _ in apart),
        crashed=crashed, capped=capped, other=len(apart) - crashed - capped))
table_view(pd.DataFrame([{"case": n.case_id, "naive loop": f"{label(n.run.status, LANG)}: {label(n.outcome, LANG)}",
                          "guarded loop, no guards": f"{label(g.run.status, LANG)}: {label(g.outcome, LANG)}"}
                         for n, g in apart]), lang=LANG)

# %% [markdown]
# ## 模型对比模型
#
# 同一套用例，回放本地模型的录制（见笔记本 09），和假模型放在一起比。

# %%
# Each recording holds only some cases, so each model is compared with the fake **on the cases it was
# recorded with** (the `cases` column), never a rate over 17 cases against one over 52.

# %%
tapes = {p.stem.split("-")[-1]: p for p in sorted(data_file("cassettes").glob("aftersales-*.jsonl"))}
by_id = {c.id: c for c in cases}
groups = {}
for size, tape in tapes.items():
    ids = [i for i in recorded_cases(tape).get("guarded", []) if i in by_id]
    on = {"en": f"{size} cases ({len(ids)})", "zh": f"{size} 的用例（{len(ids)} 个）"}[LANG]
    groups[f"{on}: qwen {size}"] = replay_cassette(tape, by_id, "guarded", ids)
    groups[f"{on}: " + {"en": "fake", "zh": "假模型"}[LANG]] = run_suite([by_id[i] for i in ids])
table = pd.DataFrame(compare_groups(groups)).set_index("group")
plot_bars({m: table[m].to_dict() for m in ("task_success_rate", "invalid_call_rate", "takeover_rate")},
          title="model against model, guarded loop, each pair on the same cases", lang=LANG)
plt.show()
table_view(table, lang=LANG)

# %% [markdown]
# ## 状态分布，以及按两套分类统计的失败
#
# 规则拦截的结果（审批、熔断、预算、触发的业务规则）是防护在履行职责：它们单独统计，从不算作不稳定。

# %%
plot_statuses({name: status_counts([r.run for r in rs]) for name, rs in {**suites, **groups}.items()}, lang=LANG)
plt.show()
fb = failure_breakdown([r.run for r in suites["guarded"]])
fig, axes = plt.subplots(1, 3, figsize=(13, 2.6))
plot_shares(fb["by_category"], ax=axes[0], title="unstable: by retry class", lang=LANG)
plot_shares(fb["by_stage"], ax=axes[1], title="unstable: by stage", lang=LANG)
plot_shares(fb["rule_blocked"], ax=axes[2], title="rule-blocked (counted apart)", lang=LANG)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 新加一道防护会改变什么？不用模型，直接回放
#
# 拿昨天朴素循环的对话，把其中模型的回复原样放进今天的防护循环里回放。

# %%
replayed = replay_results(suites["naive"], cases, config=GuardConfig())
table_view(pd.DataFrame(compare_groups({"naive, as recorded": suites["naive"], "same replies, guarded": replayed}))
           .set_index("group"), lang=LANG)

# %% [markdown]
# ## 实时曲线：同样三个数字，放到一串运行上
#
# 在线上，运行是一次一次来的。`LiveCurves` 在最近 20 次运行上计算任务成功率、无效调用率和人工接管率（定义和上面相同），
# 每条曲线一条参考线，曲线越线时告警一次：一个回调加一行日志（见[指标文档](../../docs/zh/metrics.md#live-curves-and-alerts)）。这里模拟：
# 一小时的防护循环流量，一小时某次发布误上了朴素循环，然后又回到防护循环；每分钟一次运行。
# 默认参考线只是起点：这套用例故意偏向刁难，健康的循环本身就会越过其中两条线，所以像团队在自己的流量上做的那样，
# 用健康的第一个小时来校准参考线。每次告警在曲线越线时记一行日志；只有曲线回到参考线另一侧并超出 0.05（滞回）后，
# 才会再次触发。朴素循环的那一小时几乎没让人工接管率动起来：那个循环出错时是直接崩溃，而不是转人工。

# %%
from agentlab.evals.monitor import CURVES, LINES, LiveCurves, RefLine
from agentlab.workbook.plots import plot_live

mix = random.Random(0)
stream = [r for loop in ("guarded", "naive", "guarded") for r in mix.sample(suites[loop], len(suites[loop]))]
healthy = LiveCurves((), window=20)  # the first hour alone, no lines yet: to calibrate on
for i, r in enumerate(stream[:len(suites["guarded"])]):
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
           lang=LANG)

# %%
# each alert was logged as it fired (the lines above, on the agentlab.monitor logger); the callback kept them too
minutes = ", ".join(f"{a.point.at / 60:.0f}" for a in alerts)
print({"en": f"{len(alerts)} alerts, at minute {minutes}", "zh": f"共 {len(alerts)} 次告警，分别在第 {minutes} 分钟"}[LANG])
plot_live(live, lang=LANG)
plt.show()

# %% [markdown]
# ## 练习
#
# 在消融实验里，单独打开哪一道防护时，成功率提升得最多？把 `my_answer` 设为它的名字（例如 `"retry"`）。

# %%
my_answer = None  # a guard's name
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

my_case = None  # a dict: {"task": ..., "fake": {"plan": [...], "fault": ..., "at_step": ...}, "expect": {...}}
print(suite_case_catches(my_case, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 用例集包括正常、边界和对抗三类；退错金额的运行算失败。
# - `-` 表示运行没有报告这个数，而不是零。
# - 每个用例跑六次的 pass^k 暴露出只跑一次看不到的不稳定。
# - 用今天的循环回放昨天的对话，再加上实时曲线，显示一次改动上线前后的效果。
#
# **下一步：** [11 · 每周 Badcase 复盘](11_badcase_review.ipynb)。配合阅读：[指标](../../docs/zh/metrics.md#the-four-headline-numbers)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

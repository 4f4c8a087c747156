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
# # 17 · 探测你自己的工具
#
# 你带来一个工具文件和一个模型，要回答的问题是：“小模型能不能把这些工具调对？调错了又会怎样？”探针（见 [评估指标：探针](../../docs/zh/metrics.md#the-probe)）根据每个工具的 schema 生成一次合法调用，把每一类故障注入模型对该工具的第一次调用，再读防护循环的 trace，看是哪一道防护拦下了它。命令行里也能跑同样的探测：`python -m agentlab probe --tools FILE --model fake`。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 用一个模型探测一份工具文件：为每个工具造一个合法调用，再向它注入各类故障
# - 读懂探测表：每个故障被哪个防护拦下、模型修复的比例、哪些故障不适用
# - 按出错之后的行为比较录制的本地模型：再次调用，还是用文字回答
#
# **先修：** [08 · 每种失败在哪里被拦下](08_where_failures_are_caught.ipynb)、[09 · 接入真实模型](09_real_models.ipynb)。
#
# **用时：** 约 40 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import json
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML

from agentlab import GuardConfig
from agentlab.evals.probe import cassette_settings, fake_source, probe, replay_source
from agentlab.evals.probe_report import after_an_error, plot_probe_categories, plot_probe_matrix, table_html
from agentlab.models.cassette import labels
from agentlab.i18n import t
from agentlab.resources import data_file, datasets_dir
from agentlab.tools import load_specs
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import cjk_fonts, table_view
from agentlab.workbook.widgets import ProbePanel

LANG = "zh"  # 改成 "en" 就是英文版
# 通过包来查找，所以笔记本和深一层文件夹里的中文版读到的是同一批文件
RETAIL = datasets_dir() / "tau-bench" / "retail" / "tools.json"  # tau-bench 的商店：16 个不是我们写的工具
# 刚克隆下来的仓库（没有 tau-bench 数据）：退款台的四个工具
TOOLS = RETAIL if RETAIL.exists() else data_file("aftersales_tools.json")
registry = load_specs(json.loads(TOOLS.read_text(encoding="utf-8")), source=TOOLS.name, lang=LANG)
report = probe(registry, fake_source(), lang=LANG, source=TOOLS.name)
print(t("nb17.said.probed", LANG, name=TOOLS.name, n=len(report["tools"]), applicable=report["summary"]["applicable"],
        na=report["summary"]["na"], seconds=report["meta"]["seconds"]))

# %% [markdown]
# ## 表格
#
# 每个工具一行，每类故障一列。每一格从左往右读：
#
# * **防护**：trace 里留下标记的那一道防护。`validate` 表示在工具执行前就拒绝了调用，`idempotency` 表示用存储里的结果回应了重复调用、没有再执行一遍，`retry` 表示重发了失败的模型请求，`tool` 表示是工具自己拒绝了调用（循环放行了它）。这些都是从实际运行里读出来的，而不是看故障表*本来*想发生什么，所以你关掉的防护会显示为**未拦截**。
# * **已修正 x%**：在模型调用被拒绝的那些试验里，模型读了错误之后、下一次调用成功执行的比例（即自我修正率，见 [评估指标：自我修正率](../../docs/zh/metrics.md#self-correction-rate)）；**x 轮**：为此用了多少轮模型调用。
# * **不适用**：这类故障套不到这个工具上（没有可以越出的枚举，没有可以写成文字的数字）；它不等于通过。
# * `clean`：完全不注入故障的调用，模型能不能发对？这里的脚本模型总是能发对；换成真实模型，这是要最先看的一列。

# %%
HTML(table_html(report, LANG))

# %%
with cjk_fonts():  # 标签可能是中文：画图时需要字体
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    plot_probe_matrix(report, ax=axes[0], lang=LANG)
    plot_probe_categories(report, ax=axes[1], lang=LANG)
    plt.tight_layout()
    plt.show()

# %% [markdown]
# 脚本模型能读懂的错误它都会修正，所以每个适用的格子不是被拦截就是被修正：这是上限（白色格子是不适用，不是通过；灰色格子是下面说的“无害”放行）。即便如此，仍有两类故障没有被拦截，报告会如实写出来而不是藏起来：*只读*工具上的 `duplicate_call`（重复调用）和 `parallel_call`（一次两个调用）属于“无害”：一次查询问两遍就执行两遍，什么也不会改变，所以不需要任何防护去拦。换成写操作，它们会被幂等防护拦下。哪些工具是只读、哪些是写操作，是根据工具名的动词猜出来的（`cancel_`、`modify_` 等），也可以在你的 `--impl` 模块里用 `WRITES` 声明。

# %%
CATEGORY = t("nb17.said.category", LANG)
verdicts = pd.DataFrame([{CATEGORY: c, **{k: v for k, v in row["verdicts"].items()}}
                         for c, row in report["summary"]["by_category"].items()]).fillna(0).set_index(CATEGORY).astype(int)
# 判定结果的名称，按报告的说法（英文下就是名称本身：report.json 里的词）
table_view(verdicts.rename(columns=lambda v: t("probe.v." + v, LANG) if LANG != "en" else v,
                           index={"clean": "clean (no fault)"}), lang=LANG)

# %% [markdown]
# ## 真实模型的回放
#
# `python -m agentlab probe --tools ... --model local --size 0.5b` 会把本地模型的每一轮录到 `data/cassettes/probe-<tools>-<size>.jsonl`；`--model replay` 不运行模型、直接回放，得到同样的报告。如果这台机器上有这样的录制，就在这里展示：

# %%
tape = data_file(f"cassettes/probe-{'retail' if TOOLS == RETAIL else 'aftersales'}-0.5b.jsonl")
if tape.exists():
    saved = cassette_settings(tape) or {}
    real = probe(registry, replay_source(tape), recorded=set(labels(tape)), trials=saved.get("trials") or 1,
                 categories=saved.get("categories"), only=saved.get("only"), seed=saved.get("seed") or 0,
                 lang=saved.get("lang") or LANG, source=TOOLS.name)
    display(HTML(table_html(real, LANG)))
    rate = real["summary"]["self_correction_rate"]
    print(t("nb17.said.rate", LANG, rate="-" if rate is None else f"{rate:.0%}"))
else:
    print(t("nb17.said.no_recording_at_tape", LANG, tape=tape))

# %% [markdown]
# ## 所有录制的对比
#
# 本地 0.5B 和 1.5B 模型，分别在售后台的工具、记账台的工具和 tau-bench 零售店的工具上做了探测（这里只列已有的录制）：无故障的调用有多少是对的，多少格子里出现了错误调用，模型读到错误后多常修正自己的调用，以及报错之后的下一轮它做了什么：再次调用，还是用文字回答用户。

# %%
TOOL_FILES = {"aftersales": data_file("aftersales_tools.json"), "expense": data_file("expense_tools.json"),
              "retail": RETAIL}
rows = []
for tape in sorted(data_file("cassettes").glob("probe-*-*.jsonl")):
    _, name, size = tape.stem.split("-", 2)
    saved, tools_file = cassette_settings(tape) or {}, TOOL_FILES.get(name)
    if tools_file is None or not tools_file.exists():
        continue
    reg = load_specs(json.loads(tools_file.read_text(encoding="utf-8")), source=tools_file.name, lang=LANG)
    rep = probe(reg, replay_source(tape), recorded=set(labels(tape)), trials=saved.get("trials") or 1,
                categories=saved.get("categories"), only=saved.get("only"), seed=saved.get("seed") or 0,
                lang=saved.get("lang") or LANG, source=tools_file.name)
    s = rep["summary"]
    clean = s["by_category"].get("clean", {}).get("verdicts", {})
    moves = after_an_error(tape)
    cols = [t(f"nb17.col.{c}", LANG) for c in ("tools", "model", "probed", "clean_right", "wrong_cells", "self_correction",
                                               "called_again", "answered_in_words")]
    rows.append(dict(zip(cols, (name, size, len(rep["tools"]), f"{clean.get('ok', 0)}/{sum(clean.values())}",
                                s["cells_with_a_wrong_call"], s["self_correction_rate"], moves["call"], moves["words"]),
                         strict=True)))
recordings = pd.DataFrame(rows)
table_view(recordings, percent=[recordings.columns[5]]) if rows else print(
    t("nb17.said.no_probe_recordings_here", LANG))

# %% [markdown]
# 先看最后两列，再看自我修正率：1.5B 的自我修正率低，并不是因为它读不懂错误。调用被拒绝之后，0.5B 会再调用一次；1.5B 却大多转头回答用户，解释这个错误（“The order ID is missing. Please provide the order ID.”），并追问它认为缺少的信息。循环的重问只能修正一个会再次调用的模型，所以一句文字回答就让这次试验以“未修正”告终。下面是同样的数字，直接来自录制：

# %%
def moves_sentence(rows, lang):
    """每份录制一句话：出错之后模型有多少次重新调用，又有多少次直接回答。"""
    out = []
    for r in rows:
        name, size, rate, again, words = (list(r.values())[i] for i in (0, 1, 5, 6, 7))
        rate = "-" if rate is None else f"{rate:.0%}"
        out.append(t("nb17.said.name_size_self_correction", lang, name=name, size=size, rate=rate, again=again, words=words))
    return "\n".join(out)


print(moves_sentence(rows, LANG) if rows else "")

# %% [markdown]
# ## 试试你自己的工具
#
# 粘贴一个工具列表（OpenAI 格式，外面包不包一层都行），选好模型和试验次数，点运行。JSON 写坏了或者 schema 有问题，都只会得到一句说明，中英文都可以。

# %%
panel = ProbePanel(lang=LANG)
widgets.VBox([panel.widget])

# %% [markdown]
# ## 练习
#
# 关掉 `idempotency` 防护，只对 `create_refund`（售后台）探测 `duplicate_call`。这一格会得到什么结论？按 `report.json` 里的写法回答结论名（例如 `"caught"`）。

# %%
from agentlab.workbook.builds_systems import duplicate_call_verdict

my_answer = None  # 一个判定结果，比如 "caught"
print(duplicate_call_verdict(my_answer, lang=LANG))

# %% [markdown]
# ## 动手：让每种故障都有东西可拦的契约
#
# 探测标为“不适用”的格子，是契约连表达都表达不了的故障：没有枚举，就没有枚举之外的值；没有范围，就没有超出范围的数。
# `draft` 是售后台 `create_refund` 的第一版契约。先预测：哪些类别在它上面是“不适用”？然后写出 `my_parameters`。检查会把它
# 放进售后台的工具列表，用脚本模型在每个类别上探测 `create_refund`：每个格子都要适用，并且以“已拦截”或“已修复”结束，
# 没有故障的调用也要照常运行。

# %%
from agentlab.workbook.builds_site import contract_catches_faults

draft = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"},
                                          "reason": {"type": "string"}}}
my_parameters = None  # 你的 schema：从 draft 的一份拷贝开始改
print(contract_catches_faults(my_parameters, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 每格里的防护是从轨迹读出的，所以关掉的防护会显示为未拦下。
# - 重复的读操作无害；重复的写操作由幂等防护拦下。
# - 1.5B 模型修复率低，是因为出错后它用文字回答用户，而重问修不了这种情况。
# - 同样的探测也能在命令行运行：`python -m agentlab probe --tools FILE --model fake`。
#
# **下一步：** [18 · 预防还是修复：语法约束、重问，以及本地模型上的排行榜](18_prevention_or_repair.ipynb)。配合阅读：[指标](../../docs/zh/metrics.md#the-probe)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

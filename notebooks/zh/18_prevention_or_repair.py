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
# # 18 · 预防还是修复：语法约束、重问，以及本地模型上的排行榜
#
# 想让小模型给出合法的工具调用，有两条路。**预防**：在模型生成的同时加以约束，只让工具 schema 允许的 token 出来（语法约束，也就是“structured outputs”）。**修复**：先让它写，在边界上检查这次调用，把读得懂的错误交回给它再试一次（防护循环的“校验后重问”，见笔记本 02–03）。本笔记本在同一批题目、同样的本地模型上把两条路都量一遍，再把结果和一个公开的排行榜放在一起对照：伯克利函数调用排行榜（BFCL），它的论文报告了 Qwen2.5-0.5B 和 1.5B 在函数调用模式下的成绩。（这里的本地模型是同样规格的 Coder 版本，而且经过量化；论文的总分覆盖的类别也比这里抽样的四类多：把它当作一个参照点来看。）
#
# 这里不运行任何模型：每条回复都已录好（`benchmarks/bench_bfcl_local.py`），从 `data/cassettes/bfcl-<size>.jsonl` 回放；评分则是现场用 `agentlab.evals.bfcl` 算的（见 [评估指标：BFCL 的三种问法](../../docs/zh/metrics.md#bfcl-three-ways)），前提是 BFCL 的题目放在 `../shared/datasets/bfcl`（或 `$AGENTLAB_DATASETS` 下）。没有这些题目时，下面每张表、每幅图都来自同一次评分：它事先做好，随练习册一起发布（`data/bfcl/graded.json`，由 BFCL 派生，遵循其 Apache-2.0 许可证）；第一行输出会说明用的是哪一种，以及怎样现场评分。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 在同样的问题和本地模型上，比较预防（由 schema 生成的语法约束）与修复（校验后重问）
# - 按 BFCL 的规则给回复评分，并把每个错误回复归入一种类型
# - 说清语法约束能消除哪些失败、只是转移了哪些，以及它在 token 上限处特有的失败
# - 根据录下的回复判断：什么时候重问值得多花一轮，什么时候该停下
#
# **先修：** [03 · 模型读得懂的错误](03_readable_errors.ipynb)、[09 · 接入真实模型](09_real_models.ipynb)。
#
# **用时：** 约 45 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from agentlab.evals import bfcl
from agentlab.evals.bfcl_results import graded
from agentlab.i18n import aside, colon, joined, label, t
from agentlab.models.constrained import call_grammar
from agentlab.workbook.exercises import most_repaired_kind
from agentlab.workbook.plots import cjk_fonts, plot_bars, table_view

LANG = "zh"  # 改成 "en" 就是英文版
RESULTS = graded()  # 有 BFCL 数据时实时计算，否则用练习册附带的结果
FIG = RESULTS.sizes  # 每个模型的数字：准确率、失败的种类、各自落在哪里，再附几条回复
SIZES = list(FIG)
print(RESULTS.said(LANG))
for s, f in FIG.items():
    print(f"{s}{colon(LANG)}" + t("nb18.said.questions_replayed_per_category", LANG) + colon(LANG)
          + joined([f"{label(c, LANG)} {n}" for c, n in f.n.items()], LANG, "list"))

# %% [markdown]
# ## 三种问法
#
# 每道题都是一轮用户提问，附带一到几个函数说明。同一个提示词（同一个对话模板、同样的工具）用三种方式发出：
#
# * **单次回答**（`single`）：只要一次回复，按写出来的原样评分：排行榜量的就是这个。
# * **校验后重问**（`reask`）：即防护循环。违反契约的调用（JSON 写坏、调用不存在的函数、函数说明里没有的字段、类型不对、漏了必填参数）会收到一条读得懂的错误，模型再试，最多两次。这里什么都不执行；一旦某条回复通过检查，就对那条回复评分。它的第一轮*就是*单次回答的那条回复，所以一份录制两种问法都能用。
# * **语法约束**（`constrained`）：在由同样的契约构成的语法下只写一次回复：要么是一个代码块包着的调用，函数名必须是给定工具之一、参数必须符合该工具的 schema；要么是纯文字（一道没有合适函数的题，必须能不调用函数就回答）。下面是只有一个函数的题目所用的语法：

# %%
print(call_grammar(bfcl.tools_for(RESULTS.example)[0])[:700], "...")

# %% [markdown]
# 评分遵循 BFCL 的规则：函数要对，必填参数一个不少，不能有函数说明里没有的参数，每个取值都在可接受的范围内（字符串比较时忽略大小写和标点）；*parallel* 类的多个调用与期望的调用按任意顺序配对；*irrelevance* 类的正确答案是根本不调用。这套规则在 `tests/test_bfcl_eval.py` 里用 BFCL 自己的标准答案核对过（每个标准答案都判为正确，只有 `simple_python_200` 例外：它自己的答案漏掉了函数说明要求的一个参数）。
#
# ## 表格

# %%
def accuracy_table(size: str) -> pd.DataFrame:
    fig = FIG[size].accuracy
    rows = {mode: {c: round(100 * fig[mode].get(c, float("nan")), 1) for c in (*bfcl.CATEGORIES, "mean")} for mode in bfcl.MODES}
    table = pd.DataFrame(rows).T
    table[t("nb18.said.published_overall", LANG)] = bfcl.PUBLISHED[size]["overall"]
    return table


for size in SIZES:
    n = FIG[size].n
    per = joined([f"{label(c, LANG)} {count}" for c, count in n.items()], LANG, "list") if isinstance(n, dict) else n
    print(joined([f"Qwen2.5-Coder-{size}", t("nb18.said.accuracy_in_n_per", LANG, n=per)], LANG, "comma"))
    display(table_view(accuracy_table(size), lang=LANG))

# %%
if SIZES:
    with cjk_fonts():  # 标题可能是中文：画图时需要字体
        fig, axes = plt.subplots(1, len(SIZES), figsize=(7 * len(SIZES), 4), squeeze=False)
        for ax, size in zip(axes[0], SIZES, strict=True):
            f = FIG[size].accuracy
            plot_bars({c: {m: f[m][c] for m in bfcl.MODES} for c in bfcl.CATEGORIES if c in f["single"]}, ax=ax,
                      title=t("nb18.said.accuracy_by_mode", LANG, size=size), ylabel=t("nb18.said.accuracy", LANG), lang=LANG)
        plt.tight_layout()
        plt.show()

# %% [markdown]
# 怎么读这些结果（下面的数字都是从回放里算出来的，没有一个是手填的）：

# %%
def what_the_interface_adds(size: str) -> str:
    f = FIG[size].accuracy
    single, reask, con = (100 * f[m]["mean"] for m in bfcl.MODES)
    published = bfcl.PUBLISHED[size]["overall"]
    return t("nb18.said.size_single_shot_single", LANG, size=size, single=single, published=published, reask=reask, value=reask - single, con=con, value2=con - single)


for size in SIZES:
    print(what_the_interface_adds(size))

# %% [markdown]
# ### 提示词本身的影响
#
# 其中有两个数字，反映的与其说是模型，不如说是提示词，而回放能说明影响有多大。本地对话模板（`agentlab/models/templates/qwen_fenced_tools.jinja`）要求输出“a fenced json block”，给的示例里参数都是占位符：
#
# * **parallel。** 这一类题需要两个或更多调用。数一数有多少回复包含不止一个调用：如果每种问法下都是零，那这一类量到的既是模型，也是模板里的单数措辞，这时去掉它、看其余三类的平均更公平。
# * **irrelevance。** 照抄示例的回复（`{"<argument name>": <value>}`）不是 JSON，BFCL 的规则会把它当作没有调用，而在一道没有合适函数的题上，这就算对了。语法约束写不出占位符，于是丢掉了这些“对”的答案。把它们按实际情况算（其实是想调用），下面的平均值就会变。

# %%
def what_the_prompt_decides(size: str) -> str:
    fig = FIG[size]
    several, f, strict = fig.several, fig.accuracy, fig.copies_wrong  # 严格模式：照抄示例的算错
    three = [c for c in bfcl.CATEGORIES if c != "parallel"]
    copies, n_irr = fig.copies, fig.n_irrelevance
    without = {m: 100 * bfcl.mean_of(f[m], three) for m in bfcl.MODES}
    s_single, s_con = (100 * strict[m]["mean"] for m in ("single", "constrained"))
    return t("nb18.said.size_replies_with_more", LANG, size=size, several=joined([f"{label(m, LANG)} {n}" for m, n in several.items()], LANG, "list"), single=without['single'], reask=without['reask'], constrained=without['constrained'], n_irr=n_irr, copies=copies, s_single=s_single, s_con=s_con, value=s_con - s_single)


for size in SIZES:
    print(what_the_prompt_decides(size))

# %% [markdown]
# ## 各自能修什么
#
# 每条错误回复都归入一个类别（`bfcl.KINDS`，按顺序取第一个匹配的）。前六类违反了工具的契约：由契约构造出来的语法应该让它们不可能出现，而防护能看到其中的每一个。另外五类守住了契约，却依然答错了题：函数存在但选错了、函数对了但取值错、调用次数不够、该调用时只回了文字、不该调用时却调用了：这些是任何语法、任何 schema 检查都看不到的。

# %%
GROUP = {k: t(f"nb18.kind_group.{k}", LANG) for k in ("contract", "meaning")}


def kind_name(kind: str) -> str:
    """下面每张表、每张图和选择框对一种失败的叫法：它的键名，加上它所属的一组。"""
    if kind not in bfcl.KINDS:
        return label(kind, LANG)
    return kind + aside(GROUP["contract"] if kind in bfcl.CONTRACT_KINDS else GROUP["meaning"], LANG)


def kinds_table(size: str) -> pd.DataFrame:
    table = pd.DataFrame(FIG[size].kinds).loc[list(bfcl.KINDS), list(bfcl.MODES)]
    table.index = [kind_name(k) for k in table.index]
    table[t("nb18.what_it_is", LANG)] = [t(f"bfcl.kind.{k}", LANG) for k in bfcl.KINDS]
    return table


for size in SIZES:
    print(f"{size}{colon(LANG)}" + t("nb18.said.wrong_replies_by_kind", LANG))
    display(table_view(kinds_table(size), lang=LANG))

# %%
if SIZES:
    size = SIZES[0]
    k = FIG[size].kinds
    with cjk_fonts():
        fig, ax = plt.subplots(figsize=(11, 4))
        plot_bars({kind_name(kind): {m: k[m][kind] for m in bfcl.MODES} for kind in bfcl.KINDS}, ax=ax,
                  title=t("nb18.said.kinds_title", LANG, size=size), ylabel=t("nb18.said.replies", LANG), lang=LANG)
        plt.xticks(rotation=30, ha="right")
        plt.tight_layout()
        plt.show()

# %%
def prevented_and_not(size: str) -> str:
    k = FIG[size].kinds
    contract = {m: sum(k[m][x] for x in bfcl.CONTRACT_KINDS) for m in bfcl.MODES}
    meaning = {m: sum(v for x, v in k[m].items() if x not in bfcl.CONTRACT_KINDS) for m in bfcl.MODES}
    return t("nb18.said.size_contract_failures_single", LANG, size=size, single=contract['single'], reask=contract['reask'], constrained=contract['constrained'], single2=meaning['single'], reask2=meaning['reask'], constrained2=meaning['constrained'])


for size in SIZES:
    print(prevented_and_not(size))

# %% [markdown]
# 每道题的失败去哪儿了？同一道题，单次回答与另一种问法对比：行是单次回答的结果，列是另一种问法下的结果（答对记为“正确”）。对角线上的是没有变化的。

# %%
def transition_table(size: str, after: str) -> pd.DataFrame:
    order = ["right", *bfcl.KINDS]
    table = pd.DataFrame(0, index=order, columns=order)
    for a, b, n in FIG[size].transitions[after]:  # （单次回答下的失败种类或 "right"，另一种模式下的，题目列表）
        table.loc[a, b] = n
    table = table.loc[(table.sum(axis=1) > 0), (table.sum(axis=0) > 0)]
    return table.rename(index=kind_name, columns=kind_name)


for size in SIZES[:1]:
    for after in ("reask", "constrained"):
        print(f"{size}{colon(LANG)}{label('single', LANG)} → {label(after, LANG)}")
        display(table_view(transition_table(size, after), lang=LANG))

# %% [markdown]
# 这些表格里要看什么：
#
# * 语法约束从构造上就消除了违反契约的失败。如果在约束下还有残留，那是被 token 上限截断的回复（模型想停下，或想写一个 schema 里没有的字段，语法却逼着它继续写一个值或空白：这是语法约束自己的失败方式，见下文）。
# * 语法约束是把失败挪了个地方，而不是消除了它们：看单次回答 → 语法约束那张表里契约类的几行，看它们落到了哪几列。因为未知字段被拒绝的调用，可能变成一个合法但依然错误的调用（取值错，或调用次数不够），而任何防护都永远看不到它。
# * 重问能修好它被告知的问题，前提是模型读得懂错误。它修不了语义上的失败，还可能把一道题从“正确”里*挪出去*：在 irrelevance 题上，一个 BFCL 会当作“没有调用”的坏调用被重问之后，第二次可能就成了一个真正的调用。单次回答 → 校验后重问那张表显示了这种情况有多常见。
#
# ## 同一个问题，三种回答
#
# 选一种失败类别，看看单次回答犯了这种错误的题目，以及另外两种问法对同一道题给出了什么。

# %%
def examples(size: str, kind: str) -> pd.DataFrame:
    return pd.DataFrame(FIG[size].examples[kind], columns=["question", *bfcl.MODES])


def examples_shown(size: str, kind: str) -> None:
    """各模式按 LANG 的语言显示；单元格里是模型写的原话（✓ 对，✗ 错），照原样引用。"""
    shown = examples(size, kind)
    if shown.empty:
        print(t("nb18.said.no_examples", LANG, kind=kind_name(kind)))
    else:
        display(shown.rename(columns=lambda c: label(c, LANG)))


if SIZES:
    pick = widgets.interactive(examples_shown,
                               size=widgets.Dropdown(options=SIZES, description=t("nb18.said.model", LANG)),
                               kind=widgets.Dropdown(options=[(kind_name(k), k) for k in bfcl.KINDS], value="unknown_field",
                                                     description=t("nb18.said.kind", LANG)))
    display(pick)

# %% [markdown]
# ## 语法约束自己的失败
#
# 在语法约束下一直写到 token 上限的回复：模型想停下，或者想加上 schema 不允许的东西，语法不让，它只好继续写唯一被允许的内容（数字，或者空白）。

# %%
for size in SIZES:
    runaway = FIG[size].runaway
    print(f"{size}{colon(LANG)}" + t("nb18.said.runaway_constrained_replies_cut", LANG, runaway=runaway))
    for qid, name, args in FIG[size].runaway_first:
        print(f"  {qid}: {name}({args}...)")

# %% [markdown]
# ## 用排行榜自己的评分器再评一次
#
# 上面的每个数字，都来自练习册按规则描述自己写的评分器。排行榜也公开了它自己的评估器 `bfcl-eval`（Apache-2.0）：其中有 AST 评分器、数据，以及多轮类别可执行的环境。不装它声明的依赖（`requirements-bfcl.txt`：七个包，24 MB），它就能在这里给同一批录制评分，分三个角度（`agentlab.evals.bfcl_compare`；做法见 [评估指标](../../docs/zh/metrics.md#the-official-bfcl-checker)）：
#
# 1. **录下的回复，由两个评分器各评一次**：各自给出的单次回答准确率，以及在所有问法的回复上两者判定一致的比例。
# 2. **在每个单轮类别上做探针。** 录制只覆盖四个类别。在数据里每个单轮类别（包括 parallel-multiple 和各个 live 类别）的每道题上，两个评分器都去评标准答案本身，以及对它的系统性改动：调用顺序颠倒、删掉或多加一个参数、改一个值、整数写成浮点数、改成大写、列表截短、函数改名、参数不是 JSON、重复一次调用、不调用。
# 3. **多轮，真正执行。** 一段对话有三到五轮用户消息，面对一到两个有状态的 API（文件系统、交易机器人、旅行预订、汽车、消息应用）。原始循环照排行榜的做法，每一步一条回复，模型写出的调用全部执行；防护循环先按 schema 检查每个调用，用读得懂的错误回应写坏的调用并重问，同一调用重复三次就停下，每轮用户消息有步数预算。官方评分器在每一轮之后，把每个 API 的状态和调用结果与标准答案的相比较。
#
# 同等条件对比：本地模型是 Qwen2.5 0.5B 和 1.5B Instruct 的 Coder 版本（0.5B 量化到 4 位），通过练习册的聊天模板提问（工具列在系统消息里，每个调用是一个 json 代码块），温度为 0。排行榜自己的运行用的是各模型自己的聊天模板（Qwen 的 `<tool_call>` 标签），温度默认 0.001，权重为全精度。所以这几个角度比较的是评分器，不是模型：排行榜的数字放在最后，旁边是按排行榜自己的方式提问得到的回复。

# %%
from agentlab.evals.bfcl_compare import official_results

OFFICIAL = official_results()  # 装了评测器时实时计算，否则用练习册附带的结果
print(OFFICIAL.said(LANG))
for size in OFFICIAL.single:
    print(OFFICIAL.agreement_said(size, LANG))
    display(table_view(pd.DataFrame(OFFICIAL.checker_table(size)).T, percent=["ours", "official", "agreement"], lang=LANG))

# %%
print(OFFICIAL.probes_said(LANG))
table_view(pd.DataFrame(OFFICIAL.probe_table()).T, percent=["agreement"], lang=LANG)

# %% [markdown]
# 两个评分器判定不同的地方，下面逐条列出（列表为空：每条回复两者判定都一致）。

# %%
for size, rows in OFFICIAL.disagreements.items():
    print(size, rows)

# %% [markdown]
# ### 多轮：原始循环对比防护循环
#
# 两种循环用的是基础多轮类别里同一份固定样本，录制（`benchmarks/bench_bfcl_multi_turn.py`）后在这里几秒内回放：环境是确定性的，所以回放能重现每一次运行，官方评分器再评一次。

# %%
for size in SIZES:
    print(OFFICIAL.multi_said(size, LANG))
    if OFFICIAL.multi_table(size):
        display(table_view(pd.DataFrame(OFFICIAL.multi_table(size)).T, percent=["accuracy"], lang=LANG))

# %% [markdown]
# ### 与排行榜的数字并列：按排行榜的方式提问
#
# 排行榜以提示模式列出 Qwen2.5 0.5B 和 1.5B Instruct：不用 tools 字段；它自己的系统提示列出函数，要求把调用写成 Python 列表 `[f(a=1), g(b="x")]`；它自己的解析器解码回复，它的评分器评分。用练习册的模板提问时，模型从没在一条回复里写出两个调用，所以上面的 `parallel` 得了 0%，而排行榜印的是 53.5% 和 70.0%：这是另一场测试，不是模型更差。
#
# 这里把同一份样本按排行榜的方式再问一遍（`agentlab.evals.bfcl_prompting`：提示和解码器都从 `bfcl-eval` 导入；Qwen 自己的对话格式；贪心解码），由 `benchmarks/bench_bfcl_prompting.py` 录制，再由两个评分器评分。容差先说在前面：排行榜公布的数字落在原始回复准确率的 95% 区间（Wilson 区间）之内，这个类别才算复现了排行榜。只有在这些类别里，下面那行才会说防护的重问带来多少。其余的差别都写明：本地模型是 Coder 版本，0.5B 量化到 4 位，跑在 llama.cpp 上；排行榜跑的是全精度的 Instruct 模型，用的是第 3 版题目。没有公开的表格给出同一批题目的数字时（0.5B 只含 Python 的 `simple`、它的非 live `irrelevance`），排行榜一列留空，不做比较。这些录制少了排行榜提示里的一句话：它在每个函数描述的末尾注明该函数是 Python 3 语法。

# %%
from agentlab.evals.bfcl_prompting import prompting_results

LEADERBOARD = prompting_results()  # 评测器和题目都在时实时计算，否则用附带的结果
print(LEADERBOARD.said(LANG))
for size in SIZES:
    print(LEADERBOARD.verdict_said(size, LANG))
    if LEADERBOARD.table(size):
        display(table_view(pd.DataFrame(LEADERBOARD.table(size)).T, lang=LANG))

# %% [markdown]
# ## 练习
#
# 对 0.5B 模型来说：和单次回答相比，校验后重问消除得最多的是哪一类失败？从上面的表里读出来，用表里对这一类的叫法作答（写 `bfcl.KINDS` 里的键也可以）。

# %%
my_answer = None  # 一个失败种类，比如 "wrong_value"
print(most_repaired_kind(my_answer, FIG["0.5b"], lang=LANG))

# %% [markdown]
# ## 动手：什么时候该重问
#
# 重问模式在每条回复被拒之后都会重问，最多两次。每一次重问都值得多花那一轮吗？先预测：模型回应重问时，如果把刚被拒绝的调用
# 原样发回，下一次重问有多大可能换回一个能通过检查的调用？然后写出 `my_reask(refused)`。它拿到同一道题里到目前为止被检查
# 拒绝的回复，按先后排列，每个形如 `{"calls": [{"name": ..., "arguments": ...}], "errors": [...]}`（`errors` 是模型读到的
# 错误，每个都带着 `code`），返回 `True` 表示重问，返回 `False` 表示停下、把失败交给后面处理。检查会让两个模型录下的每一次
# 重问都经过你的判断：换回了通过检查的调用的重问一次都不能少，而对没有读懂错误的模型要停止重问。

# %%
from agentlab.workbook.builds_repair import reask_policy_holds


def my_reask(refused):
    return None  # True：重问；False：停下


print(reask_policy_holds(my_reask, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 每个问题用三种方式发出：单次作答、经防护循环重问、在语法约束下作答。
# - 并行和无关两类的数字，有一部分是模板的措辞决定的。
# - 违反契约的失败可以预防；调用了真实存在的函数却填错了值，语法约束和 schema 检查都看不出来。
# - 在语法约束下，本想停下的回复会一直写数字或空白，直到 token 上限。
# - 只有模型读懂了错误，重问才有用：把被拒调用原样发回的模型，再试一次也修不好，循环可以就此停下。
#
# **下一步：** [19 · 把防护带回你的框架](19_take_the_guards_home.ipynb)。配合阅读：[防护手册](../../docs/zh/guards.md)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

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
# # 19 · 把防护带回你的框架
#
# 学完这本练习册，你还是要回到某个智能体框架里干活。用同一批脚本化的故障去测，Python 里最常用的几个智能体框架都会把重复发来的退款执行两次，把 5 次相同的查询执行 5 次，工具抛出的异常（里面带着数据库的 DSN）要么直接冲出整次运行，要么被藏在一句模型无从下手的笼统话后面。这些框架的维护者说过：不能执行两次的工具，是用户自己的事。这本笔记本讲的就是这件"用户自己的事"：在你已经在用的技术栈里，只加一行，就把这些防护留下来（见 [docs/zh/guards.md](../../docs/zh/guards.md#guards-in-other-frameworks)）。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 用一行代码给 pydantic-ai、OpenAI 的 Agents SDK 或 LangGraph 的工具加上防护
# - 把写操作的键绑定到会话上，让重启后的进程不会再执行一次
# - 用网关把防护放到线路上，供任何 MCP 客户端使用
#
# **先修：** [05 · 副作用：退款只退一次（幂等）](05_side_effects.ipynb)、[06 · 停不下来的循环](06_loops_that_never_end.ipynb)。
#
# **用时：** 约 30 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import pandas as pd

from agentlab.adapters.compare import FAULTS, compare, table
from agentlab.i18n import colon, label, t
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import table_view

LANG = "zh"  # 改成 "en" 就是英文版


def as_frame(rows: list) -> pd.DataFrame:
    """把各行的表格（compare.table，已经是 LANG 的语言）做成 DataFrame，每个框架附上它的版本。"""
    head, _, *body = [[cell.strip() for cell in line.strip("|").split(" | ")]
                      for line in table(rows, lang=LANG).splitlines()]
    frame = pd.DataFrame(body, columns=head)
    frame[head[0]] = [r.version for r in rows]
    return frame

# %% [markdown]
# ## 只加一行
#
# 工具都是普通的 Python 函数，每个框架用的都是同一批：`refund`（写操作：它会动钱）、`lookup`（查询）、`report`（它的数据库挂了：抛出的异常消息里带着 DSN）和 `quote`（一个承运商的 API，第一次会回 429，带 `Retry-After: 2`）。工具本身一行都不改。每个框架要加的那一行：
#
# ```python
# # pydantic-ai：在智能体已有的工具集外面包一层
# toolset = guard_toolset(FunctionToolset(tools), writes={"refund"})
# # OpenAI Agents SDK：把它的函数工具包一层；运行配置让"工具不存在"的错误回到模型那里
# tools = guard_function_tools(tools, writes={"refund"}); config = tools.run_config(RunConfig())
# # LangGraph：预置智能体的 ToolNode，加一个拦截器
# agent = create_react_agent(llm, guard_tools(tools, writes={"refund"}))
# ```
#
# 框架唯一不会告诉你的，是哪些工具会改变外部世界，这就是 `writes`。其余的都是算出来的：契约来自每个工具的函数签名；幂等键由这次运行、工具名和规范化后的参数算出，绝不让模型来填。

# %% [markdown]
# ## 同一个故障，在每个框架里，加那一行之前和之后
#
# 每个故障都是一个脚本化的模型，放在项目自带的测试服务器后面（在 127.0.0.1 上讲 OpenAI 的 chat API），驱动每个框架真正的智能体循环：先不加那一行跑一次，再加上跑一次。没有任何真的等待：适配器的 sleep 是注入的，只记录下来。✓ 表示这次运行做到了练习册要求的事。

# %%
rows = compare(fill=True)  # 这台机器上没装的框架：用上次测量时的行，并注明版本
print("\n".join(sorted({f"{r.version}{colon(LANG)}{label('recorded, not installed here' if r.recorded else 'measured here', LANG)}" for r in rows})))
table_view(as_frame(rows), lang=LANG)

# %% [markdown]
# 横着读每一行：退款先是执行了两次，加上之后只执行一次（第二次调用重放了第一次的结果）；5 次查询先是执行了 5 次，加上之后只执行两次（第三次相同的调用被重复调用熔断器拦下）。带 DSN 的异常在 pydantic-ai 和 LangGraph 里直接终止了整次运行；Agents SDK 接住了它，却只告诉模型一句笼统的话。加上那一行之后，它变成模型能读懂的结构化 `TOOL_ERROR`，DSN 只留在追踪记录里，而且已脱敏。429 在两个框架里终止了运行，在第三个框架里则再也没有重发；加上之后，按服务要求等了 2 秒再重发。模型编出来的工具名会让 SDK 的运行直接抛出异常；加上之后，模型会被告知实际有哪些工具。
#
# 加上适配器以后，在 DSN 这个故障里模型读到的内容。这一列是英文原样：每个框架都按英文测量（没装在这台机器上的框架，
# 它的行是上次测量时保存下来的），表里照录模型当时读到的原文，不做翻译。

# %%
table_view(pd.DataFrame([{"framework": r.version, "the model read": r.with_.told[0] if r.with_.told else "-"}
                         for r in rows if r.fault == "secret_in_error"]), lang=LANG)

# %% [markdown]
# ## 重启就是一次重试：写操作的键要绑定会话
#
# 最常见的重试不是模型发起的：调用方的进程在写入之后死掉，被重新拉起，再发一次同一轮请求。认领还在一个比进程活得久的
# 存储里（这里是 SQLite 文件；多台机器时是 Redis），但没有业务键的写操作（一条备注、一次回电）以*同一会话内*的参数为键，
# 所以键里有会话 id，而重启后它必须不变。每个适配器都取框架自己保存的那个 id：LangGraph 的 `thread_id`、pydantic-ai 的
# `conversation_id`、Agents SDK 的 `group_id`（见 [docs/zh/guards.md](../../docs/zh/guards.md#idempotency-across-restarts)）。下面把每个适配器都用的那个
# 防护调用两次，就像两个进程那样：备注只写一次，重启后的调用方听到的是第一次的结果（重放）。

# %%
from agentlab.adapters.core import Contract, Guard
from agentlab.errors import UsageError
from agentlab.scratch import scratch_folder

claims = f"sqlite:///{scratch_folder() / 'claims.db'}"  # 一个文件：比进程活得久的存储，和 Redis 一样
note = Contract("note", "Add a note to an order's file.", {
    "type": "object", "properties": {"order_id": {"type": "string"}, "text": {"type": "string"}},
    "required": ["order_id", "text"]})
args, written, told = {"order_id": "A1", "text": "call back after 6 pm"}, [], []
for process in (1, 2):  # 调用方，然后是重启后的同一个调用方：每次都是新的防护，存储只有一个
    guard = Guard("langgraph", writes={"note"}, store=claims, lang=LANG)
    out = guard.call([note], "note", args, lambda a: written.append(a) or {"noted": a["order_id"]},
                     conversation="thread-42")  # LangGraph 交过来的东西：config["configurable"]["thread_id"]
    told.append({"process": process, "the model read": out.content})
print(f"{len(written)} ×", t("nb19.said.the_note_was_written", LANG))
table_view(pd.DataFrame(told), lang=LANG)

# %% [markdown]
# 如果没有能撑过重启的 id（调用图时没给 `thread_id`），防护不会临时编一个：写操作在运行之前就被拒绝，错误信息说明该传
# 什么。这个错误是抛给你这位开发者的，从不告诉模型。（在进程自己的存储 `memory:` 上，临时 id 不会造成损失：重启连存储
# 一起丢了。）

# %%
try:
    Guard("langgraph", writes={"note"}, store=claims, lang=LANG).call([note], "note", args, written.append)
except UsageError as exc:
    print(exc)
print(f"{len(written)} ×", t("nb19.said.the_note_was_written", LANG))

# %% [markdown]
# ## 任意 MCP 服务器、任意 MCP 客户端：网关
#
# 如果智能体不归你包装，就把防护放到线路上：`python -m agentlab gateway --upstream URL_OR_COMMAND` 把一个 MCP 服务器的工具提供给任意 MCP 客户端，中间加上同样的防护（见 [docs/zh/site.md](../../docs/zh/site.md#the-guarded-mcp-gateway)）。这里全在内存里跑：一个小小的 FastMCP 服务器，有一个会动钱的退款工具；客户端把同一笔退款发两次，再发一次金额写错类型的。

# %%
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

from agentlab.site.gateway import Gateway
from agentlab.site.mcp_client import MCPConnection

shop, refunds = FastMCP("shop", log_level="WARNING"), []  # 否则 SDK 会以 INFO 级别记录每个请求


@shop.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=False))
def refund(order_id: str, amount: float) -> dict:
    """退还订单的一部分金额。"""
    refunds.append((order_id, amount))
    return {"refunded": amount, "order_id": order_id}


gateway = Gateway(shop._mcp_server, lang=LANG)  # SDK 的底层服务器，在内存里运行；用 URL 或命令也可以
client = MCPConnection(gateway.server())
sent = [{"order_id": "A1", "amount": 30}, {"order_id": "A1", "amount": 30}, {"order_id": "A1", "amount": "thirty"}]
results = [client.run(client.session.call_tool("refund", args)) for args in sent]
table_view(pd.DataFrame([{"call": str(args), "isError": r.isError, "replayed": (r.meta or {}).get("agentlab/replayed"),
                          "the client read": r.content[0].text} for args, r in zip(sent, results)]), lang=LANG)

# %%
print(f"{label('refunds upstream', LANG)}{colon(LANG)}{len(refunds)}")
client.close()
gateway.close()

# %% [markdown]
# ## 练习
#
# 有一种故障，`openai-agents` 不用适配器也处理住了，而 pydantic-ai 和 LangGraph 却让它冲出了整次运行。是哪一种？用它的名字作答，从这几个里选：`duplicate_refund`、`repeated_reads`、`secret_in_error`、`unknown_tool`、`rate_limited`。再看看那一行里模型读到了什么：凭这些它知道该怎么办吗？

# %%
from agentlab.workbook.builds_systems import handled_without_adapter

my_answer = None  # 一个故障的名字
print(handled_without_adapter(my_answer, rows, FAULTS, lang=LANG))

# %% [markdown]
# ## 动手：告诉防护哪些是写操作
#
# `writes` 是你唯一要告诉适配器的东西。这里某个框架的智能体有三个工具：`refund(order_id, amount)` 会动钱，
# `lookup(order_id)` 查询订单状态，`note(order_id, text)` 往订单档案里加一条备注。写出 `my_writes`：会改变外部世界的工具，
# 可以是列表，也可以是 dict，把每个工具对应到它的业务键（参数的函数，标识这个意图，例如 `lambda args: args["order_id"]`）
# 或 `None`（同一会话内的全部参数）。先预测：如果写成 `["refund", "note"]`，调用方重启、丢了线程 id 之后重试退款，会怎样？
# 检查会让每次调用都经过一个新的防护、共用一个比进程活得久的存储：同一线程里同样的退款两次（应执行一次）、同一订单换了金额再退一次（一次）、从新线程重试
# （一次）、同一线程里同样的备注两次（一次）、两个线程里同样文字的备注（两次）、退款前后各查一次状态（查两次）、给两个不同订单退款（两次）。

# %%
from agentlab.workbook.builds_frameworks import guard_wired

my_writes = None  # 哪些工具会写，比如 ["a_tool"]，或者 {"a_tool": lambda args: ..., "another": None}
print(guard_wired(my_writes, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 不加这一行时，各框架把重复的退款执行了两次，五次相同的读取执行了五次。
# - 加上之后，工具的异常变成模型能读懂的结构化 `TOOL_ERROR`，DSN 只留在轨迹里并且已脱敏。
# - 429 按服务要求的 `Retry-After` 等待后重发。
# - 没有可跨重启保留的会话 id 时，写操作在执行前就被拒绝，错误提示写给开发者。
#
# **下一步：** 这是练习册的最后一本：把防护带进你自己的技术栈。配合阅读：[防护手册](../../docs/zh/guards.md#guards-in-other-frameworks)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

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
# # 16 · 走出单个进程：多副本与 MCP
#
# 内存里的一个字典，或者一个 SQLite 文件，只能守住一个进程（见 [防护手册：跨进程的幂等](../../docs/zh/guards.md#idempotency-across-processes)）；多副本部署需要一个共享的幂等存储（Redis 的 `SET NX`），否则落到另一个副本上的重试就会退两次款。另外，工具生态现在讲的是 MCP（模型上下文协议，`Model Context Protocol`）：技能站的技能在 `/mcp` 上就是一个 MCP 服务器，而循环可以带着全部防护去用任何 MCP 服务器的工具（见 [docs/zh/site.md](../../docs/zh/site.md#mcp)）。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 说明为什么每个副本各自保存幂等声明会退两次款，以及一个共享 Redis 如何解决
# - 通过 MCP 使用技能站的技能：注解来自元数据，写操作的键放在 `_meta` 里
#
# **先修：** [15 · 技能站：通过 HTTP 提供工具](15_skill_site.ipynb)。
#
# **用时：** 约 30 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import json

import pandas as pd

from agentlab import run_guarded
from agentlab.i18n import label, t
from agentlab.models import ScriptedModel, call, say, tool_calls
from agentlab.scratch import scratch_folder
from agentlab.site.mcp_client import MCPConnection
from agentlab.site.service import SkillSite
from agentlab.site.serving import serving
from agentlab.workbook.plots import table_view
from agentlab.workbook.tether import notebook_redis
from agentlab.workbook.exercises import answer_is

LANG = "zh"  # 改成 "en" 就是英文版
data = scratch_folder("replicas-")  # 内核结束时删除
refund = json.dumps({"arguments": {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}}).encode()

# %% [markdown]
# ## 两个副本，各用各的 SQLite 文件：退了两次款
#
# 负载均衡后面有两个技能站进程，它们共用密钥库（`keys.db`），但各自把幂等记录存在自己的文件里。智能体把退款请求发到副本 A；响应丢了；它带着同一个 Idempotency-Key 的重试落到了副本 B。每个副本的售后台，代表的就是那个副本发出的支付调用。

# %%
def replicas(store_a: str, store_b: str) -> tuple[SkillSite, SkillSite]:
    return SkillSite(data, store=store_a), SkillSite(data, store=store_b)


def refund_twice(a: SkillSite, b: SkillSite, key: str, key_id: str) -> pd.DataFrame:
    rows = []
    for name, site in (("A", a), ("B (the retry)", b)):
        reply = site.execute("create_refund", refund, api_key=key, idempotency_key="refund-A1001", session_id="nb16")
        rows.append({"replica": name, "status": reply.status, "Idempotent-Replayed": reply.headers.get("Idempotent-Replayed"),
                     "refunds this replica made": len(site.state_for(key_id)["aftersales"].snapshot()["refunds"])})
    return pd.DataFrame(rows)


a, b = replicas(f"sqlite:///{data}/claims-a.db", f"sqlite:///{data}/claims-b.db")
key, agent = a.create_key("agent", ["*"])
sqlite_table = refund_twice(a, b, key, agent.id)
table_view(sqlite_table, lang=LANG)

# %% [markdown]
# 一次退款意图，退了两笔：副本 B 从没见过这个幂等键。
#
# ## 两个副本共用一个 Redis：只退一次
#
# 还是这两个副本，改成 `store="redis://..."`：用 `SET NX` 登记的幂等记录是共享的，于是 B 直接重放 A 记下的响应，什么也不执行。这一格会临时起一个 `redis-server`，它只监听一个只有你的账号能打开的套接字（不开网络端口：在共享的 Hub 上别人连不到它）（Debian 的 `redis-server` 软件包），供本笔记本余下部分使用：按中断按钮不会停掉它，内核结束时它随之退出，内核被重启也一样；没有它的话，这一格会说明原因并跳过。它按技能站要求的方式启动：每次写入都先落盘再应答（`--appendonly yes --appendfsync always`），这样崩溃后也不会忘掉已登记的幂等记录、让重发的请求再退一次款；不满足这一点的 Redis，技能站会拒绝使用。

# %%
redis = notebook_redis(data, LANG)  # 随这个内核一起结束，内核重启也一样；没有的话是 None（并说明原因）
if redis is not None:
    redis_url = redis.url
    ra, rb = replicas(redis_url, redis_url)
    display(table_view(refund_twice(ra, rb, key, agent.id), lang=LANG))

# %% [markdown]
# ## 通过 MCP 调用同一批技能
#
# 技能站的应用在 `/mcp` 上以 streamable HTTP 提供 MCP。工具列表里带着从元数据生成的注解：查询类是只读的；写操作是破坏性的，同时（在同一个幂等键下）是幂等的，`_meta` 里还写明了幂等键由哪些字段生成。

# %%
site = SkillSite(data / "mcp", store=redis_url) if redis is not None and redis.running else SkillSite(data / "mcp")
mkey, mcp_agent = site.create_key("mcp-agent", ["get_order", "search_orders", "create_refund", "escalate_to_human"])
stack = serving(site)
url = stack.__enter__()  # 在笔记本末尾停止
conn = MCPConnection(url + "/mcp", headers={"X-API-Key": mkey, "X-Session-Id": "nb16-mcp", "Accept-Language": LANG})
listed = conn.run(conn.session.list_tools())
table_view(pd.DataFrame([{"tool": t.name, "readOnly": t.annotations.readOnlyHint,
                          "destructive": t.annotations.destructiveHint, "idempotent": t.annotations.idempotentHint,
                          "key from": (t.meta or {}).get("agentlab/idempotency"), "output schema": bool(t.outputSchema)}
                         for t in listed.tools]), lang=LANG)

# %% [markdown]
# 防护循环通过 MCP 来跑售后台：循环在发出任何请求之前先做校验，算出退款的幂等键，客户端把它放进这次调用的 `_meta`；技能站的拒绝（退款金额超过订单金额）以 `isError` 结果返回，采用 agentlab 的错误格式，模型读到的内容和在进程内调用时一样。

# %%
reg = conn.registry(lang=LANG)
script = [tool_calls(call("get_order", {"order_id": "A1001"})),
          tool_calls(call("create_refund", {"order_id": "A1001", "amount": 99999, "reason": "user_cancel"})),
          tool_calls(call("create_refund", {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"})),
          say(t("nb16.said.refunded_yuan_for_a", LANG))]
run = run_guarded(ScriptedModel(script), reg, t("nb16.said.refund_a", LANG), lang=LANG)
refunds = len(site.state_for(mcp_agent.id)["aftersales"].snapshot()["refunds"])
colon = {"en": ": ", "zh": "："}[LANG]
print(f"{label('status', LANG)}{colon}{label(run.status, LANG)} | {label('refunds on the site', LANG)}{colon}{refunds}")
table_view(pd.DataFrame([{"call": e.args_raw, "result": e.error_code or "done", "the model read": e.model_visible or ""}
                         for e in run.tool_events]), lang=LANG)

# %% [markdown]
# 重试：响应丢失后，客户端在 `_meta` 里带着同一个幂等键重发，技能站直接重放，什么也不执行。

# %%
args = {"order_id": "A1005", "amount": 19.9, "reason": "user_cancel"}
tries = [conn.run(conn.session.call_tool("create_refund", args, meta={"agentlab/idempotency_key": "refund-A1005"}))
         for _ in range(2)]
table_view(pd.DataFrame([{"attempt": i + 1, "isError": r.isError, "replayed": (r.meta or {}).get("agentlab/replayed"),
                          "result or error": json.dumps(r.structuredContent, ensure_ascii=False)} for i, r in enumerate(tries)]),
           lang=LANG)

# %%
conn.close()
stack.__exit__(None, None, None)
if redis is not None:
    redis.stop()

# %% [markdown]
# ## 练习
#
# MCP 本身没有幂等键。agentlab 的技能站从 `tools/call` 请求的哪个字段读取写操作的幂等键？（填字段名，写法和 JSON 里一致）

# %%
from agentlab.workbook.builds_systems import meta_field

my_answer = None  # 一个字段名
print(meta_field(my_answer, lang=LANG))

# %% [markdown]
# ## 动手：作用范围对了，两个副本只退一次款
#
# 共享存储能让副本 B 回放 A 记录下的结果，但前提是用**同一个**键。这个键由循环计算，而不是模型。写出
# `my_key(args, session_id)`：它返回一个字符串，站点把它当作 `Idempotency-Key` 请求头（1 到 200 个可打印的 ASCII 字符，
# 所以不能含中文）。先预测：如果键由会话 id 加全部参数组成，智能体重启后在新会话里重试会怎样？检查会发出两次
# 退款调用，一次到副本 A、一次到副本 B，两者共享一个占用存储，分四种情况：响应丢失后在同一会话里重试（应退一次），
# 智能体重启后换了会话 id 再重试（一次），同一会话里给两个不同订单退款（两次），模型重试时把备注换了说法（一次）。

# %%
from agentlab.workbook.builds_site import key_scope_holds


def my_key(args, session_id):
    """循环随退款一起发送的幂等键：args 是这次退款的参数，session_id 是这段对话的编号。"""
    return None  # 你的代码：一个字符串


print(key_scope_holds(my_key, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 落到副本 B 上的重试又退了一次款：B 从没见过这个键。
# - 共享 Redis（`SET NX`，每次写入先落盘再应答）之后，B 回放了 A 的回复，什么都没执行。
# - 防护循环通过 MCP 运行售后助手；站点的拒绝以 agentlab 错误格式的 `isError` 结果返回。
# - 客户端在 `_meta` 里带同一个键重试，得到的是回放。
#
# **下一步：** [17 · 探测你自己的工具](17_probe_your_tools.ipynb)。配合阅读：[技能站](../../docs/zh/site.md#mcp)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

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
# # 15 · 技能站：通过 HTTP 提供工具
#
# 思路（见 [docs/zh/site.md](../../docs/zh/site.md)）：模型只负责*做决定*，由技能站来*执行、校验和记录*。每个工具都是一个技能，带着写给模型看的元数据，挂在一套 HTTP 契约后面，有密钥、配额、限流、幂等键和日志。这里在笔记本后台跑一个技能站（真正部署时用 `python -m agentlab site`），防护循环通过 `site_registry` 来用它。
#
# 在 hub 上的工作坊里，全场共用一个技能站，每人有自己的密钥：下面“发现技能”一节问的就是这个共用站（你的调用、占用记录和配额都只属于你）。后面几节要关掉数据源、读取站点的文件，只有自己的站点才允许这样做，所以用的是这里启动的站点。

# %% [markdown]
# **学完本笔记本，你能：**
#
# - 把工具作为技能通过 HTTP 提供，带密钥、配额、限流、幂等键和日志
# - 用技能站的搜索找出一轮需要的几个技能，而不是全部塞给模型
# - 读懂循环据以行动的站点回复：回退提示、回放的写操作、带 `Retry-After` 的 429
#
# **先修：** [05 · 副作用：退款只退一次（幂等）](05_side_effects.ipynb)、[13 · tool_choice 与动态路由](13_tool_choice_and_routing.ipynb)。
#
# **用时：** 约 40 分钟（阅读、运行、查找题和动手练习；测量方法见[课程与路径](../../docs/zh/course.md#how-the-times-were-measured)）。

# %%
import json
from contextlib import ExitStack

import httpx
import matplotlib.pyplot as plt
import pandas as pd

from agentlab import run_guarded
from agentlab.evals.discovery_eval import discovery_cassette, replay_discovery
from agentlab.evals.routing_eval import figures
from agentlab.i18n import aside, colon, joined, label, t
from agentlab.models import ScriptedModel, call, say
from agentlab.site.client import discovery_site, site_registry
from agentlab.site.service import SkillSite
from agentlab.scratch import scratch_folder
from agentlab.site.serving import serving
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import cjk_fonts, plot_bars, table_view

LANG = "zh"  # 改成 "en" 就是英文版
data = scratch_folder("skill-site-")  # 内核结束时删除
site = SkillSite(data)
key, _ = site.create_key("notebook_key", ["*"])
stack = ExitStack()  # 站点在笔记本末尾停止
url = stack.enter_context(serving(site))
http = httpx.Client(base_url=url, headers={"X-API-Key": key, "Accept-Language": LANG})
# 在工作坊的 hub 里，发现功能用教室共享的站点和你自己的密钥；在别处
# （或者教室的站点没有应答时，它会说明）用上面那个站点
room_url, room_key, note = discovery_site(url, key, lang=LANG)
if note:
    print(note)
room_http = httpx.Client(base_url=room_url, headers={"X-API-Key": room_key, "Accept-Language": LANG})
shared = len(room_http.get("/api/skills").json()["skills"])
print(t("nb15.said.site", LANG, n=len(site.skills), url=url, room_url=room_url, shared=shared))

# %% [markdown]
# ## 按需发现，而不是全部注入
#
# `GET /api/skills` 列出所有技能；`GET /api/skills/search?q=...&k=6` 只返回匹配的几个，并附上得分。下面对比模型每轮要读的内容：全部技能，和搜索结果的前 6 个：

# %%
asks = [t(f"nb15.ask.{i}", LANG) for i in range(1, 5)]
every = site_registry(url, key, lang=LANG)  # 这个笔记本自己的站点：下面几节会改它的文件
offered = site_registry(room_url, room_key, lang=LANG)
rows = []
for ask in asks:
    found = room_http.get("/api/skills/search", params={"q": ask, "k": 6}).json()["results"]
    top = site_registry(room_url, room_key, query=ask, k=6, lang=LANG)
    rows.append({"ask": ask, "top skills (score)": joined((r["skill_name"] + aside(f"{r['score']:.1f}", LANG)
                                                            for r in found[:3]), LANG, "list"),
                 "all: spec chars": len(json.dumps(offered.specs(), ensure_ascii=False)),
                 "top 6: spec chars": len(json.dumps(top.specs(), ensure_ascii=False))})
discovery = pd.DataFrame(rows)
table_view(discovery, lang=LANG)

# %%
with cjk_fonts():
    plot_bars({row["ask"]: {"all: spec chars": row["all: spec chars"], "top 6: spec chars": row["top 6: spec chars"]}
               for row in discovery.to_dict("records")}, ylabel="spec characters the model reads", lang=LANG)
    plt.show()

# %% [markdown]
# 这对真实的小模型有什么影响：本地 0.5B 和 1.5B 模型，在记账意图上每条请求跑一轮（中英文请求都有），分别提供录制时技能站的全部技能（19 个：网页正文技能是后来才加的，“每轮工具数”一列可以看到）和搜索结果前 6 个（由 `python benchmarks/bench_discovery_local.py` 录制，这里直接回放，不需要运行模型）。

# %%
rows = []
for size in ("0.5b", "1.5b"):
    tape = discovery_cassette(size)
    if not tape.exists():
        print(f"{size}{colon(LANG)}{label('not recorded on this machine', LANG)}")
        continue
    for mode, turns in replay_discovery(tape).items():
        rows.append({"model": size, "skills offered": "every skill, as recorded" if mode == "all" else "search top 6", **figures(turns)})
table_view(pd.DataFrame(rows)[["model", "skills offered", "turns", "right_tool_rate", "invalid_call_rate",
                                "tools_per_turn", "prompt_tokens", "hit_rate"]], lang=LANG) if rows else None

# %% [markdown]
# ## 数据源宕机：降级提示
#
# 天气技能的实时数据源被关掉了。技能站返回一个结构化错误，其中的 `fallback_hint` 告诉模型可以怎么办；模型于是改要缓存值，返回的结果会标明这是什么时候测得的。

# %%
# 先把数据源恢复（之前运行这个单元格时把它关掉了），再把缓存填上
(data / "weather_source.json").unlink(missing_ok=True)
run_guarded(ScriptedModel([call("current_weather", {"city": "Beijing"}), say("ok")]), every, "warm the cache",
            sleep=lambda s: None)  # 这次运行的结果没人看：它只是把站点的缓存填满
(data / "weather_source.json").write_text(json.dumps({"mode": "down"}))
run = run_guarded(ScriptedModel([call("current_weather", {"city": "Beijing"}),
                                 call("current_weather", {"city": "Beijing", "allow_cached": True}),
                                 say(t("nb15.said.beijing_is_cloudy_c", LANG))]),
                  every, t("nb15.said.what_s_the_weather", LANG), sleep=lambda s: None,
                  lang=LANG)
table_view(pd.DataFrame([{"call": e.args_raw, "error": e.error_code, "the model read": e.model_visible}
                         for e in run.tool_events]), lang=LANG)

# %% [markdown]
# ## 响应丢失，幂等键不变
#
# 一个写操作技能负责发邮件。响应在返回途中丢了，于是客户端带着**同一个** `Idempotency-Key`（由循环计算，从不让模型来定）把同样的请求再发一次。技能站只执行一次，第二次直接重放记录下来的结果；不带幂等键的写请求会被 428 拒绝。

# %%
note = {"arguments": {"to": "customer@example.com", "subject": "Refund", "body": "Your refund of 199 yuan is on its way."}}
# 这次运行自己的键：重跑这个单元格时，它会再发一次邮件，而不是找到上一次运行的结果
outbox_file = data / "outbox.jsonl"
sent_before = len(outbox_file.read_text(encoding="utf-8").splitlines()) if outbox_file.exists() else 0
key = f"refund-A1001-{sent_before}"
replies = [http.post("/api/skills/send_notification/execute", json=note, headers={"Idempotency-Key": key})
           for _ in range(2)]
replies.append(http.post("/api/skills/send_notification/execute", json=note))
outbox = outbox_file.read_text(encoding="utf-8").splitlines()[sent_before:]  # 这次运行的
table_view(pd.DataFrame(
    [{"attempt": i + 1, "status": r.status_code, "Idempotent-Replayed": r.headers.get("Idempotent-Replayed"),
      "message_id": (r.json().get("result") or {}).get("message_id")} for i, r in enumerate(replies)]
    + [{"attempt": "e-mails sent", "status": len(outbox)}]), lang=LANG)

# %% [markdown]
# ## 循环眼中的 429：限流与配额
#
# 给一个密钥每天只有两次调用的配额。第三次调用收到 `429`，带着 `Retry-After`（要等到明天）；这么长的等待不会硬等下去：客户端把它作为 `RATE_LIMITED` 交给循环，模型读到的是一个说明何时再来的结构化错误，而不是一个光秃秃的状态码。

# %%
small, _ = site.create_key("tiny_quota", ["current_weather"], quota=2)
tiny = site_registry(url, small, lang=LANG, max_wait=0)
(data / "weather_source.json").write_text(json.dumps({"mode": "ok"}))
run = run_guarded(ScriptedModel([call("current_weather", {"city": c}) for c in ("Beijing", "Shanghai", "Hangzhou")]
                                + [say(t("nb15.said.done", LANG))]), tiny,
                  t("nb15.said.three_cities", LANG), sleep=lambda s: None, lang=LANG)
table_view(pd.DataFrame([{"call": e.args_raw, "result": e.error_code or "done", "resent": e.retry_count,
                          "the model read": e.model_visible} for e in run.tool_events]), lang=LANG)

# %% [markdown]
# ## 调用日志
#
# 日志有四个 JSONL 文件：访问、调用、错误（带堆栈，只给运维看）和审计。每一行都带请求 id；调用方发送了会话 id（`X-Session-Id`）时，也会记下智能体的会话 id。`site_registry` 每次都会发送，所以防护循环发出的每个调用都有会话 id。上面那几封邮件是直接用 `httpx` 手动发的，没有智能体也没有会话，所以这些行没有会话 id（显示为 `-`）：日志只记录实际在场的是谁，不会凭空编一个会话出来。密钥和其他机密信息从不出现在日志里。

# %%
calls = pd.DataFrame(site.logs.read("call"))
shown_log = calls[["skill", "status", "replayed", "latency_ms", "key_name", "session_id"]].tail(8)
without = shown_log[shown_log.session_id.isna()]
print(t("nb15.said.without_session", LANG, n=len(without), total=len(shown_log),
        skills=joined(sorted(set(without.skill)), LANG, "list") or t("nb15.said.none", LANG)))
table_view(shown_log, lang=LANG)

# %%
leaked = any(key in p.read_text(encoding="utf-8") for p in (data / "logs").glob("*.jsonl"))
print(label("the notebook's key appears in a log", LANG) + colon(LANG) + label("yes" if leaked else "no", LANG))
http.close()
room_http.close()
stack.close()

# %% [markdown]
# ## 练习
#
# 技能站没有执行技能、而是重放了记录下来的结果时，用哪个响应头告诉客户端？

# %%
from agentlab.workbook.builds_systems import replay_header

my_answer = None  # 一个请求头的名字
print(replay_header(my_answer, lang=LANG))

# %% [markdown]
# ## 动手：经得起技能自己用例检验的 schema
#
# 技能运行之前，站点会先用它的输入 schema 检查参数：schema 放过的，技能就会发出去。`draft` 是通知技能 schema 的初稿。
# 技能旁边的 `cases.jsonl` 写明了应该得到什么：退款确认邮件、只有一个字符的主题和 120 个字符的主题（允许的最长长度）照常发送；121 个字符的主题、没有域名的地址、空的正文、
# 技能不接受的字段，都要以 `422` 拒绝，并指出是哪个字段。先预测：`draft` 能通过这七个用例里的几个？然后写出
# `my_schema`。检查会把它装到技能上，在一个新站点上跑完所有用例，并说出仍然失败的用例。

# %%
from agentlab.workbook.builds_site import draft_schema, skill_schema_holds

draft = draft_schema(LANG)
my_schema = None  # 你的 schema：从 draft 的一份拷贝开始改
print(skill_schema_holds(my_schema, lang=LANG))

# %% [markdown]
# ## 回顾
#
# - 模型只做决定；技能站负责执行、检查和记录。
# - 数据源宕机时，站点返回 `fallback_hint`，模型转而请求缓存值。
# - 回复丢失后带同一个 `Idempotency-Key` 重发只执行一次；不带键的写操作得到 428。
# - 调用日志的四个 JSONL 文件里，每行都带请求 id，调用方发送会话 id 时也带上它。
#
# **下一步：** [16 · 走出单个进程：多副本与 MCP](16_replicas_and_mcp.ipynb)。配合阅读：[技能站](../../docs/zh/site.md)；全部学习路径：[课程与路径](../../docs/zh/course.md)。

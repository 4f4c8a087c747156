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
# # 16 · Beyond one process: replicas and MCP
#
# An in-memory dict, or one SQLite file, guards one process (docs/guards.md#idempotency-across-processes); replicas need a shared
# store (Redis `SET NX`) or a retry that lands on another replica refunds twice. And the tool ecosystem
# now speaks MCP (Model Context Protocol): the site's skills are an MCP server at `/mcp`, and the loop can use any MCP
# server's tools with every guard (docs/site.md#mcp).

# %% [markdown]
# **After this notebook you can:**
#
# - show why idempotency claims kept per replica refund twice, and how one Redis fixes it
# - use the site's skills through MCP, with annotations from their metadata and the write's key in `_meta`
#
# **Before it:** [15 · The skill site: tools over HTTP](15_skill_site.ipynb).
#
# **Time:** about 30 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

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

LANG = "en"  # "zh" for 中文
data = scratch_folder("replicas-")  # removed when the kernel ends
refund = json.dumps({"arguments": {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}}).encode()

# %% [markdown]
# ## Two replicas, each with its own SQLite file
#
# Two site processes behind a load balancer share the keys (`keys.db`) but each keeps its idempotency claims in its
# own file. The agent sends the refund to replica A; the reply is lost; its retry, with the same Idempotency-Key,
# lands on replica B. Each replica's desk stands for the payment call that replica makes.

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
# Two refunds for one intent: replica B had never seen the key.
#
# ## One Redis for both
#
# The same two replicas with `store="redis://..."`: the claim `SET NX` is shared, so B replays A's recorded reply and
# runs nothing. A throwaway `redis-server` (Debian's `redis-server` package) runs for the rest of this notebook on a
# socket only your account can open, with no network port, so on a shared hub the others cannot reach it. The
# interrupt button leaves it running, and it stops with the kernel, a restarted one too. Without one, the cell says
# why and skips. It is started the way the site insists on: every write logged to disk before Redis answers
# (`--appendonly yes --appendfsync always`), so a crash cannot forget a claim and let a resend refund twice; the site
# refuses a Redis without it.

# %%
redis = notebook_redis(data, LANG)  # ends with this kernel, even one restarted; None (and why) without one
if redis is not None:
    redis_url = redis.url
    ra, rb = replicas(redis_url, redis_url)
    display(table_view(refund_twice(ra, rb, key, agent.id), lang=LANG))

# %% [markdown]
# ## The same skills through MCP
#
# The site's app serves MCP over streamable HTTP at `/mcp`. The listing carries annotations from the metadata:
# queries are read-only; writes are destructive and idempotent (under one key), with the fields their key is built
# from in `_meta`.

# %%
site = SkillSite(data / "mcp", store=redis_url) if redis is not None and redis.running else SkillSite(data / "mcp")
mkey, mcp_agent = site.create_key("mcp-agent", ["get_order", "search_orders", "create_refund", "escalate_to_human"])
stack = serving(site)
url = stack.__enter__()  # stopped at the end of the notebook
conn = MCPConnection(url + "/mcp", headers={"X-API-Key": mkey, "X-Session-Id": "nb16-mcp", "Accept-Language": LANG})
listed = conn.run(conn.session.list_tools())
table_view(pd.DataFrame([{"tool": t.name, "readOnly": t.annotations.readOnlyHint,
                          "destructive": t.annotations.destructiveHint, "idempotent": t.annotations.idempotentHint,
                          "key from": (t.meta or {}).get("agentlab/idempotency"), "output schema": bool(t.outputSchema)}
                         for t in listed.tools]), lang=LANG)

# %% [markdown]
# The guarded loop runs the after-sales desk through MCP: the loop validates before anything is sent, computes the
# refund's idempotency key and the client sends it in the call's `_meta`; the site's refusal (an amount above the
# order's) comes back as an `isError` result in agentlab's error shape, which the model reads as it would in process.

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
# A client retry after a lost reply sends the same key in `_meta`: the site replays and runs nothing.

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
# ## Exercise
#
# MCP has no idempotency key of its own. In which field of a `tools/call` request does agentlab's site read a
# write's key? (the field's name, as it appears in the JSON)

# %%
from agentlab.workbook.builds_systems import meta_field

my_answer = None  # a field name
print(meta_field(my_answer, lang=LANG))

# %% [markdown]
# ## Build it: a key whose scope makes two replicas refund once
#
# A shared store makes replica B replay what A recorded, but only under the **same** key. The loop computes that key,
# never the model. Write `my_key(args, session_id)`: it returns a string the site takes as an `Idempotency-Key` header
# (1 to 200 printable ASCII characters). Predict first: a key made of the chat's id and all the
# arguments, what happens when the agent restarts and retries in a new chat? The check sends two refund calls, one
# to replica A and one to replica B, with one claim store between them, in four situations: a lost reply retried
# in the same chat (one refund is right), the same retry after the agent restarted with a new session id (one),
# refunds of two different orders in one chat (two), and a retry whose remark the model reworded (one).

# %%
from agentlab.workbook.builds_site import key_scope_holds


def my_key(args, session_id):
    """The idempotency key the loop sends with a refund: args are the refund's arguments, session_id the chat's."""
    return None  # your code: a string


print(key_scope_holds(my_key, lang=LANG))

# %% [markdown]
# ## Recap
#
# - A retry that landed on replica B refunded again: B had never seen the key.
# - With a shared Redis (`SET NX`, every write logged before it answers), B replayed A's reply and ran nothing.
# - The guarded loop ran the after-sales desk through MCP; the site's refusal came back as `isError` in agentlab's error shape.
# - A client retry with the same key in `_meta` was replayed.
#
# **Next:** [17 · Probe your own tools](17_probe_your_tools.ipynb). Read alongside: [the skill site](../docs/site.md#mcp); every path through the workbook: [docs/course.md](../docs/course.md).

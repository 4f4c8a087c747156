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
# # 19 · Take the guards home
#
# After this workbook you go back to a framework. Measured on the same scripted faults, the agent frameworks most used
# in Python run a duplicated refund twice, run 5 identical reads 5 times, and either let a tool's exception (with
# the database's DSN in it) fly out of the run or hide it behind a sentence the model cannot act on. Their maintainers say that tools which must not run twice are the user's
# business: this notebook is that business, kept in the stack you already use, with one line
# (docs/guards.md#guards-in-other-frameworks).

# %% [markdown]
# **After this notebook you can:**
#
# - wrap the tools of pydantic-ai, the OpenAI Agents SDK or LangGraph with one line that brings the guards
# - key a write to the conversation so a restarted process does not run it twice
# - put the guards on the wire for any MCP client with the gateway
#
# **Before it:** [05 · Side effects: refund once (idempotency)](05_side_effects.ipynb), [06 · Loops that never end](06_loops_that_never_end.ipynb).
#
# **Time:** about 30 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

# %%
import pandas as pd

from agentlab.adapters.compare import FAULTS, compare, table
from agentlab.i18n import colon, label, t
from agentlab.workbook.exercises import answer_is
from agentlab.workbook.plots import table_view

LANG = "en"  # "zh" for 中文


def as_frame(rows: list) -> pd.DataFrame:
    """The rows' table (compare.table, already in LANG) as a DataFrame, each framework with its version."""
    head, _, *body = [[cell.strip() for cell in line.strip("|").split(" | ")]
                      for line in table(rows, lang=LANG).splitlines()]
    frame = pd.DataFrame(body, columns=head)
    frame[head[0]] = [r.version for r in rows]
    return frame

# %% [markdown]
# ## The one line
#
# The tools are plain Python functions, the same for every framework: `refund` (a write: it moves money), `lookup`
# (a read), `report` (its database is down: it raises with a DSN in the message) and `quote` (a carrier's API that
# answers 429 with `Retry-After: 2` once). Nothing in them changes. The one line, per framework:
#
# ```python
# # pydantic-ai: a toolset wrapper around the toolset the agent already has
# toolset = guard_toolset(FunctionToolset(tools), writes={"refund"})
# # OpenAI Agents SDK: its function tools, wrapped; the run config lets an unknown tool reach the model
# tools = guard_function_tools(tools, writes={"refund"}); config = tools.run_config(RunConfig())
# # LangGraph: the ToolNode of a prebuilt agent, with one interceptor
# agent = create_react_agent(llm, guard_tools(tools, writes={"refund"}))
# ```
#
# `writes` is the one thing a framework does not say: which tools change the world. Everything else is computed: the
# contract from each tool's signature, the idempotency key from the run, the tool and the canonical arguments
# (never from the model).

# %% [markdown]
# ## The same fault in each framework, before and after
#
# Each fault is a scripted model behind the project's test server (the OpenAI chat API on 127.0.0.1), driving each
# framework's real agent loop, once without the line and once with it. Nothing waits: the adapter's sleep is
# injected and recorded. ✓ means the run does what the workbook asks of it.

# %%
rows = compare(fill=True)  # a framework not installed here: its rows as last measured, with the version
print("\n".join(sorted({f"{r.version}{colon(LANG)}{label('recorded, not installed here' if r.recorded else 'measured here', LANG)}" for r in rows})))
table_view(as_frame(rows), lang=LANG)

# %% [markdown]
# Read across a row: the refund ran twice, then once (the second call replayed the first result); five reads ran
# five times, then twice (the third identical call was stopped by the repeat breaker). The DSN's exception ended
# the run in pydantic-ai and LangGraph; the Agents SDK caught it but told the model only one generic sentence. With
# the line it became a structured `TOOL_ERROR` the model reads, and the DSN stayed in the trace only, redacted. The
# 429 ended the run in two frameworks and was never resent in the third; with the line it was resent after the 2 s
# the service asked for. A made-up tool name raised out of the SDK's run; with the line the model was told the
# tools there are.
#
# What the model was told, for the DSN fault with the adapter:

# %%
table_view(pd.DataFrame([{"framework": r.version, "the model read": r.with_.told[0] if r.with_.told else "-"}
                         for r in rows if r.fault == "secret_in_error"]), lang=LANG)

# %% [markdown]
# ## A restart is a retry: key the write to the conversation
#
# The commonest retry is not the model's: the caller's process dies after the write, is started again, and sends the
# same turn. The claim is still in a store that outlives the process (a SQLite file here; Redis on several machines),
# but a write without a business key (a note, a call back) is keyed by its arguments *within one conversation*, so its
# key holds the conversation's id, which must be the same after the restart. Each adapter takes the id its framework
# keeps: LangGraph's `thread_id`, pydantic-ai's `conversation_id`, the Agents SDK's `group_id`
# (docs/guards.md#idempotency-across-restarts). Below, the guard every adapter uses, twice, as two processes would:
# the note is written once, and the restarted caller is told the first result, replayed.

# %%
from agentlab.adapters.core import Contract, Guard
from agentlab.errors import UsageError
from agentlab.scratch import scratch_folder

claims = f"sqlite:///{scratch_folder() / 'claims.db'}"  # a file: a store that outlives the process, as Redis does
note = Contract("note", "Add a note to an order's file.", {
    "type": "object", "properties": {"order_id": {"type": "string"}, "text": {"type": "string"}},
    "required": ["order_id", "text"]})
args, written, told = {"order_id": "A1", "text": "call back after 6 pm"}, [], []
for process in (1, 2):  # the caller, then the same caller restarted: a new guard each time, one store
    guard = Guard("langgraph", writes={"note"}, store=claims, lang=LANG)
    out = guard.call([note], "note", args, lambda a: written.append(a) or {"noted": a["order_id"]},
                     conversation="thread-42")  # what LangGraph hands over: config["configurable"]["thread_id"]
    told.append({"process": process, "the model read": out.content})
print(f"{len(written)} ×", t("nb19.said.the_note_was_written", LANG))
table_view(pd.DataFrame(told), lang=LANG)

# %% [markdown]
# With no id that survives a restart (a graph invoked without a `thread_id`), the guard does not make one up: the
# write is refused before it runs, and the error says what to pass. It is raised to you, the developer, never told to
# the model. (On a store of the process's own, `memory:`, a made-up id loses nothing: a restart loses the store too.)

# %%
try:
    Guard("langgraph", writes={"note"}, store=claims, lang=LANG).call([note], "note", args, written.append)
except UsageError as exc:
    print(exc)
print(f"{len(written)} ×", t("nb19.said.the_note_was_written", LANG))

# %% [markdown]
# ## Any MCP server, any MCP client: the gateway
#
# Where the agent is not yours to wrap, put the guards on the wire: `python -m agentlab gateway --upstream
# URL_OR_COMMAND` serves an MCP server's tools to any MCP client with the same guards in between
# (docs/site.md#the-guarded-mcp-gateway). Here, in memory: a small FastMCP server with a refund that moves money,
# and a client that sends it twice, then with a made-up argument.

# %%
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

from agentlab.site.gateway import Gateway
from agentlab.site.mcp_client import MCPConnection

shop, refunds = FastMCP("shop", log_level="WARNING"), []  # the SDK logs each request at INFO otherwise


@shop.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=False))
def refund(order_id: str, amount: float) -> dict:
    """Refund part of an order."""
    refunds.append((order_id, amount))
    return {"refunded": amount, "order_id": order_id}


gateway = Gateway(shop._mcp_server, lang=LANG)  # the SDK's low-level server, in memory; a URL or a command works too
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
# ## Exercise
#
# One fault was handled by the OpenAI Agents SDK without the adapter, while pydantic-ai and LangGraph let it raise
# out of the run. Which one? Answer with its name, one of `duplicate_refund`, `repeated_reads`, `secret_in_error`,
# `unknown_tool`, `rate_limited`. Then look at what the model read in that row: was it enough to act on?

# %%
from agentlab.workbook.builds_systems import handled_without_adapter

my_answer = None  # a fault's name
print(handled_without_adapter(my_answer, rows, FAULTS, lang=LANG))

# %% [markdown]
# ## Build it: tell the guard what writes
#
# `writes` is the one thing you tell an adapter. A framework's agent here has three tools: `refund(order_id, amount)`
# moves money, `lookup(order_id)` reads an order's status, `note(order_id, text)` adds a note to its file. Write
# `my_writes`: the tools that change the world, as a list, or as a dict of each to its business key (a function of the
# arguments that names the intent, like `lambda args: args["order_id"]`) or `None` (all its arguments, within one
# conversation). Predict first: with `["refund", "note"]`, what happens to a refund retried after the caller restarted
# without its thread id? The check sends each call through a fresh guard on one store that outlives the process: the
# same refund twice in a thread (one is right), the same order's refund again with another amount (one), from a new
# thread (one), the same note twice in a thread (one), the same words noted in two threads (two), the status read
# before and after a refund (read twice), and refunds of two different orders (two).

# %%
from agentlab.workbook.builds_frameworks import guard_wired

my_writes = None  # which tools write, e.g. ["a_tool"], or {"a_tool": lambda args: ..., "another": None}
print(guard_wired(my_writes, lang=LANG))

# %% [markdown]
# ## Recap
#
# - Without the line, the frameworks ran a duplicated refund twice and five identical reads five times.
# - With it, a tool's exception became a structured `TOOL_ERROR` the model reads, with the DSN kept in the trace only, redacted.
# - A 429 was resent after the `Retry-After` the service asked for.
# - A write with no conversation id that survives a restart is refused before it runs, with an error for the developer.
#
# **Next:** the end of the workbook: take the guards into your own stack. Read alongside: [the guards](../docs/guards.md#guards-in-other-frameworks); every path through the workbook: [docs/course.md](../docs/course.md).

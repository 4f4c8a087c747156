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
# # 15 · The skill site: tools over HTTP
#
# The idea (docs/site.md): the model only *decides*; a site *executes, checks and logs*. Every tool is
# a skill with metadata written for the model, served behind an HTTP contract with keys, quotas, rate limits,
# idempotency keys and logs. Here a site runs in the background of this notebook (`python -m agentlab site` runs
# one for real), and the guarded loop uses it through `site_registry`.
#
# In a workshop on the hub, the room shares one site and each of you has a key of your own: the discovery section
# below asks that site (your calls, claims and quotas stay yours). The later sections switch a source off and read
# the site's files, which only a site of your own allows, so they use the one started here.

# %% [markdown]
# **After this notebook you can:**
#
# - serve tools as skills over HTTP, with keys, quotas, rate limits, idempotency keys and logs
# - find the few skills a turn needs with the site's search instead of injecting them all
# - read the site's answers a loop acts on: a fallback hint, a replayed write, a 429 with `Retry-After`
#
# **Before it:** [05 · Side effects: refund once (idempotency)](05_side_effects.ipynb), [13 · tool_choice and routing](13_tool_choice_and_routing.ipynb).
#
# **Time:** about 40 minutes (reading, running, the look-up question and the build exercise; how it was measured: [docs/course.md](../docs/course.md#how-the-times-were-measured)).

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

LANG = "en"  # "zh" for 中文
data = scratch_folder("skill-site-")  # removed when the kernel ends
site = SkillSite(data)
key, _ = site.create_key("notebook_key", ["*"])
stack = ExitStack()  # the site is stopped at the end of the notebook
url = stack.enter_context(serving(site))
http = httpx.Client(base_url=url, headers={"X-API-Key": key, "Accept-Language": LANG})
# In a workshop hub, discovery uses the room's shared site with your own key; elsewhere (or if the room's site
# does not answer, which it says) the site above
room_url, room_key, note = discovery_site(url, key, lang=LANG)
if note:
    print(note)
room_http = httpx.Client(base_url=room_url, headers={"X-API-Key": room_key, "Accept-Language": LANG})
shared = len(room_http.get("/api/skills").json()["skills"])
print(t("nb15.said.site", LANG, n=len(site.skills), url=url, room_url=room_url, shared=shared))

# %% [markdown]
# ## Discovery instead of injecting everything
#
# `GET /api/skills` lists every skill; `GET /api/skills/search?q=...&k=6` returns the few that match, with scores.
# What a model would read each turn, all skills against the search's top 6:

# %%
asks = [t(f"nb15.ask.{i}", LANG) for i in range(1, 5)]
every = site_registry(url, key, lang=LANG)  # this notebook's own site: the sections below change its files
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
# What that does to a real small model: the local 0.5B and 1.5B models, one turn per ask on the bookkeeping
# intents in both languages, offered every skill the site had when they were recorded (19: the page-text skill came
# later, which the `tools_per_turn` column shows) or the search's top 6 (recorded by
# `python benchmarks/bench_discovery_local.py`, replayed here with no model running).

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
# ## A source that is down: the fallback hint
#
# The weather skill's live source is switched off. The site answers with a structured error whose
# `fallback_hint` says what to do instead; the model asks again for the cached value, which comes back marked
# with the time it was measured.

# %%
# the source up again (a run of this cell before left it down), then the cache warmed
(data / "weather_source.json").unlink(missing_ok=True)
run_guarded(ScriptedModel([call("current_weather", {"city": "Beijing"}), say("ok")]), every, "warm the cache",
            sleep=lambda s: None)  # nobody reads this run: it only fills the site's cache
(data / "weather_source.json").write_text(json.dumps({"mode": "down"}))
run = run_guarded(ScriptedModel([call("current_weather", {"city": "Beijing"}),
                                 call("current_weather", {"city": "Beijing", "allow_cached": True}),
                                 say(t("nb15.said.beijing_is_cloudy_c", LANG))]),
                  every, t("nb15.said.what_s_the_weather", LANG), sleep=lambda s: None,
                  lang=LANG)
table_view(pd.DataFrame([{"call": e.args_raw, "error": e.error_code, "the model read": e.model_visible}
                         for e in run.tool_events]), lang=LANG)

# %% [markdown]
# ## A lost reply and the same idempotency key
#
# A write skill sends an e-mail. The reply is lost on the way back, so the client sends the same request again
# with the **same** `Idempotency-Key` (computed by the loop, never by the model). The site runs it once and
# replays the recorded answer; a write without a key is refused with 428.

# %%
note = {"arguments": {"to": "customer@example.com", "subject": "Refund", "body": "Your refund of 199 yuan is on its way."}}
# a key of this run's own: run again, this cell sends its e-mail again rather than finding the last run's
outbox_file = data / "outbox.jsonl"
sent_before = len(outbox_file.read_text(encoding="utf-8").splitlines()) if outbox_file.exists() else 0
key = f"refund-A1001-{sent_before}"
replies = [http.post("/api/skills/send_notification/execute", json=note, headers={"Idempotency-Key": key})
           for _ in range(2)]
replies.append(http.post("/api/skills/send_notification/execute", json=note))
outbox = outbox_file.read_text(encoding="utf-8").splitlines()[sent_before:]  # this run's
table_view(pd.DataFrame(
    [{"attempt": i + 1, "status": r.status_code, "Idempotent-Replayed": r.headers.get("Idempotent-Replayed"),
      "message_id": (r.json().get("result") or {}).get("message_id")} for i, r in enumerate(replies)]
    + [{"attempt": "e-mails sent", "status": len(outbox)}]), lang=LANG)

# %% [markdown]
# ## A 429, as the loop sees it
#
# A key with a quota of two calls a day. The third call gets `429` with `Retry-After` (until tomorrow); a wait
# that long is not waited out: the client gives it to the loop as `RATE_LIMITED`, which the model reads as a
# structured error that says when to come back, never as a raw status code.

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
# ## The call log
#
# Four JSONL files: access, call, error (with the stack, for the operator only) and audit. Every line carries a
# request id; it carries the agent's session id when the caller sends one (`X-Session-Id`). `site_registry` always
# does, so every call the guarded loop made has one. The e-mails above were posted by hand with `httpx`, with no agent
# and no session, so those lines have none (`-`): the log says who was there, it does not invent a session. Keys and
# secrets never appear.

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
# ## Exercise
#
# Which response header tells a client that the site replayed a recorded answer instead of running the skill?

# %%
from agentlab.workbook.builds_systems import replay_header

my_answer = None  # a header name
print(replay_header(my_answer, lang=LANG))

# %% [markdown]
# ## Build it: a schema the skill's own cases hold it to
#
# A skill's input schema is checked by the site before the skill runs: whatever it lets through, the skill sends.
# `draft` is a first version of the notification skill's schema. Its cases, `cases.jsonl` beside the skill, say what
# must come back: a refund confirmation, a one-character subject and a subject of 120 characters (the longest) are
# sent; a subject of 121 characters, an address without a domain, an empty body and a field the skill does not take
# are refused with `422`, naming the field.
# Predict first: how many of those seven cases does `draft` pass? Then write `my_schema`. The check puts it on the skill, runs every case on a fresh
# site, and names the cases that still fail.

# %%
from agentlab.workbook.builds_site import draft_schema, skill_schema_holds

draft = draft_schema(LANG)
my_schema = None  # your schema: start from a copy of draft
print(skill_schema_holds(my_schema, lang=LANG))

# %% [markdown]
# ## Recap
#
# - The model only decides; the site executes, checks and logs.
# - A source that was down answered with a `fallback_hint`, and the model asked for the cached value.
# - A lost reply resent with the same `Idempotency-Key` ran once; a write without a key got 428.
# - The call log's four JSONL files tie every line to a request id, and to a session id when one is sent.
#
# **Next:** [16 · Beyond one process: replicas and MCP](16_replicas_and_mcp.ipynb). Read alongside: [the skill site](../docs/site.md); every path through the workbook: [docs/course.md](../docs/course.md).

"""The same faults in each framework's real agent loop, without and with agentlab's adapter (the table in
README.md and docs/guards.md#guards-in-other-frameworks).

Each fault is a scripted model behind the project's test server (:class:`~agentlab.models.fakeserver.ChatServer`,
the OpenAI chat API on 127.0.0.1) and plain Python tools that count their runs. Nothing waits: the adapter's
sleep is injected and recorded. :func:`compare` measures; :func:`table` shows the rows in either language.

The frameworks are optional extras. Where one is not installed, ``compare(fill=True)`` takes its rows from the last
measurement kept in ``data/adapters_measured.json`` (:func:`record` writes it; tests/test_adapters.py checks it
still agrees with a fresh run), each row naming the version it was measured on.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..i18n import Lang, t
from ..models.fakeserver import ChatServer
from ..models.interface import Reply, ToolCall
from ..resources import data_file

__all__ = ["FAULTS", "FRAMEWORKS", "Measure", "Row", "compare", "installed", "record", "recorded", "table"]

FRAMEWORKS = ("pydantic-ai", "openai-agents", "langgraph")
FAULTS = ("duplicate_refund", "repeated_reads", "secret_in_error", "unknown_tool", "rate_limited")
DSN = "postgresql://admin:hunter2@db.internal:5432/orders"
_MODULES = {"pydantic-ai": "pydantic_ai", "openai-agents": "agents", "langgraph": "langgraph.prebuilt"}
RECORDING = "adapters_measured.json"


def installed(framework: str) -> bool:
    """Whether ``framework`` is installed here (its extra: ``agentlab[pydantic-ai]``...)."""
    try:
        return importlib.util.find_spec(_MODULES[framework]) is not None
    except ModuleNotFoundError:
        return False


@dataclass(frozen=True)
class Measure:
    """One run of one fault: how many times each tool ran, whether the run raised, what the model was told."""

    runs: dict[str, int]
    raised: str | None
    told: tuple[str, ...]
    sleeps: tuple[float, ...] = ()

    def saw(self, text: str) -> bool:
        return any(text in m for m in self.told)


@dataclass(frozen=True)
class Row:
    """One framework and one fault: the measure without the adapter, with it, and whether each passes.

    ``version`` is the framework as measured (``pydantic-ai==1.0.0``); ``recorded`` says the row was read from the
    kept measurement rather than run here.
    """

    framework: str
    fault: str
    without: Measure
    with_: Measure
    passed: tuple[bool, bool] = field(default=(False, False))
    version: str = ""
    recorded: bool = False


def _version(framework: str) -> str:
    for dist in (framework, framework + "-slim"):  # openai-agents installs as itself; some ship a -slim build
        try:
            return f"{framework}=={version(dist)}"
        except PackageNotFoundError:
            continue
    return framework


def _script(fault: str) -> list[Any]:
    def call(name: str, args: str, i: int) -> Reply:
        return Reply(None, (ToolCall(name, args, f"call_{i}"),))
    refund = '{"order_id": "A1", "amount": 30}'
    read = '{"order_id": "A1"}'
    steps = {"duplicate_refund": [call("refund", refund, 1), call("refund", refund, 2)],
             "repeated_reads": [call("lookup", read, i) for i in range(5)],
             "secret_in_error": [call("report", read, 1)],
             "unknown_tool": [call("refnud", refund, 1)],
             "rate_limited": [call("quote", read, 1)]}[fault]
    return [*steps, "done", "done"]


def _tools(runs: dict[str, int]) -> list[Callable[..., Any]]:
    """Plain functions, as an engineer writes them for any framework; each counts its runs."""
    import httpx

    def refund(order_id: str, amount: float) -> dict:
        """Refund part of an order (a write: it moves money)."""
        runs["refund"] = runs.get("refund", 0) + 1
        return {"refunded": amount, "order_id": order_id}

    def lookup(order_id: str) -> dict:
        """Look an order up."""
        runs["lookup"] = runs.get("lookup", 0) + 1
        return {"order_id": order_id, "status": "shipped"}

    def report(order_id: str) -> dict:
        """The order's sales report (its database is down)."""
        runs["report"] = runs.get("report", 0) + 1
        raise RuntimeError(f"could not connect to {DSN}")

    def quote(order_id: str) -> dict:
        """A shipping quote from a carrier's API (rate limited at first)."""
        runs["quote"] = runs.get("quote", 0) + 1
        if runs["quote"] == 1:
            request = httpx.Request("GET", "https://carrier.example/quote")
            response = httpx.Response(429, headers={"Retry-After": "2"}, request=request)
            raise httpx.HTTPStatusError("429 Too Many Requests", request=request, response=response)
        return {"order_id": order_id, "price": 7.5}

    return [refund, lookup, report, quote]


def _run(server: ChatServer, framework: str, fault: str, guarded: bool) -> Measure:
    runs: dict[str, int] = {}
    sleeps: list[float] = []
    tools = _tools(runs)
    options = {"writes": {"refund": None}, "sleep": sleeps.append}
    raised = None
    # one server for every run (stopping one waits out its half-second poll): a new script, no requests yet
    server.script, server.requests = _script(fault), []
    try:
        if framework == "pydantic-ai":
            _pydantic_ai(server.base_url, tools, options if guarded else None)
        elif framework == "openai-agents":
            _openai_agents(server.base_url, tools, options if guarded else None)
        else:
            _langgraph(server.base_url, tools, options if guarded else None)
    except Exception as exc:  # noqa: BLE001 - what a framework raises out of the run is the measure
        raised = f"{type(exc).__name__}: {exc}"
    told = tuple(str(m.get("content")) for body in server.requests for m in body.get("messages", [])
                 if m.get("role") == "tool")
    return Measure(runs, raised, told, tuple(sleeps))


def _pydantic_ai(base_url: str, tools: list, guard: dict | None) -> None:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.toolsets import FunctionToolset

    from .pydanticai import guard_toolset
    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    toolset: Any = FunctionToolset(tools)
    if guard is not None:
        toolset = guard_toolset(toolset, **guard)
    Agent(OpenAIChatModel("agentlab-test", provider=OpenAIProvider(openai_client=client)),
          toolsets=[toolset]).run_sync("Refund 30 on order A1.")


def _openai_agents(base_url: str, tools: list, guard: dict | None) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI

    from .openai_agents import guard_function_tools
    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    config = RunConfig(tracing_disabled=True)  # the SDK would otherwise send its traces to OpenAI
    if guard is None:
        agent_tools: list = [function_tool(f) for f in tools]  # the SDK's defaults, as an engineer meets them
    else:
        agent_tools = guard_function_tools(tools, **guard)
        config = agent_tools.run_config(config)
    agent = Agent(name="shop", instructions="Help with orders.", tools=agent_tools,
                  model=OpenAIChatCompletionsModel(model="agentlab-test", openai_client=client))
    Runner.run_sync(agent, "Refund 30 on order A1.", run_config=config)


def _langgraph(base_url: str, tools: list, guard: dict | None) -> None:
    import warnings

    from langchain_openai import ChatOpenAI
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in LangGraph 1; still there
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        from .lang_graph import guard_tools
        llm = ChatOpenAI(model="agentlab-test", base_url=base_url, api_key="test", max_retries=0)  # type: ignore[arg-type]
        agent = create_react_agent(llm, guard_tools(tools, **guard) if guard is not None else tools)
    agent.invoke({"messages": [("user", "Refund 30 on order A1.")]})


def _passes(fault: str, m: Measure) -> bool:
    """What the issue asks of each fault (tests/test_adapters.py asserts these with the adapter)."""
    if fault == "duplicate_refund":
        return m.runs.get("refund", 0) == 1 and m.raised is None
    if fault == "repeated_reads":
        return m.runs.get("lookup", 0) <= 2 and m.raised is None
    if fault == "secret_in_error":
        return m.raised is None and not m.saw("hunter2") and not m.saw("postgresql://")
    if fault == "unknown_tool":
        return m.raised is None and m.saw("refund") and m.saw("lookup")
    return m.raised is None and m.runs.get("quote", 0) == 2 and any(s >= 2 for s in m.sleeps)


def compare(frameworks: Iterable[str] = FRAMEWORKS, faults: Iterable[str] = FAULTS, *, fill: bool = False) -> list[Row]:
    """Every fault in every installed framework, without and with the adapter.

    ``fill``: a framework that is not installed gets its rows from the kept measurement (:func:`recorded`), marked
    ``recorded``, so a machine without the extras still shows the whole table. Safe to call from a notebook: the
    frameworks' synchronous runners refuse a running event loop, so then the runs go to a thread of their own.
    """
    frameworks, faults = tuple(frameworks), tuple(faults)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        rows = _measure(frameworks, faults)
    else:
        with ThreadPoolExecutor(1) as pool:
            rows = pool.submit(_measure, frameworks, faults).result()
    if fill:
        kept = {(r.framework, r.fault): r for r in recorded()}
        rows += [kept[fw, f] for fw in frameworks if not installed(fw) for f in faults if (fw, f) in kept]
        rows.sort(key=lambda r: (frameworks.index(r.framework), faults.index(r.fault)))
    return rows


def _measure(frameworks: tuple[str, ...], faults: tuple[str, ...]) -> list[Row]:
    rows = []
    with ChatServer() as server:
        for fw in frameworks:
            if not installed(fw):
                continue
            for fault in faults:
                without, with_ = _run(server, fw, fault, False), _run(server, fw, fault, True)
                rows.append(Row(fw, fault, without, with_, (_passes(fault, without), _passes(fault, with_)),
                                _version(fw)))
    return rows


def record(rows: Iterable[Row], path: str | Path | None = None) -> Path:
    """Keep a measurement (``python -m agentlab.adapters.compare --record``) for machines without the extras."""
    target = Path(path) if path is not None else Path(__file__).resolve().parents[2] / "data" / RECORDING
    kept = [asdict(replace(r, recorded=False)) for r in rows]
    target.write_text(json.dumps(kept, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return target


def recorded(path: str | Path | None = None) -> list[Row]:
    """The kept measurement, every row marked ``recorded``."""
    raw = json.loads((Path(path) if path is not None else data_file(RECORDING)).read_text(encoding="utf-8"))

    def measure(m: dict) -> Measure:
        return Measure(m["runs"], m["raised"], tuple(m["told"]), tuple(m["sleeps"]))
    return [Row(r["framework"], r["fault"], measure(r["without"]), measure(r["with_"]), tuple(r["passed"]),
                r["version"], recorded=True) for r in raw]


def _cell(fault: str, m: Measure, ok: bool, lang: Lang) -> str:
    tool = {"duplicate_refund": "refund", "repeated_reads": "lookup", "secret_in_error": "report",
            "rate_limited": "quote"}.get(fault)
    parts = [t("adapters.ran", lang, n=m.runs.get(tool, 0))] if tool else []
    if m.raised is not None:
        parts.append(t("adapters.raised", lang))
    if fault == "secret_in_error" and (m.saw("hunter2") or m.saw("postgresql://")):
        parts.append(t("adapters.leaked", lang))
    if fault == "unknown_tool" and m.raised is None:
        parts.append(t("adapters.listed" if m.saw("lookup") else "adapters.not_listed", lang))
    if fault == "rate_limited" and m.sleeps:
        parts.append(t("adapters.waited", lang, s=max(m.sleeps)))
    return ("✓ " if ok else "✗ ") + ("，" if lang == "zh" else ", ").join(parts)


def table(rows: Iterable[Row], lang: Lang = "en") -> str:
    """The rows as a Markdown table: framework, fault, without the adapter, with it."""
    head = [t("adapters.col." + c, lang) for c in ("framework", "fault", "without", "with")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| {r.framework} | {t('adapters.fault.' + r.fault, lang)} | "
                     f"{_cell(r.fault, r.without, r.passed[0], lang)} | {_cell(r.fault, r.with_, r.passed[1], lang)} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m agentlab.adapters.compare --record
    import sys
    measured = compare()
    print(table(measured))
    if "--record" in sys.argv[1:]:
        missing = [fw for fw in FRAMEWORKS if not installed(fw)]
        if missing:
            sys.exit(f"not recorded: {', '.join(missing)} not installed (pip install -r requirements-frameworks.txt)")
        print(record(measured))

"""Article 003's twelve checks before going live (§八), run against a desk rather than read off a slide.

Each check *does* something to the desk (builds its prompt on two days, clears a chat, trims
200 random conversations, sends a call with two tool calls, a call with a field missing...)
and reports pass or fail with the evidence, in English or Chinese::

    python -m agentlab checklist --scenario expense
"""
from __future__ import annotations

import datetime as _dt
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..context import protocol_problems, trim_messages
from ..i18n import Lang
from ..lint import lint
from ..models import ScriptedModel, call, say, tool_calls
from ..resources import data_file
from ..retry import RetryPolicy
from ..scenarios import Scenario
from ..scenarios.conversation import ROUTE_ABOVE, Conversation
from ..trace import Event
from .suite import SuiteError, load_cases

__all__ = ["CHECKS", "CheckItem", "Result", "run_checklist"]


@dataclass(frozen=True)
class CheckItem:
    number: int
    group: str
    en: str
    zh: str
    run: Callable[[Scenario], tuple[bool, dict[str, str]]]


@dataclass(frozen=True)
class Result:
    number: int
    title: str
    passed: bool
    evidence: str


def _say(en: str, zh: str) -> dict[str, str]:
    return {"en": en, "zh": zh}


def _chat(scenario: Scenario, model: Any, **kw: Any) -> Conversation:
    return Conversation(scenario, model, sleep=lambda s: None, **kw)


def _date_injected(s: Scenario) -> tuple[bool, dict[str, str]]:
    state, _ = s.setup()
    if not hasattr(state, "now"):
        return False, _say("the desk has no clock", "这个助手没有时钟")
    days = [_dt.datetime(2026, 3, 2, 9, tzinfo=_dt.UTC), _dt.datetime(2027, 1, 15, 9, tzinfo=_dt.UTC)]
    prompts = []
    for day in days:
        state.now = lambda d=day: d
        prompts.append(s.prompt("en", state=state))
    ok = all(d.strftime("%Y-%m-%d") in p for d, p in zip(days, prompts, strict=True)) and prompts[0] != prompts[1]
    user = "User:" in prompts[0]
    return ok and user, _say(f"prompt built on 2026-03-02 and 2027-01-15 states each day: {ok}; names the user: {user}",
                             f"分别在 2026-03-02 和 2027-01-15 构建的提示词各自写明当天日期：{ok}；写明用户：{user}")


def _clear_keeps_system(s: Scenario) -> tuple[bool, dict[str, str]]:
    chat = _chat(s, ScriptedModel([say("hello"), say("again")]))
    chat.ask("hi")
    before = chat.session_id
    chat.clear()
    kept = [m["role"] for m in chat.messages]
    # the business state of a chat is what its session id keys: held confirmations and "done once" memory
    fresh = chat.session_id != before and not chat.store.approvals(chat.session_id)
    ok = kept == ["system"] and fresh
    return ok, _say(f"after clear the messages are {kept}; a new session with none of the old one's pending "
                    f"confirmations or repeats: {fresh}",
                    f"清空后消息为 {kept}；开启了新会话，旧会话的待确认操作与去重记录都不带过来：{fresh}")


def _random_chat(rng: random.Random, tools: list[str]) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "rules " * rng.randint(5, 40)}]
    n = 0
    for _ in range(rng.randint(1, 12)):
        msgs.append({"role": "user", "content": "ask " * rng.randint(1, 60)})
        for _ in range(rng.randint(0, 3)):
            ids = [f"c{(n := n + 1)}" for _ in range(rng.randint(1, 3))]
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": rng.choice(tools), "arguments": "{}"}} for i in ids]})
            msgs += [{"role": "tool", "tool_call_id": i, "content": "x" * rng.randint(1, 400)} for i in ids]
        msgs.append({"role": "assistant", "content": "answer " * rng.randint(1, 40)})
    return msgs


def _trimming_keeps_pairs(s: Scenario) -> tuple[bool, dict[str, str]]:
    from ..context import ContextTooLong, estimate_tokens
    _, reg = s.setup()
    rng = random.Random(3)
    broken = cut = 0
    for _ in range(200):
        msgs = _random_chat(rng, reg.names)
        try:
            kept = trim_messages(msgs, max_tokens=rng.randint(150, 900), max_turns=rng.choice([None, 2, 4]))
        except ContextTooLong:  # the right answer when even the minimum does not fit
            continue
        cut += len(kept) < len(msgs)
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        if protocol_problems(kept) or kept[0] != msgs[0] or msgs[last_user] not in kept:
            broken += 1
    # and the desk itself: a 60-turn chat goes through it, and what reaches the model must fit and be valid
    model = ScriptedModel([say("ok")])
    long_chat = _random_chat(random.Random(7), reg.names)[1:] * 20
    chat = _chat(s, model, history=long_chat, max_tokens=s.context_budget)
    chat.ask("one more question")
    sent = list(model.calls[0].messages) if model.calls else []
    fits = bool(sent) and s.context_budget is not None and estimate_tokens(sent) <= s.context_budget < estimate_tokens(long_chat)
    ok = broken == 0 and fits and not protocol_problems(sent)
    return ok, _say(f"200 random conversations trimmed ({cut} cut): {broken} broke the protocol or lost the system "
                    f"prompt or the latest question; the desk sent a {estimate_tokens(long_chat)}-token chat as "
                    f"{estimate_tokens(sent)} tokens (budget {s.context_budget})",
                    f"随机裁剪 200 段对话（其中 {cut} 段被裁）：{broken} 段破坏了协议或丢了系统提示词/最新问题；"
                    f"助手把 {estimate_tokens(long_chat)} token 的长对话裁成 {estimate_tokens(sent)} token 发出（预算 "
                    f"{s.context_budget}）")


_UNIT_RULES = {"AL002", "AL004", "AL006", "AL007"}  # no description, a bare name, a quantity without unit, no example


def _descriptions(s: Scenario) -> tuple[bool, dict[str, str]]:
    _, reg = s.setup()
    found = [f.location for f in lint(reg) if f.rule in _UNIT_RULES]
    for tool in reg:
        for name, spec in tool.parameters.get("properties", {}).items():
            kind = spec.get("type")
            if kind in ("number", "integer") and not (("minimum" in spec or "exclusiveMinimum" in spec)
                                                     and ("maximum" in spec or "exclusiveMaximum" in spec)):
                found.append(f"{tool.name}.{name} (no range)")
            if kind == "string" and not any(k in spec for k in ("enum", "pattern", "format", "maxLength")):
                found.append(f"{tool.name}.{name} (no format or length)")
    where = ", ".join(found[:4]) or "-"
    return not found, _say(f"fields without a format, unit, range or example: {len(found)} ({where})",
                           f"缺少格式、单位、范围或示例的字段：{len(found)} 个（{where}）")


def _routing(s: Scenario) -> tuple[bool, dict[str, str]]:
    _, reg = s.setup()
    model = ScriptedModel([say("ok")])
    chat = _chat(s, model)
    if len(reg) <= ROUTE_ABOVE:
        return True, _say(f"{len(reg)} tools: no routing needed (above {ROUTE_ABOVE})",
                          f"{len(reg)} 个工具：无需路由（超过 {ROUTE_ABOVE} 个才需要）")
    chat.ask("please book today's taxi, 45 yuan")
    shown = len(model.calls[0].tools)
    ok = chat.router is not None and shown < len(reg)
    return ok, _say(f"{len(reg)} tools; the model was shown {shown} this turn", f"共 {len(reg)} 个工具；本轮只给模型看了 {shown} 个")


def _required_checked(s: Scenario) -> tuple[bool, dict[str, str]]:
    _, reg = s.setup()
    missed = []
    total = 0
    for tool in reg:
        required = list(tool.parameters.get("required", []))
        total += len(required)
        checked = reg.check(tool.name, "{}")
        said = {p.field for p in (checked.error.problems if checked.error else ()) if p.reason == "missing"}
        missed += [f"{tool.name}.{r}" for r in required if r not in said]
    return not missed, _say(f"{total} required fields; left out, {total - len(missed)} are refused before the tool runs"
                            + (f" (not: {', '.join(missed[:3])})" if missed else ""),
                            f"共 {total} 个必填字段；缺省时有 {total - len(missed)} 个在执行前被拦下"
                            + (f"（未拦下：{'、'.join(missed[:3])}）" if missed else ""))


def _turn_limit(s: Scenario) -> tuple[bool, dict[str, str]]:
    _, reg = s.setup()
    name = reg.names[0]
    chat = _chat(s, ScriptedModel([call(name, {"x": i}) for i in range(12)], then="stop"))
    chat.config = type(chat.config)(step_budget=chat.config.step_budget, repeat_limit=None, self_correction=None)
    run = chat.ask("loop forever")
    budget = s.step_budget
    ok = budget is not None and 3 <= budget <= 5 and run.steps <= budget and bool(run.answer)
    return ok, _say(f"step budget {budget}; a model that never stops was cut after {run.steps} turns with a plain answer",
                    f"步数预算 {budget}；一个停不下来的模型在 {run.steps} 轮后被截断，并给出了纯文本回答")


def _all_calls(s: Scenario) -> tuple[bool, dict[str, str]]:
    _, reg = s.setup()
    reads = [t.name for t in reg if not t.side_effect and not t.parameters.get("required")][:1] or [reg.names[0]]
    chat = _chat(s, ScriptedModel([tool_calls(call(reads[0], {}), call(reads[0], {})), say("done")]))
    run = chat.ask("two at once")
    n = sum(1 for e in run.tool_events if e.round_index == 1)
    return n == 2, _say(f"a message with 2 tool calls: {n} answered", f"一条消息里有 2 个工具调用：回答了 {n} 个")


def _self_correction(s: Scenario) -> tuple[bool, dict[str, str]]:
    _, reg = s.setup()
    tool = next(t for t in reg if t.parameters.get("required"))
    chat = _chat(s, ScriptedModel([call(tool.name, {}), say("sorry")]))
    run = chat.ask("go")
    told = json.loads(run.tool_events[0].model_visible or "{}")
    readable = told.get("error", {}).get("problems") and run.steps >= 2
    return bool(readable), _say(f"a call missing its fields came back as {told.get('error', {}).get('code')} with "
                                f"{len(told.get('error', {}).get('problems', []))} problem(s), and the model got another turn",
                                f"缺字段的调用返回 {told.get('error', {}).get('code')}，"
                                f"含 {len(told.get('error', {}).get('problems', []))} 个问题，并让模型再试一轮")


def _risky_guarded(s: Scenario) -> tuple[bool, dict[str, str]]:
    _, reg = s.setup()
    writes = [t for t in reg if t.side_effect]
    unguarded = [t.name for t in writes if t.needs_approval is None and t.business_key is None and not t.keyed
                 and not t.idempotent and t.name != "escalate_to_human"]
    confirmed = [t.name for t in writes if t.needs_approval is not None]
    on = Conversation(s, ScriptedModel([say("ok")])).config
    ok = not unguarded and on.idempotency and on.approval
    return bool(ok), _say(f"{len(writes)} write tools; confirmation: {', '.join(confirmed) or '-'}; every other write has "
                          f"an idempotency key or only sets a value: {not unguarded}",
                          f"{len(writes)} 个写操作工具；需确认：{', '.join(confirmed) or '-'}；其余写操作都有幂等键或只是设定值：{not unguarded}")


def _retry_classes(s: Scenario) -> tuple[bool, dict[str, str]]:
    cfg = Conversation(s, ScriptedModel([say("ok")])).config
    policy = cfg.retry
    from ..errors import CODES
    kinds = sorted({c for c, _ in CODES.values()})
    if not isinstance(policy, RetryPolicy):
        return False, _say("no retry policy", "没有重试策略")
    ok = policy.jitter != "none" and policy.max_retries > 0 and policy.cap > policy.base and "transient" in kinds
    return ok, _say(f"error classes {kinds}, only transient ones resent; backoff from {policy.base:g} s doubling up to "
                    f"{policy.cap:g} s, {policy.jitter} jitter, {policy.max_retries} resends",
                    f"错误分类 {kinds}，只重发瞬态错误；退避从 {policy.base:g} 秒起翻倍，最长 {policy.cap:g} 秒，"
                    f"{ {'full': '全', 'equal': '半'}.get(policy.jitter, policy.jitter)}抖动，最多重发 {policy.max_retries} 次")


_TELEMETRY = ("session_id", "turn_id", "round_index", "tool_name", "tool_call_id", "args_raw", "parse_ok", "validate_ok",
              "exec_ok", "error_stage", "retry_count", "latency_ms", "prompt_tokens", "completion_tokens", "final_status")


def _telemetry_and_suite(s: Scenario) -> tuple[bool, dict[str, str]]:
    missing = [f for f in _TELEMETRY if f not in Event.__dataclass_fields__]
    try:
        n = len(load_cases(data_file(f"{s.name}_cases.jsonl")))
    except SuiteError:
        n = 0
    ok = not missing and n >= 50
    return ok, _say(f"trace fields missing: {missing or 'none'}; regression suite: {n} cases",
                    f"缺少的埋点字段：{missing or '无'}；回归评测集：{n} 条")


CHECKS: tuple[CheckItem, ...] = (
    CheckItem(1, "context", "the system prompt states today's date and the user, built per turn", "System Prompt 动态注入当前时间和用户信息", _date_injected),
    CheckItem(2, "context", "clearing the chat keeps the system prompt and clears the business state",
          "清空会话保留 System Prompt 并清理业务态", _clear_keeps_system),
    CheckItem(3, "context", "long chats are trimmed, never splitting tool calls from their replies",
          "长对话裁剪且保证 tool_calls 与回执配对", _trimming_keeps_pairs),
    CheckItem(4, "tools", "descriptions give format, unit and range", "Schema 描述写清格式、单位和取值范围", _descriptions),
    CheckItem(5, "tools", "tools are routed when there are more than 10", "超过 10 个工具时做动态路由", _routing),
    CheckItem(6, "tools", "every required field is checked again in code", "所有 required 字段都有后端二次校验", _required_checked),
    CheckItem(7, "chain", "a turn has at most 3 to 5 tool rounds", "设置了最大工具轮次（3~5）", _turn_limit),
    CheckItem(8, "chain", "every tool call of a message is answered", "遍历 tool_calls 数组而非只取第一个", _all_calls),
    CheckItem(9, "chain", "argument errors go back to the model to correct", "参数报错回传模型自纠而非直接失败", _self_correction),
    CheckItem(10, "chain", "risky actions need confirmation or an idempotency key", "高危操作有二次确认或幂等设计", _risky_guarded),
    CheckItem(11, "ops", "retryable and fatal errors are told apart; backoff with jitter", "区分可重试与不可重试错误，指数退避加抖动", _retry_classes),
    CheckItem(12, "ops", "telemetry fields are complete and a suite of 50+ cases exists", "埋点字段齐全且有 ≥50 条评测集", _telemetry_and_suite),
)


def run_checklist(scenario: Scenario, lang: Lang = "en") -> list[Result]:
    """Every check against ``scenario``; a check that crashes fails with what it raised."""
    out = []
    for c in CHECKS:
        try:
            passed, evidence = c.run(scenario)
            said = evidence[lang]
        except Exception as exc:  # noqa: BLE001 - a check that cannot run is a failed check, said plainly
            passed, said = False, f"{type(exc).__name__}: {exc}"[:200]
        out.append(Result(c.number, c.zh if lang == "zh" else c.en, bool(passed), said))
    return out

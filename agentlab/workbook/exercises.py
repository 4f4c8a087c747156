"""The checks behind each notebook's exercise.

Every exercise starts unanswered (``my_answer = None``) and its check says "not yet" with a
hint until the learner acts; a wrong answer is told so, with where to look. The truth is
computed here from the workbook's own data, never written into the notebook, so a cell
never gives its answer away. (tests/test_exercises.py proves each check can fail and pass;
the solutions live in tests/, not in the notebooks.)

Inside a workshop hub each verdict is also sent to the trainer's view (agentlab/hub/progress.py,
docs/trainer.md): only when ``AGENTLAB_PROGRESS_URL`` and the server's ``JUPYTERHUB_API_TOKEN`` are
both set, from a background thread with a short timeout, so a slow or absent service never holds
up or breaks a cell. Each notebook has one exercise, named in ``data/trainer/exercises.json``.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath
from typing import Any, Literal, TypeVar

from ..guards import GuardConfig
from ..i18n import Lang, said, t
from ..lint import lint
from ..resources import data_file
from ..retry import RetryPolicy
from ..schema import SchemaError
from ..tools import Registry, Tool

__all__ = ["Feedback", "amount_with_unit_reason", "answer_is", "best_single_guard", "breaker_threshold", "check_answer",
           "double_refund_fault", "guard_effect", "largest_share", "longest_wait", "most_repaired_kind", "report", "schema_contract",
           "tool_replies_needed"]

State = Literal["not yet", "right", "wrong"]
_MARK = {"not yet": "…", "right": "✓", "wrong": "✗"}  # plain text marks: no emoji font needed
_WORD = {"en": {"not yet": "Not yet", "right": "Right", "wrong": "Not quite"},
         "zh": {"not yet": "还没作答", "right": "答对了", "wrong": "还不对"}}


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: ``state`` is ``not yet``, ``right`` or ``wrong``."""

    state: State
    message: str

    @property
    def ok(self) -> bool:
        return self.state == "right"

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.message

    def __iter__(self):  # ``ok, message = check(...)`` reads naturally in a notebook
        return iter((self.ok, self.message))

    def __getitem__(self, i: int) -> Any:
        return (self.ok, self.message)[i]


_log = logging.getLogger(__name__)
_F = TypeVar("_F", bound=Callable[..., Any])
REPORT_TIMEOUT = 2.0  # seconds: a report is a courtesy to the trainer, never a wait for the learner
_depth = threading.local()  # a check calling another check (answer_is -> check_answer) reports once, the outer one


@cache
def exercise_ids() -> dict[str, str]:
    """Notebook number -> its exercise's stable id (``data/trainer/exercises.json``, shared with the trainer's view)."""
    return dict(json.loads(data_file("trainer/exercises.json").read_text(encoding="utf-8")))


def _session_notebook(env: Mapping[str, str]) -> str | None:
    """The notebook this kernel runs, from the path Jupyter server hands its kernels (``JPY_SESSION_NAME``)."""
    name = PurePath(env.get("JPY_SESSION_NAME", "")).name
    return name[:2] if name[:2].isdigit() and name[:2] in exercise_ids() else None


def _post(url: str, token: str, body: bytes) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=REPORT_TIMEOUT) as reply:
            reply.read(4096)
    except Exception as exc:  # noqa: BLE001 - any failure at all: the notebook goes on, the trainer misses one report
        _log.debug("progress report not sent: %s", type(exc).__name__)


def report(feedback: Feedback, notebook: str | None = None, *, env: Mapping[str, str] | None = None,
           send: Callable[[str, str, bytes], None] = _post) -> threading.Thread | None:
    """Send a verdict to the trainer's view, in the background; the thread, or None when nothing is sent.

    Nothing is sent outside a hub (no ``AGENTLAB_PROGRESS_URL`` or no ``JUPYTERHUB_API_TOKEN``) or when the
    notebook is unknown (``notebook`` or the kernel's session path). The token is the single-user server's own:
    the service asks the hub whose it is, so a participant can only report for themselves."""
    env = os.environ if env is None else env
    url, token = env.get("AGENTLAB_PROGRESS_URL", ""), env.get("JUPYTERHUB_API_TOKEN", "")
    notebook = notebook or _session_notebook(env)
    if not (url and token and notebook in exercise_ids()):
        return None
    body = json.dumps({"notebook": notebook, "exercise": exercise_ids()[notebook], "state": feedback.state,
                       "at": round(time.time(), 3)}).encode()
    thread = threading.Thread(target=send, args=(url, token, body), name="agentlab-progress", daemon=True)
    thread.start()
    return thread


def _reports(notebook: str | None) -> Callable[[_F], _F]:
    """A check that reports its verdict: for ``notebook``, or (a check several notebooks share) the kernel's."""
    def wrap(check: _F) -> _F:
        @functools.wraps(check)
        def reported(*args: Any, **kwargs: Any) -> Feedback:
            depth = getattr(_depth, "n", 0)
            _depth.n = depth + 1
            try:
                feedback = check(*args, **kwargs)
            finally:
                _depth.n = depth
            if depth == 0:
                try:
                    report(feedback, notebook)
                except Exception as exc:  # noqa: BLE001 - a thread that cannot start, a broken environment: never the learner's problem
                    _log.debug("progress report not sent: %s", type(exc).__name__)
            return feedback
        return reported  # type: ignore[return-value]
    return wrap


def _norm(value: Any) -> str:
    """Answers compare as words: case, spaces, quotes and hyphens do not matter."""
    return str(value).strip().strip("'\"`").lower().replace("-", "_").replace(" ", "_")


def _text(value: str | Mapping[str, str], lang: Lang) -> str:
    return value if isinstance(value, str) else value.get(lang) or value["en"]


def _say(state: State, text: str, lang: Lang) -> Feedback:
    return Feedback(state, f"{_MARK[state]} {_WORD[lang][state]}: {text}")


@_reports(None)
def check_answer(given: Any, right: Any, *, why: str | Mapping[str, str], hint: str | Mapping[str, str],
          lang: Lang = "en", same: Callable[[Any, Any], bool] | None = None) -> Feedback:
    """Compare an answer with the truth: "not yet" while ``given`` is None, then right or wrong."""
    if given is None:
        return _say("not yet", _text(hint, lang), lang)
    ok = same(given, right) if same else _norm(given) == _norm(right)
    if ok:
        return _say("right", _text(why, lang), lang)
    advice = _text(hint, "en")
    wrong = {"en": f"you said {given!r}. {advice[:1].upper() + advice[1:]}", "zh": f"你的答案是 {given!r}。{_text(hint, 'zh')}"}
    return _say("wrong", wrong[lang], lang)


_LOOK = {"en": "Look again at the table above.", "zh": "再看看上面的表格。"}


@_reports(None)
def answer_is(given: Any, right: Any, why: str | Mapping[str, str], hint: str | Mapping[str, str] = _LOOK,
              lang: Lang = "en") -> Feedback:
    """A plain comparison with an explanation either way."""
    return check_answer(given, right, why=why, hint=hint, lang=lang)


@_reports("01")
def schema_contract(schema: Any, description: Any, lang: Lang = "en") -> Feedback:
    """01: a refund schema with no linter warning or error, an enum for the reason, snake_case names."""
    if schema is None or description is None:
        return _say("not yet", {"en": "write my_description and my_schema, then run this cell.",
                                "zh": "先写好 my_description 和 my_schema，再运行这个单元格。"}[lang], lang)
    try:
        reg = Registry([Tool("create_refund", str(description), schema)])
    except (SchemaError, TypeError, ValueError, AttributeError) as exc:
        why = said(exc, lang)
        return _say("wrong", {"en": f"the schema does not compile: {why}", "zh": f"这个 schema 无法编译：{why}"}[lang], lang)
    bad = [f for f in lint(reg, lang=lang) if f.severity != "info"]
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    has_enum = any("enum" in p for p in props.values() if isinstance(p, dict))
    if bad:
        return _say("wrong", "; ".join(f"{f.rule} {f.location}: {f.message}" for f in bad[:4]), lang)
    if not has_enum:
        return _say("wrong", {"en": "no warnings, but the reason should be an enum.",
                              "zh": "没有警告了，但 reason 应该用枚举。"}[lang], lang)
    return _say("right", {"en": "no warnings, and the reason is a closed set. This is a contract.",
                          "zh": "没有任何警告，reason 也是封闭集合。这才是契约。"}[lang], lang)


@_reports("04")
def longest_wait(given: float | None, policy: RetryPolicy, attempt: int, lang: Lang = "en") -> Feedback:
    """04: the un-jittered wait before resend number ``attempt`` (0-based)."""
    right = policy.backoff(attempt)
    return check_answer(given, right, same=lambda a, b: abs(float(a) - b) < 1e-9, lang=lang,
                 why={"en": f"{right:g} s: base × 2^attempt, capped at {policy.cap:g}.",
                      "zh": f"{right:g} 秒：base × 2^attempt，上限 {policy.cap:g}。"},
                 hint={"en": "compute base × 2^attempt and apply the cap (attempt counts from 0).",
                       "zh": "计算 base × 2^attempt，再套上上限（attempt 从 0 开始数）。"})


@_reports("00")
def double_refund_fault(given: str | None, lang: Lang = "en") -> Feedback:
    """00: the fault that makes the naive loop refund twice though the model asked once."""
    from ..models.faults import FAULTS
    from .demo import compare_loops
    truth = [f for f, spec in FAULTS.items() if spec.kind == "tool"
             and len(compare_loops(f).naive_state["refunds"]) == 2]
    right = truth[0] if len(truth) == 1 else truth
    return check_answer(given, right, lang=lang,
                        why={"en": "the refund went through, its reply was lost, and the naive loop retried "
                                   "everything. Only an idempotency key passed to the backend makes that safe.",
                             "zh": "退款已经成功，但响应丢了，朴素循环又什么都重试。只有把幂等键传给后端才能安全重试。"},
                        hint={"en": "find the tool-side fault whose naive refunds column says 2.",
                              "zh": "找一个工具侧故障，它让朴素循环的退款数变成 2。"})


@_reports("02")
def amount_with_unit_reason(given: str | None, registry: Registry, lang: Lang = "en") -> Feedback:
    """02: the problem reason the boundary gives for ``"amount": "45元"``."""
    import json
    raw = '{"order_id": "A1001", "amount": "45元", "reason": "user_cancel"}'
    problems = json.loads(registry.check("create_refund", raw).render())["error"]["problems"]
    right = next(p["reason"] for p in problems if p["field"] == "amount")
    return check_answer(given, right, lang=lang,
                        why={"en": "a string where the schema asks for a number; the hint says what it got.",
                             "zh": "schema 要数字，模型给了字符串；hint 里写明了实际收到什么。"},
                        hint={"en": "find the `wrong type` row of the first table, column problems.",
                              "zh": "看第一张表里 wrong type 那一行的 problems 列。"})


@_reports("07")
def tool_replies_needed(given: int | None, calls: int, lang: Lang = "en") -> Feedback:
    """07: how many ``tool`` messages must follow an assistant message holding ``calls`` tool calls.

    The truth comes from the guarded loop itself: it answers a message of ``calls`` calls."""
    from ..loop import run_guarded
    from ..models import ScriptedModel, call, say, tool_calls
    from ..scenarios import aftersales
    _, reg = aftersales.SCENARIO.setup()
    many = tool_calls(*[call("get_order", {"order_id": f"A100{i + 1}"}) for i in range(calls)])
    run = run_guarded(ScriptedModel([many, say("ok")]), reg, "look them up", sleep=lambda s: None)
    right = sum(1 for m in run.messages if m.get("role") == "tool")
    return check_answer(given, right, same=lambda a, b: int(a) == b, lang=lang,
                        why={"en": "one per call, each with its own tool_call_id, in order.",
                             "zh": "每个调用一条，各带自己的 tool_call_id，按顺序。"},
                        hint={"en": "every call needs an answer with its own tool_call_id; count them.",
                              "zh": "每个调用都要一条带自己 tool_call_id 的回复，数一数。"})


@_reports("09")
def guard_effect(given: str | None, table: Any, lang: Lang = "en") -> Feedback:
    """09: does the guarded loop raise or lower the success rate? ``table`` has ``loop`` and ``success``
    columns, one row per model and loop, each pair over the same cases."""
    by = table.groupby("loop")["success"].mean()
    guarded, naive = float(by.get("guarded", 0.0)), float(by.get("naive", 0.0))
    right = "raise" if guarded >= naive else "lower"
    return check_answer(given, right, lang=lang,
                        why={"en": f"guarded {guarded:.0%} against naive {naive:.0%}, averaged over the models, "
                                   "each on the cases it was recorded with under both loops.",
                             "zh": f"防护循环 {guarded:.0%}，朴素循环 {naive:.0%}：按模型平均，每个模型都只比较两种循环都录制过的用例。"},
                        hint={"en": "compare the success column of the naive and guarded rows of each model.",
                              "zh": "比较每个模型 naive 行和 guarded 行的 success 列。"})


@_reports("10")
def best_single_guard(given: str | None, ablation: Mapping[str, float], lang: Lang = "en") -> Feedback:
    """10: the guard that, alone, raises the success rate the most (``ablation`` from evals.ablation)."""
    alone = {k.removeprefix("only "): v for k, v in ablation.items() if k.startswith("only ")}
    best = max(alone.values())
    winners = sorted(k for k, v in alone.items() if v == best)
    return check_answer(given, winners, same=lambda a, b: _norm(a).removeprefix("only_") in b, lang=lang,
                        why={"en": f"{' / '.join(winners)} alone gives {best:.0%}; all guards together "
                                   f"{ablation['all guards']:.0%}. No single guard is enough.",
                             "zh": f"单独开启 {' / '.join(winners)} 成功率为 {best:.0%}；全部防护一起为 "
                                   f"{ablation['all guards']:.0%}。没有哪一个防护单独就够。"},
                        hint={"en": "find the tallest 'only ...' bar in the ablation plot.",
                              "zh": "在消融图里找最高的那根 “only ...” 柱子。"})


@_reports(None)
def largest_share(given: str | None, counts: Mapping[str, int], lang: Lang = "en") -> Feedback:
    """08 and 11: the class with the largest share of failures (the one to fix first)."""
    if not counts:
        return _say("right" if given in (None, "none") else "wrong",
                    {"en": "there are no failures to target in this sample.", "zh": "这次抽样里没有需要处理的失败。"}[lang],
                    lang)
    top = max(counts.values())
    winners = sorted(k for k, v in counts.items() if v == top)
    total = sum(counts.values())
    return check_answer(given, winners, same=lambda a, b: _norm(a) in b, lang=lang,
                        why={"en": f"{' / '.join(winners)}: {top} of {total} failures. Fix that class first, and "
                                   "measure the same metric next time.",
                             "zh": f"{' / '.join(winners)}：{total} 个失败里占 {top} 个。先解决这一类，下次用同一个指标复查。"},
                        hint={"en": "look at the share plot: which slice is the largest?",
                              "zh": "看占比图：哪一块最大？"})


@_reports("06")
def breaker_threshold(given: int | None, config: GuardConfig = GuardConfig(), lang: Lang = "en") -> Feedback:
    """06: on which identical call does the breaker fire?"""
    n = config.repeat_limit
    return check_answer(given, n, lang=lang,
                 why={"en": f"call number {n} with the same arguments is refused: two may be a retry, three is a loop.",
                      "zh": f"同样参数的第 {n} 次调用被拒绝：两次可能是重试，三次就是循环。"},
                 hint={"en": "look at GuardConfig().repeat_limit, or at the repeater's trace above.",
                       "zh": "看看 GuardConfig().repeat_limit，或上面 repeater 的轨迹。"})


@_reports("18")
def most_repaired_kind(given: str | None, figures: Any, lang: Lang = "en") -> Feedback:
    """18: the kind of failure validate-and-reask removed the most of, against the single shot.

    ``figures``: one model's :class:`agentlab.evals.bfcl_results.Figures` (live or shipped); the truth is computed
    from its kinds table, so a cell never holds the answer."""
    from ..evals.bfcl_results import most_repaired
    winners, drop = most_repaired(figures)
    return check_answer(given, winners, same=lambda a, b: _norm(a) in b, lang=lang,
                        why=t("nb18.exercise.why", lang, kinds=" / ".join(winners), drop=drop[winners[0]]),
                        hint=t("nb18.exercise.hint", lang))

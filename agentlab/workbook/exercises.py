"""The checks behind each notebook's exercise.

Every exercise starts unanswered (``my_answer = None``) and its check says "not yet" with a
hint until the learner acts; a wrong answer is told so, with where to look. An answer is read as a
person types it: a name in either language the tables show it in (any glossary label of the truth,
``data/i18n/labels/``: "转人工" is "escalated"), in any case, quotes, full-width forms or spacing; a
number with its unit ("2 秒", "3rd", "２"). An answer that cannot be read as what was asked (a list, a
dict, "two") is told what was expected, in a sentence, never with a traceback. The truth is
computed here from the workbook's own data, never written into the notebook, so a cell
never gives its answer away. (tests/test_exercises.py proves each check can fail and pass;
the solutions live in tests/, not in the notebooks.)

Each verdict is also sent to the trainer's view (agentlab/hub/progress.py, docs/trainer.md), with the
answer as the check read it (normalised, secrets removed, at most 80 characters): inside a workshop hub
when ``AGENTLAB_PROGRESS_URL`` and the server's ``JUPYTERHUB_API_TOKEN`` are both set; elsewhere when a
trainer runs ``python -m agentlab trainer --room CODE`` and the notebook has run ``connect(url, code,
name)`` (or ``AGENTLAB_PROGRESS_URL``, ``AGENTLAB_ROOM`` and ``AGENTLAB_PARTICIPANT`` are set). Always
from a background thread with a short timeout, so a slow or absent service never holds up or breaks a
cell. Each notebook has one look-up exercise, named in ``data/trainer/exercises.json``; notebooks 00-09 also have a
build exercise (agentlab/workbook/builds_guards.py), named in ``data/trainer/builds.json`` and reported as ``NNb``.
"""
from __future__ import annotations

import functools
import inspect
import json
import logging
import math
import os
import re
import reprlib
import secrets
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from ..errors import names_a_field
from ..guards import GuardConfig
from ..i18n import LANGS, Lang, both, colon, joined, label, said, t
from ..lint import lint
from ..redaction import redact_secrets
from ..resources import data_file
from ..retry import RetryPolicy
from ..schema import SchemaError, unsupported_keywords
from ..tools import Registry, Tool
from .answers import answer_key, answer_number, judge_answer, plain_text  # how a typed answer is read

__all__ = ["Feedback", "amount_with_unit_reason", "answer_is", "best_single_guard", "breaker_threshold", "build_ids", "check_answer",
           "connect", "double_refund_fault", "guard_effect", "largest_share", "longest_wait", "most_repaired_kind", "report", "schema_contract",
           "tool_replies_needed"]

State = Literal["not yet", "right", "wrong"]
_MARK = {"not yet": "…", "right": "✓", "wrong": "✗"}  # plain text marks: no emoji font needed


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
_report_lock = threading.Lock()
_last_report: threading.Thread | None = None  # the report sent last: the next one leaves after it (in order)
_depth = threading.local()  # a check calling another check (answer_is -> check_answer) reports once, the outer one


#: Reports besides the numbered notebooks (the capstone, with a score): agentlab/hub/progress.py's EXTRA, the same.
EXTRA = {"capstone": "capstone"}
ANSWER_LIMIT = 80  # characters of an answer sent: the trainer groups words and numbers, not pages of text
NAME_LIMIT = 40


@cache
def exercise_ids() -> dict[str, str]:
    """Notebook number -> its exercise's stable id (``data/trainer/exercises.json``, shared with the trainer's view)."""
    return dict(json.loads(data_file("trainer/exercises.json").read_text(encoding="utf-8")))


@cache
def build_ids() -> dict[str, str]:
    """``NNb`` -> the build exercise's stable id (``data/trainer/builds.json``, shared with the trainer's view)."""
    ids = json.loads(data_file("trainer/builds.json").read_text(encoding="utf-8"))
    return {f"{nb}b": ex for nb, ex in ids.items()}


def _session_notebook(env: Mapping[str, str]) -> str | None:
    """The notebook this kernel runs, from the path Jupyter server hands its kernels (``JPY_SESSION_NAME``)."""
    name = PurePath(env.get("JPY_SESSION_NAME", "")).name
    return name[:2] if name[:2].isdigit() and name[:2] in exercise_ids() else None


def _post(url: str, headers: Mapping[str, str], body: bytes) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers={**headers, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=REPORT_TIMEOUT) as reply:
            reply.read(4096)
    except Exception as exc:  # noqa: BLE001 - any failure at all: the notebook goes on, the trainer misses one report
        _log.debug("progress report not sent: %s", type(exc).__name__)


def answer_text(given: Any) -> str | None:
    """What the trainer's view keeps of an answer: a number as a number ("2 秒", "２", 2.0 -> "2"), a word as the
    check reads it (full-width forms, quotes, case folded), anything else as short JSON; secrets removed (a learner
    who pastes a key into a cell sends no key), at most :data:`ANSWER_LIMIT` characters. None: nothing answered."""
    if given is None:
        return None
    if isinstance(given, bool):
        text = str(given).lower()
    elif (number := answer_number(given)) is not None:
        text = f"{number:g}"
    elif isinstance(given, str):
        text = " ".join(plain_text(given[:4 * ANSWER_LIMIT]).split())
    else:
        try:
            text = json.dumps(given, ensure_ascii=False, sort_keys=True, default=repr)[:4 * ANSWER_LIMIT]
        except (TypeError, ValueError, RecursionError):  # keys json cannot sort, a structure too deep: its repr
            text = _shown(given)
    text = redact_secrets(text[:4 * ANSWER_LIMIT])  # redacted before the cut: a key cut short may no longer look like one
    return text if len(text) <= ANSWER_LIMIT else text[:ANSWER_LIMIT - 1] + "…"


def _report_url(url: str) -> str:
    """The report address from what a trainer prints (``http://10.0.0.5:8765/``) or the hub's full report URL."""
    return url if url.rstrip("/").endswith("api/report") else url.rstrip("/") + "/api/report"


def _participant_key(env: Mapping[str, str]) -> str | None:
    """This machine's participant key (``$AGENTLAB_PARTICIPANT_KEY``, else ``~/.agentlab/participant-key``, made once).

    The first key to report under a name owns that name in the room, so nobody else can write (or read) the row;
    the file is shared by every notebook's kernel on the machine, so each kernel reports as the same participant."""
    if env.get("AGENTLAB_PARTICIPANT_KEY"):
        return env["AGENTLAB_PARTICIPANT_KEY"]
    path = Path(env.get("AGENTLAB_HOME") or Path.home() / ".agentlab") / "participant-key"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # created exclusively: two kernels starting together cannot make two keys
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(24))
        except FileExistsError:
            pass
        key = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        _log.debug("no participant key: %s", type(exc).__name__)
        return None
    return key or None


def _headers(env: Mapping[str, str]) -> dict[str, str] | None:
    """How this kernel is known to the trainer's view: a room code, a name and a key outside the hub; the
    single-user server's own token inside it. None: not connected."""
    if env.get("AGENTLAB_ROOM"):
        name, key = " ".join(env.get("AGENTLAB_PARTICIPANT", "").split())[:NAME_LIMIT], _participant_key(env)
        if not (name and key):
            return None
        return {"Authorization": f"room {env['AGENTLAB_ROOM']}", "X-Agentlab-Participant": quote(name),
                "X-Agentlab-Key": key}
    token = env.get("JUPYTERHUB_API_TOKEN", "")
    return {"Authorization": f"token {token}"} if token else None


def report(feedback: Feedback, notebook: str | None = None, *, answer: Any = None, score: float | None = None,
           env: Mapping[str, str] | None = None,
           send: Callable[[str, Mapping[str, str], bytes], None] = _post) -> threading.Thread | None:
    """Send a verdict (and the ``answer`` it judged, as :func:`answer_text` keeps it) to the trainer's view, in the
    background; the thread, or None when nothing is sent.

    ``notebook`` is a workbook notebook's number or ``"capstone"`` (which reports its ``score``, a number: the view
    shows it in the capstone's cell and groups the room's scores like answers). Nothing is sent when not connected
    (no ``AGENTLAB_PROGRESS_URL``, or neither the hub's ``JUPYTERHUB_API_TOKEN`` nor a room from :func:`connect`) or
    when the notebook is unknown (``notebook`` or the kernel's session path). In the hub the token is the
    single-user server's own: the service asks the hub whose it is, so a participant can only report for themselves."""
    env = os.environ if env is None else env
    url, headers = env.get("AGENTLAB_PROGRESS_URL", ""), _headers(env)
    notebook = notebook or _session_notebook(env)
    known = {**exercise_ids(), **build_ids(), **EXTRA}
    if not (url and headers and notebook in known):
        return None
    fields: dict[str, Any] = {"notebook": notebook, "exercise": known[notebook], "state": feedback.state,
                              "at": round(time.time(), 3)}
    if feedback.state != "not yet" and (text := answer_text(answer)) is not None:
        fields["answer"] = text
    if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score):
        fields["score"] = float(score)
    body, url = json.dumps(fields).encode(), _report_url(url)
    global _last_report
    with _report_lock:  # a learner's "wrong" then "right" must arrive in that order: each report waits for the one before
        before = _last_report

        def send_after() -> None:
            if before is not None:
                before.join(REPORT_TIMEOUT + 1)
            send(url, headers, body)
        thread = threading.Thread(target=send_after, name="agentlab-progress", daemon=True)
        _last_report = thread
        thread.start()
    return thread


@dataclass(frozen=True)
class Connection:
    """What :func:`connect` says: connected or not, and why, in a sentence (a notebook shows the sentence)."""

    ok: bool
    message: str

    def __repr__(self) -> str:
        return self.message

    __str__ = __repr__


def connect(url: str, code: str, name: str, *, lang: Lang = "en", timeout: float = 3.0) -> Connection:
    """Report this kernel's checks to a trainer's view outside the hub (``python -m agentlab trainer --room CODE``
    prints the ``url`` and the ``code``); ``name`` is how the trainer sees you. It asks the view once, so a wrong
    code or address is said at once, in a sentence; a check reports only after a connection that worked."""
    name = " ".join(str(name).split())
    if not 0 < len(name) <= NAME_LIMIT:
        return Connection(False, t("trainer.connect_bad_name", lang, limit=NAME_LIMIT))
    env = {"AGENTLAB_PROGRESS_URL": str(url), "AGENTLAB_ROOM": str(code), "AGENTLAB_PARTICIPANT": name}
    headers = _headers({**os.environ, **env})
    if headers is None:
        return Connection(False, t("trainer.connect_refused", lang, reason=t("trainer.error.failed", lang)))
    # joined now: a name somebody else has, a full room, is said here, not refused later where nobody sees it
    join = _report_url(str(url))[:-len("report")] + "join" + ("?lang=zh" if lang == "zh" else "")
    try:
        if urllib.parse.urlsplit(join).scheme not in ("http", "https") or not urllib.parse.urlsplit(join).hostname:
            return Connection(False, t("trainer.connect_bad_url", lang, url=url))
        request = urllib.request.Request(join, data=b"{}", method="POST",
                                         headers={**headers, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            reply.read(65536)
    except urllib.error.HTTPError as exc:  # the view refused: its own sentence (wrong code, name taken, room full)
        try:
            reason = str(json.loads(exc.read(4096))["error"]["message"])
        except (ValueError, KeyError, TypeError, OSError):
            reason = f"HTTP {exc.code}"
        return Connection(False, t("trainer.connect_refused", lang, reason=reason))
    except Exception as exc:  # noqa: BLE001 - a wrong address, no network: a sentence, never a traceback
        cause = getattr(exc, "reason", None) or exc  # urllib wraps the socket's error in a URLError
        why = ("refused" if isinstance(cause, ConnectionRefusedError) else "timeout" if isinstance(cause, TimeoutError)
               else "unknown_host" if isinstance(cause, socket.gaierror) else "other")
        return Connection(False, t("trainer.connect_unreachable", lang, url=url,
                                   reason=t(f"trainer.unreachable.{why}", lang, seconds=timeout)))
    os.environ.update(env)  # this kernel's checks report from now on
    return Connection(True, t("trainer.connected", lang, room=code, url=url, name=name))


def _reports(notebook: str | None) -> Callable[[_F], _F]:
    """A check that reports its verdict and the answer it judged (its first argument): for ``notebook``, or (a check
    several notebooks share) the kernel's."""
    def wrap(check: _F) -> _F:
        first = next(iter(inspect.signature(check).parameters))  # the answer: ``given``, or 01's ``schema``

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
                    report(feedback, notebook, answer=args[0] if args else kwargs.get(first))
                except Exception as exc:  # noqa: BLE001 - a thread that cannot start, a broken environment: never the learner's problem
                    _log.debug("progress report not sent: %s", type(exc).__name__)
            return feedback
        return reported  # type: ignore[return-value]
    return wrap


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 80  # an answer is quoted back, never a page of it


def _shown(given: Any) -> str:
    """A learner's value, short, as every check shows it; one that cannot say itself (an int of 5,000 digits) is
    named by its type, never a traceback (reprlib catches a __repr__ that raises, not int's own limit)."""
    try:
        return _SHOWN.repr(given)
    except Exception:  # noqa: BLE001
        return f"<{type(given).__name__}>"


def clipped(text: str, limit: int = 400) -> str:
    """``text`` within ``limit`` characters, cut after its last whole sentence or word that fits, marked "…": a reason
    cut at a fixed length ended mid-word ("one value co")."""
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    ends = [head.rfind(m) + len(m) for m in (". ", "。", "；", "; ", "！", "？")]
    end = max(ends)
    if end < limit // 2:  # no sentence ends far enough in: the last whole word
        space = head.rstrip().rfind(" ")
        end = space if space >= limit // 2 else len(head)
    return head[:end].rstrip(" ,;，；:：") + "…"


def ignored_keywords(schema: Any, lang: Lang) -> str:
    """A sentence naming each keyword of ``schema`` that JSON Schema does not know, with the one it probably meant, or
    "": such a keyword is ignored, so a schema with ``maxlength`` failed its cases with no word on why."""
    from ..names import suggest
    from ..schema import KEYWORDS
    found = unsupported_keywords(schema) if isinstance(schema, Mapping) else []
    said_ = []
    for path, kw in found[:3]:
        near = suggest(str(kw), sorted(KEYWORDS))
        said_.append(t("build.ignored_keyword", lang, kw=str(kw), path=path) +
                     (t("build.ignored_keyword.near", lang, near=near) if near else ""))
    return joined(said_, lang, "sentence") if said_ else ""


def plain_problems(error: Any, lang: Lang) -> str:
    """A refused call's reasons in a sentence a learner reads (``order_id: ...; amount: ...``), not the envelope the
    model gets: the fields and their hints, or the error's own line when it names no field."""
    problems = [p.to_dict(lang) for p in getattr(error, "problems", ())[:3]]
    if not problems:
        return error.text(lang) if error is not None else ""
    return joined((f"{p['field']}{colon(lang)}{p['hint'].rstrip('。.')}" if names_a_field(p) else p["hint"].rstrip("。.")
                   for p in problems), lang)


def _text(value: str | Mapping[str, str], lang: Lang) -> str:
    return value if isinstance(value, str) else value.get(lang) or value["en"]


def _say(state: State, text: str, lang: Lang) -> Feedback:
    word = t("exercise.word." + state.replace(" ", "_"), lang)
    # a question that ends a part, then the sentence's own full stop: "…（"路由"）？。改好那一行" read twice
    text = _STOP_AFTER_QUESTION.sub(lambda m: m[1] or m[2], text)
    return Feedback(state, f"{_MARK[state]} {joined((word, text), lang, 'colon')}")


_STOP_AFTER_QUESTION = re.compile(r"([？！])。|([?!])\.(?=\s|$)")


@_reports(None)
def check_answer(given: Any, right: Any, *, why: str | Mapping[str, str], hint: str | Mapping[str, str],
          lang: Lang = "en", same: Callable[[Any, Any], bool] | None = None, unit: str | None = None) -> Feedback:
    """Compare an answer with the truth: "not yet" while ``given`` is None, then right or wrong.

    Without ``same``, the answer is read as a person types it (see the module's docstring); ``right`` may be a
    list of truths, any of which is right. An answer that cannot be read, or that makes ``same`` raise, is
    wrong, with a sentence saying what was expected. ``unit``: ``"time"`` for a truth in seconds, ``"count"`` for a
    count (see :func:`judge_answer`)."""
    if given is None:
        return _say("not yet", _text(hint, lang), lang)
    try:
        verdict = bool(same(given, right)) if same else judge_answer(given, right, unit)
    except Exception:  # noqa: BLE001 - a comparison an odd answer breaks: the learner reads a sentence, not a traceback
        verdict = "exercise.unreadable"
    if verdict is True:
        return _say("right", _text(why, lang), lang)
    advice = _text(hint, "en")
    advice = advice[:1].upper() + advice[1:]
    if isinstance(verdict, str):  # not read as what was asked: say what was
        said_ = t(verdict, lang, given=_answer_shown(given, lang))
        return _say("wrong", f"{said_} {advice}" if lang == "en" else said_ + _text(hint, lang), lang)
    return _say("wrong", t("exercise.said.you_said", lang, given=_answer_shown(given, lang),
                           advice=advice if lang == "en" else _text(hint, lang)), lang)


def _answer_shown(given: Any, lang: Lang) -> str:
    """A typed answer as the sentence quoting it shows it: a text in the reader's quotation marks (“第二次” in Chinese,
    where Python's '第二次' read as code inside the sentence), anything else as every check shows a value."""
    if isinstance(given, str) and given.isprintable():  # a newline or a control character: Python's escapes show it
        text = _shown(given)[1:-1] if len(given) > _SHOWN.maxstring else given
        return f"“{text}”" if lang == "zh" else f"'{text}'"
    return _shown(given)




@_reports(None)
def answer_is(given: Any, right: Any, why: str | Mapping[str, str], hint: str | Mapping[str, str] | None = None,
              lang: Lang = "en") -> Feedback:
    """A plain comparison with an explanation either way (the hint, unless given: look at the table again)."""
    return check_answer(given, right, why=why, hint=both("exercise.said.look_again_at_the") if hint is None else hint,
                        lang=lang)


@_reports("01")
def schema_contract(schema: Any, description: Any, lang: Lang = "en") -> Feedback:
    """01: a refund schema with no linter warning or error, an enum for the reason, snake_case names."""
    if schema is None or description is None:
        return _say("not yet", t("exercise.said.write_my_description_and", lang), lang)
    if not isinstance(schema, dict):
        return _say("wrong", t("exercise.schema_not_a_dict", lang, given=_shown(schema)), lang)
    if not isinstance(description, str):
        return _say("wrong", t("exercise.description_not_text", lang, given=_shown(description)), lang)
    if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
        # the whole tools-list entry: its "parameters" is the schema asked for
        return _say("wrong", t("exercise.whole_tool_entry", lang), lang)
    try:
        reg = Registry([Tool("create_refund", description, schema)])
        bad = [f for f in lint(reg, lang=lang) if f.severity != "info"]
    except (SchemaError, TypeError, ValueError, AttributeError) as exc:
        # a SchemaError says itself in either language; anything else is no sentence for a learner
        why = said(exc, lang) if isinstance(exc, SchemaError) else t("exercise.unreadable", lang, given=_shown(schema))
        return _say("wrong", t("exercise.said.the_schema_does_not", lang, why=why), lang)
    props = schema.get("properties", {})
    props = props if isinstance(props, dict) else {}
    reason = props.get("reason")
    # the reason's own enum: a closed set on another field (or a schema of other fields) is not what was asked
    has_enum = isinstance(reason, dict) and isinstance(reason.get("enum"), list) and len(reason["enum"]) >= 2
    if bad:
        return _say("wrong", joined((f"{f.rule} {f.location}{colon(lang)}{f.message}" for f in bad[:4]), lang), lang)
    missing = [name for name in ("order_id", "amount", "reason") if name not in props]
    if missing:
        return _say("wrong", t("exercise.said.refund_fields", lang, missing=joined(missing, lang, "list")), lang)
    if not has_enum or not isinstance(reason, dict):
        return _say("wrong", t("exercise.said.no_warnings_but_the", lang), lang)
    # what the contract does, not only how it reads: a right refund passes it, and one without each field does not
    # (a required "orderid" beside a defined order_id, or no required at all, read clean)
    right = {"order_id": "A1001", "amount": 45.5, "reason": reason["enum"][0]}
    try:
        checked = reg.check("create_refund", right, clean=False)
        if not checked.ok:
            return _say("wrong", t("exercise.said.refuses_right_refund", lang,
                                   args=json.dumps(right, ensure_ascii=False), why=plain_problems(checked.error, lang)),
                        lang)
        lax = [name for name in right
               if reg.check("create_refund", {k: v for k, v in right.items() if k != name}, clean=False).ok]
    except Exception as exc:  # noqa: BLE001 - a schema the validator cannot apply: a sentence, never a traceback
        return _say("wrong", t("exercise.said.the_schema_does_not", lang, why=type(exc).__name__), lang)
    if lax:
        return _say("wrong", t("exercise.said.takes_without", lang, fields=joined(lax, lang, "list")), lang)
    return _say("right", t("exercise.said.no_warnings_and_the", lang), lang)


@_reports("04")
def longest_wait(given: float | None, policy: RetryPolicy, attempt: int, lang: Lang = "en") -> Feedback:
    """04: the un-jittered wait before resend number ``attempt`` (0-based)."""
    right = policy.backoff(attempt)
    return check_answer(given, right, lang=lang, unit="time",
                 why=both("exercise.said.right_g_s_base", right=right, cap=policy.cap),
                 hint=both("exercise.said.compute_base_attempt_and"))


@cache
def _double_refund_truth() -> tuple[str, ...]:
    """The tool-side faults that make the naive loop refund twice (the scripted runs are the same every time)."""
    from ..models.faults import FAULTS
    from .demo import compare_loops
    return tuple(f for f, spec in FAULTS.items() if spec.kind == "tool"
                 and len(compare_loops(f).naive_state["refunds"]) == 2)


@_reports("00")
def double_refund_fault(given: str | None, lang: Lang = "en") -> Feedback:
    """00: the fault that makes the naive loop refund twice though the model asked once."""
    from ..models.faults import FAULTS
    from .demo import compare_loops
    truth = _double_refund_truth()
    # the fault as the table names it (lost_reply), or as its "fault" column says it in either language
    right = [*truth, *(t(f"fault.{f}", lg) for f in truth for lg in LANGS)]
    hint = both("exercise.said.find_the_tool_side")
    # another fault of the table, named: why it is not the one, from its own run ("duplicate_call" heard the hint
    # again, though the model asked twice there)
    named = next((f for f in FAULTS if f not in truth and isinstance(given, str) and answer_key(given) in
                  {answer_key(f), *(answer_key(t(f"fault.{f}", lg)) for lg in LANGS)}), None)
    if named is not None:
        n = len(compare_loops(named).naive_state["refunds"])
        side = FAULTS[named].kind  # tool, model, or api (the model's service failing: no call of the model's)
        find = {lg: t("exercise.said.find_the_tool_side", lg) for lg in LANGS}
        find["en"] = " " + find["en"][:1].upper() + find["en"][1:]  # a sentence of its own after the first
        hint = {lg: t(f"exercise.said.not_it_{side}", lg, fault=named, n=n) + find[lg] for lg in LANGS}
    return check_answer(given, right, lang=lang, why=both("exercise.said.the_refund_went_through"), hint=hint)


@_reports("02")
def amount_with_unit_reason(given: str | None, registry: Registry, lang: Lang = "en") -> Feedback:
    """02: the problem reason the boundary gives for ``"amount": "45元"``."""
    import json
    raw = '{"order_id": "A1001", "amount": "45元", "reason": "user_cancel"}'
    problems = json.loads(registry.check("create_refund", raw).render())["error"]["problems"]
    right = next(p["reason"] for p in problems if p["field"] == "amount")
    # the table's problems column writes each one as field：reason ("amount：wrong_type"): copied whole from there,
    # or as the list the column shows, the reason is read
    if isinstance(given, (list, tuple)) and len(given) == 1:
        given = given[0]
    if isinstance(given, str):
        field, colon, reason = plain_text(given).rpartition(":")
        if colon and answer_key(field) == "amount":
            given = reason
    return check_answer(given, right, lang=lang,
                        why=both("exercise.said.a_string_where_the"),
                        # the row and the column as each language's table names them
                        hint={lg: t("exercise.said.find_the_row", lg, row=label("wrong type", lg),
                                    column=label("problems", lg)) for lg in LANGS})


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
    return check_answer(given, right, lang=lang, unit="count",
                        why=both("exercise.said.one_per_call_each"),
                        hint=both("exercise.said.every_call_needs_an"))


@_reports("09")
def guard_effect(given: str | None, table: Any, lang: Lang = "en") -> Feedback:
    """09: does the guarded loop raise or lower the success rate? ``table`` has ``loop`` and ``success``
    columns, one row per model and loop, each pair over the same cases."""
    by = table.groupby("loop")["success"].mean()
    guarded, naive = float(by.get("guarded", 0.0)), float(by.get("naive", 0.0))
    right = "raise" if guarded >= naive else "lower"
    return check_answer(given, right, lang=lang,
                        why=both("exercise.said.guarded_guarded_against_naive", guarded=guarded, naive=naive),
                        hint=both("exercise.said.compare_the_success_column"))


@_reports("10")
def best_single_guard(given: str | None, ablation: Mapping[str, float], lang: Lang = "en") -> Feedback:
    """10: the guard that, alone, raises the success rate the most (``ablation`` from evals.ablation)."""
    alone = {k.removeprefix("only "): v for k, v in ablation.items() if k.startswith("only ")}
    best = max(alone.values())
    winners = sorted(k for k, v in alone.items() if v == best)
    # the plot's bars say "only validate" ("只开 validate"): the bar's label is right as well as the guard's name
    # each guard named as the reader's table names it (校验 in Chinese), its code name beside where that differs
    named = {lg: ("、" if lg == "zh" else " / ").join(
        (f"“{w}”" if label(w, lg) == w else f"{label(w, lg)}（{w}）") if lg == "zh" else
        (w if label(w, lg) == w else f"{label(w, lg)} ({w})") for w in winners) for lg in LANGS}
    return check_answer(given, [*winners, *(f"only {w}" for w in winners)], lang=lang,
                        why={lg: t("exercise.said.join_alone_gives_best", lg, join=named[lg], best=best,
                                   all_guards=ablation["all guards"]) for lg in LANGS},
                        hint=both("exercise.said.find_the_tallest_only"))


_TIE_SEPARATORS = re.compile(r"\s*(?:和|与|及|、|,|，|/|&|\band\b|\bor\b|或)\s*")


@_reports(None)
def largest_share(given: str | None, counts: Mapping[str, int], lang: Lang = "en") -> Feedback:
    """08 and 11: the class with the largest share of failures (the one to fix first)."""
    if not counts:
        return _say("right" if given is None or judge_answer(given, "none") is True else "wrong",
                    t("exercise.said.there_are_no_failures", lang),
                    lang)
    top = max(counts.values())
    winners = sorted(k for k, v in counts.items() if v == top)
    total = sum(counts.values())
    named = " / ".join(label(w, lang) for w in winners)  # as the plot names them, in the reader's language
    if len(winners) > 1 and given is not None:
        # a tie: naming every largest class ("结构和执行", ["structure", "execution"]) is right too
        parts = list(given) if isinstance(given, (list, tuple, set, frozenset)) else \
            [x for x in _TIE_SEPARATORS.split(given) if x.strip()] if isinstance(given, str) else []
        if len(parts) > 1 and all(judge_answer(x, winners) is True for x in parts):
            given = parts[0]
    # a tie is said as one ("执行 / 结构：17 个失败里占 8 个。先解决这一类" was said of two classes), and a miss lists the
    # slices the plot has: "validation", a category from the plot beside it, is no stage
    why = t("exercise.said.named_tie", lang, named=named, top=top, total=total) if len(winners) > 1 else \
        t("exercise.said.named_top_of_total", lang, named=named, top=top, total=total)
    return check_answer(given, winners, lang=lang, why=why,
                        hint=t("exercise.said.look_at_the_share_of", lang,
                               slices=joined([label(k, lang) for k in counts], lang, "list")))


@_reports("06")
def breaker_threshold(given: int | None, config: GuardConfig = GuardConfig(), lang: Lang = "en") -> Feedback:
    """06: on which identical call does the breaker fire?"""
    n = config.repeat_limit
    return check_answer(given, n, lang=lang, unit="count",
                 why=both("exercise.said.call_number_n_with", n=n),
                 hint=both("exercise.said.look_at_guardconfig_repeat"))


@_reports("18")
def most_repaired_kind(given: str | None, figures: Any, lang: Lang = "en") -> Feedback:
    """18: the kind of failure validate-and-reask removed the most of, against the single shot.

    ``figures``: one model's :class:`agentlab.evals.bfcl_results.Figures` (live or shipped); the truth is computed
    from its kinds table, so a cell never holds the answer."""
    from ..evals.bfcl_results import most_repaired
    winners, drop = most_repaired(figures)
    # a kind as its row reads in the table, in either language ("参数不是合法 JSON"), as much as its name
    described = [t(f"bfcl.kind.{kind}", lg) for kind in winners for lg in LANGS]
    return check_answer(given, [*winners, *described], lang=lang,
                        why=t("nb18.exercise.why", lang, kinds=" / ".join(winners), drop=drop[winners[0]]),
                        hint=t("nb18.exercise.hint", lang))

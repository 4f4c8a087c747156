"""Notebooks 15-17's build exercises, on the skill site and the probe: a skill's input schema its own cases hold it
to (15), the idempotency key whose scope makes two replicas refund once (16), and the refund contract that gives the
probe's faults something to catch (17). As in :mod:`agentlab.workbook.builds_systems`, each check runs the learner's
version through the real thing (a fresh site, two replicas on one claim store, the probe) and says what still breaks.
"""
from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..i18n import Lang, joined, said, t
from .builds_systems import _raised
from .exercises import Feedback, _reports, _say, _shown, clipped, ignored_keywords, plain_problems
from .learner_code import Said, bounded, returned_instead, unanswered, unsteady_key

__all__ = ["DRAFT_SKILL", "KEY_SITUATIONS", "PROBED_TOOL", "contract_catches_faults", "draft_schema", "key_scope_holds",
           "skill_schema_holds"]

# --- 15 · a skill's input schema that its own cases hold it to ---------------------------------------------------

DRAFT_SKILL = "send_notification"  # notebook 15's write skill: its schema is the learner's to fix


def draft_schema(lang: Lang = "en") -> dict:
    """Notebook 15's first version of the notification skill's input schema: its three fields typed and required, each
    described in ``lang`` as the shipped skill describes it, and no other constraint (the learner's to add)."""
    from ..site.skills import load_skills, shipped_dir
    shipped = next(sk for sk in load_skills(shipped_dir()) if sk.name == DRAFT_SKILL)
    said = (shipped.meta.i18n.get(lang) or {}).get("fields") or {}
    fields = shipped.meta.input_schema["properties"]
    return {"type": "object",
            "properties": {name: {"type": "string", "description": said.get(name, spec.get("description", ""))}
                           for name, spec in fields.items()},
            "required": list(shipped.meta.input_schema.get("required", []))}


def _notify_cases() -> list[Any]:
    from ..site.check import load_check_cases
    return [c for c in load_check_cases(desks=False) if c.skill == DRAFT_SKILL]


@_reports("15b")
@bounded()
def skill_schema_holds(my_schema: Any, lang: Lang = "en") -> Feedback:
    """15: the notification skill's ``input_schema``: the skill, given ``my_schema``, is run on a fresh site on every
    one of its own cases (normal, boundary, abnormal: ``cases.jsonl`` beside it)."""
    import json
    import warnings

    from ..site.check import _judge
    from ..site.service import SkillSite
    from ..site.skills import Skill, load_skills, shipped_dir
    if my_schema is None:
        return _say("not yet", t("build.nb15.todo", lang), lang)
    if not isinstance(my_schema, dict):
        return _say("wrong", t("build.not_a_dict", lang, given=_shown(my_schema)), lang)
    shipped = next(sk for sk in load_skills(shipped_dir()) if sk.name == DRAFT_SKILL)
    draft = f"{DRAFT_SKILL}_draft"  # beside the shipped skill, which every site has: the same handler, your schema
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agentlab-build-15-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # the learner's schema with the shipped skill's name and words, not its fields' Chinese descriptions (those
            # belong to the shipped schema: a learner's field of the same name was shown with the shipped one's)
            words = {lg: {k: v for k, v in said.items() if k in ("display_name", "description")}
                     for lg, said in shipped.meta.i18n.items()}
            meta = dataclasses.replace(shipped.meta, skill_name=draft, input_schema=my_schema, i18n=words)
            site = SkillSite(Path(tmp), desks=False, extra=[Skill(meta, shipped.handler, shipped.validate)])
            try:
                key, _ = site.create_key("build-15")
                for i, case in enumerate(_notify_cases()):
                    reply = site.execute(draft, json.dumps({"arguments": case.arguments}).encode(), api_key=key,
                                         idempotency_key=f"build-{i}", session_id="build-15", lang=lang)
                    if _judge(case, reply.status, reply.body):
                        named = sorted({str(p.get("field"))
                                        for p in (reply.body.get("error") or {}).get("problems") or []})
                        failed.append(t("build.nb15.case", lang, name=case.name_in(lang), got=reply.status,
                                        want=case.expect.get("status", 200), fields=joined(named, lang, "list") or "-",
                                        expected=joined(case.expect.get("fields", ()), lang, "list") or "-"))
            finally:
                site.close()  # its log lines written before the folder goes, none into a folder being removed
        except Exception as exc:  # noqa: BLE001 - a schema the site cannot compile: a sentence
            return _say("wrong", t("build.nb15.refused", lang, why=clipped(said(exc, lang))), lang)
    if failed:  # with any keyword of the schema nothing checks (maxlength): the usual why of a case that got 200
        ignored = ignored_keywords(my_schema, lang)
        return _say("wrong", joined([s for s in (t("build.nb15.fails", lang, n=len(failed), total=len(_notify_cases()),
                                                    cases=joined(failed, lang, "sentence")), ignored) if s],
                                    lang, "sentence"), lang)  # each, as the count says
    # right, and a keyword nothing checks still said (maxmum: it passed silently, and the limit it meant is not there)
    return _say("right", joined([s for s in (t("build.nb15.right", lang, total=len(_notify_cases())),
                                             ignored_keywords(my_schema, lang)) if s], lang, "sentence"), lang)


# --- 16 · an idempotency key whose scope makes two replicas refund once ------------------------------------------

_REFUND = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
#: Notebook 16's situations: two calls, one to replica A and one to replica B (one claim store between them),
#: each with its session id, and how many refunds are right.
KEY_SITUATIONS: tuple[tuple[str, tuple[tuple[dict, str], tuple[dict, str]], int], ...] = (
    ("lost_reply", ((_REFUND, "chat-1"), (_REFUND, "chat-1")), 1),
    ("restart", ((_REFUND, "chat-1"), (_REFUND, "chat-2")), 1),
    ("two_orders", ((_REFUND, "chat-1"), ({"order_id": "A1005", "amount": 19.9, "reason": "user_cancel"}, "chat-1")), 2),
    # notebook 05's lesson: the model rewords what it resends; a key of every argument changes with it
    ("reworded", ((_REFUND, "chat-1"), ({**_REFUND, "remark": "the customer asked again"}, "chat-1")), 1),
)


def _refunds_with(my_key: Callable[[dict, str], Any], calls: Sequence[tuple[dict, str]],
                  lang: Lang = "en") -> int | str | None:
    """Refunds made when each call goes to its replica with the key ``my_key`` gives it; None: a key was None; text:
    the site refused a key (what it said, as the agent would read it)."""
    import json

    from ..site.service import SkillSite
    with tempfile.TemporaryDirectory(prefix="agentlab-build-16-") as tmp:
        store = f"sqlite:///{tmp}/claims.db"
        replicas = (SkillSite(tmp, store=store), SkillSite(tmp, store=store))
        try:
            api_key, agent = replicas[0].create_key("agent", ["*"])
            for site, (args, session) in zip(replicas, calls, strict=True):
                key = my_key(dict(args), session)
                if key is None and unanswered(my_key):
                    return None
                wrong = returned_instead(key, "text", "my_key", f"{args.get('order_id')} / {session}", lang)
                if wrong is not None:  # a tuple or a number is no header's text (str() of it was sent)
                    raise Said(wrong)
                reply = site.execute("create_refund", json.dumps({"arguments": args}).encode(), api_key=api_key,
                                     idempotency_key=key, session_id=session, lang=lang)  # as made: never cut to fit
                error = reply.body.get("error") or {}
                if reply.status == 400 and error.get("code") == "BAD_REQUEST":  # the key itself: no refund could run
                    return str(error.get("message"))
            return sum(len(site.state_for(agent.id)["aftersales"].snapshot()["refunds"]) for site in replicas)
        finally:
            for site in replicas:  # their log lines written before the folder goes, none into a folder being removed
                site.close()


@_reports("16b")
@bounded()
def key_scope_holds(my_key: Any, lang: Lang = "en") -> Feedback:
    """16: ``my_key(args, session_id)`` -> the idempotency key the loop sends with a refund; run on two replicas that
    share one claim store, in the three situations of :data:`KEY_SITUATIONS`."""
    if my_key is None:
        return _say("not yet", t("build.nb16.todo", lang), lang)
    if not callable(my_key):
        return _say("wrong", t("build.sys.not_a_function", lang, given=_shown(my_key)), lang)
    try:  # the same call twice: a random or timed key is said as such, not as the situation it first broke
        unsteady = unsteady_key(my_key, _REFUND, "chat-1", name="my_key", call="A1001 / chat-1", lang=lang)
    except Exception as exc:  # noqa: BLE001 - the learner's function raised: a sentence
        return _raised(exc, lang)
    if unsteady is not None:
        return _say("wrong", unsteady, lang)
    wrong = []
    for name, calls, right in KEY_SITUATIONS:
        try:
            made = _refunds_with(my_key, calls, lang)
        except Exception as exc:  # noqa: BLE001 - the learner's function raised: a sentence
            return _raised(exc, lang)
        if made is None:
            return _say("not yet", t("build.nb16.todo", lang), lang)
        if isinstance(made, str):
            return _say("wrong", t("build.nb16.refused", lang, said=made), lang)
        if made != right:
            wrong.append(t(f"build.nb16.{name}", lang, made=made, right=right))
    if wrong:
        return _say("wrong", joined(wrong, lang, "sentence"), lang)
    return _say("right", t("build.nb16.right", lang), lang)


# --- 17 · a contract that gives the probe's faults something to catch -------------------------------------------

PROBED_TOOL = "create_refund"  # notebook 17's write: its parameters are the learner's to tighten
#: refunds the desk really makes beside those its suite expects (its orders' own amounts, each reason)
_17_MORE = ({"order_id": "A1005", "amount": 19.9, "reason": "out_of_stock"},
            {"order_id": "A1004", "amount": 899, "reason": "price_error"})


def _17_real() -> list[dict]:
    """Every refund the desk really makes, as the model sends it: each one the after-sales suite expects (a partial one
    with a reason of its own) and :data:`_17_MORE`. A tightened contract lets them all by; three written down here
    let by a pattern that refused A1010, a refund of the suite."""
    from ..evals import load_cases
    from ..resources import data_file
    real: list[dict] = []
    for case in load_cases(data_file("aftersales_cases.jsonl")):
        for r in case.expect.get("refunds") or []:
            call = {"order_id": r["order_id"], "amount": r["amount"], "reason": r.get("reason", "user_cancel")}
            if call not in real:
                real.append(call)
    return real + [c for c in _17_MORE if c not in real]


_GOOD_VERDICTS = ("ok", "repaired", "caught")


@_reports("17b")
@bounded()
def contract_catches_faults(my_parameters: Any, lang: Lang = "en") -> Feedback:
    """17: the refund tool's ``parameters`` schema, put in the refund desk's tools list and probed (the scripted
    model, every fault category): every cell must apply (no n/a: the contract says what a wrong call is) and end
    caught or repaired, and the clean call must still run."""
    import copy
    import inspect
    import json

    from ..evals.probe import fake_source, probe
    from ..resources import data_file
    from ..scenarios import aftersales
    from ..tools import load_specs
    if my_parameters is None:
        return _say("not yet", t("build.nb17.todo", lang), lang)
    if not isinstance(my_parameters, dict):
        return _say("wrong", t("build.not_a_dict", lang, given=_shown(my_parameters)), lang)
    if my_parameters.get("type") == "function" and isinstance(my_parameters.get("function"), dict):
        return _say("wrong", t("exercise.whole_tool_entry", lang), lang)  # its "parameters" are what is asked
    # what the desk's refund cannot run without (no default in its code): a contract that does not require it lets
    # a call without it reach the tool, which then fails as a crash, not as a call the model can fix
    needed = [p.name for p in inspect.signature(aftersales.Desk.create_refund).parameters.values()
              if p.default is p.empty and p.name != "self"]
    required = my_parameters.get("required")
    unrequired = [n for n in needed if not isinstance(required, list) or n not in required]
    if unrequired:
        return _say("wrong", t("build.nb17.not_required", lang, fields=joined(unrequired, lang, "list")), lang)
    specs = json.loads(data_file("aftersales_tools.json").read_text(encoding="utf-8"))
    specs = copy.deepcopy(specs)
    next(s for s in specs if s["function"]["name"] == PROBED_TOOL)["function"]["parameters"] = my_parameters
    try:
        tools = load_specs(specs, lang=lang)
        # the desk's own refunds first: the probe's clean call is made from the learner's contract, so a contract
        # that refused every real refund (a maximum of 1, a pattern of B1234, integer amounts) still had one to pass
        for call in _17_real():
            checked = tools.check(PROBED_TOOL, json.dumps(call), lang=lang)
            if not checked.ok:
                problems = plain_problems(checked.error, lang) if checked.error is not None else "-"
                return _say("wrong", t("build.nb17.real_refused", lang, call=json.dumps(call, ensure_ascii=False),
                                       why=clipped(problems)), lang)
        report = probe(tools, fake_source(), only=[PROBED_TOOL], lang=lang)
    except Exception as exc:  # noqa: BLE001 - a contract the loader or the probe refuses: its sentence
        return _say("wrong", t("build.nb17.refused", lang, why=clipped(said(exc, lang))), lang)
    verdicts = {c["category"]: c["verdict"] for c in report["cells"]}
    if verdicts.get("clean") != "ok":
        return _say("wrong", t("build.nb17.clean", lang, verdict=verdicts.get("clean")), lang)
    na = sorted(c for c, v in verdicts.items() if v == "n/a")
    missed = sorted(c for c, v in verdicts.items() if v not in (*_GOOD_VERDICTS, "n/a"))
    if na or missed:
        said_ = ([t("build.nb17.na", lang, cats=joined(na, lang, "list"))] if na else []) + \
                ([t("build.nb17.missed", lang, cats=joined(missed, lang, "list"))] if missed else [])
        ignored = ignored_keywords(my_parameters, lang)
        return _say("wrong", joined([*said_, *([ignored] if ignored else [])], lang, "sentence"), lang)
    return _say("right", joined([s for s in (t("build.nb17.right", lang, n=len(verdicts)),
                                             ignored_keywords(my_parameters, lang)) if s], lang, "sentence"), lang)

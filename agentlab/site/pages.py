"""The site's pages for people (docs/site.md#pages): the skill market, a skill's detail, the call log.

Server-rendered HTML from jinja2 templates (``data/templates/site_*.html``) with
autoescaping: no front-end build, no script at all (the pages send a ``Content-Security-Policy``
that forbids scripts, as a second line behind escaping). This module computes plain values;
every one of them, from a skill's metadata, a caller, a log line or the catalogue, is escaped
by the template engine, never by hand; every sentence is in ``agentlab.i18n`` in English and
Chinese. The numbers come from ``call.jsonl`` (docs/site.md#pages): a skill's calls are the
lines naming it, a success is a line with ``success: true``.

The market and a skill's metadata read without a key, as ``GET /api/skills`` does, with
each skill's call count and success rate. What callers sent and got back (the call log page,
a skill's recent calls) holds other tenants' data: it is shown only to a request with an
*operator* key (``keys create --operator``, sent as HTTP Basic's password or as ``X-API-Key``;
``app.py`` checks it), and even then card numbers, e-mails and phone numbers are masked
(:func:`agentlab.errors.mask_personal`) and a session id that looks like a key is not shown.
A line holds a key's *name* (chosen by the operator), never the key or its hash. The log is
parsed once and then only what was appended (:meth:`SiteLogs.read`), so a page view costs
little however often it is asked for.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from ..errors import mask_personal
from ..i18n import Lang, joined, said_marks, t
from ..resources import render_page
from .logs import clean_session
from .service import SkillSite
from .skills import Skill

__all__ = ["CSP", "LOG_ROWS", "Stats", "detail_page", "keys_page", "log_page", "market_page", "missing_page",
           "operator_page", "skill_stats"]

#: the pages run no script: a ``<script>`` that slipped past escaping would still not run
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'"
#: the call log page shows at most this many lines, newest first
LOG_ROWS = 200
_VALUE_CHARS = 2000  # an argument or result longer than this is cut on the page (the file keeps it whole)

def _s(value: Any) -> str:
    """A value as the page shows it: nothing for None."""
    return "" if value is None else str(value)


def _json(value: Any, *, personal: bool = False) -> str:
    """``value`` as indented JSON, cut; ``personal``: what a caller sent or got, masked."""
    text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    if personal:
        text = mask_personal(text)
    if len(text) > _VALUE_CHARS:
        text = text[:_VALUE_CHARS] + " …"
    return text


def _url(path: str, params: Mapping[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return path + ("?" + urlencode(kept) if kept else "")


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.0f}%"


class Stats:
    """One skill's numbers from the call log."""

    def __init__(self, lines: Iterable[Mapping[str, Any]]):
        self.lines = list(lines)
        self.calls = len(self.lines)
        self.ok = sum(1 for x in self.lines if x.get("success") is True)
        latencies = sorted(float(x.get("latency_ms") or 0) for x in self.lines)
        self.p50 = _quantile(latencies, 0.5)
        self.p95 = _quantile(latencies, 0.95)
        self.mean = sum(latencies) / len(latencies) if latencies else None
        self.statuses = Counter(str(x.get("status")) for x in self.lines)
        verdicts = [_arguments_valid(x) for x in self.lines]
        self.checked = sum(1 for v in verdicts if v is not None)
        self.valid = sum(1 for v in verdicts if v is True)

    def __repr__(self) -> str:
        return f"Stats({self.calls} calls, {self.ok} ok)"

    @property
    def success_rate(self) -> float | None:
        return self.ok / self.calls if self.calls else None

    @property
    def valid_rate(self) -> float | None:
        """Calls whose body and arguments passed validation / calls whose body and arguments were checked: how
        often callers (models) fill the arguments right. A malformed body is checked and failed; a call refused
        before its arguments were checked (a rate limit, a skill the key may not call) is in neither count."""
        return self.valid / self.checked if self.checked else None


def _arguments_valid(line: Mapping[str, Any]) -> bool | None:
    """Whether a call's body and arguments passed validation; None when they were never checked.

    The site writes it on each line (``args_valid``). A line written before it did is read by its code: a body
    refused as such (400 or 413 ``BAD_REQUEST`` with no arguments) or ``INVALID_ARGS`` / ``BAD_JSON`` at a stage
    other than ``semantic`` failed (a business rule's refusal had well-formed arguments); a 429 was never
    checked; the rest passed."""
    if "args_valid" in line:
        v = line["args_valid"]
        return v if isinstance(v, bool) else None
    if line.get("error") in ("INVALID_ARGS", "BAD_JSON") and line.get("stage") != "semantic":
        return False
    if line.get("error") == "BAD_REQUEST" and line.get("status") in (400, 413) and line.get("arguments") is None:
        return False
    return None if line.get("status") == 429 else True


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def skill_stats(site: SkillSite) -> dict[str, Stats]:
    """Every skill's :class:`Stats` (skills never called have zero calls): the call log's lines, and the calls of a key
    past its share of refusals, whose lines the overflow log keeps apart (``keyless.jsonl``, capped on its own) so
    that no tenant pushes the others' history out: a skill's figures count what its keyed callers heard (184 calls,
    128 of them refused, read 116 calls at 48% where callers heard 30%)."""
    by_skill: dict[str, list[dict]] = {name: [] for name in site.skills}
    for line in site.logs.read("call"):
        if line.get("skill") in by_skill:
            by_skill[line["skill"]].append(line)
    for line in site.logs.read("keyless"):
        # (a call line there that names a key is a keyed caller's past its share: a request without a valid key has none)
        if line.get("log") == "call" and line.get("key_id") and line.get("skill") in by_skill:
            by_skill[line["skill"]].append(line)
    for lines in by_skill.values():  # the two logs' lines in the order they were written
        lines.sort(key=lambda x: x.get("ts") or 0)
    return {name: Stats(lines) for name, lines in by_skill.items()}


def _page(template: str, title: str, lang: Lang, here: str, params: Mapping[str, Any], **context: Any) -> str:
    """A page: the body ``template`` inside the site's header, with links to this page in each language."""
    languages = [(_url(here, {**params, "lang": lg}), lg, label) for lg, label in (("en", "English"), ("zh", "中文"))]

    def say(key: str, **fields: Any) -> str:
        return t(key, lang, **fields)
    # the marks redaction left in a log line ([secret removed]) said in the page's language, as every page says them
    return said_marks(render_page(template, say, lang=lang, title=title, languages=languages,
                                  market_url=_url("/", {"lang": lang}), logs_url=_url("/logs", {"lang": lang}),
                                  keys_url=_url("/keys", {"lang": lang}), **context), lang)


def _one_line(text: str) -> str:
    for stop in ("。", ". "):
        if stop in text:
            return text.split(stop, 1)[0] + stop.strip()
    return text


def _tags(skill: Skill) -> dict[str, Any]:
    return {"rate_class": skill.meta.rate_class, "tags": list(skill.meta.tags)}


def market_page(site: SkillSite, lang: Lang) -> str:
    """``GET /``: a card per skill with its name, one line of description, tags, calls and success rate."""
    stats = skill_stats(site)
    cards = [{"name": skill.name, "href": _url(f"/skills/{quote(skill.name)}", {"lang": lang}),
              "display_name": skill.meta.text("display_name", lang), "line": _one_line(skill.meta.text("description", lang)),
              "calls": stats[skill.name].calls, "success": _percent(stats[skill.name].success_rate), **_tags(skill)}
             for skill in site.skills.values()]
    return _page("site_market.html", t("page.market", lang), lang, "/", {}, cards=cards)


def _schema_table(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    rows = [{"name": name, "type": _s(spec.get("type", "")), "required": name in required,
             "description": _s(spec.get("description", "")),
             "enum": ", ".join(map(str, spec["enum"])) if "enum" in spec else None}
            for name, spec in props.items() if isinstance(spec, Mapping)] if props else []
    return {"rows": rows, "raw": _json(dict(schema))}


def _log_rows(lines: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Call log lines as the table shows them: personal data masked, a key sent as a session id not shown."""
    rows = []
    for line in lines:
        ok = line.get("success") is True
        ts = line.get("ts")
        rows.append({"ok": ok, "status": _s(line.get("status")), "replayed": bool(line.get("replayed")),
                     "when": _time(ts) if isinstance(ts, (int, float)) else "", "skill": _s(line.get("skill")),
                     "latency": _s(line.get("latency_ms")), "key": line.get("key_name") or "—",
                     "session": _session(line.get("session_id")) or "—",
                     "arguments": _json(line.get("arguments"), personal=True),
                     "result": _json(line.get("result") if ok else {"error": line.get("error")}, personal=True)})
    return rows


def _session(value: Any) -> str | None:
    """A logged session id as shown: an old line may hold a key sent in its place."""
    if value is None or value == "":
        return None
    return clean_session(value) or (str(value) if str(value).startswith("[") else "[secret removed]")


def _time(ts: float) -> str:
    import datetime as _dt
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def detail_page(site: SkillSite, skill: Skill, lang: Lang, *, operator: bool = False) -> str:
    """``GET /skills/{name}``: schemas, examples, notes, changelog, limits and recent numbers;
    the recent calls themselves only for an ``operator``."""
    meta = skill.meta.to_dict(lang)
    s = skill_stats(site)[skill.name]
    limits = [(t("page.class", lang), t("page.class." + meta["rate_class"], lang)),
              (t("page.per_minute", lang), meta["limits"]["per_minute"]),
              (t("page.timeout", lang), f"{meta['timeout']:g} s"),
              (t("page.idempotency", lang), t("page.yes", lang) if meta["idempotency"] else t("page.no", lang))]
    limits += [(k, v) for k, v in meta["limits"].items() if k != "per_minute"]
    if meta["fallback_hint"]:
        limits.append((t("page.fallback", lang), meta["fallback_hint"]))
    return _page(
        "site_detail.html", meta["display_name"], lang, f"/skills/{quote(skill.name)}", {},
        name=skill.name, skill=_tags(skill), display_name=meta["display_name"], version=_s(meta["version"]),
        description=_s(meta["description"]), limits=[(_s(k), _s(v)) for k, v in limits],
        input_schema=_schema_table(skill.meta.input_schema_in(lang)), output_schema=_schema_table(meta["output_schema"]),
        examples=[(_json(ex.get("arguments", ex)), _json(ex.get("result"))) for ex in meta["examples"]],
        notes=[_s(n) for n in meta["notes"]],
        changelog=[(_s(c.get("version")), _s(c.get("change"))) for c in meta["changelog"]],
        calls=s.calls, success=_percent(s.success_rate),
        valid=t("page.valid_of", lang, rate=_percent(s.valid_rate), passed=s.valid, calls=s.checked)
        + ("" if s.checked == s.calls else t("tools2.page.unchecked", lang, n=s.calls - s.checked)),
        p50="—" if s.p50 is None else f"{s.p50:g} ms", p95="—" if s.p95 is None else f"{s.p95:g} ms",
        mean="—" if s.mean is None else f"{s.mean:.2f} ms",  # as precise as the log's latencies, as p50 and p95
        statuses=joined((t("word.status_count", lang, status=k, n=v) for k, v in sorted(s.statuses.items())), lang,
                        "list") or "—",
        recent=_log_rows(list(reversed(s.lines[-10:]))) if operator else None,
        log_link=_url("/logs", {"skill": skill.name, "lang": lang}))


def missing_page(site: SkillSite, name: str, lang: Lang) -> str:
    """A 404 page for a skill the site does not have, with the closest name when one is clearly meant."""
    closest = site.unknown(name, lang).body["error"].get("closest")
    return _page("site_missing.html", "404", lang, f"/skills/{quote(name)}", {}, name=name, closest=closest,
                 closest_url=_url(f"/skills/{quote(closest)}", {"lang": lang}) if closest else "")


def log_page(site: SkillSite, lang: Lang, *, skill: str = "", status: str = "", key: str = "", session: str = "") -> str:
    """``GET /logs``: the call log, newest first, filtered by skill, status, key name and session."""
    lines = site.logs.read("call")
    picked = [x for x in lines
              if (not skill or x.get("skill") == skill) and (not status or str(x.get("status")) == status)
              and (not key or x.get("key_name") == key) and (not session or x.get("session_id") == session)]
    shown = list(reversed(picked))[:LOG_ROWS]
    params = {"skill": skill, "status": status, "key": key, "session": session}
    return _page("site_log.html", t("page.logs", lang), lang, "/logs", params, **params,
                 skills=sorted({str(x.get("skill")) for x in lines if x.get("skill")} | set(site.skills)),
                 statuses=sorted({str(x.get("status")) for x in lines if x.get("status") is not None}),
                 key_names=sorted({str(x["key_name"]) for x in lines if x.get("key_name")}),
                 intro=joined((t(k, lang) for k in ("page.logs.intro", "page.logs.masked", "page.logs.keyless")), lang,
                              "sentence"),
                 count=t("page.showing", lang, shown=len(shown), matched=len(picked), total=len(lines)),
                 clear_url=_url("/logs", {"lang": lang}), rows=_log_rows(shown))


def operator_page(lang: Lang, here: str = "/logs") -> str:
    """The ``401`` page of a call log asked for without an operator key: what to send, how to make one."""
    return _page("site_operator.html", t("page.operator", lang), lang, here, {})


def keys_page(site: SkillSite, lang: Lang, token: Callable[[str], str], *, message: str | None = None) -> str:
    """``GET /keys`` (an operator's): every key by id and name, never a key or its hash, each active one with a
    revoke button. ``token(id)`` is the form's proof that it came from this page (app.py checks it)."""
    rows = [{"id": r.id, "name": r.name, "skills": ", ".join(r.skills),
             "quota": f"{r.quota}/{r.period}" if r.quota else t("site.no_quota", lang),
             "role": t("page.keys.operator" if r.operator else "page.keys.agent", lang), "created": _time(r.created),
             "state": t("page.keys.active", lang) if r.revoked is None else t("page.keys.revoked", lang,
                                                                                when=_time(r.revoked)),
             "revoke": None if r.revoked is not None else {"url": _url(f"/keys/{r.id}/revoke", {"lang": lang}),
                                                            "token": token(r.id)}}
            for r in site.keys.all()]
    return _page("site_keys.html", t("page.keys", lang), lang, "/keys", {}, rows=rows, message=message)

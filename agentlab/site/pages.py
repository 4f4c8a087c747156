"""The site's pages for people (docs/site.md#pages): the skill market, a skill's detail, the call log.

Server-rendered HTML from plain string templates: no front-end build, no script at all
(the pages send a ``Content-Security-Policy`` that forbids scripts, as a second line behind
escaping). Every value that came from a skill's metadata, a caller or a log line goes
through :func:`html.escape` once, in :func:`_e`; every sentence is in ``agentlab.i18n``
in English and Chinese. The numbers come from ``call.jsonl`` (docs/site.md#pages): a
skill's calls are the lines naming it, a success is a line with ``success: true``.

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

import html
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from ..errors import mask_personal
from ..i18n import Lang, t
from .logs import clean_session
from .service import SkillSite
from .skills import Skill

__all__ = ["CSP", "LOG_ROWS", "Stats", "detail_page", "log_page", "market_page", "missing_page", "operator_page",
           "skill_stats"]

#: the pages run no script: a ``<script>`` that slipped past escaping would still not run
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'"
#: the call log page shows at most this many lines, newest first
LOG_ROWS = 200
_VALUE_CHARS = 2000  # an argument or result longer than this is cut on the page (the file keeps it whole)

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","PingFang SC",sans-serif;margin:0;
 color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.8rem 1.5rem;display:flex;gap:1.5rem;align-items:center;flex-wrap:wrap}
header a{color:#fff;text-decoration:none}header .brand{font-weight:700}header nav{display:flex;gap:1rem;flex:1}
header .lang a{padding:.1rem .4rem;border:1px solid #fff6;border-radius:4px}header .lang a[aria-current]{background:#fff;color:#1d2330}
main{padding:1rem 1.5rem;max-width:1200px}h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:1rem;padding:0;list-style:none}
.card{background:#fff;border:1px solid #d9dde5;border-radius:8px;padding:.9rem}
.card h2{margin:0 0 .2rem;font-size:1.05rem}.card .name{font-family:monospace;color:#556;font-size:.85rem}
.card p{margin:.5rem 0;font-size:.92rem}.tag{display:inline-block;background:#e8edf7;border-radius:10px;
 padding:0 .5rem;margin:0 .25rem .25rem 0;font-size:.8rem}.rate-write,.rate-paid{background:#fbe3d6}
.stats{font-size:.85rem;color:#334}table{border-collapse:collapse;background:#fff;width:100%;font-size:.88rem}
th,td{border:1px solid #d9dde5;padding:.35rem .5rem;text-align:left;vertical-align:top}
pre{margin:0;white-space:pre-wrap;word-break:break-word;font-size:.8rem;max-width:420px}
.ok{color:#116329}.bad{color:#a40e26}form.filters{display:flex;gap:.6rem;flex-wrap:wrap;align-items:end;margin-bottom:1rem}
form.filters label{display:flex;flex-direction:column;font-size:.8rem}.muted{color:#667}
"""


def _e(value: Any) -> str:
    """The one place where text becomes HTML."""
    return html.escape("" if value is None else str(value), quote=True)


def _json(value: Any, *, personal: bool = False) -> str:
    """``value`` as indented JSON, cut and escaped; ``personal``: what a caller sent or got, masked."""
    text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    if personal:
        text = mask_personal(text)
    if len(text) > _VALUE_CHARS:
        text = text[:_VALUE_CHARS] + " …"
    return _e(text)


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
        self.statuses = Counter(str(x.get("status")) for x in self.lines)

    def __repr__(self) -> str:
        return f"Stats({self.calls} calls, {self.ok} ok)"

    @property
    def success_rate(self) -> float | None:
        return self.ok / self.calls if self.calls else None


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def skill_stats(site: SkillSite) -> dict[str, Stats]:
    """Every skill's :class:`Stats` (skills never called have zero calls)."""
    by_skill: dict[str, list[dict]] = {name: [] for name in site.skills}
    for line in site.logs.read("call"):
        if line.get("skill") in by_skill:
            by_skill[line["skill"]].append(line)
    return {name: Stats(lines) for name, lines in by_skill.items()}


def _page(title: str, body: str, lang: Lang, here: str, params: Mapping[str, Any]) -> str:
    other = {**params}
    links = []
    for lg, label in (("en", "English"), ("zh", "中文")):
        other["lang"] = lg
        current = ' aria-current="true"' if lg == lang else ""
        links.append(f'<a href="{_e(_url(here, other))}" lang="{lg}"{current}>{label}</a>')
    nav = (f'<a href="{_e(_url("/", {"lang": lang}))}">{_e(t("page.market", lang))}</a>'
           f'<a href="{_e(_url("/logs", {"lang": lang}))}">{_e(t("page.logs", lang))}</a>')
    return (f'<!doctype html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)} · {_e(t('page.site', lang))}</title><style>{_STYLE}</style></head><body>"
            f'<header><span class="brand">{_e(t("page.site", lang))}</span><nav>{nav}</nav>'
            f'<span class="lang" aria-label="{_e(t("page.language", lang))}">{" ".join(links)}</span></header>'
            f"<main>{body}</main></body></html>")


def _one_line(text: str) -> str:
    for stop in ("。", ". "):
        if stop in text:
            return text.split(stop, 1)[0] + stop.strip()
    return text


def _tags(skill: Skill, lang: Lang) -> str:
    rate = f'<span class="tag rate-{_e(skill.meta.rate_class)}">{_e(t("page.class." + skill.meta.rate_class, lang))}</span>'
    return rate + "".join(f'<span class="tag">{_e(tag)}</span>' for tag in skill.meta.tags)


def market_page(site: SkillSite, lang: Lang) -> str:
    """``GET /``: a card per skill with its name, one line of description, tags, calls and success rate."""
    stats = skill_stats(site)
    cards = []
    for skill in site.skills.values():
        s = stats[skill.name]
        href = _url(f"/skills/{quote(skill.name)}", {"lang": lang})
        cards.append(
            f'<li class="card" data-skill="{_e(skill.name)}"><h2><a href="{_e(href)}">'
            f'{_e(skill.meta.text("display_name", lang))}</a></h2><div class="name">{_e(skill.name)}</div>'
            f'<p>{_e(_one_line(skill.meta.text("description", lang)))}</p><div>{_tags(skill, lang)}</div>'
            f'<div class="stats"><span class="calls">{_e(t("page.calls", lang))}: {s.calls}</span> · '
            f'<span class="success">{_e(t("page.success_rate", lang))}: {_percent(s.success_rate)}</span></div></li>')
    body = (f"<h1>{_e(t('page.market', lang))}</h1><p class='muted'>{_e(t('page.market.intro', lang, n=len(cards)))}</p>"
            f'<ul class="cards">{"".join(cards)}</ul>')
    return _page(t("page.market", lang), body, lang, "/", {})


def _schema_table(schema: Mapping[str, Any], lang: Lang) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    if not props:
        return f"<p class='muted'>{_e(t('page.no_fields', lang))}</p><pre>{_json(dict(schema))}</pre>"
    rows = "".join(
        f"<tr><td><code>{_e(name)}</code></td><td>{_e(spec.get('type', ''))}</td>"
        f"<td>{_e(t('page.yes', lang) if name in required else '')}</td><td>{_e(spec.get('description', ''))}"
        + (f" <span class='muted'>({_e(', '.join(map(str, spec['enum'])))})</span>" if "enum" in spec else "")
        + "</td></tr>" for name, spec in props.items() if isinstance(spec, Mapping))
    head = "".join(f"<th>{_e(t(k, lang))}</th>" for k in ("page.field", "page.type", "page.required", "page.description"))
    return (f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"<details><summary>{_e(t('page.raw_schema', lang))}</summary><pre>{_json(dict(schema))}</pre></details>")


def _log_table(lines: list[Mapping[str, Any]], lang: Lang, *, with_skill: bool = True) -> str:
    cols = ["page.time", *(["page.skill"] if with_skill else []), "page.status", "page.latency", "page.key",
            "page.session", "page.arguments", "page.result"]
    head = "".join(f"<th>{_e(t(c, lang))}</th>" for c in cols)
    rows = []
    for line in lines:
        ok = line.get("success") is True
        outcome = line.get("result") if ok else {"error": line.get("error")}
        skill_cell = (f"<td class='skill'>{_e(line.get('skill'))}</td>" if with_skill else "")
        ts = line.get("ts")
        when = _e(_time(ts)) if isinstance(ts, (int, float)) else ""
        rows.append(
            f'<tr class="call" data-status="{_e(line.get("status"))}"><td>{when}</td>{skill_cell}'
            f'<td class="{"ok" if ok else "bad"}">{_e(line.get("status"))}'
            + (f" {_e(t('page.replayed', lang))}" if line.get("replayed") else "") + "</td>"
            f"<td>{_e(line.get('latency_ms'))} ms</td><td class='key'>{_e(line.get('key_name') or '—')}</td>"
            f"<td class='session'>{_e(_session(line.get('session_id')) or '—')}</td>"
            f"<td class='arguments'><pre>{_json(line.get('arguments'), personal=True)}</pre></td>"
            f"<td class='result'><pre>{_json(outcome, personal=True)}</pre></td></tr>")
    if not rows:
        return f"<p class='muted empty'>{_e(t('page.no_calls', lang))}</p>"
    return f"<table class='log'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


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
    limit_rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in limits)
    examples = "".join(
        f"<tr><td><pre>{_json(ex.get('arguments', ex))}</pre></td><td><pre>{_json(ex.get('result'))}</pre></td></tr>"
        for ex in meta["examples"])
    examples_html = (f"<table class='examples'><thead><tr><th>{_e(t('page.arguments', lang))}</th>"
                     f"<th>{_e(t('page.result', lang))}</th></tr></thead><tbody>{examples}</tbody></table>"
                     if examples else f"<p class='muted'>{_e(t('page.none', lang))}</p>")
    notes = "".join(f"<li>{_e(n)}</li>" for n in meta["notes"])
    changes = "".join(f"<tr><td>{_e(c.get('version'))}</td><td>{_e(c.get('change'))}</td></tr>" for c in meta["changelog"])
    statuses = ", ".join(f"{_e(k)}: {v}" for k, v in sorted(s.statuses.items())) or "—"
    recent = list(reversed(s.lines[-10:]))
    log_link = _url("/logs", {"skill": skill.name, "lang": lang})
    body = (
        f'<h1 data-skill="{_e(skill.name)}">{_e(meta["display_name"])} <code class="muted">{_e(skill.name)}</code> '
        f'<span class="muted">v{_e(meta["version"])}</span></h1><div>{_tags(skill, lang)}</div>'
        f'<p class="description">{_e(meta["description"])}</p>'
        f"<h2>{_e(t('page.limits', lang))}</h2><table class='limits'>{limit_rows}</table>"
        f"<h2>{_e(t('page.input', lang))}</h2><div class='input-schema'>{_schema_table(meta['input_schema'], lang)}</div>"
        f"<h2>{_e(t('page.output', lang))}</h2><div class='output-schema'>{_schema_table(meta['output_schema'], lang)}</div>"
        f"<h2>{_e(t('page.examples', lang))}</h2>{examples_html}"
        f"<h2>{_e(t('page.notes', lang))}</h2>"
        + (f"<ul class='notes'>{notes}</ul>" if notes else f"<p class='muted'>{_e(t('page.none', lang))}</p>")
        + f"<h2>{_e(t('page.changelog', lang))}</h2>"
        + (f"<table class='changelog'><thead><tr><th>{_e(t('page.version', lang))}</th><th>{_e(t('page.change', lang))}"
           f"</th></tr></thead><tbody>{changes}</tbody></table>" if changes else f"<p class='muted'>{_e(t('page.none', lang))}</p>")
        + f"<h2>{_e(t('page.recent', lang))}</h2><p class='stats'>"
        f"<span class='calls'>{_e(t('page.calls', lang))}: {s.calls}</span> · "
        f"<span class='success'>{_e(t('page.success_rate', lang))}: {_percent(s.success_rate)}</span> · "
        f"p50 {_e('—' if s.p50 is None else f'{s.p50:g} ms')} · p95 {_e('—' if s.p95 is None else f'{s.p95:g} ms')} · "
        f"{_e(t('page.status', lang))}: {statuses}</p>"
        + (_log_table(recent, lang, with_skill=False) if operator
           else f"<p class='muted operator-only'>{_e(t('page.recent.operator', lang))}</p>")
        + f'<p><a href="{_e(log_link)}">{_e(t("page.all_calls", lang))}</a></p>')
    return _page(meta["display_name"], body, lang, f"/skills/{quote(skill.name)}", {})


def missing_page(site: SkillSite, name: str, lang: Lang) -> str:
    """A 404 page for a skill the site does not have, with the closest name when one is clearly meant."""
    reply = site.unknown(name, lang)
    closest = reply.body["error"].get("closest")
    link = (f'<p>{_e(t("page.did_you_mean", lang))} <a href="{_e(_url(f"/skills/{quote(closest)}", {"lang": lang}))}">'
            f"{_e(closest)}</a></p>" if closest else "")
    body = f"<h1>{_e(t('site.unknown_skill', lang, name=name))}</h1>{link}"
    return _page("404", body, lang, f"/skills/{quote(name)}", {})


def log_page(site: SkillSite, lang: Lang, *, skill: str = "", status: str = "", key: str = "", session: str = "") -> str:
    """``GET /logs``: the call log, newest first, filtered by skill, status, key name and session."""
    lines = site.logs.read("call")
    skills = sorted({str(x.get("skill")) for x in lines if x.get("skill")} | set(site.skills))
    statuses = sorted({str(x.get("status")) for x in lines if x.get("status") is not None})
    key_names = sorted({str(x["key_name"]) for x in lines if x.get("key_name")})
    picked = [x for x in lines
              if (not skill or x.get("skill") == skill) and (not status or str(x.get("status")) == status)
              and (not key or x.get("key_name") == key) and (not session or x.get("session_id") == session)]
    shown = list(reversed(picked))[:LOG_ROWS]

    def select(name: str, label: str, options: list[str], value: str) -> str:
        opts = [f'<option value="">{_e(t("page.any", lang))}</option>'] + [
            f'<option value="{_e(o)}"{" selected" if o == value else ""}>{_e(o)}</option>' for o in options]
        return f'<label>{_e(t(label, lang))}<select name="{name}">{"".join(opts)}</select></label>'

    form = (f'<form class="filters" method="get" action="/logs">{select("skill", "page.skill", skills, skill)}'
            f'{select("status", "page.status", statuses, status)}{select("key", "page.key", key_names, key)}'
            f'<label>{_e(t("page.session", lang))}<input name="session" value="{_e(session)}" maxlength="64"></label>'
            f'<input type="hidden" name="lang" value="{lang}"><button type="submit">{_e(t("page.filter", lang))}</button>'
            f'<a href="{_e(_url("/logs", {"lang": lang}))}">{_e(t("page.clear", lang))}</a></form>')
    count = t("page.showing", lang, shown=len(shown), matched=len(picked), total=len(lines))
    intro = " ".join(t(k, lang) for k in ("page.logs.intro", "page.logs.masked", "page.logs.keyless"))
    body = (f"<h1>{_e(t('page.logs', lang))}</h1><p class='muted'>{_e(intro)}</p>{form}"
            f"<p class='count'>{_e(count)}</p>{_log_table(shown, lang)}")
    params = {"skill": skill, "status": status, "key": key, "session": session}
    return _page(t("page.logs", lang), body, lang, "/logs", params)


def operator_page(lang: Lang, here: str = "/logs") -> str:
    """The ``401`` page of a call log asked for without an operator key: what to send, how to make one."""
    body = (f"<h1>{_e(t('page.operator', lang))}</h1><p class='operator-only'>{_e(t('page.operator.why', lang))}</p>"
            f"<p>{_e(t('page.operator.how', lang))}</p>"
            f"<pre>python -m agentlab site keys create --name NAME --operator</pre>")
    return _page(t("page.operator", lang), body, lang, here, {})

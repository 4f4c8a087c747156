"""The skill site's pages (agentlab/site/pages.py): the market, a skill's detail and the call log.

Fast tests render them in process with FastAPI's TestClient (escaping, both languages, the numbers, no key
shown on any page, the call log for an operator's key only, personal data masked). The browser tests start
the real site (``python -m agentlab site`` under uvicorn on a free loopback port, as test_site_contract.py
does), make calls over HTTP, then open the pages in Debian's chromium with playwright; they skip with the
reason where chromium or playwright is missing, and fail instead in CI (AGENTLAB_CI=1). On failure a
screenshot and the console go to test-artifacts/.
"""
import html
import json
import re

import httpx
import pytest
from fastapi.testclient import TestClient
from site_helpers import Clock, SiteServer
from test_browser import _browser, _need_browser
from test_site_contract import cli
from typography import english_punctuation

from agentlab.site.app import create_app
from agentlab.site.pages import CSP
from agentlab.site.service import SkillSite

SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.title='pwned'\">"


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path, clock=Clock())


@pytest.fixture
def http(site):
    """A client that sends an operator key (as HTTP Basic's password, a browser's way) on every request."""
    key, _ = site.keys.create("ops", operator=True)
    client = TestClient(create_app(site))
    client.auth = ("ops", key)
    return client


@pytest.fixture
def anon(site):
    return TestClient(create_app(site))


def call(http, key, name, args, session=None, **headers):
    extra = {"X-Session-Id": session} if session else {}
    return http.post(f"/api/skills/{name}/execute", json={"arguments": args}, headers={"X-API-Key": key, **extra, **headers})


def calls(http, key):
    """Two weather calls (one refused: the city is a script), an order, an escalation whose summary is markup."""
    assert call(http, key, "current_weather", {"city": "Beijing"}, "sess-a").status_code == 200
    assert call(http, key, "current_weather", {"city": SCRIPT}, "sess-a").status_code == 422
    assert call(http, key, "get_order", {"order_id": "A1001"}, "sess-b").status_code == 200
    assert call(http, key, "escalate_to_human", {"summary": IMG}, "sess-b", **{"Idempotency-Key": "esc-1"}).status_code == 200


def test_the_market_shows_every_skill_with_its_numbers(site, http):
    key, _ = site.create_key("teacher")
    calls(http, key)
    page = http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text.count('class="card"') == len(site.skills)
    card = re.search(r'<li class="card" data-skill="current_weather">.*?</li>', page.text).group(0)
    assert "Current weather" in card and "Calls: 2" in card and "Success rate: 50%" in card and ">weather<" in card
    never = re.search(r'<li class="card" data-skill="set_budget">.*?</li>', page.text).group(0)
    assert "Calls: 0" in never and "Success rate: —" in never


def test_every_page_escapes_what_callers_sent_and_runs_no_script(site, http):
    key, _ = site.create_key("teacher")
    calls(http, key)
    for url in ("/", "/logs", "/skills/current_weather", "/skills/escalate_to_human", "/logs?session=sess-a"):
        page = http.get(url)
        assert "<script" not in page.text.lower() and "<img" not in page.text.lower(), url
        assert page.headers["Content-Security-Policy"] == CSP and "script-src" not in CSP  # default-src 'none' covers it
    log = http.get("/logs").text
    # escaped, whichever entity spells the quote (the templates' &#39; or html.escape's &#x27;)
    assert SCRIPT in html.unescape(log) and "&lt;script&gt;document.title=" in log and "&lt;img src=x onerror=" in log
    evil = http.get("/skills/<script>alert(1)")
    assert evil.status_code == 404 and "<script>" not in evil.text and "&lt;script&gt;" in evil.text
    assert "<script" not in http.get("/logs", params={"session": SCRIPT, "skill": SCRIPT}).text


def test_no_page_shows_a_key_or_its_hash(site, http, tmp_path):
    key, record = site.create_key("teacher")
    calls(http, key)
    import hashlib
    digest = hashlib.sha256(key.encode()).hexdigest()
    for url in ("/", "/logs", "/skills/get_order", "/logs?key=teacher"):
        text = http.get(url).text
        assert key not in text and digest not in text and record.id not in text, url
    assert "teacher" in http.get("/logs").text  # the key's name, which the operator chose, is shown


def test_the_log_filters_by_skill_status_key_and_session(site, http):
    teacher, _ = site.create_key("teacher")
    student, _ = site.create_key("student", ["get_order"])
    calls(http, teacher)
    call(http, student, "get_order", {"order_id": "A1003"}, "sess-c")

    def rows(**params):
        return re.findall(r'<tr class="call"', http.get("/logs", params=params).text)

    assert len(rows()) == 5
    assert len(rows(skill="current_weather")) == 2 and len(rows(status="422")) == 1
    assert len(rows(key="student")) == 1 and len(rows(session="sess-b")) == 2
    assert len(rows(skill="get_order", key="teacher")) == 1 and rows(session="nobody") == []
    page = http.get("/logs", params={"skill": "get_order"}).text
    assert "Showing 2 of 2 matching calls (5 in the log)." in page and '<option value="get_order" selected>' in page


def test_the_detail_shows_schemas_examples_notes_changelog_limits_and_recent_calls(site, http):
    key, _ = site.create_key("teacher")
    calls(http, key)
    page = http.get("/skills/current_weather").text
    for part in ("Input schema", "Output schema", "<code>city</code>", "<code>allow_cached</code>", "Examples",
                 "Notes", "weather_source.json", "Changelog", "1.1.0", "Chinese city names", "Limits",
                 "Calls per minute per key", "<td>60</td>", "<td>2 s</td>", "allow_cached=true", "Recent calls",
                 "Calls: 2", "Success rate: 50%", 'href="/logs?skill=current_weather&amp;lang=en"'):
        assert part in page, part
    write = http.get("/skills/send_notification").text
    assert "Needs an Idempotency-Key</th><td>yes" in write and "<td>10</td>" in write
    missing = http.get("/skills/current_wether")
    assert missing.status_code == 404 and 'href="/skills/current_weather?lang=en"' in missing.text


@pytest.mark.parametrize("how", [{"params": {"lang": "zh"}}, {"headers": {"Accept-Language": "zh-CN,zh;q=0.9"}},
                                 {"headers": {"Accept-Language": "fr-FR,zh-CN;q=0.8,en;q=0.5"}}])
def test_every_page_speaks_chinese(site, http, how):
    key, _ = site.create_key("teacher")
    calls(http, key)
    market = http.get("/", **how).text
    assert '<html lang="zh-CN">' in market and "技能市场" in market and "当前天气查询" in market
    assert "调用次数：2" in market and "成功率：50%" in market and "Success rate" not in market
    detail = http.get("/skills/current_weather", **how).text
    assert "输入 schema" in detail and "变更记录" in detail and "每个密钥每分钟调用上限" in detail and "实时天气源" in detail
    log = http.get("/logs", **how).text
    assert "调用日志" in log and "密钥名称" in log and "筛选" in log and "Call log</h1>" not in log
    # every page, each skill's detail among them, punctuated as Chinese: the market read "调用次数: 2"
    pages = [market, detail, log, http.get("/keys", **how).text, http.get("/skills/current_wether", **how).text,
             *(http.get(f"/skills/{name}", **how).text for name in site.skills)]
    assert not [c for page in pages for c in english_punctuation(page, page=True)]


def test_the_language_switch_keeps_the_filters(site, http):
    page = http.get("/logs", params={"skill": "get_order", "session": "s1"}).text
    assert 'href="/logs?skill=get_order&amp;session=s1&amp;lang=zh" lang="zh">中文</a>' in page
    assert 'href="/logs?skill=get_order&amp;session=s1&amp;lang=en" lang="en" aria-current="true">English</a>' in page
    assert '<html lang="en">' in http.get("/", headers={"Accept-Language": "fr"}).text


def test_the_call_log_needs_an_operator_key(site, anon):
    agent, _ = site.create_key("agent")
    ops, _ = site.keys.create("ops", operator=True)
    calls(anon, agent)
    for how in ({}, {"headers": {"X-API-Key": agent}}, {"auth": ("agent", agent)},
                {"headers": {"Authorization": "Basic !!not base64!!"}}, {"headers": {"Authorization": "Bearer x"}}):
        page = anon.get("/logs", **how)
        assert page.status_code == 401 and page.headers["WWW-Authenticate"].startswith("Basic realm=")
        assert "Operator key needed" in page.text and "keys create --name NAME --operator" in page.text
        assert "&lt;script&gt;document" not in page.text and "A1001" not in page.text  # no caller's data
    zh = anon.get("/logs", params={"lang": "zh"})
    assert zh.status_code == 401 and "需要运维密钥" in zh.text and "Operator" not in zh.text
    import base64
    for how in ({"headers": {"X-API-Key": ops}}, {"auth": ("anyone", ops)},
                {"headers": {"Authorization": "Basic " + base64.b64encode(f"{ops}:".encode()).decode()}}):
        page = anon.get("/logs", **how)
        assert page.status_code == 200 and len(re.findall(r'<tr class="call"', page.text)) == 4, how
        assert page.headers["Cache-Control"] == "no-store"
    detail = anon.get("/skills/current_weather")  # the metadata and the numbers stay public; the calls do not
    assert detail.status_code == 200 and "Calls: 2" in detail.text and "table class='log'" not in detail.text
    assert "&lt;script&gt;document" not in detail.text and "shown to an operator only" in detail.text
    assert "只对运维人员显示" in anon.get("/skills/current_weather", params={"lang": "zh"}).text
    shown = anon.get("/skills/current_weather", headers={"X-API-Key": ops}).text
    assert "&lt;script&gt;document" in shown and "operator only" not in shown
    assert anon.get("/").status_code == 200


def test_pages_mask_card_numbers_e_mails_and_phone_numbers(site, http):
    key, _ = site.create_key("desk")
    note = {"to": "jane.doe@example.com", "subject": "Refund",
            "body": "Card 4111 1111 1111 1111 was refunded; call +86 138 0013 8000 or 13900139000."}
    assert call(http, key, "send_notification", note, **{"Idempotency-Key": "n-1"}).status_code == 200
    for url in ("/logs", "/skills/send_notification"):
        page = http.get(url).text
        assert "j***@example.com" in page and "[card …1111]" in page and "[phone …00]" in page, url
        for clear in ("jane.doe", "4111 1111", "138 0013", "13900139000"):
            assert clear not in page, (url, clear)
    assert "4111 1111 1111 1111" in (site.data_dir / "logs" / "call.jsonl").read_text()  # the operator's record keeps it
    assert "masked" in http.get("/logs").text and "打码" in http.get("/logs", params={"lang": "zh"}).text


def test_a_key_sent_as_a_session_id_is_neither_stored_nor_shown(site, http):
    key, _ = site.create_key("desk")
    assert call(http, key, "get_order", {"order_id": "A1001"}, session=key).status_code == 200
    logs = site.data_dir / "logs"
    assert key not in "".join(p.read_text() for p in logs.glob("*.jsonl"))
    old = {"ts": 1.0, "request_id": "old", "session_id": key, "skill": "get_order", "status": 200, "key_name": "desk"}
    with (logs / "call.jsonl").open("a") as f:  # a line written before session ids were checked
        f.write(json.dumps(old) + "\n")
    page = http.get("/logs").text
    assert key not in page and "[secret removed]" in page


# ------------------------------------------------------------------ in a real browser

@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The real site on a free loopback port, with a teacher key and a few calls already made."""
    data = tmp_path_factory.mktemp("pages-data")
    made = cli("keys", "create", "--name", "teacher", data=data)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    made = cli("keys", "create", "--name", "ops", "--operator", data=data)
    assert made.returncode == 0 and "operator key" in made.stderr, made.stderr
    ops = made.stdout.strip()
    with SiteServer(data, "--host", "127.0.0.1", log=data / "server.out", ready="/") as site, \
            httpx.Client(base_url=site.base, timeout=15) as http:
        calls(http, key)
        yield {"url": site.base, "key": key, "ops": ("ops", ops), "skills": len(http.get("/api/skills").json()["skills"])}


@pytest.mark.browser
def test_the_market_in_a_browser_in_both_languages(live, tmp_path):
    _need_browser()
    with _browser(tmp_path, "site-market") as page:
        page.goto(live["url"] + "/")
        assert page.locator("li.card").count() == live["skills"]
        card = page.locator('li.card[data-skill="current_weather"]')
        assert card.get_by_role("heading").inner_text() == "Current weather"
        assert "Calls: 2" in card.inner_text() and "Success rate: 50%" in card.inner_text()
        page.get_by_role("link", name="中文").click()
        page.get_by_role("heading", name="技能市场").wait_for()
        assert page.url.endswith("/?lang=zh")
        card = page.locator('li.card[data-skill="current_weather"]')
        assert card.get_by_role("heading").inner_text() == "当前天气查询" and "成功率：50%" in card.inner_text()
        card.get_by_role("link").click()
        page.get_by_role("heading", name="输入 schema").wait_for()
        assert live["key"] not in page.content()


@pytest.mark.browser
def test_the_detail_in_a_browser(live, tmp_path):
    _need_browser()
    with _browser(tmp_path, "site-detail", credentials=live["ops"]) as page:
        page.goto(live["url"] + "/logs")  # signed in there, the browser sends the key to the whole site
        page.goto(live["url"] + "/skills/current_weather")
        page.get_by_role("heading", name="Input schema").wait_for()
        assert page.locator(".input-schema td code", has_text="allow_cached").count() == 1
        for heading in ("Output schema", "Examples", "Notes", "Changelog", "Limits", "Recent calls"):
            assert page.get_by_role("heading", name=heading).count() == 1, heading
        assert page.locator("table.changelog tbody tr").count() == 3
        assert page.locator("table.log tr.call").count() == 2
        page.get_by_role("link", name="All calls of this skill in the call log").click()
        page.wait_for_url("**/logs?skill=current_weather*")
        assert page.locator("tr.call").count() == 2


@pytest.mark.browser
def test_the_call_log_filters_and_shows_an_injected_script_as_text(live, tmp_path):
    _need_browser()
    dialogs: list[str] = []
    with _browser(tmp_path, "site-logs", credentials=live["ops"]) as page:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(live["url"] + "/logs")
        assert page.locator("tr.call").count() == 4
        assert page.title() != "pwned" and page.locator("script").count() == 0 and page.locator("main img").count() == 0
        assert page.get_by_text(SCRIPT).count() == 1 and page.get_by_text("onerror").count() >= 1  # shown, as text
        page.locator('select[name="skill"]').select_option("current_weather")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url("**skill=current_weather**")
        assert page.locator("tr.call").count() == 2 and page.locator("td.skill", has_text="get_order").count() == 0
        page.locator('select[name="status"]').select_option("422")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url("**status=422**")
        assert page.locator("tr.call").count() == 1
        page.goto(live["url"] + "/logs?session=sess-b&key=teacher")
        assert page.locator("tr.call").count() == 2 and page.locator("td.key", has_text="teacher").count() == 2
        page.get_by_role("link", name="中文").click()
        page.get_by_role("heading", name="调用日志").wait_for()
        assert page.locator("tr.call").count() == 2  # the switch keeps the filters
        page.get_by_role("button", name="筛选").wait_for()
        assert live["key"] not in page.content() and page.title() != "pwned" and dialogs == []
        assert live["ops"][1] not in page.content()


@pytest.mark.browser
def test_without_an_operator_key_the_browser_sees_the_skills_but_no_calls(live, tmp_path):
    _need_browser()
    with _browser(tmp_path, "site-anonymous") as page:
        page.goto(live["url"] + "/skills/current_weather")
        page.get_by_role("heading", name="Recent calls").wait_for()
        assert "Calls: 2" in page.inner_text("main") and page.locator("table.log").count() == 0
        assert page.locator(".operator-only").is_visible() and page.get_by_text(SCRIPT).count() == 0
    for auth in (None, ("teacher", live["key"])):  # no key, an agent's key: the browser is asked to sign in
        reply = httpx.get(live["url"] + "/logs?lang=zh", auth=auth, timeout=15)
        assert reply.status_code == 401 and reply.headers["WWW-Authenticate"].startswith("Basic")
        assert "需要运维密钥" in reply.text and "<tr class=\"call\"" not in reply.text


HOSTILE = "<script>alert('x')</script> & \"quoted\""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_catalogue_text_and_callers_data_are_escaped_on_every_page(site, http, monkeypatch, lang):
    # the pages are templates with autoescaping: a sentence of the catalogue is escaped like what a caller sent
    from agentlab import i18n
    real = i18n._catalog()
    monkeypatch.setattr(i18n, "_catalog", lambda: {k: {lg: text + HOSTILE for lg, text in entry.items()}
                                                    for k, entry in real.items()})
    key, _ = site.create_key("teacher")
    call(http, key, "current_weather", {"city": HOSTILE}, "sess-a")
    call(http, key, "escalate_to_human", {"summary": HOSTILE}, "sess-b", **{"Idempotency-Key": "esc-h"})
    anon = TestClient(create_app(site))
    for client, url in ((http, "/"), (http, "/logs"), (http, "/skills/current_weather"), (http, "/skills/escalate_to_human"),
                        (http, "/skills/current_wether"), (anon, "/logs"), (anon, "/skills/current_weather")):
        page = client.get(url, params={"lang": lang}).text
        assert "<script" not in page.lower() and '"quoted"' not in page and "& " not in page, url
        assert HOSTILE in html.unescape(page), url
        assert page.startswith("<!doctype html>") and "<header>" in page and "</main></body></html>" in page, url


def test_every_skill_speaks_chinese_on_its_page_and_in_its_hints(site, http):
    """A Chinese page showed the desks' skills as "get order" with English field descriptions and an English note,
    and the shipped skills' notes and changelog in English; a Chinese caller missing a field was told
    "缺少必填字段。Order number, like A1001 ...". Each skill's own words now come in Chinese where a reader meets them."""
    han = re.compile(r"[\u4e00-\u9fff]")
    for name, skill in site.skills.items():
        page = http.get(f"/skills/{name}", params={"lang": "zh"}).text
        meta = skill.meta
        assert han.search(meta.text("display_name", "zh")) and meta.text("display_name", "zh") in html.unescape(page), name
        for said in [*meta.notes_in("zh"), *(c["change"] for c in meta.changelog_in("zh")),
                     *(v.get("description", "") for v in meta.input_schema_in("zh")["properties"].values())]:
            assert han.search(said) and said in html.unescape(page), (name, said)
    key, _ = site.create_key("teacher")
    for name, args in (("get_order", {"orderId": "A1001"}), ("current_weather", {"town": "Beijing"})):
        reply = http.post(f"/api/skills/{name}/execute", json={"arguments": args},
                          headers={"X-API-Key": key, "Accept-Language": "zh-CN"}).json()
        hints = " ".join(str(p.get("hint", "")) for p in reply["error"]["problems"])
        assert "缺少" in hints and not re.search(r"[A-Za-z]{3,} [a-z]{3,}", re.sub(r"\w+_\w+|`[^`]*`", "", hints)), hints


@pytest.mark.parametrize("words", [{"fields": {"city": {"text": "城市"}}}, {"notes": "abc"}, {"changelog": ["1.0.0"]},
                                   {"display_name": 3}, {"summary": "x"}])
def test_a_skills_words_in_another_language_are_checked_when_it_registers(words):
    """A description in Chinese that was not text was accepted, and every Chinese call then failed (500) while English
    ones worked; notes given as text were shown letter by letter. They are refused when the skill registers."""
    import dataclasses

    from agentlab.site.skills import load_skills, shipped_dir
    weather = next(s for s in load_skills(shipped_dir()) if s.name == "current_weather")
    with pytest.raises(ValueError, match="i18n"):
        dataclasses.replace(weather.meta, i18n={"zh": {**weather.meta.i18n["zh"], **words}})


def test_a_desk_tool_the_catalogue_does_not_name_is_shown_by_its_own_name(monkeypatch):
    """A desk that grows a tool before the catalogue names it: the site still builds (it raised KeyError)."""
    import agentlab.site.desks as desks
    monkeypatch.setattr(desks, "catalogue_keys", lambda: [])
    named = {s.name: s.meta for s in desks.desk_skills()}
    assert named["get_order"].display_name == "get order" and named["get_order"].text("display_name", "zh") == "get_order"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_detail_shows_the_parameter_validation_pass_rate_from_the_call_log(site, http, lang):
    key, _ = site.create_key("teacher")
    assert call(http, key, "current_weather", {"city": "Beijing"}).status_code == 200
    assert call(http, key, "current_weather", {"city": ""}).status_code == 422  # refused by the input schema
    assert call(http, key, "current_weather", {"town": "Beijing"}).status_code == 422  # so is this
    assert call(http, key, "current_weather", {"city": "Atlantis"}).status_code == 422  # a business rule: well-formed
    page = http.get("/skills/current_weather", params={"lang": lang}).text
    said = {"en": "parameters valid: 50% (2 of 4 calls passed the input schema)",
            "zh": "参数校验通过率：50%（4 次调用中 2 次通过输入 schema 校验）"}[lang]
    assert said in html.unescape(page), page[page.find("class='stats'"):][:400]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_malformed_request_counts_as_not_valid_in_the_pass_rate(site, http, lang):
    """A body that is not JSON, or not {"arguments": {...}}, failed validation as surely as a wrong field: the page
    counted it as passed (3 of 3 here), so a session's pass rate read 68% where 42% of its requests were valid."""
    key, _ = site.create_key("teacher")
    assert call(http, key, "current_weather", {"city": "Beijing"}).status_code == 200
    url = "/api/skills/current_weather/execute"
    assert http.post(url, content=b"{not json", headers={"X-API-Key": key}).status_code == 400
    assert http.post(url, json={"city": "Beijing"}, headers={"X-API-Key": key}).status_code == 400  # no "arguments"
    page = html.unescape(http.get("/skills/current_weather", params={"lang": lang}).text)
    said = {"en": "parameters valid: 33% (1 of 3 calls passed the input schema)",
            "zh": "参数校验通过率：33%（3 次调用中 1 次通过输入 schema 校验）"}[lang]
    assert said in page, page[page.find("class='stats'"):][:400]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_detail_shows_the_mean_latency_beside_p50_and_p95(site, http, lang):
    from agentlab.site.pages import Stats
    s = Stats([{"latency_ms": 1}, {"latency_ms": 2}, {"latency_ms": 9}])
    assert s.mean == 4.0 and s.p50 == 2 and s.p95 == 9
    key, _ = site.create_key("teacher")
    assert call(http, key, "current_weather", {"city": "Beijing"}).status_code == 200
    page = html.unescape(http.get("/skills/current_weather", params={"lang": lang}).text)
    stats = page[page.find("class='stats'"):][:600]
    word = {"en": "mean", "zh": "平均"}[lang]
    assert re.search(word + r" [\d.]+ ms · p50 [\d.]+ ms · p95 [\d.]+ ms", stats), stats

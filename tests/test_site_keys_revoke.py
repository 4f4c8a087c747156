"""Listing and revoking API keys: the store, the CLI in both languages, the operator's keys
page (in process and in chromium), and two replicas sharing one real Redis and one keys.db: a key revoked through one
is refused by the other on its very next request (no cache outlives a revoke)."""
from __future__ import annotations

import re

import httpx
import pytest
from fastapi.testclient import TestClient
from site_helpers import Clock, SiteServer
from test_browser import _browser, _need_browser
from test_site_contract import cli

from agentlab.site.app import create_app
from agentlab.site.keys import KeyStore
from agentlab.site.service import SkillSite

WEATHER = ("/api/skills/current_weather/execute", {"arguments": {"city": "Beijing"}})


def test_a_revoked_key_is_refused_at_once_by_every_store_on_the_file(tmp_path):
    a, b = KeyStore(tmp_path / "keys.db"), KeyStore(tmp_path / "keys.db")  # two replicas' stores
    key, record = a.create("agent", quota=10, period="day")
    assert a.check(key) == record and b.check(key) == record and b.cached(key) == record  # both have it cached
    revoked = a.revoke(record.id)
    assert [r.id for r in revoked] == [record.id] and revoked[0].revoked is not None
    assert a.check(key) is None and b.cached(key) is None and b.check(key) is None
    listed = b.all()
    assert [(r.name, r.id, r.quota) for r in listed] == [("agent", record.id, 10)] and listed[0].revoked
    assert key not in repr(listed) and record.id in repr(listed)
    assert a.revoke(record.id) == []  # already revoked: nothing more to do
    assert a.revoke("no-such-key") == []


def test_a_name_revokes_only_when_it_names_one_key(tmp_path):
    store = KeyStore(tmp_path / "keys.db")
    store.create("twin")
    store.create("twin")
    with pytest.raises(LookupError):
        store.revoke("twin")
    _, solo = store.create("solo")
    assert [r.id for r in store.revoke("solo")] == [solo.id]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cli_lists_and_revokes_keys_without_showing_one(tmp_path, lang):
    made = cli("keys", "create", "--name", "teacher", "--quota", "100/day", data=tmp_path)
    key = made.stdout.strip()
    listed = cli("keys", "list", "--lang", lang, data=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "teacher" in listed.stdout and "100/day" in listed.stdout and key not in listed.stdout + listed.stderr
    key_id = KeyStore(tmp_path / "keys.db").all()[0].id
    assert key_id in listed.stdout and ("active" if lang == "en" else "有效") in listed.stdout
    gone = cli("keys", "revoke", key_id, "--lang", lang, data=tmp_path)
    assert gone.returncode == 0, gone.stderr
    assert ("revoked" if lang == "en" else "已吊销") in gone.stderr
    assert KeyStore(tmp_path / "keys.db").check(key) is None
    again = cli("keys", "list", "--lang", lang, data=tmp_path)
    assert ("revoked" if lang == "en" else "已吊销") in again.stdout
    missing = cli("keys", "revoke", "nope", "--lang", lang, data=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path, clock=Clock())


def _token(page: str, key_id: str) -> str:
    form = re.search(rf'action="/keys/{key_id}/revoke[^"]*".*?name="token" value="([0-9a-f]+)"', page, re.S)
    assert form, page
    return form.group(1)


def test_the_keys_page_is_the_operators_and_a_revoke_needs_its_token(site):
    ops, _ = site.keys.create("ops", operator=True)
    agent, record = site.keys.create("agent")
    http, anon = TestClient(create_app(site)), TestClient(create_app(site))
    http.auth = ("ops", ops)
    for who in (anon, TestClient(create_app(site), headers={"X-API-Key": agent})):
        refused = who.get("/keys")
        assert refused.status_code == 401 and record.id not in refused.text
        assert who.post(f"/keys/{record.id}/revoke", data={"token": "0" * 32}).status_code == 401
    page = http.get("/keys?lang=zh")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert "agent" in page.text and record.id in page.text and agent not in page.text and ops not in page.text
    assert "吊销" in page.text
    forged = http.post(f"/keys/{record.id}/revoke", data={"token": "0" * 32}, follow_redirects=False)
    assert forged.status_code == 403 and site.keys.check(agent) is not None  # another site's form cannot revoke
    done = http.post(f"/keys/{record.id}/revoke", data={"token": _token(page.text, record.id)},
                     follow_redirects=False)
    assert done.status_code == 303 and site.keys.check(agent) is None
    assert http.post(*WEATHER[:1], json=WEATHER[1], headers={"X-API-Key": agent}).status_code == 401


def test_two_replicas_on_one_redis_a_key_revoked_through_one_is_refused_by_the_other(tmp_path, redis_url):
    data = tmp_path / "data"
    agent = cli("keys", "create", "--name", "agent", data=data).stdout.strip()
    ops = cli("keys", "create", "--name", "ops", "--operator", data=data).stdout.strip()
    key_id = next(r.id for r in KeyStore(data / "keys.db").all() if r.name == "agent")
    one = SiteServer(data, "--store", redis_url, log=tmp_path / "one.out")
    two = SiteServer(data, "--store", redis_url, log=tmp_path / "two.out")
    try:
        one.wait_ready()
        two.wait_ready()
        for replica in (one, two):  # each has the key looked up (and cached) before the revoke
            for _ in range(3):
                assert httpx.post(replica.base + WEATHER[0], json=WEATHER[1], headers={"X-API-Key": agent},
                                  timeout=15).status_code == 200
        with httpx.Client(base_url=one.base, auth=("ops", ops), timeout=15, follow_redirects=True) as http:
            token = _token(http.get("/keys").text, key_id)
            assert http.post(f"/keys/{key_id}/revoke", data={"token": token}).status_code == 200  # after the 303
        refused = httpx.post(two.base + WEATHER[0], json=WEATHER[1], headers={"X-API-Key": agent, "Accept-Language": "zh"},
                             timeout=15)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHENTICATED"
        assert httpx.post(one.base + WEATHER[0], json=WEATHER[1], headers={"X-API-Key": agent},
                          timeout=15).status_code == 401
    finally:
        one.stop()
        two.stop()


@pytest.mark.browser
def test_the_operator_revokes_a_key_in_a_browser(tmp_path):
    _need_browser()
    agent = cli("keys", "create", "--name", "teacher", "--quota", "50/hour", data=tmp_path).stdout.strip()
    ops = cli("keys", "create", "--name", "ops", "--operator", data=tmp_path).stdout.strip()
    with SiteServer(tmp_path, log=tmp_path / "server.out", ready="/") as site:
        assert httpx.post(site.base + WEATHER[0], json=WEATHER[1], headers={"X-API-Key": agent},
                          timeout=15).status_code == 200
        with _browser(tmp_path, "site-keys", credentials=("ops", ops)) as page:
            page.goto(site.base + "/keys")
            page.get_by_role("heading", name="API keys").wait_for()
            row = page.locator("tr.key", has_text="teacher")
            assert "50/hour" in row.inner_text() and "active" in row.inner_text()
            assert agent not in page.content() and ops not in page.content()
            row.get_by_role("button", name="Revoke").click()
            page.wait_for_url("**/keys*")
            row = page.locator("tr.key", has_text="teacher")
            assert "revoked" in row.inner_text() and row.get_by_role("button").count() == 0
            page.get_by_role("link", name="中文").click()
            page.get_by_role("heading", name="API 密钥").wait_for()
            assert "已吊销" in page.locator("tr.key", has_text="teacher").inner_text()
        assert httpx.post(site.base + WEATHER[0], json=WEATHER[1], headers={"X-API-Key": agent},
                          timeout=15).status_code == 401

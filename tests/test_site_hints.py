"""Every failure a caller can act on carries a ``fallback_hint`` (agentlab/site/hints.py), in both languages:
rate and quota, a write still running, a store that is down, a source a skill depends on, bad input, a timeout."""
import json

import pytest
from site_helpers import Clock, write_skill

from agentlab.errors import make_error
from agentlab.i18n import t
from agentlab.site.claims import ClaimState, answer
from agentlab.site.execute import _STATUS
from agentlab.site.hints import HINTED, KINDS, fallback_hint
from agentlab.site.service import SkillSite


def call(site, name, args, key, idem=None, lang="en"):
    return site.execute(name, json.dumps({"arguments": args}).encode(), api_key=key, idempotency_key=idem,
                        session_id=None, lang=lang)


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path, clock=Clock())


def hint(key, lang="en"):
    return t(f"site.hint.{key}", lang)


def test_every_status_code_the_site_answers_with_has_a_hint_in_both_languages():
    for code in _STATUS:
        assert code in HINTED, code
        for lang in ("en", "zh"):
            said = fallback_hint(make_error(code), lang)
            assert said and said != f"site.hint.{HINTED[code]}", (code, lang)
    for kind in KINDS:
        assert hint(kind, "en") != hint(kind, "zh")
    with pytest.raises(ValueError):
        fallback_hint(make_error("RATE_LIMITED"), "en", kind="nonsense")
    assert fallback_hint(None, "en") is None and fallback_hint(make_error("NOT_FOUND"), "en") is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_invalid_input_says_to_fix_the_named_fields_and_a_business_refusal_says_ask_the_user(site, lang):
    key, _ = site.create_key("t")
    shape = call(site, "current_weather", {"city": ""}, key, lang=lang)
    assert shape.status == 422 and shape.body["fallback_hint"] == hint("INVALID_ARGS", lang)
    rule = call(site, "current_weather", {"city": "Atlantis"}, key, lang=lang)
    assert rule.status == 422 and rule.body["fallback_hint"] == hint("semantic", lang)


def test_the_rate_and_the_quota_say_different_things(site):
    key, _ = site.create_key("busy")
    n = 0
    while (r := call(site, "current_weather", {"city": "Beijing"}, key)).status != 429:
        n += 1
        assert n < 1000
    assert r.body["fallback_hint"] == hint("RATE_LIMITED")
    small, _ = site.create_key("small", quota=1)
    assert call(site, "current_weather", {"city": "Beijing"}, small).status == 200
    used = call(site, "current_weather", {"city": "Beijing"}, small, lang="zh")
    assert used.status == 429 and used.body["fallback_hint"] == hint("quota", "zh")
    assert "hint" not in used.body["error"]  # said once: the error carried the same sentence as its own hint


def test_a_hint_the_error_carries_itself_is_said_once_and_a_hint_of_its_own_is_kept():
    from agentlab.site.execute import body
    quota = make_error("RATE_LIMITED", hint={"en": hint("quota"), "zh": hint("quota", "zh")})
    for lang in ("en", "zh"):
        said = body(None, quota, lang, hint("quota", lang))
        assert said["fallback_hint"] == hint("quota", lang) and "hint" not in said["error"]
    own = make_error("NOT_FOUND", hint={"en": "Check the order number.", "zh": "请核对订单号。"})
    assert body(None, own, "zh")["error"]["hint"] == "请核对订单号。"  # no site hint for it: kept where it is
    other = body(None, own, "en", hint("RATE_LIMITED"))
    assert other["error"]["hint"] == "Check the order number." and other["fallback_hint"] == hint("RATE_LIMITED")


def test_a_write_in_progress_its_unknown_outcome_and_a_reused_key_each_say_what_to_do():
    running = answer(ClaimState.RUNNING, None, "en")
    assert running.body["fallback_hint"] == hint("IN_PROGRESS") and "same key" in running.body["fallback_hint"]
    unknown = answer(ClaimState.UNKNOWN, None, "zh")
    assert unknown.body["fallback_hint"] == hint("OUTCOME_UNKNOWN", "zh")
    reused = answer(ClaimState.CONFLICT, None, "en")
    assert reused.body["fallback_hint"] == hint("key_reused")


def test_a_store_that_is_down_says_resend_after_retry_after(site):
    key, _ = site.create_key("t")

    def down(*a, **kw):
        raise ConnectionError("redis at 10.0.0.7:6379 refused")

    site.limiter.admit = down
    r = call(site, "current_weather", {"city": "Beijing"}, key)
    assert r.status == 503 and r.body["fallback_hint"] == hint("UNAVAILABLE") and "10.0.0.7" not in json.dumps(r.body)


def test_a_source_a_skill_depends_on_its_own_hint_first_else_the_sites(tmp_path):
    skills = tmp_path / "skills"
    write_skill(skills, "needs_source", 'raise ConnectionError("upstream down")')
    write_skill(skills, "says_unavailable", 'from agentlab.errors import ToolFailure\nraise ToolFailure("UNAVAILABLE")')
    site = SkillSite(tmp_path / "data", skills_dirs=[skills], clock=Clock())
    key, _ = site.create_key("t")
    for name in ("needs_source", "says_unavailable"):
        r = call(site, name, {}, key, lang="zh")
        assert r.status == 503 and r.body["fallback_hint"] == hint("upstream", "zh"), name
    (tmp_path / "data" / "weather_source.json").write_text('{"mode": "down"}', encoding="utf-8")
    own = call(site, "current_weather", {"city": "Beijing"}, key)
    assert own.status == 503 and "allow_cached" in own.body["fallback_hint"]


def test_a_timeout_of_a_skill_without_a_hint_of_its_own_gets_the_sites(tmp_path):
    skills = tmp_path / "skills"
    write_skill(skills, "slow_read", 'time.sleep(1.0); return {"done": True}', timeout=0.1)
    site = SkillSite(tmp_path / "data", skills_dirs=[skills], clock=Clock())
    key, _ = site.create_key("t")
    r = call(site, "slow_read", {}, key)
    assert r.status == 504 and r.body["fallback_hint"] == hint("TIMEOUT")


def test_callers_mistakes_before_anything_runs_say_what_to_send(site):
    key, _ = site.create_key("weather only", skills=["current_weather"])
    assert call(site, "current_weather", {"city": "Beijing"}, "sk-wrong").body["fallback_hint"] == hint("UNAUTHENTICATED")
    assert call(site, "get_order", {"order_id": "A1"}, key).body["fallback_hint"] == hint("PERMISSION_DENIED")
    assert call(site, "curent_weather", {}, key).body["fallback_hint"] == hint("UNKNOWN_TOOL")
    bad = site.execute("current_weather", b"[1]", api_key=key, idempotency_key=None, session_id=None, lang="en")
    assert bad.status == 400 and bad.body["fallback_hint"] == hint("BAD_REQUEST")


def test_a_success_carries_no_hint(site):
    key, _ = site.create_key("t")
    assert call(site, "current_weather", {"city": "Beijing"}, key).body["fallback_hint"] is None

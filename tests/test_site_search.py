"""The skill site's search in both languages, whatever the caller's Accept-Language (routing.BilingualIndex)."""
import pytest
from fastapi.testclient import TestClient

from agentlab.evals.discovery_eval import load_skill_asks, search_hits
from agentlab.routing import query_lang, search_words
from agentlab.site.app import create_app
from agentlab.site.service import SkillSite


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    return TestClient(create_app(SkillSite(tmp_path_factory.mktemp("site"))))


def _first(http, q, **headers):
    found = http.get("/api/skills/search", params={"q": q, "k": 3}, headers=headers).json()["results"]
    return [r["skill_name"] for r in found]


@pytest.mark.parametrize("header", [{}, {"Accept-Language": "zh"}, {"Accept-Language": "en-GB"}])
def test_a_chinese_ask_finds_its_skill_first_whatever_the_header(http, header):
    assert _first(http, "昨天打车记账", **header)[0] == "book_expense_record"
    assert _first(http, "帮我退款", **header)[0] == "create_refund"  # not the desk whose text says 帮我 most


def test_an_english_ask_still_finds_its_skill_with_a_chinese_header(http):
    assert _first(http, "refund my order", **{"Accept-Language": "zh"})[0] == "create_refund"
    assert _first(http, "weather in Beijing today", **{"Accept-Language": "zh"})[0] == "current_weather"


def test_the_results_speak_the_callers_language(http):
    found = http.get("/api/skills/search", params={"q": "北京天气", "k": 1},
                     headers={"Accept-Language": "zh"}).json()["results"]
    assert found[0]["display_name"] == "当前天气查询"
    assert http.get("/api/skills/search", params={"q": "北京天气", "k": 1}).json()["results"][0]["display_name"] \
        == "Current weather"


def test_the_querys_language_is_told_by_its_characters():
    assert query_lang("帮我退款") == "zh" and query_lang("退款 order A1001") == "zh"
    assert query_lang("refund my order") == "en" and query_lang("") == "en" and query_lang("A1001 12345") == "en"
    assert query_lang("please refund 订单") == "en"  # mostly English: the English index first


def test_chinese_is_read_as_pairs_without_filler_characters():
    terms = search_words("帮我退款 orderId")
    assert "退款" in terms and "退" in terms and "帮" not in terms and "我" not in terms
    assert "order" in terms and "id" in terms


def test_the_ask_set_covers_every_skill_in_both_languages():
    asks = load_skill_asks()
    assert len(asks) >= 30 and len({a.id for a in asks}) == len(asks)
    assert all(any("\u4e00" <= c <= "\u9fff" for c in a.zh) and a.en.isascii() for a in asks)
    from agentlab.evals.discovery_eval import _site
    assert {a.skill for a in asks} == set(_site().skills)


# measured on 2026-12-01 (benchmarks/bench_site_search.py): Chinese asks with no header 92% first, 97% in the
# top 3; English 89% and 97%. The floors leave room for a skill added later, not for a search that reads one language.
@pytest.mark.parametrize("lang,header", [("zh", "en"), ("zh", "zh"), ("en", "en"), ("en", "zh")])
def test_the_hit_rate_stays_above_what_was_measured(lang, header):
    got = search_hits(lang=lang, header=header)
    assert got["top1"] >= 0.85 and got["top3"] >= 0.94, got

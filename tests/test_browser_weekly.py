"""The weekly review in the no-code app, in Debian's chromium through Voila, in each language: the sample logs,
notes on three failed conversations, grouped, one kept as a regression case, the week exported."""

from itertools import pairwise

import pytest
from conftest import ROOT
from test_browser import TOKEN, _app, _browser, _free_port, _need_browser, _server

from agentlab.i18n import t

pytestmark = pytest.mark.browser

NOTES = {"en": ["The refund was created twice after a timeout", "Refund sent with broken JSON arguments",
                "Kept calling get_order in a loop"],
         "zh": ["超时后退款创建了两次", "退款参数是坏的 JSON", "一直在循环查询订单"]}
GROUPS = {"en": ("refund", "loops"), "zh": ("退款", "循环")}


@pytest.mark.parametrize("locale,lang", [("zh-CN", "zh"), ("en-US", "en")])
def test_a_pm_reviews_a_week_in_the_app(tmp_path, locale, lang):
    _need_browser()
    port = _free_port()
    review = tmp_path / "review"
    cmd, env = _app(port, AGENTLAB_REVIEW_DIR=str(review))  # what `python run.py app` starts

    def say(key, **fields):
        return t(key, lang, **fields)

    with _server(cmd, env, f"tcp://127.0.0.1:{port}", tmp_path / "voila.log", cwd=ROOT), \
            _browser(tmp_path, f"voila-weekly-{locale}", locale=locale, local_only=True) as page:
        page.goto(f"{base(port)}/?token={TOKEN}", timeout=120_000)
        page.get_by_text(say("weekly.title")).first.wait_for(timeout=120_000)
        page.get_by_role("button", name=say("weekly.open"), exact=True).click()
        page.get_by_text(say("weekly.loaded", n=4, source="logs_openai_sample.jsonl")).wait_for(timeout=60_000)
        conversations = page.locator("select").filter(has_text="logs_openai_sample.jsonl:8")
        page.get_by_placeholder(say("weekly.author_hint")).fill("Ann" if lang == "en" else "小王")
        for index, text in zip((0, 1, 3), NOTES[lang], strict=True):
            conversations.select_option(index=index)
            line = (1, 2, 6, 8)[index]
            page.get_by_role("heading", name=f"logs_openai_sample.jsonl:{line}").wait_for(timeout=30_000)
            page.get_by_placeholder(say("weekly.note_hint")).fill(text)
            page.get_by_role("button", name=say("weekly.save"), exact=True).click()
            page.get_by_text(say("weekly.saved", where=f"logs_openai_sample.jsonl:{line}")).wait_for(timeout=30_000)
        # the whole conversation is on the page: the broken call and the tool's answer
        body = page.inner_text("body")
        assert NOTES[lang][2] in body and "get_order" in body
        words, own = GROUPS[lang]
        page.get_by_role("button", name=say("weekly.suggestion", name=words, n=2)).click()
        page.get_by_role("button", name=say("weekly.file_suggested")).click()
        page.get_by_text(say("weekly.grouped", n=2, category=words)).wait_for(timeout=30_000)
        page.locator("select").filter(has_text="#1 ").select_option(index=2)
        page.get_by_placeholder(say("weekly.category_hint")).nth(1).fill(own)
        page.get_by_role("button", name=say("weekly.file_under")).click()
        page.get_by_text(say("weekly.grouped", n=1, category=own)).wait_for(timeout=30_000)
        page.get_by_text(say("weekly.largest", category=words, n=2, total=4)).wait_for(timeout=30_000)
        counts = page.locator("table.agentlab-weekly-counts").inner_text()
        # each a share of the week's 4 failed conversations, as the sentence under the table counts them
        assert f"{words}\t2\t50%" in counts and f"{own}\t1\t25%" in counts, counts
        # each number stands under its heading, the headings apart: unstyled, "category conversations share of failed
        # conversations" read as one line and each number stood under the start of its heading
        edges = page.locator("table.agentlab-weekly-counts").evaluate(_EDGES)
        _numbers_under_their_headings(edges)
        assert page.locator(".agentlab-text-equivalent").filter(has_text=say("weekly.trend_title")).count() >= 1
        page.get_by_role("button", name=say("weekly.promote")).click()
        page.get_by_text("log-", exact=False).filter(has_text="regression.jsonl").first.wait_for(timeout=30_000)
        assert str(review) not in page.inner_text("body"), "the serving machine's folder, shown to the browser"
        assert page.locator("a[download='regression.jsonl']").count() == 1
        page.get_by_role("button", name=say("weekly.export")).click()
        link = page.get_by_role("link", name=f"weekly-2026-W10-logs_openai_sample-{lang}.csv")
        link.wait_for(timeout=30_000)
        assert (link.get_attribute("href") or "").startswith("data:text/csv")
        page.screenshot(path=str(tmp_path / f"weekly-{lang}.png"), full_page=True)  # what the PM saw at the end
        # the exported page's table as the app's: ruled, each number under its heading (it was left unstyled)
        exported = page.context.new_page()
        exported.set_content((review / "exports" / f"weekly-2026-W10-logs_openai_sample-{lang}.html").read_text())
        _numbers_under_their_headings(exported.locator("table").first.evaluate(_EDGES))
        exported.close()
        # every button's label whole: "Save …" and "File this note under the cat…" were cut at 1400 px
        for name in (say("weekly.save"), say("weekly.file_under")):
            button = page.get_by_role("button", name=name, exact=True).first
            cut = button.evaluate("b => b.scrollWidth > b.clientWidth + 1")
            assert not cut, f"{name!r} is cut on the page"
        body = page.inner_text("body")
        other = "en" if lang == "zh" else "zh"
        assert t("weekly.title", other) not in body and "Traceback" not in body
    assert (review / "exports" / f"weekly-2026-W10-logs_openai_sample-{lang}.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    assert (review / "regression.jsonl").read_text(encoding="utf-8").count("\n") == 1


def base(port: int) -> str:
    return f"http://127.0.0.1:{port}"


# each cell's text's left and right edges, headings and rows
_EDGES = """table => {
    const edge = cell => { const r = document.createRange(); r.selectNodeContents(cell);
                           const b = r.getBoundingClientRect(); return [b.left, b.right]; };
    return {heads: [...table.querySelectorAll('th')].map(edge),
            rows: [...table.querySelectorAll('tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(edge))}; }"""


def _numbers_under_their_headings(edges: dict) -> None:
    """Headings apart, and the count and the share each set right under theirs."""
    heads = edges["heads"]
    assert all(b[0] - a[1] >= 10 for a, b in pairwise(heads)), heads
    for row in edges["rows"]:
        for col in (1, 2):
            assert abs(row[col][1] - heads[col][1]) <= 2, (col, row, heads)

"""The shipped page-text skill (agentlab/site/shipped/web_page): title, main text and links of a shipped page
or an allowed local URL, flat; GBK and UTF-8; boilerplate left out; hostile pages bounded; no SSRF."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from site_helpers import Clock

from agentlab.site.service import SkillSite
from agentlab.site.skills import load_skills, shipped_dir

SKILL = "extract_page_text"


@pytest.fixture(scope="module")
def mod():
    """The handler's module (a skill folder is loaded by path, not imported by name)."""
    import types
    skill = next(s for s in load_skills(shipped_dir()) if s.name == SKILL)
    return types.SimpleNamespace(**skill.handler.__globals__)


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path, clock=Clock())


def call(site, args, lang="en"):
    key, _ = site.create_key("t")
    r = site.execute(SKILL, json.dumps({"arguments": args}).encode(), api_key=key, idempotency_key=None,
                     session_id=None, lang=lang)
    return r.status, r.body


def test_a_shipped_chinese_page_gives_title_main_text_and_links_flat(site):
    status, body = call(site, {"page": "refund_policy_utf8.html"})
    r = body["result"]
    assert status == 200 and r["title"] == "退款政策 Refund policy" and r["charset"] == "utf-8"
    assert "7 天内可申请退款" in r["text"] and "Shipped orders must be returned first." in r["text"]
    for boiler in ("tracking", "font-family", "首页", "登录", "猜你喜欢", "2026", "ads", "Shop 商城"):
        assert boiler not in r["text"], boiler
    assert r["links"] == ["/help/refunds"] and all(not isinstance(v, (dict, list)) or k == "links" for k, v in r.items())
    assert r["summary"] == "退款政策 Refund policy: 219 characters of text, 1 link(s)."


def test_a_gbk_page_and_a_page_whose_declared_charset_is_wrong(mod):
    gbk = "<html><head><meta charset='gbk'><title>说明</title></head><body><p>北京两天送达</p></body></html>"
    assert mod.extract(gbk.encode("gbk"))["text"] == "北京两天送达"
    # says UTF-8, is GBK: the declared charset is set aside for the next that reads the bytes
    lying = gbk.replace("gbk", "utf-8").encode("gbk")
    out = mod.extract(lying, declared_charset="utf-8")
    assert out["text"] == "北京两天送达" and out["charset"] == "gb18030"
    # bytes no charset reads: replaced, never an exception
    junk = mod.extract(b"<p>\xff\xfe\x81 ok</p>", declared_charset="no-such-charset")
    assert "ok" in junk["text"]


def test_hostile_pages_huge_deeply_nested_script_only(mod, site, tmp_path):
    deep = b"<div>" * 200_000 + b"deep text" + b"</div>" * 200_000
    assert mod.extract(deep)["text"] == "deep text"
    unclosed = b"<nav><p>menu" + b"<div>" * 50_000 + b"never closed"
    assert mod.extract(unclosed)["text"] == ""
    script_only = b"<html><script>" + b"var a = '<p>not text</p>';" * 1000 + b"</script></html>"
    out = mod.extract(script_only)
    assert out["text"] == "" and out["title"] == "" and out["links"] == []
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "huge.html").write_bytes(b"<title>big</title><p>" + b"word " * 1_000_000 + b"</p>")  # 5 MB
    status, body = call(site, {"page": "huge.html", "max_chars": 1000})
    assert status == 200 and body["result"]["truncated"] and body["result"]["chars"] == 1000
    assert body["result"]["title"] == "big"


@pytest.mark.parametrize("url", ["https://127.0.0.1:8765/", "http://localhost:8765/", "http://10.0.0.7:8765/",
                                 "http://[::1]:8765/", "http://127.0.0.1:8765@evil.example/", "file:///etc/passwd",
                                 "http://127.0.0.1/", "http://127.0.0.1:99999/", "http://127.0.0.1:6379/"])
def test_only_allowed_local_ports_are_read(site, url):
    (site.data_dir / "web_page.json").write_text('{"ports": [8765]}', encoding="utf-8")
    status, body = call(site, {"url": url}, lang="zh")
    assert status == 422 and [p["field"] for p in body["error"]["problems"]] == ["url"], body
    said = json.dumps(body["error"], ensure_ascii=False)
    assert "127.0.0.1" in said or "web_page.json" in said


def test_no_port_is_allowed_until_the_operator_lists_one(site):
    status, body = call(site, {"url": "http://127.0.0.1:8765/"})
    assert status == 422 and "web_page.json" in body["error"]["problems"][0]["reason"] + json.dumps(body["error"])


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/gbk":
            data = "<title>配送</title><main><p>上海三天送达</p><a href='/more'>更多</a></main>".encode("gbk")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=GBK")
        elif self.path == "/away":
            data = b""
            self.send_response(302)
            self.send_header("Location", "http://example.com/")
        elif self.path == "/image":
            data = b"\x89PNG"
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
        else:
            data = b""
            self.send_response(404)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def local():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_local_url_at_an_allowed_port_is_read_with_the_servers_charset_and_no_redirect_followed(site, local):
    (site.data_dir / "web_page.json").write_text(json.dumps({"ports": [local]}), encoding="utf-8")
    status, body = call(site, {"url": f"http://127.0.0.1:{local}/gbk"})
    r = body["result"]
    assert status == 200 and r["text"] == "上海三天送达\n更多" and r["charset"] == "gb18030"
    assert r["links"] == [f"http://127.0.0.1:{local}/more"]
    status, body = call(site, {"url": f"http://127.0.0.1:{local}/away"})
    assert status == 200 and body["error"]["code"] == "RULE_VIOLATION" and "redirect" in body["error"]["message"]
    status, body = call(site, {"url": f"http://127.0.0.1:{local}/image"}, lang="zh")
    assert body["error"]["code"] == "RULE_VIOLATION" and "不是网页" in body["error"]["message"]
    status, body = call(site, {"url": f"http://127.0.0.1:{local}/nothing"})
    assert body["error"]["code"] == "NOT_FOUND"


def test_its_cases_pass_in_site_check():
    from agentlab.site.check import load_check_cases, run_checks
    report = run_checks([c for c in load_check_cases() if c.skill == SKILL], timeouts=False)
    mine = [o for o in report.outcomes if o.case.skill == SKILL]
    assert mine and all(o.passed for o in mine), [(o.case.name, o.problems) for o in mine if not o.passed]
    assert all(report.counts(SKILL, k)[1] >= 1 for k in ("normal", "boundary", "abnormal"))

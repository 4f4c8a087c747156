"""The shipped page-text skill (agentlab/site/shipped/web_page): title, main text and links of a shipped page
or an allowed local URL, flat; GBK and UTF-8; boilerplate left out; hostile pages bounded; no SSRF."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

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
    assert r["summary"] == "退款政策 Refund policy: 219 characters of text, 1 link."


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


# --- attacks: each a class, each test failed on the code before its fix ---

@pytest.mark.parametrize("charset", ["rot13", "base64", "zlib", "hex", "punycode", "unicode_escape", "utf-7"])
def test_a_declared_charset_that_is_no_web_charset_is_set_aside(mod, charset):
    # non-text codecs raised LookupError, punycode UnicodeError, unicode_escape rewrote \\u0041 into "A"
    out = mod.extract(b"<p>pay \\u0041 +AGE- now</p>", declared_charset=charset)
    assert out["text"] == "pay \\u0041 +AGE- now" and out["charset"] == "utf-8"
    meta = mod.extract(b"<meta charset='" + charset.encode() + b"'><p>pay \\u0041</p>")
    assert meta["text"] == "pay \\u0041" and meta["charset"] == "utf-8"


def test_links_are_counted_in_linear_time_and_a_huge_href_stays_out(mod, monkeypatch):
    # the dedupe was a list scan: 100 000 distinct links took minutes; now a dict (checked by counting lookups)
    page = b"".join(b"<a href='/l%d'>x</a>" % i for i in range(100_000))
    out = mod.extract(page, max_links=5)
    assert out["link_count"] == 100_000 and out["links"] == ["/l0", "/l1", "/l2", "/l3", "/l4"]
    huge = mod.extract(b"<a href='/" + b"a" * 1_000_000 + b"'>x</a><a href='/ok'>y</a>")
    assert huge["links"] == ["/ok"] and huge["link_count"] == 1
    assert max(len(link) for link in huge["links"]) <= mod.MAX_LINK


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765/a b", "http://127.0.0.1:8765/页面",
                                 "http://127.0.0.1:8765/a\x00b", "http://127.0.0.1:8765/?q=\x7f"])
def test_a_url_the_request_line_cannot_carry_is_refused_as_a_reason(site, url):
    # these passed validation and http.client then raised InvalidURL / UnicodeEncodeError: a TOOL_ERROR
    (site.data_dir / "web_page.json").write_text('{"ports": [8765]}', encoding="utf-8")
    status, body = call(site, {"url": url})
    assert status == 422 and [p["field"] for p in body["error"]["problems"]] == ["url"], body


class _Hostile(BaseHTTPRequestHandler):
    """A page's server that misbehaves: trickles its headers, trickles its body, breaks its chunking."""

    cut_short: ClassVar[list] = []  # paths whose trickle the client hung up on before it ended

    def _trickle(self, head: bytes) -> None:
        import time as _time
        self.wfile.write(head)
        try:
            for _ in range(100):  # 5 s of a byte every 50 ms, each well within the socket timeout
                self.wfile.write(b"x")
                self.wfile.flush()
                _time.sleep(0.05)
        except OSError:
            self.cut_short.append(self.path)

    def do_GET(self):
        if self.path == "/slow-headers":  # the header line never ends
            return self._trickle(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        if self.path == "/slow-body":
            return self._trickle(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n")
        if self.path == "/bad-chunks":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"zz\r\n<p>hi</p>\r\n")
            return
        self.wfile.write(b"NOT HTTP AT ALL\r\n\r\n")

    def log_message(self, *a):
        pass


@pytest.fixture
def hostile():
    _Hostile.cut_short.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["/slow-headers", "/slow-body"])
def test_a_server_trickling_its_page_is_cut_off_at_the_deadline(mod, hostile, monkeypatch, path):
    # each byte came within the socket timeout and http.client's readline/read(n) kept waiting for more,
    # so the old deadline check (between reads) ran only once the server chose to stop: a hostile one
    # held the worker as long as it liked. Now the socket is shut at DEADLINE and the server sees it.
    import time as _time
    monkeypatch.setitem(mod.extract_page_text.__globals__, "DEADLINE", 0.3)
    with pytest.raises(TimeoutError):
        mod._fetch(f"http://127.0.0.1:{hostile}{path}")
    for _ in range(100):  # the server's next write fails once the hang-up reaches it
        if _Hostile.cut_short:
            break
        _time.sleep(0.05)
    assert _Hostile.cut_short == [path]


@pytest.mark.parametrize("path", ["/bad-chunks", "/garbage"])
def test_a_server_breaking_http_is_unavailable_not_a_skill_bug(site, hostile, path):
    # http.client's HTTPException (BadStatusLine, IncompleteRead, ...) is no OSError: it came out as TOOL_ERROR
    (site.data_dir / "web_page.json").write_text(json.dumps({"ports": [hostile]}), encoding="utf-8")
    _, body = call(site, {"url": f"http://127.0.0.1:{hostile}{path}"})
    assert body["error"]["code"] == "UNAVAILABLE", body
    assert str(hostile) not in json.dumps(body, ensure_ascii=False).replace(f"127.0.0.1:{hostile}{path}", "")


@pytest.mark.parametrize("url", [
    "http://2130706433:8765/", "http://0x7f.0.0.1:8765/", "http://0177.0.0.1:8765/", "http://127.1:8765/",
    "http://0.0.0.0:8765/", "http://[::ffff:127.0.0.1]:8765/", "http://127.0.0.1.:8765/", "http://127。0。0。1:8765/",
    "http://user@127.0.0.1:8765/", "http://127.0.0.1:8765@127.0.0.1:8765/", "http://evil.example#@127.0.0.1:8765/",
    "gopher://127.0.0.1:8765/", "ftp://127.0.0.1:8765/", "http://localtest.me:8765/", "http://127.0.0.1:0x2235/",
    "http://127.0.0.1:８７６５/", "http://127.0.0.1:8765/" + "a" * 3000, "file://127.0.0.1/etc/passwd"])
def test_ssrf_tricks_are_refused_before_any_connection(site, url, monkeypatch):
    # a regression corpus: each is refused by the exact-host, port and character rules (and the schema's length)
    (site.data_dir / "web_page.json").write_text('{"ports": [8765]}', encoding="utf-8")
    import http.client
    monkeypatch.setattr(http.client.HTTPConnection, "connect", lambda self: pytest.fail(f"connected for {url}"))
    status, body = call(site, {"url": url})
    assert status == 422 and body["error"]["code"] == "INVALID_ARGS", body


def test_a_meta_tag_saying_utf16_is_read_as_utf8(mod):
    # a <meta> readable as ASCII cannot be UTF-16: believed, "<p>Refunds in 7 days</p>" became CJK noise
    page = b"<meta charset='utf-16'><title>Refunds</title><p>Refunds within 7 days.</p>"
    out = mod.extract(page if len(page) % 2 == 0 else page + b" ")
    assert out["title"] == "Refunds" and out["text"] == "Refunds within 7 days." and out["charset"] == "utf-8"

"""Extract the main text of a web page for retrieval: title, main text, links, as flat fields.

Where a page may come from (no outside network, no reaching into other local services):

* ``page``: an ``.html`` file shipped in this folder's ``pages/`` or put in ``pages/`` of the site's data
  folder by its operator (a bare file name: no path can climb out of those folders);
* ``url``: ``http://127.0.0.1:PORT/...`` only, and only at a port the operator listed in
  ``web_page.json`` of the site's data folder (``{"ports": [8765]}``). Any other scheme, any other host
  (``localhost``, ``0.0.0.0``, ``[::1]``, a name, a user-info trick like ``127.0.0.1@host``) and any
  port not listed are refused before a connection is made, and a redirect is never followed, so the
  skill cannot be turned into a way to reach the outside or a local port nobody meant to open (SSRF).

Bounds: at most :data:`MAX_BYTES` of a page are read (the rest is left, the result says ``truncated``),
a connection and each read wait at most :data:`NET_TIMEOUT` seconds and the whole download
:data:`DEADLINE` (the site's own timeout stops waiting at 5 s whatever happens). The parser is the
standard library's :class:`html.parser.HTMLParser`, which keeps no tree and does not recurse, so a page
nested a hundred thousand levels deep costs time in proportion to its size and nothing more.

Charset: the server's ``Content-Type``, else the page's ``<meta charset>`` (or ``http-equiv``), else
UTF-8, else GB18030 (the superset of GBK and GB2312); a declared charset the bytes do not decode under is
set aside for the next one, and the last resort replaces what cannot be read. Boilerplate left out:
``script``, ``style``, ``noscript``, ``template``, ``svg``, ``iframe``, ``form``, ``nav``, ``header``,
``footer``, ``aside``, and elements whose ``id``, ``class`` or ``role`` name a menu, a footer, a sidebar,
a banner or the like. When the page has ``<main>`` or ``<article>``, only their text is kept.
"""
from __future__ import annotations

import codecs
import http.client
import json
import re
import socket
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from agentlab.errors import Problem, ToolFailure
from agentlab.i18n import LANGS, both, joined, t
from agentlab.site.skills import SkillContext, read_meta, register_skill
from agentlab.tools import rule

__all__ = ["DEADLINE", "MAX_BYTES", "NET_TIMEOUT", "extract", "extract_page_text"]

MAX_BYTES = 2_000_000
NET_TIMEOUT = 2.0
DEADLINE = 4.0
_HERE = Path(__file__).parent
_SKIP = {"script", "style", "noscript", "template", "svg", "iframe", "form", "nav", "header", "footer", "aside",
         "button", "select", "object", "embed", "canvas"}
_BOILER = re.compile(r"(^|[\s_-])(nav|navbar|menu|footer|sidebar|breadcrumbs?|banner|advert|ads?|cookie|share|"
                     r"navigation|contentinfo|complementary|login)([\s_-]|$)", re.I)
_BLOCK = {"p", "div", "section", "li", "ul", "ol", "tr", "td", "th", "table", "br", "h1", "h2", "h3", "h4", "h5",
          "h6", "pre", "blockquote", "article", "main", "dd", "dt", "figcaption", "hr"}
_VOID = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "track", "wbr"}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I)
_SAFE_PAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}\.html?$")
MAX_LINK = 2000  # a longer href is left out of links (a cut address would point somewhere else)
# The charsets a web page may declare (the Encoding Standard's, as Python names them). Anything else
# Python can look up is no page charset: rot13, base64, zlib and hex are not text encodings at all,
# unicode_escape and utf-7 would rewrite the page's own text (an escape in the page becomes another
# character), punycode and idna raise on ordinary HTML; a declared name outside this list is ignored.
_WEB_CHARSETS = frozenset({
    "utf-8", "utf-16", "utf-16-le", "utf-16-be", "gb18030", "gbk", "gb2312", "big5", "big5hkscs", "shift_jis",
    "cp932", "euc_jp", "iso2022_jp", "euc_kr", "cp949", "koi8-r", "koi8-u", "cp866", "mac-cyrillic", "mac-roman",
    "ascii", "iso8859-1", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5", "iso8859-6", "iso8859-7", "iso8859-8",
    "iso8859-10", "iso8859-13", "iso8859-14", "iso8859-15", "iso8859-16", "cp874", "cp1250", "cp1251", "cp1252",
    "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258"})
# A url's path and query go on the request line as they are: only printable ASCII can (a space, a control
# character or a non-ASCII letter would be refused by http.client after validation, as a bug, not a reason).
_URL_CHARS = re.compile(r"[!-~]+")


class _Extractor(HTMLParser):
    """Text and links outside the boilerplate; main/article text kept apart so it can win."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.h1: list[str] = []
        self.all: list[str] = []
        self.main: list[str] = []
        self.links_all: list[str] = []
        self.links_main: list[str] = []
        self._skip: list[list] = []  # [tag, same-tag depth] of the element being left out
        self._in_title = self._in_h1 = False
        self._main_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip:
            if tag == self._skip[-1][0] and tag not in _VOID:
                self._skip[-1][1] += 1
            return
        named = " ".join(v or "" for k, v in attrs if k in ("id", "class", "role"))
        if tag in _SKIP or (tag not in ("html", "body", "main", "article") and named and _BOILER.search(named)):
            if tag not in _VOID:
                self._skip.append([tag, 1])
            return
        if tag == "title":
            self._in_title = True
        elif tag == "h1":
            self._in_h1 = True
        if tag in ("main", "article"):
            self._main_depth += 1
        if tag in _BLOCK:
            self._out("\n")
        if tag == "a":
            href = next((v for k, v in attrs if k == "href" and v), None)
            if href and not href.lower().lstrip().startswith(("javascript:", "data:", "#", "mailto:")):
                self.links_all.append(href.strip())
                if self._main_depth:
                    self.links_main.append(href.strip())

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[-1][0]:
                self._skip[-1][1] -= 1
                if self._skip[-1][1] == 0:
                    self._skip.pop()
            return
        if tag == "title":
            self._in_title = False
        elif tag == "h1":
            self._in_h1 = False
        if tag in ("main", "article") and self._main_depth:
            self._main_depth -= 1
        if tag in _BLOCK:
            self._out("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
            return
        if self._skip:
            return
        if self._in_h1:
            self.h1.append(data)
        self._out(data)

    def _out(self, text: str) -> None:
        self.all.append(text)
        if self._main_depth:
            self.main.append(text)


def _clean(parts: list[str]) -> str:
    lines = (re.sub(r"[ \t\r\f\v\u00a0\u3000]+", " ", line).strip() for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _charset_of(declared: str | None, head: bytes) -> list[str]:
    """The charsets to try, in order (only names Python knows; GBK and GB2312 read as GB18030, their superset)."""
    found = [declared] if declared else []
    m = _META_CHARSET.search(head[:4096])
    if m:
        meta = m.group(1).decode("ascii", "replace")
        # a <meta> that could be read as ASCII says UTF-16 falsely (the Encoding Standard reads it as UTF-8):
        # believed, it turns every two letters of an English page into one CJK character
        found.append("utf-8" if meta.lower().replace("_", "-").startswith("utf-16") else meta)
    out: list[str] = []
    for name in [*found, "utf-8", "gb18030"]:
        try:
            norm = codecs.lookup(name.strip().lower()).name
        except LookupError:
            continue
        if norm not in _WEB_CHARSETS:
            continue
        norm = "gb18030" if norm in ("gbk", "gb2312") else norm
        if norm not in out:
            out.append(norm)
    return out


def _decode(raw: bytes, declared: str | None) -> tuple[str, str]:
    tries = _charset_of(declared, raw)
    for name in tries:
        try:
            return raw.decode(name), name
        except UnicodeDecodeError:
            continue
    return raw.decode(tries[0], errors="replace"), tries[0]  # utf-8 at the latest: readable, marked by U+FFFD


def extract(raw: bytes, *, declared_charset: str | None = None, base: str = "", max_chars: int = 8000,
            max_links: int = 20, truncated: bool = False) -> dict:
    """The flat result for a page's bytes (no I/O: what the tests feed hostile pages to)."""
    html, charset = _decode(raw, declared_charset)
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    text = _clean(parser.main) if _clean(parser.main) else _clean(parser.all)
    links = parser.links_main if parser.main and _clean(parser.main) else parser.links_all
    title = _clean(parser.title).replace("\n", " ") or _clean(parser.h1).replace("\n", " ")
    if len(text) > max_chars:
        text, truncated = text[:max_chars], True
    seen: dict[str, None] = {}  # insertion-ordered and O(1) per look-up: a page of 100 000 links stays linear
    for href in links:
        if len(href) > MAX_LINK:
            continue
        seen.setdefault(urljoin(base, href) if base else href, None)
    kept = [link for link in seen if len(link) <= MAX_LINK]
    return {"title": title[:300], "text": text, "chars": len(text), "truncated": truncated, "charset": charset,
            "links": kept[:max_links], "link_count": len(kept)}


def _allowed_ports(ctx: SkillContext) -> set[int]:
    try:
        ports = json.loads((Path(ctx.data_dir) / "web_page.json").read_text(encoding="utf-8")).get("ports", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {p for p in ports if isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536}


def _url_problem(url: str, ctx: SkillContext) -> Problem | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return rule("url", **both("skill.web_page.not_a_url"))
    if parts.scheme != "http" or parts.hostname != "127.0.0.1" or parts.username or parts.password or port is None \
            or not _URL_CHARS.fullmatch(url):
        return rule("url", **both("skill.web_page.local_only"))
    allowed = _allowed_ports(ctx)
    if port not in allowed:
        return rule("url", **{lang: t("skill.web_page.port", lang, port=port, shown=joined(sorted(allowed), lang, "list")
                                       or t("skill.web_page.no_port", lang)) for lang in LANGS})
    return None


def check_source(args: dict, ctx: SkillContext) -> list[Problem]:
    if ("page" in args) == ("url" in args):
        return [rule("page", **both("skill.web_page.one_source"))]
    if "url" in args:
        found = _url_problem(args["url"], ctx)
        return [found] if found else []
    return []


def _page_path(name: str, ctx: SkillContext) -> Path:
    if not _SAFE_PAGE.match(name):  # the schema says so too; kept here because the path is built from it
        raise ToolFailure("NOT_FOUND", both("skill.web_page.no_such_page"))
    for folder in (Path(ctx.data_dir) / "pages", _HERE / "pages"):
        path = folder / name
        if path.is_file():
            return path
    names = sorted({p.name for f in (Path(ctx.data_dir) / "pages", _HERE / "pages") if f.is_dir()
                    for p in f.glob("*.htm*")})
    raise ToolFailure("NOT_FOUND", {lang: t("skill.web_page.no_page_named", lang, name=name, names=joined(names, lang, "list"))
                                    for lang in LANGS})


def _read_file(path: Path) -> tuple[bytes, bool]:
    with path.open("rb") as f:
        raw = f.read(MAX_BYTES + 1)
    return raw[:MAX_BYTES], len(raw) > MAX_BYTES


def _fetch(url: str) -> tuple[bytes, bool, str | None]:
    """GET a local page: no redirect followed, at most MAX_BYTES read, the whole exchange within DEADLINE.

    A socket timeout bounds one wait only: a server sending a byte a second never trips it, and
    http.client's readline and read(n) keep waiting for more (the headers, a chunk, n bytes). So a timer
    shuts the socket at DEADLINE, whatever the read is waiting for, and the worker is free again.
    """
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=NET_TIMEOUT)
    expired = threading.Event()

    def cut_off() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(DEADLINE, cut_off)
    timer.daemon = True
    timer.start()
    try:
        conn.request("GET", path, headers={"User-Agent": "agentlab-extract-page-text/1.0", "Accept": "text/html"})
        resp = conn.getresponse()
        if 300 <= resp.status < 400:
            raise ToolFailure("RULE_VIOLATION", both("skill.web_page.redirect", status=resp.status))
        if resp.status == 404:
            raise ToolFailure("NOT_FOUND", both("skill.web_page.not_found"))
        if resp.status >= 400:
            raise ConnectionError(f"local page answered {resp.status}")
        ctype = resp.getheader("Content-Type") or "text/html"
        if not re.match(r"\s*(text/html|application/xhtml\+xml|text/plain)", ctype, re.I):
            raise ToolFailure("RULE_VIOLATION", both("skill.web_page.not_html"))
        m = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]{1,40})", ctype, re.I)
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = resp.read1(min(65536, MAX_BYTES + 1 - size))  # what has arrived, not "wait for n bytes"
            if expired.is_set():
                raise TimeoutError("the page took too long to arrive")
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        raw = b"".join(chunks)
        return raw[:MAX_BYTES], len(raw) > MAX_BYTES, m.group(1) if m else None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        # refused, reset, cut off at the deadline, a broken status line, chunk or header from the page's
        # server: its failure, not the caller's, and said without the server's words
        if expired.is_set() or isinstance(exc, TimeoutError):
            raise TimeoutError("the page took too long to arrive") from None
        raise ConnectionError("local page unreachable") from None
    finally:
        timer.cancel()
        conn.close()


@register_skill(read_meta(Path(__file__).with_name("skill.json")), validate=check_source)
def extract_page_text(arguments: dict, ctx: SkillContext) -> dict:
    """The page's title, main text and links, from a shipped page or an allowed local URL."""
    max_chars = int(arguments.get("max_chars", 8000))
    max_links = int(arguments.get("max_links", 20))
    if "page" in arguments:
        raw, cut = _read_file(_page_path(arguments["page"], ctx))
        source, declared, base = arguments["page"], None, ""
    else:
        raw, cut, declared = _fetch(arguments["url"])
        source, base = arguments["url"], arguments["url"]
    result = extract(raw, declared_charset=declared, base=base, max_chars=max_chars, max_links=max_links,
                     truncated=cut)
    head = result["title"] or source
    said = "skill.web_page.summary_cut" if result["truncated"] else "skill.web_page.summary"
    return {"source": source, **result,
            "summary": t(said, ctx.lang, head=head, chars=result["chars"], links=result["link_count"])}

"""The docs folder: every reference to it resolves, and the code cites it instead of documents it does not ship.

A reference is ``docs/<file>.md`` or ``docs/<file>.md#<anchor>`` anywhere in the package, the tests, the
benchmarks, the notebooks' scripts, the app, the README or the docs themselves. The file must exist and the
anchor must be a heading of it, slugged the way GitHub does (lowercase, punctuation dropped, spaces to hyphens).
"""
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT

DOCS = ROOT / "docs"
SOURCES = sorted(
    [*(ROOT / "agentlab").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py"),
     *(ROOT / "notebooks").glob("*.py"), *(ROOT / "notebooks" / "zh").glob("*.py"), *(ROOT / "app").glob("*.py"),
     ROOT / "README.md", ROOT / "README.zh.md", *DOCS.glob("*.md"), *DOCS.glob("zh/*.md")])
REFERENCE = re.compile(r"(?<![\w.-])docs/([\w./-]*?\.md)(?:#([\w-]+))?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
ANCHOR = re.compile(r'<a id="([\w-]+)"></a>')  # a translated page keeps the English page's anchors this way
FENCE = re.compile(r"^\s*(```|~~~)")
# A section of an outside document (a "\u00a75" after its name) or the style guide: documents that live outside the repository.
SECTION_SIGN = "\u00a7"
OUTSIDE_CITATION = re.compile(r"seed[ -]?0\d\d[^\n]*" + SECTION_SIGN + "|STYLE" + r"\.md", re.I)
# Files allowed to cite a document outside the repository: none (docs/sources.md names the original articles).
ALLOWED: set[str] = set()


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped (``_`` and ``-`` kept), spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path) -> set[str]:
    """Every heading anchor of a Markdown file, numbered like GitHub's when a heading repeats."""
    seen: Counter = Counter()
    out, fenced = set(ANCHOR.findall(path.read_text(encoding="utf-8"))), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            s = slug(m.group(1))
            out.add(s if not seen[s] else f"{s}-{seen[s]}")
            seen[s] += 1
    return out


def references() -> list[tuple[str, int, str, str | None]]:
    found = []
    for path in SOURCES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in REFERENCE.finditer(line):
                found.append((str(path.relative_to(ROOT)), n, m.group(1), m.group(2)))
    return found


def test_slug_is_githubs():
    assert slug("Re-ask, resend, stop") == "re-ask-resend-stop"
    assert slug("step_budget") == "step_budget"
    assert slug("Desk 1: the refund desk") == "desk-1-the-refund-desk"
    assert slug("pass^k") == "passk"


def test_docs_are_cited_somewhere():
    refs = references()
    assert len(refs) >= 30, "the code should cite the docs"
    cited = {file for _, _, file, _ in refs}
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert page.name in cited, f"docs/{page.name} is never cited"


@pytest.mark.parametrize("where,line,file,anchor", references(),
                         ids=[f"{w}:{n}:{f}#{a or ''}" for w, n, f, a in references()])
def test_docs_reference_resolves(where, line, file, anchor):
    target = DOCS / file
    assert target.is_file(), f"{where}:{line} cites docs/{file}, which does not exist"
    if anchor:
        assert anchor in anchors(target), f"{where}:{line} cites docs/{file}#{anchor}: no such heading"


def test_links_inside_docs_resolve():
    for page in [*DOCS.glob("*.md"), *DOCS.glob("zh/*.md"), ROOT / "README.zh.md"]:
        for m in re.finditer(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            href = m.group(1)
            if re.match(r"[a-z]+:", href):
                continue
            file, _, anchor = href.partition("#")
            target = (page.parent / file) if file else page
            assert target.is_file(), f"docs/{page.name} links to {href}: no such file"
            if anchor:
                assert anchor in anchors(target), f"docs/{page.name} links to {href}: no such heading"


def test_code_cites_the_docs_not_outside_documents():
    offenders = []
    for path in (ROOT / "agentlab").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE_CITATION.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    for path in [*(ROOT / "notebooks").glob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE_CITATION.search(line):
                offenders.append(f"{path.relative_to(ROOT).as_posix()}:{n}: {line.strip()}")
    assert not offenders, "cite docs/ instead:\n" + "\n".join(offenders)


def tables(text: str) -> list[list[str]]:
    """Every Markdown table outside code blocks, as its lines."""
    out: list[list[str]] = []
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for block in re.findall(r"(?:^\|.*\n?)+", prose, re.M):
        out.append(block.strip().splitlines())
    return out


def _shape(text: str) -> dict:
    """What a translation must keep: the headings' levels in order, every code block, every command, the table rows,
    and each table in its place: the heading it stands under, its columns and its rows (a table the other language's
    page lacks is a missing table, even where another table's extra rows make the counts agree)."""
    blocks = re.findall(r"```.*?```", text, re.S)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    placed: list[list[int]] = []  # [heading number it stands under, rows, columns]
    heading, in_table = 0, False
    for line in prose.splitlines():
        heading += bool(re.match(r"#+ ", line))
        if line.startswith("|") and in_table:
            placed[-1][1] += 1
        elif line.startswith("|"):
            placed.append([heading, 1, line.count("|")])
        in_table = line.startswith("|")
    return {"headings": [len(h) for h in re.findall(r"^(#+) ", prose, re.M)],
            # the code itself, its comments left out: a Chinese page's code says its comments in Chinese
            "code": [re.sub(r"(?m)[ \t]*(?<![\w'\"/:])# .*$", "", b) for b in blocks],
            "commands": sorted(set(re.findall(r"`(python (?:run\.py|-m agentlab)[^`]*)`", prose))),
            "rows": len(re.findall(r"^\|", prose, re.M)),
            "tables": placed}


def test_the_chinese_readme_keeps_step_with_the_english_one():
    """README.zh.md has the same headings (by level, in order), the same code blocks, the same commands and the
    same table rows as README.md, and its prose is Chinese."""
    en, zh = (ROOT / "README.md").read_text(encoding="utf-8"), (ROOT / "README.zh.md").read_text(encoding="utf-8")
    a, b = _shape(en), _shape(zh)
    for part in a:
        assert a[part] == b[part], part
    assert "README.zh.md" in en and "README.md" in zh
    headings = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", zh, flags=re.S), re.M)
    assert all(re.search(r"[\u3400-\u9fff]", h) or h == "agentlab" for h in headings), headings


ZH_DOCS = sorted(DOCS.glob("zh/*.md"))


def test_the_pages_a_learner_reads_exist_in_chinese():
    assert {p.name for p in ZH_DOCS} >= {"README.md", "failures.md", "guards.md", "metrics.md",
                                          "site.md", "telemetry.md", "sources.md"}


@pytest.mark.parametrize("page", ZH_DOCS, ids=lambda p: p.name)
def test_a_chinese_page_keeps_step_with_its_english_one(page):
    """A page under docs' zh folder has the same headings by level, code blocks and table rows as its English page;
    each heading carries the English page's anchor (a link to the Chinese guards page's #idempotency resolves) and
    is written in Chinese."""
    english = DOCS / page.name
    en, zh = english.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")
    a, b = _shape(en), _shape(zh)
    for part in ("headings", "code", "rows", "tables"):
        assert a[part] == b[part], part
    assert anchors(english) <= set(ANCHOR.findall(zh)), anchors(english) - set(ANCHOR.findall(zh))
    lines = re.sub(r"```.*?```", "", zh, flags=re.S).splitlines()
    for i, line in enumerate(lines):
        if HEADING.match(line):
            assert re.search(r"[\u3400-\u9fff]", line), line
            assert i and ANCHOR.fullmatch(lines[i - 1].strip()), f"no anchor above {line!r}"


@pytest.mark.parametrize("readme,page", [("README.md", "docs/workshop.md"), ("README.zh.md", "docs/zh/workshop.md")])
def test_the_workshop_page_says_how_many_a_machine_holds(readme, page):
    """A trainer reads the workshop page, in either language: the README's table of participants per machine (the
    last table of its one-machine workshop section) is on it, word for word, so the two cannot drift apart."""
    text = (ROOT / readme).read_text(encoding="utf-8")
    section = re.split(r"^## ", text, flags=re.M)
    one_machine = next(s for s in section if "run.py hub --users" in s)
    sizing = tables(one_machine)[-1]
    assert len(sizing) >= 5, sizing
    assert sizing in tables((ROOT / page).read_text(encoding="utf-8")), f"{page} lacks the sizing table of {readme}"


#: a link to the English page on purpose says so just before it ("英文版：[guards.md](../guards.md)")
TO_THE_ENGLISH_PAGE = "英文版："
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def chinese_texts() -> list[tuple[str, Path, str]]:
    """Everything a Chinese reader reads, as (where, the folder its relative links start from, text): the Chinese
    notebooks' text cells, README.zh.md, the Chinese docs, and the catalogue's Chinese sentences and labels (the app
    and the widgets speak only through these)."""
    out = []
    for nb in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, c in enumerate(cells):
            if c["cell_type"] == "markdown":
                out.append((f"notebooks/zh/{nb.name} cell {i}", nb.parent, "".join(c["source"])))
    for page in [ROOT / "README.zh.md", *ZH_DOCS]:
        out.append((page.relative_to(ROOT).as_posix(), page.parent, page.read_text(encoding="utf-8")))
    for key, text in json.loads((ROOT / "data/i18n/zh.json").read_text(encoding="utf-8")).items():
        out.append((f"zh.json {key}", ROOT, text))
    for glossary in sorted((ROOT / "data/i18n/labels").glob("*.json")):
        for key, text in json.loads(glossary.read_text(encoding="utf-8")).get("zh", {}).items():
            out.append((f"labels/{glossary.name} {key!r}", ROOT, text))
    return out


def doc_references(base: Path, text: str) -> list[tuple[Path, str | None, bool]]:
    """Every page a text names: its Markdown links resolved from ``base``, and ``docs/<page>.md`` written out (a path
    in a sentence); as (page, anchor, whether it says it links the English page on purpose)."""
    found = []
    for line in text.splitlines():
        for m in MD_LINK.finditer(line):
            file, _, anchor = m.group(1).partition("#")
            if file.endswith(".md") and not re.match(r"[a-z]+:", file):
                found.append(((base / file).resolve(), anchor or None, line[:m.start()].endswith(TO_THE_ENGLISH_PAGE)))
        for m in REFERENCE.finditer(line):
            found.append((DOCS / m.group(1), m.group(2), False))
    return found


def test_a_chinese_reader_is_sent_to_the_chinese_page():
    """A Chinese notebook, the Chinese README and docs, and the catalogue's Chinese sentences and labels never send
    a reader to an English page of docs/ that has a Chinese twin (only a link right after 英文版： goes to the English
    page on purpose), and every anchor they name is a heading of the page they name."""
    wrong, broken, seen = [], [], 0
    for where, base, text in chinese_texts():
        for page, anchor, on_purpose in doc_references(base, text):
            seen += 1
            page = page.resolve()
            if page.parent == DOCS.resolve() and (DOCS / "zh" / page.name).is_file() and not on_purpose:
                wrong.append(f"{where}: {page.relative_to(ROOT)}#{anchor or ''} (docs/zh/{page.name} exists)")
            elif not page.is_file() or (anchor and anchor not in anchors(page)):
                broken.append(f"{where}: {page}#{anchor or ''}")
    assert seen >= 40, seen
    assert not wrong, "links to the English page where a Chinese one exists:\n" + "\n".join(sorted(set(wrong)))
    assert not broken, "no such page or heading:\n" + "\n".join(broken)


#: one thing, one Chinese word: each word a reader met beside another for the same thing (notebook 06 said 熔断器,
#: 来回横跳, 复读机 and 走神 while its check said 断路器, 乒乓, 重复者 and 游走; notebook 11 was 每周 Badcase 复盘 in
#: its title and 每周坏案例复盘 in the README), and the word kept
ONE_WORD = {"断路器": "熔断器", "乒乓": "来回横跳", "重复者": "复读机", "游走": "走神", "Badcase": "坏案例", "护栏": "防护",
            "探测器": "探针", "步数用尽": "预算用尽", "步数耗尽": "预算用尽",
            "瞬态": "瞬时", "暂时性": "瞬时", "临时性": "瞬时"}


def test_one_thing_has_one_chinese_word_everywhere_a_reader_meets_it():
    surfaces = [ROOT / "README.zh.md", ROOT / "data" / "i18n" / "zh.json", *sorted((ROOT / "docs" / "zh").glob("*.md")),
                *sorted((ROOT / "notebooks" / "zh").glob("*.py")), *sorted((ROOT / "data" / "trainer").glob("*.zh.md")),
                *sorted((ROOT / "data" / "i18n" / "labels").glob("*.json"))]
    found = [f"{p.relative_to(ROOT)}: {word} (say {kept})" for p in surfaces
             for word, kept in ONE_WORD.items() if word in p.read_text(encoding="utf-8")]
    assert not found, "\n".join(found)


def _departures():
    """benchmarks/departures.py, imported as the script the docs' departures table is measured by."""
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import departures
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return departures


def test_the_departures_table_quotes_the_invalid_call_rate_the_package_computes(capsys):
    """docs/sources.md quoted 26.3% and 25.3% invalid calls for the bookkeeping suite, from 1 - schema_valid_rate (the
    calls that parsed); the package's invalid_call_rate, which notebook 14 shows, read 27.3%. One definition, both
    languages."""
    departures = _departures()
    departures.cleaning()
    off, on = re.findall(r"invalid calls (\d+\.\d)%", capsys.readouterr().out)
    assert f"invalid calls {off}% off, {on}% on" in (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    assert f"无效调用率关 {off}%、开 {on}%" in (ROOT / "docs" / "zh" / "sources.md").read_text(encoding="utf-8")


def test_the_departures_table_quotes_both_ways_of_counting_success_as_measured(capsys):
    """The table quoted the guarded loop's task success as 100% without saying it counted a correct hand-over as a
    success; counted finished-only (finished and checked) it is 63.5%. Both ways, from the benchmark, both
    languages."""
    departures = _departures()
    departures.two_ways()
    rows = re.findall(r"(after-sales|bookkeeping) +(naive|guarded) *: success ([\d.]+)% the workbook's way, ([\d.]+)% "
                      r"finished and checked; takeover ([\d.]+)% the workbook's way, ([\d.]+)%", capsys.readouterr().out)
    got = {(desk, loop): nums for desk, loop, *nums in rows}
    en = " ".join((ROOT / "docs" / "sources.md").read_text(encoding="utf-8").split())
    zh = (ROOT / "docs" / "zh" / "sources.md").read_text(encoding="utf-8")
    s, c, t, u = got[("after-sales", "guarded")]
    assert f"guarded success {s}% and {c}%" in en and f"防护循环成功率 {s}% 和 {c}%" in zh, got
    s, c, t, u = got[("after-sales", "naive")]
    assert f"takeover {t}% the workbook's way and {u}%" in en and f"人工接管率按本书 {t}%、按文章 {u}%" in zh
    s, c, t, u = got[("bookkeeping", "guarded")]
    assert f"guarded {s}% and {c}%" in en and f"防护循环 {s}% 和 {c}%" in zh


def test_the_readmes_list_every_fault_demo_takes():
    """The READMEs listed 16 of the 20 faults `demo --fault` takes (amount_in_words, out_of_range, repeat_call and
    ping_pong came later and were never added)."""
    from agentlab.models.faults import FAULTS
    for readme in ("README.md", "README.zh.md"):
        text = " ".join((ROOT / readme).read_text(encoding="utf-8").split())
        listed = re.search(r"(?:Faults|故障列表)[:：] ?`([a-z0-9_ ]+)`", text)
        assert listed, readme
        assert listed.group(1).split() == list(FAULTS), readme

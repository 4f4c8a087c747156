"""Words the reader can resolve: nothing a reader meets cites a document the reader does not have.

The desks, the checklist and the skill site were first described in articles that are not shipped, and the work was
tracked in issues that are not shipped either. A reader of the code, a docstring, the README, the docs, a notebook,
the app, a shipped skill's metadata, a benchmark or a test meets the product's own words instead ("the bookkeeping
desk", "the skill site", "the refund desk"); ``docs/sources.md`` alone names the original articles.

Nor does anything a reader meets repeat a sentence of those articles: the product says it in its own words (a run of
eleven characters shared with them, spaces ignored, is a sentence taken over; a shorter one is a term both must use).

A random seed is not a citation: ``seed=0``, ``rng seed 7`` and ``--seed 042`` stay allowed, so the patterns are
tested on examples of both kinds before they are run over the tree.
"""
import json
import os
import re
from pathlib import Path

import pytest
from conftest import ROOT

# Each pattern is one way of citing: a numbered seed or article ("seed 004", "seed-000", "Seed 000's", "article 003",
# "the 003 article"), an issue or pull request ("(issue #10)", "issue 21", "Issue 22:"), a section of an outside
# document ("§3.3", "§八"), and the same in Chinese ("种子 004", "文章 003", "第 003 篇").
CITATION = re.compile("|".join([
    r"(?<![-=A-Za-z0-9])seeds?[ _-]?0\d\d(?!\d)(?!\s*[)\],=])",  # seed 004 / seed-000 / test_seed_000; not seed(042)
    r"(?<!#)\barticles?[ _-]?#?0\d\d(?!\d)",                    # article 003 / Article 000's; a link into docs/sources.md is fine
    r"\b0\d\d(?:'s)?[ _-](?:seed|article)s?\b",             # the 003 article
    r"\bissues?\s*#\d+",                                    # issue #10 / issues #3
    r"\bissue\s+\d+\b",                                     # issue 21 / Issue 22:  (a verb reads "issues 3 refunds")
    r"\(\s*issue\s*:",                                      # (issue: foundation)
    r"\bPR\s*#\d+",                                         # PR #12
    "\u00a7\\s*[\\d\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03\u516b\u4e5d\u5341]",  # a section sign: §3.3, §八
    "(?:\u79cd\u5b50|\u6587\u7ae0)\\s*0\\d\\d",                  # 种子 004 / 文章 003
    "\u7b2c\\s*0\\d\\d\\s*\u7bc7",                              # 第 003 篇
    r"\bthe\s+(?!original\b)[a-z-]+\s+article\b",           # the refund article ("the original articles": sources)
    r"\bthe\s+article's\b",                                 # in the article's order
    r"\bseed\s+articles?\b",                                # which seed article
    "[\u90a3\u8fd9\u8be5]\u7bc7\u6587\u7ae0",                          # 那篇文章 / 这篇文章 / 该篇文章
]), re.IGNORECASE)

CITES = ["seed 004", "the seed-000 script", "Seed 000's four numbers", "seed_003 fields", "(seed 004's fields)",
         "article 003", "Article 003's twelve checks", "the 003 article", "articles 002", "(issue #10)", "issue 21",
         "Issue 22: 00 printed", "(issue: foundation; issue 15)", "issues #3 and #4", "see PR #12",
         "at most five turns (\u00a73.3)", "before going live (\u00a7\u516b)", "\u79cd\u5b50 004 \u7684\u5b57\u6bb5",
         "\u6587\u7ae0 003", "\u7b2c 003 \u7bc7", "seeds 003 and 004",
         "def test_seed_000_demo_replays():", "def test_seed000_metrics():", "The refund article sorts failures",
         "in the article's order", "which seed article", "\u9000\u6b3e\u90a3\u7bc7\u6587\u7ae0\u91cc"]
SEEDS = ["seed=0", "random.Random(seed)", "rng seed 7", "seed: int = 0", "--seed 042", "seed(042)", "seeds=[0, 1]",
         "a seed of 0", "SEED = 1234", "the desk issues 3 refunds", "an issue with 3 tools", "issue_id = 10",
         "seeded 004 times", "article about refunds", "order 003", "A1003 article", "the seed's data",
         "tissue 12", "reissue 3", "docs/sources.md names the articles", "seed 0", "seed 42", "\u79cd\u5b50\u6570 0",
         "docs/sources.md#article-000-the-refund-desk", "rng_seed=042", "``<main>`` or ``<article>``",
         "main/article text", "the page's <article> element"]

# Where a reader meets text: the package (code, comments, docstrings, shipped skills, templates), the data (the
# catalogue, skills' metadata, recorded runs), the docs, the README, the notebooks and the app, the benchmarks,
# the tests, and the files that install and check it all.
FOLDERS = ["agentlab", "data", "docs", "notebooks", "app", "benchmarks", "tests", ".ci"]
TOP = ["README.md", "README.zh.md", "run.py", "pyproject.toml", *(p.name for p in ROOT.glob("requirements*.txt"))]
TEXT = {".py", ".md", ".json", ".jsonl", ".ipynb", ".txt", ".toml", ".jinja", ".html", ".css", ".js", ".sh", ""}
# docs/sources.md (and its Chinese twin) names the original articles; this file holds the examples above.
ALLOWED = {"docs/sources.md", "docs/zh/sources.md", "tests/test_wording.py"}


def read_by_people() -> list:
    files = [ROOT / name for name in TOP if (ROOT / name).is_file()]
    for folder in FOLDERS:
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in TEXT
                  and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(ROOT / folder).parts)]
    return sorted(p for p in files if p.relative_to(ROOT).as_posix() not in ALLOWED)


@pytest.mark.parametrize("text", CITES)
def test_the_pattern_catches_a_citation(text):
    assert CITATION.search(text), text


@pytest.mark.parametrize("text", SEEDS)
def test_the_pattern_leaves_random_seeds_and_plain_words_alone(text):
    assert not CITATION.search(text), (text, CITATION.search(text))


def test_the_scan_reaches_every_place_a_reader_meets():
    seen = {p.relative_to(ROOT).as_posix() for p in read_by_people()}
    for expected in ("README.md", "agentlab/evals/checklist.py", "agentlab/site/shipped/notify/skill.json",
                     "data/i18n/zh.json", "docs/guards.md", "app/agentlab_app.py", "benchmarks/bench_redaction.py",
                     "tests/test_hostile.py", "notebooks/00_start_here.py", "notebooks/00_start_here.ipynb"):
        assert expected in seen, expected
    assert "docs/sources.md" not in seen and "docs/zh/sources.md" not in seen
    assert "docs/zh/guards.md" in seen  # the other Chinese pages are read like the English ones


def test_nothing_a_reader_meets_cites_a_document_they_do_not_have():
    offenders = []
    for path in read_by_people():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            m = CITATION.search(line)
            if m:
                offenders.append(f"{path.relative_to(ROOT).as_posix()}:{n}: {m.group(0)!r} in {line.strip()[:140]}")
    assert not offenders, "say it in the product's own words (docs/sources.md alone names the articles):\n" + \
        "\n".join(offenders)


# --- the product's own words: no sentence of the original articles ---------------------------------------------
# The articles the design came from are read beside the work (``../shared/seeds``, not shipped). A run of RUN
# characters of theirs (spaces ignored, most of them Chinese) found in anything a reader meets is a sentence taken
# over rather than said anew; a shorter run is a term or a list of terms ("成功率", "幂等键") that both must use.
SOURCES = Path(os.environ.get("AGENTLAB_SOURCES", ROOT.parent / "shared" / "seeds"))
RUN = 11
_CJK = re.compile("[\u4e00-\u9fff]")
_SPACE = re.compile(r"\s+")


def _runs(text: str) -> set[str]:
    """Every RUN-character window of ``text`` (spaces removed) that is mostly Chinese."""
    flat = _SPACE.sub("", text)
    return {flat[i:i + RUN] for i in (m.start() for m in _CJK.finditer(flat))
            if len(_CJK.findall(flat[i:i + RUN])) * 5 >= RUN * 3}


# Left as they are, on purpose: two words the real models were recorded with. The Chinese description of the booking
# tool quotes the taxi ask it was first written around (data/cassettes/expense-*), and the weather skill's Chinese
# fallback hint ends as the article's does (data/cassettes/site-discovery-*). Each recording is bound to the exact
# specs it was made with: rewording either means recording them all again, which moves every figure read from them.
RECORDED_WITH = {("data/expense_tools.zh.json", "今天打车花了45元帮我记上"),
                 ("agentlab/site/shipped/weather/skill.json", "建议用户查看天气App")}


class Sources:
    """The original articles (spaces removed) and every run of theirs."""

    def __init__(self, texts: list[str]):
        self.texts = [_SPACE.sub("", t) for t in texts]
        self.runs = set().union(*(_runs(t) for t in self.texts))

    def copied(self, text: str) -> list[str]:
        """The runs of ``text`` that are also the articles', each grown to the whole length the two share."""
        flat, found, i = _SPACE.sub("", text), [], 0
        while i < len(flat):
            if _CJK.match(flat, i) and flat[i:i + RUN] in self.runs:
                end = i + RUN
                while end < len(flat) and any(flat[i:end + 1] in t for t in self.texts):
                    end += 1
                found.append(flat[i:end])
                i = end
            else:
                i += 1
        return found


@pytest.fixture(scope="module")
def sources() -> Sources:
    files = sorted(SOURCES.glob("*.txt")) if SOURCES.is_dir() else []
    if not files:
        pytest.skip(f"the original articles are not beside the checkout ({SOURCES}); nothing to compare with")
    return Sources([p.read_text(encoding="utf-8") for p in files])


def test_the_comparison_catches_a_sentence_and_leaves_a_term_alone(sources):
    article = max(sources.texts, key=len)
    start = next(m.start() for m in _CJK.finditer(article, 100)
                 if len(_CJK.findall(article[m.start():m.start() + 14])) == 14)
    taken = article[start:start + 14]
    assert sources.copied(f"说明：{taken}。") == [taken]
    assert not sources.copied("指标：成功率、幂等键、重试次数。这是我们自己写的一句话，和原文无关。")


def test_nothing_a_reader_meets_repeats_a_sentence_of_the_original_articles(sources):
    offenders = []
    for path in [*read_by_people(), ROOT / "docs" / "sources.md", ROOT / "docs" / "zh" / "sources.md"]:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if _CJK.search(text):
            name = path.relative_to(ROOT).as_posix()
            offenders += [f"{name}: {run}" for run in sources.copied(text) if (name, run.strip("“”")) not in RECORDED_WITH]
    assert not offenders, "say it in the product's own words:\n" + "\n".join(offenders)


@pytest.mark.parametrize("desk", ["aftersales", "expense"])
def test_every_tool_and_field_of_a_shipped_desk_has_its_chinese_words(desk):
    """A tool or field the Chinese file does not name keeps its English words (the retail store's data comes from the
    machine); the desks this project ships are to be said whole in Chinese."""
    from agentlab.resources import data_file
    specs = json.loads(data_file(f"{desk}_tools.json").read_text(encoding="utf-8"))
    words = json.loads(data_file(f"{desk}_tools.zh.json").read_text(encoding="utf-8"))
    for spec in specs:
        fn = spec["function"]
        assert fn["name"] in words, fn["name"]
        assert set(fn["parameters"].get("properties", {})) <= set(words[fn["name"]]["fields"]), fn["name"]

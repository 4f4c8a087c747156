"""Chinese text is punctuated as Chinese wherever a reader meets it: a label and its value take a full-width colon.

Each surface is rendered as the reader gets it (a page over HTTP, a report file, a command's output) and read with
:func:`typography.ascii_colons`; notebooks' outputs are read by tests/test_notebooks.py as they run."""
from __future__ import annotations

import pytest
from typography import ascii_colons, ascii_commas


@pytest.mark.parametrize("text", ["写入的退款笔数: 1", "0.5B: 本机没有录制", "结论 :未拦截", "（幂等）: 重放",
                                  "<td>状态</td>: 完成", "调用次数:2"])
def test_an_ascii_colon_in_chinese_is_found(text):
    assert ascii_colons(text, page=True), text


@pytest.mark.parametrize("text", ["写入的退款笔数：1", "请发送 http://127.0.0.1:端口/路径", "redis://host:port/db、sqlite:///p 或 memory:，",
                                  '{"message": "参数不合法"}', "{'退款': 1}", "INVALID_ARGS: validation/parse", "12:30 到期",
                                  "refunds: 1"])
def test_what_is_not_chinese_punctuation_is_left(text):
    assert not ascii_colons(text, page=True), text


def test_what_a_pointer_shows_is_read_too():
    assert ascii_colons("<td title='结论: 未拦截'>✗</td>", page=True)
    assert not ascii_colons("<td title='结论：未拦截'>✗</td>", page=True)


@pytest.mark.parametrize("text", ["完成, 等了 500 ms", "3 次错误调用, 3 轮次", "朴素循环 3/20, 防护循环 16/20", "转人工; 用户看到"])
def test_an_ascii_comma_or_semicolon_in_chinese_is_found(text):
    assert ascii_commas(text), text


@pytest.mark.parametrize("text", ["完成，等了 500 ms", "金额 1,200 元", "模型 0.5b, 1.5b 都", "{'退款': 1, 'b': 2}"])
def test_a_comma_that_is_not_chinese_punctuation_is_left(text):
    assert not ascii_commas(text), text


#: catalogue entries whose ASCII comma is notation, not punctuation: the JSON shape a case file must take
NOTATION = {"case.script_item", "case.plan_item"}


def test_the_chinese_catalogue_is_punctuated_as_chinese():
    """Every Chinese sentence the catalogue holds (messages, labels, the CLI's help, the notebooks' comments): the key
    list's role read "运维, 创建于 ..." in Chinese."""
    import json

    from conftest import ROOT
    from typography import english_punctuation
    found = []

    def walk(value, where):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{where}/{k}")
        elif isinstance(value, list):
            for v in value:
                walk(v, where)
        elif isinstance(value, str) and english_punctuation(value) and where.split("/")[-1] not in NOTATION:
            found.append((where, english_punctuation(value)))
    i18n = ROOT / "data" / "i18n"
    for path in [i18n / "zh.json", *sorted((i18n / "labels").glob("*.json")), i18n / "cli.json", i18n / "comments.json"]:
        walk(json.loads(path.read_text(encoding="utf-8")), path.name)
    assert not found, found[:10]


def test_the_chinese_pages_are_punctuated_as_chinese():
    """README.zh.md, docs/zh and the Chinese notebooks' prose (code blocks and inline code aside, as written): the
    README's benchmark table read "否, 否" in Chinese."""
    import re

    from conftest import ROOT
    from typography import english_punctuation
    pages = [ROOT / "README.zh.md", *sorted((ROOT / "docs" / "zh").rglob("*.md"))]
    notebooks = sorted((ROOT / "notebooks" / "zh").glob("[0-9]*.py"))
    found = []
    for path in [*pages, *notebooks]:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":  # the markdown cells and the comments: what a reader reads
            text = "\n".join(line for line in text.splitlines() if line.startswith("#"))
        text = re.sub(r"`[^`\n]*`", "X", re.sub(r"```.*?```", "", text, flags=re.S))  # code stands as one word
        found += [(path.name, hit) for hit in english_punctuation(text)]
    assert len(pages) > 10 and len(notebooks) >= 20 and not found, found[:10]


@pytest.mark.parametrize("text", ["已退款 (3 轮次)", "order_id：missing (缺少必填字段)", "调用次数 (calls)", "+140 µs） (0.72)",
                                  "<td title='写入 (2 笔)'>2</td>"])
def test_ascii_brackets_in_chinese_are_found(text):
    from typography import ascii_parens
    assert ascii_parens(text, page=True), text


@pytest.mark.parametrize("text", ["已退款（3 轮次）", 'connect(url, code, "你的名字")', "[见下文](#一台机器上的工作坊)",
                                  "refunded (3 turns)", "f(x) 的值", '{"amount": "45元"}'])
def test_brackets_that_are_not_chinese_punctuation_are_left(text):
    from typography import ascii_parens
    assert not ascii_parens(text, page=True), text


def test_a_chinese_list_of_names_left_in_english_is_found():
    from typography import untranslated_items
    glossary = {"idempotency": "幂等", "all_calls": "执行全部调用"}
    assert untranslated_items("<td>idempotency、all_calls</td><td>幂等、执行全部调用</td>", glossary) == \
        ["idempotency、all_calls"]
    assert not untranslated_items("<td>create_refund、lookup_order</td><td>幂等</td>", glossary)
    assert not untranslated_items("<td>没有这个字段。可用字段：order_id、idempotency。</td>", glossary)  # a sentence


def test_a_table_cell_listing_names_the_english_way_is_found():
    from typography import english_list_cells
    assert english_list_cells("<table><tr><td>idempotency, all_calls</td><td>1</td></tr></table>") == \
        ["idempotency, all_calls"]
    assert not english_list_cells("<td>idempotency、all_calls</td><td>a sentence, with a clause</td>"
                                  "<td>{&quot;a&quot;: 1, &quot;b&quot;: 2}</td><td>1,200</td>")


def test_a_chinese_label_says_a_name_the_glossary_says_in_chinese():
    """A Chinese label or sentence that holds a name the glossary says in Chinese (a run's status, a guard), as the
    program spells it: notebook 10 read "只开 idempotency" in its ablation where notebook 00 names the guard 幂等, and
    defined the takeover rate over runs "以 escalated 或 budget_exhausted 结束" beside a table that says 转人工.
    A name in backticks is code, and one beside its Chinese in brackets (步数预算（step_budget）) is named as both."""
    import json
    import re
    from dataclasses import fields

    from conftest import ROOT

    from agentlab.i18n import label_glossary
    said = label_glossary()["zh"]
    from agentlab.guards import GuardConfig
    statuses = json.loads((ROOT / "data" / "i18n" / "labels" / "statuses.json").read_text(encoding="utf-8"))["zh"]
    names = {name for name in [*statuses, *(f.name for f in fields(GuardConfig))] if "_" in name or name in said}
    assert {"idempotency", "budget_exhausted", "escalated"} <= names
    either = "|".join(sorted(names, key=len, reverse=True))
    pattern = re.compile(r"(?<![\w`.\-/{（#])(" + either + r")(?![\w`(\-/}:!（])")
    i18n = ROOT / "data" / "i18n"
    found = []
    for path in [i18n / "zh.json", *sorted((i18n / "labels").glob("*.json"))]:
        table = json.loads(path.read_text(encoding="utf-8"))
        for key, value in (table.get("zh", table) if "zh" in table else table).items():
            if isinstance(value, str) and re.search("[\u4e00-\u9fff]", value) and pattern.search(value):
                found.append((path.name, key, pattern.search(value).group(1)))
    # and the prose a Chinese reader reads: the notebooks' text cells, the README and the docs (code and links aside;
    # the glossary's first column is the English term, on purpose)
    pages = [ROOT / "README.zh.md", *sorted((ROOT / "docs" / "zh").rglob("*.md")),
             *sorted((ROOT / "notebooks" / "zh").glob("[0-9]*.py"))]
    for path in pages:
        if path.name == "glossary.md":
            continue
        prose, fenced = path.suffix == ".md", False
        for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if path.suffix == ".py" and line.startswith("# %%"):
                prose = line.startswith("# %% [markdown]")
                continue
            if line.lstrip("# ").startswith("```"):
                fenced = not fenced
                continue
            body = re.sub(r"`[^`]*`", "", line)
            if prose and not fenced and re.search("[\u4e00-\u9fff]", body) and pattern.search(body):
                found.append((path.name, n, pattern.search(body).group(1)))
    assert not found, found[:20]

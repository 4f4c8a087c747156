"""The message catalogue is data: one JSON file per language, kept in step, shipped in the wheel."""
import itertools
import json
import re
import string
import subprocess
import sys
import tomllib

import pytest
from conftest import ROOT

from agentlab import i18n

FOLDER = ROOT / "data" / "i18n"


def _no_duplicates(pairs):
    names = [name for name, _ in pairs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    assert not repeated, f"keys given twice (the last would silently win): {repeated}"
    return dict(pairs)


def read(lang: str) -> dict[str, str]:
    raw = (FOLDER / f"{lang}.json").read_bytes()
    return json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)  # strict UTF-8: a bad byte fails here


def fields(text: str) -> set[str]:
    """The names a sentence fills in: ``{name}``, ``{name!r}`` and ``{x:g}`` all give ``name``/``x``."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_each_language_file_is_one_json_object_of_sentences(lang):
    texts = read(lang)
    assert texts and all(isinstance(k, str) and isinstance(v, str) and v for k, v in texts.items())


def test_the_languages_have_the_same_keys_in_the_same_order():
    # the same order keeps the files side by side for a translator, and a new block lands at the same place in each
    en, zh = read("en"), read("zh")
    assert set(en) - set(zh) == set() and set(zh) - set(en) == set()
    assert list(en) == list(zh)


def test_the_languages_fill_in_the_same_fields():
    en, zh = read("en"), read("zh")
    differ = {key: (sorted(fields(en[key])), sorted(fields(zh[key]))) for key in en
              if key in zh and fields(en[key]) != fields(zh[key])}
    assert not differ


def test_the_field_check_can_fail():
    assert fields("{name!r} costs {x:g} ({share:.0%})") == {"name", "x", "share"}
    assert fields("没有名为 {name!r} 的工具。") != fields("There is no tool named {tool!r}.")
    with pytest.raises(ValueError):
        fields("a stray } brace")
    with pytest.raises(AssertionError):
        json.loads('{"a": "1", "a": "2"}', object_pairs_hook=_no_duplicates)


def test_catalog_is_complete_in_both_languages():
    for key in i18n.keys():
        assert i18n._CATALOG[key].get("en") and i18n._CATALOG[key].get("zh"), key


def test_the_catalogue_is_what_the_files_say():
    en, zh = read("en"), read("zh")
    assert i18n.keys() == list(en)
    assert i18n._CATALOG == {key: {"en": en[key], "zh": zh[key]} for key in en}
    assert i18n.t("UNKNOWN_TOOL", "en", name="x") == en["UNKNOWN_TOOL"].format(name="x")
    assert i18n.t("UNKNOWN_TOOL", "zh", name="x") == zh["UNKNOWN_TOOL"].replace(" {name!r} ", "“x”")


def test_importing_the_package_does_not_read_the_catalogue():
    # the files are read on the first sentence asked for, so a plain import stays as cheap as it was
    code = ("import agentlab, agentlab.i18n as i; assert i._catalog.cache_info().currsize == 0; "
            "i.t('UNKNOWN_TOOL', name='x'); i.t('BAD_JSON.not_object', got=1); "
            "assert i._catalog.cache_info().misses == 1")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_the_wheel_ships_every_catalogue_file():
    # .ci/check_wheel builds the real wheel; this checks the package-data globs cover the folder, in a second
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    shipped = globs["agentlab.data"]
    covered = {path for glob in shipped for path in (ROOT / "data").glob(glob)}  # setuptools reads them as globs
    files = {FOLDER / f"{lang}.json" for lang in i18n.LANGS} | set(FOLDER.glob("*.json"))
    assert sorted(p.name for p in files - covered) == []


def test_the_label_glossary_files_agree_and_say_each_label_in_chinese():
    """data/i18n/labels/*.json: one file per topic, ``{"zh": {english: chinese}}``; a label given in two files
    must be said the same way in both, and every translation is Chinese (not the English copied over)."""
    import re

    from agentlab.resources import data_file
    seen: dict[str, tuple[str, str]] = {}
    files = sorted(data_file("i18n/labels").glob("*.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert set(data) == {"zh"}, path.name
        for en, zh in data["zh"].items():
            assert isinstance(zh, str) and re.search(r"[\u3400-\u9fff]", zh), (path.name, en, zh)
            if en in seen:
                assert seen[en][1] == zh, f"{en!r}: {seen[en][0]} says {seen[en][1]!r}, {path.name} says {zh!r}"
            seen[en] = (path.name, zh)


def test_a_fault_is_shown_by_its_own_name_in_chinese_too():
    """A fault's name is what the learner types (an exercise's key, ``demo --fault``), so a Chinese table shows it as
    it is: "ping_pong" was translated by a label one notebook kept for its model's name, and a learner who typed the
    name the table showed was told that fault had no guard yet."""
    from agentlab.i18n import label
    from agentlab.models.faults import FAULTS
    assert FAULTS
    renamed = {name: label(name, "zh") for name in FAULTS if label(name, "zh") != name}
    assert not renamed, renamed


def test_a_label_is_said_in_chinese_kept_when_technical_and_noted_when_missing():
    from agentlab.i18n import label, missing_labels
    assert label("naive", "zh") == "朴素循环" and label("naive", "en") == "naive"
    for technical in ("create_refund", "INVALID_ARGS", "pass^k", "3", "12%", "已完成", "", "x", "adv-bad-key",
                      "normal-03", "5-no-cache"):
        assert label(technical, "zh") == technical
    assert label(7, "zh") == 7
    assert label("idempotency, all_calls", "zh") == "幂等、执行全部调用"  # a list: each label on its own
    assert label("a label nobody wrote down", "zh") == "a label nobody wrote down"
    assert "a label nobody wrote down" in missing_labels()
    assert label("spelled-out", "zh") == "spelled-out" and "spelled-out" in missing_labels()  # two words: a phrase
    assert not {"adv-bad-key", "normal-03", "5-no-cache"} & missing_labels()  # ids are names, not prose


def test_headers_ids_and_scored_names_are_names_too():
    """The skill site's tables: a response header (Idempotent-Replayed), a message or session id (M29df00c1a5),
    the search's hits with their scores; each was noted as a label missing from the glossary."""
    from agentlab.i18n import label, missing_labels
    names = ("Idempotent-Replayed", "X-Session-Id", "M29df00c1a5", "5039b2eb4e8f", "E0020",
             "current_weather (18.8), create_refund (2.4)", "search_expense_records, get_budget")
    for name in names:
        assert label(name, "zh") in (name, name.replace(", ", "、"))
    assert not set(names) & missing_labels() and not {"current_weather (18.8)", "create_refund (2.4)"} & missing_labels()
    assert label("hand-over words", "zh") and "hand-over words" in missing_labels()  # words are still words


def test_what_a_program_said_is_kept_whole_not_cut_into_a_list_of_labels():
    """A tool's JSON reply or a call in a Chinese table came out as '{"ok": true、"data": ...}': its ", " was read
    as a list of labels, and every key noted as a missing label. What a program said is shown as it said it."""
    import pandas as pd

    from agentlab.i18n import label, missing_labels
    from agentlab.workbook.plots import table_view
    said = ['{"ok": true, "data": {"record_id": "E0021", "item": "taxi"}}', '[1, 2, "three words here"]',
            'book_expense_record({"date": "2026-10-15", "item": "taxi"})',
            'create_refund({"order_id": "A1"}), escalate_to_human({"summary": "call me back"})']
    for text in said:
        assert label(text, "zh") == text
    shown = table_view(pd.DataFrame({"content": said}), lang="zh").data
    assert list(shown.iloc[:, 0]) == said
    assert not {m for m in missing_labels() if '"' in m or "(" in m}
    assert label("idempotency, all_calls", "zh") == "幂等、执行全部调用"  # a list of labels is still a list


#: a language's own name on the switch that leads to it is the one place it may appear in the other language
OTHER_LANGUAGE_NAMES = {"trainer.other_lang"}
# a fault's English account quotes the Chinese value it makes the model send, as sent ("199元")
QUOTED_VALUES = {"fault.wrong_type", "fault.amount_in_words"}
CJK = re.compile(r"[\u3400-\u9fff\uff01-\uff5e\u3001-\u303f]")
ENGLISH_RUN = re.compile(r"(?:\b[A-Za-z][a-z]+\b[ ,.:;'-]+){4,}")


def _prose(text: str) -> str:
    """A sentence without what is not prose: code, commands, placeholders, markup and addresses."""
    return re.sub(r"`[^`]*`|\{[^}]*\}|<[^>]+>|https?://\S+|\b(?:python|sudo|apt-get|agentlab|from)\b.*", "", text)


def test_no_sentence_mixes_the_two_languages():
    """English mode printed Chinese inside English sentences ("What caught it: the idempotency key ... (幂等)"):
    a reader gets one language at a time."""
    mixed = [(k, v) for k, v in read("en").items()
             if k not in OTHER_LANGUAGE_NAMES | QUOTED_VALUES and CJK.search(v)]
    assert not mixed, mixed[:5]
    english_in_zh = [(k, v) for k, v in read("zh").items()
                     if ENGLISH_RUN.search(_prose(v))]
    assert not english_in_zh, english_in_zh[:5]


def test_chinese_text_says_workbook_and_guarded_loop_one_way():
    """The workbook is 练习册 and the guarded loop 防护循环 wherever a Chinese reader meets them (the catalogue, the
    notebooks, the README, the docs, the trainer's notes): the two start lines of ``run.py check`` once called the
    workbook by two names, and the review said 守护循环 beside every other page's 防护循环."""
    others = {"工作簿": "练习册", "工作手册": "练习册", "守护循环": "防护循环"}
    files = [ROOT / "data/i18n/zh.json", ROOT / "README.zh.md", *sorted((ROOT / "notebooks/zh").glob("*.py")),
             *sorted((ROOT / "docs/zh").glob("*.md")), *sorted((ROOT / "data/trainer").glob("*.zh.md"))]
    found = [(path.relative_to(ROOT).as_posix(), word) for path in files
             for word in others if word in path.read_text(encoding="utf-8")]
    assert not found, found


def test_chinese_text_calls_an_api_key_a_key_in_chinese():
    """An API key is 密钥 in Chinese text (the site's pages, its errors, the CLI, the docs): about thirty sentences said
    "key" beside 密钥 in others ("该 key 无权调用", "需要运维 key"). Code, headers and commands keep theirs
    (X-API-Key, Idempotency-Key, keys list, {key})."""
    import re
    english = re.compile(r"(?<![-_A-Za-z{./`])key(?![-_A-Za-z}.:/`])")
    files = [ROOT / "data/i18n/zh.json", ROOT / "README.zh.md", *sorted((ROOT / "docs/zh").glob("*.md"))]
    found = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            # a glossary row's first cell is the English term it translates
            prose = re.sub(r"`[^`]*`|\([^()]*\)|^\|[^|]*\|", "", line)
            if re.search(r"[\u4e00-\u9fff]", prose) and english.search(prose):
                found.append((path.name, line.strip()[:100]))
    assert not found, found[:10]


def test_the_chinese_check_starts_the_chinese_notebooks():
    """``python run.py check --lang zh`` ends with the command to start: the one that opens the Chinese notebooks."""
    from agentlab.i18n import t
    assert "python run.py lab --lang zh" in t("run.check.ready", "zh", seconds=3)
    assert "--lang" not in t("run.check.ready", "en", seconds=3)


def test_the_readmes_name_the_apps_run_button_as_the_app_does():
    """README.zh told the reader to press 同时运行两个循环, a button the app calls 运行两个循环."""
    from agentlab.i18n import t
    for readme, lang in (("README.md", "en"), ("README.zh.md", "zh")):
        assert f"**{t('ui.run', lang)}**" in (ROOT / readme).read_text(encoding="utf-8"), readme


def test_every_metric_and_review_column_the_package_names_is_said_in_chinese(tmp_path):
    """A table shows the metrics the package computes under their names; in Chinese each has its label. A name with an
    underscore passes for a program's own name (a tool, a fault), so a missing one was never reported: a Chinese table
    read 任务成功率 | 无效调用率 | ... | checked_success_rate | unfinished_rate, and the review's comparison before_share,
    after_share, share_change. The names are taken from what the package returns, not listed by hand."""
    from agentlab.evals.metrics import LAYER_DEFINITIONS, Tally, layers
    from agentlab.evals.review import compare_runs, trend
    from agentlab.evals.stored import save_results
    from agentlab.evals.suite import load_cases, metrics_row, run_suite
    results = run_suite(load_cases()[:2])
    stored = save_results(results, tmp_path, label="week")
    names = {*Tally().summary(), *metrics_row(results), *LAYER_DEFINITIONS,
             *(m for ms in layers([r.run for r in results]).values() for m in ms),
             *(k for row in compare_runs(results, results).rows for k in row), *(k for row in trend([stored]) for k in row)}
    assert {"checked_success_rate", "before_share", "code_version", "tokens_per_task"} <= names
    unsaid = sorted(n for n in names if i18n.label(n, "zh") == n and n != "n")
    assert not unsaid, f"metric names with no Chinese label (data/i18n/labels/metrics.json): {unsaid}"


#: nouns a count names in English sentences (their plural forms)
COUNTED_NOUNS = {"answers", "asks", "bytes", "calls", "cases", "categories", "cells", "changes", "characters", "checks",
                 "clients", "conversations", "corrections", "digits", "failures", "faults", "fields", "findings", "items",
                 "levels", "notebooks", "notes", "panels", "participants", "points", "questions", "re-asks", "records",
                 "refunds", "replies", "requests", "resends", "rows", "runs", "seconds", "skills", "steps", "targets",
                 "times", "tokens", "tools", "turns", "values", "weights", "writes"}


def test_an_english_count_says_its_noun_as_the_number_needs():
    """"The guarded loop ended in 1 steps", "refunded 1 times", "1 ticket(s)": a count is said with its noun's form
    (``{n:count:step/steps}``), everywhere the catalogue counts something; the Chinese has one form."""
    assert i18n.t("BUDGET_EXHAUSTED", "en", steps=1) == "The step budget of 1 step is used up."
    assert i18n.t("BUDGET_EXHAUSTED", "en", steps=6) == "The step budget of 6 steps is used up."
    assert "{steps}" in i18n._CATALOG["BUDGET_EXHAUSTED"]["zh"] and "6" in i18n.t("BUDGET_EXHAUSTED", "zh", steps=6)
    assert i18n.t("build.nb00.refunds", "en", n=1) == "order A1001 was refunded 1 time"
    found = []
    for key, entry in i18n._CATALOG.items():
        text = entry["en"]
        if key.startswith("run."):  # run.py fills these in with the standard library alone, before agentlab is installed
            assert ":count:" not in text, key
            continue
        found += [f"{key}: {m.group(0)}" for m in re.finditer(r"\{\w+\} (?:[a-z-]+ )?[a-z-]+\(s\)", text)]
        found += [f"{key}: {m.group(0)}" for m in re.finditer(r"\{(\w+)\} ([a-z][a-z-]*s)\b", text)
                  if m.group(2) in COUNTED_NOUNS and m.group(1) not in ("command", "name", "size", "speed", "ref", "value", "got")]
    assert not found, "say a count with {n:count:one/many}:\n" + "\n".join(found)


def test_the_chinese_pages_code_blocks_comment_in_chinese():
    """README.zh's console block said "# the refund happens, the reply is lost: naive refunds twice": a comment in a
    Chinese page's code is said in Chinese too (a package to install, ``pip install ...``, stays as it is)."""
    pages = [ROOT / "README.zh.md", *sorted((ROOT / "docs" / "zh").glob("*.md"))]
    english = []
    for page in pages:
        for block in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                m = re.search(r"(?:^|\s)#\s(.*)$", line)
                if m and re.search(r"[A-Za-z]{3,} [A-Za-z]{2,} [A-Za-z]{2,}", m.group(1)) \
                        and not re.search("[\u4e00-\u9fff]", m.group(1)) and not m.group(1).startswith("pip install"):
                    english.append(f"{page.name}: {line.strip()[:120]}")
    assert not english, english


# --- the text lives in the catalogue, not in code -----------------------------------------------------------------
# A sentence written in code as {"en": "...", "zh": "..."} is out of a translator's reach and out of the checks above
# (the same fields, counts said right, no mixed languages). Words are what the scan looks for: a table of language
# codes or of punctuation ({"en": ", ", "zh": "、"}) holds none.
_WORDS = re.compile("[A-Za-z\u4e00-\u9fff]")


def _said_in_code(node) -> bool:
    import ast
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(_WORDS.search(node.value))
    if isinstance(node, ast.JoinedStr):
        return any(_said_in_code(v) for v in node.values)
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(_said_in_code(v) for v in node.elts)
    if isinstance(node, ast.Dict):
        return any(_said_in_code(v) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # joined from parts: f"..." + ("..." if x else "")
        return _said_in_code(node.left) or _said_in_code(node.right)
    if isinstance(node, ast.IfExp):
        return _said_in_code(node.body) or _said_in_code(node.orelse)
    return False


_ENGLISH = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}")
_CHINESE = re.compile("[\u4e00-\u9fff]")
_A_WORD = re.compile("[A-Za-z]{3,}")  # a word, not a language code ("en", "zh-CN")


def _literal(node) -> str | None:
    """The text of a string literal or an f-string (its fields left out), else None."""
    import ast
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else " " for v in node.values)
    return None


def _asks_the_language(test) -> bool:
    """Whether a condition compares the language (``lang``, ``LANG``, ``self.lang``) with a language code."""
    import ast
    if not isinstance(test, ast.Compare):
        return False
    names = [n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
             for n in (test.left, *test.comparators)]
    codes = [n.value for n in (test.left, *test.comparators) if isinstance(n, ast.Constant)]
    return any(n is not None and n.lower() == "lang" for n in names) and any(c in i18n.LANGS for c in codes)


def bilingual_literals(source: str) -> list[int]:
    """The lines of ``source`` where a sentence is written out in both languages: a dict literal saying words under
    both language codes, or an English sentence followed by its Chinese one among a call's arguments or a tuple's
    items (``rule("amount", "must not exceed 199", "不得超过 199")``)."""
    import ast
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            by_lang = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                       if isinstance(k, ast.Constant) and k.value in i18n.LANGS}
            if len(by_lang) == len(i18n.LANGS) and any(_said_in_code(v) for v in by_lang.values()):
                found.append(node.lineno)
        if isinstance(node, ast.IfExp) and _asks_the_language(node.test):  # "accuracy" if LANG == "en" else "准确率"
            said = [_literal(branch) or "" for branch in (node.body, node.orelse)]
            if any(_CHINESE.search(x) for x in said) and any(_A_WORD.search(x) for x in said):
                found.append(node.lineno)
        items = node.args if isinstance(node, ast.Call) else node.elts if isinstance(node, (ast.Tuple, ast.List)) else []
        for first, second in itertools.pairwise(items):
            en, zh = _literal(first), _literal(second)
            if en and zh and _ENGLISH.search(en) and not _CHINESE.search(en) and _CHINESE.search(zh):
                found.append(first.lineno)
    return found


def test_the_scan_finds_a_sentence_in_both_languages_and_leaves_codes_alone():
    assert bilingual_literals('HINT = {"en": "Look again.", "zh": "再看看。"}') == [1]
    assert bilingual_literals('x = {"en": f"{n} calls", "zh": f"{n} 次调用"}[lang]') == [1]
    assert bilingual_literals('H = {"en": ("category", "model"), "zh": ("类别", "模型")}') == [1]
    assert bilingual_literals('W = {"en": {"break": "break"}, "zh": {"break": "休息"}}') == [1]
    assert bilingual_literals('return [rule("amount", f"must not exceed {x}", f"不得超过 {x}")]') == [1]
    assert bilingual_literals('KINDS = {"bad_json": ("the arguments are not JSON", "参数不是合法 JSON")}') == [1]
    assert bilingual_literals('x = {"en": f"{a} ran" + ("; again" if b else ""), "zh": f"{a} 运行" + ("；再次" if b else "")}') == [1]
    assert bilingual_literals('title = "accuracy by mode" if LANG == "en" else "各问法的准确率"') == [1]
    assert bilingual_literals('sep = "、" if lang == "zh" else ", "; q = "?lang=zh" if lang == "zh" else ""') == []
    assert bilingual_literals('J = {"zh": {"list": "、"}, "en": {"list": ", "}}') == []
    assert bilingual_literals('CITIES = ("Beijing", "北京"); re.compile("(?:such as|例如)")') == []
    assert bilingual_literals('d = {"en": t(key, "en"), "zh": t(key, "zh")}; s = {"en": en, "zh": zh}') == []


def test_no_sentence_for_a_reader_is_written_in_code():
    # the notebooks too: their code cells (a py:percent script is Python, its text cells comments)
    files = [*(ROOT / "agentlab").rglob("*.py"), *(ROOT / "app").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"),
             ROOT / "run.py", *(ROOT / "notebooks").glob("[0-9][0-9]_*.py"), *(ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.py")]
    offenders = [f"{p.relative_to(ROOT).as_posix()}:{line}" for p in sorted(files)
                 for line in bilingual_literals(p.read_text(encoding="utf-8"))]
    assert not offenders, "move these into data/i18n/{en,zh}.json and say them with t() or both():\n" + "\n".join(offenders)


def test_names_listed_in_an_error_are_listed_as_the_readers_language_lists(tmp_path):
    """An error raised before its reader's language is known listed its names with ", " in Chinese too ("应为以下之一：
    aftersales, expense"); a :class:`~agentlab.i18n.Listed` field is said with 、 in Chinese, inside a sentence or an
    error, and stays ", " in English text."""
    import json as _json

    from agentlab.evals.suite import SuiteError, load_cases
    from agentlab.i18n import Listed, Sentence, said
    from agentlab.schema import SchemaError, compile_schema
    assert str(Listed(["a", "b"])) == "a, b" and said(Listed(["a", "b"]), "zh") == "a、b"
    assert "、" in Sentence("schema.why.types", types=Listed(["string", "number"])).localized("zh")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(_json.dumps({"id": "c1", "scenario": "nope", "task": "hi", "model": {"script": ["ok"]},
                                  "expect": {"answer_contains": ["ok"]}}) + "\n", encoding="utf-8")
    with pytest.raises(SuiteError) as caught:
        load_cases(cases)
    assert "aftersales、" in caught.value.localized("zh") and "aftersales, " in str(caught.value)
    with pytest.raises(SchemaError) as broken:
        compile_schema({"type": "strnig"})
    assert "、" in broken.value.localized("zh") and ", " not in broken.value.localized("zh"), broken.value.localized("zh")


def test_a_sentence_or_a_list_survives_a_copy_and_a_pickle():
    """A str subclass is rebuilt from its text by copy and pickle: a copied Listed listed its letters ("a, f, t, e...")
    and a copied Sentence raised KeyError; each now travels as its names or its key and fields."""
    import copy
    import errno
    import pickle

    from agentlab.i18n import Listed, Sentence, os_reason, said
    listed = Listed(["aftersales", "expense"])
    sentence = Sentence("schema.why.types", types=listed)
    reason = os_reason(FileNotFoundError(errno.ENOENT, "No such file or directory"))
    for value in (listed, sentence, reason):
        for again in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
            assert str(again) == str(value) and said(again, "zh") == said(value, "zh"), (value, again)


def test_an_aside_takes_the_brackets_of_its_language():
    from agentlab.i18n import aside
    assert "refunded" + aside("3 turns", "en") == "refunded (3 turns)"
    assert "已退款" + aside("3 轮次", "zh") == "已退款（3 轮次）"
    assert aside("{n}", "en") == " ({n})"  # a value is never read as a template


def test_a_value_quoted_in_a_chinese_sentence_takes_chinese_quotation_marks():
    """Every Chinese entry: a value it quotes (``{x!r}``) reads “x”, escaped as repr escapes it, with no space beside
    Chinese words; no entry quotes a word in ASCII quotes of its own ('ticket'). Python's repr read
    没有名为 'lookup' 的工具 (49 entries: the model's errors, the CLI's, the schema's, the lint's)."""
    import re
    import string

    from agentlab.i18n import _catalog, t
    quoted = 0
    for key, entry in _catalog().items():
        text = entry.get("zh", "")
        prose = re.sub(r"\{[^{}]*\}|pip install '[^']*'", "", text)  # a shell command quotes as the shell does
        assert not re.search(r"'[^'\s]{1,40}'", prose), (key, text)
        names = {f for _, f, _, c in string.Formatter().parse(text) if f}
        if "!r}" not in text:
            continue
        quoted += 1
        said = t(key, "zh", **dict.fromkeys(names, "x\ny"))
        assert "“x\\ny”" in said, (key, said)
        assert "'x" not in said and not re.search(r"[\u4e00-\u9fff] “|” [\u4e00-\u9fff]", said), (key, said)
    assert quoted >= 40


def test_a_runs_status_is_said_in_the_readers_words_in_every_sentence_that_names_it():
    """Every status a run can end in has its Chinese words, and a sentence given one as ``status`` says them (the
    checklist read 结束状态 done, notebook 06's check 被截停了（budget_exhausted）); any other status (an order's, an
    exit code) is left as given."""
    from agentlab.i18n import _status_words, t
    from agentlab.runs import STATUSES
    assert set(_status_words()["zh"]) == set(STATUSES)
    for status in STATUSES:
        said = t("trace.end", "zh", status=status, text="x")
        assert status not in said and _status_words()["zh"][status] in said, said
    assert "budget_exhausted" in t("trace.end", "en", status="budget_exhausted", text="x")
    assert "shipped" in t("trace.end", "zh", status="shipped", text="x")


def test_text_is_padded_to_the_columns_a_terminal_draws():
    from agentlab.i18n import columns, pad
    assert columns("预算用尽") == 8 and columns("done") == 4
    assert pad("完成", 6) == "完成  " and pad("3", 3, ">") == "  3" and pad("too long", 3) == "too long"


def test_a_quoted_value_loses_only_the_templates_space_never_the_values_own():
    from agentlab.i18n import _BESIDE_QUOTE, _MARK, _QUOTED
    template = "字段 {a!r} 和 {b} 不同，实际是 {c!r}"
    said = _BESIDE_QUOTE.sub("", _QUOTED.vformat(template, (), {"a": "x", "b": "值 “y”", "c": -1})).replace(_MARK, "")
    # a number keeps the space a Chinese sentence gives it (实际是-1 ran together)
    assert said == "字段“x”和 值 “y” 不同，实际是 -1", said


# --- what Python said a learner's code did wrong (py_reason) ----------------------------------------------------------
def _raised(code: str) -> BaseException:
    import json as json_module
    space: dict = {"json": json_module}
    exec("def f(a, b):\n    return a\ndef g(*, k):\n    return k\ndef rec():\n    return rec()\n"
         "def unbound():\n    x += 1\ndef h(a):\n    return a\n", space)
    try:
        exec(code, space)
    except BaseException as exc:  # noqa: BLE001 - the very exception is the test's input
        return exc
    raise AssertionError(f"{code} raised nothing")


# each the Python (3.11-3.13) of today raises, and the sentence it is said with: a message Python rewords fails here
RAISED = {
    "f(1, c=2)": "py.unexpected_keyword", "f()": "py.missing_arguments", "g()": "py.missing_arguments",
    "f(1, 2, 3)": "py.too_many_positional", "h(1, 2)": "py.too_many_positional_one", "x = None; x[0]": "py.none_indexed", "x = 5; x[0]": "py.not_indexable",
    "x = 5; x()": "py.not_callable", "x = 1; x + 'a'": "py.operand", "x = 1; x > 'a'": "py.compare",
    "x = 'a'; x + 1": "py.concatenate", "iter(5)": "py.not_iterable",
    "len(None)": "py.no_len", "{}['order_id']": "py.no_key", "nowhere": "py.not_defined", "false": "py.json_literal", "unbound()": "py.unbound",
    "x = 5; x.amount": "py.no_attribute", "json.dumpz": "py.module_attribute", "[][1]": "py.index_range",
    "int('1.5')": "py.not_whole", "float('abc')": "py.not_number", "x = 0; 1 % x": "py.zero_division",
    "rec()": "py.recursion", "json.loads('{\\'a\\': 1}')": "py.not_json_at",
}


@pytest.mark.parametrize("code", RAISED)
def test_a_common_python_error_is_said_plainly_in_either_language(code):
    from agentlab.i18n import py_reason, said
    reason = py_reason(_raised(code))
    assert getattr(reason, "key", None) == RAISED[code]
    zh = said(reason, "zh")
    assert re.search(r"[\u4e00-\u9fff]", zh) and not re.search(r"\b(?:got|missing|object|argument|is not)\b", zh), zh
    assert said(reason, "en") == str(reason) and "Traceback" not in zh


def test_every_python_sentence_is_reached_and_an_unknown_message_is_kept_as_python_said_it():
    from agentlab.i18n import py_reason, said
    reached = set(RAISED.values()) | {"py.raised", "py.raised_at"}  # those two frame a reason (capstone, widgets)
    assert {k for k in i18n.keys() if k.startswith("py.")} == reached
    odd = RuntimeError("the backend said no")
    assert py_reason(odd) == "the backend said no" and not hasattr(py_reason(odd), "localized")
    assert said(py_reason(_raised("f()")), "zh") == "调用 f() 时少了它必需的参数“a”、“b”"


def test_a_python_error_said_stays_a_line_and_never_raises():
    """A learner's 5,000-character name filled the desk loader's line; an exception whose own str() raises, or a key
    Python cannot print, escaped as a traceback; a KeyError of the package's own (a subclass) read "no key ... in the
    dict"; Python's own quoting was quoted again ('a\\\\nb')."""
    from agentlab.i18n import LocalizedError, py_reason, said

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no text")

    class Mine(KeyError):
        def __str__(self):
            return "approval 'a1' is for 'create_refund'"

    long_name = _raised("x = 5; x." + "y" * 5000)
    for lang in ("en", "zh"):
        assert len(said(py_reason(long_name), lang)) < 120
    assert py_reason(Unprintable()) == "Unprintable"
    assert said(py_reason(KeyError(3)), "zh") == "没有键 3"
    assert said(py_reason(Mine("a1")), "en") == "approval 'a1' is for 'create_refund'"
    assert said(py_reason(ValueError("invalid literal for int() with base 10: 'a\\nb'")), "en") == "'a\\nb' is not a whole number"
    assert said(py_reason(LocalizedError("py.zero_division")), "zh") == "除数为零"  # an error that says itself


def test_an_unsupported_language_is_said_in_the_readers_language_and_is_still_a_value_error():
    """A learner's router handed on lang="en-CN": a Chinese check read "lang must be one of ('en', 'zh')"."""
    from agentlab.i18n import check_lang, said
    with pytest.raises(ValueError) as caught:
        check_lang("en-CN")
    assert "en-CN" in said(caught.value, "zh") and "语言只能是" in said(caught.value, "zh")
    assert str(caught.value) == "lang must be one of en, zh, got 'en-CN'"


@pytest.mark.parametrize("header, default, lang", [
    ("zh-CN,zh;q=0.9,en;q=0.5", "en", "zh"), ("en-GB,en;q=0.8", "zh", "en"),
    ("fr-FR,zh-CN;q=0.8,en;q=0.5", "en", "zh"),  # a first tag that is neither: the next preferred of the two
    ("en;q=0.2, zh", "en", "zh"),  # by q-value, not by place
    ("zhx,en-US", "zh", "en"),  # a tag only starting with the letters is not Chinese
    ("ZH-tw", "en", "zh"), ("fr, de", "zh", "zh"), ("", "zh", "zh"), ("", "en", "en"),  # neither: the default
    ("zh;q=abc, en;q=0.5", "zh", "en"),  # a weight that is not a number counts for nothing
])
def test_a_requests_language_is_the_most_preferred_of_the_two(header, default, lang):
    """One reading of Accept-Language for every page, the site, the gateway and the hub (each read the first tag on
    its own: "fr-FR,zh-CN;q=0.8" was English there and Chinese in the app)."""
    from agentlab.i18n import accepted_lang
    assert accepted_lang(header, default) == lang


#: a term the Chinese side says one way, and the words it had been said with besides (a reader met three for a desk:
#: 柜台 in the help, 业务台 in the README, the desk's own name in the app)
ONE_CHINESE_WORD = {"业务台": ("柜台",)}


def test_each_term_has_one_chinese_word_everywhere_a_reader_meets_it():
    from conftest import ROOT
    places = [*ROOT.glob("data/i18n/*.json"), *ROOT.glob("notebooks/zh/*.py"), *ROOT.glob("notebooks/zh/*.ipynb"),
              *ROOT.glob("docs/zh/**/*.md"), ROOT / "README.zh.md", *ROOT.glob("data/trainer/*.zh.md"),
              *ROOT.glob("data/**/*.zh.json")]
    found = [f"{p.relative_to(ROOT)}: {other} (say {word})" for p in places for word, others in ONE_CHINESE_WORD.items()
             for other in others if other in p.read_text(encoding="utf-8")]
    assert not found, found

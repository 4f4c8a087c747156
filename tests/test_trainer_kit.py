"""The trainer's kit: a script per notebook in both languages, slides made from the notebooks, a cheat-sheet and a
glossary (docs/trainer.md#the-trainers-kit).

Every wrong answer a script lists is fed to that notebook's check, with the data the notebook computes, and must not
be judged right: a script never calls a right answer wrong."""
import json
import re
import tempfile
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT

from agentlab.hub import notes

NOTEBOOKS = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
SECTIONS = {"en": ("## Trainer script", "### What to show", "### What to ask the room",
                   "### Wrong answers: the misconception, what to say"),
            "zh": ("## 讲稿", "### 展示什么", "### 问全场", "### 常见错答：误解与回应")}
KEPT = {"en": ("**Timing:**", "**Expected answer:**", "**Questions learners ask:**"),
        "zh": ("**时间：**", "**参考答案：**", "**学员常问：**")}


def wrong_answers(text: str, lang: str) -> list[str]:
    """The answers listed under the script's wrong-answers heading: each bullet opens with one in backticks."""
    section = text.split(SECTIONS[lang][3], 1)[1]
    return re.findall(r"^- `([^`]+)`", section, re.M)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_notebook_has_a_script_with_its_sections(nb, lang):
    text = notes.trainer_notes(nb, lang)
    assert text and text == (ROOT / "data" / "trainer" / f"{nb}.{lang}.md").read_text(encoding="utf-8")
    for marker in KEPT[lang]:  # the notes the trainer's view already shows stay as they were
        assert marker in text, (nb, lang, marker)
    at = [text.index(h) for h in SECTIONS[lang]]
    assert at == sorted(at) and at[0] > text.index(KEPT[lang][-1]), (nb, lang)
    asked = text.split(SECTIONS[lang][2], 1)[1].split(SECTIONS[lang][3], 1)[0]
    assert 2 <= asked.count("\n- ") <= 3, (nb, lang)
    assert wrong_answers(text, lang), (nb, lang)


def test_both_languages_list_the_same_wrong_answers():
    for nb in NOTEBOOKS:
        assert wrong_answers(notes.trainer_notes(nb, "en"), "en") == wrong_answers(notes.trainer_notes(nb, "zh"), "zh"), nb


@cache
def _data() -> dict:
    """What the notebooks compute before their exercise cell, the same way they compute it."""
    import pandas as pd

    from agentlab import Registry
    from agentlab.adapters.compare import FAULTS, compare
    from agentlab.evals import ablation, load_cases, metrics_row, paired_cases, replay_cassette, run_case, run_suite
    from agentlab.evals.bfcl_results import graded
    from agentlab.evals.metrics import by_taxonomy
    from agentlab.models.cassette import CassetteModel, labels
    from agentlab.models.faults import FAULTS as LOOP_FAULTS
    from agentlab.resources import data_file
    from agentlab.workbook.demo import compare_loops
    from agentlab.workbook.widgets import BadCaseReview
    cases = load_cases(data_file("aftersales_cases.jsonl"))
    by_id = {c.id: c for c in cases}
    rows = []
    for tape in sorted(data_file("cassettes").glob("aftersales-*.jsonl")):
        ids = paired_cases(tape, by_id)
        for loop in ("naive", "guarded"):
            rows.append({"model": f"qwen-{tape.stem}", "loop": loop,
                         "success": metrics_row(replay_cassette(tape, by_id, loop, ids))["task_success_rate"]})
    sessions = [run_case(by_id[r.rsplit("/", 1)[0]], loop=r.rsplit("/", 1)[1], model=CassetteModel(tape, r, then="(end)"))
                for tape in sorted(data_file("cassettes").glob("aftersales-*.jsonl")) for r in labels(tape)
                if r.rsplit("/", 1)[0] in by_id] + run_suite(cases, loop="naive")
    review = BadCaseReview(sessions, cases, Path(tempfile.mkdtemp()) / "regression.jsonl", n=12, seed=17, lang="en")
    return {"reg": Registry.from_json(data_file("aftersales_tools.json")),
            "tax": by_taxonomy([compare_loops(f).guarded for f in LOOP_FAULTS]),
            "models": pd.DataFrame(rows), "abl": ablation(cases), "counts": review.counts(),
            "expense": {loop: run_suite(load_cases(data_file("expense_cases.jsonl")), loop=loop) for loop in ("naive", "guarded")},
            "fig": graded().sizes, "rows": compare(fill=True), "faults": FAULTS}


def check(nb: str, answer: str):
    """Notebook ``nb``'s exercise check on ``answer``, as its exercise cell calls it."""
    from agentlab import GuardConfig
    from agentlab.retry import RetryPolicy
    from agentlab.workbook import builds_systems as bs
    from agentlab.workbook import exercises as ex
    d = _data() if nb in ("02", "08", "09", "10", "11", "14", "18", "19") else {}
    if nb == "01":
        return ex.schema_contract(json.loads(answer), "Refund a paid order that has not shipped. Call get_order first.")
    if nb == "03":
        from agentlab.workbook.demo import compare_loops
        return ex.answer_is(answer, compare_loops("camel_case", config=GuardConfig(readable_errors=False)).guarded.status, "")
    if nb == "05":
        from agentlab.loop import idempotency_key
        from agentlab.scenarios import aftersales
        reg = aftersales.SCENARIO.setup()[1]
        return ex.answer_is(answer, idempotency_key(reg["create_refund"], {"order_id": "A1004", "amount": 5,
                                                                            "reason": "user_cancel"}), "")
    calls = {"00": lambda: ex.double_refund_fault(answer), "02": lambda: ex.amount_with_unit_reason(answer, d["reg"]),
             "04": lambda: ex.longest_wait(answer, RetryPolicy(base=0.5, cap=8, jitter="none"), attempt=2),
             "06": lambda: ex.breaker_threshold(answer), "07": lambda: ex.tool_replies_needed(answer, calls=3),
             "08": lambda: ex.largest_share(answer, d["tax"]["stage"]),
             "09": lambda: ex.guard_effect(answer, d["models"]), "10": lambda: ex.best_single_guard(answer, d["abl"]),
             "11": lambda: ex.largest_share(answer, d["counts"]), "12": lambda: bs.first_role_after_cut(answer),
             "13": lambda: bs.tools_offered(answer), "14": lambda: bs.naive_correct(answer, d["expense"]),
             "15": lambda: bs.replay_header(answer), "16": lambda: bs.meta_field(answer),
             "17": lambda: bs.duplicate_call_verdict(answer), "18": lambda: ex.most_repaired_kind(answer, d["fig"]["0.5b"]),
             "19": lambda: bs.handled_without_adapter(answer, d["rows"], d["faults"])}
    return calls[nb]()


def test_the_check_harness_says_right_to_the_expected_answers():
    """The harness is the notebooks' own checks: the solutions tests/ keeps are right in it, so a "not right" below
    is the check's verdict on a wrong answer, not a harness that judges everything wrong."""
    from exercise_solutions import SOLUTIONS
    for name, solution in SOLUTIONS.items():
        nb = name[:2]
        if nb in ("01", "11"):
            continue  # a schema and a description; the sample's tags as a person leaves them
        answer = re.search(r"= (.+)$", solution, re.M).group(1)
        assert check(nb, json.loads(answer)).ok, nb
    assert check("11", max(_data()["counts"], key=_data()["counts"].get)).ok


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_wrong_answer_in_a_script_is_one_the_check_rejects(nb):
    answers = wrong_answers(notes.trainer_notes(nb, "en"), "en")
    for answer in answers:
        given = answer if nb == "01" or not re.fullmatch(r"-?\d+(\.\d+)?", answer) else float(answer)
        verdict = check(nb, given)
        assert verdict.state == "wrong", (nb, answer, verdict.message)


GLOSSARY = re.compile(r"^\| (?:<a id=\"[\w-]+\"></a>)?`?([^|`]+?)`? \| ([^|]+?) \| ([^|]+) \| (\d\d(?:, \d\d)*) \|$", re.M)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_glossary_term_is_in_a_notebook_of_its_language(lang):
    page = ROOT / "docs" / ("zh/glossary.md" if lang == "zh" else "glossary.md")
    rows = GLOSSARY.findall(page.read_text(encoding="utf-8"))
    assert len(rows) >= 25, len(rows)
    folder = ROOT / "notebooks" / ("zh" if lang == "zh" else "")
    text = {p.name[:2]: p.read_text(encoding="utf-8").lower() for p in folder.glob("[0-9][0-9]_*.py")}
    for english, chinese, _definition, where in rows:
        term = (chinese if lang == "zh" else english).strip().lower()
        assert any(term in text[nb] for nb in where.split(", ")), (lang, term, where)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cheat_sheet_exists_and_fits_one_page(lang):
    page = ROOT / "docs" / ("zh/cheatsheet.md" if lang == "zh" else "cheatsheet.md")
    text = page.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 90
    for word in ("OUTCOME_UNKNOWN", "LOOP_DETECTED", "pass^k", "python -m agentlab slides", "repeat_limit"):
        assert word in text, word


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_slides_command_writes_a_notebooks_headings(tmp_path, lang):
    from agentlab import cli
    from agentlab.workbook.slides import VENDOR, notebooks
    assert cli.main(["slides", "05", "--lang", lang, "--out", str(tmp_path)]) == 0
    source = notebooks(lang, ["05"])[0]
    html = (tmp_path / f"{source.stem}.slides.html").read_text(encoding="utf-8")
    headings = re.findall(r"^# #{1,2} (.+)$", source.with_suffix(".py").read_text(encoding="utf-8"), re.M)
    assert len(headings) >= 5
    import html as html_lib
    for heading in headings:
        plain = re.sub(r"`([^`]*)`", r"<code>\1</code>", html_lib.escape(heading, quote=False))
        assert plain in html, heading
    assert html.count("<section") >= len(headings)
    assert f'lang="{lang}"' in html
    if (VENDOR / "reveal.js" / "dist" / "reveal.js").is_file():  # npm ci in etc/slides: nothing from the network
        assert not re.findall(r'(?:src|href)="https?://', html)
        assert (tmp_path / "reveal-assets" / "reveal.js" / "dist" / "reveal.js").is_file()


def test_the_slides_command_with_execute_shows_what_the_notebook_prints(tmp_path):
    """``--execute`` runs a copy of the notebook first (agentlab.workbook.kernels' kernel): the slides carry its
    outputs, the committed notebook none."""
    import html as html_lib

    from agentlab import cli
    from agentlab.workbook.slides import notebooks
    source = notebooks("en", ["00"])[0]
    before = source.read_bytes()
    assert cli.main(["slides", "00", "--lang", "en", "--execute", "--out", str(tmp_path / "run")]) == 0
    assert cli.main(["slides", "00", "--lang", "en", "--out", str(tmp_path / "plain")]) == 0
    ran, plain = (html_lib.unescape((tmp_path / d / f"{source.stem}.slides.html").read_text(encoding="utf-8"))
                  for d in ("run", "plain"))
    line = re.compile(r"correct final state: naive \d+/\d+, guarded \d+/\d+")
    assert line.search(ran) and not line.search(plain)
    assert source.read_bytes() == before


def test_slides_of_a_notebook_that_stops_name_it_its_cell_and_its_error_in_both_languages(tmp_path):
    """A notebook that raises under ``--execute``: said as the check says it (the notebook, the first line of the cell
    that stopped, the error's last line), no slide file written for it. It read "unexpected CellExecutionError: An
    error occurred while executing the following cell" with the cell's code and no error, English under --lang zh."""
    import nbformat

    from agentlab.i18n import LocalizedError
    from agentlab.workbook.slides import slides_html
    folder = tmp_path / "zh"
    folder.mkdir()
    path = folder / "07_broken.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 标题"), nbformat.v4.new_code_cell(
        "# set-up\nfrom agentlab_missing import compare_html")]), path)
    with pytest.raises(LocalizedError) as caught:
        slides_html(path, offline=True, execute=True, timeout=120)
    en, zh = caught.value.localized("en"), caught.value.localized("zh")
    assert en.startswith("zh/07_broken.ipynb stopped at the cell that begins “from agentlab_missing import compare_html”")
    assert "ModuleNotFoundError: No module named 'agentlab_missing'" in en and "no slides were written" in en
    assert "停在了以“from agentlab_missing import compare_html”开头的单元格" in zh and "没有为它生成幻灯片" in zh
    assert "CellExecutionError" not in en + zh and "------" not in en + zh


def test_the_slides_command_refuses_an_unknown_notebook(tmp_path, capsys):
    from agentlab import cli
    assert cli.main(["slides", "42", "--lang", "zh", "--out", str(tmp_path)]) == 2
    assert "没有这个笔记本" in capsys.readouterr().err

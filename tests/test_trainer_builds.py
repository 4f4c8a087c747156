"""The trainer's notes for each build exercise (``data/trainer/NNb.<lang>.md``, docs/trainer.md#trainer-notes): what
the learner writes, a working answer, and the wrong builds a room writes, each with what the check says and what to
say. Every code block in them is run through the notebook's own build check, as the notebook's build cell calls it:
the working answer must be judged right and every wrong build wrong, in both languages, so a note never tells a
trainer that a learner's right code is wrong (or the reverse)."""
import ast
import json
import re
import textwrap

import jupytext
import pytest
from conftest import ROOT

from agentlab.hub import notes

BUILDS = sorted(notes.build_ids())
HEADINGS = {"en": ("## Build exercise", "**What they write:**", "**A working answer:**",
                   "### Wrong builds: what the check says, what to say"),
            "zh": ("## 动手改", "**要写什么**：", "**一个可行的答案**：", "### 常见的错误写法：检查怎么说，怎么回应")}
CODE = re.compile(r"^( *)```python\n(.*?)^\1```", re.M | re.S)


def code_blocks(text: str) -> list[str]:
    """The Python blocks of a note, in order, each dedented (a wrong build's block sits inside its bullet)."""
    return [textwrap.dedent("\n".join(line[len(indent):] for line in body.splitlines()))
            for indent, body in CODE.findall(text)]


def parts(build: str, lang: str) -> tuple[str, list[str]]:
    """The working answer's code and the wrong builds' code of a build note."""
    text = notes.trainer_notes(build, lang)
    assert text, (build, lang)
    at = [text.index(h) for h in HEADINGS[lang]]
    assert at == sorted(at), (build, lang)
    answer = code_blocks(text[at[2]:at[3]])
    assert len(answer) == 1, (build, lang)
    return answer[0], code_blocks(text[at[3]:])


def build_cell(nb: str) -> str:
    notebook = jupytext.read(next((ROOT / "notebooks").glob(f"{nb}_*.py")))
    for i, c in enumerate(notebook.cells):
        if c.cell_type == "markdown" and "## Build" in c.source:
            return next(x.source for x in notebook.cells[i + 1:] if x.cell_type == "code")
    raise AssertionError(f"notebook {nb} has no build cell")


def run_build(nb: str, code: str, lang: str):
    """``code`` (a learner's definition) through notebook ``nb``'s build check, as its build cell calls it: the cell's
    imports and its ``draft`` first, then the definition, then ``check(name, lang=...)`` from the cell's last line."""
    tree = ast.parse(build_cell(nb))
    call = tree.body[-1].value  # print(check(my_name, lang=LANG))
    inner = call.args[0] if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "print" else call
    check, learner = inner.func.id, inner.args[0].id
    kept = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
            or (isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == ["draft"])]
    space: dict = {"json": json, "LANG": lang}
    exec(compile(ast.Module(kept, []), f"<notebook {nb}>", "exec"), space)
    exec(compile(code, f"<note {nb}b>", "exec"), space)
    return space[check](space[learner], lang=lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("build", BUILDS)
def test_every_build_has_notes_whose_answer_is_right_and_whose_wrong_builds_are_wrong(build, lang):
    answer, wrong = parts(build, lang)
    assert 2 <= len(wrong) <= 3, (build, lang, len(wrong))
    right = run_build(build[:2], answer, lang)
    assert right.ok and right.state == "right", (build, lang, right.message)
    for code in wrong:
        said = run_build(build[:2], code, lang)
        assert said.state == "wrong", (build, lang, code, said.message)
        assert "Traceback" not in said.message


def test_both_languages_give_the_same_code():
    for build in BUILDS:
        assert code_blocks(notes.trainer_notes(build, "en")) == code_blocks(notes.trainer_notes(build, "zh")), build


@pytest.mark.parametrize("build", BUILDS)
def test_a_build_note_is_short_and_in_its_language(build):
    en, zh = notes.trainer_notes(build, "en"), notes.trainer_notes(build, "zh")
    for text in (en, zh):
        assert len(text) < 4000, f"{build}: keep the notes short"
    prose = CODE.sub("", zh)
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in prose) > 100, build
    assert not re.search(r"[\u4e00-\u9fff][,:;]|[,:;][\u4e00-\u9fff]", prose), build  # full-width punctuation


def test_a_wrong_build_is_told_wrong_by_the_harness():
    """The harness runs what it is given: a definition that does nothing is "not yet", so a "wrong" above is the
    check's verdict on that code, not a harness that judges everything wrong."""
    assert run_build("05", "def my_business_key(args):\n    ...\n", "en").state == "not yet"
    assert run_build("05", "def my_business_key(args):\n    return str(args['amount'])\n", "en").state == "wrong"


def test_every_note_is_formatted_on_the_page_with_no_markdown_mark_left():
    """A closing ** after a full-width colon and before a Chinese character is no closing mark to Markdown: 19 of the
    20 Chinese build notes showed "**一个可行的答案：**..." on the trainer's page, asterisks and all."""
    import re
    for nb in [*notes.exercise_ids(), *BUILDS]:
        for lang in ("en", "zh"):
            shown = str(notes.notes_html(notes.trainer_notes(nb, lang)))
            prose = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", shown, flags=re.S)
            assert "**" not in prose and "__" not in prose, (nb, lang, prose[prose.find("**") - 40:][:120])

"""A learner's own Python error gets a plain line under Python's traceback, in the notebook's language
(agentlab/workbook/plain_errors.py): in a real kernel, as a notebook's cells raise them."""
from __future__ import annotations

import re

import nbformat
import pytest

from agentlab.workbook import kernels
from agentlab.workbook.plain_errors import FULL_WIDTH, plain_line


def _raised(code: str) -> BaseException:
    try:
        exec(compile(code, "<cell>", "exec"), {})
    except BaseException as exc:  # noqa: BLE001 - the error a cell raises is the point
        return exc
    raise AssertionError("no error")


@pytest.mark.parametrize("mark", sorted(FULL_WIDTH))
def test_each_full_width_mark_in_code_is_named_with_the_half_width_one(mark):
    exc = _raised(f"x = f(1{mark}2)")
    if not isinstance(exc, SyntaxError) or "invalid" not in str(exc.msg):
        pytest.skip(f"{mark!r} is not refused as an invalid character by this Python")
    for lang in ("en", "zh"):
        line = plain_line(exc, lang)
        if mark == "\u3000":  # invisible: said by its name
            assert line and ("全角空格" if lang == "zh" else "full-width space") in line, line
        elif mark == "。":  # deleted, not replaced: a . where it stood is still not Python
            assert line and ("删掉" if lang == "zh" else "delete it") in line, line
        else:
            assert line and mark in line and FULL_WIDTH[mark] in line and "1" in line, line


@pytest.mark.parametrize("code, lang, said, not_said", [
    ("my_answer = ２", "zh", "２ → 2", ()),  # a full-width digit: only Python's English line before
    ("answer = 「lost_reply」", "zh", '「 → "、」 → "', ()),  # corner quotes: the same
    ('answer　= "lost_reply"', "zh", "全角空格 → 半角空格", ("（　）",)),  # was "全角符号（　）", the mark invisible
    ('answer = "lost_reply"。', "zh", "。 → 删掉", ("换成英文半角的 .（",)),  # "type . instead" left a syntax error
    ("print（f（a，lang=1））", "zh", "（ → (、， → ,、） → )", ()),  # every mark at once, not one per run
    ("print（f（a，lang=1））", "en", "（ → (, ， → ,, ） → )", ()),
])
def test_every_full_width_mark_of_the_line_is_said_at_once_and_each_as_it_is_mended(code, lang, said, not_said):
    exc = _raised(code)
    assert isinstance(exc, SyntaxError)
    line = plain_line(exc, lang)
    assert line and said in line and not any(x in line for x in not_said), line


@pytest.mark.parametrize("code, said", [
    ("answer = lost_reply", '还是一段文字忘了加引号（"lost_reply"）'),  # an answer that is a text, typed bare
    ('schema = {"additionalProperties": false}', "Python 写作 True、False 和 None"),  # JSON's word in Python
    ("x = null", "JSON 的写法"),
])
def test_a_name_python_does_not_know_is_said_with_what_it_probably_is(code, said):
    line = plain_line(_raised(code), "zh")
    assert line and said in line, line


def test_python_english_is_said_in_chinese_only_where_the_catalogue_knows_it():
    from agentlab.guards import GuardConfig
    exc: BaseException | None = None
    try:
        GuardConfig(stepbudget=10)  # type: ignore[call-arg]
    except TypeError as err:
        exc = err
    assert "stepbudget" in plain_line(exc, "zh") and "用大白话说" in plain_line(exc, "zh")
    assert plain_line(exc, "en") is None  # Python's own line is English already
    assert plain_line(RuntimeError("the backend said no"), "zh") is None  # a message nobody wrote a sentence for
    assert "( 没有闭合" in plain_line(_raised("x = (1"), "zh")  # a syntax error that is no full-width mark: its own


def test_in_a_kernel_each_error_of_a_cell_gets_its_line_in_the_notebooks_language():
    """Before, a Chinese typist's “lost_reply” read only SyntaxError: invalid character '“' (U+201C). The line is
    added after Python's own traceback, which stays whole: a custom exception handler cut a runtime error's frames
    and unregistered itself for good when an exception's __str__ raised."""
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    cells = ['LANG = "zh"', "import agentlab.workbook", 'answer = “lost_reply”',
             "from agentlab.guards import GuardConfig\nGuardConfig(stepbudget=10)", 'LANG = "en"', "y = [1，2]",
             "print('fine')", 'LANG = "zh"',
             'class E(Exception):\n    def __str__(self):\n        raise RuntimeError("x")\nraise E()',
             '"a" < 1', 'def f():\n    return eval("1，2")\nf()', 'GuardConfig().without("idempotence")']
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", kernel_manager_class=kernels.KernelManager, allow_errors=True).execute()

    def said(i: int) -> str:
        return "".join(o.get("text", "") for o in nb.cells[i].outputs if o.get("name") == "stderr")

    def frames(i: int) -> str:
        return "".join("".join(o["traceback"]) for o in nb.cells[i].outputs if o.get("output_type") == "error")
    assert any(o.get("ename") == "SyntaxError" for o in nb.cells[2].outputs)  # Python's own error is still shown
    assert said(2).count("全角符号") == 1 and '“ → "' in said(2), said(2)
    assert "没有叫“stepbudget”的参数" in said(3), said(3)
    assert "full-width marks where code wants half-width ones: ， → ," in said(5) and "全角" not in said(5), said(5)
    assert said(6) == "" and nb.cells[6].outputs[0]["text"] == "fine\n"
    assert "plain_errors" not in frames(8) and said(8) == ""  # an odd exception: IPython's own display, nothing added
    assert "不能比较" in said(9), said(9)  # still in place after it
    assert "f()" in frames(10) and said(10) == ""  # an eval's text: its frames kept, and no line about the cell
    assert "不是一个防护" in said(11) and "。（" not in said(11), said(11)  # agentlab's own error, said in Chinese


def test_a_chinese_notebooks_error_before_its_first_cell_is_said_in_chinese(tmp_path):
    """After a kernel restart a learner ran only a Chinese notebook's check cell: NameError: name 'LANG' is not
    defined, with no line under it in Chinese, the fallback being English where LANG was not set yet."""
    nbclient = pytest.importorskip("nbclient")
    folder = tmp_path / "notebooks" / "zh"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in ("import agentlab.workbook", "print(LANG)")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", kernel_manager_class=kernels.KernelManager,
                            allow_errors=True, resources={"metadata": {"path": str(folder)}}).execute()
    said = "".join(o.get("text", "") for o in nb.cells[1].outputs if o.get("name") == "stderr")
    assert any(o.get("ename") == "NameError" for o in nb.cells[1].outputs)
    assert re.search(r"[\u4e00-\u9fff]", said) and "LANG" in said, said


def test_a_full_width_mark_python_does_not_name_is_found_in_the_line_outside_its_quotes():
    """Python 3.11.2 (Debian 12's, the participants') says "invalid decimal literal" of "1，2", where 3.11.7 says
    "invalid character '，'": the mark was said on one and not the other."""
    said = plain_line(SyntaxError("invalid decimal literal", ("<cell>", 1, 8, "x = f(1，2)\n")), "zh")
    assert said and "，" in said and "," in said, said
    quoted = plain_line(SyntaxError("'(' was never closed", ("<cell>", 1, 6, 'print("a，b"\n')), "zh")
    assert "( 没有闭合" in quoted and "全角" not in quoted, quoted  # the mark inside quotes is text, not the slip
    assert plain_line(SyntaxError("invalid syntax", ("<cell>", 1, 1, None)), "en") is None


@pytest.mark.parametrize("code, said", [
    ("if True\n    pass", "少了冒号"), ("def f():\nreturn 1", "应该缩进"), ("x = 1\n    y = 2", "缩进多了"),
    ("if True:\n        x = 1\n    y = 2", "对不上"), ("x = (1,\n", "( 没有闭合"), ("x = [1, 2", "[ 没有闭合"),
    ("x = 1)", ") 前面没有"), ('s = "abc', "没有结束的引号"), ("f(a b)", "少了逗号"), ("x = = 1", "不是合法的 Python")])
def test_a_syntax_slip_of_a_first_python_is_said_in_chinese(code, said):
    """A missing colon or indent showed only Python's "SyntaxError: expected ':'" to a Chinese learner, where a
    full-width mark got a Chinese line. In English Python's own line says it, and nothing is added."""
    exc = _raised(code)
    assert isinstance(exc, SyntaxError)
    line = plain_line(exc, "zh")
    assert line and said in line and f"第 {exc.lineno} 行" in line, (code, line)
    assert plain_line(exc, "en") is None


@pytest.mark.parametrize("code, said", [("print(max(1, 2)", "( 没有闭合"), ("s = \'\'\'abc", "没有结束的引号"),
                                        ("class A:", "下面还没有内容"), ("x = 1 +", "还没写完")])
def test_a_slip_on_a_cells_last_line_is_said_too(code, said):
    """At a cell's end IPython says only "incomplete input": an unclosed bracket there (its usual place), a quote or a
    block left empty got no Chinese line."""
    line = plain_line(SyntaxError("incomplete input", ("<cell>", 1, 1, code + "\n")), "zh")
    assert line and said in line and "第 1 行" in line, (code, line)


def test_a_full_width_digit_inside_a_name_and_marks_in_a_comment_are_no_slip():
    """x２ is a name Python reads as x2, and a comment may hold Chinese punctuation: both were blamed for a slip
    elsewhere on the line."""
    line = plain_line(_raised("x２ = 1\nprint(x２ +)"), "zh")
    assert line is None or "全角" not in line, line
    line = plain_line(_raised('print（"a"）  # 注意：这里，那里'), "zh")
    assert line and "（ → (" in line and "： → :" not in line and "， → ," not in line, line


def test_the_words_between_full_width_quotes_are_the_learners_text_only_the_quotes_are_the_slip():
    """return [rule(“date”, “日期在未来，请改成今天。”)]: told to make the ， and 。 half-width too, a learner mangled
    the Chinese message the model was to read."""
    line = plain_line(_raised('x = [str(“date”, “日期在未来，请改成今天。”)]'), "zh")
    assert line and "“" in line and "”" in line, line
    assert "， →" not in line and "。" not in line.split("（")[0] and "删掉" not in line, line
    line = plain_line(_raised('print（“你好，世界”）'), "zh")
    assert "（ → (" in line and "， → ," not in line, line

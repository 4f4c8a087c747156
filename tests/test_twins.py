"""Every notebook in Chinese too: a twin under notebooks/zh/ with the source's code and its own Chinese prose.

(The twins run top to bottom, with Chinese tables and no label left in English, in tests/test_notebooks.py.)
"""
import re
import shutil

import jupytext
import pytest
from conftest import ROOT

from agentlab.workbook.twins import LANG_LINE, TwinError, code_for, sync_twin, twin_path

NB_DIR = ROOT / "notebooks"
SOURCES = sorted(NB_DIR.glob("[0-9][0-9]_*.py"))
FENCE = re.compile(r"```.*?```", re.S)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\([^)]*\)")
QUOTE = re.compile(r"[\"“「][^\"”」\n]*[\"”」]")
WORDS = re.compile(r"\b[A-Za-z]{2,}(?:[ ,;:'-]+[A-Za-z]{2,}){2,}\b")  # three English words in a row
CJK = re.compile(r"[\u3400-\u9fff]")


def headings(markdown: str) -> list[int]:
    """The levels of a cell's headings: a translation keeps them (prose turned into headings reads as shouting)."""
    return [len(m) for m in re.findall(r"^(#+) ", FENCE.sub(" ", markdown), re.M)]


def english_prose(markdown: str) -> list[str]:
    """Runs of English words left once code, links, quotes and names are taken out."""
    text = QUOTE.sub(" ", LINK.sub("]", CODE.sub(" ", FENCE.sub(" ", markdown))))
    return WORDS.findall(text)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_notebook_has_a_chinese_twin_in_step(source):
    assert twin_path(source).exists(), f"{source.name} has no Chinese twin under notebooks/zh/"
    assert not sync_twin(source, write=False), f"notebooks/zh/{source.name} is out of step: python run.py notebooks"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_twin_has_the_same_code_and_chinese_prose(source):
    src, twin = jupytext.read(source), jupytext.read(twin_path(source))
    assert [c.cell_type for c in src.cells] == [c.cell_type for c in twin.cells]
    assert any(LANG_LINE.search(c.source) for c in src.cells if c.cell_type == "code"), "the source sets LANG = \"en\""
    for a, b in zip(src.cells, twin.cells, strict=True):
        if a.cell_type == "code":
            assert b.source == code_for(a.source, "zh")
        else:
            assert CJK.search(b.source), f"an untranslated cell: {b.source[:80]!r}"
            assert headings(b.source) == headings(a.source), f"headings differ: {b.source[:80]!r}"
            assert not english_prose(b.source), (english_prose(b.source), b.source[:120])


def test_english_prose_is_found_and_names_and_quotes_are_not():
    assert english_prose("这是 `create_refund` 的契约，参见 [guards](../docs/guards.md)。")== []
    assert english_prose("模型说：\"I will refund it now\"，但没有调用工具。") == []
    assert english_prose("```python\nprint('hello there world')\n```\n中文") == []
    assert english_prose("When a backend answers with a bare error, the model retries.") != []
    assert english_prose("## 03 · Errors the model can read") != []


def _source_and_twin(tmp_path):
    """A three-cell source notebook (prose, code, prose) and where its Chinese twin goes."""
    source = tmp_path / "01_x.py"
    source.write_text('# %% [markdown]\n# # One\n\n# %%\nLANG = "en"\nprint(1)\n\n# %% [markdown]\n# Two\n',
                      encoding="utf-8")
    (tmp_path / "zh").mkdir()
    return source, twin_path(source)


def test_a_twin_out_of_line_is_named_by_position(tmp_path):
    source, twin = _source_and_twin(tmp_path)
    twin.write_text('# %% [markdown]\n# # 一\n\n# %%\nprint(0)\n', encoding="utf-8")
    with pytest.raises(TwinError, match="they part at cell 3"):
        sync_twin(source)
    twin.write_text('# %% [markdown]\n# # 一\n\n# %%\nprint(0)\n\n# %% [markdown]\n# 二\n', encoding="utf-8")
    assert sync_twin(source) is True  # the code comes from the source, the prose stays the translator's
    again = jupytext.read(twin)
    assert [c.source for c in again.cells] == ["# 一", 'LANG = "zh"  # 改成 "en" 就是英文版\nprint(1)', "二"]
    assert twin.with_suffix(".ipynb").exists() and sync_twin(source, write=False) is False


@pytest.mark.parametrize("lang, said", [("en", ("they part at cell 3", "out of step: ", "updated: ")),
                                        ("zh", ("从第 3 个单元格开始对不上", "与原文不一致：", "已更新："))])
def test_the_twins_command_speaks_the_readers_language(tmp_path, capsys, lang, said):
    """``python run.py notebooks --check --lang zh`` was refused (no such option), and every line the command says (a
    twin out of step, out of line, missing) was English, for the translator who keeps the Chinese twins."""
    import run
    from agentlab.workbook import twins
    _, twin = _source_and_twin(tmp_path)
    twin.write_text('# %% [markdown]\n# # 一\n\n# %%\nprint(0)\n', encoding="utf-8")
    assert twins.main(["--check", "--lang", lang, str(tmp_path)]) == 1
    assert said[0] in capsys.readouterr().out
    twin.write_text('# %% [markdown]\n# # 一\n\n# %%\nprint(0)\n\n# %% [markdown]\n# 二\n', encoding="utf-8")
    assert twins.main([f"--lang={lang}", "--check", str(tmp_path)]) == 1
    assert capsys.readouterr().out.startswith(said[1])
    assert twins.main(["--lang", lang, str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith(said[2])
    assert twins.main(["--check", "--lang", "fr", str(tmp_path)]) == 2
    assert run.main(["notebooks", "--check", "--lang", lang, str(tmp_path / "nowhere")]) == 0


def test_a_missing_twin_says_what_to_do(tmp_path):
    source = tmp_path / "02_y.py"
    shutil.copy(SOURCES[0], source)
    with pytest.raises(TwinError, match="missing"):
        sync_twin(source)


def test_a_sync_keeps_the_notebooks_cell_ids(tmp_path):
    # a one-line change in the source made every cell id of the twin's notebook anew: a diff of the whole notebook
    import json
    source, twin = _source_and_twin(tmp_path)
    twin.write_text('# %% [markdown]\n# # 一\n\n# %%\nprint(0)\n\n# %% [markdown]\n# 二\n', encoding="utf-8")
    sync_twin(source)
    ids = [c["id"] for c in json.loads(twin.with_suffix(".ipynb").read_text(encoding="utf-8"))["cells"]]
    source.write_text(source.read_text(encoding="utf-8").replace("print(1)", "print(2)"), encoding="utf-8")
    assert sync_twin(source) is True
    cells = json.loads(twin.with_suffix(".ipynb").read_text(encoding="utf-8"))["cells"]
    assert [c["id"] for c in cells] == ids and "print(2)" in "".join(cells[1]["source"])


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_chinese_twins_code_speaks_chinese_in_its_comments_and_runs_the_same_code(source):
    """A Chinese learner reads the code's comments too ("your code here: a guard name for each fault"): each twin
    says them in Chinese (data/i18n/comments.json), and its code is the source's, token for token, with its
    comments left out; the language line is the one difference."""
    import io
    import tokenize

    from agentlab.workbook.twins import comments, docstrings, untranslated

    def tokens(code: str) -> list[str]:  # the code, less its comments and its one-line docstrings (both translated)
        said = {row for row, *_ in docstrings(code)}
        return [tok.string for tok in tokenize.generate_tokens(io.StringIO(code).readline)
                if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
                and not (tok.type == tokenize.STRING and tok.start[0] in said)]

    src, twin = jupytext.read(source), jupytext.read(twin_path(source))
    english = []
    for mine, theirs in zip(twin.cells, src.cells, strict=True):
        if mine.cell_type != "code":
            continue
        assert not untranslated(theirs.source), "comments with no translation in data/i18n/comments.json"
        english += [c.text for c in comments(mine.source) if WORDS.search(c.text) and not CJK.search(c.text)]
        english += [text for *_, text in docstrings(mine.source) if WORDS.search(text) and not CJK.search(text)]
        if not theirs.source.lstrip().startswith("%"):
            assert tokens(mine.source) == tokens(LANG_LINE.sub('LANG = "zh"', theirs.source)), "the code differs"
    assert not english, f"English comments in notebooks/zh/{source.name}: {english}"


@pytest.mark.parametrize("code", [
    "x = 1 + \\\n    2  # long\n",                # a line that goes on from a backslash: the comment stays beside it
    's = """abc\ndef"""  # long\n',               # the end of a string begun a line above: never inside the string
    "f(a,\n  b)  # long\n",                        # inside brackets: above its line is still inside the call
    "y = [1,  # long\n     2]\n",
    "%%time\nz = 1  # long\n",                     # IPython's own syntax: left as written
    "!curl http://example.com/#long\n",
])
def test_a_translated_comment_never_changes_the_code(code, monkeypatch):
    """A comment too long beside its code once said in Chinese moves above its line; an attacker's pass found two
    lines where that broke the code (after a backslash: a SyntaxError; at the end of a triple-quoted string: the
    comment moved into the string), and a shell line whose URL held a '#'."""
    import ast
    import io
    import tokenize

    from agentlab.workbook import twins
    monkeypatch.setattr(twins, "comment_glossary", lambda: {"zh": {"long": "一个很长的注释" * 12}})
    out = code_for(code, "zh")
    if code.startswith(("%", "!")):
        assert out == code
        return

    def tokens(text):
        return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)]
    ast.parse(out)
    assert tokens(out) == tokens(code) and "一个很长的注释" in out, out


def test_a_one_line_docstring_is_said_in_the_twins_language_as_a_comment_is():
    """The stub a Chinese learner fills in carried an English docstring: comments were said in Chinese, docstrings
    were not, and nothing listed them as untranslated."""
    from agentlab.workbook.twins import code_for, docstrings, untranslated
    code = ('def my_cut(messages, keep):\n'
            '    """The system prompt, then at most `keep` of the latest messages, never starting on a tool reply."""\n'
            '    return None  # your code\n\n\ndef other():\n    """Line one.\n\n    More."""\n')
    zh = code_for(code, "zh")
    assert '"""先是系统提示' in zh and "return None  # 你的代码" in zh and '"""Line one.' in zh
    compile(zh, "twin", "exec")
    assert [text for *_, text in docstrings(code)] == [
        "The system prompt, then at most `keep` of the latest messages, never starting on a tool reply."]
    assert untranslated('def f():\n    """Brand new words."""\n') == ["Brand new words."]
    assert untranslated(code) == []

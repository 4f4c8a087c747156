"""Each notebook in two languages from one source: the Chinese twin's prose, the English notebook's code.

``notebooks/NN_name.py`` (py:percent, paired with its ``.ipynb``) is the source: its code cells and its
English prose. ``notebooks/zh/NN_name.py`` (paired the same way) is its Chinese twin: a translator writes the
Chinese prose there, in the twin's markdown cells, and never edits its code cells, which :func:`sync_twin` copies
from the source with two changes: the line ``LANG = "en"`` becomes ``LANG = "zh"``, so tables, plots, traces and
exercise feedback speak Chinese too, and each comment is said in Chinese from ``data/i18n/comments.json`` (a learner
reads "在这里写你的代码" where the source says "your code here"; the code itself is the source's, token for token).
``python run.py notebooks`` brings every twin in step; a test fails when one is out of step
(``python run.py notebooks --check``).

The twin must keep the source's sequence of cells (markdown and code in the same order): a cell added to the source
without its translation is reported by position, with the source cell's first line, so the translator sees where.
jupytext is a workbook dependency, imported only here.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..i18n import Lang, columns, t

__all__ = ["LANG_LINE", "Comment", "TwinError", "code_for", "comment_glossary", "comments", "sync_twin", "twin_path", "untranslated"]

#: the first code cell of every notebook sets the language the program speaks in
LANG_LINE = re.compile(r'^LANG = "en"(.*)$', re.M)
_ZH_LINE = 'LANG = "zh"  # 改成 "en" 就是英文版'


@dataclass(frozen=True)
class TwinError(Exception):
    """A twin that cannot follow its source: which file, and why as a catalogue line (``key`` and its ``fields``),
    said in either language (:meth:`said`)."""

    path: str
    key: str
    fields: tuple[tuple[str, object], ...] = ()

    def said(self, lang: Lang = "en") -> str:
        return t("twins.error", lang, path=self.path, reason=t(self.key, lang, **dict(self.fields)))

    def __str__(self) -> str:
        return self.said("en")


def twin_path(source: Path, lang: str = "zh") -> Path:
    return source.parent / lang / source.name


def code_for(source_code: str, lang: str) -> str:
    """A source code cell as the twin in ``lang`` runs it: the language line set, and its comments said in ``lang``
    from ``data/i18n/comments.json`` (a comment with no translation stays as written; :func:`untranslated` lists
    them). The code itself is the source's, character for character."""
    if lang == "en":
        return source_code
    said = comment_glossary().get(lang, {})
    lines = source_code.split("\n")
    for block in reversed(comments(source_code)):
        if LANG_LINE.match(lines[block.row - 1]) or block.text not in said:
            continue
        text = said[block.text]
        code = lines[block.row - 1][:block.col]
        if block.inline and (columns(code + "# " + text) <= 118 or not block.own_line):
            lines[block.row - 1] = code + "# " + text  # (a line that goes on from the one before keeps it beside)
        elif block.inline and block.own_line:  # too long beside its code in Chinese: on its own lines above it
            indent = len(code) - len(code.lstrip())
            lines[block.row - 1:block.row] = [" " * indent + "# " + part for part in _wrapped(text, 116 - indent)] \
                + [code.rstrip()]
        else:
            lines[block.row - 1:block.end] = [" " * block.col + "# " + part for part in _wrapped(text, 116 - block.col)]
    for row, start, end, text in reversed(docstrings("\n".join(lines))):  # a docstring is read as a comment is
        if text in said:
            line = lines[row - 1]
            lines[row - 1] = line[:start] + said[text] + line[end:]
    return LANG_LINE.sub(_ZH_LINE, "\n".join(lines))


def docstrings(code: str) -> list[tuple[int, int, int, str]]:
    """The one-line docstrings of the functions and classes in ``code`` (``\"\"\"...\"\"\"`` on one row): each as (row,
    column where its text starts, column where it ends, the text). A learner reads the one above the stub they
    fill in; a Chinese cell said it in English. A longer docstring, or a cell Python cannot read, is left as written."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    lines = code.split("\n")
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or not node.body:
            continue
        first = node.body[0]
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)) or first.lineno != first.end_lineno:
            continue
        line = lines[first.lineno - 1]
        raw = line.encode()  # ast's columns count UTF-8 bytes: a Chinese docstring's end is past its characters
        start = len(raw[:first.col_offset].decode(errors="replace"))
        end = None if first.end_col_offset is None else len(raw[:first.end_col_offset].decode(errors="replace"))
        if end is None or line[start:start + 3] not in ('"""', "'''") or line[end - 3:end] != line[start:start + 3]:
            continue
        found.append((first.lineno, start + 3, end - 3, first.value.value))
    return sorted(found)


@dataclass(frozen=True)
class Comment:
    """A comment of a code cell: lines ``row`` to ``end`` (1-based) at column ``col``, its words joined into one text;
    ``inline`` when it follows code on its line."""

    row: int
    end: int
    col: int
    text: str
    inline: bool
    own_line: bool = True  # the code on its line starts there: not the rest of a string or of a "\\" continuation


def comments(code: str) -> list[Comment]:
    """The comments of ``code``, the lines of a comment that runs over several (each alone on its line, one under the
    other) joined into one; none for a cell Python cannot read (a cell magic), left as written."""
    import io
    import tokenize

    lines = code.split("\n")
    if any(line.lstrip().startswith(("%", "!")) for line in lines):  # IPython's own syntax: left as written
        return []
    try:
        every = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    # the rows whose code starts afresh: the first token on the row follows the end of a line, not a "\" or a string
    # that began on an earlier row
    fresh, before = set(), None
    for tok in every:
        if tok.type == tokenize.COMMENT:
            continue
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER) \
                and (before is None or before.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)):
            fresh.add(tok.start[0])
        before = tok
    found: list[Comment] = []
    for tok in every:
        if tok.type != tokenize.COMMENT:
            continue
        (row, col), text = tok.start, tok.string[1:].strip()
        inline = lines[row - 1][:col].strip() != ""
        last = found[-1] if found else None
        if not inline and last is not None and not last.inline and last.end == row - 1 and last.col == col:
            found[-1] = Comment(last.row, row, col, f"{last.text} {text}", False)
        else:
            found.append(Comment(row, row, col, text, inline, row in fresh))
    return found


def untranslated(code: str, lang: str = "zh") -> list[str]:
    """The comments and one-line docstrings of a source code cell that read as words and have no translation in
    ``lang``."""
    said = comment_glossary().get(lang, {})
    return [c.text for c in comments(code) if re.search(r"[A-Za-z]{2}", c.text) and c.text not in said
            and not re.match(r"(noqa|type:|pragma|fmt:)", c.text)
            and not LANG_LINE.match(code.split("\n")[c.row - 1])] \
        + [text for *_, text in docstrings(code) if re.search(r"[A-Za-z]{2}", text) and text not in said]


def comment_glossary() -> dict[str, dict[str, str]]:
    """``{lang: {English comment: its translation}}``, from ``data/i18n/comments.json``."""
    import json

    from ..resources import data_file
    return json.loads(data_file("i18n/comments.json").read_text(encoding="utf-8"))


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns (a Chinese character takes two), the lines of about one length
    (never a last line of one character); a run of Latin letters, digits or code is never split."""
    def greedy(limit: int) -> list[str]:
        out, line = [], ""
        for piece in re.findall(r"[\x21-\x7e]+|\s|.", text):
            if line and columns(line + piece) > limit:
                out.append(line.rstrip())
                line = piece.lstrip()
            else:
                line += piece
        return [*out, line.rstrip()] if line.strip() else out or [""]

    lines = greedy(width)
    if len(lines) > 1:  # the same number of lines, each about as long as the others
        even = greedy(min(width, -(-columns(text) // len(lines)) + 6))
        if len(even) == len(lines):
            return even
    return lines


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")[:80]


def sync_twin(source: Path, *, lang: str = "zh", write: bool = True) -> bool:
    """Bring the twin of ``source`` in step; return whether it changed (with ``write=False``: would change).

    Raises :class:`TwinError` when the twin is missing or its cells no longer line up with the source's.
    """
    import jupytext  # a workbook dependency, not one of the package's

    twin = twin_path(source, lang)
    if not twin.exists():
        raise TwinError(str(twin), "twins.missing", (("source", source.name),))
    src, tw = jupytext.read(source), jupytext.read(twin)
    if not any(LANG_LINE.search(c.source) for c in src.cells if c.cell_type == "code"):
        raise TwinError(str(source), "twins.no_lang_line")
    kinds = [c.cell_type for c in src.cells]
    if [c.cell_type for c in tw.cells] != kinds:
        at = next((i for i, (a, b) in enumerate(zip(kinds, [c.cell_type for c in tw.cells], strict=False))
                   if a != b), min(len(kinds), len(tw.cells)))
        raise TwinError(str(twin), "twins.cells_differ" if at < len(kinds) else "twins.cells_differ_at_end",
                        (("cells", len(tw.cells)), ("source_cells", len(kinds)), ("at", at + 1),
                         ("kind", kinds[at] if at < len(kinds) else ""),
                         ("first", repr(_first_line(src.cells[at].source)) if at < len(kinds) else "")))
    changed = False
    for mine, theirs in zip(tw.cells, src.cells, strict=True):
        if mine.cell_type == "code":
            want = code_for(theirs.source, lang)
            if mine.source != want:
                mine.source, changed = want, True
    if changed and write:
        _write_pair(tw, twin)
    ipynb = twin.with_suffix(".ipynb")
    if not ipynb.exists() or _cells(jupytext.read(ipynb)) != _cells(tw):
        changed = True
        if write:
            _write_pair(tw, twin)
    return changed


def _cells(nb: Any) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def _write_pair(nb: Any, twin: Path) -> None:
    """Write the twin's script and its notebook, outputs stripped, paired as the source is."""
    import jupytext

    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    jupytext.write(nb, twin, fmt="py:percent")
    ipynb = twin.with_suffix(".ipynb")
    # the script holds no cell ids: the notebook's own are kept, cell by cell, so a sync's diff shows what changed
    # (every id made anew was a line changed per cell of the notebook)
    if ipynb.exists():
        for cell, was in zip(nb.cells, jupytext.read(ipynb).cells, strict=False):
            if cell.cell_type == was.cell_type and "id" in was:
                cell["id"] = was["id"]
    jupytext.write(nb, ipynb, fmt="ipynb")


def _parser(lang: Lang) -> Any:
    from ..cmdline import Parser
    ap = Parser(prog="python -m agentlab.workbook.twins", lang=lang)
    ap.add_argument("folder", nargs="?", default="notebooks")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--lang", choices=("en", "zh"), default=lang)
    return ap


def main(argv: list[str]) -> int:
    """``python -m agentlab.workbook.twins [--check] [--lang zh] [NOTEBOOKS_DIR]``: sync every twin, or only say which
    differ; said in ``--lang``'s language (read, and a usage error said, as the package's commands do)."""
    from ..cmdline import parse
    ns, code, _ = parse(_parser, argv)
    if ns is None:  # a mistyped --check wrote every twin, said nothing and ended 0: now a usage line, exit 2
        return code
    lang: Lang = "zh" if ns.lang == "zh" else "en"
    status = 0
    for source in sorted(Path(ns.folder).glob("[0-9][0-9]_*.py")):
        try:
            changed = sync_twin(source, write=not ns.check)
        except TwinError as exc:
            print(exc.said(lang))
            status = 1
            continue
        if changed:
            print(t("twins.out_of_step" if ns.check else "twins.updated", lang, path=twin_path(source)))
            status |= ns.check
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Each notebook in two languages from one source: the Chinese twin's prose, the English notebook's code.

``notebooks/NN_name.py`` (py:percent, paired with its ``.ipynb``) is the source: its code cells and its
English prose. ``notebooks/zh/NN_name.py`` (paired the same way) is its Chinese twin: a translator writes the
Chinese prose there, in the twin's markdown cells, and never edits its code cells, which :func:`sync_twin` copies
from the source with one change: the line ``LANG = "en"`` becomes ``LANG = "zh"``, so tables, plots, traces and
exercise feedback speak Chinese too. ``python run.py notebooks`` brings every twin in step; a test fails when one is
out of step (``python run.py notebooks --check``).

The twin must keep the source's sequence of cells (markdown and code in the same order): a cell added to the source
without its translation is reported by position, with the source cell's first line, so the translator sees where.
jupytext is a workbook dependency, imported only here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LANG_LINE", "TwinError", "code_for", "sync_twin", "twin_path"]

#: the first code cell of every notebook sets the language the program speaks in
LANG_LINE = re.compile(r'^LANG = "en"(.*)$', re.M)
_ZH_LINE = 'LANG = "zh"  # "en" for English'


@dataclass(frozen=True)
class TwinError(Exception):
    """A twin that cannot follow its source: which file and why, in a sentence."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def twin_path(source: Path, lang: str = "zh") -> Path:
    return source.parent / lang / source.name


def code_for(source_code: str, lang: str) -> str:
    """A source code cell as the twin in ``lang`` runs it: only the language line differs."""
    if lang == "en":
        return source_code
    return LANG_LINE.sub(_ZH_LINE, source_code)


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")[:80]


def sync_twin(source: Path, *, lang: str = "zh", write: bool = True) -> bool:
    """Bring the twin of ``source`` in step; return whether it changed (with ``write=False``: would change).

    Raises :class:`TwinError` when the twin is missing or its cells no longer line up with the source's.
    """
    import jupytext  # a workbook dependency, not one of the package's

    twin = twin_path(source, lang)
    if not twin.exists():
        raise TwinError(str(twin), f"missing: copy {source.name} there and translate its markdown cells")
    src, tw = jupytext.read(source), jupytext.read(twin)
    if not any(LANG_LINE.search(c.source) for c in src.cells if c.cell_type == "code"):
        raise TwinError(str(source), 'no code cell sets LANG = "en", so the twin could not speak its language')
    kinds = [c.cell_type for c in src.cells]
    if [c.cell_type for c in tw.cells] != kinds:
        at = next((i for i, (a, b) in enumerate(zip(kinds, [c.cell_type for c in tw.cells], strict=False))
                   if a != b), min(len(kinds), len(tw.cells)))
        first = _first_line(src.cells[at].source) if at < len(src.cells) else "(end of the source)"
        raise TwinError(str(twin), f"{len(tw.cells)} cells where the source has {len(kinds)}; they part at cell "
                                   f"{at + 1} ({kinds[at] if at < len(kinds) else 'end'}: {first!r})")
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


def main(argv: list[str]) -> int:
    """``python -m agentlab.workbook.twins [--check] [NOTEBOOKS_DIR]``: sync every twin, or only say which differ."""
    check = "--check" in argv
    folder = Path(next((a for a in argv if not a.startswith("--")), "notebooks"))
    status = 0
    for source in sorted(folder.glob("[0-9][0-9]_*.py")):
        try:
            changed = sync_twin(source, write=not check)
        except TwinError as exc:
            print(exc)
            status = 1
            continue
        if changed:
            print(("out of step: " if check else "updated: ") + str(twin_path(source)))
            status |= check
    return status


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))

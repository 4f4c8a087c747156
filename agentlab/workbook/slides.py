"""Slides for the trainer, made from the notebooks with nbconvert's reveal.js exporter (``python -m agentlab slides``).

Each notebook's title and each ``##`` heading starts a slide; every code cell, and the text that follows a code
cell, is a sub-slide below it (the down arrow), so one slide never holds a page of code. The marks are put on a copy
read from the ``.ipynb``: the committed notebooks stay as they are. ``execute=True`` runs the copy first (in the
notebook's own folder, as Jupyter would), so the slides show the tables and plots; without it they show the code.

reveal.js, require.js and jQuery come from ``etc/slides/node_modules`` when ``npm ci`` has installed them there
(``etc/slides/package.json`` pins them): they are copied beside the slides, so the folder opens with no network. Without
them the slides load those three from a CDN, and :func:`write_slides` says so (docs/trainer.md#slides).
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..i18n import Lang, LocalizedError

__all__ = ["VENDOR", "Written", "mark_slides", "notebooks", "slides_html", "write_slides"]

_ROOT = Path(__file__).resolve().parent.parent.parent
VENDOR = _ROOT / "etc" / "slides" / "node_modules"  # npm ci in etc/slides (etc/slides/package-lock.json)
ASSETS = "reveal-assets"  # the folder beside the slides that holds the copies
# what the slides load, relative to VENDOR: reveal.js's folder (its dist/ and plugin/notes/), require.js, jQuery
_REVEAL, _REQUIRE, _JQUERY = "reveal.js", "requirejs/require.js", "jquery/dist/jquery.min.js"
_HEADING = re.compile(r"^#{1,2}\s+\S", re.M)


@dataclass(frozen=True)
class Written:
    """One command's work: the slide files written, and whether they open without a network."""

    files: tuple[Path, ...]
    offline: bool


def notebooks(lang: Lang, numbers: Iterable[str] = ()) -> list[Path]:
    """The workbook's notebooks in ``lang`` (all, or those whose number is in ``numbers``), in order."""
    folder = _ROOT / "notebooks" / ("zh" if lang == "zh" else "")
    wanted = {n.zfill(2) for n in numbers}
    return [p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")) if not wanted or p.name[:2] in wanted]


def _starts_slide(cell: Any) -> bool:
    """A markdown cell that opens with the title or a ``##`` heading."""
    return cell.cell_type == "markdown" and bool(_HEADING.match(cell.source.lstrip()))


def mark_slides(nb: Any) -> Any:
    """``nb`` with a slide type on every cell: a heading starts a slide, a code cell is a sub-slide, the text after
    a code cell starts a sub-slide, any other text goes on the slide it follows."""
    after_code = False
    for i, cell in enumerate(nb.cells):
        if i == 0 or _starts_slide(cell):
            kind = "slide"
        elif cell.cell_type == "code" or after_code:
            kind = "subslide"
        else:
            kind = "-"
        cell.metadata["slideshow"] = {"slide_type": kind}
        after_code = cell.cell_type == "code"
    return nb


def _vendor_ready(vendor: Path) -> bool:
    return all((vendor / p).is_file() for p in (f"{_REVEAL}/dist/reveal.js", f"{_REVEAL}/plugin/notes/notes.js",
                                                 _REQUIRE, _JQUERY))


def _copy_assets(vendor: Path, out: Path) -> None:
    """reveal.js (its dist/ and its notes plugin), require.js and jQuery, beside the slides."""
    target = out / ASSETS
    for part in ("dist", "plugin/notes"):
        shutil.copytree(vendor / _REVEAL / part, target / _REVEAL / part, dirs_exist_ok=True)
    for file in (_REQUIRE, _JQUERY):
        (target / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vendor / file, target / file)


def _exporter(offline: bool, zh: bool) -> Any:
    from nbconvert import SlidesExporter
    from traitlets.config import Config
    c = Config()
    c.SlidesExporter.reveal_scroll = True  # a tall table scrolls within its slide
    c.SlidesExporter.exclude_input_prompt = True
    c.SlidesExporter.exclude_output_prompt = True
    c.SlidesExporter.language_code = "zh" if zh else "en"  # <html lang> (an ISO 639-1 code): the right voice and font
    if offline:
        c.SlidesExporter.reveal_url_prefix = f"{ASSETS}/{_REVEAL}"
        c.SlidesExporter.require_js_url = f"{ASSETS}/{_REQUIRE}"
        c.SlidesExporter.jquery_url = f"{ASSETS}/{_JQUERY}"
        # the notebooks hold no formula and no diagram: nothing is fetched for either
        c.SlidesExporter.mathjax_url = ""
        c.SlidesExporter.mermaid_js_url = ""
    return SlidesExporter(config=c)


def slides_html(path: Path, *, offline: bool, execute: bool = False, timeout: int = 600) -> str:
    """One notebook's slides as an HTML page; ``execute`` runs a copy of the notebook first."""
    import nbformat
    nb = mark_slides(nbformat.read(path, as_version=4))
    if execute:
        from nbclient import NotebookClient

        from .kernels import KernelManager, error_line
        try:
            NotebookClient(nb, timeout=timeout, kernel_name="python3", kernel_manager_class=KernelManager,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except Exception as exc:  # a cell that raised, a kernel that died, a timeout: said as the check says it
            error, cell = error_line(exc)
            notebook = path.relative_to(path.parent.parent).as_posix() if path.parent.name == "zh" else path.name
            raise LocalizedError("kit.notebook_failed_cell" if cell else "kit.notebook_failed", notebook=notebook,
                                 error=error, cell=cell) from exc
    body, _ = _exporter(offline, path.parent.name == "zh").from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    return str(body)


def write_slides(paths: Sequence[Path], out: Path, *, execute: bool = False, vendor: Path = VENDOR) -> Written:
    """``NN_name.slides.html`` in ``out`` for each notebook, and the offline copies of reveal.js when ``vendor`` has
    them (otherwise the slides load reveal.js from a CDN: :attr:`Written.offline` is False)."""
    offline = _vendor_ready(vendor)
    out.mkdir(parents=True, exist_ok=True)
    if offline:
        _copy_assets(vendor, out)
    files = []
    for path in paths:
        target = out / f"{path.stem}.slides.html"
        target.write_text(slides_html(path, offline=offline, execute=execute), encoding="utf-8")
        files.append(target)
    return Written(tuple(files), offline)

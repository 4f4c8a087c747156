"""The trainer notes: which notebooks have an exercise (``data/trainer/exercises.json``, the file the checks read) and
a build exercise (``builds.json``), the notes for each (``data/trainer/NN.<lang>.md`` for the question,
``NNb.<lang>.md`` for the build, or a folder of the hub's own), and the notes as the trainer's page shows them:
Markdown made into HTML, its headings under the page's own, any HTML in the file shown as text."""
from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from ..i18n import Lang
from ..resources import data_file

__all__ = ["exercise_ids", "notes_dir", "notes_html", "trainer_notes"]


@cache
def exercise_ids() -> dict[str, str]:
    """Notebook number -> exercise id, the same file the checks read (``data/trainer/exercises.json``)."""
    return dict(json.loads(data_file("trainer/exercises.json").read_text(encoding="utf-8")))


@cache
def build_ids() -> dict[str, str]:
    """``NNb`` -> the build exercise of notebook NN (``data/trainer/builds.json``, the same file the checks read)."""
    ids = json.loads(data_file("trainer/builds.json").read_text(encoding="utf-8"))
    return {f"{nb}b": ex for nb, ex in ids.items()}


def notes_dir() -> Path:
    """Where the trainer notes are: ``$AGENTLAB_TRAINER_NOTES`` (a folder only the hub's user reads), else the data."""
    return Path(os.environ.get("AGENTLAB_TRAINER_NOTES") or data_file("trainer"))


def trainer_notes(notebook: str, lang: Lang) -> str | None:
    """The notes for one notebook's exercise (``NN``) or its build exercise (``NNb``) in ``lang`` (English when the
    translation is missing), or None."""
    if notebook not in exercise_ids() and notebook not in build_ids():  # checked first: no path from a caller's text
        return None
    for candidate in (lang, "en"):
        path = notes_dir() / f"{notebook}.{candidate}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


#: the page's own headings go down to <h3> (a section, a notebook): a note's title is an <h4>, its parts below it
_BELOW = 3


def notes_html(text: str | None) -> Any:
    """``text`` (Markdown) as HTML for the trainer's page, marked safe for its template; None stays None. The notes
    are read by a trainer in front of the room: shown as their Markdown source, "**Timing:**" and "- *Why not...*"
    were what they read. A tag in the file is shown as written (a notes folder is the trainer's, its text is not
    trusted to be HTML), and a link only to the web."""
    if text is None:
        return None
    import mistune  # only for the trainer's page: importing the hub's modules needs no Markdown
    from markupsafe import Markup

    class Renderer(mistune.HTMLRenderer):
        def heading(self, text: str, level: int, **attrs: Any) -> str:
            n = min(level + _BELOW, 6)
            return f"<h{n}>{text}</h{n}>\n"

        def link(self, text: str, url: str, title: str | None = None) -> str:
            return super().link(text, url, title) if url.startswith(("https://", "http://")) else text

    return Markup(mistune.create_markdown(escape=True, renderer=Renderer(escape=True))(text))

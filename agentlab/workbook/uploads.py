"""A file a reader uploads on a page (the log review, the weekly review, the probe's tools file): its button, the limit
said beside it, its bytes read or refused, and where it is kept while it is read (and only then)."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import ipywidgets as W

from ..evals.logs import FORMATS
from ..i18n import Lang, t

__all__ = ["MAX_UPLOAD_MB", "drop_upload", "file_said", "kept_or_said", "kept_upload", "upload_button", "upload_content", "upload_note"]


#: the largest file a page takes, in MB. The browser sends a file to the kernel as one websocket message, and the
#: server closes a connection whose message passes its limit (tornado's default, 10 MiB): a 30 MB log then vanished
#: with no word. The workbook's Jupyter settings raise the server's limit above this (etc/jupyter); the app's page
#: refuses a larger file before it is sent (app/jupyter/voila/templates/agentlab), and this side refuses it again.
MAX_UPLOAD_MB = 200


def upload_note(lang: Lang) -> str:
    """The line beside a file upload: the largest file it takes, and (for the app page's check, which reads the
    limit and the sentence from here so both sides say the same) the sentence a larger file gets, ``{name}`` left
    for the page to fill in with the file's name."""
    refused = t("ui.upload_too_large", lang, name="{name}", mb=MAX_UPLOAD_MB)
    return (f"<span class='agentlab-upload-note' data-limit='{int(MAX_UPLOAD_MB * 1_000_000)}' "
            f"data-refused='{html.escape(refused, quote=True)}'>{html.escape(t('ui.upload_limit', lang, mb=MAX_UPLOAD_MB))}"
            "</span>")


def upload_button(accept: str) -> W.FileUpload:
    """A file upload for one file, as wide as its label: ipywidgets draws it 148 px wide, and "Upload a tools file
    (0)" with its icon was cut to "Upload a tools fi..."."""
    return W.FileUpload(accept=accept, multiple=False, layout=W.Layout(width="auto"))


def upload_content(upload: W.FileUpload) -> tuple[str, bytes] | None:
    """The name and bytes a FileUpload holds, None when empty.

    Raises :class:`~agentlab.i18n.LocalizedError` (``ui.upload_too_large``) for a file over :data:`MAX_UPLOAD_MB`."""
    from ..i18n import LocalizedError
    if not upload.value:
        return None
    item = upload.value[0]
    name = Path(str(item["name"])).name  # a name, never a path: "../x" is x, and ".." no name at all
    content = item["content"]
    if len(content) > MAX_UPLOAD_MB * 1_000_000:
        upload.value = ()  # its bytes are not kept in the kernel's memory (the widget's own observers see it emptied)
        raise LocalizedError("ui.upload_too_large", name=name, mb=MAX_UPLOAD_MB)
    return name, bytes(content)


def kept_upload(upload: W.FileUpload, prefix: str, replacing: Path | None = None) -> Path | None:
    """The file a FileUpload holds, written under its own name into a folder of its own that goes when the kernel
    does (:func:`~agentlab.scratch.scratch_folder`); None when empty. ``replacing``: the upload this one
    replaces, removed now (a reader's logs are kept no longer than they are read; see :func:`drop_upload`).

    Raises :class:`~agentlab.i18n.LocalizedError` for a file over :data:`MAX_UPLOAD_MB` (nothing is written)."""
    from ..scratch import scratch_folder
    held = upload_content(upload)
    if held is None:
        return None
    name, content = held
    folder = scratch_folder(prefix)
    _UPLOADS.add(folder)
    path = folder / (name if name not in ("", ".", "..") else "upload")
    path.write_bytes(content)
    if replacing is not None and replacing != path:
        drop_upload(replacing)
    return path


def kept_or_said(upload: W.FileUpload, prefix: str, replacing: Path | None, view: W.HTML, lang: Lang) -> Path | None:
    """:func:`kept_upload`, a file refused (too large for the page) said in ``view`` instead: the file kept, or None
    (nothing uploaded, or refused and said)."""
    from ..i18n import LocalizedError
    try:
        return kept_upload(upload, prefix, replacing=replacing)
    except LocalizedError as exc:
        view.value = f"<p style='color:#d93025'>{html.escape(file_said(exc, lang))}</p>"
        return None


def file_said(exc: Any, lang: Lang) -> str:
    """A refused file's sentence as a person reads it on a page: the file by its own name, never the folder it sits
    in on the machine serving the page (an upload's temporary folder, the workbook's data folder)."""
    text = str(exc.localized(lang))
    for field in ("path", "where"):  # a log's LogError names it by path, an OTLP file's OtlpError by where
        where = getattr(exc, "fields", {}).get(field)
        if where:
            text = text.replace(str(where), Path(str(where)).name)
    # a format to choose is chosen on a page with its menu: "(on the command line: --format openai)" is no help there
    for fmt in FORMATS:
        text = text.replace(t("ui.format_flag", lang, format=fmt), t("ui.format_menu", lang, format=fmt))
    return text


def drop_upload(path: Path | None) -> None:
    """Remove ``path`` now if :func:`kept_upload` wrote it; anything else (a sample, a file the reader named, a
    notebook's own folder) is left alone."""
    from ..scratch import forget
    if path is not None and path.parent in _UPLOADS:
        _UPLOADS.discard(path.parent)
        forget(path.parent)


_UPLOADS: set[Path] = set()  # the folders kept_upload made, the only ones drop_upload removes

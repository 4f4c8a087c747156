"""Opening a notebook leaves the committed files as they were: the Jupyter server's save hook for the workbook.

When a kernel starts, JupyterLab writes the kernel's ``language_info`` (its Python's exact version among it) into
the notebook's metadata, and the next save, an autosave included, writes it into the ``.ipynb``: opening
``notebooks/00_start_here.ipynb`` and running nothing marked it modified in git. jupytext keeps that key out of the
paired ``.py`` already (its default metadata filter); :func:`pre_save` keeps it out of the ``.ipynb`` too. It is the
server's ``ContentsManager.pre_save_hook`` in ``etc/jupyter/jupyter_server_config.json``, the settings folder that
``python run.py lab``, the hub's servers and the binder image all read (docs/workshop.md). Outputs and the
learner's own edits are saved as always: only a key that says which machine opened the notebook is dropped.

The page is another matter: JupyterLab keeps the notebook in the browser, and a kernel's ``language_info`` set into
it there marks it changed, so closing a notebook nobody touched asked "save your changes?" (the change dropped again
on saving). :class:`ContentsManager` hands each notebook to the page with the ``language_info`` this server's Python
has, which is the one its kernel reports (ipykernel's own): set again to the same value, nothing changes. It is the
server's contents manager in the same settings (``ServerApp.contents_manager_class``): the server's default, inside
jupytext's where jupytext is installed, so the paired ``.py`` files work as before.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

__all__ = ["MACHINE_KEYS", "ContentsManager", "kernel_language_info", "pre_save"]

#: notebook metadata that describes the machine that opened the notebook, not the notebook
MACHINE_KEYS = ("language_info",)


def pre_save(model: dict[str, Any], path: str = "", contents_manager: Any = None, **_kw: Any) -> None:
    """Drop :data:`MACHINE_KEYS` from a notebook model about to be written (a file model is left alone)."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    meta = model["content"].get("metadata")
    if isinstance(meta, dict):
        for key in MACHINE_KEYS:
            meta.pop(key, None)


@cache
def kernel_language_info() -> dict[str, Any] | None:
    """What a Python kernel of this server's Python says of its language (ipykernel's ``language_info``), or None
    without ipykernel."""
    try:
        from ipykernel.ipkernel import IPythonKernel
    except ImportError:
        return None
    return dict(IPythonKernel.language_info)


def _base() -> type:
    """The server's default contents manager, inside jupytext's where jupytext is installed (a developer's set: the
    paired ``.py`` files kept in step); a participant's set has no jupytext, and the default alone serves it."""
    try:
        from jupytext import build_async_jupytext_contents_manager_class
    except ImportError:
        return AsyncLargeFileManager
    return build_async_jupytext_contents_manager_class(AsyncLargeFileManager)


class ContentsManager(_base()):  # type: ignore[misc]
    """The server's contents manager (jupytext's around the default, where jupytext is installed), handing each
    notebook of a Python kernel (``kernelspec.language`` python) to the page with the ``language_info`` its kernel will
    report."""

    async def get(self, path: str, content: bool = True, type: str | None = None, format: str | None = None,
                  **kw: Any) -> dict[str, Any]:
        model: dict[str, Any] = await super().get(path, content=content, type=type, format=format, **kw)
        notebook = model.get("content") if model.get("type") == "notebook" else None
        meta = notebook.get("metadata") if isinstance(notebook, dict) else None
        info = kernel_language_info()
        if isinstance(meta, dict) and info is not None and "language_info" not in meta \
                and (meta.get("kernelspec") or {}).get("language", "python") == "python":
            meta["language_info"] = {**info, "codemirror_mode": dict(info["codemirror_mode"])}
        return model

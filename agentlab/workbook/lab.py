"""Opening a notebook leaves the committed files as they were: the Jupyter server's save hook for the workbook.

When a kernel starts, JupyterLab writes the kernel's ``language_info`` (its Python's exact version among it) into
the notebook's metadata, and the next save, an autosave included, writes it into the ``.ipynb``: opening
``notebooks/00_start_here.ipynb`` and running nothing marked it modified in git. jupytext keeps that key out of the
paired ``.py`` already (its default metadata filter); :func:`pre_save` keeps it out of the ``.ipynb`` too. It is the
server's ``ContentsManager.pre_save_hook`` in ``etc/jupyter/jupyter_server_config.json``, the settings folder that
``python run.py lab``, the hub's servers and the binder image all read (docs/workshop.md). Outputs and the
learner's own edits are saved as always: only a key that says which machine opened the notebook is dropped.
"""
from __future__ import annotations

from typing import Any

__all__ = ["MACHINE_KEYS", "pre_save"]

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

"""A figure as the workbook's widgets show it (agentlab/workbook/widgets.py and the apps): a PNG drawn once, the same
in a kernel, a test or Voila, that carries its text equivalent as the image's alt text, and the text right under it."""
from __future__ import annotations

import base64
import html
from collections.abc import Callable
from typing import Any

import ipywidgets as W
from IPython.display import Image

from ..a11y import attach, quiet, text_equivalent

__all__ = ["figure"]


def _show(out: W.Output, obj: Any) -> None:
    out.outputs = ()
    _append(out, obj)


def _append(out: W.Output, obj: Any) -> None:
    """``obj`` into ``out``, a figure's text equivalent right under its image (for a screen reader, or colours)."""
    out.append_display_data(obj)
    te = text_equivalent(obj)
    if te is not None:
        out.append_display_data(te)


def figure(draw: Callable[[Any], Any], size: tuple[float, float] = (7, 3.2)) -> Any:
    """Draw on a fresh figure and return it as a PNG image (the same in a kernel, a test, or Voila), carrying the
    plot's text equivalent: as the image's alt text, and for :func:`_show` to put under it."""
    import io

    import matplotlib.pyplot as plt

    from .plots import cjk_fonts
    with cjk_fonts(), quiet():  # quiet: the text is shown under the image here, not wherever the kernel prints
        fig, ax = plt.subplots(figsize=size)
        drawn = draw(ax)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)  # shown through the Output widget, not twice
    te = text_equivalent(drawn) or text_equivalent(ax)
    image = _PlotImage(data=buf.getvalue(), format="png", alt=te.summary if te else None)
    return attach(image, te) if te is not None else image


class _PlotImage(Image):
    """IPython's ``Image`` with its alt text where a page reads it: JupyterLab and Voila draw an ``image/png`` output
    with an empty alt (they read no alt from its metadata, where IPython puts it), so the image goes out as HTML too,
    an ``<img>`` carrying the alt, which they prefer; the PNG stays in the bundle for whatever reads only that."""

    def _repr_html_(self) -> str | None:
        if not self.alt or not isinstance(self.data, bytes):
            return None
        data = base64.b64encode(self.data).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" alt="{html.escape(self.alt)}">'

"""Where files live: the data shipped with the package, and the public datasets beside it.

Shipped data (the after-sales desk's orders, tools and cases, recorded model runs) is read
through :mod:`importlib.resources`, so an installed wheel finds it as well as a checkout.
The public datasets (BFCL, tau-bench, the JSON-Schema-Test-Suite) are not shipped: they
are read from ``$AGENTLAB_DATASETS``, by default ``../shared/datasets`` beside a checkout.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CJK_FILES", "CJK_FONTS", "data_file", "datasets_dir"]

_PACKAGED = Path(__file__).resolve().parent / "data"  # an installed wheel: the data is the package agentlab.data
_CHECKOUT = Path(__file__).resolve().parent.parent


def data_file(name: str) -> Path:
    """A file of the package's data, e.g. ``data_file("aftersales_tools.json")``."""
    # the folders are looked for first: importlib.resources costs a few ms to import, and the message catalogue
    # (agentlab/i18n.py) reads its files through here the first time any sentence is said
    for root in (_PACKAGED, _CHECKOUT / "data"):  # an installed wheel, then a checkout's data/ folder
        if root.is_dir():
            return root.joinpath(*name.split("/"))
    from importlib import resources  # anything else (a package imported from an archive): ask the import system

    try:
        return Path(str(resources.files("agentlab.data").joinpath(*name.split("/"))))
    except ModuleNotFoundError:
        return _CHECKOUT / "data" / name


def datasets_dir() -> Path:
    """The public datasets, read from the environment each time (tests and notebooks may set it)."""
    return Path(os.environ.get("AGENTLAB_DATASETS") or _CHECKOUT.parent / "shared" / "datasets")


# Fonts that can draw Chinese labels, by family name, and the files looked for directly: matplotlib's font cache
# is built the first time it runs, so a font installed after that (Debian's fonts-wqy-zenhei in CI) is invisible
# until registered. Kept here, in the core, so that every layer that draws (the workbook, the probe's report) reads one list.
CJK_FONTS = ["WenQuanYi Zen Hei", "Noto Sans CJK SC", "Noto Sans SC", "Microsoft YaHei", "PingFang SC",
             "Heiti SC", "SimHei", "Arial Unicode MS"]
CJK_FILES = ["/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
             "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", "C:/Windows/Fonts/msyh.ttc",
             "/System/Library/Fonts/PingFang.ttc"]

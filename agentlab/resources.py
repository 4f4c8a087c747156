"""Where files live: the data shipped with the package, and the public datasets beside it.

Shipped data (the after-sales desk's orders, tools and cases, recorded model runs) is read
through :mod:`importlib.resources`, so an installed wheel finds it as well as a checkout.
The public datasets (BFCL, tau-bench, the JSON-Schema-Test-Suite) are not shipped: they
are read from ``$AGENTLAB_DATASETS``, by default ``../shared/datasets`` beside a checkout.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["CJK_FILES", "CJK_FONTS", "CJK_INSTALL", "CJK_PACKAGE", "CJK_PACKAGE_FILE", "CJK_SYSTEM_FILES", "data_file",
           "data_file_in", "datasets_dir", "read_text", "render_page"]

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


def data_file_in(name: str, lang: str) -> Path:
    """``data_file(name)`` as a reader of ``lang`` reads it: its Chinese version (``bad_tools.zh.json`` beside
    ``bad_tools.json``) for ``zh`` where there is one, else the file itself. The Chinese notebook 01 linted a schema
    whose descriptions were English, and quoted them in its Chinese findings."""
    if lang != "en":
        stem, dot, ext = name.rpartition(".")
        own = data_file(f"{stem}.{lang}.{ext}" if dot else f"{name}.{lang}")
        if own.is_file():
            return own
    return data_file(name)


#: the most a link carries in itself (:func:`data_url`): a page that holds more is slow to open, and sent again at
#: every toggle of its language
MAX_LINK_BYTES = 2_000_000


def data_url(data: bytes, kind: str) -> str | None:
    """A ``data:`` URL that carries ``data`` itself (UTF-8 text of MIME type ``kind``), for a link the browser saves
    the file from wherever the page was made; None past :data:`MAX_LINK_BYTES`, for the caller to name the file
    instead."""
    import base64
    if len(data) > MAX_LINK_BYTES:
        return None
    return f"data:{kind};charset=utf-8;base64,{base64.b64encode(data).decode()}"


def read_text(path: str | Path, what: str, error: Callable[..., Exception]) -> str:
    """A user's file as text, or ``error(key, path=..., what=..., ...)`` naming it and saying what was expected:
    a folder, a missing file, bytes that are not UTF-8 text, or one the system cannot read. ``error`` is the
    caller's own kind of bad input (a command's, a suite's, a log review's); ``what`` a catalogue key."""
    where = {"path": str(path), "what": what}
    if Path(path).is_dir():
        raise error("input.is_dir", **where)
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # a BOM (Windows Notepad saves one) is no part of the text
    except FileNotFoundError:
        raise error("input.missing", **where) from None
    except UnicodeDecodeError:
        raise error("input.not_text", **where) from None
    except OSError as exc:  # the error says why in its reader's language (agentlab.i18n.os_reason)
        raise error("input.unreadable", reason=OSError(exc.errno, exc.strerror), **where) from None  # no frames kept


def datasets_dir() -> Path:
    """The public datasets, read from the environment each time (tests and notebooks may set it)."""
    return Path(os.environ.get("AGENTLAB_DATASETS") or _CHECKOUT.parent / "shared" / "datasets")


# Fonts that can draw Chinese labels, by family name, and the files looked for directly: matplotlib's font cache
# is built the first time it runs, so a font installed after that (Debian's fonts-wqy-zenhei in CI) is invisible
# until registered. Kept here, in the core, so that every layer that draws (the workbook, the probe's report) reads one list.
# The first family is the one the workbook's install brings (CJK_PACKAGE; docs/metrics.md#chinese-labels-in-plots):
# every machine draws Chinese the same way, in a font whose coverage the tests check; a system font is the fallback.
CJK_FONTS = ["Noto Sans SC", "WenQuanYi Zen Hei", "Noto Sans CJK SC", "Microsoft YaHei", "PingFang SC",
             "Heiti SC", "SimHei", "Arial Unicode MS"]
#: The package that brings the Chinese font (Noto Sans SC, SIL Open Font License 1.1; requirements-fonts.txt pins it
#: by hash, and the workbook extra declares it), its font file, and the command that installs it.
CJK_PACKAGE = "pylopdf-fonts-zh-cn"
CJK_PACKAGE_FILE = "pylopdf_fonts_zh_cn/NotoSansSC-Regular.otf"
CJK_INSTALL = f"python -m pip install {CJK_PACKAGE}==0.1.1"


def _installed_font(relative: str) -> list[str]:
    """The font file a package installed, found on ``sys.path`` without importing the package (a few stat calls)."""
    import sys
    for entry in sys.path:
        candidate = Path(entry or ".", relative)
        try:
            if candidate.is_file():
                return [str(candidate)]
        except OSError:  # an entry this user may not enter (a working folder of another account): not there
            continue
    return []


CJK_SYSTEM_FILES = ["/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
                    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", "C:/Windows/Fonts/msyh.ttc",
                    "/System/Library/Fonts/PingFang.ttc"]
CJK_FILES = [*_installed_font(CJK_PACKAGE_FILE), *CJK_SYSTEM_FILES]


@cache
def _templates() -> Any:
    import jinja2  # with the workbook and site extras; imported on the first page rendered
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_file("templates"))), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render_page(template: str, say: Callable[..., str], /, **context: Any) -> str:
    """An HTML page from ``data/templates/<template>``, with autoescaping: escaping is the default, not a habit.

    Every ``{{ value }}`` is escaped, whether it came from a tools file, a caller, a log line or the catalogue
    (``say(key, **fields)``, the template's ``t``: a sentence in the page's language); only a value the caller
    wrapped in ``markupsafe.Markup`` (a plot's SVG, which matplotlib escaped) goes in as it is. A name the
    template does not get is an error, not an empty string, so a renamed field cannot blank a page silently.
    ``{{ colon }}`` joins a label and its value as the page's language does (a full-width colon in Chinese), and
    ``{{ aside(text) }}`` puts an aside in its brackets (full-width in Chinese)."""
    return str(_templates().get_template(template).render(
        t=say, **{"colon": say("join.colon"), "aside": lambda text: say("join.aside", text=text), **context}))

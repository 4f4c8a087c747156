"""The workbook's parts: what notebooks and the no-code app show.

    demo.py       naive against guarded on the after-sales desk, and a plain-language account
    plots.py      pure plot functions (``ax=None`` in, ``ax`` out), Chinese labels included
    widgets.py    the widgets (fault injector, playground, panels, approvals, the app)
    exercises.py  the checks behind each notebook's exercise

matplotlib and ipywidgets load only when one of these modules is imported.
"""

__all__ = ["demo", "exercises", "plots", "widgets"]  # modules, imported by name when needed

# in a kernel, a learner's own error gets a plain line under Python's (a full-width mark, Python's English said in
# the notebook's language): every notebook imports a workbook module in its first cells
from .plain_errors import install as _install

_install()

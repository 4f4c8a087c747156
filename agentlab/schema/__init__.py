"""The JSON Schema engine (temporary face while the package is split)."""
from .compiler import *  # noqa: F403
from .compiler import __all__  # noqa: F401

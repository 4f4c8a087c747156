"""Subcommands beyond check-args and lint (demo, eval), registered by name.

Kept apart so ``cli.py`` stays a page long: each entry is
``name -> (help, configure(parser), run(namespace) -> exit code)``.
"""
from __future__ import annotations

import argparse
from typing import Callable

EXTRA: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}

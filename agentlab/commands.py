"""Subcommands beyond check-args and lint (demo, eval), registered by name.

Kept apart so ``cli.py`` stays a page long: each entry is
``name -> (help, configure(parser), run(namespace) -> exit code)``.
"""
from __future__ import annotations

import argparse
from typing import Callable

EXTRA: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def _demo_configure(p: argparse.ArgumentParser) -> None:
    from .faults import FAULTS
    p.add_argument("--fault", choices=sorted(FAULTS), help="inject this fault (default: seed 000's orderId demo)")
    p.add_argument("--step", type=int, default=2, help="model turn at which a model fault is injected")
    p.add_argument("--lang", choices=("en", "zh"), default="en")


def _demo(ns: argparse.Namespace) -> int:
    from .demo import compare, trace_text
    from .faults import FAULTS
    c = compare(ns.fault, at_step=ns.step, lang=ns.lang)
    title = FAULTS[ns.fault].describe(ns.lang) if ns.fault else "seed 000: orderId -> INVALID_ARGS -> order_id"
    print(f"== {title}\n")
    for run in (c.naive, c.guarded):
        print(trace_text(run))
        print()
    print(f"{'loop':8} {'status':27} {'steps':>5} {'invalid':>7} {'refunds':>7}  reason")
    for row in c.table():
        print(f"{row['loop']:8} {row['status']:27} {row['steps']:>5} {row['invalid calls']:>7} {row['refunds']:>7}  {row['reason']}")
    return 0


EXTRA["demo"] = ("naive and guarded loops side by side on the after-sales desk", _demo_configure, _demo)

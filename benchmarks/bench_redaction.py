"""How long does rendering a hostile string take, and does it grow linearly?

A model can put a megabyte of anything into an argument, and it comes back inside the error the model reads.
For each hostile shape of ``tests/test_redaction.py`` (dots, ``a@``, SQL, URLs, keys, CJK...), this reports:

1. every rendering path at 64 KB and at 1 MB (``render_everything``), in ms, and the ratio of the two: 16 times the
   input should cost about 16 times as much (linear), never 256 (quadratic);
2. ``redact()`` and ``redact_secrets()`` on their own, uncut, at the same two sizes;
3. the did-you-mean suggestion on a 1.2 MB tool name;
4. the common case, on CPU time: what redaction costs on clean text (every ``render()`` pays it), in us per call
   (``--clean``: this section only).

The targets (a megabyte in under 1 s of CPU time; growth under 50x for 16x the input) are read here, not asserted
in tests: the tests only check that nothing hangs and that the rendered error stays short. CPU time
(``time.process_time``), not the wall clock: a loaded machine slows the clock, not the work.

Run: python run.py bench   (or: python benchmarks/bench_redaction.py [--shapes dots,sql])
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from test_redaction import SHAPES, SIZES, hostile, render_everything  # noqa: E402

from agentlab import Registry  # noqa: E402
from agentlab import errors as E  # noqa: E402
from agentlab.names import suggest  # noqa: E402

TARGET_1MB_S, TARGET_GROWTH = 1.0, 50.0


def best_of(fn, repeats: int = 3) -> float:
    """The fastest of a few runs, in seconds of CPU: the least disturbed by whatever else the machine does."""
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def row(label: str, small: float, big: float) -> tuple[str, bool]:
    growth = big / max(small, 1e-3)  # a 1 ms floor absorbs timer noise on tiny inputs
    ok = big < TARGET_1MB_S and growth <= TARGET_GROWTH
    return f"  {label:<14} 64KB {small * 1000:8.1f} ms   1MB {big * 1000:8.1f} ms   x{growth:5.1f}  {'ok' if ok else 'SLOW'}", ok


def clean_text_cost() -> None:
    """Redaction on text no rule can touch, in CPU microseconds per call (the best of seven runs)."""
    from agentlab.errors import Problem, make_error, render
    error = make_error("NOT_FOUND", message="No expense record E0012; list the records to find its id.")
    invalid = make_error("INVALID_ARGS", problems=[Problem("categroy", "unknown_field", allowed=("month", "category"),
                                                           suggestion="category")])
    data = {"record_id": "E0012", "date": "2026-10-15", "item": "taxi", "amount": 45, "category": "transport"}
    print("\nredaction on clean text, CPU us per call")
    for label, fn in [("redact_secrets('')", lambda: E.redact_secrets("")),
                      ("redact('category')", lambda: E.redact("category")),
                      ("render(success)", lambda: render(None, data=data)),
                      ("render(NOT_FOUND)", lambda: render(error)),
                      ("render(INVALID_ARGS)", lambda: render(invalid))]:  # "did not pass": one trigger, all walked
        best = float("inf")
        for _ in range(7):
            start = time.process_time()
            for _ in range(2000):
                fn()
            best = min(best, (time.process_time() - start) / 2000 * 1e6)
        print(f"  {label:<22} {best:7.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="comma-separated shapes (default: all)")
    ap.add_argument("--clean", action="store_true", help="only the cost on clean text")
    args = ap.parse_args()
    if args.clean:
        clean_text_cost()
        return 0
    shapes = args.shapes.split(",") if args.shapes else sorted(SHAPES)
    reg = Registry.from_json(ROOT / "data" / "aftersales_tools.json")
    all_ok = True
    print(f"target: 1MB under {TARGET_1MB_S:.0f} s of CPU, and at most x{TARGET_GROWTH:.0f} for 16x the input\n")
    for title, fn in [("every rendering path", lambda text: render_everything(reg, text)),
                      ("redact()", E.redact), ("redact_secrets()", E.redact_secrets)]:
        print(title)
        for shape in shapes:
            small_text, big_text = hostile(shape, SIZES["64KB"]), hostile(shape, SIZES["1MB"])
            small = best_of(lambda f=fn, x=small_text: f(x))
            big = best_of(lambda f=fn, x=big_text: f(x))
            line, ok = row(shape, small, big)
            all_ok &= ok
            print(line)
    name = "refund_order" * 100_000
    print("\ndid-you-mean on a 1.2 MB tool name: "
          f"{best_of(lambda: suggest(name, reg.names)) * 1000:.1f} ms against the tools, "
          f"{best_of(lambda: suggest(name, ['order_id', 'amount'])) * 1000:.1f} ms against two fields")
    clean_text_cost()
    print("\nall within target" if all_ok else "\nSOME SHAPES MISSED THE TARGET")
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

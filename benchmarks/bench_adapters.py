"""The same faults in each framework's real agent loop, without and with agentlab's adapter: prints the table
(docs/guards.md#guards-in-other-frameworks). Offline: a scripted model behind the test server.

    python benchmarks/bench_adapters.py [--lang zh]
"""
import sys
import time

from agentlab.adapters.compare import FRAMEWORKS, compare, installed, table

if __name__ == "__main__":
    lang = "zh" if "--lang" in sys.argv and sys.argv[-1] == "zh" else "en"
    missing = [fw for fw in FRAMEWORKS if not installed(fw)]
    if missing:
        print("not installed:", ", ".join(missing), "(pip install -r requirements-frameworks.txt)")
    t0 = time.perf_counter()
    rows = compare()
    print(table(rows, lang))
    print(f"\n{len(rows)} rows, {2 * len(rows)} agent runs in {time.perf_counter() - t0:.1f} s")

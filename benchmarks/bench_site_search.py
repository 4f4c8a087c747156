"""The skill site's search on the ask set, in both languages and with either Accept-Language (docs/site.md#search).

Prints, for the asks of ``data/skill_asks.jsonl`` (each in Chinese and in English, one expected skill, covering
every skill the site ships), how often the search puts the expected skill first and in its top 3. No model and
no server: the search runs in process on a site in a temporary folder.

Run: python benchmarks/bench_site_search.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab.evals.discovery_eval import load_skill_asks, search_hits  # noqa: E402


def main() -> None:
    asks = load_skill_asks()
    print(f"{len(asks)} asks, {len({a.skill for a in asks})} skills")
    print(f"{'asked in':<10}{'Accept-Language':<18}{'top 1':>7}{'top 3':>7}")
    for lang in ("zh", "en"):
        for header, said in (("en", "none (en)"), ("zh", "zh")):
            got = search_hits(asks, lang=lang, header=header)
            print(f"{lang:<10}{said:<18}{got['top1']:>7.0%}{got['top3']:>7.0%}")


if __name__ == "__main__":
    main()

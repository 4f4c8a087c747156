"""Make tests/data/review_reports.json: the report ``review --logs`` gives on each log of tests/test_review_speed.py.

Run from the repository root, only when a report is meant to change: the reports recorded are the reference every
speed-up of agentlab/evals/logs.py, log_review.py and otel.py must give back, byte for byte.
"""
import json
import sys
from pathlib import Path

sys.path[:0] = ["tests", "."]
import test_review_speed as ts  # noqa: E402 - the logs the reports are made of

out = {"about": "review_logs(log, fmt, tools=...) for each case of tests/test_review_speed.py; made by the code "
                "before its speed-up", "reports": {}}
tmp = Path("build/review-reports")
tmp.mkdir(parents=True, exist_ok=True)
for name, (path, fmt, tools) in ts.logs(tmp).items():
    out["reports"][name] = ts.report(path, fmt, tools)
Path("tests/data/review_reports.json").write_text(json.dumps(out, ensure_ascii=False, indent=0, sort_keys=True) + "\n",
                                                  encoding="utf-8")
print(len(out["reports"]), "reports")

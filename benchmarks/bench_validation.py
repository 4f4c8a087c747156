"""How much does full JSON Schema validation cost per call? (issue: foundation)

Compares, on the refund desk's ``create_refund`` arguments, in one run:
  * a minimal hand-written validator (required, type and enum only, as in docs/sources.md#article-000-the-refund-desk)
  * agentlab's compiled validator (all of JSON Schema we support), happy path
  * agentlab's error path, collecting the complete problem list
  * agentlab's whole boundary check (parse the raw string + validate)
  * jsonschema.validate (re-checks the schema on every call) and a pre-built jsonschema validator

Run: python run.py bench   (or: python benchmarks/bench_validation.py)
"""
from __future__ import annotations

import json
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab import Registry, compile_schema  # noqa: E402

REG = Registry.from_json(ROOT / "data" / "aftersales_tools.json")
SCHEMA = dict(REG["create_refund"].parameters)
GOOD = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
BAD = {"orderId": "A1001", "amount": "199元", "reason": "changed_mind", "remark": "x" * 300}
GOOD_RAW = json.dumps(GOOD)

_PY = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}


def handwritten(args, schema=SCHEMA):
    """The minimal validator people write first: required, type, enum, unknown fields."""
    if not isinstance(args, dict):
        return [{"field": "$", "reason": "wrong_type"}]
    props = schema["properties"]
    problems = [{"field": n, "reason": "missing"} for n in schema["required"] if n not in args]
    for name, value in args.items():
        spec = props.get(name)
        if spec is None:
            problems.append({"field": name, "reason": "unknown_field"})
            continue
        want = spec.get("type")
        if want and ((isinstance(value, bool) and want != "boolean") or not isinstance(value, _PY[want])):
            problems.append({"field": name, "reason": "wrong_type"})
        elif "enum" in spec and value not in spec["enum"]:
            problems.append({"field": name, "reason": "not_in_enum"})
    return problems


def per_call_us(fn, number=20000, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    import jsonschema

    validate = compile_schema(SCHEMA)
    prebuilt = jsonschema.Draft202012Validator(SCHEMA)
    assert handwritten(GOOD) == [] and validate(GOOD) == [] and REG.check("create_refund", GOOD_RAW).ok
    assert len(validate(BAD)) == 5

    rows = {
        "hand-written (required/type/enum)": per_call_us(lambda: handwritten(GOOD)),
        "agentlab compiled, happy path": per_call_us(lambda: validate(GOOD)),
        "agentlab compiled, error path (5 problems)": per_call_us(lambda: validate(BAD)),
        "agentlab check(): parse + validate raw string": per_call_us(lambda: REG.check("create_refund", GOOD_RAW)),
        "json.loads + hand-written": per_call_us(lambda: handwritten(json.loads(GOOD_RAW))),
        "jsonschema, pre-built validator": per_call_us(lambda: list(prebuilt.iter_errors(GOOD)), number=2000),
        "jsonschema.validate (schema re-checked)": per_call_us(lambda: jsonschema.validate(GOOD, SCHEMA), number=200, repeat=5),
    }
    base = rows["hand-written (required/type/enum)"]
    print("validation cost per call, create_refund (min of repeats)")
    for name, us in rows.items():
        print(f"  {name:48s} {us:9.2f} us   {us / base:7.2f}x hand-written")
    happy = rows["agentlab compiled, happy path"]
    print(f"  target: happy path within 3x of hand-written -> {happy / base:.2f}x "
          f"({'met' if happy / base <= 3 else 'MISSED'})")
    err = rows["agentlab compiled, error path (5 problems)"]
    print(f"  target: error path under 50 us -> {err:.1f} us ({'met' if err < 50 else 'MISSED'})")
    print(f"  jsonschema.validate / agentlab happy path: {rows['jsonschema.validate (schema re-checked)'] / happy:.0f}x")


if __name__ == "__main__":
    main()

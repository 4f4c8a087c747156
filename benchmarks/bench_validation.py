"""How much does full JSON Schema validation cost per call, every keyword of draft 2020-12 enforced?

One run reports, in microseconds per call (min of repeats):

1. On the refund desk's ``create_refund`` arguments, as before: a minimal hand-written validator
   (required, type and enum only, as in docs/sources.md#article-000-the-refund-desk), agentlab's
   compiled validator (happy path, and the error path with the complete problem list), the whole
   boundary check (parse the raw string + validate), and ``jsonschema.validate``.
2. On common tool schemas (``create_refund`` and four of the expense desk's tools), agentlab's
   compiled path as a ratio to ``fastjsonschema`` (generated code; stops at the first error) and to
   jsonschema's pre-built validator collecting every error (``list(iter_errors(x))``, the same
   complete list agentlab returns), happy path and error path.
3. The delegated path (``create_refund`` closed with ``unevaluatedProperties: false``, which goes
   to jsonschema) against jsonschema's own pre-built validator on the same schema: the cost of
   mapping its errors to agentlab's problems.
4. The error path against jsonschema's full error list (``list(validator.iter_errors(x))``), on CPU time
   (``time.process_time``) in one interleaved run (the two sides alternate, so a loaded machine slows
   both alike): the expense desk's invalid calls (a misspelt field asks for a did-you-mean) and a tool
   with 500 fields. Target: ours never slower.

Run: python run.py bench   (or: python benchmarks/bench_validation.py)
"""
from __future__ import annotations

import json
import sys
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentlab import Registry, compile_schema  # noqa: E402

REG = Registry.from_json(ROOT / "data" / "aftersales_tools.json")
EXPENSE = Registry.from_json(ROOT / "data" / "expense_tools.json")
SCHEMA = dict(REG["create_refund"].parameters)
GOOD = {"order_id": "A1001", "amount": 199.0, "reason": "user_cancel"}
BAD = {"orderId": "A1001", "amount": "199元", "reason": "changed_mind", "remark": "x" * 300}
GOOD_RAW = json.dumps(GOOD)

# (registry, tool, a call that passes, a call with several mistakes a model makes)
CASES = [
    (REG, "create_refund", GOOD, BAD),
    (EXPENSE, "book_expense_record", {"date": "2026-10-15", "item": "taxi", "amount": 45, "category": "transport"},
     {"date": "2026-10-32", "item": "", "amount": "45元", "category": "taxi", "note": "x"}),
    (EXPENSE, "list_expense_records", {"month": "2026-10", "category": "food"}, {"month": "2026-13", "categroy": "food"}),
    (EXPENSE, "get_expense_record", {"record_id": "E0012"}, {"recordId": "E12"}),
    (EXPENSE, "set_budget", {"category": "food", "month": "2026-10", "amount": 1500},
     {"category": "meals", "month": "10/2026", "amount": -5}),
]

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


def first_error(fast):
    """fastjsonschema raises at the first error: catching it is its error path."""
    import fastjsonschema

    def run(x):
        try:
            fast(x)
        except fastjsonschema.JsonSchemaException:
            return 1
        return 0
    return run


def refund_rows() -> None:
    import jsonschema

    validate = compile_schema(SCHEMA)
    assert handwritten(GOOD) == [] and validate(GOOD) == [] and REG.check("create_refund", GOOD_RAW).ok
    assert len(validate(BAD)) == 5
    rows = {
        "hand-written (required/type/enum)": per_call_us(lambda: handwritten(GOOD)),
        "agentlab compiled, happy path": per_call_us(lambda: validate(GOOD)),
        "agentlab compiled, error path (5 problems)": per_call_us(lambda: validate(BAD)),
        "agentlab check(): parse + validate raw string": per_call_us(lambda: REG.check("create_refund", GOOD_RAW)),
        "json.loads + hand-written": per_call_us(lambda: handwritten(json.loads(GOOD_RAW))),
        "jsonschema.validate (schema re-checked)": per_call_us(lambda: jsonschema.validate(GOOD, SCHEMA), number=200, repeat=5),
    }
    base = rows["hand-written (required/type/enum)"]
    print("1. validation cost per call, create_refund (min of repeats)")
    for name, us in rows.items():
        print(f"  {name:48s} {us:9.2f} us   {us / base:7.2f}x hand-written")
    happy = rows["agentlab compiled, happy path"]
    print(f"  target: happy path within 3x of hand-written -> {happy / base:.2f}x "
          f"({'met' if happy / base <= 3 else 'MISSED'})")
    err = rows["agentlab compiled, error path (5 problems)"]
    print(f"  target: error path under 50 us -> {err:.1f} us ({'met' if err < 50 else 'MISSED'})")
    print(f"  jsonschema.validate / agentlab happy path: {rows['jsonschema.validate (schema re-checked)'] / happy:.0f}x")


def compiled_vs_others() -> None:
    import fastjsonschema
    import jsonschema

    print("\n2. agentlab compiled vs fastjsonschema and jsonschema's pre-built validator (all errors), us per call")
    print(f"  {'tool':22s} {'path':6s} {'agentlab':>9s} {'fastjs':>9s} {'jsonschema':>10s} {'x fastjs':>9s} {'jsonschema/x':>12s}")
    ratios_fast, ratios_js = [], []
    for reg, name, good, bad in CASES:
        schema = dict(reg[name].parameters)
        ours = compile_schema(schema)
        fast = first_error(fastjsonschema.compile(schema))
        prebuilt = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        assert ours(good) == [] and fast(good) == 0 and prebuilt.is_valid(good), name
        assert ours(bad) and fast(bad) == 1 and not prebuilt.is_valid(bad), name
        for path, x in (("happy", good), ("error", bad)):
            a = per_call_us(lambda x=x, ours=ours: ours(x), number=5000, repeat=5)
            f = per_call_us(lambda x=x, fast=fast: fast(x), number=5000, repeat=5)
            j = per_call_us(lambda x=x, v=prebuilt: list(v.iter_errors(x)), number=1000, repeat=5)
            ratios_fast.append(a / f)
            ratios_js.append(j / a)
            print(f"  {name:22s} {path:6s} {a:9.2f} {f:9.2f} {j:10.2f} {a / f:8.2f}x {j / a:11.1f}x")
    print(f"  agentlab / fastjsonschema: {min(ratios_fast):.2f}x to {max(ratios_fast):.2f}x "
          f"(fastjsonschema stops at the first error; agentlab lists them all)")
    print(f"  jsonschema iter_errors / agentlab: {min(ratios_js):.1f}x to {max(ratios_js):.1f}x")


def delegated_vs_jsonschema() -> None:
    import jsonschema

    schema = {k: v for k, v in SCHEMA.items() if k != "additionalProperties"} | {"unevaluatedProperties": False}
    ours = compile_schema(schema)
    prebuilt = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    assert ours(GOOD) == [] and {p.field for p in ours(BAD)} >= {"order_id", "orderId", "remark"}
    print("\n3. the delegated path (create_refund with unevaluatedProperties: false), us per call")
    for path, x in (("happy", GOOD), ("error", BAD)):
        a = per_call_us(lambda x=x: ours(x), number=1000, repeat=5)
        j = per_call_us(lambda x=x: list(prebuilt.iter_errors(x)), number=1000, repeat=5)
        print(f"  {path:6s} agentlab delegated {a:8.2f}   jsonschema iter_errors {j:8.2f}   ratio {a / j:.2f}x")


def interleaved_cpu_us(sides: dict, rounds: int = 30, number: int = 200) -> dict:
    """CPU microseconds per call for each side, the sides taking turns ``rounds`` times (min over rounds)."""
    best = {name: float("inf") for name in sides}
    for _ in range(rounds):
        for name, fn in sides.items():
            start = time.process_time()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.process_time() - start) / number * 1e6)
    return best


WIDE = {"type": "object", "additionalProperties": False, "required": ["field_0_alpha"],
        "properties": {f"field_{i}_{w}": {"type": "string"}
                       for i, w in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"] * 100)}}


def error_path_vs_jsonschema() -> None:
    import jsonschema

    cases = [(name, dict(EXPENSE[name].parameters), bad) for reg, name, _, bad in CASES if reg is EXPENSE]
    cases.append(("book_expense_record + typo", dict(EXPENSE["book_expense_record"].parameters),
                  {"date": "2026-10-15", "item": "taxi", "amuont": 45, "category": "transport"}))
    cases.append(("500 fields, one misspelt", WIDE, {"field_0_alpha": "x", "feild_7_gama": "y"}))
    cases.append(("500 fields, one unknown", WIDE, {"field_0_alpha": "x", "colour": "y"}))
    from agentlab import names

    print("\n4. the error path, CPU us per call, one interleaved run: agentlab (every problem, with did-you-mean)"
          " vs jsonschema's full error list")
    print("  'again': the same invalid call resent (a model retrying: its typo's suggestion is remembered);"
          " 'first': a name never seen (no memory: the suggestion computed afresh)")
    print(f"  {'case':34s} {'again':>7s} {'first':>7s} {'jsonschema':>10s} {'ratio again':>11s} {'first':>6s}")
    worst = worst_first = 0.0
    for name, schema, bad in cases:
        ours = compile_schema(schema)
        prebuilt = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        assert ours(bad) and list(prebuilt.iter_errors(bad)), name
        unknown = [k for k in bad if k not in schema.get("properties", {})]
        fields = list(schema.get("properties", {}))

        ix = names._index(tuple(fields))  # what the schema's suggester holds from compile time

        def first(o=ours, b=bad, u=unknown, ix=ix):  # the call, plus each unknown name's suggestion from nothing
            for k in u:
                names._suggest(k, ix)  # what the suggester computes for a name it has not answered before
            o(b)

        us = interleaved_cpu_us({"ours": lambda o=ours, b=bad: o(b), "first": first,
                                 "js": lambda v=prebuilt, b=bad: list(v.iter_errors(b))},
                                number=50 if "500" in name else 200)
        ratio, ratio_first = us["ours"] / us["js"], us["first"] / us["js"]
        worst, worst_first = max(worst, ratio), max(worst_first, ratio_first)
        print(f"  {name:34s} {us['ours']:7.1f} {us['first']:7.1f} {us['js']:10.1f} {ratio:10.2f}x {ratio_first:5.2f}x")
    print(f"  target: never slower than jsonschema -> worst {worst:.2f}x resent ({'met' if worst <= 1 else 'MISSED'}), "
          f"{worst_first:.2f}x on a name never seen ({'met' if worst_first <= 1 else 'MISSED'})")


def main() -> None:
    if sys.argv[1:] == ["errors"]:  # python benchmarks/bench_validation.py errors: section 4 only
        error_path_vs_jsonschema()
        return
    refund_rows()
    compiled_vs_others()
    delegated_vs_jsonschema()
    error_path_vs_jsonschema()


if __name__ == "__main__":
    main()

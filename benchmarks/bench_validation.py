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
   (``time.process_time``) in one interleaved run (the sides alternate, so a loaded machine slows
   them alike): the expense desk's invalid calls and a tool with 500 fields, each round with a fresh
   random misspelling of one of the tool's real field names (a seeded ``random.Random``: a misspelt
   field asks for a did-you-mean, and a fixed typo would measure one lucky or unlucky name); medians
   and p90 over the rounds. Target: ours never slower.

Run: python run.py bench   (or: python benchmarks/bench_validation.py; ``errors [rounds]``: section 4 only)
"""
from __future__ import annotations

import gc
import json
import os
import random
import statistics
import string
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


def load() -> str:
    """The 1-minute load average, as every figure here is printed with it."""
    return f"load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "load average unknown"


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
    print(f"1. validation cost per call, create_refund (min of repeats; {load()})")
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

    print(f"\n2. agentlab compiled vs fastjsonschema and jsonschema's pre-built validator (all errors), us per call ({load()})")
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
    print(f"\n3. the delegated path (create_refund with unevaluatedProperties: false), us per call ({load()})")
    for path, x in (("happy", GOOD), ("error", BAD)):
        a = per_call_us(lambda x=x: ours(x), number=1000, repeat=5)
        j = per_call_us(lambda x=x: list(prebuilt.iter_errors(x)), number=1000, repeat=5)
        print(f"  {path:6s} agentlab delegated {a:8.2f}   jsonschema iter_errors {j:8.2f}   ratio {a / j:.2f}x")


def percentile(values, q: float) -> float:
    """The q-th quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


WIDE = {"type": "object", "additionalProperties": False, "required": ["field_0_alpha"],
        "properties": {f"field_{i}_{w}": {"type": "string"}
                       for i, w in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"] * 100)}}
ROUNDS = 30


def misspell(name: str, rng: random.Random, taken) -> str:
    """A typo of ``name`` a model might write: two letters swapped, one dropped, doubled or replaced; never a real field."""
    while True:
        i = rng.randrange(len(name))
        edit = rng.choice(("swap", "drop", "double", "replace"))
        if edit == "swap" and i + 1 < len(name):
            typo = name[:i] + name[i + 1] + name[i] + name[i + 2:]
        elif edit == "drop" and len(name) > 3:
            typo = name[:i] + name[i + 1:]
        elif edit == "double":
            typo = name[:i] + name[i] + name[i:]
        else:
            typo = name[:i] + rng.choice(string.ascii_lowercase) + name[i + 1:]
        if typo != name and typo not in taken:
            return typo


def with_typo(call: dict, real: str, schema: dict, rng: random.Random) -> dict:
    """``call`` with the field ``real`` (a real field name) written as a fresh misspelling."""
    typo = misspell(real, rng, set(schema.get("properties", {})) | set(call))
    return {(typo if k == real else k): v for k, v in call.items()}


def unknown_name(rng: random.Random, taken) -> str:
    while True:
        name = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9)))
        if name not in taken:
            return name


def error_path_vs_jsonschema(rounds: int = ROUNDS, seed: int = 4) -> None:
    import jsonschema

    from agentlab import names

    rng = random.Random(seed)
    # (case, schema, the invalid call of a round): the calls that misspell a field get a fresh misspelling each
    # round, of the same real field; the others (camelCase, wrong values, out of enum) stay as they are
    def fixed(bad):
        return lambda s: bad

    def typo_of(call, real):
        return lambda s: with_typo(call, real, s, rng)

    # (name, schema, a call maker, whether each call it makes holds a name never sent before)
    cases = [(name, dict(EXPENSE[name].parameters), fixed(bad), False) for reg, name, _, bad in CASES if reg is EXPENSE]
    cases[1] = (cases[1][0], cases[1][1], typo_of({"month": "2026-13", "category": "food"}, "category"), True)
    cases.append(("book_expense_record + typo", dict(EXPENSE["book_expense_record"].parameters),
                  typo_of({"date": "2026-10-15", "item": "taxi", "amount": 45, "category": "transport"}, "amount"), True))
    wide = [f for f in WIDE["properties"] if f != "field_0_alpha"]
    cases.append(("500 fields, one misspelt", WIDE,
                  lambda s: with_typo({"field_0_alpha": "x", (f := rng.choice(wide)): "y"}, f, s, rng), True))
    cases.append(("500 fields, one unknown", WIDE,
                  lambda s: {"field_0_alpha": "x", unknown_name(rng, s["properties"]): "y"}, True))
    assert cases[1][0] == "list_expense_records"

    print(f"\n4. the error path, CPU us per call (time.process_time), {rounds} interleaved rounds: agentlab (every problem,"
          f" with did-you-mean) vs jsonschema's full error list; each round a fresh misspelling of a real field"
          f" (random.Random({seed})); medians and p90 over rounds, ratios the median of each round's ratio")
    print("  'again': the same invalid call resent (a model retrying: its typo's suggestion is remembered);"
          " 'first': a name never seen (no memory: the suggestion computed afresh)")
    print(f"  {'case':28s} {'again':>12s} {'first':>12s} {'jsonschema':>12s} {'ratio again':>11s} {'first':>6s}"
          f"  (median / p90)")
    worst = worst_first = 0.0
    wide_first = []  # the 500-field cases' never-seen ratios: the issue's row
    for name, schema, fresh, new_names in cases:
        ours = compile_schema(schema)
        prebuilt = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        ix = names._index(tuple(schema.get("properties", {})))  # what the schema's suggester holds from compile time
        number = 50 if "500" in name else 200
        us: dict[str, list[float]] = {"ours": [], "first": [], "js": []}
        # A validator per round, compiled here and the garbage collected once: compiling one and collecting (which
        # also empties the interpreter's free lists of tuples, floats and dicts) inside the rounds left each round's
        # timed calls as cold as a fresh process's, which is not how a long-lived validator meets a new name
        unused = [compile_schema(schema) for _ in range(rounds)]
        gc.collect()
        loads = []
        for rnd in range(rounds):
            # every call of the round its own: a misspelling or an unknown name never sent before, each time (one
            # name timed 50 times was a name seen 49 times: the CPU's caches and branches had learnt it)
            calls = [fresh(schema) for _ in range(number)]
            if new_names:  # each name once: a field has only so many misspellings of one edit (223 of "category")
                calls = list({json.dumps(b, sort_keys=True): b for b in calls}.values())
            bad = calls[0]
            assert ours(bad) and list(prebuilt.iter_errors(bad)), (name, bad)
            unknown = [k for k in bad if k not in schema.get("properties", {})]
            # a validator of its own each round (compiled before the rounds), its suggester's memory empty: a name
            # it was asked in an earlier round (the suggester remembers 256) would be answered from memory, not
            # computed. Both sides are warmed on the round's first tenth of calls, which are left out
            fresh_ours = unused.pop()
            warm = max(1, len(calls) // 10) if new_names and len(calls) > 1 else 0
            for b in calls[:warm] or [bad]:
                fresh_ours(b)
                list(prebuilt.iter_errors(b))
            timed = calls[warm:]

            def first(cs=timed, u=unknown, o=fresh_ours, ix=ix, new=new_names):
                if new:  # each call's names never seen: the validator computes every suggestion from nothing
                    for b in cs:
                        o(b)
                    return
                for b in cs:  # the same call each time (a camelCase name...): its suggestion asked from nothing
                    for k in u:
                        names._suggest(k, ix)
                    o(b)

            def js(cs=timed, v=prebuilt):
                for b in cs:
                    list(v.iter_errors(b))

            def again(b=bad, o=ours, n=number):  # one invalid call resent: its suggestion remembered
                for _ in range(n):
                    o(b)

            sides = [("ours", again, number), ("first", first, len(timed)), ("js", js, len(timed))]
            for side, fn, count in sides[rnd % 3:] + sides[:rnd % 3]:  # the order rotates from round to round
                start = time.process_time()
                fn()
                us[side].append((time.process_time() - start) / count * 1e6)
            loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
        ratio = statistics.median(o / j for o, j in zip(us["ours"], us["js"], strict=True))
        ratio_first = statistics.median(f / j for f, j in zip(us["first"], us["js"], strict=True))
        worst, worst_first = max(worst, ratio), max(worst_first, ratio_first)
        if "500" in name:
            wide_first.append(ratio_first)
        cells = " ".join(f"{statistics.median(us[k]):5.1f} / {percentile(us[k], 0.9):4.1f}" for k in ("ours", "first", "js"))
        print(f"  {name:28s} {cells} {ratio:10.2f}x {ratio_first:5.2f}x   load {min(loads):.1f}-{max(loads):.1f}")
    print(f"  target: never slower than jsonschema -> worst {worst:.2f}x resent ({'met' if worst <= 1 else 'MISSED'}), "
          f"{worst_first:.2f}x on a name never seen ({'met' if worst_first <= 1 else 'MISSED'})")
    target_line("error path, never-seen name, 500 fields, vs jsonschema", max(wide_first), 1.0)
    target_line("error path, every case, never-seen name, vs jsonschema", worst_first, 1.0)
    target_line("error path, every case, resent, vs jsonschema", worst, 1.0)


def target_line(what: str, ratio: float, most: float) -> None:
    """One row for run.py bench's table of targets: ``target | what | measured | target | met | load``."""
    one = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"target | {what} | {ratio:.2f}x | <= {most:.2f}x | {'yes' if ratio <= most else 'no'} | load {one:.2f}")


def main() -> None:
    if sys.argv[1:2] == ["errors"]:  # python benchmarks/bench_validation.py errors [rounds]: section 4 only
        error_path_vs_jsonschema(int(sys.argv[2]) if len(sys.argv) > 2 else ROUNDS)
        return
    refund_rows()
    compiled_vs_others()
    delegated_vs_jsonschema()
    error_path_vs_jsonschema()


if __name__ == "__main__":
    main()

"""BFCL: thousands of real function docs and ground-truth calls nobody here wrote.

Conversion: BFCL type names map to JSON Schema (``from_legacy_types``) and every
object rejects unknown fields. A ground-truth call takes the first accepted
value per argument; an argument whose first accepted value is ``""`` (or that
has none) is optional and left out. With that, every expected call validates
except the 50 upstream answers listed in ``derived/gt_not_schema_valid.json``,
which must fail with the causes listed there.
"""
import ast
import json
from collections import Counter
from functools import cache

import pytest
from conftest import DATASETS, need

from agentlab import Registry
from agentlab.names import to_camel

BFCL = DATASETS / "bfcl"
MT_FILES = {"GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api", "MessageAPI": "message_api",
            "TwitterAPI": "posting_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
            "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control"}


def _first(accepted):
    value = accepted[0] if isinstance(accepted, list) and accepted else accepted
    return _inner(value)


def _inner(value):
    if isinstance(value, dict):
        return {k: _first(v) for k, v in value.items() if not _omitted(v)}
    if isinstance(value, list):
        return [_inner(x) if isinstance(x, dict) else x for x in value]
    return value


def _omitted(accepted):
    return isinstance(accepted, list) and (not accepted or accepted[0] == "")


@cache
def _mt_docs(cls):
    path = BFCL / "multi_turn_func_doc" / f"{MT_FILES[cls]}.json"
    return {d["name"]: d for d in map(json.loads, path.read_text().splitlines())}


def _parse_call(text, docs):
    call = ast.parse(text, mode="eval").body
    name = call.func.id if isinstance(call.func, ast.Name) else ast.unparse(call.func)
    params = list(docs[name]["parameters"].get("properties", {}))
    args = {params[i]: ast.literal_eval(a) for i, a in enumerate(call.args)}
    args.update({kw.arg: ast.literal_eval(kw.value) for kw in call.keywords})
    return name, args


@cache
def expected_calls():
    """[(id, category, registry, name, args)] for every ground-truth call."""
    out = []
    for answers in sorted((BFCL / "possible_answer").glob("*.json")):
        cat = answers.stem.replace("BFCL_v4_", "")
        entries = {e["id"]: e for e in map(json.loads, (BFCL / "data" / answers.name).read_text().splitlines())}
        for gt in map(json.loads, answers.read_text().splitlines()):
            entry = entries[gt["id"]]
            if cat.startswith("multi_turn"):
                docs = {}
                for cls in entry["involved_classes"]:
                    docs.update(_mt_docs(cls))
                reg = Registry.from_specs(list(docs.values()), legacy_types=True)
                for turn in gt["ground_truth"]:
                    for text in turn:
                        name, args = _parse_call(text, docs)
                        out.append((gt["id"], cat, reg, name, args))
            else:
                reg = Registry.from_specs(entry["function"], legacy_types=True)
                for call in gt["ground_truth"]:
                    (name, accepted), = call.items()
                    out.append((gt["id"], cat, reg, name, {k: _first(v) for k, v in accepted.items() if not _omitted(v)}))
    return out


@pytest.fixture(scope="module")
def calls():
    need(BFCL, "BFCL dataset")
    return expected_calls()


@pytest.fixture(scope="module")
def valid_calls(calls):
    return [c for c in calls if c[2].check(c[3], json.dumps(c[4])).ok]


@pytest.fixture(scope="module")
def known_bad():
    need(BFCL, "BFCL dataset")
    return {(x["id"], x["function"]): x for x in json.loads((BFCL / "derived" / "gt_not_schema_valid.json").read_text())}


def test_every_function_doc_registers():
    need(BFCL, "BFCL dataset")
    n = 0
    for f in list((BFCL / "data").glob("*.json")):
        for entry in map(json.loads, f.read_text().splitlines()):
            if "function" in entry:
                n += len(Registry.from_specs(entry["function"], legacy_types=True))
    for f in (BFCL / "multi_turn_func_doc").glob("*.json"):
        n += len(Registry.from_specs(list(map(json.loads, f.read_text().splitlines())), legacy_types=True))
    assert n >= 6660 + 162


def test_expected_calls_validate_except_the_listed_50(calls, known_bad):
    valid, invalid = 0, {}
    for cid, _cat, reg, name, args in calls:
        checked = reg.check(name, json.dumps(args))
        if checked.ok:
            valid += 1
        else:
            invalid[(cid, name)] = {p.reason for p in checked.error.problems}
    assert set(invalid) == set(known_bad)
    for key, reasons in invalid.items():
        assert reasons == set(known_bad[key]["causes"]), key
    print(f"\nBFCL expected calls: {len(calls)}, valid {valid}, invalid {len(invalid)} (all listed upstream)")
    assert valid == len(calls) - len(known_bad)


def _mutations(reg, name, args):
    """Yield (kind, tool name, raw arguments, check(result) -> bool)."""
    schema = reg[name].parameters
    props, required = schema.get("properties", {}), schema.get("required", [])
    raw = json.dumps(args)
    for field in required:
        if field in args:
            mutated = {k: v for k, v in args.items() if k != field}
            yield "missing", name, json.dumps(mutated), lambda e, f=field: ("missing", f) in _found(e)
    for field in args:
        camel = to_camel(field)
        if camel != field and camel not in props:
            mutated = {(camel if k == field else k): v for k, v in args.items()}
            yield "camelCase", name, json.dumps(mutated), lambda e, f=field, c=camel: (
                e is not None and any(p.field == c and p.reason == "unknown_field" and p.suggestion == f for p in e.problems))
    for field, _value in args.items():
        spec = props.get(field, {})
        t = spec.get("type")
        wrong = {"string": 12345, "integer": "12", "number": "1.5", "boolean": "yes", "array": "x", "object": "x"}.get(t)
        if wrong is not None:
            yield "wrong_type", name, json.dumps({**args, field: wrong}), lambda e, f=field: ("wrong_type", f) in _found(e)
        if t == "integer":
            yield "bool_for_int", name, json.dumps({**args, field: True}), lambda e, f=field: ("wrong_type", f) in _found(e)
        if "enum" in spec and t in ("string", None):
            yield "not_in_enum", name, json.dumps({**args, field: "__not_an_option__"}), \
                lambda e, f=field: ("not_in_enum", f) in _found(e)
    yield "truncated", name, raw[:-1], lambda e: e is not None and e.code == "BAD_JSON"
    yield "unknown_tool", name + "_v2", raw, lambda e: e is not None and e.code == "UNKNOWN_TOOL"


def _found(error):
    return set() if error is None else {(p.reason, p.field) for p in error.problems}


def test_systematic_mutations_are_each_caught(valid_calls):
    counts, missed = Counter(), []
    for cid, _cat, reg, name, args in valid_calls:
        for kind, tool, raw, ok in _mutations(reg, name, args):
            counts[kind] += 1
            checked = reg.check(tool, raw)
            if not ok(checked.error):
                missed.append((cid, kind, raw))
    print("\nBFCL mutations:", dict(counts), "total", sum(counts.values()))
    assert not missed, missed[:5]
    assert counts["truncated"] == counts["unknown_tool"] == len(valid_calls)
    assert min(counts.values()) > 500


def test_applying_the_camel_case_suggestion_makes_the_call_valid(valid_calls):
    fixed = 0
    for _cid, _cat, reg, name, args in valid_calls:
        props = reg[name].parameters.get("properties", {})
        for field in args:
            camel = to_camel(field)
            if camel == field or camel in props:
                continue
            mutated = {(camel if k == field else k): v for k, v in args.items()}
            err = reg.check(name, json.dumps(mutated)).error
            hint = next(p.suggestion for p in err.problems if p.reason == "unknown_field")
            repaired = {(hint if k == camel else k): v for k, v in mutated.items()}
            assert reg.check(name, json.dumps(repaired)).ok
            fixed += 1
    assert fixed > 1000


def test_the_graders_registry_holds_the_tools_from_specs_would_build():
    """Built in one pass (each schema compiled once): the same closed schemas and verdicts as Registry.from_specs."""
    from agentlab.evals.bfcl import _registry
    from agentlab.tools import Registry
    specs = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {
                 "type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
                 "required": ["a"]}}},
             {"name": "g", "parameters": {"type": "object", "properties": {}}}, {"type": "function", "function": {"name": "h"}}]
    ours, theirs = _registry(specs), Registry.from_specs(specs)
    assert [(t.name, t.description, t.parameters) for t in ours] == [(t.name, t.description, t.parameters) for t in theirs]
    for name, args in [("f", '{"a": {"b": 1}}'), ("f", '{"a": {"b": 1, "c": 2}}'), ("f", "{}"), ("g", '{"x": 1}'), ("h", "{}")]:
        assert ours.check(name, args).ok == theirs.check(name, args).ok, (name, args)
    assert ours["f"].fn(a={"b": 1}) == {"ok": True}

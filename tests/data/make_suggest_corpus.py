"""Make tests/data/suggest_corpus.json: candidate lists, misspellings of them, and what suggest() answers.

Run from the repository root (it reads the BFCL dataset), only to widen the corpus: the answers recorded are
the reference every later change to agentlab/names.py must give back.
"""
import json
import random
import sys
from pathlib import Path

sys.path[:0] = ["tests", "."]
import test_suggest as ts  # noqa: E402 - the BFCL sets and the rewordings the suggestion tests use

from agentlab import Registry  # noqa: E402
from agentlab.names import suggest  # noqa: E402

rng = random.Random(23)
groups = []
for f in ("aftersales_tools.json", "expense_tools.json"):
    reg = Registry.from_json(Path("data") / f)
    groups.append(sorted(reg.names))
    for n in reg.names:
        props = list(reg[n].parameters.get("properties", {}))
        if len(props) >= 2:
            groups.append(props)
groups.append([f"field_{i}_{w}" for i, w in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"] * 100)])
verbs = ["get", "list", "create", "update", "delete", "search", "send", "book", "cancel", "fetch", "set"]
nouns = ["order", "refund", "user", "invoice", "expense", "record", "budget", "flight", "hotel", "ticket", "message",
         "payment", "customer", "account", "report", "category", "product", "review", "address", "shipment"]
groups.append(sorted({f"{v}_{n}{s}" for v in verbs for n in nouns for s in ("", "s")})[:300])  # past _CAP
tools, fields = ts.bfcl_name_groups()
groups += [list(g) for g in rng.sample(tools, 60)] + [list(g) for g in rng.sample(fields, 60)]
groups += [list(g) for g in sorted(tools, key=len)[-3:]]  # the longest lists of tools offered together

letters = "abcdefghijklmnopqrstuvwxyz"


def typos(name):
    out = set()
    for _ in range(4):
        x = list(name)
        for _ in range(rng.choice((1, 1, 2))):
            op, i = rng.randrange(4), rng.randrange(len(x))
            if op == 0:
                x[i] = rng.choice(letters)
            elif op == 1:
                x.insert(i, rng.choice(letters))
            elif op == 2 and len(x) > 2:
                del x[i]
            elif i + 1 < len(x):
                x[i], x[i + 1] = x[i + 1], x[i]
        out.add("".join(x))
    return out


cases = []
for gi, g in enumerate(groups):
    names = g if len(g) <= 40 else rng.sample(g, 40)
    queries = set()
    for name in names:
        queries |= {u for _, u in ts.rewordings(name) + ts.hard_rewordings(name)}
        queries |= typos(name)
        queries |= {name.upper(), ts.to_camel(name), name.replace("_", "-")}
    queries |= {"colour", "zzzz_qqq", "x", "note", "amount_yuan", "orderId", "recordId", "feild_7_gama", "categroy"}
    for q in sorted(queries - set(g)):
        cases.append([gi, q, suggest(q, g)])
out = {"about": "suggest(query, groups[i]) for each [i, query, answer]; made by the code before its speed-up",
       "groups": groups, "cases": cases}
Path("tests/data/suggest_corpus.json").write_text(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n")
print(len(groups), "groups", len(cases), "cases", sum(c[2] is not None for c in cases), "suggested")

""""Did you mean": only when one name is clearly meant, never pointing the wrong way.

A model follows a suggestion, so a wrong one costs a wrong call; no suggestion
costs nothing (every tool or field is still listed). Candidates are ranked by the
words they share with the unknown name (snake/camel/kebab split, plurals folded,
the common verb synonyms merged, word order ignored), then by characters.

The BFCL part rewords thousands of real tool and parameter names the way models
do (get -> fetch/retrieve, create -> add/make, delete -> remove, verb and object
swapped, words reordered) and measures how often a suggestion is given and how
often it is the name that was reworded.
"""
import json
import random
import re
from functools import cache

import pytest
from conftest import DATASETS, ROOT, need

from agentlab import Registry
from agentlab.names import name_words, suggest, to_camel

BFCL = DATASETS / "bfcl"


@pytest.fixture(scope="module")
def reg():
    return Registry.from_json(ROOT / "data" / "aftersales_tools.json")


def test_refund_order_points_to_create_refund(reg):
    err = reg.unknown_tool("refund_order")
    assert err.extra["did_you_mean"] == "create_refund"
    assert "'create_refund'" in err.to_dict()["hint"]


@pytest.mark.parametrize("name,expected", [
    ("fetch_order", "get_order"), ("add_refund", "create_refund"), ("creat_refund", "create_refund"),
    ("getOrder", "get_order"), ("order_get", "get_order"), ("refunds_create", "create_refund"),
    ("escalate", "escalate_to_human"), ("human_escalation", "escalate_to_human"), ("search_order", "search_orders"),
    ("cancel_order", None), ("delete_user", None), ("x", None),
])
def test_unknown_tool_suggestions(reg, name, expected):
    assert reg.unknown_tool(name).extra.get("did_you_mean") == expected


def test_no_suggestion_when_two_candidates_tie():
    names = ["create_user", "delete_user", "create_group"]
    assert suggest("get_user", names) is None  # both *_user share one word: pointing at either may be wrong
    assert suggest("add_user", names) == "create_user"


@pytest.mark.parametrize("name,allowed,expected", [
    ("orderId", ["order_id"], "order_id"), ("OrderID", ["order_id", "amount"], "order_id"),
    ("order-id", ["order_id"], "order_id"), ("ordr_id", ["order_id", "amount"], "order_id"),
    ("refund_amount", ["order_id", "amount", "reason"], "amount"),
    ("id_order", ["order_id", "user_id"], "order_id"),
    ("id", ["order_id", "user_id"], None),  # both share the word: no guess
    ("zzz", ["order_id"], None), ("amt", ["amount", "order_id"], None),
])
def test_field_suggestions(name, allowed, expected):
    assert suggest(name, allowed) == expected


def test_unknown_field_problem_uses_the_same_ranking():
    reg = Registry.from_specs([{"name": "f", "parameters": {"type": "object", "properties": {
        "user_id": {"type": "string"}, "order_id": {"type": "string"}}}}])
    problems = reg.check("f", {"id": "1"}).error.problems
    assert problems[0].reason == "unknown_field" and problems[0].suggestion is None
    problems = reg.check("f", {"orderId": "1"}).error.problems
    assert problems[0].suggestion == "order_id"


def test_name_words():
    assert name_words("getOrderDetails") == ["get", "order", "detail"]
    assert name_words("fetch-user_IDs") == ["get", "user", "id"]
    assert name_words("HTTPServerStatus") == ["http", "server", "status"]


# --- BFCL: reworded real names -------------------------------------------------------------
# The rewordings the issue names. get/fetch/retrieve, create/add/make and delete/remove are in
# schema._SYNONYMS, so these measure the ranking and the margin more than the vocabulary.
SWAPS = {"get": ["fetch", "retrieve"], "create": ["add", "make"], "delete": ["remove"],
         "fetch": ["get"], "retrieve": ["get"], "add": ["create"], "remove": ["delete"]}
# Harder ones: synonyms the code does not know, a word dropped or added, typos. Several are
# ambiguous even to a person (get_activity_by_range beside ..._by_price_range and
# ..._by_accessibility_range): there the right answer is no suggestion.
OFF_TABLE = {"get": ["query", "show", "find"], "create": ["build", "generate"], "delete": ["drop", "purge"],
             "list": ["show", "get"], "update": ["set"], "search": ["find"], "send": ["post"],
             "book": ["reserve"], "cancel": ["abort"]}


def _style(words: list[str], like: str) -> str:
    """Join ``words`` in the naming style of ``like`` (snake, camel, kebab or dotted)."""
    if "_" not in like and "-" not in like and any(c.isupper() for c in like[1:]):
        return to_camel("_".join(words))
    for sep in ("_", "-", "."):
        if sep in like:
            return sep.join(words)
    return "_".join(words)


def _raw_words(name: str) -> list[str]:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w.lower() for w in re.split(r"[\W_]+", name) if w]


def rewordings(name: str) -> list[tuple[str, str]]:
    """``[(kind, reworded name)]`` as the issue lists them: synonyms, verb-object swaps, reorders."""
    words = _raw_words(name)
    out = []
    for i, w in enumerate(words):
        for alt in SWAPS.get(w, ()):
            out.append(("synonym", _style([*words[:i], alt, *words[i + 1:]], name)))
    if len(words) >= 2:
        out.append(("verb_object_swap", _style(words[1:] + words[:1], name)))
    if len(words) >= 3:
        out.append(("reversed", _style(words[::-1], name)))
    for i, w in enumerate(words):  # a synonym and a swap at once: "get_order" -> "order_fetch"
        if SWAPS.get(w) and len(words) >= 2:
            swapped = [*words[:i], SWAPS[w][0], *words[i + 1:]]
            out.append(("synonym+swap", _style(swapped[1:] + swapped[:1], name)))
    return out


def hard_rewordings(name: str) -> list[tuple[str, str]]:
    """Off-table synonyms, a dropped or an extra word, a lost letter, two letters swapped, glued words."""
    words = _raw_words(name)
    rnd = random.Random(name)  # the same typos on every run
    out = []
    for i, w in enumerate(words):
        for alt in OFF_TABLE.get(w, ()):
            out.append(("off_table", _style([*words[:i], alt, *words[i + 1:]], name)))
    if len(words) >= 3:
        out += [("dropped", _style(words[:i] + words[i + 1:], name)) for i in range(len(words))]
    if words:
        out.append(("extra", _style([*words, "info"], name)))
        i = max(range(len(words)), key=lambda k: len(words[k]))
        w = words[i]
        if len(w) >= 5:
            k = rnd.randrange(1, len(w) - 1)
            out.append(("lost_letter", _style([*words[:i], w[:k] + w[k + 1:], *words[i + 1:]], name)))
        i = rnd.randrange(len(words))
        w = words[i]
        if len(w) >= 3:
            k = rnd.randrange(len(w) - 1)
            out.append(("swapped_letters", _style([*words[:i], w[:k] + w[k + 1] + w[k] + w[k + 2:], *words[i + 1:]], name)))
    if len(words) >= 2:
        out.append(("glued", "".join(words)))
    return out


@cache
def bfcl_name_groups() -> tuple[tuple[str, ...], ...]:
    """Every distinct set of names offered together: the tools of an entry, the parameters of a tool.

    Only sets of two or more: with a single candidate there is nothing to point the wrong way to.
    """
    groups = set()
    docs = []
    for f in sorted((BFCL / "data").glob("*.json")):
        for entry in map(json.loads, f.read_text().splitlines()):
            funcs = entry.get("function") or []
            groups.add(tuple(sorted(fn["name"] for fn in funcs)))
            docs += funcs
    for f in sorted((BFCL / "multi_turn_func_doc").glob("*.json")):
        funcs = list(map(json.loads, f.read_text().splitlines()))
        groups.add(tuple(sorted(fn["name"] for fn in funcs)))
        docs += funcs
    tools = {g for g in groups if len(g) >= 2}
    fields = {tuple(sorted((fn.get("parameters") or {}).get("properties", {}))) for fn in docs}
    return tuple(sorted(tools)), tuple(sorted(g for g in fields if len(g) >= 2))


def measure(pairs) -> dict[str, tuple[int, int, int, list]]:
    """Per kind: (total, suggested, right, wrong examples) over ``(kind, unknown, candidates, meant)``."""
    out: dict[str, list] = {}
    for kind, unknown, candidates, meant in pairs:
        row = out.setdefault(kind, [0, 0, 0, []])
        row[0] += 1
        got = suggest(unknown, list(candidates))
        if got is not None:
            row[1] += 1
            if got == meant:
                row[2] += 1
            else:
                row[3].append((unknown, meant, got))
    out["all"] = [sum(r[i] for r in out.values()) for i in range(3)] + [[w for r in out.values() for w in r[3]]]
    return {k: tuple(v) for k, v in out.items()}


def pairs(what: str, reword):
    tools, fields = bfcl_name_groups()
    for group in tools if what == "tools" else fields:
        taken = set(group)
        for name in group:
            for kind, unknown in reword(name):
                if unknown not in taken:
                    yield kind, unknown, group, name


def _report(title: str, figures: dict) -> None:
    print(f"\n{title}:")
    for kind, (total, suggested, right, wrong) in figures.items():
        print(f"  {kind:17} {total:6} names, suggested {suggested / total:6.1%}, "
              f"precision {right / max(suggested, 1):7.2%}" + (f"  wrong e.g. {wrong[:3]}" if wrong else ""))


# Thresholds a little under what was measured (see the commit message and the report printed with -s).
@pytest.mark.dataset
@pytest.mark.parametrize("what,reword,min_precision,min_coverage", [
    ("tools", rewordings, 0.99, 0.95), ("fields", rewordings, 0.99, 0.95),
    ("tools", hard_rewordings, 0.98, 0.85), ("fields", hard_rewordings, 0.98, 0.90),
], ids=["tools", "fields", "tools-hard", "fields-hard"])
def test_bfcl_reworded_names_are_suggested_correctly(what, reword, min_precision, min_coverage):
    need(BFCL, "BFCL dataset")
    figures = measure(pairs(what, reword))
    _report(f"BFCL {what}, {reword.__name__}", figures)
    total, suggested, right, _ = figures["all"]
    assert total > 1000
    assert right / suggested >= min_precision
    assert suggested / total >= min_coverage


@pytest.mark.dataset
def test_bfcl_through_the_registry():
    """The same end to end: Registry.unknown_tool's did_you_mean on the multi-turn tool sets."""
    need(BFCL, "BFCL dataset")
    total = suggested = right = 0
    for f in sorted((BFCL / "multi_turn_func_doc").glob("*.json")):
        reg = Registry.from_specs(list(map(json.loads, f.read_text().splitlines())), legacy_types=True)
        for name in reg.names:
            for _, unknown in rewordings(name) + hard_rewordings(name):
                if unknown in reg:
                    continue
                total += 1
                got = reg.unknown_tool(unknown).extra.get("did_you_mean")
                suggested += got is not None
                right += got == name
    print(f"\nBFCL multi-turn tools through the registry: {total}, suggested {suggested}, right {right}")
    assert right >= 0.97 * suggested and suggested >= 0.8 * total


WIDE_FIELDS = [f"field_{i}_{w}" for i, w in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"] * 100)]


def count(monkeypatch, calls: dict, key: str, module, attr: str) -> None:
    """Count in ``calls[key]`` every call of ``module.attr`` from now on (the work a test bounds, not its time)."""
    real = getattr(module, attr)

    def counted(*a, **kw):
        calls[key] += 1
        return real(*a, **kw)
    monkeypatch.setattr(module, attr, counted)


def test_a_suggestion_scores_a_bounded_number_of_candidates(monkeypatch):
    """The did-you-mean runs on the error path: among 500 fields it must not compare characters (difflib's ratio)
    or score words for every one of them. Counted, not timed: at most 64 of each, whatever the number of fields."""
    from agentlab import likeness, names
    calls = {"ratio": 0, "words": 0}
    count(monkeypatch, calls, "ratio", likeness, "matched")
    count(monkeypatch, calls, "words", names, "_word_score")
    fields = WIDE_FIELDS
    assert suggest("feild_7_gama", fields) == "field_7_gamma"
    assert suggest("zzzz_qqq", fields) is None and suggest("fieldd_7_gamma", fields) == "field_7_gamma"
    assert 0 < calls["words"] <= 3 * 64 and calls["ratio"] <= 3 * 64, calls


def test_names_that_differ_by_their_digits_need_two_character_ratios(monkeypatch):
    """field_4416_beta among field_N_beta shares its letters (1, 4, 6, beta, field) with a score of fields in any
    order, so a bound on letters alone left the ratio to be worked out for each of them (up to 20, a tenth of the
    never-seen names costing ten times the rest). Two ratios as close as these settle "no suggestion" whatever
    the others' bounds, and the longest common subsequence orders the rest: counted, not timed."""
    from agentlab import likeness
    calls = {"ratio": 0}
    count(monkeypatch, calls, "ratio", likeness, "matched")
    fields = WIDE_FIELDS
    for typo in ("field_4416_beta", "field_e_delta", "field_08_alpha", "field_3333_delta", "field_1300_alpha"):
        calls["ratio"] = 0
        assert suggest(typo, fields) == exhaustive_suggestion(typo, fields)  # (the exhaustive one asks difflib)
        assert 0 < calls["ratio"] <= 2, (typo, calls)


def test_no_character_ratio_is_worked_out_when_no_candidate_can_reach_the_floor_of_a_suggestion(monkeypatch):
    """Found by an outside pass: the two highest on letters had their ratios worked out before asking whether any
    letters' bound reached the least a suggestion needs (0.75), so a name that matches nothing (3 in 50 English
    words against a tool list) cost 2.5-5.6x what it did before. Counted, not timed: none is worked out."""
    from agentlab import likeness
    calls = {"ratio": 0}
    count(monkeypatch, calls, "ratio", likeness, "matched")
    for name, allowed in (("temperature", ["create_question", "create_category"]),
                          ("description", ["search_summary", "cancel_endpoint", "get_workflow", "get_response",
                                           "variable"]),
                          ("kxcyqzgouhpdmftbjlsraw", ["twncglzsvkqxjhfiae", "jkblxiusoagnwedrvt"])):
        assert suggest(name, allowed) is None and calls["ratio"] == 0, (name, calls)
    assert suggest("itm", ["date", "item", "amount"]) == "item" and calls["ratio"] == 1  # one can: it is worked out


def test_a_wide_schema_scores_each_shape_of_field_once(monkeypatch):
    """field_3_gamma and field_8_gamma pair with "feild_7_gama" on the same words: one score, not one per field.

    Counted, not timed: scoring 64 fields one by one cost 40x jsonschema's whole error list."""
    from agentlab import names
    calls = {"words": 0}
    count(monkeypatch, calls, "words", names, "_word_score")
    fields = WIDE_FIELDS
    assert suggest("feild_7_gama", fields) == "field_7_gamma"
    assert calls["words"] <= 4, calls


def test_edits_skip_what_both_words_share_and_agree_with_the_full_table():
    from agentlab.names import _edits

    def table(a, b, most):  # the plain dynamic programme, with neighbour swaps
        prev2, prev = [], list(range(len(b) + 1))
        for i in range(1, len(a) + 1):
            row = [i] + [0] * len(b)
            for j in range(1, len(b) + 1):
                row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
                if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                    row[j] = min(row[j], prev2[j - 2] + 1)
            prev2, prev = prev, row
        return min(prev[-1], most + 1)

    words = ["".join(p) for n in range(5) for p in __import__("itertools").product("abc", repeat=n)]
    for a in words[::3]:
        for b in words:
            assert _edits(a, b, 2) == table(a, b, 2), (a, b)
    assert _edits("categroy", "category", 2) == 1 and _edits("recieve", "receive", 1) == 1


def test_a_suggester_remembers_a_bounded_number_of_answers(monkeypatch):
    """The schema check builds its fields' suggester once, at compile time; a typo a model repeats costs a look-up,
    and a flood of new names keeps at most _REMEMBERED answers."""
    from agentlab import names
    near = names.suggester(("month", "category"))
    assert near("categroy") == "category" and near("categroy") == "category" and near("zzz") is None
    calls = {"n": 0}
    real = names._suggest

    def counted(*a):
        calls["n"] += 1
        return real(*a)

    monkeypatch.setattr(names, "_suggest", counted)
    near = names.suggester(("month", "category"))
    for _ in range(3):
        assert near("categroy") == "category"
    assert calls["n"] == 1
    for i in range(names._REMEMBERED):
        near(f"name{i}")  # the oldest answer ("categroy") is forgotten: the memory holds _REMEMBERED names
    calls["n"] = 0
    near(f"name{names._REMEMBERED - 1}")
    assert calls["n"] == 0  # still remembered
    near("categroy")
    assert calls["n"] == 1  # forgotten, computed again
    assert names.suggester(())("x") is None


def test_the_letter_set_prefilter_never_drops_a_typo():
    """_word_candidates skips a word whose set of letters differs from the query's by more than a typo of that
    length can change (_letter_limit: two letters per edit _word_similarity allows, none for a 3-letter swap):
    no typo it accepts is skipped, so the suggestions are the same."""
    import itertools
    import random

    from agentlab import names
    rng = random.Random(7)
    words = ["category", "amount", "date", "item", "record", "budget", "order", "refund", "user", "area", "usb",
             "get", "retrieve", "expense", "currency", "merchant", "invoice", "epsilon", "gamma"]
    typos = set(words)
    for w in words:  # every one- and two-edit variant the similarity may accept, sampled
        for _ in range(40):
            x = list(w)
            for _ in range(rng.choice((1, 2))):
                op, i = rng.randrange(4), rng.randrange(len(x))
                if op == 0:
                    x[i] = rng.choice("abcdefghijklmnopqrstuvwxyz")
                elif op == 1:
                    x.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz"))
                elif op == 2 and len(x) > 3:
                    del x[i]
                elif i + 1 < len(x):
                    x[i], x[i + 1] = x[i + 1], x[i]
            typos.add("".join(x))
    for a, b in itertools.product(sorted(typos), words):
        if names._word_similarity((a, a), (b, b)):
            # two letters of the set per edit allowed: one edit below 7 letters, two from 7, none for 3-letter swaps
            assert (names.letter_bits(a) ^ names.letter_bits(b)).bit_count() <= names._letter_limit(len(a), len(b)) <= 4, (a, b)


def test_the_suggestions_over_a_corpus_of_misspellings_are_the_recorded_ones():
    """9,000 misspellings (typos, rewordings, other cases, unrelated words) of the names in 136 candidate lists
    (the workbook's tools and fields, a 500-field schema, 300 tools, BFCL's sets), answered by the code before
    it was made faster (tests/data/make_suggest_corpus.py). A speed-up changes the cost, never the answer."""
    corpus = json.loads((ROOT / "tests" / "data" / "suggest_corpus.json").read_text(encoding="utf-8"))
    groups = corpus["groups"]
    wrong = []
    for gi, query, answer in corpus["cases"]:
        if (got := suggest(query, groups[gi])) != answer:
            wrong.append((query, answer, got))
    assert len(corpus["cases"]) > 9000 and not wrong, wrong[:20]


def exhaustive_suggestion(name: str, allowed: list[str]) -> str | None:
    """What suggest() documents, computed the slow way: every candidate scored on words and on characters, no
    bound, no cap, no shape shared, nothing kept between calls; the whole list ranked by (words, characters, name)."""
    import difflib

    from agentlab.names import NAME_LIMIT, _terms, _word_score, _word_similarity, to_snake
    allowed = list(dict.fromkeys(allowed))
    name = name[:NAME_LIMIT]
    snake = to_snake(name)
    if snake != name and snake in allowed:
        return snake
    if "_" in name and to_camel(name) != name and to_camel(name) in allowed:
        return to_camel(name)
    same = [a for a in allowed if to_snake(a).replace("_", "") == snake.replace("_", "")]
    if len(same) == 1:
        return same[0]
    query = _terms(name)
    if not query:
        return None
    terms = {a: _terms(a) for a in allowed}
    count: dict[str, int] = {}
    for ts in terms.values():
        for w, _ in ts:
            count[w] = count.get(w, 0) + 1
    weight = {w: 1 / n for w, n in count.items()}
    flat = "_".join(sorted(s for _, s in query))
    ranked = []
    for a, ts in terms.items():
        pairings = []
        for q in query:
            alone = weight.get(q[0], 1.0)
            options = []
            for b in ts:
                if b[0] == q[0]:
                    options.append((b, 1.0, alone, alone))
                elif sim := _word_similarity(q, b):
                    wc = weight[b[0]]
                    wq = weight.get(q[0], wc)  # a typo weighs what the word it misspells weighs
                    options.append((b, sim, min(wq, wc), max(wq, wc)))
            pairings.append((alone, options))
        chars = difflib.SequenceMatcher(None, flat, "_".join(sorted(s for _, s in ts))).ratio()
        ranked.append((_word_score(pairings, ts, len(ts)), chars, a))
    ranked.sort(reverse=True)
    (w0, c0, first), (w1, c1, _) = ranked[0], ranked[1] if len(ranked) > 1 else (0.0, 0.0, "")
    if w0 >= 0.25:  # enough shared words: a clear winner on words, a tie is no suggestion
        return first if w0 - w1 >= 0.1 else None
    return first if c0 >= 0.75 and c0 - c1 >= 0.1 else None  # else a clear typo by characters


def misspelling(name: str, rng: random.Random, taken: set[str]) -> str:
    """One slip a model makes (two letters swapped, one dropped, doubled or replaced), never a real name:
    what benchmarks/bench_validation.py section 4 sends."""
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
            typo = name[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + name[i + 1:]
        if typo != name and typo not in taken:
            return typo


def test_the_fast_suggestion_is_the_exhaustive_one_on_random_misspellings():
    """The bounds, caps, shapes and kept pairings only skip work: on fresh random misspellings of real field and
    tool names (a 500-field schema numbered 0-499, past the 64 candidates scored, and the workbook's own lists),
    suggest() gives what scoring every candidate gives. A misspelling of a wide schema's name is asked twice,
    so the second answer comes with the pairings kept from the first."""
    rng = random.Random(37)
    wide = [f"field_{i}_{w}" for i, w in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"] * 100)]
    lists = [wide]
    for f in ("aftersales_tools.json", "expense_tools.json"):
        reg = Registry.from_json(ROOT / "data" / f)
        lists.append(sorted(reg.names))
        lists += [list(reg[n].parameters["properties"]) for n in reg.names if len(reg[n].parameters["properties"]) > 1]
    differ, asked = [], 0
    for allowed in lists:
        for _ in range(100 if allowed is wide else 20):
            typo = misspelling(rng.choice(allowed), rng, set(allowed))
            want = exhaustive_suggestion(typo, allowed)
            asked += 1
            for _ in range(2 if allowed is wide else 1):
                if (got := suggest(typo, allowed)) != want:
                    differ.append((typo, want, got))
    assert asked > 300 and not differ, differ[:10]

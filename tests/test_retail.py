"""tau-bench retail: the 115 test tasks replayed through the guarded loop, graded on the final data.

The tools are written here from tau-bench's ``tools.json`` and ``wiki.md``; the oracle
(``oracle_test.jsonl``) says which step succeeds or errs and which database fields change.
Reads ``../shared/datasets/tau-bench/retail``; skips where it is absent.
"""
import json
import re
from functools import cache

import pytest
from conftest import need

from agentlab.errors import render
from agentlab.guards import GuardConfig
from agentlab.loop import run_guarded
from agentlab.models import ScriptedModel, call, say, tool_calls
from agentlab.scenarios import retail

pytestmark = pytest.mark.dataset


@cache
def tasks():
    need(retail.data_dir(), "tau-bench retail")
    t = [json.loads(line) for line in (retail.data_dir() / "tasks_test.jsonl").read_text().splitlines()]
    o = [json.loads(line) for line in (retail.data_dir() / "oracle_test.jsonl").read_text().splitlines()]
    return list(zip(t, o, strict=True))  # one oracle per task


@cache
def base():
    return retail.load_db()


def replay(task, script, config):
    store = retail.RetailDB()
    run = run_guarded(ScriptedModel(script, then="done"), retail.make_registry(store), task["instruction"],
                      config=config, sleep=lambda s: None)
    return run, json.loads(json.dumps(retail.diff(base(), store.db)))


def plain(task):
    return [call(a["name"], a["kwargs"]) for a in task["actions"]] + [say("done")]


def cfg(task, extra=0, **kw):
    return GuardConfig(step_budget=len(task["actions"]) + 1 + extra, timeout=None, **kw)


def test_all_115_tasks_replay_with_the_oracles_outcomes_and_db_changes():
    ok = 0
    for task, oracle in tasks():
        run, changes = replay(task, plain(task), cfg(task))
        assert run.status.startswith("done"), (task["index"], run.reason)
        assert ["ok" if e.error_code is None else "error" for e in run.tool_events] == [s["status"] for s in oracle["steps"]], task["index"]
        assert changes == oracle["db_changes"], task["index"]
        ok += 1
    assert ok == 115


def test_no_store_changes_the_data_every_store_starts_from():
    """A store copies a record the first time a tool looks it up; a write that reached a record some other way would
    change the data the next store starts from. Every task's writes, then a fresh store sees the file's data."""
    for task, _oracle in tasks():
        replay(task, plain(task), cfg(task))
    fresh = retail.RetailDB()
    assert fresh.db == base() and retail.RetailDB(retail.load_db()).db == base()
    assert all(fresh.db[t] is not retail.RetailDB().db[t] for t in fresh.db)  # each store's tables are its own


def test_a_record_looked_up_is_the_stores_own_and_stays_so():
    need(retail.data_dir(), "tau-bench retail")
    store = retail.RetailDB()
    order_id = next(iter(store.db["orders"]))
    first = store.get_order_details(order_id)
    first["status"] = "changed here"
    assert store.get_order_details(order_id) is first and retail.RetailDB().db["orders"][order_id] != first


def test_what_a_write_or_a_snapshot_hands_out_is_never_the_shared_data():
    """An exchange put the shared product's options dict into the order it returned: changing the returned order
    changed every later store's product. A snapshot handed out the shared records too."""
    need(retail.data_dir(), "tau-bench retail")
    store = retail.RetailDB()
    order_id, order = next((k, o) for k, o in store.db["orders"].items() if o["status"] == "pending" and o["items"])
    item = order["items"][0]
    product = store.db["products"][item["product_id"]]
    new_id = next(v for v, x in product["variants"].items() if x.get("available") and v != item["item_id"])
    paid_with = order["payment_history"][0]["payment_method_id"]
    done = store.modify_pending_order_items(order_id, [item["item_id"]], [new_id], paid_with)
    for options in (done["items"][0]["options"], *(i.get("options", {}) for i in done["items"])):
        options["poisoned"] = True
    snap = retail.SCENARIO.snapshot(store)
    for table in snap.values():
        for record in table.values():
            record["poisoned"] = True
    assert retail.RetailDB().db == base()


def test_every_write_sent_twice_still_changes_the_data_once():
    writes = 0
    for task, oracle in tasks():
        script = []
        for a in task["actions"]:
            script.append(call(a["name"], a["kwargs"]))
            if a["name"] in retail.WRITES:
                script.append(call(a["name"], a["kwargs"]))  # the model repeats itself
                writes += 1
        run, changes = replay(task, [*script, say("done")], cfg(task, extra=len(script) - len(task["actions"])))
        assert run.status.startswith("done") and changes == oracle["db_changes"], task["index"]
    assert writes > 100


def _mutated(action):
    """An invalid version of ``action``: a required field dropped, or broken JSON for a call without one."""
    required = [k for k in action["kwargs"]]
    if required:
        args = dict(action["kwargs"])
        del args[required[0]]
        return call(action["name"], args)
    return call(action["name"], '{"')


def test_a_mutated_call_before_each_correct_one_costs_exactly_the_injected_count():
    for task, oracle in tasks():
        if not task["actions"]:
            continue
        clean_run, _clean_changes = replay(task, plain(task), cfg(task, self_correction=None))
        script = []
        for a in task["actions"]:
            script += [_mutated(a), call(a["name"], a["kwargs"])]
        n = len(task["actions"])
        # the re-ask budget counts consecutive invalid calls; injecting one before every call doubles
        # those streaks, so this test lifts it to isolate the cost of the injected mistakes
        run, changes = replay(task, [*script, say("done")], cfg(task, extra=n, self_correction=None))
        assert run.status.startswith("done") and changes == oracle["db_changes"], task["index"]
        assert run.invalid_calls == clean_run.invalid_calls + n
        assert run.steps == clean_run.steps + n


def test_a_step_budget_below_the_task_length_stops_the_loop():
    failed = 0
    for task, _oracle in tasks():
        if len(task["actions"]) < 2:
            continue
        run, _changes = replay(task, plain(task), GuardConfig(step_budget=len(task["actions"]) - 1, timeout=None))
        assert run.status == "budget_exhausted" and run.steps == len(task["actions"]) - 1
        failed += 1
    assert failed == sum(len(t["actions"]) >= 2 for t, _ in tasks()) > 90


def test_parallel_writes_in_one_message_are_each_answered():
    task, oracle = next((t, o) for t, o in tasks() if any(a["name"] in retail.WRITES for a in t["actions"]))
    script = []
    for a in task["actions"]:
        c = call(a["name"], a["kwargs"])
        script.append(tool_calls(c, call(a["name"], a["kwargs"])) if a["name"] in retail.WRITES else c)
    run, changes = replay(task, [*script, say("done")], cfg(task))
    assert changes == oracle["db_changes"] and any(e.replayed for e in run.tool_events)


CJK = re.compile(r"[\u4e00-\u9fff]")


def _message(error, lang):
    return json.loads(render(error, lang))["error"]["message"]


def test_every_refusal_the_oracle_records_is_said_in_taubenchs_words_and_in_chinese():
    """Each error step of the 115 tasks, called on the store: English is the oracle's observation word for word;
    Chinese is a Chinese sentence, never the English one (a Chinese session's model and PM read it)."""
    seen = 0
    for task, oracle in tasks():
        store = retail.RetailDB()
        for action, step in zip(task["actions"], oracle["steps"], strict=True):
            try:
                getattr(store, action["name"])(**action["kwargs"])
            except retail.Refused as exc:
                assert step["status"] == "error", (task["index"], action)
                assert _message(exc.error, "en") == step["observation_prefix"], (task["index"], action)
                zh = _message(exc.error, "zh")
                assert zh.startswith("错误：") and CJK.search(zh[3:]), zh
                assert exc.text not in zh, zh
                problem = json.loads(render(exc.error, "zh"))["error"]["problems"][0]["hint"]
                assert CJK.search(problem), problem
                seen += 1
    assert seen == 24


@pytest.mark.parametrize("kind, params", [
    ("item_not_found", {"item": "1008292230"}), ("new_item_unavailable", {"item": "1008292230"}),
    ("invalid_expression_kind", {"kind": "SyntaxError"})])
def test_a_refusal_with_blanks_keeps_its_values_in_both_languages(kind, params):
    exc = retail.Refused(kind, **params)
    for lang in ("en", "zh"):
        assert all(v in _message(exc.error, lang) for v in params.values())


def test_in_chinese_every_tool_and_every_field_of_the_store_is_described_in_chinese():
    """The model of a Chinese session reads the store's contracts in Chinese, as at the other desks; the schemas are
    the same, and in English the descriptions are tau-bench's own."""
    need(retail.data_dir(), "tau-bench retail")
    en = {t.name: t for t in retail.make_registry(retail.RetailDB())}
    zh = {t.name: t for t in retail.make_registry(retail.RetailDB(), lang="zh")}
    specs = {s["function"]["name"]: s["function"]
             for s in json.loads((retail.data_dir() / "tools.json").read_text(encoding="utf-8"))}
    assert set(en) == set(zh) == set(specs) and len(zh) == 16
    for name, tool in zh.items():
        assert en[name].description == specs[name]["description"]
        assert CJK.search(tool.description), name
        props = tool.parameters.get("properties", {})
        assert set(props) == set(en[name].parameters.get("properties", {}))
        for field, schema in props.items():
            assert CJK.search(schema["description"]), (name, field)
            assert {k: v for k, v in schema.items() if k != "description"} == \
                {k: v for k, v in en[name].parameters["properties"][field].items() if k != "description"}


def test_a_tool_or_field_the_chinese_words_do_not_name_keeps_its_own():
    from agentlab.scenarios.base import in_language
    specs = {"get_order_details": {"name": "get_order_details", "description": "d", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string", "description": "x"},
                                         "extra": {"type": "string", "description": "new field"}}}},
        "brand_new_tool": {"name": "brand_new_tool", "description": "new", "parameters": {}}}
    out = in_language(specs, "retail", "zh")
    assert out["brand_new_tool"] == specs["brand_new_tool"]
    assert CJK.search(out["get_order_details"]["description"])
    assert out["get_order_details"]["parameters"]["properties"]["extra"]["description"] == "new field"
    assert CJK.search(out["get_order_details"]["parameters"]["properties"]["order_id"]["description"])
    assert in_language(specs, "retail", "en") is specs

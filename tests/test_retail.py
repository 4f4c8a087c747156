"""tau-bench retail: the 115 test tasks replayed through the guarded loop, graded on the final data.

The tools are written here from tau-bench's ``tools.json`` and ``wiki.md``; the oracle
(``oracle_test.jsonl``) says which step succeeds or errs and which database fields change.
Reads ``../shared/datasets/tau-bench/retail``; skips where it is absent.
"""
import json
from functools import cache

import pytest
from conftest import need

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

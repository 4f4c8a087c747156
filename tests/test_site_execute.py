"""The three layers, the timeout and the output check (agentlab/site/execute.py)."""
import time

import pytest
from site_helpers import test_skills

from agentlab.scenarios import aftersales
from agentlab.site.desks import desk_skills, desk_state
from agentlab.site.execute import run_skill, shape_result
from agentlab.site.skills import SkillContext, load_skills, shipped_dir


def skills(tmp_path):
    return {s.name: s for s in load_skills(shipped_dir(), test_skills(tmp_path / "skills"))}


def test_invalid_input_gets_the_same_problems_as_the_in_process_registry(tmp_path):
    state = desk_state()
    get_order = {s.name: s for s in desk_skills(state)}["get_order"]
    out = run_skill(get_order, {"orderId": "A1001"}, SkillContext(tmp_path))
    local = aftersales.make_registry(aftersales.Desk()).check("get_order", {"orderId": "A1001"})
    assert out.status == 422 and out.body["error"]["problems"] == local.error.to_dict()["problems"]
    assert out.body["error"]["problems"][1]["did_you_mean"] == "order_id"


def test_business_rules_refuse_before_anything_runs(tmp_path):
    state = desk_state()
    refund = {s.name: s for s in desk_skills(state)}["create_refund"]
    too_much = run_skill(refund, {"order_id": "A1001", "amount": 5000.0, "reason": "user_cancel"}, SkillContext(tmp_path))
    assert too_much.status == 422 and too_much.body["error"]["stage"] == "semantic" and not too_much.ran
    shipped = run_skill(refund, {"order_id": "A1002", "amount": 10.0, "reason": "user_cancel"}, SkillContext(tmp_path))
    assert shipped.status == 200 and shipped.body["error"]["code"] == "RULE_VIOLATION"
    assert state["aftersales"].refunds == []


def test_a_call_that_needs_a_person_is_refused_on_the_site(tmp_path):
    refund = {s.name: s for s in desk_skills(desk_state())}["create_refund"]
    start = aftersales.Desk()
    big = next(o for o in start.orders.values() if o["status"] == "paid" and o["amount"] > 1000)
    out = run_skill(refund, {"order_id": big["order_id"], "amount": big["amount"], "reason": "user_cancel"},
                    SkillContext(tmp_path), lang="zh")
    assert out.body["error"]["code"] == "NEEDS_APPROVAL" and "人工" in out.body["error"]["message"] and not out.ran


def test_the_timeout_really_stops_waiting_and_offers_the_fallback(tmp_path):
    weather = skills(tmp_path)["current_weather"]
    (tmp_path / "weather_source.json").write_text('{"mode": "slow", "delay": 15}')
    t0 = time.monotonic()
    out = run_skill(weather, {"city": "Beijing"}, SkillContext(tmp_path))
    assert time.monotonic() - t0 < weather.meta.timeout + 6.0  # its timeout, not the source's 15 s: a loaded host's slack
    assert out.status == 504 and out.body["error"]["code"] == "TIMEOUT" and "allow_cached" in out.body["fallback_hint"]


def test_a_source_that_is_down_points_at_the_cache_and_the_cache_says_when(tmp_path):
    weather = skills(tmp_path)["current_weather"]
    ctx = SkillContext(tmp_path)
    live = run_skill(weather, {"city": "北京市"}, ctx)
    assert live.ok and live.body["result"]["cached"] is False
    (tmp_path / "weather_source.json").write_text('{"mode": "down"}')
    down = run_skill(weather, {"city": "Beijing"}, ctx, lang="zh")
    assert down.status == 503 and down.body["fallback_hint"].startswith("实时天气源") and down.internal
    cached = run_skill(weather, {"city": "Beijing", "allow_cached": True}, ctx)
    result = cached.body["result"]
    assert cached.ok and result["cached"] is True and result["as_of"] == live.body["result"]["as_of"]
    assert "cached" in result["summary"]


def test_an_invalid_output_is_the_skills_bug_never_shown(tmp_path):
    out = run_skill(skills(tmp_path)["broken_output"], {}, SkillContext(tmp_path))
    assert out.status == 500 and out.body["error"]["code"] == "TOOL_ERROR"
    assert "wrong" not in str(out.body) and "answer" not in str(out.body)
    assert "Traceback" in out.internal and "output_schema" in out.internal


def test_an_unexpected_failure_shows_the_model_nothing_of_it(tmp_path):
    out = run_skill(skills(tmp_path)["leaky_failure"], {}, SkillContext(tmp_path))
    assert out.status == 500 and "hunter2" not in str(out.body) and "10.0.0.7" not in str(out.body)
    assert "hunter2" in out.internal  # the operator's log redacts it (test_site_logs), the record keeps it


def test_results_are_flat_objects_with_a_summary():
    assert shape_result("answer", 42) == {"value": 42, "summary": "answer: value 42."}
    assert shape_result("orders", [{"a": 1}])["items"] == [{"a": 1}]
    assert shape_result("x", {"summary": "mine"}) == {"summary": "mine"}


# --- a read carried out on the event loop (SkillSite.execute_async, the HTTP route of a read) -------------

def _loop_site(tmp_path, handler, timeout=5.0):
    import threading

    from agentlab.site.service import SkillSite
    from agentlab.site.skills import Skill, SkillMeta
    hang = Skill(SkillMeta("hang_read", "Hang", "Use never: it waits.", timeout=timeout), handler)
    quick = Skill(SkillMeta("quick_read", "Quick", "Use for a quick answer."), lambda args, ctx: {"answer": 42})
    site = SkillSite(tmp_path / "data", desks=False, extra=[hang, quick])
    key, record = site.create_key("loop")
    return site, key, record, threading


def _call(site, name, key, record):
    assert site.runs_on_loop(name, b'{"arguments": {}}', record)
    return site.execute_async(name, b'{"arguments": {}}', api_key=key, idempotency_key=None, session_id=None,
                              checked=record)


def test_a_hanging_read_on_the_loop_never_holds_another_call(tmp_path):
    import asyncio
    release = None

    def handler(args, ctx):
        entered.set()
        release.wait(20)  # interrupted on the loop (its budget), then waits in a worker thread
        return {"done": True}

    site, key, record, threading = _loop_site(tmp_path, handler)
    entered, release = threading.Event(), threading.Event()

    async def both():
        hung = asyncio.ensure_future(_call(site, "hang_read", key, record))
        while not entered.is_set():
            assert not hung.done()
            await asyncio.sleep(0.01)
        quick = await asyncio.wait_for(_call(site, "quick_read", key, record), 10)  # a hang guard, not a timing
        still_hung = not hung.done()
        release.set()
        return quick, still_hung, await hung

    quick, still_hung, hung = asyncio.run(both())
    assert quick.status == 200 and quick.body["result"]["answer"] == 42 and still_hung
    assert hung.status == 200 and hung.body["result"]["done"] is True
    assert [line["skill"] for line in site.logs.read("call")] == ["quick_read", "hang_read"]


def test_a_read_past_its_timeout_on_the_loop_is_a_504_and_the_loop_goes_on(tmp_path):
    import asyncio

    def handler(args, ctx):
        release.wait(20)
        return {"late": True}

    site, key, record, threading = _loop_site(tmp_path, handler, timeout=0.2)
    release = threading.Event()
    try:
        timed_out = asyncio.run(_call(site, "hang_read", key, record))
    finally:
        release.set()
    assert timed_out.status == 504 and timed_out.body["error"]["code"] == "TIMEOUT"
    assert asyncio.run(_call(site, "quick_read", key, record)).status == 200


def test_a_read_that_raises_its_own_timeout_error_on_the_loop_is_not_run_twice(tmp_path):
    import asyncio
    calls = []

    def handler(args, ctx):
        calls.append(1)
        raise TimeoutError("the weather source did not answer")

    site, key, record, _ = _loop_site(tmp_path, handler)
    out = asyncio.run(_call(site, "hang_read", key, record))
    assert out.status == 504 and calls == [1]  # its own TimeoutError is its answer, not the loop's budget


def test_a_hanging_read_over_http_never_holds_another_call(tmp_path):
    import threading

    import httpx

    from agentlab.site.serving import serving

    def handler(args, ctx):
        entered.set()
        release.wait(20)
        return {"done": True}

    site, key, _, _ = _loop_site(tmp_path, handler)
    entered, release = threading.Event(), threading.Event()
    replies = {}
    with serving(site) as base:
        def hang():
            replies["hang"] = httpx.post(f"{base}/api/skills/hang_read/execute", json={"arguments": {}},
                                         headers={"X-API-Key": key}, timeout=30)
        caller = threading.Thread(target=hang)
        caller.start()
        try:
            assert entered.wait(10)
            quick = httpx.post(f"{base}/api/skills/quick_read/execute", json={"arguments": {}},
                               headers={"X-API-Key": key}, timeout=10)  # a hang guard, not a timing
            still_hung = "hang" not in replies
        finally:
            release.set()
            caller.join(30)
    assert quick.status_code == 200 and quick.json()["result"]["answer"] == 42 and still_hung
    assert replies["hang"].status_code == 200


def test_a_read_kept_from_the_cpu_once_stays_on_the_loop_and_a_slow_one_goes_to_a_worker(tmp_path, monkeypatch):
    """The loop's budget runs out while its thread waits for a CPU (here: the first call alone sleeps past it):
    the read, run again in a worker, is quick there, so its next calls stay on the loop. A read slow every time
    goes to a worker for its next calls."""
    import asyncio

    from agentlab.site import execute as ex
    monkeypatch.setattr(ex, "_slow", {})
    threads, slow_every_time = [], []

    def handler(args, ctx):
        threads.append(threading.current_thread() is threading.main_thread())
        if len(threads) == 1 or slow_every_time:
            time.sleep(3 * ex.LOOP_BUDGET)
        return {"done": True}

    import time
    site, key, record, threading = _loop_site(tmp_path, handler)
    assert asyncio.run(_call(site, "hang_read", key, record)).status == 200
    assert threads == [True, False]  # stopped on the loop, run again in a worker, quick there
    assert asyncio.run(_call(site, "hang_read", key, record)).status == 200
    assert threads[2:] == [True] and not ex._slow  # the next call is on the loop again
    slow_every_time.append(1)
    threads.clear()
    assert asyncio.run(_call(site, "hang_read", key, record)).status == 200
    assert asyncio.run(_call(site, "hang_read", key, record)).status == 200
    assert threads == [True, False, False]  # slow in the worker too: its next call goes there first


@pytest.mark.parametrize("data", [
    {"city": "Beijing", "temperature": 7.0, "humidity": 35, "ok": True, "gone": None, "zero": -0.0, "odd": "x\ud800"},
    {"n": float("nan")}, {"big": 2 ** 60}, {"nested": {"a": [1, (2, 3)]}}, {1: "int key"}, {"when": {1, 2}}])
def test_a_flat_result_is_shaped_as_its_trip_through_json_would_shape_it(data):
    """shape_result copies a flat object of plain values instead of writing it out as JSON and reading it back: what
    it gives is equal to that trip's (and a copy: the handler's object is not the reply's); anything else takes it."""
    import json

    from agentlab.store import result_json
    trip = json.loads(result_json(data))
    shaped = shape_result("w", data)
    assert {k: v for k, v in shaped.items() if k != "summary"} == {k: v for k, v in trip.items() if k != "summary"}
    assert json.dumps(shaped, sort_keys=True) == json.dumps(shape_result("w", trip), sort_keys=True)
    assert shaped is not data


@pytest.mark.parametrize("raw, refused", [
    (b'{"arguments": {"city": "\\ud800"}}', True), (b'{"arguments": {"a": {"\\uDC00": 1}}}', True),
    (b'{"arguments": {"a": ["ok", "\\udbff"]}}', True), (b'{"arguments": {"city": "\\u00e9\\ud83d\\ude00"}}', False),
    ('{"arguments": {"city": "é😀"}}'.encode(), False), (b'{"arguments": {"city": "\\\\ud800"}}', False)])
def test_a_body_is_walked_for_lone_surrogates_only_when_it_holds_an_escape(raw, refused):
    """read_body skips the walk for a body with no \\u escape (decoded UTF-8 holds no surrogate); every lone
    surrogate an escape makes is still refused, an escaped pair and an escaped backslash are not."""
    from agentlab.site.replies import read_body
    args, problem = read_body(raw)
    assert (problem == "surrogate") is refused and (args is None) is refused

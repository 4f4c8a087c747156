"""A read's rate and quota on Redis, counted from the event loop (agentlab/redis_store.py LuaScripts.call_async):
no thread for the round trip, the same verdicts, and a frozen server holds the call, never the loop."""
import asyncio
import os
import shutil
import signal
import time

import pytest
from conftest import free_port, start_redis, stop_group

import agentlab.site.execute as execute_module
import agentlab.timeouts as timeouts_module
from agentlab.site.service import SkillSite
from agentlab.site.skills import Skill, SkillMeta

pytest.importorskip("redis")
pytestmark = pytest.mark.timeout(120)


def _site(tmp_path, url, per_minute=3):
    look = Skill(SkillMeta("look_it", "Look", "Use to look a line up.", limits={"per_minute": per_minute}),
                 lambda args, ctx: {"answer": 42})
    site = SkillSite(tmp_path / "data", desks=False, extra=[look], store=url)
    key, record = site.create_key("loop")
    return site, key, record


def _read(site, key, record):
    assert site.runs_on_loop("look_it", b'{"arguments": {}}', record)
    return site.execute_async("look_it", b'{"arguments": {}}', api_key=key, idempotency_key=None, session_id=None,
                              checked=record)


def test_a_read_on_redis_is_counted_from_the_loop_with_no_thread_and_the_same_verdicts(tmp_path, redis_url,
                                                                                       monkeypatch):
    site, key, record = _site(tmp_path, redis_url)
    first = asyncio.run(_read(site, key, record))  # its connection is opened the thread way, once
    handed = []
    for module in (execute_module, timeouts_module):
        real = module.wait_in_worker
        monkeypatch.setattr(module, "wait_in_worker",
                            lambda fn, limit, *, write, real=real: handed.append(fn) or real(fn, limit, write=write))
    then = [asyncio.run(_read(site, key, record)) for _ in range(3)]
    assert [r.status for r in [first, *then]] == [200, 200, 200, 429]  # 3 a minute: the fourth is refused
    assert then[-1].body["error"]["code"] == "RATE_LIMITED" and int(then[-1].headers["Retry-After"]) >= 1
    assert handed == []  # neither the skill nor its limits took a worker thread


def test_a_frozen_redis_holds_the_read_for_its_timeout_and_never_the_loop(tmp_path):
    exe = os.environ.get("AGENTLAB_REDIS_SERVER") or shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    (tmp_path / "redis-files").mkdir()
    proc = start_redis(exe, port, tmp_path / "redis-files")
    try:
        site, key, record = _site(tmp_path, f"redis://127.0.0.1:{port}/0?prefix=frozen:", per_minute=1000)

        async def frozen():
            assert (await _read(site, key, record)).status == 200  # the connection is open
            os.killpg(proc.pid, signal.SIGSTOP)
            ticks = 0
            call = asyncio.ensure_future(_read(site, key, record))
            t0 = time.monotonic()
            while not call.done():
                await asyncio.sleep(0.05)
                ticks += 1
            return await call, ticks, time.monotonic() - t0

        try:
            out, ticks, took = asyncio.run(frozen())
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        assert out.status == 503 and out.body["error"]["code"] == "UNAVAILABLE" and took < 20
        assert ticks >= 10  # the loop went on while the read waited (3 s of socket timeout: ~60 ticks)
        assert asyncio.run(_read(site, key, record)).status == 200  # back, on a new connection
        assert any(line.get("code") == "UNAVAILABLE" for line in site.logs.read("error"))
    finally:
        stop_group(proc, 10)

"""The execute route's hot path (agentlab/site/app.py, execute.py, logs.py): what it skips, and that a client
hears and the logs keep exactly what the whole way gives."""
import json
import threading
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from agentlab.errors import redact_secrets
from agentlab.site.app import _Reply, create_app
from agentlab.site.logs import _CREDENTIAL, FIELD_CHARS, SiteLogs, _bounded, _cut, scrub
from agentlab.site.service import SkillSite
from agentlab.site.skills import Skill, SkillMeta


def _site(tmp_path, handler, timeout=5.0):
    where: dict = {}

    def noted(args, ctx):
        where["handler"] = threading.get_ident()
        return handler(args, ctx)

    note = Skill(SkillMeta("note_it", "Note", "Use to note a line.", rate_class="write", timeout=timeout,
                           input_schema={"type": "object", "properties": {"text": {"type": "string"}}}), noted)
    look = Skill(SkillMeta("look_it", "Look", "Use to look a line up."), lambda args, ctx: {"answer": 42})
    site = SkillSite(tmp_path / "data", desks=False, extra=[note, look])
    key, _ = site.create_key("hot")
    claim = site.claims.claim

    def claiming(*args, **kw):
        where["claim"] = threading.get_ident()
        return claim(*args, **kw)

    site.claims.claim = claiming  # type: ignore[method-assign]
    return site, key, where


def _post(client, key, name, idem=None, **arguments):
    headers = {"X-API-Key": key, **({"Idempotency-Key": idem} if idem else {})}
    return client.post(f"/api/skills/{name}/execute", json={"arguments": arguments}, headers=headers)


def test_a_write_runs_its_handler_in_the_thread_that_took_its_claim(tmp_path):
    site, key, where = _site(tmp_path, lambda args, ctx: {"noted": args["text"]})
    with TestClient(create_app(site)) as client:
        first = _post(client, key, "note_it", "k-1", text="hello")
        again = _post(client, key, "note_it", "k-1", text="hello")
    assert first.status_code == 200 and first.json()["result"]["noted"] == "hello"
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    # one worker: the claim, the handler and the record (no second hand-off for the handler)
    assert where["handler"] == where["claim"] != threading.get_ident()


def test_a_write_past_its_timeout_is_504_and_its_late_outcome_settles_the_key(tmp_path):
    release, calls = threading.Event(), []

    def slow(args, ctx):
        calls.append(1)
        release.wait(20)
        return {"noted": args["text"]}

    site, key, _ = _site(tmp_path, slow, timeout=0.3)
    with TestClient(create_app(site)) as client:
        t0 = time.monotonic()
        late = _post(client, key, "note_it", "k-late", text="late")
        took = time.monotonic() - t0
        # the 0.3 s timeout, not the tool's 20 s: slack for a loaded host
        assert late.status_code == 504 and late.json()["error"]["code"] == "TIMEOUT" and took < 10
        running = _post(client, key, "note_it", "k-late", text="late")  # it may still take effect: never run twice
        assert running.status_code == 409 and running.json()["error"]["code"] == "IN_PROGRESS"
        release.set()
        deadline = time.monotonic() + 10
        while site.claims.result(f"{site.keys.check(key).id}:note_it:k-late") is None:  # the late outcome lands
            assert time.monotonic() < deadline
            time.sleep(0.02)
        replay = _post(client, key, "note_it", "k-late", text="late")
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json()["result"]["noted"] == "late" and calls == [1]
    lines = site.logs.read("call")
    assert [line["status"] for line in lines] == [504, 409, 200] and lines[0]["error"] == "TIMEOUT"


def _write_on_loop(site, key, idem, text, woken, *, alone=True):
    """A keyed write as the execute route makes it, on a new event loop; ``woken`` gets an entry each time another
    thread wakes that loop. ``alone``: no other call in progress (the route's own reading of its slots)."""
    import asyncio

    async def write():
        loop = asyncio.get_running_loop()
        real = loop.call_soon_threadsafe
        loop.call_soon_threadsafe = lambda *a, **kw: (woken.append(1), real(*a, **kw))[1]  # type: ignore[method-assign]
        checked, _ = site.authorize(key, "en")
        return await site.execute_in_worker("note_it", json.dumps({"arguments": {"text": text}}).encode(),
                                            api_key=key, idempotency_key=idem, session_id=None, checked=checked,
                                            alone=alone)
    return asyncio.run(write())


def test_a_quick_write_alone_is_waited_for_in_the_loops_thread_and_a_slow_one_holds_it_no_longer(tmp_path, monkeypatch):
    """Waking the event loop from the write's worker cost a keyed write more CPU than its claim: with no other call
    in progress, the loop's thread waits for the worker itself. A write slow in its worker is then awaited as
    before, the loop serving others meanwhile, and so are its skill's next SLOW_WRITES writes from the start."""
    import asyncio

    from agentlab.site import execute as ex
    monkeypatch.setattr(ex, "_slow", {})
    monkeypatch.setattr(ex, "WRITE_WAIT", 2.0)  # the quick part: far past any first call's time on a loaded host
    release = threading.Event()
    release.set()

    def note(args, ctx):
        release.wait(20)
        return {"noted": args["text"]}

    site, key, where = _site(tmp_path, note)
    woken: list = []
    out = _write_on_loop(site, key, "k-1", "quick", woken)
    assert out.status == 200 and out.body["result"]["noted"] == "quick"
    assert woken == [] and where["handler"] == where["claim"] != threading.get_ident()
    assert _write_on_loop(site, key, "k-2", "beside another", woken, alone=False).status == 200
    assert woken == [1] and ex._slow == {}  # another call in progress: the loop serves it, never waits here

    monkeypatch.setattr(ex, "WRITE_WAIT", 0.05)
    release.clear()  # held until the read beside it has been answered: slow in its worker, not kept from a CPU
    checked, _ = site.authorize(key, "en")

    async def both():
        writing = asyncio.ensure_future(site.execute_in_worker(
            "note_it", b'{"arguments": {"text": "slow"}}', api_key=key, idempotency_key="k-3", session_id=None,
            checked=checked, alone=True))
        await asyncio.sleep(0)
        read = await asyncio.wait_for(site.execute_async(
            "look_it", b'{"arguments": {}}', api_key=key, idempotency_key=None, session_id=None, checked=checked), 10)
        write_done = writing.done()
        await asyncio.sleep(0.2)
        release.set()
        return read, write_done, await writing

    read, write_done, slow = asyncio.run(both())
    assert read.status == 200 and not write_done and slow.status == 200 and slow.body["result"]["noted"] == "slow"
    assert ex._slow == {"note_it:write": ex.SLOW_WRITES}
    woken.clear()
    assert _write_on_loop(site, key, "k-4", "slow again", woken).status == 200
    assert woken == [1] and ex._slow == {"note_it:write": ex.SLOW_WRITES - 1}  # awaited from the start
    ex._slow["note_it:write"] = 1
    assert _write_on_loop(site, key, "k-5", "the last one so", woken).status == 200
    assert ex._slow == {}  # counted down to nothing: no entry kept


@pytest.mark.parametrize("timeout, waited", [(5.0, "WRITE_WAIT"), (0.004, 0.002), (0.0015, None)])
def test_the_loops_own_wait_for_a_write_is_under_half_its_timeout(tmp_path, monkeypatch, timeout, waited):
    """An answer the loop's thread waited for is never one past the handler's deadline: for a timeout shorter than
    twice WRITE_WAIT the loop waits half of it, and not at all below a millisecond (poll() rounds a wait up to one)."""
    from agentlab.site import execute as ex
    from agentlab.timeouts import _pool
    monkeypatch.setattr(ex, "_slow", {})
    limits: list = []
    real = _pool.try_run
    monkeypatch.setattr(_pool, "try_run", lambda fn, limit: (limits.append(limit), real(fn, limit))[1])
    site, key, _ = _site(tmp_path, lambda args, ctx: {"noted": args["text"]}, timeout=timeout)
    assert _write_on_loop(site, key, "k-1", "x", []).status in (200, 504)
    assert limits == ([] if waited is None else [ex.WRITE_WAIT if waited == "WRITE_WAIT" else waited])


def test_a_write_past_its_deadline_after_the_loops_own_wait_is_still_504(tmp_path, monkeypatch):
    """The handler's deadline is looked at from the moment the loop stops waiting in its own thread: it was first
    looked at a whole timeout after that moment, and a handler that ended within that wait's length past its
    deadline was answered 200."""
    from agentlab.site import execute as ex
    monkeypatch.setattr(ex, "_slow", {})
    monkeypatch.setattr(ex, "WRITE_WAIT", 0.5)  # the wait's length, so the gap is wide enough to fall in on purpose
    site, key, _ = _site(tmp_path, lambda args, ctx: (time.sleep(2.25), {"noted": args["text"]})[1], timeout=2.0)
    out = _write_on_loop(site, key, "k-late", "late", [])
    assert out.status == 504 and out.body["error"]["code"] == "TIMEOUT"
    claim = f"{site.keys.check(key).id}:note_it:k-late"
    deadline = time.monotonic() + 10
    while site.claims.result(claim) is None:  # the late outcome still settles its key
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_write_beside_another_call_over_http_is_never_waited_for_in_the_loops_thread(tmp_path):
    """The route reads its slots: the first write, alone, may be waited for; one sent while it runs is not, so
    writes of a few milliseconds each (a remote store's round trips) never run one at a time on the loop."""
    import httpx

    from agentlab.site.serving import serving
    release, entered = threading.Event(), threading.Event()

    def note(args, ctx):
        if args["text"] == "first":
            entered.set()
            release.wait(20)
        return {"noted": args["text"]}

    site, key, _ = _site(tmp_path, note)
    alone: list = []
    real = site.execute_in_worker

    async def recording(*args, **kw):
        alone.append(kw.get("alone"))
        return await real(*args, **kw)

    site.execute_in_worker = recording  # type: ignore[method-assign]
    replies = {}
    with serving(site) as base:
        def first():
            replies["first"] = httpx.post(f"{base}/api/skills/note_it/execute", json={"arguments": {"text": "first"}},
                                          headers={"X-API-Key": key, "Idempotency-Key": "k-1"}, timeout=30)
        caller = threading.Thread(target=first)
        caller.start()
        try:
            assert entered.wait(10)
            second = httpx.post(f"{base}/api/skills/note_it/execute", json={"arguments": {"text": "second"}},
                                headers={"X-API-Key": key, "Idempotency-Key": "k-2"}, timeout=10)
            first_held = "first" not in replies
        finally:
            release.set()
            caller.join(30)
    assert second.status_code == 200 and first_held and replies["first"].status_code == 200
    assert alone == [True, False]


def test_a_name_no_skill_has_is_never_kept_for_the_loops_wait(tmp_path, monkeypatch):
    """Only a write skill's own name is counted (its slow calls), never one a caller made up in the path."""
    import asyncio

    from agentlab.site import service
    seen: list = []
    real = service.run_steps_in_worker

    async def recording(steps, **kw):
        seen.append((kw["name"], kw["alone"]))
        return await real(steps, **kw)

    monkeypatch.setattr(service, "run_steps_in_worker", recording)
    site, key, _ = _site(tmp_path, lambda args, ctx: {"noted": "x"})
    checked, _ = site.authorize(key, "en")
    for name in ("note_it", "no_such_skill_" + "x" * 2000, "look_it"):
        asyncio.run(site.execute_in_worker(name, b'{"arguments": {"text": "x"}}', api_key=key, idempotency_key="k",
                                           session_id=None, checked=checked, alone=True))
    assert seen == [("note_it:write", True), ("", False), ("", False)]


def test_an_execute_skips_the_router_and_every_other_request_takes_it(tmp_path):
    site, key, _ = _site(tmp_path, lambda args, ctx: {"noted": "x"})
    app = create_app(site)
    seen = []
    router = app.router.middleware_stack

    async def counting(scope, receive, send):
        if scope["type"] == "http":
            seen.append((scope["method"], scope["path"]))
        await router(scope, receive, send)

    app.router.middleware_stack = counting
    outer = []  # FastAPI's own layers around the router (server errors, telemetry, the body limit)

    def layers(scope, receive, send):
        if scope["type"] == "http":
            outer.append((scope["method"], scope["path"]))
        return stack(scope, receive, send)

    with TestClient(create_app(site)) as plain, TestClient(app) as client:
        stack = app.middleware_stack  # built when the client started the app
        app.middleware_stack = layers
        fast = _post(client, key, "look_it")
        whole = _post(plain, key, "look_it")
        listing = client.get("/api/skills", headers={"X-API-Key": key})
        wrong = client.get("/api/skills/look_it/execute")  # another method on the path: the router's 405
    assert fast.status_code == whole.status_code == 200 and fast.content == whole.content
    assert {k: v for k, v in fast.headers.items() if k not in ("x-request-id",)} == \
        {k: v for k, v in whole.headers.items() if k not in ("x-request-id",)}
    assert listing.status_code == 200 and wrong.status_code == 405 and wrong.json()["success"] is False
    assert seen == [("GET", "/api/skills"), ("GET", "/api/skills/look_it/execute")]
    assert outer == seen  # an execute meets the access log in front of them, and nothing else
    access = [line for line in site.logs.read("access") if line["path"] == "/api/skills/look_it/execute"]
    assert [line["status"] for line in access] == [200, 200]
    assert [(line["log"], line["status"]) for line in site.logs.read("keyless")
            if line.get("path") == "/api/skills/look_it/execute"] == [("access", 405)]  # it sent no key


def test_a_line_keeps_what_scrub_then_bounded_make_of_every_kind_of_field(tmp_path):
    class Text(str):
        pass

    deep: object = 7
    for _ in range(25):
        deep = [deep]
    fields = {"count": 0, "ok": False, "done": True, "ratio": 1.5, "none": None, "big": 10**30,
              "token": 12345, "password": 0, "api_key": "sk-live-abcdefghijklmnop1234", "skill": Text("a" * 300),
              "note": Text("Bearer abcdefghijklmnopqrstuvwxyz0123"), "deep": deep,
              "result": {"n": 3, "flag": True, "x": None, "secret": 9, "items": [1, 2.5, "Bearer abcdefgh12345678"]}}
    logs = SiteLogs(tmp_path / "logs", clock=lambda: 1.0)
    logs.write("access", request_id="r1", session_id=None, keyless=False, **fields)
    (line,) = logs.read("access")

    def reference(k, v):  # what a field became before the line kept numbers and flags without a walk
        if v and _CREDENTIAL.search(k):
            return "[secret removed]"
        if isinstance(v, str):
            return _cut(redact_secrets(v), FIELD_CHARS)
        return _bounded(scrub(v, 1))

    for k, v in fields.items():
        assert line[k] == json.loads(json.dumps(reference(k, v), ensure_ascii=False)), k
    assert line["deep"] != deep and "[nested too deep]" in json.dumps(line["deep"])
    assert line["token"] == "[secret removed]" and line["password"] == 0 and line["count"] == 0 and line["ok"] is False
    assert "abcdefghijklmnopqrstuvwxyz0123" not in json.dumps(line) and "sk-live" not in json.dumps(line)


@pytest.mark.parametrize("body", [{"success": True, "result": {"city": "北京", "t": 7.0, "n": [1, None, False]},
                                   "error": None, "fallback_hint": "试试 cache — “quoted”"}, {}, {"x": "\u2028\ud7ff"}])
def test_a_reply_is_rendered_byte_for_byte_as_starlette_renders_it(body):
    ours, theirs = _Reply(body, status_code=201, headers={"A": "b"}), JSONResponse(body, status_code=201,
                                                                                  headers={"A": "b"})
    assert ours.body == theirs.body and ours.raw_headers == theirs.raw_headers
    with pytest.raises(ValueError):  # NaN is refused as Starlette refuses it
        _Reply({"x": float("nan")})


def test_an_execute_hears_its_language_from_the_query_or_the_header_and_carries_a_request_id(tmp_path):
    site, key, _ = _site(tmp_path, lambda args, ctx: {"noted": "x"})
    with TestClient(create_app(site)) as client:
        asked = {how: client.post(f"/api/skills/no_such_skill/execute{query}", json={"arguments": {}},
                                  headers={"X-API-Key": key, **headers})
                 for how, query, headers in (("header", "", {"Accept-Language": "zh-CN,zh;q=0.9"}),
                                             ("query", "?lang=zh", {"Accept-Language": "en"}),
                                             ("neither", "", {}), ("other", "?x=1", {"Accept-Language": "en-GB"}),
                                             # the browser's most preferred of the two, by q-value: read by its first
                                             # tag alone, both were English
                                             ("ranked", "", {"Accept-Language": "fr-FR,zh-CN;q=0.8,en;q=0.5"}),
                                             ("weighed", "", {"Accept-Language": "en;q=0.2, zh"}))}
    english, chinese = asked["neither"].json()["error"]["message"], asked["header"].json()["error"]["message"]
    assert english != chinese and asked["query"].json()["error"]["message"] == chinese
    assert asked["ranked"].json()["error"]["message"] == chinese == asked["weighed"].json()["error"]["message"]
    assert asked["other"].json()["error"]["message"] == english and all(r.status_code == 404 for r in asked.values())
    ids = [r.headers["X-Request-Id"] for r in asked.values()]
    assert len(set(ids)) == 6 and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)


def test_a_body_already_in_is_read_without_a_timer_and_one_that_trickles_is_still_cut_off(monkeypatch):
    """receive_body arms the body's deadline only when receive() has to wait: a body in the packet of its headers is taken
    without asyncio's timer; a body that has to be waited for is read whole when it comes in time, in parts too, and
    a body slower than the deadline is refused (408) however it trickles."""
    import asyncio

    from agentlab.site import bodies
    armed: list[float] = []
    timeout_at = asyncio.timeout_at
    monkeypatch.setattr(asyncio, "timeout_at", lambda when: (armed.append(when), timeout_at(when))[1])

    def receiver(parts, pause):
        async def receive():
            if pause:
                await asyncio.sleep(pause)
            body, more = parts.pop(0)
            return {"type": "http.request", "body": body, "more_body": more}
        return receive

    async def read(parts, pause, seconds=1.0):
        return await bodies.receive_body(receiver(list(parts), pause), 1000, seconds)

    assert asyncio.run(read([(b'{"a": 1}', False)], 0)) == b'{"a": 1}' and armed == []  # in at once: no timer
    assert asyncio.run(read([(b'{"a":', True), (b' 2}', False)], 0)) == b'{"a": 2}' and armed == []
    assert asyncio.run(read([(b'{"a":', True), (b' 3}', False)], 0.01)) == b'{"a": 3}' and len(armed) == 2
    armed.clear()
    with pytest.raises(bodies.TooSlow):
        asyncio.run(read([(b"x", True)] * 100 + [(b"", False)], 0.05, seconds=0.3))  # each part in time, not all
    assert len(armed) > 1 and len(set(armed)) == 1  # one deadline for the whole body
    with pytest.raises(bodies.TooLarge):
        asyncio.run(bodies.receive_body(receiver([(b"x" * 600, True), (b"x" * 600, False)], 0), 1000, 1.0))

    async def cancelled():  # a request cancelled while its body is awaited: the cancel reaches receive()
        heard = []

        async def receive():
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                heard.append("cancel")
                raise
        task = asyncio.ensure_future(bodies.receive_body(receive, 1000, 10.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return heard
    assert asyncio.run(cancelled()) == ["cancel"]


def test_the_headers_an_execute_reads_are_picked_in_one_pass_and_read_as_starlette_reads_them():
    """_header picks the headers an execute reads (key, Idempotency-Key, session, language, length, type) out of the
    raw list once and keeps them in the scope; what it gives is what Starlette's Headers.get gives, the first of
    repeated ones included, for those and for any other header."""
    from starlette.datastructures import Headers

    from agentlab.site.app import _PICKED, _header
    raw = [(b"host", b"x"), (b"x-api-key", b"sk-1"), (b"x-api-key", b"sk-2"), (b"content-type", b"application/json"),
           (b"x-session-id", b"s\xe9"), (b"authorization", b"Bearer t"), (b"idempotency-key", b"")]
    scope = {"type": "http", "headers": raw}
    names = [*_PICKED, b"authorization", b"host", b"missing"]
    assert {n: _header(scope, n) for n in names} == {n: Headers(raw=raw).get(n.decode()) for n in names}
    assert scope["agentlab.headers"][b"x-api-key"] == "sk-1"  # one pass, kept for the next reads
    scope["headers"] = []  # later reads use what was picked
    assert _header(scope, b"x-api-key") == "sk-1" and _header(scope, b"accept-language") is None


def test_an_exception_in_the_execute_route_is_logged_and_answered_500_in_the_sites_shape(tmp_path, monkeypatch):
    """The site's own bug on its hot path (FastAPI's server-error layer is not in front of it): a 500 with the site's
    body and a request id, the stack in the error log, the request in the access log."""
    site, key, _ = _site(tmp_path, lambda args, ctx: {"noted": "x"})

    async def broken(*args, **kwargs):
        raise RuntimeError("a bug of the site's own")

    monkeypatch.setattr(site, "execute_async", broken)
    with TestClient(create_app(site), raise_server_exceptions=False) as client:
        got = _post(client, key, "look_it")
    assert got.status_code == 500 and got.json()["success"] is False and got.json()["error"]["code"] == "TOOL_ERROR"
    assert "a bug of the site's own" not in got.text and len(got.headers["X-Request-Id"]) == 16
    (error,) = site.logs.read("error")
    assert error["request_id"] == got.headers["X-Request-Id"] and "a bug of the site's own" in error["stack"]
    assert [line["status"] for line in site.logs.read("access") if line["request_id"] == error["request_id"]] == [500]


def test_a_body_whose_sender_went_away_is_never_taken_for_the_request():
    """receive_body gave back the part that arrived when the client disconnected: the model gate then sent that part
    to the model, holding the participant's place."""
    import asyncio

    from agentlab.site import bodies
    parts = [{"type": "http.request", "body": b'{"messages": [', "more_body": True}, {"type": "http.disconnect"}]

    async def receive():
        return parts.pop(0)
    with pytest.raises(bodies.Gone):
        asyncio.run(bodies.receive_body(receive, 1000, 1.0))


def test_a_write_with_no_worker_to_be_had_is_unavailable_and_its_resend_runs(tmp_path, monkeypatch):
    """Out of descriptors or threads, no worker can start: nothing ran, so the caller hears 503 UNAVAILABLE (send it
    again later, with Retry-After on the route), never TOOL_ERROR ("do not repeat") nor a claim settled as unknown;
    once a worker can start, the same key runs, once."""
    from agentlab import timeouts, workers
    from agentlab.site import execute as ex
    ran: list[str] = []
    site, key, _ = _site(tmp_path, lambda args, ctx: (ran.append(args["text"]), {"noted": args["text"]})[1])
    fresh = workers._Pool()  # no idle worker to take
    for module in (workers, timeouts, ex):
        monkeypatch.setattr(module, "_pool", fresh)

    def no_pipe():
        raise OSError(24, "Too many open files")
    body = json.dumps({"arguments": {"text": "hello"}}).encode()
    with monkeypatch.context() as out_of_descriptors:
        out_of_descriptors.setattr(workers.os, "pipe", no_pipe)
        sync = site.execute("note_it", body, api_key=key, idempotency_key="k-1", session_id=None)
        on_loop = _write_on_loop(site, key, "k-2", "hello", [])
    assert (sync.status, sync.body["error"]["code"]) == (503, "UNAVAILABLE"), sync.body
    assert (on_loop.status, on_loop.body["error"]["code"]) == (503, "UNAVAILABLE"), on_loop.body
    assert on_loop.headers.get("Retry-After") and ran == []
    again = site.execute("note_it", body, api_key=key, idempotency_key="k-1", session_id=None)
    assert again.status == 200 and _write_on_loop(site, key, "k-2", "hello", []).status == 200
    assert ran == ["hello", "hello"], "each key ran once, when a worker could start"

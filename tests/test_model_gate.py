"""The room's model gate (agentlab/hub/model_gate.py): participants' own keys, one request each at the model, served
in turn. The upstream here is a stand-in model that answers only when the test lets it, so the order in which the
gate lets requests through is seen exactly, with no clock."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agentlab.hub.model_gate import FairShare, Full, gate_app, model_key, who_holds
from agentlab.i18n import t

SECRET = "room-secret-1"


class Upstream:
    """A model that records each request's ``user`` field as it arrives and answers it when released."""

    def __init__(self) -> None:
        self.arrived: list[str] = []
        self.release: dict[str, asyncio.Event] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if scope["path"] == "/health":
            who = None
        else:
            who = json.loads(body)["user"]
            self.arrived.append(who)
            await self.release.setdefault(who, asyncio.Event()).wait()
        reply = json.dumps({"ok": who}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": reply})

    def let(self, who: str) -> None:
        self.release.setdefault(who, asyncio.Event()).set()


def _gate(slots: int, depth: int = 4):
    model = Upstream()
    upstream = httpx.AsyncClient(transport=httpx.ASGITransport(app=model), base_url="http://model")
    share = FairShare(slots, depth=depth)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=gate_app(share, SECRET, upstream)),
                               base_url="http://gate", timeout=30)
    return model, share, client


def _ask(client, name: str, tag: str, key: str | None = None):
    key = model_key(SECRET, name) if key is None else key
    return client.post("/v1/chat/completions", json={"user": tag, "messages": []},
                       headers={"Authorization": f"Bearer {key}"} if key else {})


async def _settle():
    for _ in range(50):  # let every task run to its next wait
        await asyncio.sleep(0)


def test_a_key_is_the_participants_own_and_cannot_be_made_up():
    key = model_key(SECRET, "ana-b_2")
    assert who_holds(SECRET, key) == "ana-b_2"
    assert who_holds(SECRET, model_key(SECRET, "bo")) == "bo"
    assert who_holds(SECRET, key[:-1] + ("0" if key[-1] != "0" else "1")) is None
    assert who_holds(SECRET, key.replace("ana-b_2", "bo")) is None  # another's name with ana's MAC
    assert who_holds("another-room", key) is None
    assert who_holds(SECRET, "not-needed") is None and who_holds(SECRET, "mk-") is None


def test_one_participants_flood_waits_behind_anothers_single_request():
    """A has four requests in before B's one; with one slot the model answers a1, then b1, then A's others.
    First come, first served (the model alone, as before the gate) answered b1 last."""
    async def main():
        model, share, client = _gate(slots=1)
        asks = [asyncio.create_task(_ask(client, "ana", f"a{i}")) for i in range(1, 5)]
        await _settle()
        asks.append(asyncio.create_task(_ask(client, "bo", "b1")))
        await _settle()
        for tag in ("a1", "b1", "a2", "a3", "a4"):
            assert model.arrived[-1] == tag, model.arrived
            model.let(tag)
            await _settle()
        replies = await asyncio.gather(*asks)
        assert [r.json()["ok"] for r in replies] == ["a1", "a2", "a3", "a4", "b1"]
        assert model.arrived == ["a1", "b1", "a2", "a3", "a4"]
        assert share.busy == 0 and not share.holding and not share.waiting
    asyncio.run(main())


def test_each_participant_holds_one_slot_so_another_is_answered_at_once():
    async def main():
        model, share, client = _gate(slots=2)
        asks = [asyncio.create_task(_ask(client, "ana", f"a{i}")) for i in range(1, 4)]
        await _settle()
        assert model.arrived == ["a1"]  # one at a time for ana, though a slot is free
        b = asyncio.create_task(_ask(client, "bo", "b1"))
        await _settle()
        assert model.arrived == ["a1", "b1"]  # bo is at the model at once, beside ana's first
        model.let("b1")
        assert (await b).json() == {"ok": "b1"}
        for tag in ("a1", "a2", "a3"):
            model.let(tag)
        await asyncio.gather(*asks)
        assert share.busy == 0
    asyncio.run(main())


def test_no_key_or_a_made_up_one_is_refused_in_both_languages_and_never_reaches_the_model():
    async def main():
        model, _, client = _gate(slots=1)
        for key in ("", "not-needed", model_key("another-room", "ana")):
            reply = await _ask(client, "ana", "x", key=key)
            assert reply.status_code == 401
            message = reply.json()["error"]["message"]
            assert message.splitlines() == [t("hub.model.no_key", "en"), t("hub.model.no_key", "zh")]
        assert model.arrived == []
        assert (await client.get("/health")).status_code == 200  # the hub asks it with no key
    asyncio.run(main())


def test_a_participant_past_their_queue_is_refused_at_once_and_the_others_are_not():
    async def main():
        model, _, client = _gate(slots=1, depth=2)
        asks = [asyncio.create_task(_ask(client, "ana", f"a{i}")) for i in range(1, 4)]  # 1 at the model, 2 waiting
        await _settle()
        refused = await _ask(client, "ana", "a4")
        assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
        assert refused.json()["error"]["message"].splitlines()[0] == t("hub.model.queue_full", "en")
        b = asyncio.create_task(_ask(client, "bo", "b1"))
        await _settle()
        for tag in ("a1", "b1", "a2", "a3"):
            model.let(tag)
            await _settle()
        assert (await b).status_code == 200
        assert [r.status_code for r in await asyncio.gather(*asks)] == [200] * 3
        assert model.arrived == ["a1", "b1", "a2", "a3"]
    asyncio.run(main())


def test_a_request_given_up_while_waiting_leaves_no_place_behind():
    async def main():
        share = FairShare(1)
        await share.enter("ana")
        waiting = asyncio.create_task(share.enter("bo"))
        await _settle()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert share.waiting == {} and share.holding == {"ana": 1}
        share.leave("ana")
        assert share.busy == 0 and not share.holding
        await share.enter("cy")  # the place is free for whoever asks next
        assert share.served == ["ana", "cy"]
    asyncio.run(main())


def test_fair_share_refuses_nonsense_and_full_queues():
    with pytest.raises(ValueError):
        FairShare(0)

    async def main():
        share = FairShare(1, depth=0)
        await share.enter("ana")
        with pytest.raises(Full):
            await share.enter("ana")
    asyncio.run(main())


def test_only_the_models_api_is_forwarded_and_a_body_past_its_cap_is_refused_unread():
    """The gate forwarded any path (llama.cpp's /slots showed every participant's activity, /props the machine's
    paths) and read any body whole (six of a gigabyte each held 8 GB of the machine, which no cgroup bounds)."""
    from agentlab.hub.model_gate import MODEL_BODY

    async def main():
        model, _, client = _gate(slots=1)
        key = {"Authorization": f"Bearer {model_key(SECRET, 'mallory')}"}
        for path in ("/slots", "/props", "/v1/../slots", "/metrics"):
            reply = await client.get(path, headers=key)
            assert reply.status_code == 404, path
            assert reply.json()["error"]["message"].splitlines() == [t("hub.model.no_path", lg) for lg in ("en", "zh")]

        async def endless():
            for _ in range(MODEL_BODY // 65536 + 2):
                yield b"x" * 65536
        big = await client.post("/v1/chat/completions", content=endless(), headers=key)  # chunked: no length declared
        declared = await client.post("/v1/chat/completions", content=b"{}",
                                     headers={**key, "Content-Length": str(MODEL_BODY + 1)})
        assert big.status_code == 413 and declared.status_code in (413, 400)
        assert model.arrived == []
        model.let("fine")
        ok = await _ask(client, "ana", "fine")  # the API itself still answers
        assert ok.status_code == 200
    asyncio.run(main())


def test_a_body_that_trickles_past_its_time_is_refused_in_both_languages_and_never_reaches_the_model(monkeypatch):
    """The gate read a body for as long as its sender took: a byte a second held a connection of the participant's
    share, and its memory, without end. It is read as the site reads one (agentlab.site.bodies), within its time."""
    from agentlab.site import bodies
    monkeypatch.setattr(bodies, "BODY_SECONDS", 0.2)

    async def main():
        model, _, client = _gate(slots=1)
        key = {"Authorization": f"Bearer {model_key(SECRET, 'mallory')}"}

        async def trickle():
            for _ in range(20):
                await asyncio.sleep(0.05)
                yield b" "
        slow = await client.post("/v1/chat/completions", content=trickle(), headers=key)
        assert slow.status_code == 408
        assert slow.json()["error"]["message"].splitlines() == [t("hub.model.too_slow", lg, limit="0.2")
                                                                for lg in ("en", "zh")]
        assert model.arrived == []
        model.let("fine")
        assert (await _ask(client, "mallory", "fine")).status_code == 200  # her next request is served
    asyncio.run(main())


@pytest.mark.parametrize("body", [
    {"user": "m", "prompt": ["Write a long story about refunds."] * 3000, "max_tokens": 64},
    {"user": "m", "prompt": ["a", [1, 2, 3]]}, {"user": "m", "messages": [], "n": 3}, {"user": "m", "prompt": "a", "n": "3"},
])
def test_a_request_for_several_answers_at_once_is_refused_and_never_reaches_the_model(body):
    """One request of 3,000 prompts held every slot of the model (llama.cpp runs each prompt, and each of n answers, as
    a task of its own) while the gate counted it as one place: another participant's 16-token question timed out."""
    async def main():
        model, _, client = _gate(slots=3)
        key = {"Authorization": f"Bearer {model_key(SECRET, 'mallory')}"}
        reply = await client.post("/v1/completions", json=body, headers=key)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["message"].splitlines() == [t("hub.model.one_task", lg) for lg in ("en", "zh")]
        assert model.arrived == []
        for one in ({"user": "t", "prompt": [15, 16, 17]}, {"user": "s", "prompt": "one", "n": 1},
                    {"user": "l", "prompt": ["one"]}, {"user": "c", "messages": []}):  # one prompt, one answer: forwarded
            model.let(one["user"])
            ok = await client.post("/v1/completions", json=one, headers=key)
            assert ok.status_code == 200, (one, ok.text)
    asyncio.run(main())

"""The real ``openai`` client, end to end, against the project's own chat-completions server."""
import json
import random

import pytest

openai = pytest.importorskip("openai")

from agentlab.errors import friendly  # noqa: E402
from agentlab.loop import run_guarded  # noqa: E402
from agentlab.models import ModelError, Reply, ToolCall, call, say  # noqa: E402
from agentlab.models.fakeserver import ChatServer, HTTPFault, Slow, malformed  # noqa: E402
from agentlab.models.openai_model import OpenAIModel  # noqa: E402
from agentlab.naive import run_naive  # noqa: E402
from agentlab.retry import RetryPolicy  # noqa: E402
from agentlab.scenarios import aftersales  # noqa: E402
from agentlab.workbook.demo import make_model  # noqa: E402


def model(server, **kw):
    waits = kw.pop("waits", [])
    return OpenAIModel("test-model", base_url=server.base_url, api_key="sk-test", sleep=waits.append,
                       rng=random.Random(0), **kw)


def test_text_and_tool_calls_round_trip():
    with ChatServer([call("get_order", {"order_id": "A1001"}), say("done")]) as server:
        m = model(server)
        r = m.complete([{"role": "user", "content": "hi"}], aftersales.SCENARIO.setup()[1].specs())
        assert r.tool_calls[0].name == "get_order" and json.loads(r.tool_calls[0].arguments) == {"order_id": "A1001"}
        assert r.usage.prompt_tokens > 0
        body = server.requests[0]
        assert body["temperature"] == 0 and body["tool_choice"] == "auto" and "parallel_tool_calls" not in body
        assert m.complete([], []).content == "done"


def test_tool_choice_and_parallel_flag_are_sent():
    with ChatServer([say("a"), say("b")]) as server:
        tools = aftersales.SCENARIO.setup()[1].specs()
        model(server, tool_choice="get_order", parallel_tool_calls=False).complete([], tools)
        model(server, tool_choice="required").complete([], tools)
        assert server.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "get_order"}}
        assert server.requests[0]["parallel_tool_calls"] is False and server.requests[1]["tool_choice"] == "required"


def test_429_is_resent_after_retry_after():
    waits = []
    with ChatServer([HTTPFault(429, retry_after=1.5), say("ok")]) as server:
        assert model(server, waits=waits).complete([], []).content == "ok"
        assert server.attempts == 2 and waits[0] >= 1.5


@pytest.mark.parametrize("status,code", [(500, "UNAVAILABLE"), (503, "UNAVAILABLE"), (429, "RATE_LIMITED")])
def test_transient_errors_stop_at_the_cap(status, code):
    with ChatServer([HTTPFault(status)] * 5) as server:
        with pytest.raises(ModelError) as exc:
            model(server, retry=RetryPolicy(max_retries=2)).complete([], [])
        assert exc.value.code == code and exc.value.attempts == 3 and server.attempts == 3


@pytest.mark.parametrize("fault,code", [
    (HTTPFault(401, "Incorrect API key provided: sk-abc***"), "UNAUTHENTICATED"),
    (HTTPFault(403), "PERMISSION_DENIED"), (HTTPFault(404, "model not found"), "NOT_FOUND"),
    (HTTPFault(400, "bad field"), "BAD_REQUEST"),
    (HTTPFault(400, "This model's maximum context length is 4096 tokens", code="context_length_exceeded"), "CONTEXT_TOO_LONG"),
])
def test_fatal_errors_are_never_resent(fault, code):
    with ChatServer([fault, say("never")]) as server:
        with pytest.raises(ModelError) as exc:
            model(server).complete([], [])
        assert exc.value.code == code and server.attempts == 1
        assert "sk-" not in friendly(exc.value.to_error(), "en") and friendly(exc.value.to_error(), "zh")


def test_timeout_and_connection_errors_are_transient():
    with ChatServer([Slow(1.0, say("late")), say("ok")]) as server:
        m = OpenAIModel("m", base_url=server.base_url, api_key="k", timeout=0.3, sleep=lambda s: None)
        assert m.complete([], []).content == "ok" and m.last_attempts == 2
    m = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k", sleep=lambda s: None,
                    retry=RetryPolicy(max_retries=1))
    with pytest.raises(ModelError) as exc:
        m.complete([], [])
    assert exc.value.code == "UNAVAILABLE" and exc.value.attempts == 2


def test_the_clients_own_retries_would_multiply_ours():
    """The bare client retries a 500 twice by itself; ours turns that off so the policy is the only layer."""
    with ChatServer([HTTPFault(500)] * 10) as server:
        bare = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=2)
        with pytest.raises(openai.InternalServerError):
            bare.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert server.attempts == 3  # 1 + its 2 hidden retries
    with ChatServer([HTTPFault(500)] * 10) as server:
        with pytest.raises(ModelError):
            model(server, retry=RetryPolicy(max_retries=2)).complete([], [])
        assert server.attempts == 3  # exactly what our policy says, not 3 x 3


def test_the_guarded_loop_does_not_resend_what_the_adapter_already_did():
    with ChatServer([HTTPFault(500)] * 10) as server:
        _desk, reg = aftersales.SCENARIO.setup()
        run = run_guarded(model(server, retry=RetryPolicy(max_retries=2)), reg, "x", sleep=lambda s: None)
        assert run.status == "escalated" and server.attempts == 3 and run.retries == 2
        assert "busy" in run.answer and "500" in (run.events[0].note or "")


def test_quirks_empty_content_pretty_arguments_and_unparsable_500():
    pretty = Reply("", (ToolCall("get_order", '{\n  "order_id": "A1001"\n}', "c1"),))
    parse_fail = HTTPFault(500, "Failed to parse tool call arguments as JSON")
    with ChatServer([pretty, parse_fail, say("ok")]) as server:
        m = model(server)
        r = m.complete([], [])
        assert r.content is None and r.tool_calls[0].arguments.startswith("{\n")
        _desk, reg = aftersales.SCENARIO.setup()
        assert reg.check("get_order", r.tool_calls[0].arguments).ok
        assert m.complete([], []).content == "ok"
        assert server.requests[2]["temperature"] == 0.3  # the resend varies the sampling a little


def test_malformed_arguments_reach_the_guarded_loop_as_bad_json():
    with ChatServer([malformed("get_order", '{"order_id": "A1001"'), call("get_order", {"order_id": "A1001"}),
                     say("A1001 is paid.")]) as server:
        _desk, reg = aftersales.SCENARIO.setup()
        run = run_guarded(model(server), reg, "where is A1001?")
        assert [e.error_code for e in run.tool_events] == ["BAD_JSON", None] and run.status == "done_after_self_correction"
        assert run.events[0].prompt_tokens > 0 and run.tokens > 0


def test_a_fake_model_behind_the_server_matches_the_direct_run():
    with ChatServer(model=make_model()) as server:
        desk, reg = aftersales.SCENARIO.setup()
        via_http = run_guarded(model(server), reg, "refund A1001", sleep=lambda s: None)
    desk2, reg2 = aftersales.SCENARIO.setup()
    direct = run_guarded(make_model(), reg2, "refund A1001", sleep=lambda s: None)
    assert via_http.status == direct.status == "done" and desk.snapshot() == desk2.snapshot()
    with ChatServer(model=make_model()) as server:
        desk, reg = aftersales.SCENARIO.setup()
        assert run_naive(model(server), reg, "refund A1001").status == "done"


def test_environment_configuration(monkeypatch):
    with ChatServer([say("env")]) as server:
        monkeypatch.setenv("AGENTLAB_BASE_URL", server.base_url)
        monkeypatch.setenv("AGENTLAB_API_KEY", "sk-env")
        monkeypatch.setenv("AGENTLAB_MODEL", "env-model")
        m = OpenAIModel()
        assert m.complete([], []).content == "env" and server.requests[0]["model"] == "env-model"


def test_a_client_that_gives_up_leaves_no_traceback_on_the_server(capfd):
    """The client times out and closes; the server's late write hits a closed socket, quietly."""
    with ChatServer([Slow(0.5, say("late")), Slow(0.5, say("late again")), say("ok")]) as server:
        bare = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=0.1)
        for _ in range(2):
            with pytest.raises(openai.APITimeoutError):
                bare.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert server.wait_idle(10)  # both late replies have been written into closed sockets by now
        assert model(server).complete([], []).content == "ok"  # and the server still serves
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception occurred" not in err, err


def test_a_retry_after_longer_than_the_cap_is_still_honoured():
    """Retry-After: 20 against a backoff cap of 8 s: the server's word wins, never a resend before 20 s."""
    waits = []
    with ChatServer([HTTPFault(429, retry_after=20), say("ok")]) as server:
        m = model(server, waits=waits, retry=RetryPolicy(max_retries=2, cap=8.0, longest_wait=30))
        assert m.complete([], []).content == "ok"
    assert server.attempts == 2 and waits == [20]


def test_retry_after_beyond_the_longest_wait_stops_at_once_and_says_when():
    waits = []
    with ChatServer([HTTPFault(429, retry_after=120), say("never")]) as server:
        m = model(server, waits=waits, retry=RetryPolicy(max_retries=2, longest_wait=30))
        with pytest.raises(ModelError) as exc:
            m.complete([], [])
    assert exc.value.code == "RATE_LIMITED" and exc.value.retry_after == 120 and exc.value.status == 429
    assert server.attempts == 1 and waits == [] and exc.value.attempts == 1


def test_the_guarded_loop_tells_the_user_when_to_come_back():
    waits = []
    with ChatServer([HTTPFault(429, retry_after=120)] * 3) as server:
        _desk, reg = aftersales.SCENARIO.setup()
        run = run_guarded(model(server, waits=waits), reg, "refund A1001", sleep=waits.append)
    assert server.attempts == 1 and waits == []
    assert run.status == "escalated" and "120 seconds" in run.answer


def test_an_http_date_retry_after_is_a_wait_too():
    """Retry-After may be a date (RFC 9110); it is honoured like a number of seconds, not ignored."""
    import time
    from email.utils import formatdate
    waits = []
    with ChatServer([HTTPFault(429, retry_after=formatdate(time.time() + 15, usegmt=True)), say("ok")]) as server:
        assert model(server, waits=waits).complete([], []).content == "ok"
    assert server.attempts == 2 and 13 <= waits[0] <= 16


def test_a_lone_surrogate_end_to_end_through_the_client_and_the_server_is_a_readable_error():
    from agentlab.store import SQLiteStore
    half_emoji = Reply(None, (ToolCall("escalate_to_human", '{"summary": "upset \ud83d help"}', "c1"),))
    escaped = Reply(None, (ToolCall("escalate_to_human", '{"summary": "upset \\ud83d help"}', "c2"),))
    with ChatServer([half_emoji, escaped, say("Sorry, a colleague will call you.")]) as server:
        desk, reg = aftersales.SCENARIO.setup()
        run = run_guarded(model(server), reg, "I am upset, help", store=SQLiteStore(), sleep=lambda s: None)
    codes = [(e.error_code, json.loads(e.model_visible)["error"]["problems"][0]["reason"]) for e in run.tool_events]
    assert codes == [("INVALID_ARGS", "broken_text")] * 2 and desk.tickets == []
    assert run.status.startswith("done")


def test_strict_asks_for_constrained_arguments_and_takes_out_the_nulls_it_forces():
    from types import SimpleNamespace

    from agentlab.models.openai_model import strict_spec
    spec = {"type": "function", "function": {"name": "refund", "description": "Refund.", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}, "note": {"type": "string"},
                                         "item": {"type": "object", "properties": {"sku": {"type": "string"}}}},
        "required": ["order_id"]}}}
    strict = strict_spec(spec)["function"]
    params = strict["parameters"]
    assert strict["strict"] is True and params["additionalProperties"] is False
    assert params["required"] == ["order_id", "note", "item"]
    assert params["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    inner = params["properties"]["item"]["anyOf"][0]
    assert inner["additionalProperties"] is False and inner["required"] == ["sku"]
    sent = []

    def create(**kw):
        sent.append(kw)
        return {"choices": [{"message": {"content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "refund", "arguments": '{"order_id": "A1", "note": null, "item": null}'}}]}}]}

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    model = OpenAIModel("m", client=client, strict=True)
    reply = model.complete([{"role": "user", "content": "refund A1"}], [spec])
    assert sent[0]["tools"][0]["function"]["strict"] is True
    assert json.loads(reply.tool_calls[0].arguments) == {"order_id": "A1"}  # optional nulls taken out
    plain = OpenAIModel("m", client=client).complete([{"role": "user", "content": "x"}], [spec])
    assert "strict" not in sent[1]["tools"][0]["function"] and '"note": null' in plain.tool_calls[0].arguments


def test_a_broken_call_in_the_history_does_not_break_every_later_turn():
    """llama.cpp refuses (500) a request whose history holds tool-call arguments that are not JSON; the model's own
    broken call is sent on as a JSON string of its text, and a valid one unchanged."""
    from types import SimpleNamespace

    from agentlab.models.openai_model import clean_messages

    def create(**kw):  # parses the history's arguments as llama.cpp does
        for m in kw["messages"]:
            for c in m.get("tool_calls") or []:
                json.loads(c["function"]["arguments"])
        return {"choices": [{"message": {"content": "fixed"}}]}

    broken = '{"end": 2 * Math.PI}'
    history = [{"role": "user", "content": "plot"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "plot", "arguments": broken}},
                   {"id": "c2", "type": "function", "function": {"name": "plot", "arguments": '{"end": 6.28}'}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "BAD_JSON"},
               {"role": "tool", "tool_call_id": "c2", "content": "ok"}]
    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    assert OpenAIModel("m", client=client, retry=None).complete(history, []).content == "fixed"
    sent = clean_messages(history)[1]["tool_calls"]
    assert json.loads(sent[0]["function"]["arguments"]) == broken and sent[1]["function"]["arguments"] == '{"end": 6.28}'
    assert history[1]["tool_calls"][0]["function"]["arguments"] == broken  # the loop's own history is untouched


# --- answers that are no completion: never a finished task ---------------------------------------------------
class RawServer:
    """Answers each POST with the next (status, headers, body) as written; a body may be a list of
    (seconds, bytes) pieces, sent one by one (a trickle)."""

    def __init__(self, answers):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        self.answers, self.attempts = list(answers), 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.attempts += 1
                status, headers, body = server.answers.pop(0) if server.answers else (500, {}, b"{}")
                pieces = body if isinstance(body, list) else [(0, body)]
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(sum(len(b) for _, b in pieces)))
                self.end_headers()
                try:
                    for wait, piece in pieces:
                        time.sleep(wait)
                        self.wfile.write(piece)
                        self.wfile.flush()
                except ConnectionError:  # the client stopped reading: that is the point
                    self.close_connection = True

        class Quiet(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):  # a client that gave up is the point, not a fault
                pass

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


import time  # noqa: E402


def _completion(message) -> bytes:
    return json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()


LOGIN_PAGE = (200, {"Content-Type": "text/html"}, b"<html><body><form>Sign in to the proxy</form></body></html>")
UNREADABLE = {
    "no choices": ((200, {}, b'{"id": "c1", "object": "chat.completion"}'), "UNAVAILABLE", "model.no_choices"),
    "empty choices": ((200, {}, b'{"id": "c1", "choices": []}'), "UNAVAILABLE", "model.no_choices"),
    "no message": ((200, {}, b'{"id": "c1", "choices": [{"index": 0}]}'), "UNAVAILABLE", "model.no_message"),
    "html login page": (LOGIN_PAGE, "MODEL_ERROR", "model.not_json"),
    "json but a list": ((200, {}, b"[1, 2]"), "MODEL_ERROR", "model.not_json"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_an_unreadable_answer_is_an_error_with_a_sentence_never_done(case):
    from agentlab.i18n import t
    answer, code, said = UNREADABLE[case]
    with RawServer([answer] * 3) as server:
        m = OpenAIModel("m", base_url=server.base_url, api_key="k", sleep=lambda s: None,
                        retry=RetryPolicy(max_retries=1))
        with pytest.raises(ModelError) as exc:
            m.complete([{"role": "user", "content": "hi"}], [])
        err = exc.value.to_error()
        assert exc.value.code == code and err.text("zh") == t(said, "zh") and err.text("en") == t(said, "en")
        assert server.attempts == (2 if exc.value.transient else 1)  # a login page will not go away by asking again
        _desk, reg = aftersales.SCENARIO.setup()
        run = run_guarded(m, reg, "Refund A1001", sleep=lambda s: None)
    assert run.status == "escalated" and run.answer


def test_a_gzip_bomb_is_not_read_past_the_limit():
    import gzip
    bomb = gzip.compress(b"{" + b" " * (40 * 2**20) + b"}", 9)  # 40 MB of nothing, ~40 KB on the wire
    with RawServer([(200, {"Content-Encoding": "gzip"}, bomb)]) as server:
        m = OpenAIModel("m", base_url=server.base_url, api_key="k", sleep=lambda s: None, max_reply_bytes=2**20)
        with pytest.raises(ModelError) as exc:
            m.complete([{"role": "user", "content": "hi"}], [])
    assert exc.value.code == "MODEL_ERROR" and exc.value.said == "model.too_large" and server.attempts == 1
    assert "1 MB" in exc.value.to_error().text("en") and "1 MB" in exc.value.to_error().text("zh")


def test_a_gzipped_answer_within_the_limit_is_read():
    import gzip
    body = gzip.compress(_completion({"role": "assistant", "content": "fine"}))
    with RawServer([(200, {"Content-Encoding": "gzip"}, body)]) as server:
        m = OpenAIModel("m", base_url=server.base_url, api_key="k", sleep=lambda s: None)
        assert m.complete([{"role": "user", "content": "hi"}], []).content == "fine"


def test_a_trickling_answer_is_cut_at_the_attempts_timeout():
    body = _completion({"role": "assistant", "content": "slowly " * 10})
    trickle = [(0.05, body[i:i + 4]) for i in range(0, len(body), 4)]  # ~3 s in all, each piece well within a read timeout
    with RawServer([(200, {}, trickle)]) as server:
        m = OpenAIModel("m", base_url=server.base_url, api_key="k", sleep=lambda s: None, timeout=0.3, retry=None)
        with pytest.raises(ModelError) as exc:
            m.complete([{"role": "user", "content": "hi"}], [])
    assert exc.value.code == "TIMEOUT"


def test_list_of_parts_content_is_joined_as_text():
    parts = [{"type": "text", "text": "Your refund "}, {"type": "text", "text": "is on its way."}]
    with RawServer([(200, {}, _completion({"role": "assistant", "content": parts}))]) as server:
        m = OpenAIModel("m", base_url=server.base_url, api_key="k", sleep=lambda s: None)
        assert m.complete([{"role": "user", "content": "hi"}], []).content == "Your refund is on its way."


def test_a_lone_surrogate_in_a_call_id_does_not_break_the_next_request():
    from agentlab.store import MemoryStore
    odd = Reply(None, (ToolCall("get_order", '{"order_id": "A1001"}', "call_\ud800"),))
    with ChatServer([odd, say("A1001 is paid.")]) as server:
        m = model(server)
        direct = m.complete([{"role": "user", "content": "hi"}], [])
        assert direct.tool_calls[0].id == "call_\\ud800"
    with ChatServer([odd, say("A1001 is paid.")]) as server:
        _desk, reg = aftersales.SCENARIO.setup()
        run = run_guarded(model(server), reg, "Where is A1001?", store=MemoryStore(), sleep=lambda s: None)
        assert server.attempts == 2
    assert run.status == "done" and run.answer == "A1001 is paid."


# --- retry-after-ms: OpenAI's own header, in milliseconds, read before Retry-After -------------------------
def test_retry_after_ms_is_honoured_in_milliseconds():
    waits = []
    with ChatServer([HTTPFault(429, headers={"retry-after-ms": "2500"}), say("ok")]) as server:
        assert model(server, waits=waits).complete([], []).content == "ok"
    assert server.attempts == 2 and waits == [2.5]  # 2500 ms, neither 2500 s nor our own backoff (at most 0.5 s)


def test_retry_after_ms_wins_over_retry_after():
    """Both sent: the finer one is what the server meant (the openai client reads them in this order too)."""
    waits = []
    with ChatServer([HTTPFault(503, retry_after=1, headers={"retry-after-ms": "1750"}), say("ok")]) as server:
        assert model(server, waits=waits).complete([], []).content == "ok"
    assert server.attempts == 2 and waits == [1.75]


def test_retry_after_ms_beyond_the_longest_wait_stops_at_once_and_says_when():
    waits = []
    with ChatServer([HTTPFault(429, headers={"retry-after-ms": "120000"}), say("never")]) as server:
        m = model(server, waits=waits, retry=RetryPolicy(max_retries=2, longest_wait=30))
        with pytest.raises(ModelError) as exc:
            m.complete([], [])
    assert exc.value.code == "RATE_LIMITED" and exc.value.retry_after == 120 and server.attempts == 1 and waits == []


def test_an_unreadable_retry_after_ms_falls_back_to_retry_after():
    waits = []
    with ChatServer([HTTPFault(429, retry_after=3, headers={"retry-after-ms": "soon"}), say("ok")]) as server:
        assert model(server, waits=waits).complete([], []).content == "ok"
    assert server.attempts == 2 and waits == [3]


def _tls(m):
    """The TLS context a model's HTTP client would use (read through the client's connection pool)."""
    pool = m.client._client._transport._pool
    return pool._ssl_context


def test_models_share_one_tls_context(monkeypatch):
    """A model per case (an evaluation at concurrency 8) must not read the CA bundle again for each one:
    that was ~60 ms of CPU a model, spent serialised. The shared context follows SSL_CERT_FILE as the
    client's own would."""
    a = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    b = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert _tls(a) is _tls(b)
    assert _tls(a).verify_mode.name == "CERT_REQUIRED" and _tls(a).check_hostname  # still verifying
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as other:  # another trust setting (an empty folder): another context
        monkeypatch.setenv("SSL_CERT_DIR", other)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        c = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
        assert _tls(c) is not _tls(a) and os.environ["SSL_CERT_DIR"] == other


def test_stopping_the_test_server_never_hangs_its_caller():
    """``BaseServer.shutdown`` waits forever for a serving loop that never started (or stalled): a fixture's
    cleanup must come back anyway, and the port must be free afterwards."""
    import threading

    never_started = ChatServer([say("unused")])
    stopper = threading.Thread(target=never_started.stop, daemon=True)
    stopper.start()
    stopper.join(10)
    assert not stopper.is_alive()
    with ChatServer([say("ok")]) as server:
        assert model(server).complete([], []).content == "ok"
    assert server._httpd.socket.fileno() == -1  # closed


def test_the_body_sent_without_the_sdks_transform_is_the_body_the_sdk_sends():
    """Our own client puts the loop's messages and tools in the body as they are (``extra_body``), skipping the SDK's
    typed walk of them; the server must receive exactly what ``create(**kw)`` sends, for every kind of message."""
    import openai
    _desk, reg = aftersales.SCENARIO.setup()
    messages = [{"role": "system", "content": "You are a desk."}, {"role": "user", "content": "退款 A1001 😀"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1001"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
                {"role": "user", "content": [{"type": "text", "text": "and now?"}]}]
    with ChatServer([say("a"), say("b")]) as server:
        ours = OpenAIModel("m", base_url=server.base_url, api_key="k", max_tokens=50, parallel_tool_calls=False)
        ours.complete(messages, reg.specs(), tool_choice="required")
        plain = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        from agentlab.models.openai_model import clean_messages
        plain.chat.completions.create(**ours.request(clean_messages(messages), reg.specs(), "required"))
    fast, documented = server.requests
    assert fast == documented
    assert ours._plain_json  # and the first did go the fast way
    from agentlab.models.openai_model import _as_body
    sent = _as_body({**ours.request(messages, reg.specs()), "extra_body": {"top_k": 20}})  # a subclass's own options
    assert sent["messages"] == [] and sent["extra_body"]["top_k"] == 20 and sent["extra_body"]["tools"] == reg.specs()
    assert fast["tools"] == reg.specs() and fast["messages"][3]["tool_call_id"] == "c1"

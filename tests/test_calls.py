"""One tool call of the guarded loop (agentlab/calls.py): what it computes, and how often."""
import agentlab.jsonutil as jsonutil
from agentlab import Registry, Tool
from agentlab.loop import run_guarded
from agentlab.models import ScriptedModel, call, say
from agentlab.store import MemoryStore

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
          "required": ["order_id", "amount"], "additionalProperties": False}


def test_a_keyed_write_makes_its_arguments_canonical_once(monkeypatch):
    """The repeat breaker, the idempotency key and the claim's fingerprint all read one canonical text:
    it was computed three times per write (twice per read), a sorted JSON dump each time."""
    made = []
    normalize = jsonutil.normalize

    def counting(value):
        if isinstance(value, dict) and "order_id" in value:
            made.append(value)
        return normalize(value)

    monkeypatch.setattr(jsonutil, "normalize", counting)
    done = []
    reg = Registry([Tool("refund", "Refund an order.", SCHEMA, side_effect=True, keyed=True,
                         fn=lambda idempotency_key=None, **a: done.append(idempotency_key) or {"refunded": a["amount"]}),
                    Tool("lookup", "Look up an order.", SCHEMA, fn=lambda **a: {"ok": True})])
    store = MemoryStore()
    for name, expected in (("refund", 1), ("lookup", 1)):
        made.clear()
        run = run_guarded(ScriptedModel([call(name, {"order_id": "A1", "amount": 2.0}), say("done")]), reg, "x",
                          store=store, session_id="s1")
        assert run.status == "done" and len(made) == expected, (name, len(made))
    assert done == ['refund:s1:{"amount":2,"order_id":"A1"}']  # the key is still the canonical arguments

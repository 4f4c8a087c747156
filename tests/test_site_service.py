"""SkillSite against a hostile world, without HTTP (agentlab/site/service.py): tenants kept apart, store outages
that never turn into a second effect, client mistakes that are never "try again later"."""
import json

import pytest
from site_helpers import Clock

from agentlab.site.client import wire_key
from agentlab.site.service import SkillSite


@pytest.fixture
def site(tmp_path):
    return SkillSite(tmp_path, clock=Clock())


def call(site, name, args, key, idem=None, **kw):
    return site.execute(name, json.dumps({"arguments": args}).encode(), api_key=key, idempotency_key=idem,
                        session_id=kw.pop("session_id", None), **kw)


REFUND = {"amount": 199.0, "reason": "user_cancel"}


# ---------------------------------------------------------------- tenants
def test_a_key_one_tenant_sent_first_never_answers_another_tenants_write(site):
    victim, _ = site.create_key("victim")
    attacker, _ = site.create_key("attacker")
    shared = "the-key-the-victim-will-send"
    first = call(site, "create_refund", {"order_id": "A1001", **REFUND}, attacker, shared)
    assert first.status == 200 and first.body["result"]["order_id"] == "A1001"
    mine = call(site, "create_refund", {"order_id": "A1005", "amount": 19.9, "reason": "user_cancel"}, victim, shared)
    assert mine.status == 200 and mine.headers.get("Idempotent-Replayed") is None
    assert mine.body["result"]["order_id"] == "A1005"  # its own refund, never the attacker's A1001
    refunded = sorted(r["order_id"] for r in site.state["aftersales"].refunds)
    assert refunded == ["A1001", "A1005"]


def test_the_same_tenant_resending_its_key_still_gets_one_effect(site):
    key, _ = site.create_key("t")
    a = call(site, "create_refund", {"order_id": "A1001", **REFUND}, key, "k1")
    b = call(site, "create_refund", {"order_id": "A1001", **REFUND}, key, "k1")
    assert a.body == b.body and b.headers.get("Idempotent-Replayed") == "true"
    assert len(site.state["aftersales"].refunds) == 1


def test_the_key_a_client_sends_cannot_be_computed_without_its_api_key():
    loop_key = "create_refund:A1005"  # predictable on purpose: the tool and the order
    mine, theirs = wire_key("sk-site-victim", loop_key), wire_key("sk-site-attacker", loop_key)
    assert mine != theirs and mine == wire_key("sk-site-victim", loop_key)  # stable for its owner across resends
    import hashlib
    assert hashlib.sha256(loop_key.encode()).hexdigest()[:40] not in (mine, theirs)

"""API keys are printed once and stored hashed (agentlab/site/keys.py)."""
import pytest

from agentlab.site.keys import KeyStore, hash_key, parse_quota


def test_a_key_is_stored_only_as_its_hash(tmp_path):
    store = KeyStore(tmp_path / "keys.db")
    key, record = store.create("desk", ["get_order"], quota=3)
    store.close()
    raw = (tmp_path / "keys.db").read_bytes()
    assert key.encode() not in raw and hash_key(key).encode() in raw
    again = KeyStore(tmp_path / "keys.db")
    assert again.check(key) == record and again.check(key + "x") is None and again.check(None) is None
    assert record.allows("get_order") and not record.allows("create_refund")
    assert key not in repr(record) and key not in repr(again.all())


@pytest.mark.parametrize("text,want", [("1000/day", (1000, "day")), ("5 / minute", (5, "minute"))])
def test_quotas_parse(text, want):
    assert parse_quota(text) == want


@pytest.mark.parametrize("text", ["1000", "0/day", "3/week", "-1/day", ""])
def test_bad_quotas_are_refused(text):
    with pytest.raises(ValueError):
        parse_quota(text)

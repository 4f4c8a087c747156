"""API keys are printed once and stored hashed (agentlab/site/keys.py)."""
import json

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


@pytest.mark.parametrize("skills", [[], [""], ["  "], ()])
def test_an_empty_whitelist_is_refused_not_read_as_every_skill(tmp_path, skills):
    store = KeyStore(tmp_path / "keys.db")
    with pytest.raises(ValueError, match="at least one skill"):
        store.create("desk", skills)
    assert store.all() == []


@pytest.mark.parametrize("given", ["", ",", " , "])
def test_keys_create_with_no_skill_says_so(tmp_path, capsys, given):
    from agentlab.cli import main
    code = main(["site", "--data", str(tmp_path), "keys", "create", "--name", "desk", "--skills", given])
    err = capsys.readouterr()
    assert code != 0 and "--skills names no skill" in err.err and "sk-site-" not in err.out
    assert KeyStore(tmp_path / "keys.db").all() == []
    assert main(["site", "--data", str(tmp_path), "--lang", "zh", "keys", "create", "--name", "d", "--skills", ""]) != 0
    assert "没有给出任何技能" in capsys.readouterr().err


def test_an_operator_key_is_marked_and_audited(tmp_path, capsys):
    from agentlab.cli import main
    assert main(["site", "--data", str(tmp_path), "keys", "create", "--name", "ops", "--operator"]) == 0
    out = capsys.readouterr()
    key = out.out.strip()
    assert "operator key" in out.err and "never to an agent" in out.err
    store = KeyStore(tmp_path / "keys.db")
    assert store.check(key).operator and "operator" in repr(store.check(key))
    assert not store.check(store.create("agent")[0]).operator
    audit = (tmp_path / "logs" / "audit.jsonl").read_text()
    assert [json.loads(line).get("operator") for line in audit.splitlines()] == [True] and key not in audit


def test_a_keys_db_from_before_operator_keys_opens_and_its_keys_are_not_operators(tmp_path):
    import sqlite3
    db = sqlite3.connect(tmp_path / "keys.db")
    db.execute("CREATE TABLE keys (hash TEXT PRIMARY KEY, name TEXT NOT NULL, skills TEXT NOT NULL, quota INTEGER, "
               "period TEXT NOT NULL, created REAL NOT NULL)")
    db.execute("INSERT INTO keys VALUES (?, 'old', '[\"*\"]', NULL, 'day', 1.0)", (hash_key("sk-site-old"),))
    db.commit()
    db.close()
    store = KeyStore(tmp_path / "keys.db")
    old = store.check("sk-site-old")
    assert old is not None and old.name == "old" and not old.operator
    assert store.check(store.create("ops", operator=True)[0]).operator


def _queries(store):
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    return seen


def test_a_cached_key_costs_no_query_and_a_revoke_elsewhere_is_still_seen_at_the_next_look(tmp_path):
    """The cache is checked by the file change counter in keys.db's header (a pread), not by a query per request;
    a revoke by another store, or any commit by another connection, is seen by the very next look."""
    import sqlite3

    from agentlab.site.keys import KeyStore
    a, b = KeyStore(tmp_path / "keys.db"), KeyStore(tmp_path / "keys.db")
    key, record = a.create("agent")
    other, _ = a.create("other")
    assert b.check(key) == record and b.check(other) is not None
    seen = _queries(b)
    for _ in range(5):
        assert b.cached(key) == record and b.check(key) == record
    assert seen == []  # nothing asked of SQLite while nothing changed
    a.revoke(record.id)
    assert b.cached(key) is None and b.check(key) is None  # the next look, no delay
    raw = sqlite3.connect(tmp_path / "keys.db", isolation_level=None)  # a connection of no store (a person, a script)
    raw.execute("UPDATE keys SET revoked = 1 WHERE name = 'other'")
    raw.close()
    assert b.cached(other) is None and b.check(other) is None


def test_a_keys_db_in_wal_mode_is_checked_by_data_version(tmp_path):
    """WAL commits leave the header's change counter alone: such a file is asked for data_version on every look."""
    import sqlite3

    from agentlab.site.keys import KeyStore
    raw = sqlite3.connect(tmp_path / "keys.db", isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    a, b = KeyStore(tmp_path / "keys.db"), KeyStore(tmp_path / "keys.db")
    key, record = a.create("agent")
    assert b.check(key) == record and b.cached(key) == record
    seen = _queries(b)
    raw.execute("UPDATE keys SET revoked = 1")
    assert b.cached(key) is None and b.check(key) is None
    assert any("data_version" in q for q in seen)
    raw.close()

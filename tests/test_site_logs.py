"""The JSONL logs: ids on every line, no secrets, bounded, capped, keyless traffic apart (agentlab/site/logs.py).

The many-process tests (replicas appending and rotating at once) are in tests/test_site_replicas.py.
"""
import json
from pathlib import Path

import pytest
from conftest import interrupt_once

from agentlab.site.logs import FIELD_CHARS, SiteLogs, clean_session, scrub


def _files(folder):
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))  # .lock: the replicas' lock file


def test_every_line_has_the_ids_and_no_credentials(tmp_path):
    logs = SiteLogs(tmp_path)
    logs.write("call", request_id="r1", session_id="s1", key_id="abc123", arguments={"note": "password: hunter2",
                                                                                      "api_key": "abc"})
    line = logs.read("call")[0]
    assert line["request_id"] == "r1" and line["session_id"] == "s1"
    assert "hunter2" not in str(line) and line["arguments"]["api_key"] == "[secret removed]"


def test_the_stack_stays_for_the_operator_without_its_secrets(tmp_path):
    logs = SiteLogs(tmp_path)
    stack = 'Traceback (most recent call last):\n  File "x.py", line 1, in f\nRuntimeError: password=hunter2\n'
    logs.write("error", request_id="r", session_id=None, stack=stack)
    kept = logs.read("error")[0]["stack"]
    assert kept.startswith("Traceback") and 'File "x.py"' in kept and "hunter2" not in kept


def test_files_are_capped_and_rotated(tmp_path):
    logs = SiteLogs(tmp_path, max_bytes=400, backups=2)
    for i in range(40):
        logs.write("access", request_id=f"r{i}", session_id=None, path="/api/skills")
    logs.flush()  # the lines written together: each file still moved aside when the next line would not fit
    assert _files(tmp_path) == ["access.jsonl", "access.jsonl.1", "access.jsonl.2"]
    assert all(p.stat().st_size <= 400 for p in tmp_path.iterdir())


def test_scrub_walks_nested_values():
    assert scrub({"a": [{"token": "x"}, "Bearer abcdef123456789"]}) == {"a": [{"token": "[secret removed]"}, "[secret removed]"]}


def test_what_one_request_writes_is_bounded(tmp_path):
    """A 60 KB skill name or path is cut; a line larger than the cap loses its largest fields, never its ids."""
    logs = SiteLogs(tmp_path, max_bytes=20_000)
    logs.write("access", request_id="r1", session_id="s1", method="POST", path="/api/skills/" + "x" * 60_000, status=404)
    logs.write("call", request_id="r2", session_id="s1", key_id="k1", skill="y" * 60_000,
               arguments={"note": "z" * 60_000, "items": ["w" * 9000] * 10}, result={"ok": True}, status=422)
    access, call = logs.read("access")[0], logs.read("call")[0]
    assert len(access["path"]) == FIELD_CHARS and access["status"] == 404
    assert len(call["skill"]) == FIELD_CHARS and call["request_id"] == "r2" and call["status"] == 422
    assert call["cut"] is True and call["arguments"].startswith("[cut: ") and call["result"] == {"ok": True}
    for p in tmp_path.glob("*.jsonl"):
        assert max(len(x) for x in p.read_bytes().splitlines()) < 20_000, p.name


def test_keyless_traffic_never_rotates_the_authenticated_history_away(tmp_path):
    """350 requests without a key, with 60 KB skill names: the real call and its audit line stay."""
    logs = SiteLogs(tmp_path, max_bytes=50_000, backups=1, keyless_bytes=50_000)
    logs.write("call", request_id="real", session_id="s", key_id="k1", key_name="desk", skill="get_order", status=200)
    logs.write("audit", request_id="real", session_id="s", key_id="k1", action="execute", skill="create_refund")
    logs.write("access", request_id="real", session_id="s", keyless=False, method="POST", path="/x", status=200)
    for i in range(350):
        logs.write("call", request_id=f"anon{i}", session_id=None, skill="n" * 60_000, status=401)  # no key_id
        logs.write("access", request_id=f"anon{i}", session_id=None, keyless=True, method="POST",
                   path="/api/skills/" + "n" * 60_000 + "/execute", status=401)
    history = [json.loads(x) for name in ("call", "audit", "access") for f in tmp_path.glob(f"{name}.jsonl*")
               for x in f.read_text().splitlines()]
    assert [h["request_id"] for h in history] == ["real", "real", "real"]
    keyless = logs.read("keyless")
    assert keyless and {x["log"] for x in keyless} == {"call", "access"}
    assert all(p.stat().st_size <= 50_000 for p in tmp_path.glob("keyless.jsonl*"))
    assert _files(tmp_path) == ["access.jsonl", "audit.jsonl", "call.jsonl", "keyless.jsonl", "keyless.jsonl.1"]


@pytest.mark.parametrize("value,kept", [
    ("sess-42", True), ("550e8400-e29b-41d4-a716-446655440000", True), ("01ARZ3NDEKTSV4RRFFQ69G5FAV", True),
    ("agent.run:7", True), ("sk-site-" + "Ab3" * 14, False), ("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRg", False),
    ("ghp_" + "a1B2" * 9, False), ("", False), ("x" * 65, False), ("<script>", False), (None, False), (42, False),
])
def test_a_session_id_is_checked_and_a_credential_is_never_one(value, kept):
    assert clean_session(value) == (value if kept else None)


def test_a_key_sent_as_a_session_id_is_not_stored(tmp_path):
    key = "sk-site-" + "Ab3xYz" * 7
    logs = SiteLogs(tmp_path)
    logs.write("call", request_id="r", session_id=key, key_id="k")
    logs.write("call", request_id="r", session_id="not valid!", key_id="k")
    logs.flush()
    assert key not in (tmp_path / "call.jsonl").read_text()
    assert [x["session_id"] for x in logs.read("call")] == ["[secret removed]", "[invalid session id]"]


def test_a_read_parses_only_what_is_new(tmp_path, monkeypatch):
    logs = SiteLogs(tmp_path)
    for i in range(3):
        logs.write("call", request_id=f"r{i}", session_id=None, key_id="k")
    assert [x["request_id"] for x in logs.read("call")] == ["r0", "r1", "r2"]
    parsed = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda raw, *a, **k: parsed.append(raw) or real(raw, *a, **k))
    assert len(logs.read("call")) == 3 and parsed == []  # unchanged: nothing parsed again
    logs.write("call", request_id="r3", session_id=None, key_id="k")
    logs.flush()
    with (tmp_path / "call.jsonl").open("ab") as f:
        f.write(b'{"request_id": "half a li')  # another replica is writing it right now
    assert [x["request_id"] for x in logs.read("call")] == ["r0", "r1", "r2", "r3"] and len(parsed) == 1
    (tmp_path / "call.jsonl").rename(tmp_path / "call.jsonl.1")  # moved aside: a new file is read whole
    logs.write("call", request_id="r4", session_id=None, key_id="k")
    assert [x["request_id"] for x in logs.read("call")] == ["r4"]


def test_a_key_sent_as_a_session_id_over_mcp_is_not_logged(tmp_path):
    """The MCP transport checks the session id with the same validator as HTTP (test_site_pages has HTTP's)."""
    import anyio
    import httpx
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from agentlab.site.service import SkillSite
    from agentlab.site.serving import serving
    site = SkillSite(tmp_path)
    key, _ = site.create_key("agent", ["get_order"])

    async def steps(url, session_id):
        async with httpx.AsyncClient(headers={"X-API-Key": key, "X-Session-Id": session_id}) as http, \
                streamable_http_client(url, http_client=http) as (r, w, _), ClientSession(r, w) as s:
            await s.initialize()
            return await s.call_tool("get_order", {"order_id": "A1001"})
    with serving(site) as base:
        for session_id in (key, "sess-mcp"):
            assert not anyio.run(steps, base + "/mcp", session_id).isError
    assert key not in "".join(p.read_text() for p in (tmp_path / "logs").glob("*.jsonl"))
    assert [x["session_id"] for x in SiteLogs(tmp_path / "logs").read("call")] == [None, "sess-mcp"]


def test_a_log_keeps_its_files_open_and_an_audit_line_is_written_at_once(tmp_path, monkeypatch):
    """Appending a line opens nothing (the files stay open); an audit (or error) line is in its file when write
    returns, so a crash of the process right after loses none. Another replica moving a file aside is followed."""
    import os
    logs = SiteLogs(tmp_path, max_bytes=10_000)
    logs.write("audit", request_id="r0", session_id=None, key_id="k", action="execute")
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    for i in range(1, 6):
        logs.write("audit", request_id=f"r{i}", session_id=None, key_id="k", action="execute")
        assert f'"r{i}"' in (tmp_path / "audit.jsonl").read_text().splitlines()[-1]
    assert opened == []
    other = SiteLogs(tmp_path, max_bytes=10_000)  # another replica moves the file aside
    other._rotate(tmp_path / "audit.jsonl", 3)
    logs.write("audit", request_id="after", session_id=None, key_id="k", action="execute")
    assert [line["request_id"] for line in logs.read("audit")] == ["after"]
    logs.close()
    other.close()


def test_access_and_call_lines_wait_and_are_written_together(tmp_path, monkeypatch):
    """The two lines of every request wait in memory: many requests' lines are one write per file, at once when a
    read, a close or an audit line to the same file (which comes after them, in order) asks; and without anyone
    asking, by the flusher, once the log's flush_seconds have passed."""
    import os
    import time
    logs = SiteLogs(tmp_path, flush_seconds=60)
    writes = []
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: writes.append(data) or real_write(fd, data))
    for i in range(50):
        logs.write("call", request_id=f"c{i}", session_id=None, key_id="k", skill="s")
        logs.write("access", request_id=f"c{i}", session_id=None, keyless=False, method="POST", path="/x", status=200)
    assert not (tmp_path / "call.jsonl").exists() and writes == []
    logs.flush()
    assert [x["request_id"] for x in _lines(tmp_path / "call.jsonl")] == [f"c{i}" for i in range(50)]
    assert [x["request_id"] for x in _lines(tmp_path / "access.jsonl")] == [f"c{i}" for i in range(50)]
    assert len(writes) == 2  # one per file
    # keyless lines of every kind share one file: an audit line writes the waiting ones first, then itself
    logs.write("call", request_id="anon", session_id=None, skill="s", status=401)
    logs.write("audit", request_id="anon", session_id=None, action="execute", keyless=True)
    assert [(x["log"], x["request_id"]) for x in _lines(tmp_path / "keyless.jsonl")] == [("call", "anon"),
                                                                                          ("audit", "anon")]
    logs.write("call", request_id="last", session_id=None, key_id="k", skill="s")
    assert logs.read("call")[-1]["request_id"] == "last"  # a read sees every line written before it
    logs.close()
    quick = SiteLogs(tmp_path / "quick", flush_seconds=0.05)  # nobody asks: the flusher writes it
    quick.write("call", request_id="alone", session_id=None, key_id="k", skill="s")
    deadline = time.monotonic() + 30  # the flusher's own thread; generous, for a loaded machine
    while not _lines(tmp_path / "quick" / "call.jsonl") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [x["request_id"] for x in _lines(tmp_path / "quick" / "call.jsonl")] == ["alone"]
    assert not (tmp_path / "call.jsonl.1").exists() and len(_lines(tmp_path / "call.jsonl")) == 51


def _lines(path):
    import json
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("end", ["exit", "kill"])
def test_a_process_that_ends_keeps_every_audit_line_and_loses_waiting_lines_only_when_killed(tmp_path, end):
    """A clean stop writes the lines waiting (atexit); a process killed outright loses at most those, never an
    audit line; a forked child never writes its parent's waiting lines a second time."""
    import subprocess
    import sys
    script = f"""
import os, signal, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
from agentlab.site.logs import SiteLogs
logs = SiteLogs({str(tmp_path)!r}, flush_seconds=60)
logs.write("call", request_id="before-fork", session_id=None, key_id="k", skill="s")
child = os.fork()
if child == 0:
    logs.write("call", request_id="child", session_id=None, key_id="k", skill="s")
    sys.exit(0)  # a clean exit of the child: its own line, never the parent's waiting one
os.waitpid(child, 0)
logs.write("audit", request_id="audit", session_id=None, key_id="k", action="execute")
logs.write("call", request_id="waiting", session_id=None, key_id="k", skill="s")
if {end!r} == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == (0 if end == "exit" else -9), done.stderr
    calls = [x["request_id"] for x in _lines(tmp_path / "call.jsonl")]
    assert [x["request_id"] for x in _lines(tmp_path / "audit.jsonl")] == ["audit"]
    # killed: the call lines still waiting are lost (the audit line wrote its own file only), never the audit line
    assert sorted(calls) == (["before-fork", "child", "waiting"] if end == "exit" else ["child"])


def _run_script(tmp_path, body: str, timeout: float = 60):
    import subprocess
    import sys
    import textwrap
    script = f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin", "FOLDER": str(tmp_path)})


def test_a_clean_exit_writes_the_lines_a_flush_blocked_on_the_replicas_lock_was_writing(tmp_path):
    """At exit the flusher may be part-way through a flush (here: waiting for the lock another replica holds): the
    exit waits for it and every line is written. (The files are not closed by a finalizer at exit: one did, under
    a flush still writing, and lines were lost to "Bad file descriptor" in about one exit in five of three
    threads writing; a race this test does not make happen every time.)"""
    done = _run_script(tmp_path, """
        import fcntl, os, threading, time
        from agentlab.site.logs import SiteLogs
        folder = os.environ["FOLDER"]
        logs = SiteLogs(folder, flush_seconds=0.01)
        logs.write("call", request_id="first", session_id=None, key_id="k", skill="s")
        logs.flush()  # the file is open from now on
        other = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT)  # another replica's hold
        fcntl.flock(other, fcntl.LOCK_EX)
        for i in range(3):
            logs.write("call", request_id=f"c{i}", session_id=None, key_id="k", skill="s")
        time.sleep(0.3)  # the flusher is waiting for the lock now
        let_go = threading.Timer(0.5, lambda: fcntl.flock(other, fcntl.LOCK_UN))
        let_go.daemon = True  # still running while the exit hooks run
        let_go.start()
    """)
    assert done.returncode == 0 and "could not be written" not in done.stderr, done.stderr
    assert [x["request_id"] for x in _lines(tmp_path / "call.jsonl")] == ["first", "c0", "c1", "c2"]


def test_a_child_forked_while_a_flush_holds_the_log_exits_and_writes_its_own_lines(tmp_path):
    """A fork while the flusher holds a log's lock (every flush, for as long as another replica holds the lock
    file): the child's copy of that lock was held for ever, and the child hung at its exit."""
    done = _run_script(tmp_path, """
        import os, sys, time
        from agentlab.site.logs import SiteLogs
        logs = SiteLogs(os.environ["FOLDER"], flush_seconds=60)
        logs.write("call", request_id="parent", session_id=None, key_id="k", skill="s")
        logs._lock.acquire()  # as the flusher holds it mid-flush
        child = os.fork()
        if child == 0:
            logs.write("call", request_id="child", session_id=None, key_id="k", skill="s")
            sys.exit(0)
        logs._lock.release()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pid, status = os.waitpid(child, os.WNOHANG)
            if pid:
                print("child exited", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(child, 9)
            print("child hung")
    """)
    assert "child exited 0" in done.stdout, done.stdout + done.stderr
    assert sorted(x["request_id"] for x in _lines(tmp_path / "call.jsonl")) == ["child", "parent"]


def test_an_audit_line_is_written_when_another_files_waiting_lines_cannot_be(tmp_path):
    logs = SiteLogs(tmp_path, flush_seconds=60)
    (tmp_path / "access.jsonl").mkdir()  # that file cannot be written
    logs.write("access", request_id="a", session_id=None, keyless=False, method="POST", path="/x", status=200)
    logs.write("call", request_id="c", session_id=None, key_id="k", skill="s")
    logs.write("audit", request_id="audit", session_id=None, key_id="k", action="execute")  # its own file only
    assert [x["request_id"] for x in _lines(tmp_path / "audit.jsonl")] == ["audit"]
    with pytest.raises(IsADirectoryError):  # said, once every other file had its turn
        logs.flush()
    assert [x["request_id"] for x in _lines(tmp_path / "call.jsonl")] == ["c"]
    logs.write("call", request_id="anon", session_id=None, skill="s", status=401)  # keyless: one file, every kind
    logs.write("audit", request_id="anon", session_id=None, action="execute", keyless=True)
    assert [(x["log"], x["request_id"]) for x in _lines(tmp_path / "keyless.jsonl")] == [("call", "anon"),
                                                                                          ("audit", "anon")]


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), -1, 61])
def test_a_wait_the_flusher_cannot_keep_is_refused(tmp_path, seconds):
    with pytest.raises(ValueError, match="flush_seconds"):  # an endless wait stopped every log's flushes
        SiteLogs(tmp_path, flush_seconds=seconds)


def test_lines_are_written_at_once_when_no_flusher_thread_can_start(tmp_path, monkeypatch):
    import threading

    import agentlab.site.logs as L
    monkeypatch.setattr(L, "_FLUSHER", L._Flusher())

    def no_thread(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    logs = SiteLogs(tmp_path, flush_seconds=0.05)
    logs.write("call", request_id="c", session_id=None, key_id="k", skill="s")  # no error, and not left waiting
    assert [x["request_id"] for x in _lines(tmp_path / "call.jsonl")] == ["c"]


def test_an_interrupt_while_waiting_for_the_replicas_lock_leaves_the_lines_waiting(tmp_path, monkeypatch):
    import agentlab.site.logs as L
    logs = SiteLogs(tmp_path, flush_seconds=60)
    logs.write("call", request_id="c", session_id=None, key_id="k", skill="s")
    interrupt_once(monkeypatch, L, "hold")
    with pytest.raises(KeyboardInterrupt):
        logs.flush()
    logs.flush()  # the next flush (the exit's) still has them
    assert [x["request_id"] for x in _lines(tmp_path / "call.jsonl")] == ["c"]


def test_the_flusher_says_in_both_languages_when_lines_cannot_be_written(tmp_path, capfd):
    import time
    logs = SiteLogs(tmp_path, flush_seconds=0.01)
    (tmp_path / "call.jsonl").mkdir()  # that file cannot be written
    logs.write("call", request_id="c", session_id=None, key_id="k", skill="s")
    deadline, said = time.monotonic() + 30, ""
    while "IsADirectoryError" not in said and time.monotonic() < deadline:
        time.sleep(0.02)
        said += capfd.readouterr().err
    assert "could not be written" in said and "没能写进" in said and "Traceback" not in said


def test_a_line_orjson_would_write_its_own_way_is_written_as_json_writes_it(tmp_path):
    """A log line is written by orjson (faster) only where orjson writes the same JSON value json does: a float
    subclass (numpy's float64 is one), an Enum, a key that is not text (two NaN keys, which orjson wrote as one
    "null"), a date go json's way, as they always did. NaN as a value is null (JSON has no NaN)."""
    import datetime
    import enum

    from agentlab.site import logs as site_logs

    class Score(float):
        pass

    class Color(enum.Enum):
        RED = 1

    odd = {"score": Score(0.25), "nested": {"s": Score(0.75)}, "color": Color.RED, "keys": {float("nan"): 4, float("inf"): 5},
           "small": {1e-7: 3}, "day": datetime.date(2024, 1, 2), "plain": {"a": [1, 2.5, None, True]}}
    logs = SiteLogs(tmp_path, flush_seconds=0)
    logs.write("call", request_id="r", session_id=None, key_id="k", **odd)
    got = json.loads((tmp_path / "call.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    want = json.loads(site_logs._ENCODER.encode({k: site_logs._clean(v, 1) for k, v in odd.items()}))
    assert want["day"] == "2024-01-02"
    assert {k: got[k] for k in odd} == want
    assert got["score"] == 0.25 and got["color"] == "Color.RED" and len(got["keys"]) == 2
    logs.write("call", request_id="r2", session_id=None, key_id="k", latency_ms=float("nan"), result={"a": 1})
    line = (tmp_path / "call.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(line)["latency_ms"] is None and "NaN" not in line  # a plain line: orjson's, strict JSON


def test_a_key_json_cannot_write_is_its_text_and_the_line_is_kept(tmp_path):
    """A value a caller logs may be keyed by a date or a tuple (a handler's own dict, an operator's field): json
    refuses such keys (TypeError), which lost the whole line. The key is written as its text, redacted and cut
    like any value's text; keys json writes (numbers, flags, None) stay as json writes them."""
    import datetime
    logs = SiteLogs(tmp_path)
    logs.write("audit", request_id="r", session_id=None,
               result={datetime.date(2026, 1, 2): 1, (1, "password: hunter2"): "x", 3: "n", True: "t", None: "z",
                       "k" * 500: "long"})
    got = logs.read("audit")[0]["result"]
    assert got["2026-01-02"] == 1 and got["3"] == "n" and got["true"] == "t" and got["null"] == "z"
    tuple_key = next(k for k in got if k.startswith("(1,"))
    assert "hunter2" not in tuple_key and got[tuple_key] == "x"
    assert all(len(k) <= FIELD_CHARS for k in got)

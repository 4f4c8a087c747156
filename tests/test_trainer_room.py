"""The trainer's view outside the hub (``python -m agentlab trainer --room CODE``) and the answers it shows.

A real server on a free loopback port, reports through the real HTTP path (exercises.report and its sender, as a
notebook's check sends them), several simulated participants each with their own key. The room code authenticates
reports, the first key owns a name, the trainer secret opens the page, and only the trainer reads answers."""
import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from conftest import ROOT

pytest.importorskip("tornado")

from agentlab.hub import progress
from agentlab.workbook import exercises
from agentlab.workbook.exercises import Feedback

CODE = "ROOM-7421"
SECRET = "trainer-secret-for-tests-0123456789"


@pytest.fixture
def room(tmp_path):
    """The view of room CODE served from a thread, as serve_room serves it for the command: its base URL."""
    ready, box = threading.Event(), {}

    def run():
        async def main():
            box["loop"], box["stop"] = asyncio.get_running_loop(), asyncio.Event()
            await progress.serve_room(progress.new_room(CODE, SECRET), tmp_path / "state", port=0, host="127.0.0.1",
                                      ready=lambda port: (box.__setitem__("port", port), ready.set()),
                                      stop=box["stop"])
        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield f"http://127.0.0.1:{box['port']}/"
    box["loop"].call_soon_threadsafe(box["stop"].set)
    thread.join(10)


def unset(monkeypatch, *names):
    """Unset, and put back as they were after the test, even the ones connect() sets and that were never set
    (monkeypatch.delenv alone does not remember a variable that was absent)."""
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


CONNECTION = ("AGENTLAB_PROGRESS_URL", "AGENTLAB_ROOM", "AGENTLAB_PARTICIPANT", "AGENTLAB_PARTICIPANT_KEY",
              "JUPYTERHUB_API_TOKEN", "JPY_SESSION_NAME")


def env_of(url, name, key, code=CODE):
    return {"AGENTLAB_PROGRESS_URL": url, "AGENTLAB_ROOM": code, "AGENTLAB_PARTICIPANT": name,
            "AGENTLAB_PARTICIPANT_KEY": key}


def send(url, name, key, notebook, state, answer=None, code=CODE, **kw):
    """One check's report, through exercises.report and its real HTTP sender; waits until it has left."""
    thread = exercises.report(Feedback(state, "x"), notebook, answer=answer, env=env_of(url, name, key, code), **kw)
    assert thread is not None
    thread.join(10)


def call(url, *, headers=None, body=None, method=None):
    """(status, parsed JSON or text, headers) of one request."""
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, raw, hdrs = r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        status, raw, hdrs = e.code, e.read(), e.headers
    text = raw.decode("utf-8")
    try:
        return status, json.loads(text), hdrs
    except ValueError:
        return status, text, hdrs


def as_participant(name, key, code=CODE):
    return {"Authorization": f"room {code}", "X-Agentlab-Participant": name, "X-Agentlab-Key": key}


TRAINER = {"Authorization": f"trainer {SECRET}"}
KEYS = {name: f"key-of-{name}-0123456789abcdef" for name in ("ann", "bo", "cy", "di", "ed", "fay")}


def test_the_trainer_sees_what_the_room_answered_grouped_with_counts_most_common_first(room):
    # four typed duplicate_call (spelled as people type), one "retry", one got it right, one has not answered
    for name, typed in (("ann", "duplicate_call"), ("bo", "Duplicate_Call"), ("cy", "“duplicate_call”"),
                        ("di", "ＤＵＰＬＩＣＡＴＥ＿ＣＡＬＬ"), ("ed", "retry")):
        send(room, name, KEYS[name], "17", "wrong", typed)
    send(room, "fay", KEYS["fay"], "17", "wrong", "retry")
    send(room, "fay", KEYS["fay"], "17", "right", "loop")  # fay corrected herself: both answers count for her
    send(room, "ann", KEYS["ann"], "06", "not yet", None)
    status, body, _ = call(room + "api/room", headers=TRAINER)
    assert status == 200
    assert body["answers"]["17"] == {"groups": [
        {"answer": "duplicate_call", "count": 4, "state": "wrong"},
        {"answer": "retry", "count": 2, "state": "wrong"},
        {"answer": "loop", "count": 1, "state": "right"}], "more": 0}
    assert "06" not in body["answers"]  # "not yet" is no answer
    status, page, _ = call(room + "?lang=en", headers=TRAINER)
    assert status == 200 and "What the room answered" in page and f"Room {CODE}" in page
    text = re.sub(r"<[^>]+>", "", page)
    assert "4 typed duplicate_call (not right)" in text and "1 typed loop (right)" in text
    assert text.index("4 typed duplicate_call") < text.index("2 typed retry") < text.index("1 typed loop")
    zh = re.sub(r"<[^>]+>", "", call(room + "?lang=zh", headers=TRAINER)[1])
    assert "4 人填了 duplicate_call（不对）" in zh and "全场的答案" in zh


def test_the_groups_per_exercise_are_bounded_on_the_page(room, monkeypatch):
    for i in range(progress.GROUPS_SHOWN + 3):
        send(room, f"p{i}", f"key-number-{i:04d}-abcdefgh", "06", "wrong", str(100 + i))
    body = call(room + "api/room", headers=TRAINER)[1]
    assert len(body["answers"]["06"]["groups"]) == progress.GROUPS_SHOWN and body["answers"]["06"]["more"] == 3


def test_a_participant_never_sees_anybody_elses_answers_nor_their_row(room, tmp_path):
    send(room, "ann", KEYS["ann"], "17", "wrong", "ann-secret-misconception")
    send(room, "bo", KEYS["bo"], "17", "right", "loop")
    # bo's own view: his row, no answer at all (his own included), nothing of ann's
    status, mine, _ = call(room + "api/progress", headers=as_participant("bo", KEYS["bo"]))
    assert status == 200 and [r["user"] for r in mine["rows"]] == ["bo"]
    assert "answer" not in json.dumps(mine) and "ann" not in json.dumps(mine) and "misconception" not in json.dumps(mine)
    # the room, the notes and the page are the trainer's
    assert call(room + "api/room", headers=as_participant("bo", KEYS["bo"]))[:2][0] == 403
    assert call(room + "api/notes/17", headers=as_participant("bo", KEYS["bo"]))[0] == 403
    status, page, _ = call(room, headers=as_participant("bo", KEYS["bo"]))
    assert "misconception" not in json.dumps(page)
    # naming ann with another key reads nothing of hers and writes nothing in her row
    status, err, _ = call(room + "api/progress", headers=as_participant("ann", KEYS["bo"]))
    assert status == 403 and err["error"]["code"] == "name_taken"
    status, err, _ = call(room + "api/report", headers=as_participant("ann", KEYS["bo"]), method="POST",
                          body={"notebook": "17", "exercise": "duplicate_call_verdict", "state": "right"})
    assert status == 403 and err["error"]["code"] == "name_taken"
    # a report's reply does not echo the answer back
    status, reply, _ = call(room + "api/report", headers=as_participant("bo", KEYS["bo"]), method="POST",
                            body={"notebook": "17", "exercise": "duplicate_call_verdict", "state": "right",
                                  "answer": "loop"})
    assert status == 200 and "answer" not in reply["recorded"]
    # nobody without the secret: a wrong one, none, or a made-up cookie
    assert call(room + "api/room")[0] == 401
    assert call(room + "api/room", headers={"Authorization": "trainer nope"})[0] == 401
    assert call(room + "api/room", headers={"Cookie": f"{progress.TRAINER_COOKIE}=nope"})[0] == 401
    assert call(room + "?trainer=nope")[0] == 401
    ann = [v for v in progress.Progress(tmp_path / "state" / "progress.sqlite").latest() if v.user == "ann"]
    assert [(v.state, v.answer) for v in ann] == [("wrong", "ann-secret-misconception")]


def test_a_wrong_room_code_is_refused_in_both_languages(room, monkeypatch):
    body = {"notebook": "06", "exercise": "breaker_threshold", "state": "right", "answer": "3"}
    status, err, _ = call(room + "api/report", headers=as_participant("ann", KEYS["ann"], code="ROOM-0000"),
                          method="POST", body=body)
    assert status == 401 and err["error"]["code"] == "bad_room" and "room code" in err["error"]["message"]
    status, err, _ = call(room + "api/report?lang=zh", headers=as_participant("ann", KEYS["ann"], code="ROOM-0000"),
                          method="POST", body=body)
    assert status == 401 and "房间码" in err["error"]["message"]
    # a hub token means nothing to a room
    assert call(room + "api/report", headers={"Authorization": "token anything"}, method="POST", body=body)[0] == 401
    # a notebook connecting with the wrong code is told so, in a sentence, and its checks stay silent
    unset(monkeypatch, *CONNECTION)
    monkeypatch.setenv("AGENTLAB_PARTICIPANT_KEY", KEYS["ann"])
    said = exercises.connect(room, "ROOM-0000", "ann", lang="zh")
    assert not said.ok and "房间码不对" in str(said) and "Traceback" not in str(said)
    assert "AGENTLAB_ROOM" not in os.environ
    assert exercises.report(Feedback("right", "x"), "06", answer=3) is None
    assert call(room + "api/room", headers=TRAINER)[1]["rows"] == []


def test_answers_are_redacted_and_bounded_even_from_a_hostile_client(room):
    key = "sk-proj-" + "A1b2C3d4" * 4
    send(room, "ann", KEYS["ann"], "17", "wrong", f"my key is {key}")
    send(room, "bo", KEYS["bo"], "17", "wrong", "x" * 5000)
    assert exercises.answer_text(f"my key is {key}") == "my key is [secret removed]"
    assert len(exercises.answer_text("y" * 10_000)) == exercises.ANSWER_LIMIT
    assert exercises.answer_text({"a": [1, 2]}) == '{"a": [1, 2]}' and exercises.answer_text(" ２ 秒。") == "2"
    # a client that skips the check's cleaning: the service cleans again
    hostile = {"notebook": "17", "exercise": "duplicate_call_verdict", "state": "wrong",
               "answer": f"\u202e{key} " + "z" * 1500}
    assert call(room + "api/report", headers=as_participant("cy", KEYS["cy"]), method="POST", body=hostile)[0] == 200
    groups = call(room + "api/room", headers=TRAINER)[1]["answers"]["17"]["groups"]
    answers = [g["answer"] for g in groups]
    assert all(len(a) <= progress.ANSWER_LIMIT for a in answers), answers
    assert not any(key in a or key.lower() in a or "\u202e" in a for a in answers), answers
    assert "my key is [secret removed]" in answers
    page = call(room, headers=TRAINER)[1]
    assert key not in page and key.lower() not in page
    zh = call(room + "?lang=zh", headers=TRAINER)[1]  # what was taken out said in the page's language
    assert "[密钥已删除]" in zh and "[secret removed]" not in zh
    # a name with markup is escaped on the page
    send(room, "<script>x</script>", KEYS["di"], "17", "wrong", "<b>bold</b>")
    page = call(room, headers=TRAINER)[1]
    assert "<script>x</script>" not in page and "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page


def test_the_capstone_reports_with_a_score_and_has_its_own_column(room):
    assert exercises.EXTRA == progress.EXTRA
    send(room, "ann", KEYS["ann"], "capstone", "right", score=0.85)
    send(room, "bo", KEYS["bo"], "capstone", "wrong", score=0.4)
    send(room, "bo", KEYS["bo"], "06", "right", 3)
    body = call(room + "api/room", headers=TRAINER)[1]
    assert list(body["exercises"])[-1] == "capstone"
    cells = {r["user"]: r["cells"] for r in body["rows"]}
    assert cells["ann"]["capstone"]["score"] == 0.85 and cells["bo"]["capstone"]["state"] == "wrong"
    assert body["counts"]["capstone"] == {"not yet": 0, "wrong": 1, "right": 1}
    # sent without the capstone's own answer ("3/14"): its score, as the page says it
    assert {g["answer"] for g in body["answers"]["capstone"]["groups"]} == {"85%", "40%"}
    page = re.sub(r"<[^>]+>", " ", call(room, headers=TRAINER)[1])
    assert "score 85%" in page and "capstone" in page
    zh = call(room + "?lang=zh", headers=TRAINER)[1]  # its column and its rows named in Chinese (its id stays)
    assert ">结业项目</th>" in zh and ">capstone</th>" not in zh and "<td>结业项目 <small>" in zh
    mine = call(room + "api/progress", headers=as_participant("ann", KEYS["ann"]))[1]
    assert mine["rows"][0]["cells"]["capstone"]["score"] == 0.85  # her own score, and only hers


@pytest.mark.parametrize("lang, head", [("en", "Capstone ranking"), ("zh", "结业项目排名")])
def test_the_trainer_may_show_a_capstone_ranking_and_a_participant_never_sees_it(room, lang, head):
    send(room, "ann", KEYS["ann"], "capstone", "wrong", score=0.5)
    send(room, "bo", KEYS["bo"], "capstone", "right", score=0.9)
    send(room, "cy", KEYS["cy"], "capstone", "wrong", score=0.5)
    send(room, "di", KEYS["di"], "06", "right", 3)  # no capstone yet: not ranked
    ranking = call(room + "api/room", headers=TRAINER)[1]["ranking"]
    assert [(r["rank"], r["user"], r["score"]) for r in ranking] == [(1, "bo", 0.9), (2, "ann", 0.5), (2, "cy", 0.5)]
    hidden = call(room + f"?lang={lang}", headers=TRAINER)[1]
    assert f"<h2>{head}</h2>" not in hidden and "ranking=show" in hidden  # hidden until the trainer shows it
    shown = re.sub(r"<[^>]+>", " ", call(room + f"?lang={lang}&ranking=show", headers=TRAINER)[1])
    assert head in shown
    order = [shown.index(f" {who} ") for who in ("bo", "ann", "cy")]
    assert order == sorted(order), shown
    for who in ("ann", "bo"):
        own = call(room + f"?lang={lang}&ranking=show", headers=as_participant(who, KEYS[who]))[1]
        assert f"<h2>{head}</h2>" not in own and "ranking=show" not in own
        assert not re.search(r"\bcy\b", re.sub(r"<[^>]+>", " ", own))  # nobody else's name


def test_in_the_hub_the_trainer_sees_answers_and_a_participant_does_not(tmp_path):
    """The hub's way in (tokens the hub resolves) keeps working, answers included."""
    from test_hub_progress import fetch, resolve
    store = progress.Progress(tmp_path / "p.sqlite")
    app = progress.make_app(store, resolve=resolve)
    for token, typed in (("tok-a", "duplicate_call"), ("tok-b", "Duplicate Call")):
        body = {"notebook": "17", "exercise": "duplicate_call_verdict", "state": "wrong", "answer": typed}
        assert fetch(app, progress.PREFIX + "api/report", token, method="POST", body=body)[0] == 200
    room = json.loads(fetch(app, progress.PREFIX + "api/room", "tok-t")[2])
    assert room["answers"]["17"]["groups"] == [{"answer": "duplicate call", "count": 2, "state": "wrong"}]
    page = fetch(app, progress.PREFIX, "tok-a")[2]
    assert "typed" not in page and "duplicate call" not in page and "What the room answered" not in page
    assert "2 typed duplicate call" in fetch(app, progress.PREFIX, "tok-t")[2]


def test_outside_the_hub_end_to_end_the_command_a_connect_call_and_a_check(tmp_path, monkeypatch):
    """The trainer runs the command; a notebook connects with one line and runs its check; the trainer's link (the
    secret, once) opens the page with the row and the answer."""
    proc = subprocess.Popen([sys.executable, "-m", "agentlab", "trainer", "--room", CODE, "--port", "0",
                             "--host", "127.0.0.1", "--state", str(tmp_path / "state")],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("progress.sqlite" in x for x in lines[5:]):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        out = "".join(lines)
        assert CODE in out and "房间" in out and "room" in out, (out, proc.stderr.read() if proc.poll() else "")
        url = re.search(r"is at (http://127\.0\.0\.1:\d+/)", out)[1]
        trainer_url = re.search(r"(http://\S+\?trainer=\S+)", out)[1]
        assert out.count(trainer_url) == 2  # the secret: once in each language, at start, nowhere else
        unset(monkeypatch, *CONNECTION)
        monkeypatch.setenv("AGENTLAB_HOME", str(tmp_path / "home"))  # where this machine's key is made, once
        connected = exercises.connect(url, CODE, "Ann Lee")
        assert connected.ok and "Ann Lee" in str(connected), connected
        sent = []
        real = exercises.report
        monkeypatch.setattr(exercises, "report", lambda *a, **kw: sent.append(real(*a, **kw)))  # to wait for them
        assert exercises.breaker_threshold("2 次").state == "wrong"
        assert exercises.breaker_threshold(3).ok
        for thread in sent:
            thread.join(10)
        assert (tmp_path / "home" / "participant-key").stat().st_mode & 0o077 == 0
        # the browser's way: the link sets a cookie and drops the secret from the address
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(trainer_url, timeout=10) as r:
            page = r.read().decode()
            assert "?trainer=" not in r.geturl()
        text = re.sub(r"<[^>]+>", "", page)
        assert "Ann Lee" in text and "1 typed 2 (not right)" in text and "1 typed 3 (right)" in text
        assert call(url + "api/room")[0] == 401
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_the_command_refuses_a_bad_room_code_in_one_line(tmp_path):
    import contextlib
    import io

    from agentlab import cli
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["trainer", "--room", "a b", "--state", str(tmp_path), "--lang", "zh"]) == 2
    assert "--room" in err.getvalue() and "Traceback" not in err.getvalue() and "字母" in err.getvalue()


def _join(room, name, key, source="127.0.0.1"):
    """(status, body) of a participant joining from ``source`` (another loopback address is another machine)."""
    import http.client
    from urllib.parse import urlsplit
    where = urlsplit(room)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=10, source_address=(source, 0))
    try:
        conn.request("POST", "/api/join", body=b"{}",
                     headers={"Content-Type": "application/json", **as_participant(name, key)})
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_name_somebody_else_has_or_a_full_room_is_said_at_connect_never_after(room, monkeypatch, lang):
    """Both were told "Connected", and the second's checks were then refused where only the trainer's terminal
    showed it: the second participant never knew, and the trainer never saw them."""
    unset(monkeypatch, *CONNECTION)
    monkeypatch.setenv("AGENTLAB_PARTICIPANT_KEY", KEYS["ann"])
    assert exercises.connect(room, CODE, "Alex", lang=lang).ok
    unset(monkeypatch, *CONNECTION)
    monkeypatch.setenv("AGENTLAB_PARTICIPANT_KEY", KEYS["bo"])
    second = exercises.connect(room, CODE, "Alex", lang=lang)
    assert not second.ok and {"en": "already reports under this name", "zh": "名字"}[lang] in second.message, second
    assert "AGENTLAB_ROOM" not in os.environ  # its checks stay silent
    monkeypatch.setattr(progress, "MAX_PARTICIPANTS", 1)
    full = exercises.connect(room, CODE, "Bo", lang=lang)
    assert not full.ok and "1" in full.message and "Traceback" not in full.message, full
    rows = call(room + "api/room", headers=TRAINER)[1]["rows"]
    assert rows == [] or [r["user"] for r in rows] == ["Alex"]


def test_one_address_cannot_fill_the_room_and_keep_the_others_out(room, monkeypatch):
    """One participant with the room code joined 500 made-up names in a second: everyone after was refused."""
    monkeypatch.setattr(progress, "NAMES_PER_ADDRESS", 3)
    got = [_join(room, f"fake{i}", f"flood-key-{i:02d}-0123456789abcdef") for i in range(5)]
    assert [status for status, _ in got] == [200, 200, 200, 403, 403]
    assert got[3][1]["error"]["code"] == "address_full" and "3 names" in got[3][1]["error"]["message"]
    # a participant on another machine still joins, and one who joined keeps reporting
    assert _join(room, "Cleo", KEYS["cy"], source="127.0.0.2") == (200, {"joined": "Cleo"})
    assert _join(room, "fake0", "flood-key-00-0123456789abcdef")[0] == 200


def test_one_participant_sending_answer_after_answer_cannot_push_the_others_off_the_page(room):
    """Ten answers from one participant were ten groups, listed before everybody else's single answers, and only
    eight are shown: the trainer lost what the others typed."""
    for i in range(10):
        send(room, "bo", KEYS["bo"], "17", "wrong", f"aaa {i:02d}")
    send(room, "ann", KEYS["ann"], "17", "wrong", "retry")
    send(room, "cy", KEYS["cy"], "17", "right", "duplicate_call")
    groups = call(room + "api/room", headers=TRAINER)[1]["answers"]["17"]
    shown = [g["answer"] for g in groups["groups"]]
    assert "retry" in shown and "duplicate_call" in shown, groups
    assert sum(a.startswith("aaa") for a in shown) == progress.ANSWERS_PER_PARTICIPANT == 3
    assert {"aaa 09", "aaa 08", "aaa 07"} <= set(shown)  # their latest


def test_a_score_is_the_capstones_share_passed_and_nothing_else(room):
    """A capstone score of 12345 put its sender first in the ranking; a score on any exercise was kept."""
    who = as_participant("ann", KEYS["ann"])
    capstone = {"notebook": "capstone", "exercise": progress.known_exercises()["capstone"], "state": "wrong"}
    for score in (12345.0, -0.5, 1.01):
        status, err, _ = call(room + "api/report", headers=who, method="POST", body={**capstone, "score": score})
        assert status == 400 and err["error"]["code"] == "bad_score", (score, err)
    other = {"notebook": "17", "exercise": progress.known_exercises()["17"], "state": "right", "score": 1.0}
    assert call(room + "api/report", headers=who, method="POST", body=other)[0] == 400
    assert call(room + "api/report", headers=who, method="POST", body={**capstone, "score": 0.5})[0] == 200
    assert [r["score"] for r in call(room + "api/room", headers=TRAINER)[1]["ranking"]] == [0.5]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_address_where_no_room_answers_is_said_in_words_never_an_exception_name(monkeypatch, lang):
    import socket
    unset(monkeypatch, *CONNECTION)
    monkeypatch.setenv("AGENTLAB_PARTICIPANT_KEY", KEYS["ann"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]  # nothing listens once it is closed
    said = [exercises.connect(url, CODE, "ann", lang=lang, timeout=2) for url in
            (f"http://127.0.0.1:{free}/", "not a url", "http://no-such-host.invalid:8765/")]
    assert not any(c.ok for c in said)
    for c in said:
        assert not re.search(r"[A-Z][a-z]+Error|gaierror|Exception", c.message), c.message
    assert {"en": "nothing listens there", "zh": "没有服务在监听"}[lang] in said[0].message
    assert {"en": "not a web address", "zh": "不是网址"}[lang] in said[1].message
    assert {"en": "host name is not known", "zh": "不认识这个主机名"}[lang] in said[2].message


def test_each_exercises_counts_add_up_to_the_participants_on_the_page(room):
    """An exercise nobody had touched counted 0 "not yet" with two participants on the page."""
    send(room, "ann", KEYS["ann"], "06", "right", 3)
    send(room, "bo", KEYS["bo"], "17", "wrong", "retry")
    counts = call(room + "api/room", headers=TRAINER)[1]["counts"]
    assert counts["06"] == {"not yet": 1, "wrong": 0, "right": 1} and counts["03"] == {"not yet": 2, "wrong": 0, "right": 0}
    assert all(sum(c.values()) == 2 for c in counts.values())


@pytest.mark.parametrize("lang, said", [("en", "no such host or address"), ("zh", "没有这个主机名或地址")])
def test_a_host_that_is_no_address_is_said_in_the_readers_language_naming_the_option_to_change(tmp_path, lang, said):
    """It said "无法在 999.1.1.1:0 上监听（Name or service not known）；请换一个 --port": the resolver's English, and the
    option it named was not the one at fault."""
    done = subprocess.run([sys.executable, "-m", "agentlab", "trainer", "--room", CODE, "--host", "999.1.1.1",
                           "--port", "0", "--lang", lang, "--state", str(tmp_path)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2 and said in done.stderr and "--host" in done.stderr, done.stderr
    assert "Name or service" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_browser_opening_the_rooms_address_without_the_secret_gets_a_page_in_its_language(room, lang):
    """Participants opening the printed address in a browser got the API's raw JSON with its 401."""
    status, page, headers = call(room + f"?lang={lang}", headers={"Accept": "text/html,application/xhtml+xml"})
    assert status == 401 and headers["Content-Type"].startswith("text/html"), (status, page)
    import html

    from agentlab.i18n import t
    assert "<!DOCTYPE html>" in page and t("trainer.error.trainer_secret", lang).split("`")[0] in html.unescape(page)
    assert call(room)[0] == 401 and isinstance(call(room)[1], dict)  # the API still answers in JSON


@pytest.fixture
def quick_idle(monkeypatch):
    monkeypatch.setattr(progress, "IDLE", 0.5)


def test_a_connection_that_sends_nothing_is_closed(quick_idle, room):
    """Participants reach the trainer's view: idle connections, kept an hour by Tornado, used up its open files and it
    answered no one. A connection silent past the bound is closed by the server."""
    import socket
    import time
    from urllib.parse import urlsplit
    port = urlsplit(room).port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        t0 = time.monotonic()
        assert s.recv(10) == b""  # closed by the server, not by the client's 10 s
        assert time.monotonic() - t0 < 9  # after the bound (0.5 s), with a loaded host's slack

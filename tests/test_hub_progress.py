"""The trainer's view (agentlab/hub/progress.py): reports only for the token's own user, the room for trainers
only, the notes never in the participant's copy. The service runs in process with an injected token resolver
(what the hub's API would say); one test starts a real JupyterHub."""
import asyncio
import html
import json
import re
import threading

import pytest
from conftest import ROOT, children, ignore_ctrl_c, ignored_signals
from typography import ascii_colons

from agentlab.i18n import t

pytest.importorskip("jupyterhub")
pytest.importorskip("tornado")

from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port

from agentlab.hub import notes, progress
from agentlab.workbook import exercises

USERS = {"tok-a": {"name": "alice", "groups": []}, "tok-b": {"name": "bob", "groups": []},
         "tok-t": {"name": "tess", "groups": ["trainer"]}, "tok-root": {"name": "root", "admin": True, "groups": []},
         "tok-x": {"name": "<script>alert(1)</script>", "groups": []}}
REPORT = "/services/trainer/api/report"


async def resolve(token):
    return USERS.get(token)


class Clock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    return progress.Progress(tmp_path / "progress.sqlite", clock=clock)


@pytest.fixture
def app(store):
    return progress.make_app(store, resolve=resolve)


def fetch(app, path, token=None, *, method="GET", body=None, headers=None):
    """One request to the app on a loopback port of its own: (status, headers, text)."""
    async def go():
        sock, port = bind_unused_port()
        server = HTTPServer(app, max_body_size=65536)
        server.add_sockets([sock])
        h = dict(headers or {})
        if token:
            h["Authorization"] = f"token {token}"
        if body is not None and not isinstance(body, (bytes, str)):
            body_ = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        else:
            body_ = body
        try:
            r = await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}{path}", method=method, headers=h, body=body_,
                                              raise_error=False, follow_redirects=False, allow_nonstandard_methods=True)
        finally:
            server.stop()
        return r.code, r.headers, r.body.decode("utf-8")
    return asyncio.run(go())


def report(app, token, notebook="06", state="wrong", **extra):
    body = {"notebook": notebook, "exercise": exercises.exercise_ids()[notebook], "state": state, **extra}
    return fetch(app, REPORT, token, method="POST", body=body)


def error(reply):
    status, _, text = reply
    body = json.loads(text)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert "Traceback" not in text and "/work" not in text and "sqlite" not in text.lower()
    return status, body["error"]["code"]


def test_a_report_writes_the_tokens_own_row_and_no_one_elses(app, store):
    status, _, text = report(app, "tok-a", "06", "right")
    assert status == 200 and json.loads(text)["recorded"]["user"] == "alice"
    # naming another participant in the body is no way to write their row: the body has no such field
    assert error(report(app, "tok-a", "06", "wrong", user="bob")) == (400, "bad_body")
    assert [(v.user, v.notebook, v.state) for v in store.latest()] == [("alice", "06", "right")]
    assert store.latest("bob") == []
    # bob's own view shows nothing of alice's
    mine = json.loads(fetch(app, "/services/trainer/api/progress", "tok-b")[2])
    assert [r["user"] for r in mine["rows"]] == ["bob"] and mine["rows"][0]["cells"] == {}


@pytest.mark.parametrize("token", [None, "", "not-a-token"])
def test_a_missing_or_bad_token_is_refused_with_a_structured_error(app, store, token):
    assert error(report(app, token or None)) == (401, "unauthorized")
    assert error(fetch(app, "/services/trainer/api/room", token or None)) == (401, "unauthorized")
    assert store.latest() == []


def test_a_hub_that_cannot_be_asked_identifies_nobody_and_says_so(store):
    async def broken(token):
        raise ConnectionError("hub at 10.0.0.1 down")
    reply = report(progress.make_app(store, resolve=broken), "tok-a")
    assert error(reply) == (503, "unavailable") and reply[1]["Retry-After"] == "5"
    assert store.latest() == []


@pytest.mark.parametrize("body,headers,want", [
    (b"x" * (progress.MAX_BODY + 1), {"Content-Type": "application/json"}, (413, "too_large")),
    (b"x" * 70_000, {"Content-Type": "application/json"}, None),  # over the server's own bound: the socket closes
    (b'{"notebook": "06"', {"Content-Type": "application/json"}, (400, "bad_body")),
    (b'{"notebook": "06", "exercise": "breaker_threshold", "state": "right", "at": NaN}',
     {"Content-Type": "application/json"}, (400, "bad_body")),
    (b'["06", "breaker_threshold", "right"]', {"Content-Type": "application/json"}, (400, "bad_body")),
    (b'\xff\xfe', {"Content-Type": "application/json"}, (400, "bad_body")),
    (b'{"notebook": "06", "exercise": "breaker_threshold", "state": "right"}', {"Content-Type": "text/plain"},
     (415, "content_type")),
    (b'{"notebook": "99", "exercise": "breaker_threshold", "state": "right"}', {"Content-Type": "application/json"},
     (400, "unknown_exercise")),
    (b'{"notebook": "06", "exercise": "longest_wait", "state": "right"}', {"Content-Type": "application/json"},
     (400, "unknown_exercise")),
    (b'{"notebook": "../06", "exercise": "breaker_threshold", "state": "right"}', {"Content-Type": "application/json"},
     (400, "unknown_exercise")),
    (b'{"notebook": "06", "exercise": "breaker_threshold", "state": "solved"}', {"Content-Type": "application/json"},
     (400, "bad_state")),
    (b'{"notebook": "06", "exercise": "breaker_threshold", "state": "right", "at": "noon"}',
     {"Content-Type": "application/json"}, (400, "bad_body")),
])
def test_oversized_or_malformed_reports_are_refused(app, store, body, headers, want):
    reply = fetch(app, REPORT, "tok-a", method="POST", body=body, headers=headers)
    if want is None:
        assert reply[0] in (400, 413, 599)  # refused before the handler ever reads it
    else:
        assert error(reply) == want
    assert store.latest() == []


def test_errors_are_said_in_chinese_when_asked(app):
    status, _, text = fetch(app, REPORT + "?lang=zh", None, method="POST", body={})
    assert status == 401 and "令牌" in json.loads(text)["error"]["message"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_bad_state_is_refused_naming_the_states_as_the_page_says_them_too(app, lang):
    """The refusal listed "not yet, wrong, right" where the trainer's page says "not quite" for "wrong"."""
    body = {"notebook": "06", "exercise": "breaker_threshold", "state": "solved"}
    status, _, text = fetch(app, REPORT + f"?lang={lang}", "tok-a", method="POST", body=body)
    said = json.loads(text)["error"]["message"]
    assert status == 400 and t("trainer.state.wrong", lang) in said and "wrong" in said, said


def test_only_a_trainer_sees_the_room_and_where_it_is_stuck(app, clock):
    report(app, "tok-a", "06", "wrong")
    clock.now += 300
    report(app, "tok-a", "06", "wrong")  # still not quite: counted from the first
    report(app, "tok-b", "06", "wrong")
    report(app, "tok-b", "04", "right")
    clock.now += 60
    assert error(fetch(app, "/services/trainer/api/room", "tok-a")) == (403, "trainer_only")
    for trainer in ("tok-t", "tok-root"):
        status, _, text = fetch(app, "/services/trainer/api/room", trainer)
        room = json.loads(text)
        assert status == 200 and [r["user"] for r in room["rows"]] == ["alice", "bob"]
        assert room["counts"]["06"] == {"not yet": 0, "wrong": 2, "right": 0}
        assert room["counts"]["04"]["right"] == 1
        assert [(s["user"], s["seconds"]) for s in room["stuck"]] == [("alice", 360), ("bob", 60)]


def test_trainers_named_to_the_service_see_the_room(store):
    app = progress.make_app(store, resolve=resolve, trainers=["alice"], trainer_group="teachers")
    assert fetch(app, "/services/trainer/api/room", "tok-a")[0] == 200
    assert error(fetch(app, "/services/trainer/api/room", "tok-t")) == (403, "trainer_only")  # not that group


def test_the_page_shows_a_participant_their_own_row_only(app):
    report(app, "tok-a", "06", "right")
    report(app, "tok-b", "04", "wrong")
    status, headers, page = fetch(app, "/services/trainer/", "tok-b")
    assert status == 200 and "bob" in page and "alice" not in page
    assert "Trainer notes" not in page and "Where the room is stuck" not in page
    assert "not quite" in page and "default-src 'none'" in headers["Content-Security-Policy"]


def test_the_trainer_page_has_the_room_the_notes_and_both_languages(app):
    report(app, "tok-a", "06", "right")
    report(app, "tok-b", "04", "wrong")
    report(app, "tok-x", "00", "wrong")
    page = fetch(app, "/services/trainer/", "tok-t")[2]
    assert "alice" in page and "bob" in page and "Trainer notes" in page and "Where the room is stuck" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page  # a hostile name is escaped
    # the notes as a trainer reads them in front of the room: Markdown made into HTML, never its source
    title = notes.trainer_notes("04", "en").splitlines()[0].removeprefix("# ")
    assert f"<h4>{html.escape(title, quote=False)}</h4>" in page and "<strong>Timing:</strong>" in page
    assert "**Timing:**" not in page and "\n# " not in page and not re.search(r"<pre>(?!<code)", page)
    # each build exercise's notes under its own column's name, the code as code
    assert "<h5>Build exercise (05b)</h5>" in page and "<strong>What they write:</strong>" in page
    assert '<code class="language-python">def my_business_key(args):' in page
    zh = fetch(app, "/services/trainer/?lang=zh", "tok-t")[2]
    assert "讲师备注" in zh and "还不对" in zh and 'lang="zh-CN"' in zh
    assert not ascii_colons(zh, page=True), ascii_colons(zh, page=True)
    by_header = fetch(app, "/services/trainer/", "tok-t", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})[2]
    assert "全场进度" in by_header
    # the browser's most preferred of the two, as the app and the site read it: by its first tag alone, English
    ranked = fetch(app, "/services/trainer/", "tok-t", headers={"Accept-Language": "fr-FR,zh-CN;q=0.8,en;q=0.5"})[2]
    assert "全场进度" in ranked


def test_nobody_signed_in_gets_no_page(app):
    assert error(fetch(app, "/services/trainer/")) == (401, "unauthorized")


def test_a_participant_asking_for_the_notes_is_refused(app):
    assert error(fetch(app, "/services/trainer/api/notes/03", "tok-a")) == (403, "trainer_only")
    status, _, text = fetch(app, "/services/trainer/api/notes/03?lang=zh", "tok-t")
    assert status == 200 and json.loads(text)["notes"] == notes.trainer_notes("03", "zh")
    status, _, text = fetch(app, "/services/trainer/api/notes/05b?lang=zh", "tok-t")
    assert status == 200 and json.loads(text)["notes"].startswith("## 动手改（05b）")
    for bad in ("99", "99b", "..%2F..%2Fi18n%2Fen", "03.en.md", "03b.en"):
        assert error(fetch(app, f"/services/trainer/api/notes/{bad}", "tok-t")) == (404, "not_found")


def test_unknown_addresses_and_methods_answer_in_json(app):
    assert error(fetch(app, "/services/trainer/nope", "tok-a")) == (404, "not_found")
    assert error(fetch(app, "/elsewhere")) == (404, "not_found")
    assert error(fetch(app, REPORT, "tok-a", method="DELETE")) == (405, "method")


NOTEBOOKS = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


def test_every_notebook_has_an_exercise_id_and_notes_in_both_languages():
    assert list(exercises.exercise_ids()) == NOTEBOOKS == list(progress.exercise_ids())
    for nb in NOTEBOOKS:
        en, zh = notes.trainer_notes(nb, "en"), notes.trainer_notes(nb, "zh")
        assert en and zh and en != zh, nb
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh), nb
        for text in (en, zh):
            assert len(text) < 3000, f"{nb}: keep the notes short"


def test_the_notes_are_not_in_the_participants_copy():
    """The participant's copy is the notebooks folder: no note lives under it, nor does a notebook cite one."""
    folder = notes.notes_dir().resolve()
    copy = (ROOT / "notebooks").resolve()
    assert copy not in folder.parents and folder != copy
    assert not [p for p in copy.rglob("*.md")]
    for path in copy.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb"):
            assert "data/trainer" not in path.read_text(encoding="utf-8"), path


def test_a_notes_file_is_markdown_its_tags_shown_as_text_and_its_links_only_to_the_web():
    shown = str(notes.notes_html("# 03 · Title\n\n## Part\n\n**Bold** <script>alert(1)</script> <b>x</b>\n\n"
                                 "- [docs](https://example.org/a) [run](javascript:alert(1)) `code`\n"))
    assert "<h4>03 · Title</h4>" in shown and "<h5>Part</h5>" in shown and "<strong>Bold</strong>" in shown
    assert "<script>" not in shown and "&lt;script&gt;" in shown and "&lt;b&gt;x&lt;/b&gt;" in shown
    assert '<a href="https://example.org/a">docs</a>' in shown and "javascript" not in shown and "<code>code</code>" in shown
    assert notes.notes_html(None) is None


def test_the_notes_folder_can_be_the_hubs_own(tmp_path, monkeypatch):
    (tmp_path / "03.en.md").write_text("private to the hub", encoding="utf-8")
    monkeypatch.setenv("AGENTLAB_TRAINER_NOTES", str(tmp_path))
    assert notes.trainer_notes("03", "zh") == "private to the hub"  # English when there is no translation
    assert notes.trainer_notes("04", "en") is None


def test_the_hub_entries(tmp_path):
    entry = progress.service(10123, tmp_path, trainers=["tess"])
    assert entry["name"] == "trainer" and entry["url"] == "http://127.0.0.1:10123"
    assert entry["command"][1:] == ["-m", "agentlab.hub.progress"] and entry["oauth_no_confirm"] is True
    assert entry["environment"]["AGENTLAB_PROGRESS_STATE"] == str(tmp_path)
    assert entry["environment"]["AGENTLAB_TRAINERS"] == "tess"
    assert progress.participant_env(10123) == {
        "AGENTLAB_PROGRESS_URL": "http://127.0.0.1:10123/services/trainer/api/report"}


def test_the_history_is_bounded_and_since_counts_from_the_first_verdict(store, clock, monkeypatch):
    monkeypatch.setattr(progress, "HISTORY_PER_USER", 5)
    first = store.record("alice", "06", "breaker_threshold", "wrong")
    for _ in range(9):
        clock.now += 1
        last = store.record("alice", "06", "breaker_threshold", "wrong")
    assert last.since == first.at and last.at == first.at + 9
    assert len(store.history("alice")) == 5
    clock.now += 1
    assert store.record("alice", "06", "breaker_threshold", "right").since == clock.now


def test_a_check_in_the_hub_reports_to_the_service_end_to_end(store, monkeypatch):
    """A real check, its real HTTP post, the service on a loopback port in a thread: the row appears."""
    import tornado.ioloop

    app = progress.make_app(store, resolve=resolve)
    sock, port = bind_unused_port()
    ready, loop_box = threading.Event(), {}

    def run():
        async def main():
            server = HTTPServer(app)
            server.add_sockets([sock])
            loop_box["loop"] = tornado.ioloop.IOLoop.current()
            loop_box["stop"] = asyncio.Event()
            ready.set()
            await loop_box["stop"].wait()
            server.stop()
        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(5)
    sent = []
    real = exercises.report
    monkeypatch.setattr(exercises, "report", lambda fb, nb, **kw: sent.append(real(fb, nb, **kw)))  # to wait for the thread
    monkeypatch.setenv("AGENTLAB_PROGRESS_URL", progress.participant_env(port)["AGENTLAB_PROGRESS_URL"])
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "tok-b")
    try:
        assert exercises.breaker_threshold(3).ok
        sent[0].join(5)
    finally:
        loop_box["loop"].add_callback(loop_box["stop"].set)
        thread.join(5)
    assert [(v.user, v.notebook, v.exercise, v.state) for v in store.latest()] == [("bob", "06", "breaker_threshold", "right")]



def _free_port():
    sock, port = bind_unused_port()
    sock.close()
    return port


def _proxy():
    """configurable-http-proxy: the hub folder's pinned copy, one on PATH, or $CONFIGURABLE_HTTP_PROXY."""
    import os
    import shutil
    local = ROOT / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
    return os.environ.get("CONFIGURABLE_HTTP_PROXY") or (str(local) if local.exists() else None) or \
        shutil.which("configurable-http-proxy")


@pytest.mark.skipif(not _proxy(), reason="configurable-http-proxy is not installed (hub/: npm ci)")
def test_a_real_hub_resolves_tokens_for_the_service(tmp_path):
    """JupyterHub itself starts the service, and the hub's API says whose each token is: a user's token reports for
    that user only, a made-up one is refused, the trainer group sees the room and a participant does not.
    (About 20 s on two busy cores, most of it the hub and the service starting; skipped without the proxy.)"""
    import os
    import secrets
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    hub_port, api_port, svc_port, proxy_api = _free_port(), _free_port(), _free_port(), _free_port()
    admin = secrets.token_hex(16)
    config = tmp_path / "jupyterhub_config.py"
    config.write_text(f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from agentlab.hub import notes, progress
from agentlab.hub.services import undo_ignored_signals
undo_ignored_signals()  # as hub/jupyterhub_config.py: a service told to stop stops (the test's worker may ignore Ctrl-C)
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {hub_port}
c.JupyterHub.hub_port = {api_port}
c.JupyterHub.db_url = "sqlite:///{tmp_path}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{tmp_path}/cookie_secret"
c.ConfigurableHTTPProxy.command = [{_proxy()!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.pid_file = "{tmp_path}/proxy.pid"
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.services = [progress.service({svc_port}, {str(tmp_path / "state")!r}),
                         {{"name": "tester", "api_token": {admin!r}}}]
c.JupyterHub.load_roles = [{{"name": "tester", "scopes": ["admin:users", "tokens", "read:users"], "services": ["tester"]}},
                           {{"name": "user", "scopes": ["self", progress.ACCESS_SCOPE]}}]
c.JupyterHub.load_groups = {{"trainer": {{"users": ["tess"]}}}}
c.Authenticator.admin_users = {{"root"}}
""", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = (tmp_path / "hub.log").open("wb")
    # started as a script's background job is (and as a CI job may be): with Ctrl-C and SIGQUIT ignored
    hub = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=tmp_path, env=env,
                           stdout=log, stderr=subprocess.STDOUT,
                           preexec_fn=ignore_ctrl_c)

    def call(url, token=None, body=None, method=None):
        req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"token {token}")
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw or b"null")
        except ValueError:  # the proxy's own page while the hub starts
            return status, raw[:200]

    api = f"http://127.0.0.1:{hub_port}/hub/api"
    svc = f"http://127.0.0.1:{svc_port}/services/trainer/"
    try:
        for _ in range(150):  # the hub, its proxy and the service come up in a few seconds
            try:
                if call(api + "/", admin)[0] == 200 and call(svc + "api/room")[0] == 401:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            pytest.fail("the hub or the service did not come up:\n" + (tmp_path / "hub.log").read_text()[-3000:])
        # the service answers Ctrl-C, though the hub began with it ignored: JupyterHub stops it with SIGINT
        view = {p: ignored_signals(p) for p, (_, cmd) in children(hub.pid).items() if "agentlab.hub.progress" in cmd}
        assert view and not any(view.values()), view
        tokens = {}
        for name in ("alice", "bob", "tess", "root"):
            assert call(f"{api}/users/{name}", admin, {}, "POST")[0] in (201, 409)
            status, body = call(f"{api}/users/{name}/tokens", admin, {"note": "test"}, "POST")
            assert status == 201, body
            tokens[name] = body["token"]
        report = {"notebook": "06", "exercise": "breaker_threshold", "state": "right"}
        status, body = call(svc + "api/report", tokens["alice"], report, "POST")
        assert status == 200 and body["recorded"]["user"] == "alice", body
        assert call(svc + "api/report", "made-up-token", report, "POST")[0] == 401
        assert call(svc + "api/room", tokens["bob"])[0] == 403
        status, room = call(svc + "api/room", tokens["tess"])
        assert status == 200 and [r["user"] for r in room["rows"]] == ["alice"]
        assert call(svc + "api/notes/06", tokens["bob"])[0] == 403 and call(svc + "api/notes/06", tokens["tess"])[0] == 200
        # a browser: the hub's login, the OAuth round trip, then the page with the user's own row only
        import requests
        assert call(svc + "api/room", tokens["root"])[0] == 200  # an admin's token
        for name, sees, hidden in (("bob", "bob", "alice"), ("tess", "alice", None), ("root", "alice", None)):
            browser = requests.Session()
            hub_url = f"http://127.0.0.1:{hub_port}"
            browser.get(hub_url + "/hub/login", timeout=10)
            browser.post(hub_url + "/hub/login", data={"username": name, "password": "x",
                                                       "_xsrf": browser.cookies.get("_xsrf", "")}, timeout=10)
            page = browser.get(hub_url + "/services/trainer/?lang=zh", timeout=10)
            title = "全场进度" if name != "bob" else "你的进度"  # a participant's page is their own, titled so
            assert page.status_code == 200 and title in page.text, page.text[:500]
            assert sees in page.text and (hidden is None or hidden not in page.text)
            assert ("讲师备注" in page.text) == (name != "bob"), name
    finally:
        # its service, started by the hub: killed with it if the hub has not stopped it (before, a hub killed here
        # left the service running, orphaned, after every such run)
        service = list(children(hub.pid))
        hub.terminate()
        stopped = True
        try:
            hub.wait(15)
        except subprocess.TimeoutExpired:
            stopped = False
            hub.kill()
            hub.wait(15)
        for pid in service if not stopped else ():  # a hub that stopped stopped them too: those ids may be reused
            try:
                os.kill(pid, 9)
            except OSError:  # gone meanwhile
                pass
        log.close()
        pid = tmp_path / "proxy.pid"  # a hub stopped while starting leaves its proxy behind: stop it too
        if pid.exists():
            try:
                os.kill(int(pid.read_text().strip()), 15)
            except (ProcessLookupError, ValueError):
                pass
    assert stopped, "the hub still ran 15 s after SIGTERM (its service was killed with it)"


def test_a_browser_cookie_can_read_its_own_row_but_never_post_a_report(store):
    """A page in another tab cannot make a signed-in browser report: reports take the header's token only."""
    class SignedIn:  # what HubOAuth says: the cookie is alice's, and no token is anyone's
        login_url = "/hub/login"

        async def get_user(self, handler, sync=False):
            return USERS["tok-a"]

        async def user_for_token(self, token, sync=False):
            return None

    app = progress.make_app(store, hub_auth=SignedIn())
    assert error(report(app, None)) == (401, "unauthorized")
    assert store.latest() == []
    status, _, text = fetch(app, "/services/trainer/api/progress")
    assert status == 200 and json.loads(text)["rows"][0]["user"] == "alice"


def test_an_answered_exercise_reported_not_yet_again_stays_answered_and_its_history_keeps_both(store):
    """A participant answered 00 right, then ran the notebook again from a copy never saved (answer = None): the
    trainer's page showed 还没作答 beside its own count of the right answer."""
    right = store.record("ana", "00", "look_up", "right", answer="lost_reply")
    again = store.record("ana", "00", "look_up", "not yet")
    assert again == right and [s.state for s in store.latest("ana")] == ["right"]
    wrong = store.record("ana", "00", "look_up", "wrong", answer="duplicate_call")  # a new answer still counts
    assert [s.state for s in store.latest("ana")] == ["wrong"] and wrong.answer == "duplicate_call"
    store.record("bo", "00", "look_up", "not yet")
    assert [s.state for s in store.latest("bo")] == ["not yet"]  # never answered: not yet, as before
    assert [r[0] for r in store.db.execute("SELECT state FROM history WHERE user='ana' ORDER BY id")] == \
        ["right", "not yet", "wrong"]


def test_a_participants_page_is_titled_as_their_own_and_a_method_refused_is_said_as_asked(app):
    """A participant's page was titled 全场进度 (the whole room's) over their own row alone; a POST to an address that
    takes none was refused in English on a Chinese request."""
    headers = {"Accept": "text/html", "Accept-Language": "zh-CN"}
    status, _, own = fetch(app, "/services/trainer/", "tok-a", headers=headers)
    assert status == 200 and t("trainer.title_own", "zh") in own and t("trainer.title", "zh") not in own
    status, _, room = fetch(app, "/services/trainer/", "tok-t", headers=headers)
    assert status == 200 and t("trainer.title", "zh") in room
    status, _, text = fetch(app, "/services/trainer/api/progress", "tok-a", method="POST", body={},
                            headers={"Accept-Language": "zh-CN"})
    assert status == 405 and json.loads(text)["error"]["message"] == t("trainer.error.method", "zh")


def test_every_participant_of_the_hub_has_a_row_before_their_first_check(store):
    """The trainer's view had a row only for those who had run a check: one who logged in and never reached one (a
    server that would not start), the most stuck of all, was not on it. The hub's users are each a row; a hub
    that cannot be asked leaves the rows the checks made."""
    async def members():
        return ["alice", "zed"]
    app = progress.make_app(store, resolve=resolve, members=members)
    assert report(app, "tok-a", "06", "right")[0] == 200
    status, _, text = fetch(app, "/services/trainer/api/room", "tok-t")
    rows = {r["user"]: r["cells"] for r in json.loads(text)["rows"]}
    assert status == 200 and set(rows) == {"alice", "zed"} and rows["zed"] == {}, rows
    page = fetch(app, "/services/trainer/", "tok-t", headers={"Accept": "text/html"})[2]
    assert ">zed<" in page, page[:500]
    own = json.loads(fetch(app, "/services/trainer/api/progress", "tok-a")[2])  # a participant: their own row alone
    assert [r["user"] for r in own["rows"]] == ["alice"]


def test_the_hubs_list_of_users_is_asked_once_in_a_while_and_a_hub_down_leaves_the_last(monkeypatch):
    from agentlab.hub import members as m
    asked, now = [], [0.0]

    class Reply:
        body = json.dumps([{"name": "ana"}, {"name": "trainer"}, {"name": "bo"}, "odd"]).encode()

    class Client:
        async def fetch(self, url, **kw):
            asked.append((url, kw["headers"]["Authorization"]))
            if len(asked) > 1:
                raise OSError("the hub is down")
            return Reply()
    monkeypatch.setattr("tornado.httpclient.AsyncHTTPClient", Client)
    members = m.hub_members(["trainer"], api_url="http://hub/api/", token="svc", clock=lambda: now[0])
    assert asyncio.run(members()) == ["ana", "bo"]
    now[0] += 1
    assert asyncio.run(members()) == ["ana", "bo"] and len(asked) == 1  # kept for a while: one question
    now[0] += m.KEEP + 1
    assert asyncio.run(members()) == ["ana", "bo"] and len(asked) == 2  # asked again; down: the last list
    assert asked[0] == ("http://hub/api/users", "token svc")

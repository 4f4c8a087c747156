"""The workshop hub (agentlab/hub/): the real JupyterHub, real accounts, loopback only.

The settings are read as data; then one hub is started for the module (no model: ``--no-model``), with two
participants, and the tests check what a participant's kernel can and cannot reach, the memory limit, the
login, and that stopping leaves nothing running. They need root (the hub runs every participant as their own
account), JupyterHub (requirements-hub.txt) and the proxy (npm ci in hub/): skipped without them on a
user's machine, failed in CI (AGENTLAB_CI=1).
"""
import importlib.util
import json
import os
import re
import secrets
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from conftest import ROOT, skip_or_fail

from agentlab.hub.auth import PasswordBook
from agentlab.hub.config import HubSettings, build
from agentlab.hub.users import os_name

# one hub per machine (its accounts are the machine's): every test of the module on one worker of pytest-xdist
pytestmark = pytest.mark.xdist_group("hub")
PROXY = ROOT / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
LIMIT = 1 << 30


def settings(tmp: Path, **kw) -> HubSettings:
    import sys
    return HubSettings(root=ROOT, state=tmp, python=Path(sys.executable), proxy=PROXY, workshop_password="room-pw-1",
                       redis_password="redis-pw-1", **kw)


def test_settings_are_data_and_hold_no_secret_a_participant_gets(tmp_path):
    s = settings(tmp_path, gguf=tmp_path / "m.gguf", slots=6, site_port=7001, model_port=7002, redis_port=7003)
    c = build(s, extra_env={"AGENTLAB_PROGRESS_URL": "http://127.0.0.1:7004/"})
    assert c["Authenticator"]["allow_all"] and c["Authenticator"]["request_otp"]  # never open: a password always
    assert c["JupyterHub"]["bind_url"].startswith("http://127.0.0.1:")
    assert c["JupyterHub"]["spawner_class"] == "agentlab.hub.spawner.WorkshopSpawner"
    names = {x["name"] for x in c["JupyterHub"]["services"]}
    assert names == {"redis", "site", "model", "idle-culler", "trainer"}
    model = next(x for x in c["JupyterHub"]["services"] if x["name"] == "model")
    assert model["command"][model["command"].index("--parallel") + 1] == "6"
    env = c["Spawner"]["environment"]
    assert env["AGENTLAB_BASE_URL"] == "http://127.0.0.1:7002/v1" and env["AGENTLAB_SITE_URL"] == "http://127.0.0.1:7001"
    assert env["AGENTLAB_PROGRESS_URL"] == "http://127.0.0.1:7004/"
    assert env["JUPYTER_CONFIG_PATH"] == str(ROOT / "etc" / "jupyter")  # each notebook listed once, saved as committed
    said = json.dumps([c["Spawner"], [x.get("command") for x in c["JupyterHub"]["services"]]])
    assert "room-pw-1" not in said and "redis-pw-1" not in said  # not in a server's env, not on a command line
    assert all(x.get("user") == "agentlab-services" for x in c["JupyterHub"]["services"])
    no_model = build(settings(tmp_path))
    assert "model" not in {x["name"] for x in no_model["JupyterHub"]["services"]}
    assert "AGENTLAB_BASE_URL" not in no_model["Spawner"]["environment"]


def test_a_name_is_claimed_with_the_workshop_password_and_then_is_its_own(tmp_path):
    book = PasswordBook(tmp_path / "p.json", "room-pw-1")
    assert not book.login("ana", "anas-own-pw", "wrong")  # the room's password is needed to claim a name
    assert not book.login("ana", "short", "room-pw-1")  # too short to be a password of one's own
    assert book.login("ana", "anas-own-pw", "room-pw-1")
    assert book.login("ana", "anas-own-pw") and not book.login("ana", "room-pw-1", "room-pw-1")  # no takeover
    assert not book.login("ana", "another-pw", "room-pw-1")
    assert not book.login("Ana/../x", "anas-own-pw", "room-pw-1") and not book.login("", "x" * 8, "room-pw-1")
    assert oct((tmp_path / "p.json").stat().st_mode & 0o777) == "0o600"
    with pytest.raises(ValueError):
        os_name("../root")


@pytest.fixture(scope="module")
def hub():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        skip_or_fail("the hub runs participants as their own accounts: the tests need root")
    if importlib.util.find_spec("jupyterhub") is None:
        skip_or_fail("JupyterHub is not installed (python run.py setup requirements-hub.txt)")
    if not PROXY.exists():
        skip_or_fail("configurable-http-proxy is not installed (cd hub && npm ci)")
    from agentlab.hub.launch import Hub
    token = secrets.token_hex(16)
    roles = [{"name": "tester", "services": ["tester"],
              "scopes": ["admin:users", "admin:servers", "access:servers", "list:users", "read:users", "tokens"]}]
    import shutil
    import tempfile
    state = Path(tempfile.mkdtemp(prefix="agentlab-hub-test-"))  # not under pytest's 0700 folder: the accounts pass through
    h = Hub(settings(state, data_limit=LIMIT, port=_free()),
            extra_services=[{"name": "tester", "api_token": token}], extra_roles=roles)
    h.start()
    try:
        def up(name):
            h.api(token, "POST", f"/users/{name}")
            h.api(token, "POST", f"/users/{name}/server")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if h.api(token, "GET", f"/users/{name}")["servers"].get("", {}).get("ready"):
                    return h.api(token, "POST", f"/users/{name}/tokens", {"note": "test"})["token"]
                time.sleep(0.5)
            pytest.fail(f"{name}'s server did not start (log: {h.log})")
        with ThreadPoolExecutor(2) as pool:
            tokens = dict(zip(("ana", "bo"), pool.map(up, ("ana", "bo")), strict=True))
        yield h, token, tokens
    finally:
        h.stop()
        shutil.rmtree(state, ignore_errors=True)


def _free() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url, token) -> int:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _run(h, token, name, cells):
    from agentlab.hub.kernel import run_cells
    return run_cells(f"{h.url}/user/{name}/", token, cells, timeout=120)


def test_a_participant_reaches_only_their_own_server(hub):
    h, _, tokens = hub
    assert _status(f"{h.url}/user/ana/api/status", tokens["ana"]) == 200
    assert _status(f"{h.url}/user/bo/api/status", tokens["ana"]) == 403  # bo's server refuses ana's token
    assert _status(f"{h.url}/user/bo/api/contents/notebooks", tokens["ana"]) == 403
    assert _status(f"{h.url}/hub/api/users", tokens["ana"]) == 403  # and the list of participants is not hers


def test_a_participants_kernel_cannot_read_another_or_the_hubs_secrets(hub):
    h, admin_token, tokens = hub
    st = h.settings.state
    bo_pid = h.api(admin_token, "GET", "/users/bo")["servers"][""]["state"]["pid"]
    probes = {"bo_file": str(st / "homes" / "bo" / "notebooks" / "00_start_here.ipynb"),
              "bo_env": f"/proc/{bo_pid}/environ", "hub_env": f"/proc/{h.proc.pid}/environ",
              "hub_config": str(st / "hub" / "config.json"), "passwords": str(st / "hub" / "passwords.json"),
              "site_keys": str(st / "site-keys.json"), "redis_conf": str(st / "redis" / "redis.conf")}
    code = ("import json, os\nout = {}\n"
            f"for k, p in {probes!r}.items():\n"
            "    try:\n        open(p, 'rb').read(); out[k] = 'read'\n"
            "    except OSError as e:\n        out[k] = type(e).__name__\n"
            "out['env'] = dict(os.environ)\nout['own'] = os.path.exists('00_start_here.ipynb')\n"
            "print(json.dumps(out))")
    [cell] = _run(h, tokens["ana"], "ana", [code])
    assert cell.ok, cell.error
    out = json.loads(cell.stdout)
    env = out.pop("env")
    assert out.pop("own") is True
    assert all(v in ("PermissionError", "FileNotFoundError") for v in out.values()), out
    assert out["bo_file"] == out["bo_env"] == out["hub_env"] == "PermissionError"
    said = json.dumps(env)
    for secret in ("room-pw-1", "redis-pw-1", admin_token, tokens["bo"], tokens["ana"]):
        assert secret not in said  # (ana's kernel has a server token of its own, not the one made for the test)
    assert not {k for k in env if k.startswith(("CONFIGPROXY", "JPY_COOKIE", "AGENTLAB_HUB"))}
    assert env["USER"] == "agentlab-ana" and env["AGENTLAB_STORE_PREFIX"] == "agentlab:u:ana:"
    assert env["AGENTLAB_SITE_KEY"].startswith("sk-site-") and env["AGENTLAB_SITE_URL"].startswith("http://127.0.0.1:")


def test_each_participant_has_redis_keys_of_their_own_only(hub):
    h, _, tokens = hub
    code = ("import os, redis\nfrom agentlab.calls import default_store\n"
            "s = default_store(); print(s.prefix, s.claim('refund-1', 'f').status)\n"
            "r = redis.Redis.from_url(os.environ['AGENTLAB_STORE'])\n"
            "for k in ('agentlab:u:bo:claim:refund-1', 'agentlab:site:x'):\n"
            "    try:\n        r.get(k); print('read')\n"
            "    except redis.exceptions.NoPermissionError:\n        print('refused')\n")
    [ana] = _run(h, tokens["ana"], "ana", [code])
    assert ana.ok, ana.error
    assert ana.stdout.split("\n")[:3] == ["agentlab:u:ana: new", "refused", "refused"]
    [bo] = _run(h, tokens["bo"], "bo", ["from agentlab.calls import default_store\n"
                                        "print(default_store().claim('refund-1', 'f').status)"])
    assert bo.stdout.strip() == "new"  # bo's run never sees ana's claim


def test_a_kernel_past_the_memory_limit_fails_and_the_server_survives(hub):
    h, _, tokens = hub
    cells = [f"x = bytearray({LIMIT + (256 << 20)})", "print('never')"]
    [cell] = _run(h, tokens["bo"], "bo", cells)
    assert not cell.ok and cell.error.startswith("MemoryError")
    assert _status(f"{h.url}/user/bo/api/status", tokens["bo"]) == 200
    [after] = _run(h, tokens["bo"], "bo", ["print(sum(range(10)))"])
    assert after.ok and after.stdout.strip() == "45"


def test_each_participants_kernels_talk_over_sockets_in_a_folder_of_their_own(hub):
    """Two kernels starting at once in two servers once took the same TCP port: now they use no port at all."""
    from agentlab.hub.spawner import kernel_sockets
    h, _, tokens = hub
    code = ("import json, ipykernel.connect\ni = json.loads(ipykernel.connect.get_connection_info())\n"
            "print(i['transport'], i['ip'])")
    got = {n: _run(h, tokens[n], n, [code])[0].stdout.split() for n in ("ana", "bo")}
    homes = h.settings.state / "homes"
    assert got == {n: ["ipc", str(kernel_sockets(homes / n))] for n in ("ana", "bo")}, got
    folder = kernel_sockets(homes / "ana").parent
    assert oct(folder.stat().st_mode & 0o777) == "0o700" and folder.stat().st_uid != 0


def test_the_login_form_claims_a_name_once(hub):
    h, _, _ = hub

    def login(name, password, otp):
        jar = CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        with opener.open(f"{h.url}/hub/login", timeout=30) as r:
            page = r.read().decode()
        assert 'name="otp"' in page and "Workshop password" in page
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
        data = urllib.parse.urlencode({"username": name, "password": password, "otp": otp, "_xsrf": xsrf}).encode()
        try:
            with opener.open(f"{h.url}/hub/login", data=data, timeout=60) as r:
                return r.status, r.geturl()
        except urllib.error.HTTPError as e:
            return e.code, ""

    assert login("cy", "cys-own-pw", "not-the-room")[0] == 403
    status, url = login("cy", "cys-own-pw", "room-pw-1")
    assert status == 200 and "/hub/login" not in url
    assert login("cy", "someone-else", "room-pw-1")[0] == 403  # taken: the room's password does not open it
    assert login("cy", "cys-own-pw", "")[0] == 200


def test_an_exercise_check_in_a_participants_kernel_reaches_the_trainers_view(hub):
    """The hub starts the trainer's view and tells every server where it is: a check run in ana's notebook 00 shows
    in the room (read with the trainer's token), ana sees her own row only, bo's token cannot read it."""
    h, admin_token, tokens = hub
    cells = ["from agentlab.workbook.exercises import double_refund_fault\n"
             "print(double_refund_fault('truncated_args').state, double_refund_fault('lost_reply').state)",
             "import time; time.sleep(2)"]  # the report leaves from a background thread: let it go before the kernel ends
    [said, _] = _run(h, tokens["ana"], "ana", cells)
    assert said.ok and said.stdout.split() == ["wrong", "right"], said
    base = f"{h.url}/services/trainer/api/"
    trainer = h.api(admin_token, "POST", f"/users/{h.settings.admin}/tokens", {"note": "test"})["token"]
    deadline = time.monotonic() + 30
    while True:
        req = urllib.request.Request(base + "room", headers={"Authorization": f"token {trainer}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            room = json.loads(r.read())
        text = json.dumps(room)
        if ("ana" in text and "right" in text) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "ana" in text and "right" in text and "bo" not in text.replace("board", ""), room
    assert _status(base + "room", tokens["ana"]) == 403  # the room is the trainer's
    req = urllib.request.Request(base + "progress", headers={"Authorization": f"token {tokens['ana']}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        own = json.loads(r.read())
    assert "ana" in json.dumps(own) and "right" in json.dumps(own)


def test_stopping_the_hub_leaves_nothing_running(hub):
    from agentlab.hub.launch import workshop_uids
    from agentlab.hub.users import processes_of
    h, _, _ = hub
    s = h.settings
    assert list(processes_of(workshop_uids()))
    h.proc.terminate()  # as Ctrl-C or SIGTERM to the hub would
    h.proc.wait(60)
    deadline = time.monotonic() + 30  # a server told to stop may still be closing its kernels on a loaded machine
    while (left := list(processes_of(workshop_uids()))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in left]
    for port in (s.port, s.hub_port, s.proxy_api_port, s.redis_port, s.site_port):
        with pytest.raises(ConnectionRefusedError):  # nobody listens there any more
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert h.stop() == []

"""The workshop hub (agentlab/hub/): the real JupyterHub, real accounts, loopback only.

The settings are read as data; then one hub is started for the module (no model: ``--no-model``), with two
participants, and the tests check what a participant's kernel can and cannot reach, the memory limit, the
login, and that stopping leaves nothing running. They need root (the hub runs every participant as their own
account), JupyterHub (requirements-hub.txt) and the proxy (npm ci in hub/): skipped without them on a
user's machine, failed in CI (AGENTLAB_CI=1).
"""
import contextlib
import html
import importlib.util
import json
import os
import re
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from conftest import ROOT, children, free_port, ignore_ctrl_c, ignored_signals, skip_or_fail, stop_group

from agentlab.hub.auth import PasswordBook
from agentlab.hub.config import HubSettings, build
from agentlab.hub.users import os_name
from agentlab.i18n import t

# one hub per machine (its accounts are the machine's): every test of the module on one worker of pytest-xdist
pytestmark = pytest.mark.xdist_group("hub")
PROXY = ROOT / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
LIMIT = 1 << 30
DISK = 256 << 20  # each participant's own disk in the module's hub (agentlab.hub.disks)
LOG_CAP = 2 << 20  # the cap of the module's hub's log and of each service's (agentlab.hub.records)


def settings(tmp: Path, **kw) -> HubSettings:
    import sys
    return HubSettings(root=ROOT, state=tmp, python=Path(sys.executable), proxy=PROXY, workshop_password="room-pw-1",
                       redis_password="redis-pw-1", admin_password="trainer-pw-1", model_secret="model-secret-1", **kw)


def _need_root():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        skip_or_fail("root drops to another account here: the test needs root")


NOBODY = 65534  # an account that is not root and owns nothing outside the test's folders


def _open_tree(prefix: str) -> Path:
    import tempfile
    d = Path(tempfile.mkdtemp(prefix=prefix))  # not under pytest's 0700 folder: the other account passes through
    d.chmod(0o755)
    return d


def test_a_participants_home_is_prepared_as_them_and_their_symlinks_lead_nowhere_of_roots():
    """~/notebooks, ~/.kernels or ~/.tmp replaced by a link to a folder of root's, a notebook by a dangling link to a
    file root could create: nothing outside is written or given to the participant, and their own folders are made
    again in place of the links (a link at ~/.tmp refused each start of their server, as it must: see
    tests/test_hub_disks.py)."""
    import shutil

    from agentlab.hub.users import prepare_home
    _need_root()
    base = _open_tree("agentlab-home-test-")
    try:
        source = base / "nb"
        (source / "zh").mkdir(parents=True)
        for rel in ("00_a.ipynb", "01_b.ipynb", "zh/00_a.ipynb"):
            (source / rel).write_text("{}")
        (base / "docs" / "zh").mkdir(parents=True)  # the guides the notebooks link to, beside them
        for rel in ("course.md", "zh/course.md"):
            (base / "docs" / rel).write_text("# guide")
        outside = base / "etc"  # root's, 0755: what /etc is
        outside.mkdir()
        for case in ("folder", "file", "kernels", "tmp"):
            home = base / f"home-{case}"
            home.mkdir()
            os.chown(home, NOBODY, NOBODY)
            if case == "folder":
                (home / "notebooks").symlink_to(outside)
            elif case in ("kernels", "tmp"):
                (home / f".{case}").symlink_to(outside)
                os.lchown(home / f".{case}", NOBODY, NOBODY)
            else:
                (home / "notebooks").mkdir()
                os.chown(home / "notebooks", NOBODY, NOBODY)
                (home / "notebooks" / "00_a.ipynb").symlink_to(outside / "ld.so.preload")
            copied = prepare_home(source, home, NOBODY, NOBODY)
            assert sorted(p.name for p in outside.iterdir()) == [], case  # nothing made there
            assert outside.stat().st_uid == 0 and outside.stat().st_mode & 0o777 == 0o755, case
            if case == "file":
                assert copied == ["notebooks/01_b.ipynb", "notebooks/zh/00_a.ipynb", "docs/course.md", "docs/zh/course.md"]
                assert (home / "notebooks" / "01_b.ipynb").stat().st_uid == NOBODY
            if case == "folder":  # the folder is not theirs to write in: nothing copied there, nothing raised
                assert [c for c in copied if c.startswith("notebooks/")] == []
            if case in ("kernels", "tmp"):  # the link set aside as it is, their own folder made in its place: their
                made = (home / f".{case}").lstat()  # next start works (before, it was refused: ~/.tmp not a folder)
                assert made.st_uid == NOBODY and oct(made.st_mode) == "0o40700", case
                [aside] = home.glob(f".{case}.moved-*")
                assert aside.is_symlink() and os.readlink(aside) == str(outside)
        home = base / "home-plain"
        home.mkdir()
        os.chown(home, NOBODY, NOBODY)
        assert len(prepare_home(source, home, NOBODY, NOBODY)) == 5
        # a notebook's link to its guide opens in the home as in the checkout (../../docs/zh/course.md from notebooks/zh)
        assert (home / "notebooks" / "zh" / ".." / ".." / "docs" / "zh" / "course.md").read_text() == "# guide"
        assert (home / ".kernels").stat().st_uid == NOBODY and (home / ".kernels").stat().st_mode & 0o777 == 0o700
        assert prepare_home(source, home, NOBODY, NOBODY) == []  # their copies stay theirs
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_an_account_made_again_gets_its_files_back_and_root_never_follows_a_link(tmp_path):
    """After ``--remove-accounts``, the next start made each account again with new ids; its home's files still had
    the removed account's, and its server could not start ("Exception occurred in preexec_fn"). Those files are
    re-owned, links as links: nothing a link leads to, nor root's files, changes hands."""
    import pwd

    from agentlab.hub.users import reown
    _need_root()
    gone = next(i for i in range(54321, 60000) if not _has_uid(i))  # an id no account has: a removed account's
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / "notebooks" / "zh").mkdir(parents=True)
    outside.write_text("root's")
    for rel in ("notebooks", "notebooks/zh", "notebooks/zh/00.ipynb", ".tmp"):
        path = home / rel
        if not path.exists():
            path.mkdir() if rel == ".tmp" else path.write_text("{}")
        os.chown(path, gone, gone)
    (home / "notebooks" / "link").symlink_to(outside)
    os.lchown(home / "notebooks" / "link", gone, gone)
    (home / "roots").write_text("x")  # root's own: left as it is
    os.chown(home, NOBODY, NOBODY)
    assert reown(home, NOBODY, NOBODY) == 5
    for rel in ("notebooks", "notebooks/zh", "notebooks/zh/00.ipynb", ".tmp", "notebooks/link"):
        assert os.lstat(home / rel).st_uid == NOBODY and os.lstat(home / rel).st_gid == NOBODY, rel
    assert outside.stat().st_uid == 0 and (home / "roots").stat().st_uid == 0
    assert reown(home, NOBODY, NOBODY) == 0  # the next start: nothing to do, no walk
    assert pwd.getpwuid(NOBODY)  # (the account the test gives them to exists)


def _has_uid(uid: int) -> bool:
    import pwd
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def test_no_participant_name_maps_to_a_reserved_account(tmp_path):
    from agentlab.hub.users import RESERVED_ACCOUNTS, SERVICES_USER, valid_name
    for name in ("services", "svc", "ana"):
        if name == "ana":
            assert os_name(name) == "agentlab-ana"
            continue
        try:
            account = os_name(name)
        except ValueError:
            continue
        assert account not in RESERVED_ACCOUNTS and account != SERVICES_USER, name
    assert not valid_name("services") and "agentlab-services" in RESERVED_ACCOUNTS
    with pytest.raises(ValueError):
        os_name("services")
    book = PasswordBook(tmp_path / "p.json", "room-pw-1")
    assert not book.login("services", "my-own-pw", "room-pw-1")


def test_the_workshop_password_never_claims_the_admins_name(tmp_path):
    book = PasswordBook(tmp_path / "p.json", "room-pw-1", admins=["trainer"])
    assert not book.login("trainer", "someones-pw", "room-pw-1")
    book.set_password("trainer", "trainer-pw-1")
    assert book.login("trainer", "trainer-pw-1") and not book.login("trainer", "room-pw-1", "room-pw-1")
    # a wrong password for the trainer's name says the trainer's password, set at the start: "taken" told the trainer
    # to type "the password you chose the first time", which they never chose in the form
    assert book.refusal("trainer", "room-pw-1", "room-pw-1") == "admin_password"
    assert book.refusal("ana", "x", "") != "admin_password"


def test_a_login_costs_one_scrypt_claimed_or_not_and_none_under_the_lock(tmp_path, monkeypatch):
    from agentlab.hub import auth
    book = PasswordBook(tmp_path / "p.json", "room-pw-1")
    assert book.login("ana", "anas-own-pw", "room-pw-1")
    real, calls = auth._scrypt, []

    def counted(password, salt):
        assert not book._lock.locked()  # a slow hash under the lock would serialise the room's logins
        calls.append(1)
        return real(password, salt)
    monkeypatch.setattr(auth, "_scrypt", counted)
    for name in ("ana", "bo"):  # claimed, unclaimed: a short password, a wrong one, no workshop password
        for password, room in (("x", "room-pw-1"), ("wrong-pw-1", "nope"), ("wrong-pw-2", "")):
            calls.clear()
            assert not book.login(name, password, room)
            assert len(calls) == 1, (name, password)
    assert book.login("bo", "bos-own-pw", "room-pw-1")


def test_two_first_starts_at_once_keep_both_site_keys(tmp_path, monkeypatch):
    import subprocess
    import threading

    from agentlab.hub import spawner
    both = threading.Barrier(2)
    count = iter(range(100))

    def run(cmd, **kw):
        time.sleep(0.05)  # the site's command takes a while: the other start reads the book meanwhile
        return subprocess.CompletedProcess(cmd, 0, stdout=f"sk-site-{next(count)}\n", stderr="")
    monkeypatch.setattr(spawner.subprocess, "run", run)

    def start(name):
        both.wait(5)
        return spawner._site_key(tmp_path, tmp_path, "python", "/", name)
    with ThreadPoolExecutor(2) as pool:
        keys = dict(zip(("ana", "bo"), pool.map(start, ("ana", "bo")), strict=True))
    book = json.loads((tmp_path / "site-keys.json").read_text())
    assert book == keys and len(set(keys.values())) == 2


def test_one_command_removes_the_accounts_workshops_left_and_keeps_those_still_running(monkeypatch, capsys):
    """Accounts outlive a hub on purpose (a participant's files are theirs at the next start); the docs list them and
    ``run.py hub --remove-accounts`` deletes the idle ones, saying which it kept because they still run something."""
    _need_root()
    import pwd

    from agentlab.hub import launch, users
    idle, busy = users.os_name("zzleft"), users.os_name("zzbusy")
    for name in (idle, busy):
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=False,
                       capture_output=True)
    monkeypatch.setattr(users, "workshop_accounts", lambda: [idle, busy])
    sleeper = subprocess.Popen(["sleep", "120"], user=busy)
    try:
        assert launch.hub_command(["--remove-accounts"]) == 1
        said = capsys.readouterr().out
        assert t("hub.accounts.removed", "en", n=1, names=idle) in said
        assert t("hub.accounts.running", "en", names=busy) in said
        with pytest.raises(KeyError):
            pwd.getpwnam(idle)
        sleeper.kill()
        sleeper.wait()
        assert launch.hub_command(["--remove-accounts", "--lang", "zh"]) == 0
        assert t("hub.accounts.removed", "zh", n=1, names=busy) in capsys.readouterr().out
        with pytest.raises(KeyError):
            pwd.getpwnam(busy)
    finally:
        sleeper.kill()
        for name in (idle, busy):
            subprocess.run(["userdel", name], check=False, capture_output=True)


def test_the_rooms_redis_has_no_port_and_each_participant_has_their_own():
    """The room's Redis is the site's alone (a Unix socket only the services' account opens); a participant's store is
    a Redis of their own, bounded, in their own home. Before, every participant had a user on the room's Redis, and
    one ``EVAL "while true do end" 0`` froze it for the room."""
    from agentlab.hub.services import OWN_REDIS_MAXMEMORY, own_redis_command, redis_conf
    conf = redis_conf("pw", Path("/srv/state/redis")).splitlines()
    assert "port 0" in conf and 'unixsocket "/srv/state/redis/redis.sock"' in conf and "unixsocketperm 700" in conf
    assert "maxmemory 256mb" in conf and "maxmemory-policy noeviction" in conf and "requirepass pw" in conf
    own = own_redis_command(Path("/h/ana/.redis"))
    pairs = dict(zip(own[1::2], own[2::2], strict=False))
    assert pairs["--port"] == "0" and pairs["--unixsocket"] == "/h/ana/.redis/redis.sock"
    assert pairs["--unixsocketperm"] == "700" and pairs["--maxmemory"] == OWN_REDIS_MAXMEMORY
    assert pairs["--maxmemory-policy"] == "noeviction" and pairs["--appendfsync"] == "always"


def test_root_never_follows_a_link_the_services_account_plants_in_its_folders(monkeypatch):
    """state/model and state/redis are the services' account's: a link it puts where root writes is removed."""
    import shutil

    from agentlab.hub import launch
    from agentlab.models import local
    base = _open_tree("agentlab-svc-test-")
    try:
        victim = base / "victim"
        victim.write_text("root's own\n")
        victim.chmod(0o600)
        src = base / "weights.gguf"
        src.write_bytes(b"GGUF" * 10)
        monkeypatch.setattr(local, "what_is_missing", lambda size: None)
        monkeypatch.setattr(local, "weights_path", lambda size: src)
        monkeypatch.setattr(launch.os, "link", lambda a, b: (_ for _ in ()).throw(OSError("another disk")))
        state = base / "state"
        (state / "model").mkdir(parents=True)
        (state / "model" / "weights.partial").symlink_to(victim)
        dst = launch._find_gguf(state)
        assert dst is not None and dst.read_bytes() == src.read_bytes() and not dst.is_symlink()
        assert victim.read_text() == "root's own\n" and victim.stat().st_mode & 0o777 == 0o600
        conf = state / "redis.conf"
        conf.symlink_to(victim)
        launch.write_new(conf, b"port 1\n", 0o600, None)
        assert victim.read_text() == "root's own\n" and not conf.is_symlink() and conf.read_bytes() == b"port 1\n"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_settings_are_data_and_hold_no_secret_a_participant_gets(tmp_path):
    s = settings(tmp_path, gguf=tmp_path / "m.gguf", slots=6, site_port=7001, model_port=7002)
    c = build(s, extra_env={"AGENTLAB_PROGRESS_URL": "http://127.0.0.1:7004/"})
    assert c["Authenticator"]["allow_all"] and c["Authenticator"]["request_otp"]  # never open: a password always
    assert c["JupyterHub"]["bind_url"].startswith("http://127.0.0.1:")
    assert c["JupyterHub"]["spawner_class"] == "agentlab.hub.spawner.WorkshopSpawner"
    names = {x["name"] for x in c["JupyterHub"]["services"]}
    assert names == {"redis", "site", "model", "idle-culler", "trainer"}
    model = next(x for x in c["JupyterHub"]["services"] if x["name"] == "model")
    assert model["command"][model["command"].index("--parallel") + 1] == "6"
    # the fair-share gate on the room's port; llama.cpp behind it on a socket in the services' own folder
    # each service's output into a log of its own (sh execs the service itself): what it says when it stops
    from agentlab.hub.services import STARTED
    assert all(x["command"][:4] == ["/bin/sh", "-c", f'echo "{STARTED} $(date +%s.%N)" >>"$0"; exec "$@" >>"$0" 2>&1',
                                    str(tmp_path / "logs" / f"{x['name']}.log")] for x in c["JupyterHub"]["services"])
    assert model["command"][5:7] == ["-m", "agentlab.hub.model_gate"]
    assert model["command"][model["command"].index("--port") + 1] == "7002"
    assert model["command"][model["command"].index("--socket") + 1] == str(tmp_path / "model" / "run" / "model.sock")
    assert model["environment"]["AGENTLAB_MODEL_SECRET"] == "model-secret-1"
    assert c["WorkshopSpawner"]["model_secret"] == "model-secret-1" and c["WorkshopSpawner"]["own_redis"] is True
    site = next(x for x in c["JupyterHub"]["services"] if x["name"] == "site")
    assert site["environment"]["AGENTLAB_STORE"].startswith(f"unix://default:redis-pw-1@{tmp_path / 'redis' / 'redis.sock'}?")
    env = c["Spawner"]["environment"]
    assert env["AGENTLAB_BASE_URL"] == "http://127.0.0.1:7002/v1" and env["AGENTLAB_SITE_URL"] == "http://127.0.0.1:7001"
    assert env["AGENTLAB_PROGRESS_URL"] == "http://127.0.0.1:7004/"
    assert env["AGENTLAB_SOURCE"] == "openai"  # notebook 09's live part asks the room's model
    assert env["JUPYTER_CONFIG_PATH"] == str(ROOT / "etc" / "jupyter")  # each notebook listed once, saved as committed
    said = json.dumps([c["Spawner"], [x.get("command") for x in c["JupyterHub"]["services"]]])
    for secret in ("room-pw-1", "redis-pw-1", "model-secret-1"):
        assert secret not in said  # not in a server's env, not on a command line
    assert "AGENTLAB_API_KEY" not in env  # each participant's own, added at spawn
    assert all(x.get("user") == "agentlabsvc" for x in c["JupyterHub"]["services"])
    trainer = next(x for x in c["JupyterHub"]["services"] if x["name"] == "trainer")  # notes passed, not inherited
    assert trainer["environment"]["AGENTLAB_TRAINER_NOTES"] == str(tmp_path / "trainer-notes")
    assert c["WorkshopAuthenticator"]["admin_names"] == ["trainer"]
    # the admin is whoever --admin names this time, exactly: JupyterHub makes an admin role's users the members, and
    # admin_users only ever added (a trainer of an earlier start kept every right after a restart with another)
    assert {"name": "admin", "users": []} in c["JupyterHub"]["load_roles"]  # nobody has every right: the trainer's are below
    from agentlab.hub.config import TRAINER_ROLE
    [role] = [r for r in c["JupyterHub"]["load_roles"] if r["name"] == TRAINER_ROLE]
    # the admin page's one click with no question ended every participant's server: the trainer cannot shut the hub
    assert role["users"] == ["trainer"] and "shutdown" not in role["scopes"] and "admin-ui" in role["scopes"]
    assert "admin_users" not in c["Authenticator"]
    no_model = build(settings(tmp_path))
    assert "model" not in {x["name"] for x in no_model["JupyterHub"]["services"]}
    assert "AGENTLAB_BASE_URL" not in no_model["Spawner"]["environment"]
    assert "AGENTLAB_SOURCE" not in no_model["Spawner"]["environment"]  # replays: there is no model to ask


def test_past_its_seats_the_workshop_password_claims_no_new_name(tmp_path):
    book = PasswordBook(tmp_path / "p.json", "room-pw-1", admins=["trainer"], seats=2)
    book.set_password("trainer", "trainer-pw-1")  # the trainer's name takes no seat
    assert book.login("ana", "anas-own-pw", "room-pw-1") and book.login("bo", "bos-own-pw", "room-pw-1")
    assert book.refusal("cy", "cys-own-pw", "room-pw-1") == "full"
    assert book.login("ana", "anas-own-pw") and book.login("trainer", "trainer-pw-1")  # the names taken still open
    assert book.refusal("bo", "not-bos-pw", "room-pw-1") == "taken"  # a taken name is not told the room is full
    assert PasswordBook(tmp_path / "q.json", "room-pw-1").login("cy", "cys-own-pw", "room-pw-1")  # 0: no cap
    book.retire("bo")  # the trainer deleted it: its seat is free, and the name never opens nor is claimed again
    assert book.refusal("bo", "bos-own-pw") == "retired" and book.refusal("bo", "new-pw-1", "room-pw-1") == "retired"
    assert book.login("cy", "cys-own-pw", "room-pw-1") and book.refusal("dee", "dees-own-pw", "room-pw-1") == "full"
    book.retire("trainer")  # the trainer's own name is never retired (its password is set at each start)
    assert book.login("trainer", "trainer-pw-1")


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


def test_the_trainers_terminal_hears_the_room_is_full_once_then_every_tenth_time(tmp_path):
    """A full room refused latecomers on the login form only: the trainer, who alone can make room, heard nothing."""
    from agentlab.hub.launch import LogWatch
    log = tmp_path / "hub" / "jupyterhub.log"
    log.parent.mkdir()
    log.write_text("")
    watch = {lang: LogWatch(log, lang) for lang in ("en", "zh")}
    refused = "[W 2026-05-09 10:00:0{}.000 JupyterHub web:1] 403 POST /hub/login (::1): login refused: {}\n"
    with log.open("a") as f:
        f.write(refused.format(1, "taken") + "".join(refused.format(2, "full") for _ in range(12)))
    for lang, w in watch.items():
        assert w.poll() == [t("hub.room_full", lang, count=n) for n in (1, 10)] and w.full == 12


def test_the_trainers_terminal_hears_of_a_service_that_keeps_stopping_and_a_server_that_cannot_start(tmp_path):
    """JupyterHub restarts a service that exits and says so in its log only: the terminal says it, with the last
    line the service wrote (not the traceback's frames), the first time, the third, then every tenth."""
    from agentlab.hub.launch import LogWatch
    (tmp_path / "hub").mkdir()
    (tmp_path / "logs").mkdir()
    log = tmp_path / "hub" / "jupyterhub.log"
    log.write_text("[I 2026-05-09 10:00:00.000 JupyterHub app:1] earlier run\n")
    watch = {lang: LogWatch(log, lang) for lang in ("en", "zh")}
    # the site writes its own log (agentlab.hub.services.logged); another process's line, with a terminal's colour
    # codes, comes last in the hub's: it was the line said ("the service redis stopped: ...[32minfo[39m: 204 DELETE")
    (tmp_path / "logs" / "site.log").write_text(
        "Traceback (most recent call last):\n  File \"/x/commands.py\", line 409, in site\n    import uvicorn\n"
        "\x1b[31mModuleNotFoundError: No module named 'uvicorn'\x1b[0m\n")
    crash = ("14:22:05.339 [ConfigProxy] \x1b[32minfo\x1b[39m: 204 DELETE /api/routes/user/bea\n"
             "[I 2026-05-09 10:00:01.000 SingleUserLabApp serverapp:1] a server's own line between\n"
             "[E 2026-05-09 10:00:02.000 JupyterHub service:505] Service site exited with status 1\n")
    with log.open("a") as f:
        f.write(crash * 2 + "[E 2026-05-09 10:00:03.000 JupyterHub spawner:9] agentlab-spawn-failed ana: "
                "ModuleNotFoundError: No module named 'uvicorn'\n" + crash + "[W 2026-05-09 10:00:04.000 Jup")
    said = {lang: w.poll() for lang, w in watch.items()}
    assert len(said["en"]) == 3 and len(said["zh"]) == 3, said  # the 1st and 3rd exit, and ana's start
    for lang in ("en", "zh"):
        first, server, third = said[lang]
        for line, count in ((first, 1), (third, 3)):
            assert line == t("hub.service_died", lang, service="site", how=t("hub.exit_code", lang, status=1),
                             count=count, line="ModuleNotFoundError: No module named 'uvicorn'")
        assert server == t("hub.server_failed", lang, name="ana", line="ModuleNotFoundError: No module named 'uvicorn'")
    with log.open("a") as f:  # the line cut short is read whole once it ends
        f.write("ing nothing new\n")
    assert watch["en"].poll() == [] and watch["en"].exits == {"site": 3}
    # a service with no log of its own (one a test adds): its stop said with no other process's line
    with log.open("a") as f:
        f.write("14:22:06.000 [ConfigProxy] \x1b[32minfo\x1b[39m: 200 GET /api/routes\n"
                "[E 2026-05-09 10:00:05.000 JupyterHub service:505] Service load exited with status 0\n")
    assert watch["en"].poll() == [t("hub.service_died", "en", service="load", how=t("hub.exit_code", "en", status=0),
                                    count=1, line=t("hub.service_no_line", "en", log=tmp_path / "logs" / "load.log"))]
    # killed, and started again at once: its last line is the run's that stopped, not the next run's (each start is
    # marked with its time), and a signal is said as one ("exit -9" read as an exit code)
    from datetime import datetime

    from agentlab.hub.services import STARTED
    at = lambda stamp: datetime.fromisoformat(stamp).timestamp()  # noqa: E731
    (tmp_path / "logs" / "redis.log").write_text(
        f"{STARTED} {at('2026-05-09 10:00:00'):.3f}\n1:M * Ready to accept connections\n1:M * Background saving\n"
        f"{STARTED} {at('2026-05-09 10:00:07.500'):.3f}\n2:M * Ready to accept connections (the next run)\n")
    with log.open("a") as f:
        f.write("[E 2026-05-09 10:00:07.000 JupyterHub service:505] Service redis exited with status -9\n")
    assert watch["en"].poll() == [t("hub.service_died", "en", service="redis", count=1,
                                    how=t("hub.exit_signal", "en", signal="SIGKILL"), line="1:M * Background saving")]


def test_a_participant_whose_server_cannot_start_reads_a_sentence_not_a_command_line(caplog):
    """The site's key command failed (its extra was missing): the participant's page showed that Python command
    line. Now the page shows the catalogue's sentence in both languages; the log keeps the command's last error."""
    import asyncio
    import logging
    import subprocess
    from types import SimpleNamespace

    from agentlab.hub.spawner import WorkshopSpawner
    spawner = WorkshopSpawner(user=SimpleNamespace(name="ana", url="/user/ana/", escaped_name="ana", settings={}),
                              hub=None)
    command = ["/root/.venv/bin/python", "-m", "agentlab", "site", "--data", "/srv/site", "keys", "create"]

    def fails():
        raise subprocess.CalledProcessError(1, command, output="", stderr="Traceback (most recent call last):\n"
                                            "  File \"x\", line 1\nModuleNotFoundError: No module named 'uvicorn'\n")
    spawner._prepare = fails
    spawner.log = logging.getLogger("agentlab-test-spawner")
    with pytest.raises(Exception) as failed, caplog.at_level(logging.ERROR, "agentlab-test-spawner"):
        asyncio.run(spawner.start())
    logged = [r.getMessage() for r in caplog.records]
    shown = failed.value.jupyterhub_message
    assert shown.splitlines() == [t("hub.spawn_failed", "en"), t("hub.spawn_failed", "zh")]
    assert "python" not in shown and "/srv" not in shown
    assert logged == ["agentlab-spawn-failed ana: ModuleNotFoundError: No module named 'uvicorn'"]


RUNNING: list = []  # the module's hub, while it runs: one hub per machine, so a test starting another stops it first


SEATS = 4  # names the module's hub lets the workshop password claim: the tests here claim three (zoe, ed, cy)


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
    # not under pytest's 0700 folder: the accounts pass through; nor under /tmp, which is each participant's own
    state = Path(tempfile.mkdtemp(prefix="agentlab-hub-test-", dir="/var/lib"))
    h = Hub(settings(state, data_limit=LIMIT, disk_limit=DISK, log_cap=LOG_CAP, port=_free(), seats=SEATS),
            extra_services=[{"name": "tester", "api_token": token}], extra_roles=roles)
    RUNNING.append(h)
    import signal
    # as a script's background job (`python run.py hub ... &`) starts it: with Ctrl-C and SIGQUIT ignored, which a
    # process hands on to the ones it starts (see test_a_hub_started_in_the_background_hands_...)
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGQUIT)}
    ignore_ctrl_c()
    try:
        h.start()
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)
    try:
        def up(name):
            h.api(token, "POST", f"/users/{name}")
            try:
                h.api(token, "POST", f"/users/{name}/server")
            except urllib.error.HTTPError as exc:  # the spawn failed at once: say why, from the hub's own log
                tail = "\n".join(Path(h.log).read_text(errors="replace").splitlines()[-40:]) if Path(h.log).exists() else ""
                pytest.fail(f"{name}'s server did not start ({exc}); the hub's log ends:\n{tail}")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if h.api(token, "GET", f"/users/{name}")["servers"].get("", {}).get("ready"):
                    return h.api(token, "POST", f"/users/{name}/tokens", {"note": "test"})["token"]
                time.sleep(0.5)
            pytest.fail(f"{name}'s server did not start (log: {h.log})")
        with ThreadPoolExecutor(2) as pool:
            tokens = dict(zip(("ana", "bo"), pool.map(up, ("ana", "bo")), strict=True))
        h.test_admin_token = token  # type: ignore[attr-defined]  # _run starts a server the hub says is gone
        yield h, token, tokens
    finally:
        h.stop()
        shutil.rmtree(state, ignore_errors=True)


def _free() -> int:
    return free_port()


def _status(url, token) -> int:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _started(h, admin_token, name):
    """``name`` made a participant, their server started and ready; a token of theirs."""
    h.api(admin_token, "POST", f"/users/{name}")
    h.api(admin_token, "POST", f"/users/{name}/server")
    deadline = time.monotonic() + 120
    while not h.api(admin_token, "GET", f"/users/{name}")["servers"].get("", {}).get("ready"):
        assert time.monotonic() < deadline, f"{name}'s server did not start (log: {h.log})"
        time.sleep(0.5)
    return h.api(admin_token, "POST", f"/users/{name}/tokens", {"note": "test"})["token"]


def _run(h, token, name, cells):
    """``cells`` in a kernel of ``name``'s server. Once in a CI run the hub answered 404 for a server a test before had
    just used: when the hub says the server is not ready, it is started again (and the hub's log printed, so the next
    time says why) and the cells sent once more; a server the hub still calls ready fails at once."""
    from tornado.httpclient import HTTPClientError

    from agentlab.hub.kernel import run_cells
    try:
        return run_cells(f"{h.url}/user/{name}/", token, cells, timeout=120)
    except HTTPClientError as exc:
        admin = getattr(h, "test_admin_token", None)
        if exc.code != 404 or admin is None:
            raise
        server = h.api(admin, "GET", f"/users/{name}")["servers"].get("", {})
        tail = "\n".join(Path(h.log).read_text(errors="replace").splitlines()[-40:]) if Path(h.log).exists() else ""
        print(f"{name}'s server answered 404 (the hub says: {server or 'not running'}); the hub's log ends:\n{tail}")
        if server.get("ready"):
            raise
        if not server:
            h.api(admin, "POST", f"/users/{name}/server")
        deadline = time.monotonic() + 120
        while not h.api(admin, "GET", f"/users/{name}")["servers"].get("", {}).get("ready"):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        return run_cells(f"{h.url}/user/{name}/", token, cells, timeout=120)


def test_a_participant_reaches_only_their_own_server(hub):
    h, _, tokens = hub
    assert _status(f"{h.url}/user/ana/api/status", tokens["ana"]) == 200
    assert _status(f"{h.url}/user/bo/api/status", tokens["ana"]) == 403  # bo's server refuses ana's token
    assert _status(f"{h.url}/user/bo/api/contents/notebooks", tokens["ana"]) == 403
    assert _status(f"{h.url}/hub/api/users", tokens["ana"]) == 403  # and the list of participants is not hers


def _listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (read as root, from its descriptors and /proc/net/tcp)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            inodes.add(os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1])
    rows = [r.split() for t in ("/proc/net/tcp", "/proc/net/tcp6") for r in Path(t).read_text().splitlines()[1:]]
    return {int(r[1].rsplit(":", 1)[1], 16) for r in rows if r[3] == "0A" and r[9] in inodes}


def test_another_participants_connections_to_a_server_are_closed_as_they_are_accepted(hub):
    """Its port is on /proc/net/tcp for every account to see: ana held thousands of idle connections to bo's server
    until it ran out of files, his login failed with 500 and it wrote a traceback a millisecond to his disk."""
    h, admin_token, tokens = hub
    bo_pid = h.api(admin_token, "GET", "/users/bo")["servers"][""]["state"]["pid"]
    ports = sorted(_listening_ports(bo_pid))
    assert ports
    code = ("import socket\nsaid = []\n"
            f"for port in {ports!r}:\n"
            "    with socket.create_connection(('127.0.0.1', port), timeout=5) as c:\n"
            "        c.sendall(b'GET /user/bo/api/status HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
            "        try:\n            said.append(len(c.recv(4096)))\n"
            "        except OSError:\n            said.append(0)\n"
            "print(said)")
    [cell] = _run(h, tokens["ana"], "ana", [code])
    assert cell.ok and cell.stdout.strip() == str([0] * len(ports)), cell
    assert _status(f"{h.url}/user/bo/api/status", tokens["bo"]) == 200  # through the proxy, as ever


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


def test_one_participant_cannot_freeze_or_fill_redis_for_the_others(hub):
    """ana fills her Redis to its limit, then runs a script that never ends; bo's store and the room's site answer
    as before. ana can open neither bo's Redis nor the room's. Before, all shared one Redis: her script made every
    other participant's calls and the site answer BUSY until root killed it, and her writes filled it for all."""
    h, _, tokens = hub
    st = h.settings.state
    code = ("import os, socket, subprocess, sys, redis\nfrom agentlab.calls import default_store\n"
            "s = default_store(); print(s.prefix, s.claim('refund-1', 'f').status)\n"
            "r = redis.Redis.from_url(os.environ['AGENTLAB_STORE'])\n"
            f"for path in ({str(st / 'homes' / 'bo' / '.redis' / 'redis.sock')!r}, {str(st / 'redis' / 'redis.sock')!r}):\n"
            "    try:\n        socket.socket(socket.AF_UNIX).connect(path); print('reached')\n"
            "    except OSError as e:\n        print(type(e).__name__)\n"
            "try:\n    for i in range(10_000):\n        r.set(f'agentlab:u:ana:fill:{i}', b'x' * (1 << 20))\n"
            "    print('never full')\n"
            "except redis.exceptions.ResponseError as e:\n    print('full' if 'maxmemory' in str(e) else str(e))\n"
            "loop = subprocess.Popen([sys.executable, '-c', 'import os, redis; redis.Redis.from_url(os.environ[\"AGENTLAB_STORE\"],"
            " socket_timeout=None).eval(\"while true do end\", 0)'], start_new_session=True)\n"
            "import time; time.sleep(2.5)\n"
            "try:\n    r.ping(); print('answers')\n"
            "except redis.exceptions.BusyLoadingError:\n    print('busy')\n"
            "except redis.exceptions.ResponseError as e:\n    print('busy' if 'BUSY' in str(e) else str(e))\n")
    [ana] = _run(h, tokens["ana"], "ana", [code])
    assert ana.ok, ana.error
    assert ana.stdout.split("\n")[:5] == ["agentlab:u:ana: new", "PermissionError", "PermissionError", "full", "busy"], \
        ana.stdout
    bo_cells = ["from agentlab.calls import default_store\nprint(default_store().claim('refund-1', 'f').status)",
                "from agentlab.site.client import site_registry\nprint(len(site_registry()) > 5)"]
    bo = _run(h, tokens["bo"], "bo", bo_cells)
    assert [c.stdout.strip() for c in bo] == ["new", "True"], bo  # bo's store is free, his claim his own
    # SCRIPT KILL is asked, then done when the script next looks up: until then a PING still hears BUSY
    mend = _run(h, tokens["ana"], "ana", ["import os, time, redis\nr = redis.Redis.from_url(os.environ['AGENTLAB_STORE'])\n"
                                          "r.script_kill()\nfor _ in range(50):\n    try:\n        print(r.ping()); break\n"
                                          "    except redis.exceptions.ResponseError:\n        time.sleep(0.1)",
                                          "r.flushdb(); print('ok')"])
    assert [c.stdout.strip() for c in mend] == ["True", "ok"], mend  # her own Redis is hers to mend


def test_a_kernel_past_the_memory_limit_fails_and_the_server_survives(hub):
    h, _, tokens = hub
    cells = [f"x = bytearray({LIMIT + (256 << 20)})", "print('never')"]
    [cell] = _run(h, tokens["bo"], "bo", cells)
    assert not cell.ok and cell.error.startswith("MemoryError")
    assert _status(f"{h.url}/user/bo/api/status", tokens["bo"]) == 200
    [after] = _run(h, tokens["bo"], "bo", ["print(sum(range(10)))"])
    assert after.ok and after.stdout.strip() == "45"


def test_a_participants_processes_together_stay_under_the_accounts_limit(hub):
    """The limit was per process only: four children of 1.5 GiB each held 6.4 GiB against a 2 GiB limit, and a
    room of such participants the whole machine. Now all of an account's processes share one memory cgroup
    (twice the per-process limit here); /dev/shm and /tmp in their processes are their own (a RAM disk counted in
    that memory, a folder of their disk): the machine's get nothing of theirs, and nothing outlives their server."""
    from agentlab.hub.spawner import cgroups_usable
    if not cgroups_usable():
        skip_or_fail("this machine lets no memory cgroup be made")
    h, admin_token, tokens = hub
    code = ("import subprocess, sys, time\n"
            f"hog = \"b = b'x' * {LIMIT * 3 // 4}; import time; time.sleep(60)\"\n"  # each under the per-process limit
            "kids = [subprocess.Popen([sys.executable, '-c', hog]) for _ in range(4)]\n"
            "time.sleep(12)\n"
            "print(sorted(k.poll() is None for k in kids), [k.returncode for k in kids])\n"
            "for k in kids:\n    k.kill()\n"
            "open('/dev/shm/left-by-bo', 'wb').write(b'x' * 4096)\nopen('/tmp/left-by-bo', 'wb').write(b'x')\n")
    [cell] = _run(h, tokens["bo"], "bo", [code])
    assert cell.ok, cell
    survivors = cell.stdout.split("]")[0].count("True")
    # 4 x 0.75 GiB asked, each under the 1 GiB per process; the account's 2 GiB holds two at most, with the kernel's own
    assert survivors <= 2 and cell.stdout.count("-9") >= 2, cell.stdout
    assert _status(f"{h.url}/user/ana/api/status", tokens["ana"]) == 200  # the others go on
    [after] = _run(h, tokens["bo"], "bo", ["print(sum(range(10)))"])
    assert after.ok and after.stdout.strip() == "45"
    assert not Path("/dev/shm/left-by-bo").exists() and not Path("/tmp/left-by-bo").exists()
    assert (h.settings.state / "homes" / "bo" / ".tmp" / "left-by-bo").exists()  # on their own disk
    h.api(admin_token, "DELETE", "/users/bo/server")
    deadline = time.monotonic() + 60
    h.api(admin_token, "POST", "/users/bo/server")  # back, for the tests after this one
    while not h.api(admin_token, "GET", "/users/bo")["servers"].get("", {}).get("ready"):
        assert time.monotonic() < deadline + 120, f"bo's server did not start again (log: {h.log})"
        time.sleep(0.5)


def test_a_participants_processes_share_one_cpu_group_weighing_as_one_service(hub):
    """nice alone held nothing: the kernel shares the CPU between sessions first (autogroup), so 250 spinning processes,
    each in a session of its own, made another participant's cell 75 times slower and the model's answers 20 times.
    Every process of an account, a new session's too, is in the account's CPU group, and every participant together
    under one group that weighs as one service (the model, the site)."""
    from agentlab.hub.spawner import CGROUP_V1_CPU, CGROUP_V2, PARTICIPANTS_CPU_WEIGHT, cgroups_usable
    if not cgroups_usable():
        skip_or_fail("this machine lets no cgroup be made")
    h, _, tokens = hub
    code = ("import subprocess\n"
            "print(open('/proc/self/cgroup').read())\n"
            "print(subprocess.run(['cat', '/proc/self/cgroup'], start_new_session=True, capture_output=True,"
            " text=True).stdout)\n")
    [cell] = _run(h, tokens["bo"], "bo", [code])
    assert cell.ok, cell
    v1 = (CGROUP_V1_CPU / "cpu.shares").exists()
    # v1: the line of the hierarchy holding the cpu controller ("1:cpu:/..." or "2:cpu,cpuacct:/..."); v2: "0::/..."
    cpu_lines = [line for line in cell.stdout.splitlines() if line.count(":") >= 2 and (
        "cpu" in line.split(":")[1].split(",") if v1 else line.startswith("0::"))]
    assert len(cpu_lines) == 2 and all(line.split(":", 2)[2].startswith("/agentlab/") and line.endswith("-bo")
                                       for line in cpu_lines), cell.stdout
    share = (CGROUP_V1_CPU / "agentlab" / "cpu.shares") if v1 else (CGROUP_V2 / "agentlab" / "cpu.weight")
    assert int(share.read_text()) == (PARTICIPANTS_CPU_WEIGHT * 1024 // 100 if v1 else PARTICIPANTS_CPU_WEIGHT)


def test_a_participant_who_fills_their_disk_stops_nobody_else(hub):
    """One participant's ``fallocate -l 70G`` (or a loop of writes) filled the disk every home, the site's database and
    the hub's records are on. Now their home is a disk of their own: past its size their writes fail, and only theirs;
    the others save as before, and the machine's disk took at most that size."""
    import shutil
    h, _, tokens = hub
    free = shutil.disk_usage(h.settings.state).free
    fill = ("import errno, os\n"
            "path = os.path.expanduser('~/big')\n"
            "try:\n"
            "    with open(path, 'wb') as f:\n"
            f"        for _ in range({4 * DISK >> 20}):\n"
            "            f.write(b'x' * (1 << 20))\n"
            "    print('all written')\n"
            "except OSError as e:\n"
            "    print(errno.errorcode.get(e.errno))\n"
            "for d in ('/tmp', '/var/tmp'):\n"
            "    try:\n"
            "        open(os.path.join(d, 'more'), 'wb').write(b'x' * (64 << 20))\n"
            "    except OSError as e:\n"
            "        print(d, errno.errorcode.get(e.errno))\n")
    [cell] = _run(h, tokens["bo"], "bo", [fill])
    assert cell.ok and cell.stdout.split() == ["ENOSPC", "/tmp", "ENOSPC", "/var/tmp", "ENOSPC"], cell
    assert free - shutil.disk_usage(h.settings.state).free < 2 * DISK  # the machine's disk: their size at most
    [other] = _run(h, tokens["ana"], "ana", ["import os\nopen(os.path.expanduser('~/saved.txt'), 'w').write('x' * 4096)\n"
                                             "open('/tmp/hers', 'w').write('y')\nprint('saved')"])
    assert other.ok and other.stdout.strip() == "saved", other
    [freed] = _run(h, tokens["bo"], "bo", ["import os\nos.remove(os.path.expanduser('~/big'))\nprint('freed')"])
    assert freed.ok and freed.stdout.strip() == "freed"  # their own disk again, for the tests after this one


def test_no_process_of_a_participant_is_a_way_out_of_their_own_folders(hub):
    """Their own Redis ran outside their server's mount namespace: through /proc/PID/root of it (their own process) a
    participant reached the machine's /var/tmp and /dev/shm and filled the disk past their own (found by an outside
    attack). Every process of theirs now sees their folders; none is a way out."""
    h, _, tokens = hub
    mark = f"escape-{secrets.token_hex(4)}"
    code = ("import os\n"
            "mine = [p for p in os.listdir('/proc') if p.isdigit() and os.stat('/proc/' + p).st_uid == os.getuid()]\n"
            "names = sorted({open(f'/proc/{p}/comm').read().strip() for p in mine})\n"
            "wrote = []\n"
            "for p in mine:\n"
            "    for d in ('var/tmp', 'dev/shm', 'run/lock'):\n"
            "        try:\n"
            f"            open(f'/proc/{{p}}/root/{{d}}/{mark}-{{p}}', 'w').write('x')\n"
            "            wrote.append(d)\n"
            "        except OSError:\n"
            "            pass\n"
            "print(names, len(mine), sorted(set(wrote)))\n")
    [cell] = _run(h, tokens["bo"], "bo", [code])
    assert cell.ok and "redis-server" in cell.stdout, cell  # their own Redis among the processes tried
    for folder in ("/var/tmp", "/dev/shm", "/run/lock"):
        assert not [p.name for p in Path(folder).glob(f"{mark}-*")], folder  # nothing reached the machine's folders


def test_what_a_participants_server_prints_goes_to_their_own_disk_not_the_hubs_log(hub):
    """Each server printed into the hub's own log, on the machine's disk: a participant who made theirs print without
    end (a flood of its own 404s, or writing through ptrace into their own server) filled it. Now a server's output is
    a file in its participant's home, on their own disk."""
    from agentlab.hub.disks import SERVER_LOG
    h, _, tokens = hub
    marker = f"no-such-file-{secrets.token_hex(4)}"
    assert _status(f"{h.url}/user/ana/api/contents/{marker}", tokens["ana"]) == 404  # the server logs a 404 line
    own = h.settings.state / "homes" / "ana" / SERVER_LOG
    deadline = time.monotonic() + 30
    while marker not in (own.read_text(errors="replace") if own.exists() else ""):
        assert time.monotonic() < deadline, own
        time.sleep(0.2)
    assert marker not in Path(h.log).read_text(errors="replace")


def _hub_post(h, path: str, token: str, body: bytes) -> int:
    """POST ``body`` to the hub's API as ``token``: the status, 0 when the connection was closed before a reply."""
    req = urllib.request.Request(f"{h.url}/hub/api{path}", data=body, method="POST",
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (ConnectionError, urllib.error.URLError):
        return 0


def test_nothing_a_participant_sends_the_hub_grows_its_records_without_bound(hub):
    """The hub's own records are on the machine's disk, and a participant made it write without end: an API token or
    a share code per request (each a row of its database), a token's note of up to 100 MB, a line in its log per
    refused request with its 12 kB address. Now a participant makes no token and no share code, no body past 1 MB
    is read, and the hub's log and each service's are kept under their cap (agentlab.hub.records)."""
    h, admin_token, tokens = hub
    assert _hub_post(h, "/users/ana/tokens", tokens["ana"], b'{"note": "mine"}') == 403
    assert _hub_post(h, "/share-codes/ana/", tokens["ana"], b"{}") == 403
    # a body past the bound, even from a token that may make tokens, is refused before it is read
    note = json.dumps({"note": "n" * (2 << 20)}).encode()
    assert _hub_post(h, "/users/ana/tokens", admin_token, note) not in (200, 201)
    kept = h.api(admin_token, "GET", "/users/ana/tokens")["api_tokens"]
    assert max(len(x.get("note") or "") for x in kept) < 1 << 20
    # a flood of refused requests, each with a long address: the hub's log stays under its cap
    log = Path(h.log)
    mark = secrets.token_hex(4)
    address = f"{h.url}/hub/{mark}-" + "a" * 12_000
    with ThreadPoolExecutor(4) as pool:
        said = set(pool.map(lambda i: _status(f"{address}{i}", tokens["ana"]), range(3 * LOG_CAP // 12_000)))
    assert said == {404}, said
    # a service's log, written as its process writes it (its stdout, appended to), past the cap too
    site_log = h.settings.state / "logs" / "site.log"
    fd = os.open(site_log, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (f"{mark} " + "s" * 990 + "\n").encode() * (3 * LOG_CAP // 1000))
        deadline = time.monotonic() + 30
        while log.stat().st_size > LOG_CAP or site_log.stat().st_size > LOG_CAP:
            assert time.monotonic() < deadline, (log.stat().st_size, site_log.stat().st_size)
            time.sleep(0.2)
        os.write(fd, f"{mark} after\n".encode())  # the service's next line: in its emptied log
    finally:
        os.close(fd)
    assert f"{mark} after" in site_log.read_text(errors="replace")
    assert mark in log.with_name(log.name + ".1").read_text(errors="replace")  # the flood's last part, kept aside
    assert _status(f"{h.url}/hub/health", "") == 200
    # as many open files as the machine lets it: one cell of idle connections used up a sudo shell's 1,024
    limits = Path(f"/proc/{h.proc.pid}/limits").read_text()
    soft, hard = re.search(r"Max open files\s+(\d+)\s+(\S+)", limits).groups()
    assert int(soft) == (min(int(hard), 1 << 20) if hard.isdigit() else 1 << 20), limits


def test_a_participant_has_a_process_limit_and_a_stop_ends_what_they_left(hub):
    """RLIMIT_NPROC is set while still root; a process started with setsid and nohup dies with the server's stop."""
    from agentlab.hub.spawner import NPROC
    from agentlab.hub.users import processes_of
    h, admin_token, _ = hub
    token = _started(h, admin_token, "dee")
    [cell] = _run(h, token, "dee", ["import resource, subprocess\nprint(resource.getrlimit(resource.RLIMIT_NPROC))\n"
                                     "subprocess.Popen(['setsid', 'nohup', 'sleep', '600'], start_new_session=True,"
                                     " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"])
    assert cell.ok and cell.stdout.strip() == str((NPROC, NPROC)), cell
    import pwd
    uid = pwd.getpwnam(os_name("dee")).pw_uid
    h.api(admin_token, "DELETE", "/users/dee/server")
    deadline = time.monotonic() + 60
    while (left := list(processes_of({uid}))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in left]


def test_a_home_left_by_a_removed_account_is_the_participants_again_at_their_next_start(hub):
    """``--remove-accounts`` keeps the homes; the next workshop made each account again with new ids, and its files
    were still the removed account's: its server could not start ("Exception occurred in preexec_fn"). Here kit's
    files are given such an id while their server is stopped; the next start gives them back and the server runs."""
    import pwd

    from agentlab.hub.users import processes_of
    h, admin_token, _ = hub
    _started(h, admin_token, "kit")
    entry = pwd.getpwnam(os_name("kit"))
    h.api(admin_token, "DELETE", "/users/kit/server")
    deadline = time.monotonic() + 60
    while list(processes_of({entry.pw_uid})) and time.monotonic() < deadline:
        time.sleep(0.2)
    gone = next(i for i in range(54321, 60000) if not _has_uid(i))
    home = Path(entry.pw_dir)
    for _, dirs, files, folder in os.fwalk(home, follow_symlinks=False):
        for name in (*dirs, *files):
            os.chown(name, gone, gone, dir_fd=folder, follow_symlinks=False)
    h.api(admin_token, "POST", "/users/kit/server")  # (the failure was a 500 here)
    deadline = time.monotonic() + 120
    while not h.api(admin_token, "GET", "/users/kit")["servers"].get("", {}).get("ready"):
        assert time.monotonic() < deadline, f"kit's server did not start again (log: {h.log})"
        time.sleep(0.5)
    token = h.api(admin_token, "POST", "/users/kit/tokens", {"note": "test"})["token"]
    [cell] = _run(h, token, "kit", ["import os\nprint(os.stat(os.path.expanduser('~/notebooks')).st_uid == os.getuid())"])
    assert cell.ok and cell.stdout.strip() == "True", cell


def test_a_participant_holding_the_rooms_descriptors_is_ended_and_the_others_go_on(hub):
    """One account held 24,000 idle connections to the room's proxy (nobody could log in) or every free port of the
    machine (no server could start), each of its processes within its own limit: the account's sum is counted."""
    import pwd

    from agentlab.hub.users import processes_of
    from agentlab.hub.warden import FDS_PER_ACCOUNT
    h, admin_token, tokens = hub
    assert h.warden is not None and h.warden.is_alive()
    token = _started(h, admin_token, "ned")
    each = 1400  # socket pairs a process: 2,800 descriptors, within its own limit of 4,096
    hold = (f"import subprocess, sys\ncode = 'import socket, time\\nh = [socket.socketpair() for _ in range({each})]\\n"
            "print(1, flush=True)\\ntime.sleep(600)'\nps = [subprocess.Popen([sys.executable, '-c', code], "
            f"stdout=subprocess.DEVNULL, start_new_session=True) for _ in range({FDS_PER_ACCOUNT // (2 * each) + 1})]\n"
            "print(len(ps))")
    [started] = _run(h, token, "ned", [hold])  # answered at once: the holders open their sockets after
    assert started.ok, started
    uid = pwd.getpwnam(os_name("ned")).pw_uid
    deadline = time.monotonic() + 30
    while list(processes_of({uid})) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not list(processes_of({uid})), "ned's processes still run"
    assert time.monotonic() < deadline
    [cell] = _run(h, tokens["ana"], "ana", ["print(6 * 7)"])  # another participant works on
    assert cell.ok and cell.stdout.strip() == "42", cell


def test_shared_memory_a_participant_leaves_behind_ends_with_their_server(hub):
    """A System V segment made and never removed outlived the server's stop (and the hub's), charged to no limit: a
    gigabyte a restart. Each server has an IPC namespace of its own, gone with its last process."""
    import pwd
    h, admin_token, _ = hub
    token = _started(h, admin_token, "ivy")
    leave = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmat.restype = ctypes.c_void_p\n"
             "sid = libc.shmget(0, 1 << 20, 0o1600)\naddr = libc.shmat(sid, None, 0)\nctypes.memset(addr, 1, 1 << 20)\n"
             "libc.shmdt(ctypes.c_void_p(addr))\nprint(sid >= 0, open('/proc/sysvipc/shm').read().count('\\n') - 1)")
    [cell] = _run(h, token, "ivy", [leave])
    assert cell.ok and cell.stdout.split() == ["True", "1"], cell  # made, and the only one the participant sees
    uid = str(pwd.getpwnam(os_name("ivy")).pw_uid)
    # the machine's own view holds none of it, now or after the stop
    rows = [r.split() for r in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    assert not [r for r in rows if r[7] == uid], rows
    h.api(admin_token, "DELETE", "/users/ivy/server")
    from agentlab.hub.users import processes_of
    deadline = time.monotonic() + 60
    while list(processes_of({int(uid)})) and time.monotonic() < deadline:
        time.sleep(0.2)
    rows = [r.split() for r in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    assert not [r for r in rows if r[7] == uid], rows


def test_each_participants_kernels_talk_over_sockets_in_a_folder_of_their_own(hub):
    """Two kernels starting at once in two servers once took the same TCP port: now they use no port at all."""
    from agentlab.hub.spawner import kernel_sockets
    h, _, tokens = hub
    code = ("import json, ipykernel.connect\ni = json.loads(ipykernel.connect.get_connection_info())\n"
            "print(i['transport'], i['ip'])")
    got = {n: _run(h, tokens[n], n, [code])[0].stdout.split() for n in ("ana", "bo")}
    homes = h.settings.state / "homes"
    for n in ("ana", "bo"):  # the folder's, each kernel with a name of its own after it
        assert got[n][0] == "ipc" and re.fullmatch(re.escape(str(kernel_sockets(homes / n))) + r"-[0-9a-f]{8}", got[n][1]), got
    folder = kernel_sockets(homes / "ana").parent
    assert oct(folder.stat().st_mode & 0o777) == "0o700" and folder.stat().st_uid != 0
    # nor a TCP port for its forked processes' output (ipykernel's pipe, where another account pushed messages)
    listen = ("import os\ndef link(f):\n    try:\n        return os.readlink('/proc/self/fd/' + f)[8:-1]\n"
              "    except OSError:\n        return ''\nmine = {link(f) for f in os.listdir('/proc/self/fd')}\n"
              "rows = [r.split() for t in ('/proc/net/tcp', '/proc/net/tcp6') for r in open(t).read().splitlines()[1:]]\n"
              "print(sum(r[3] == '0A' and r[9] in mine for r in rows))")
    [ports] = _run(h, tokens["ana"], "ana", [listen])
    assert ports.stdout.strip() == "0", ports
    # their temporary files too: in their home, not the machine's /tmp that every account lists
    [tmp] = _run(h, tokens["ana"], "ana", ["import tempfile; print(tempfile.gettempdir())"])
    assert tmp.stdout.strip() == str(homes / "ana" / ".tmp"), tmp
    assert oct((homes / "ana" / ".tmp").stat().st_mode & 0o777) == "0o700"


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # the redirect comes back as an HTTPError with its status
        return None


def _post_login(base, name, password, otp, timeout=60, *, accept_language="en-US,en", follow=True):
    """The login form as a browser posts it (its _xsrf cookie and field): the opener (the hub's cookies kept), the
    status, the URL reached, the page. ``follow=False``: the redirect of a login let in is not followed (302)."""
    import html
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()),
                                         *(() if follow else (_Stay(),)))
    opener.addheaders = [("Accept-Language", accept_language)]
    with opener.open(f"{base}/hub/login", timeout=30) as r:
        form = r.read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form).group(1)
    data = urllib.parse.urlencode({"username": name, "password": password, "otp": otp, "_xsrf": xsrf}).encode()
    try:
        with opener.open(f"{base}/hub/login", data=data, timeout=timeout) as r:
            return opener, r.status, r.geturl(), html.unescape(r.read().decode())
    except urllib.error.HTTPError as e:
        return opener, e.code, "", html.unescape(e.read().decode())


def _claim(h, name):
    """A new name claimed with the login form, its redirect not followed (no server started): the status (302: in)
    and the page."""
    _, status, _, page = _post_login(h.url, name, f"{name}-own-pw", "room-pw-1", follow=False)
    return status, page


def _login(h, name, password, otp):
    """The login form posted to the module's hub: the status, the URL reached, the page."""
    return _post_login(h.url, name, password, otp)[1:]


def test_a_chinese_browser_lands_in_chinese_jupyterlab_on_the_chinese_notebooks(hub):
    """With the zh-CN pack installed, a participant whose browser asks for Chinese landed in English menus on the
    English notebooks; an English browser still lands where it did."""
    h, _, _ = hub
    for name, accept, folder, locale in (("zoe", "zh-CN,zh;q=0.9,en;q=0.5", "notebooks/zh", "zh_CN"),
                                         ("ed", "en-GB,en;q=0.8", None, "default")):
        opener, status, url, _ = _post_login(h.url, name, f"{name}-own-pw", "room-pw-1", timeout=180,
                                             accept_language=accept)
        assert status == 200, url
        deadline = time.monotonic() + 180
        while f"/user/{name}/lab" not in url:  # the start is pending: its page waits, then goes to the server
            assert time.monotonic() < deadline, url
            time.sleep(1)
            with opener.open(f"{h.url}/user/{name}/", timeout=60) as r:
                url = r.geturl()
        # the path: a start still pending sends the browser round once more, with "?redirects=1" on the same page
        path = urllib.parse.urlsplit(url).path.rstrip("/")
        assert path.endswith(f"/lab/tree/{folder}") if folder else path.endswith("/lab"), url
        settings_url = f"{h.url}/user/{name}/lab/api/settings/@jupyterlab/translation-extension:plugin"
        with opener.open(settings_url, timeout=60) as r:
            said = json.loads(r.read())
        # (overrides.json changes the schema's default, what the page uses while the participant chose nothing)
        chosen = said.get("settings", {}).get("locale") or said["schema"]["properties"]["locale"]["default"]
        assert chosen == locale, (said.get("settings"), said["schema"]["properties"]["locale"])


def test_the_login_form_claims_a_name_once_and_says_what_was_wrong_in_both_languages(hub):
    """Each refusal used to be the same English 'Invalid username or password'. Now the form says, in English and
    in Chinese, the catalogue's sentence for what was wrong; and its labels say the rules before anyone types."""
    import html

    from agentlab.hub.auth import refusal_text
    h, token, _ = hub
    with urllib.request.urlopen(f"{h.url}/hub/login", timeout=30) as r:
        form = html.unescape(r.read().decode())
    for lang in ("en", "zh"):  # the rule for a name, the password's length, and the workshop password's field
        rule = t("hub.login.rule", lang)
        for key in ("intro", "name_label", "password_label"):
            assert t(f"hub.login.{key}", lang, rule=rule, n=6) in form, (key, lang)
        assert t("hub.otp_prompt", lang) in form and 'name="otp"' in form
    # the heading and the button, JupyterHub's own English, are said in both by the page's script
    assert json.dumps(f'{t("hub.login.sign_in", "en")} / {t("hub.login.sign_in", "zh")}') in form
    cases = [("张三", "cys-own-pw", "room-pw-1", "bad_name"), ("services", "cys-own-pw", "room-pw-1", "reserved"),
             ("cy", "cys-own-pw", "", "no_room_password"), ("cy", "cys-own-pw", "not-the-room", "room_password"),
             ("cy", "short", "room-pw-1", "short")]
    for name, password, otp, reason in cases:
        status, _, page = _login(h, name, password, otp)
        assert status == 403, (name, reason)
        for lang in ("en", "zh"):
            assert refusal_text(reason, name, lang) in page, (reason, lang)
        assert "Invalid username or password" not in page
    status, url, _ = _login(h, "cy", "cys-own-pw", "room-pw-1")
    assert status == 200 and "/hub/login" not in url
    status, _, page = _login(h, "cy", "someone-else", "room-pw-1")  # taken: the room's password does not open it
    assert status == 403 and all(refusal_text("taken", "cy", lang) in page for lang in ("en", "zh"))
    assert _login(h, "cy", "cys-own-pw", "")[0] == 200
    status, _, page = _login(h, "trainer", "attackers-pw", "room-pw-1")  # never claimed with the room's password
    assert status == 403 and all(refusal_text("admin_password", "trainer", lang) in page for lang in ("en", "zh"))
    assert _login(h, "trainer", "trainer-pw-1", "")[0] == 200  # its own password, set at launch
    # past the room's seats a new name is refused, in both languages, and a name taken still opens: one person who
    # knows the workshop password claimed names (each an account that can start a server) until no one else could
    book = h.settings.state / "hub" / "passwords.json"
    before = set(json.loads(book.read_text()))
    from agentlab.hub.launch import LogWatch
    watch, said = LogWatch(h.log), []
    try:
        for i in range(SEATS + 1):
            status, page = _claim(h, f"seat-{i}")
            if status != 302:
                break
        assert status == 403 and all(refusal_text("full", f"seat-{i}", lang) in page for lang in ("en", "zh")), status
        deadline = time.monotonic() + 30  # and the trainer's terminal says so, from the hub's own log
        while not any(line == t("hub.room_full", "en", count=1) for line in said) and time.monotonic() < deadline:
            time.sleep(0.5)
            said += watch.poll()
        assert t("hub.room_full", "en", count=1) in said, said
        assert len(set(json.loads(book.read_text())) - {"trainer"}) == SEATS
        assert _login(h, "cy", "cys-own-pw", "")[0] == 200
        # the trainer deletes a name no one uses (the admin page calls this API): its seat is free for a newcomer,
        # and the name itself opens no more
        h.api(token, "DELETE", "/users/seat-0")
        assert _claim(h, "latecomer")[0] == 302
        status, page = _claim(h, "seat-0")
        assert status == 403 and refusal_text("retired", "seat-0", "en") in page, status
    finally:  # the seats this took are given back: other tests claim names
        for name in set(json.loads(book.read_text())) - before:
            try:
                h.api(token, "DELETE", f"/users/{name}")
            except urllib.error.HTTPError:  # retired already
                pass
    # a form left open past its _xsrf's life: JupyterHub's English sentence, which the page's script replaces
    from agentlab.hub.config import JUPYTERHUB_EXPIRED
    data = urllib.parse.urlencode({"username": "cy", "password": "cys-own-pw", "_xsrf": "2|expired"}).encode()
    with pytest.raises(urllib.error.HTTPError) as expired:
        urllib.request.urlopen(f"{h.url}/hub/login", data=data, timeout=30)
    page = html.unescape(expired.value.read().decode())
    assert f'<p class="login_error">{JUPYTERHUB_EXPIRED}</p>' in page
    assert json.dumps("\n".join(t("hub.login.expired", lang) for lang in ("en", "zh"))) in page


def test_every_hub_page_says_its_menu_in_both_languages_and_offers_a_participant_no_token_page(hub):
    """A participant's menu offered "Token", whose buttons each answered with a raw 403, and "Services › trainer";
    every link was English on a Chinese run."""
    import html
    h, _, _ = hub
    opener, status, _, _ = _post_login(h.url, "nav-pat", "nav-pat-own-pw", "room-pw-1", follow=False)
    assert status == 302  # in
    with opener.open(f"{h.url}/hub/home", timeout=60) as r:
        page = html.unescape(r.read().decode())
    assert "/hub/token" not in page and "主页" in page and "Home / 主页" in page, page[-3000:]
    assert "Progress / 进度" in page and "/services/trainer/" in page and ">Services<" not in page


def test_a_server_that_cannot_start_shows_a_sentence_and_the_trainers_terminal_says_why(hub):
    """eve's start fails (here: a file stands where her home goes; the room once had the site's key command fail):
    her progress reads the catalogue's sentence in both languages and no command line or path, and the hub's log
    gives the trainer's terminal why."""
    from agentlab.hub.launch import LogWatch
    h, admin_token, _ = hub
    in_the_way = h.settings.state / "homes" / "eve"
    watch = LogWatch(h.log)
    in_the_way.write_text("")
    try:
        h.api(admin_token, "POST", "/users/eve")
        with pytest.raises(urllib.error.HTTPError) as refused:  # a start that fails at once: refused in the reply
            h.api(admin_token, "POST", "/users/eve/server")
        assert refused.value.code == 500
        req = urllib.request.Request(f"{h.url}/hub/api/users/eve/server/progress",
                                     headers={"Authorization": f"token {admin_token}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            events = [json.loads(x[5:]) for x in r.read().decode().splitlines() if x.startswith("data:")]
    finally:
        in_the_way.unlink()
    failed = events[-1]
    assert failed.get("failed"), events
    for lang in ("en", "zh"):
        assert t("hub.spawn_failed", lang) in failed["message"], failed
    assert "homes" not in failed["message"] and "Error" not in failed["message"]
    deadline = time.monotonic() + 10
    while not (said := watch.poll()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert said and said[0].startswith(t("hub.server_failed", "en", name="eve", line="")), said
    assert "FileExistsError" in said[0]


def test_the_trainer_runs_the_room_from_the_admin_page_but_cannot_shut_the_hub_down(hub):
    """The admin page's "Shutdown Hub" is one click with no question: it ended every participant's server, and the
    terminal then said the hub "did not start". The trainer lists, starts and stops servers; a shutdown is refused."""
    h, admin_token, _ = hub
    trainer = h.api(admin_token, "POST", f"/users/{h.settings.admin}/tokens", {"note": "test"})["token"]
    listed = urllib.request.Request(f"{h.url}/hub/api/users", headers={"Authorization": f"token {trainer}"})
    with urllib.request.urlopen(listed, timeout=30) as r:
        assert {"ana", "bo"} <= {u["name"] for u in json.loads(r.read())}
    assert _status(f"{h.url}/hub/admin", trainer) == 200
    down = urllib.request.Request(f"{h.url}/hub/api/shutdown", method="POST", data=b"{}",
                                  headers={"Authorization": f"token {trainer}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(down, timeout=30)
    assert refused.value.code == 403
    assert h.proc is not None and h.proc.poll() is None  # the room goes on
    assert _status(f"{h.url}/hub/api/users/ana", trainer) == 200


def test_jupyterhubs_own_pages_a_participant_meets_speak_both_languages(hub):
    """After an idle cull or a hub restart a participant met "Server not running ... Launch Server", and a wrong
    address or a classmate's server through the hub "404 : Jupyter has lots of moons": English on a Chinese workshop's
    every page but the login. Each says itself in both languages."""
    from agentlab.i18n import t
    h, admin_token, _ = hub
    h.api(admin_token, "POST", "/users/noa")
    token = h.api(admin_token, "POST", "/users/noa/tokens", {"note": "test"})["token"]

    def page(path):
        req = urllib.request.Request(f"{h.url}{path}", headers={"Authorization": f"token {token}",
                                                                 "Accept": "text/html"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
    for path, keys in (("/hub/user/noa/", ("not_running_title", "not_running", "launch")),
                       ("/hub/no-such-page", ("not_found",)), ("/hub/user/ana/", ("not_found",))):
        status, text = page(path)
        for key in keys:
            for lang in ("en", "zh"):
                assert t(f"hub.page.{key}", lang) in html.unescape(text), (path, status, key, lang, text[-1500:])
        assert "lots of moons" not in text and "do not have permission" not in text, (path, text[-800:])


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
    assert "ana" in text and "right" in text, room
    # bo, logged in and never at a check, has a row of their own (the view listed only those who had run one)
    rows = {r["user"]: r["cells"] for r in room["rows"]}
    assert rows.get("bo") == {} and h.settings.admin not in rows, rows
    assert _status(base + "room", tokens["ana"]) == 403  # the room is the trainer's
    req = urllib.request.Request(base + "progress", headers={"Authorization": f"token {tokens['ana']}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        own = json.loads(r.read())
    assert "ana" in json.dumps(own) and "right" in json.dumps(own)


def test_a_participants_notebooks_find_the_rooms_site_and_their_writes_stay_theirs(hub):
    """No set-up in the notebook: ``site_registry()`` is the room's site with the participant's own key, and the
    same refund sent by ana and then by bo runs twice, once for each: a claim made under one participant's key is
    never another's."""
    h, _, tokens = hub
    refund = ("from agentlab import run_guarded\nfrom agentlab.models import ScriptedModel, call, say\n"
              "from agentlab.site.client import site_registry\nreg = site_registry()\n"
              "args = {'order_id': 'A1001', 'amount': 199.0, 'reason': 'user_cancel'}\n"
              "run = run_guarded(ScriptedModel([call('create_refund', args), say('ok')]), reg, 'refund A1001',"
              " sleep=lambda s: None)\n"
              "e = run.tool_events[0]\nprint(len(reg), e.error_code, run.status)")
    [ana] = _run(h, tokens["ana"], "ana", [refund])
    [bo] = _run(h, tokens["bo"], "bo", [refund])
    assert ana.ok and bo.ok, (ana, bo)
    skills, code, status = ana.stdout.split()
    assert int(skills) > 5 and code == "None" and status == "done"
    assert bo.stdout.split()[1:] == ["None", "done"]  # bo's refund ran: ana's claim was not his
    # notebook 15's discovery on the room's site: tests/test_site_client.py runs it with the same variables


def test_a_hub_started_in_the_background_hands_its_services_a_working_ctrl_c(hub):
    """Started from a script's background job (``cmd &``; the fixture starts it so), the hub began with SIGINT and
    SIGQUIT ignored, and the services it starts before installing its own handlers inherited both: JupyterHub stops
    each with SIGINT and waits 10 s for it, one after another, and a hub told to stop still ran a minute later. Here
    each of the room's services answers SIGINT."""
    import pwd

    from agentlab.hub.users import SERVICES_USER
    h, _, _ = hub
    uid = pwd.getpwnam(SERVICES_USER).pw_uid
    services = {p: cmd for p, (owner, cmd) in children(h.proc.pid).items() if owner == uid}
    for part in ("redis-server", "agentlab site", "agentlab.hub.progress", "jupyterhub_idle_culler"):
        assert any(part in cmd for cmd in services.values()), (part, services)
    ignored = {cmd[:60]: ignored_signals(p) for p, cmd in services.items()}
    assert all(not found for found in ignored.values()), ignored


def test_undoing_ignored_signals_gives_a_child_the_defaults(tmp_path):
    import signal
    import sys
    code = ("import subprocess; from agentlab.hub.services import undo_ignored_signals; print(*undo_ignored_signals()); "
            "print(subprocess.run(['sleep', '5']).returncode)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=ignore_ctrl_c)
    deadline = time.monotonic() + 30
    while not (kids := list(children(child.pid))) and time.monotonic() < deadline:  # `sleep`, started after the undo
        time.sleep(0.05)
    assert kids and ignored_signals(kids[0]) == set()
    os.kill(kids[0], signal.SIGINT)  # Ctrl-C reaches it now: it ends at once, not after its 5 s
    out, _ = child.communicate(timeout=10)
    assert out.split() == ["SIGINT", "SIGQUIT", "-2"]


def test_stopping_the_hub_leaves_nothing_running(hub):
    from agentlab.hub.launch import workshop_uids
    from agentlab.hub.users import processes_of
    h, _, _ = hub
    s = h.settings
    assert list(processes_of(workshop_uids()))
    h.proc.terminate()  # as Ctrl-C or SIGTERM to the hub would
    t0 = time.monotonic()
    try:
        h.proc.wait(60)
    except subprocess.TimeoutExpired:  # what it was still doing, from its own log (the fixture removes the folder)
        import signal
        os.kill(h.proc.pid, signal.SIGUSR2)  # its threads' stacks into its log (hub/jupyterhub_config.py)
        time.sleep(1)
        rows = subprocess.run(["ps", "-eo", "pid,ppid,user,stat,wchan:24,etime,args"], capture_output=True,
                              text=True).stdout.splitlines()
        mine, tree = {h.proc.pid}, rows[:1]
        for _ in range(4):  # the hub, its children (services, servers, the proxy), theirs...
            mine |= {int(r.split()[0]) for r in rows[1:] if int(r.split()[1]) in mine}
        tree += [r[:200] for r in rows[1:] if int(r.split()[0]) in mine]
        tree = "\n".join(tree)
        tail = "\n".join(Path(h.log).read_text(errors="replace").splitlines()[-100:]) if Path(h.log).exists() else ""
        pytest.fail(f"the hub still ran 60 s after SIGTERM; its processes:\n{tree}\nits log ends:\n{tail}")
    took = time.monotonic() - t0
    print(f"the hub stopped {took:.1f} s after SIGTERM")
    assert took < 30, f"the hub took {took:.0f} s to stop"  # 4-8 s; with its services' Ctrl-C ignored, over 60
    deadline = time.monotonic() + 30  # a server told to stop may still be closing its kernels on a loaded machine
    while (left := list(processes_of(workshop_uids()))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in left]
    for port in (s.port, s.hub_port, s.proxy_api_port, s.site_port):
        with pytest.raises(ConnectionRefusedError):  # nobody listens there any more
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert h.stop() == []


# --- a fresh hub: python run.py hub in the copy, participants through the login form ------------------------------

FRESH_ROOM_PASSWORD, FRESH_TRAINER_PASSWORD = "room-pw-fresh-1", "trainer-pw-fresh-1"
FRESH_PARTICIPANTS = ("fay", "gil", "hal")


def _form_login(base: str, name: str, own: str) -> urllib.request.OpenerDirector:
    """A first login through the form, claiming ``name`` with the room's password; the opener keeps the cookies."""
    opener, _, url, page = _post_login(base, name, own, FRESH_ROOM_PASSWORD, timeout=120)
    assert url and "/hub/login" not in url, page[:2000]
    return opener


def _jar(opener) -> CookieJar:
    return next(h.cookiejar for h in opener.handlers if hasattr(h, "cookiejar"))


def _xsrf(opener, under: str) -> str:
    """The value of the ``_xsrf`` cookie the opener holds for the path ``under`` (the hub's, or a server's)."""
    return next(c.value for c in _jar(opener) if c.name == "_xsrf" and c.path.startswith(under))


def _browser_headers(opener, base: str, name: str) -> dict[str, str]:
    """What the participant's browser sends their own server once JupyterLab is open: the cookies of its login (the
    hub's OAuth gives the server one of its own on the way) and the server's XSRF token. No API token: a participant
    has no right to make one (agentlab.hub.records)."""
    import time
    xsrf = _xsrf(opener, "/hub")
    deadline = time.monotonic() + 180
    while True:  # the spawn the login started: ready when the hub says so
        req = urllib.request.Request(f"{base}/hub/api/users/{name}", headers={"X-XSRFToken": xsrf})
        with opener.open(req, timeout=30) as reply:
            if json.loads(reply.read())["servers"].get("", {}).get("ready"):
                break
        assert time.monotonic() < deadline, f"{name}'s server did not start"
        time.sleep(1)
    with opener.open(f"{base}/user/{name}/lab", timeout=60) as reply:  # the OAuth round, as a browser follows it
        assert urllib.parse.urlsplit(reply.geturl()).path.startswith(f"/user/{name}/lab"), reply.geturl()
    probe = urllib.request.Request(f"{base}/user/{name}/api/sessions")
    _jar(opener).add_cookie_header(probe)
    return {"Cookie": probe.get_header("Cookie"), "X-XSRFToken": _xsrf(opener, f"/user/{name}")}


def _code_cells(notebook: str) -> list[str]:
    import nbformat
    import participant
    nb = nbformat.read(participant.CHECKOUT / notebook, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.mark.timeout(900)
def test_a_fresh_hub_lets_participants_log_in_and_run_notebooks_00_and_15():
    """``python run.py hub`` in the copy, as a trainer types it (its own set-up of the hub's packages and the proxy),
    no model; three participants log in through the login form at once and each runs notebook 00 in their own server,
    the first also notebook 15 (the room's skill site, Redis). Before, every spawn failed: the room's environment
    lacked the site and Redis packages. Last in this module: the module's own hub has stopped (one hub per machine:
    stopping one ends every workshop account's processes)."""
    import shutil
    import signal
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    import participant
    from conftest import free_port

    from agentlab.hub.kernel import run_cells
    participant.environment()
    while RUNNING:  # the module's hub, when this test runs without the one that stops it (-k): its accounts are ours
        RUNNING.pop().stop()
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("redis-server") is None \
            or shutil.which("npm") is None:
        from conftest import skip_or_fail
        skip_or_fail("the hub needs root, redis-server and npm")
    state = Path(tempfile.mkdtemp(prefix="agentlab-fresh-hub-"))
    state.chmod(0o755)
    port = free_port()
    log = open(state / "hub.out", "w")
    t0 = time.monotonic()
    hub = subprocess.Popen([participant.oldest_python(), "run.py", "hub", "--no-model", "--users", "3", "--port",
                            str(port), "--password", FRESH_ROOM_PASSWORD, "--admin-password", FRESH_TRAINER_PASSWORD,
                            "--state", str(state)], cwd=participant.CHECKOUT, start_new_session=True, stdout=log,
                           stderr=subprocess.STDOUT)
    log.close()
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/hub/login", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert hub.poll() is None and time.monotonic() - t0 < 600, (state / "hub.out").read_text()[-3000:]
            time.sleep(1)
        hub_up = time.monotonic() - t0

        def participant_runs(name: str) -> dict:
            t = time.monotonic()
            opener = _form_login(base, name, f"{name}-own-pw-1")
            headers = _browser_headers(opener, base, name)
            ready = time.monotonic() - t
            server = f"{base}/user/{name}/"
            done = run_cells(server, "", _code_cells("notebooks/00_start_here.ipynb"), timeout=240, headers=headers)
            assert all(c.ok for c in done), [c.error for c in done if not c.ok]
            took = {"name": name, "server_ready_s": round(ready, 1), "nb00_s": round(sum(c.seconds for c in done), 1)}
            if name == FRESH_PARTICIPANTS[0]:
                # the hub's token page, as a participant's browser posts it: refused (no row per request)
                req = urllib.request.Request(f"{base}/hub/api/users/{name}/tokens", data=b'{"note": "mine"}',
                                             method="POST", headers={"X-XSRFToken": _xsrf(opener, "/hub"),
                                                                     "Content-Type": "application/json"})
                with pytest.raises(urllib.error.HTTPError) as refused:
                    opener.open(req, timeout=30)
                assert refused.value.code == 403
                done = run_cells(server, "", _code_cells("notebooks/15_skill_site.ipynb"),
                                 path="notebooks/15_skill_site.ipynb", timeout=240, headers=headers)
                assert all(c.ok for c in done), [c.error for c in done if not c.ok]
                took["nb15_s"] = round(sum(c.seconds for c in done), 1)
            return took

        with ThreadPoolExecutor(len(FRESH_PARTICIPANTS)) as pool:
            took = list(pool.map(participant_runs, FRESH_PARTICIPANTS))
        (participant.HOME / "hub_times.json").write_text(json.dumps(
            {"hub_answered_s": round(hub_up, 1), "participants": took}), encoding="utf-8")
        # `kill PID` of python run.py hub, as a process manager or a closed terminal sends it (not to its group): the
        # whole room stops, as with Ctrl-C. It was left running, orphaned, while run.py waited on it as a child.
        from agentlab.hub.launch import workshop_uids
        from agentlab.hub.users import processes_of
        os.kill(hub.pid, signal.SIGTERM)
        hub.wait(120)
        deadline = time.monotonic() + 30
        while (left := list(processes_of(workshop_uids()))) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in left]
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{base}/hub/login", timeout=5)
        mine = []  # nor the proxy in front of it (root's, not a workshop account's): four were left by earlier runs
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
            except OSError:
                continue
            if any(b"configurable-http-proxy" in a for a in argv) and str(port).encode() in argv:
                mine.append(cmdline.parent.name)
        assert mine == [], f"the hub's proxy outlived it: {mine}"
    finally:
        if hub.poll() is None:
            stop_group(hub, wait=90)
        shutil.rmtree(state, ignore_errors=True)


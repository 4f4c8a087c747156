"""agentlab.hub.launch, the parts that need no running hub: one room per machine, and no secret on a command line.

An outside pass ran a workshop while the test suite ran on the same machine: the tests' hub took over the
workshop's accounts and ended every process of the room, three times. A hub refused (its checks, or another hub
running) now ends nothing, and a hub starts only when no other holds the machine. The same pass read the trainer's
``--admin-password`` off the hub's command line with ``ps``.
"""
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from agentlab.hub import launch
from agentlab.hub.config import HubSettings
from agentlab.i18n import t


@pytest.fixture
def lock(tmp_path, monkeypatch):
    """The machine's lock, for this test alone (a room running on this machine keeps its own)."""
    path = tmp_path / "agentlab-hub.lock"
    monkeypatch.setattr(launch, "MACHINE_LOCK", path)
    return path


def _hub(tmp_path, lang="en"):
    return launch.Hub(HubSettings(root=ROOT, state=tmp_path / "state", python=ROOT, proxy=ROOT, workshop_password="pw"),
                      lang=lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_second_hub_is_refused_naming_the_first_and_ends_nothing_of_its_room(tmp_path, lock, monkeypatch, lang):
    ended = []
    monkeypatch.setattr(launch, "sweep", lambda *a, **k: ended.append("sweep") or [])
    monkeypatch.setattr(launch, "ensure_account", lambda *a, **k: pytest.fail("an account was touched"))
    first = launch.hold_machine(lang, state="/srv/room-a", url="http://127.0.0.1:8000")
    try:
        second = _hub(tmp_path, lang)
        with pytest.raises(launch.HubRefused) as refused:
            second.start()
        said = str(refused.value)
        assert "/srv/room-a" in said and "http://127.0.0.1:8000" in said, said
        assert said.startswith(t("hub.another_running", lang, pid="", state="", url="")[:12]), said
        assert second.stop() == [] and ended == []  # (stop, as the command's `finally` calls it)
    finally:
        os.close(first)
    again = launch.hold_machine(lang, state="/srv/room-b", url="-")  # the lock goes with its holder's descriptor
    os.close(again)


def test_a_hub_its_checks_refuse_ends_nothing(tmp_path, lock, monkeypatch):
    """Refused by its own checks (a module missing, a folder closed), the command's `finally: hub.stop()` ended every
    process of every workshop account on the machine: another room's included."""
    ended = []
    monkeypatch.setattr(launch, "sweep", lambda *a, **k: ended.append("sweep") or [])

    def refuse(self):
        raise launch.HubRefused("a module is missing")
    monkeypatch.setattr(launch.Hub, "prepare", refuse)
    hub = _hub(tmp_path)
    with pytest.raises(launch.HubRefused):
        hub.start()
    assert hub.stop() == [] and ended == []
    launch.hold_machine("en", state="-", url="-")  # and it let the machine go


def test_secret_options_move_to_the_environment(monkeypatch):
    argv, env = launch.secrets_to_env(["--users", "3", "--password", "room-pw", "--admin-password=trainer-pw",
                                       "--port", "8001"])
    assert argv == ["--users", "3", "--port", "8001"]
    assert env == {"AGENTLAB_HUB_PASSWORD": "room-pw", "AGENTLAB_HUB_ADMIN_PASSWORD": "trainer-pw"}
    assert launch.secrets_to_env(["--password"]) == (["--password"], {})  # no value: the parser says so
    assert launch.secrets_to_env(["--", "--password", "x"]) == (["--", "--password", "x"], {})
    for name, value in env.items():  # read back from the environment, as the options' defaults
        monkeypatch.setenv(name, value)
    ns = launch.hub_parser().parse_args(argv)
    assert (ns.password, ns.admin_password, ns.users, ns.port) == ("room-pw", "trainer-pw", 3, 8001)


def test_run_py_hub_runs_itself_again_without_the_passwords_before_installing_anything(monkeypatch):
    import run
    ran = []

    def execve(path, args, env):
        ran.append((args, env))
        raise SystemExit(0)
    monkeypatch.setattr(run.os, "execve", execve)
    monkeypatch.setattr(run, "setup", lambda *a: pytest.fail("installed before the passwords left the command line"))
    with pytest.raises(SystemExit):
        run._command("hub", ["--users", "3", "--admin-password", "trainer-secret-1", "--password=room-secret-1"])
    [(args, env)] = ran
    assert not any("secret" in a for a in args) and args[-3:] == ["hub", "--users", "3"], args
    assert env["AGENTLAB_HUB_ADMIN_PASSWORD"] == "trainer-secret-1" and env["AGENTLAB_HUB_PASSWORD"] == "room-secret-1"


def test_a_parent_that_still_shows_a_password_is_named():
    """sudo stays the hub's parent, its command line as typed: the hub says so, and how to give the passwords."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "--admin-password", "trainer-secret-2"])
    try:
        import time
        deadline = time.monotonic() + 10  # (its command line is the new one once the exec is done: seen late under load)
        while b"trainer-secret-2" not in launch.Path(f"/proc/{child.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert launch._commands_showing(["trainer-secret-2"], pid=child.pid) == [launch.Path(sys.executable).name]
        assert launch._commands_showing(["not-there"], pid=child.pid) == []
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_command_refused_says_so_and_never_that_the_room_stopped(tmp_path, lock, capsys, lang):
    """Refused while another hub ran, `python run.py hub` still printed "the hub is stopped; nothing it started is
    left running", which a trainer read as their running room; `--remove-accounts` got the second hub's sentence."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("the hub's command needs root")
    held = launch.hold_machine(lang, state="/srv/room-a", url="http://127.0.0.1:8000")
    try:
        args = ["--state", str(tmp_path / "state"), "--port", "18123", "--no-model", "--lang", lang]
        if (ROOT / "hub" / "node_modules" / ".bin" / "configurable-http-proxy").exists():
            assert launch.hub_command([*args, "--password", "pw-123456", "--admin-password", "adminpw-123"],
                                      root=ROOT) == 2
            out = capsys.readouterr()
            assert "/srv/room-a" in out.err and t("hub.stopped", lang) not in out.out + out.err, out
            # no password made up and shown "once" for a room that does not start (the trainer could announce it)
            assert launch.hub_command(args, root=ROOT) == 2
            out = capsys.readouterr()
            made = t("hub.password_made", lang, password="\0").split("\0")[0]
            assert "/srv/room-a" in out.err and made not in out.out + out.err, out
        assert launch.hub_command(["--remove-accounts", "--lang", lang], root=ROOT) == 2
        out = capsys.readouterr()
        assert out.err.strip() == t("hub.another_running_accounts", lang, pid=os.getpid(), state="/srv/room-a",
                                    url="http://127.0.0.1:8000"), out
    finally:
        os.close(held)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_trainer_reads_how_many_names_the_room_takes(tmp_path, monkeypatch, capsys, lang):
    """The hub's first line said "more can still log in": past --seats no new name can (agentlab.hub.auth)."""
    import shutil
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("redis-server") is None \
            or not (ROOT / "hub" / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        pytest.skip("the hub's command needs root, redis-server and the proxy before it starts anything")
    started = []

    class Started:  # the room itself is the hub tests' (one per machine): here, what the command says of it
        def __init__(self, settings, **_):
            self.settings, self.said, self.proc, self.holds_machine = settings, [], None, False
            self.log, self.url = tmp_path / "hub.log", "http://127.0.0.1:18124"
            started.append(settings)

        def start(self):
            pass

        def stop(self):
            return []
    monkeypatch.setattr(launch, "Hub", Started)
    args = ["--state", str(tmp_path / "state"), "--no-model", "--lang", lang, "--password", "pw-123456",
            "--admin-password", "adminpw-123"]
    for extra, seats, said in ((["--users", "3"], 6, t("hub.seats", lang, seats=6)),
                               (["--seats", "0"], 0, t("hub.seats_any", lang))):
        launch.hub_command([*args, *extra], root=ROOT)
        out = capsys.readouterr().out
        assert started[-1].seats == seats and said in out, out


def test_the_shared_environments_files_are_closed_to_the_accounts_writes(tmp_path):
    """uv leaves the environment's .lock writable by everyone: any participant could hold it and stall the trainer's
    next setup. The hub closes it (and any such file at the environment's top) before it starts."""
    import stat as stat_

    from agentlab.hub.launch import _no_writes_by_others
    env = tmp_path / ".venv"
    (env / "bin").mkdir(parents=True)
    lock, config = env / ".lock", env / "pyvenv.cfg"
    lock.write_text("")
    config.write_text("home = /usr/bin\n")
    os.chmod(lock, 0o666)
    os.chmod(config, 0o644)
    _no_writes_by_others(env)
    assert stat_.S_IMODE(lock.stat().st_mode) == 0o644 and stat_.S_IMODE(config.stat().st_mode) == 0o644

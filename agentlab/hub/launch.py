"""``python run.py hub``: prepare the state folder, start JupyterHub, say where it is, stop it cleanly.

:class:`Hub` is the same for the command, the tests and the load test: ``start()`` returns once the hub
answers, ``stop()`` stops it (JupyterHub stops the servers, the proxy and the services) and then ends any
process still owned by a participant's or the services' account, so nothing is left running.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..cmdline import Parser, count, parse_typed, size
from ..i18n import Lang, joined, t
from ..resources import data_file
from . import preflight, services
from .auth import MIN_PASSWORD, PasswordBook
from .config import LOGS, NOTES, HubSettings, build, write_config
from .users import OS_PREFIX, SERVICES_USER, ensure_account, processes_of
from .warden import FDS_PER_ACCOUNT, Warden

__all__ = ["MACHINE_LOCK", "SECRET_OPTIONS", "Hub", "HubRefused", "LogWatch", "hold_machine", "hub_command", "hub_parser",
           "hub_usage", "secrets_to_env", "sweep", "workshop_uids", "write_new"]

#: held by the one hub running on this machine, from its first check to its last process ended: the workshop's
#: accounts are the machine's (agentlab-NAME, agentlabsvc), so a second hub, or the tests' own, would take them over
#: and end every process of the room running (a second hub started on a workshop machine stopped the room three times)
MACHINE_LOCK = Path("/run/agentlab-hub.lock")

#: the options whose values are secrets, and the environment variables that carry them instead: a command line is
#: any account's to read (ps, /proc/PID/cmdline), a process's environment only its owner's
SECRET_OPTIONS = {"--password": "AGENTLAB_HUB_PASSWORD", "--admin-password": "AGENTLAB_HUB_ADMIN_PASSWORD"}


def secrets_to_env(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """``argv`` without the secret options (:data:`SECRET_OPTIONS`), and their values as the environment variables
    those options default to. A participant ran ``ps`` and read the trainer's ``--admin-password`` off the hub's
    command line: the command re-runs itself without it (the same process, exec), before anything else."""
    out: list[str] = []
    env: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        name, eq, value = arg.partition("=")
        if name in SECRET_OPTIONS and (eq or i + 1 < len(argv)):
            env[SECRET_OPTIONS[name]] = value if eq else argv[i + 1]
            i += 1 if eq else 2
            continue
        out.append(arg)  # (a secret option with no value is left: the parser says what is missing)
        i += 1
    return out, env


class HubRefused(RuntimeError):
    """The hub will not start: ``str()`` is what to fix, one line per finding, in the trainer's language."""


def write_new(path: Path, data: bytes, mode: int, owner: tuple[int, int] | None = None) -> None:
    """Write ``data`` to ``path`` as a new file root made itself, in a folder another account may own.

    Whatever is at ``path`` is unlinked first (a symlink is removed, never followed), then the file is created
    with O_EXCL | O_NOFOLLOW (a link planted between the two makes it fail, it is not followed) and its owner and
    mode are set on the open file, never by name."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        if owner is not None:
            os.fchown(out.fileno(), *owner)
        os.fchmod(out.fileno(), mode)
        out.write(data)


def _find_gguf(state: Path) -> Path | None:
    """The packaged model, placed where the services' account can read it; None when it is not installed."""
    from ..models.local import weights_path, what_is_missing
    if what_is_missing("0.5b") is not None:
        return None
    src = weights_path("0.5b")
    dst = state / "model" / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists() or dst.stat().st_size != src.stat().st_size:
        # the folder is the services' account's: nothing in it is followed (see write_new)
        tmp = dst.with_suffix(".partial")
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        try:
            os.link(src, tmp)
        except OSError:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
                shutil.copyfileobj(inp, out, 1 << 20)
        fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, 0o644)
        finally:
            os.close(fd)
        tmp.replace(dst)
    return dst


def hold_machine(lang: Lang = "en", *, refusal: str = "hub.another_running", **holder: str) -> int:
    """A descriptor holding :data:`MACHINE_LOCK` (``holder``, with this process's id, is written in it), or
    :class:`HubRefused` naming the hub that holds it. The system drops the lock with its holder's last descriptor:
    a hub killed outright leaves none behind."""
    import fcntl
    fd = os.open(MACHINE_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            other = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except ValueError:
            other = {}
        os.close(fd)
        raise HubRefused(t(refusal, lang, pid=other.get("pid", "?"), state=other.get("state", "?"),
                           url=other.get("url", "?"))) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), **holder}).encode(), 0)
    return fd


def _no_writes_by_others(env: Path) -> None:
    """Every file at the top of the shared environment closed to the accounts' writes: uv's ``.lock`` there is made
    writable by everyone, so any participant could hold it and stall the trainer's next setup."""
    if not (env / "pyvenv.cfg").is_file():  # a system Python's prefix (/usr) is not the room's to change
        return
    try:
        entries = list(env.iterdir())
    except OSError:
        return
    for entry in entries:
        try:
            st = entry.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_IWOTH:
                os.chmod(entry, stat.S_IMODE(st.st_mode) & ~(stat.S_IWOTH | stat.S_IWGRP))
        except OSError:
            continue


class Hub:
    """One running workshop hub (a context manager)."""

    def __init__(self, settings: HubSettings, *, extra_services: Iterable[Mapping[str, Any]] = (),
                 extra_roles: Iterable[Mapping[str, Any]] = (), extra_env: Mapping[str, str] | None = None,
                 log: Path | None = None, lang: Lang = "en", fix_permissions: bool = False):
        self.settings = settings
        self.lang = lang
        self.fix_permissions = fix_permissions  # open the folders closed to the accounts (o+x), said on the way
        self.extra = (list(extra_services), list(extra_roles), dict(extra_env or {}))
        self.log = log or settings.state / "hub" / "jupyterhub.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.said: list[str] = []  # what the checks did, to tell the trainer (the folders opened)
        self._machine: int | None = None  # the descriptor holding MACHINE_LOCK while this hub runs
        self.warden: Warden | None = None  # one participant's hold on the room's descriptors, ended (warden.py)

    @property
    def holds_machine(self) -> bool:
        """Whether this hub holds the machine (it started, or is starting, and has not stopped)."""
        return self._machine is not None

    def _take_machine(self) -> None:
        self._machine = hold_machine(self.lang, state=str(self.settings.state), url=self.url)

    def _free_machine(self) -> None:
        if self._machine is not None:
            os.close(self._machine)  # (the lock goes with it)
            self._machine = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}"

    def check_folders(self) -> list[str]:
        """Refuse (:class:`HubRefused`) when a folder the accounts must pass through is closed to them, naming
        each; with ``fix_permissions`` open them instead. The lines to say (what was opened)."""
        s = self.settings
        # the state folder's own mode is set by prepare (0711); the folders above it are the trainer's
        closed = preflight.closed_folders(preflight.needed_folders(s.python, s.root / "agentlab", s.state))
        if not closed:
            return []
        folders = ", ".join(map(str, closed))
        if not self.fix_permissions:
            raise HubRefused(t("hub.closed_folders", self.lang, python=s.python, folders=folders))
        preflight.open_folders(closed)
        return [t("hub.fixed_folders", self.lang, folders=folders)]

    def check_imports(self) -> None:
        """Refuse (:class:`HubRefused`) when the shared environment, run as the services' account, cannot import
        what a piece of the room needs: one line per module, then what to do."""
        s = self.settings
        try:
            missing = preflight.missing_imports(s.python, [s.root], model=s.gguf is not None, user=SERVICES_USER)
        except preflight.PythonDoesNotStart as exc:
            raise HubRefused("\n".join([t("hub.preflight.no_python", self.lang, python=s.python,
                                          account=SERVICES_USER, error=exc),
                                        t("hub.preflight.refused", self.lang)])) from None
        if missing:
            lines = [t("hub.preflight.missing", self.lang, piece=t(f"hub.piece.{m.piece}", self.lang),
                       python=s.python, module=m.module, error=m.error) for m in missing]
            raise HubRefused("\n".join([*lines, t("hub.preflight.refused", self.lang)]))

    def _disks_said(self) -> list[str]:
        """What the trainer is told of the participants' own disks (agentlab.hub.disks): none possible here, a
        shared folder the state is in, and how many more fit (past them a new participant's start is refused)."""
        from .disks import DISKS, TEMPORARY, covered, disks_usable, room_for
        s, st = self.settings, self.settings.state
        if not disks_usable():  # the homes share the machine's disk, as they did before
            return [t("hub.no_own_disks", self.lang)]
        said = []
        if shared := [f for f in TEMPORARY if f not in covered(st / "homes" / "x")]:
            said.append(t("hub.temporary_shared", self.lang, folders=", ".join(shared), state=st))
        (st / DISKS).mkdir(mode=0o700, exist_ok=True)
        said.append(t("hub.disks_room", self.lang, size=f"{s.disk_limit / (1 << 30):.1f}",
                      made=len(list((st / DISKS).glob("*.img"))), n=room_for(st / DISKS, s.disk_limit)))
        return said

    def prepare(self) -> HubSettings:
        """The checks (:meth:`check_folders`, :meth:`check_imports`), folders, the services' account, Redis's
        config, free ports; the settings with every port chosen."""
        s = self.settings
        st = s.state
        st.mkdir(parents=True, exist_ok=True)
        self.said = self.check_folders()
        from .spawner import cgroups_usable
        if s.data_limit and not cgroups_usable():  # each process is still limited; all of one participant's are not
            self.said.append(t("hub.no_account_memory", self.lang))
        if s.disk_limit:
            self.said += self._disks_said()
        _no_writes_by_others(Path(s.python).parent.parent)  # the shared environment: uv leaves its .lock 0666
        st.chmod(0o711)  # participants pass through to their homes, list nothing
        for sub, mode in (("hub", 0o700), ("homes", 0o711)):
            (st / sub).mkdir(exist_ok=True)
            (st / sub).chmod(mode)
        svc = ensure_account(SERVICES_USER, st / "services")
        for sub in ("redis", "site", "model", "model/run", "progress", NOTES, LOGS):
            (st / sub).mkdir(exist_ok=True)
            os.chown(st / sub, svc.pw_uid, svc.pw_gid)
            # the weights are read by anyone; the model's socket (model/run) only by the gate in front of it
            (st / sub).chmod(0o755 if sub == "model" else 0o700)
        seen = subprocess.run([str(s.python), "-c", "import sys; print(sys.version)"], user=SERVICES_USER,
                              group=SERVICES_USER, extra_groups=[], env={"PATH": os.defpath}, cwd="/",
                              capture_output=True, text=True, timeout=60)
        if seen.stdout.strip() != sys.version.strip() and Path(sys.executable) == s.python:  # see hub.python_hidden
            raise HubRefused(t("hub.python_hidden", self.lang, base=sys.base_prefix))
        self.check_imports()
        free = services.free_port
        s = replace(s, redis_password=s.redis_password or secrets.token_urlsafe(24),
                    model_secret=s.model_secret or secrets.token_urlsafe(32),
                    hub_port=s.hub_port or free(), proxy_api_port=s.proxy_api_port or free(),
                    site_port=s.site_port or free(),
                    model_port=s.model_port or free(), progress_port=s.progress_port or free())
        owner = (svc.pw_uid, svc.pw_gid)
        write_new(st / "redis" / "redis.conf",
                  services.redis_conf(s.redis_password, st / "redis").encode(), 0o600, owner)
        # the trainer notes, where only the services' account (the trainer's view) reads them
        for note in sorted(data_file("trainer").glob("*.md")):
            write_new(st / NOTES / note.name, note.read_bytes(), 0o600, owner)
        if s.admin_password:  # the admin's name is never claimed with the workshop password: it has its own
            PasswordBook(st / "hub" / "passwords.json", s.workshop_password).set_password(s.admin, s.admin_password)
        self.settings = s
        return s

    def start(self, timeout: float = 90) -> Hub:
        self._take_machine()  # before any account is touched
        try:
            s = self.prepare()
        except BaseException:
            self._free_machine()  # refused: nothing was started, nothing of another room's is ended
            raise
        extra_services, extra_roles, extra_env = self.extra
        config = write_config(build(s, extra_services=extra_services, extra_roles=extra_roles, extra_env=extra_env),
                       s.state / "hub" / "config.json")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTERHUB_", "AGENTLAB_"))}
        env.update(AGENTLAB_HUB_CONFIG=str(config), AGENTLAB_HUB_LOG=str(self.log), PYTHONPATH=str(s.root),
                   PATH=f"{s.python.parent}{os.pathsep}{env.get('PATH', os.defpath)}")
        self.proc = subprocess.Popen([str(s.python), "-m", "jupyterhub", "-f", str(s.root / "hub" / "jupyterhub_config.py")],
                                     cwd=s.state / "hub", env=env, stdout=self.log.open("ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(t("hub.failed", self.lang, log=self.log))
            try:
                with urllib.request.urlopen(f"{self.url}/hub/health", timeout=2) as r:
                    if r.status == 200:
                        self.warden = Warden()
                        self.warden.start()
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(t("hub.failed", self.lang, log=self.log))

    def api(self, token: str, method: str, path: str, body: Any = None, timeout: float = 60) -> Any:
        """The hub's REST API (``/hub/api`` + ``path``) with ``token``; the reply's JSON (None when empty)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}/hub/api{path}", data=data, method=method,
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    def model_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.settings.model_port}/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self, timeout: float = 60) -> list[int]:
        """Stop the hub; end what any workshop account still runs. Returns the pids that had to be ended. A hub
        that never started (refused, or another held the machine) ends nothing: the accounts may be another room's."""
        if self._machine is None:
            return []
        try:
            return self._stop(timeout)
        finally:
            self._free_machine()

    def _stop(self, timeout: float) -> list[int]:
        if self.warden is not None:
            self.warden.stop()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        pid_file = self.settings.state / "hub" / "proxy.pid"  # the proxy runs as root: ended by its recorded id
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        except (OSError, ValueError):  # gone already (JupyterHub stopped it), or never started
            pass
        ended = sweep()
        from .spawner import drop_cgroups
        drop_cgroups()
        from .disks import unmount_homes
        unmount_homes(self.settings.state)  # nothing of theirs runs now: each disk is kept, unmounted, for next time
        return ended

    def __enter__(self) -> Hub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: A line of JupyterHub's own log (``[E 2026-05-09 10:00:00.123 JupyterHub service:505] ...``), and of a server's
_LOGGED = re.compile(r"^\[[DIWEC] (\d{4}-\d\d-\d\d [\d:.]+) [^\]]*\] ?(.*)$")
_SERVICE_EXITED = re.compile(r"Service (\S+) exited with status (-?\d+)")
#: What the spawner logs when a participant's server cannot start (agentlab.hub.spawner)
SPAWN_FAILED = re.compile(r"agentlab-spawn-failed (\S+): (.*)$")
#: What the login logs when a new name is refused because every seat has one (agentlab.hub.auth)
ROOM_FULL = re.compile(r"login refused: full\b")

#: the most of the hub's log one look reads (a flood of lines is read over several looks, never all at once)
READ_AT_MOST = 8 << 20
#: the most of one line kept while its end has not come (the proxy's longest address is 16 kB)
LINE_AT_MOST = 64 << 10


class LogWatch:
    """Reads the hub's log as it grows and says on the trainer's terminal what stops the room from working: a
    service that stopped (and keeps being restarted), with the last line it wrote in its own log, a participant's
    server that could not start, with why, and a new name refused because the room is full. A service is said the first time, the third, then every
    tenth (it restarts every few seconds: the terminal must stay readable)."""

    def __init__(self, log: Path, lang: Lang = "en", *, start: int | None = None, services: Path | None = None):
        self.log, self.lang = log, lang
        # each service's own log (agentlab.hub.services.logged): the hub's log is state/hub/, theirs state/logs/
        self.services = services if services is not None else log.parent.parent / LOGS
        self.offset = start if start is not None else (log.stat().st_size if log.exists() else 0)
        self.exits: dict[str, int] = {}
        self.full = 0  # new names refused for want of a seat
        self._partial = b""

    def poll(self) -> list[str]:
        """The lines to say about what the log gained since the last call."""
        try:
            with self.log.open("rb") as f:
                if os.fstat(f.fileno()).st_size < self.offset:  # emptied past its cap (agentlab.hub.records.trim)
                    self.offset, self._partial = 0, b""
                f.seek(self.offset)
                chunk = f.read(READ_AT_MOST)
        except OSError:
            return []
        self.offset += len(chunk)
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        self._partial = self._partial[:LINE_AT_MOST]  # a line without end: its start is what a pattern reads
        said = []
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip()
            logged = _LOGGED.match(line)
            if logged is None:
                continue
            if (m := _SERVICE_EXITED.search(logged.group(2))) is not None:
                name, count = m.group(1), self.exits.get(m.group(1), 0) + 1
                self.exits[name] = count
                if count in (1, 3) or count % 10 == 0:
                    # its own log's last line: never another process's, which the hub's log interleaves, nor its
                    # next run's (started again at once, it writes after the run that stopped)
                    own = self.services / f"{name}.log"
                    last = _last_line(own, before=_logged_at(logged.group(1))) or \
                        t("hub.service_no_line", self.lang, log=own)
                    status = int(m.group(2))
                    how = t("hub.exit_code", self.lang, status=status) if status >= 0 else \
                        t("hub.exit_signal", self.lang, signal=_signal_name(-status))
                    said.append(t("hub.service_died", self.lang, service=name, how=how, count=count, line=last))
            elif (m := SPAWN_FAILED.search(logged.group(2))) is not None:
                said.append(t("hub.server_failed", self.lang, name=m.group(1), line=m.group(2)))
            elif ROOM_FULL.search(logged.group(2)) is not None:
                self.full += 1  # the first and every tenth: a script trying names must not flood the terminal
                if self.full == 1 or self.full % 10 == 0:
                    said.append(t("hub.room_full", self.lang, count=self.full))
        return said


#: a terminal's colour codes (configurable-http-proxy writes them): said as text they read "[32minfo[39m"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _last_line(path: Path, tail: int = 64 << 10, *, before: float | None = None) -> str:
    """The last line a service wrote to its own log that says something (not a traceback's frame), without colour
    codes; "" when there is none. ``before`` (epoch seconds): of the run started last before then (each start is
    marked, :data:`agentlab.hub.services.STARTED`), not of one started after."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - tail))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    if before is not None:  # cut at the first start marked after `before`: what follows is a later run's
        for i, raw in enumerate(lines):
            if raw.startswith(services.STARTED):
                try:
                    started = float(raw.split()[-1])
                except ValueError:
                    continue
                if started > before:
                    lines = lines[:i]
                    break
    for raw in reversed(lines):
        line = _ANSI.sub("", raw).rstrip()
        if line.strip() and not line.startswith((" ", "\t", "Traceback", services.STARTED)):
            return line.strip()[:300]
    return ""


def _logged_at(stamp: str) -> float | None:
    """When JupyterHub logged a line (its local time, as it writes it), as epoch seconds; None when unreadable."""
    import datetime
    try:
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def workshop_uids() -> set[int]:
    return {p.pw_uid for p in pwd.getpwall() if p.pw_name.startswith(OS_PREFIX) or p.pw_name == SERVICES_USER}


def sweep(grace: float = 5) -> list[int]:
    """End every process a workshop account still runs (SIGTERM, then SIGKILL); their ids."""
    uids = workshop_uids()
    left = list(processes_of(uids))
    for pid in left:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and list(processes_of(uids)):
        time.sleep(0.1)
    for pid in processes_of(uids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # a process killed is gone only once the kernel has reaped it (a Redis busy in a script ignores SIGTERM): wait,
    # so that whoever asks next (the load test, the next hub's usermod) finds none
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and list(processes_of(uids)):
        time.sleep(0.1)
    return left


def hub_parser(lang: Lang = "en") -> argparse.ArgumentParser:
    """The options of `python run.py hub`, said in ``lang`` (the standard library and the catalogue alone: run.py
    reads them before installing)."""
    ap = Parser(prog="python run.py hub", lang=lang,
                description="the workshop's JupyterHub on this machine, with the skill site and the shared model, until Ctrl-C")
    ap.add_argument("--users", type=int, default=30, help="participants expected (the model's parallel slots follow)")
    ap.add_argument("--seats", type=count, default=None,
                    help="names the workshop password may claim in all (default: twice --users; 0: no cap)")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--admin", default=os.environ.get("AGENTLAB_HUB_ADMIN", "trainer"),
                    help="the trainer's account name (default: $AGENTLAB_HUB_ADMIN, else trainer)")
    ap.add_argument("--password", default=os.environ.get("AGENTLAB_HUB_PASSWORD", ""),
                    help="the workshop password (default: $AGENTLAB_HUB_PASSWORD, else one made up and shown once)")
    ap.add_argument("--admin-password", default=os.environ.get("AGENTLAB_HUB_ADMIN_PASSWORD", ""),
                    help="the admin's own password (default: $AGENTLAB_HUB_ADMIN_PASSWORD, else one made up and shown once)")
    ap.add_argument("--state", default=None, help="the hub's folder (default: .agentlab-hub in the checkout)")
    ap.add_argument("--idle-timeout", type=int, default=3600, help="seconds before an idle server is stopped")
    ap.add_argument("--mem-limit", type=size, default="2G", help="memory per process of a participant (server, each kernel)")
    ap.add_argument("--account-mem-limit", type=size, default=0,
                    help="memory for all of a participant's processes together (default: twice --mem-limit)")
    ap.add_argument("--disk-limit", type=size, default="2G",
                    help="disk space of each participant's own: their home, /tmp as they see it (0: the machine's disk, shared)")
    ap.add_argument("--no-model", action="store_true", help="start without the shared model")
    ap.add_argument("--lang", choices=("en", "zh"), default="en", help="the language of what the hub prints here")
    ap.add_argument("--fix-permissions", action="store_true",
                    help="let every account pass through the folders above the shared Python (chmod o+x) when closed")
    ap.add_argument("--remove-accounts", action="store_true",
                    help="delete the accounts earlier workshops left on this machine (agentlab-*, agentlabsvc), then stop")
    return ap


def hub_usage(argv: list[str]) -> int | None:
    """The exit code of ``python run.py hub ARGV`` when its options are wrong (said on stderr, in the reader's
    language) or ``--help`` was asked for (printed); None when they are right. Runs nothing: run.py reads the options
    with it before installing the room."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said):  # a line saying what was read is the hub's own to say, once, as it starts
        ns, code, _ = parse_typed(hub_parser, argv)
    if ns is None:  # a usage error or --help: said now
        sys.stderr.write(said.getvalue())
    return code if ns is None else None


def _commands_showing(values: list[str], pid: int | None = None, depth: int = 8) -> list[str]:
    """The programs above this process (sudo, a script) whose command line shows one of ``values``, by name: this
    process took them off its own (:func:`secrets_to_env`), but a parent's stays readable by every account."""
    values = [v for v in values if v]
    found: list[str] = []
    pid = os.getppid() if pid is None else pid
    for _ in range(depth):
        if pid <= 1 or not values:
            break
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            break
        words = [a.decode("utf-8", "replace") for a in argv if a]
        if any(v in w for w in words for v in values):
            found.append(Path(words[0]).name if words else str(pid))
        ppid = re.search(r"^PPid:\s*(\d+)", status, re.M)
        pid = int(ppid.group(1)) if ppid else 0
    return found


def hub_command(argv: list[str] | None = None, *, root: Path | None = None) -> int:
    """`python run.py hub`: the options, the checks said in one line each, the hub until Ctrl-C or SIGTERM."""
    ns, code, lang = parse_typed(hub_parser, list(sys.argv[1:] if argv is None else argv))
    if ns is None:  # a usage error or --help, said in the reader's language
        return code
    lang = ns.lang
    root = root or Path(__file__).resolve().parents[2]
    say = lambda key, **kw: print(t(key, lang, **kw), flush=True)  # noqa: E731
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        say("hub.needs_root")
        return 2
    if ns.remove_accounts:
        from .users import remove_accounts
        try:  # never under a running room: an account it removes is one a participant comes back to
            held = hold_machine(lang, refusal="hub.another_running_accounts", state="-", url="-")
        except HubRefused as exc:
            print(exc, file=sys.stderr)
            return 2
        try:
            removed, running = remove_accounts()
        finally:
            os.close(held)
        say("hub.accounts.removed" if removed else "hub.accounts.none", names=joined(removed, lang, "list"), n=len(removed))
        if running:
            say("hub.accounts.running", names=joined(running, lang, "list"))
        return 1 if running else 0
    proxy = root / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not proxy.exists():
        say("hub.no_proxy", path="hub/")
        return 2
    if shutil.which("redis-server") is None:
        say("hub.no_redis")
        return 2
    from .users import valid_name
    if not valid_name(ns.admin):
        say("hub.bad_name", name=ns.admin)
        return 2
    try:  # another room already runs here: refused before any password is made (one was shown, "once", and unused)
        os.close(hold_machine(lang, state="-", url="-"))
    except HubRefused as exc:
        print(exc, file=sys.stderr)
        return 2
    password = ns.password
    if not password:
        password = secrets.token_urlsafe(9)
        say("hub.password_made", password=password)
    admin_password = ns.admin_password
    if admin_password and len(admin_password) < MIN_PASSWORD:
        say("hub.admin_password_short", n=MIN_PASSWORD)
        return 2
    for command in _commands_showing([password, admin_password]):
        say("hub.secret_in_parent", command=command)
    if not admin_password:
        admin_password = secrets.token_urlsafe(9)
        say("hub.admin_password_made", admin=ns.admin, password=admin_password)
    state = Path(ns.state).resolve() if ns.state else root / ".agentlab-hub"
    state.mkdir(parents=True, exist_ok=True)
    gguf = None if ns.no_model else _find_gguf(state)
    if gguf is None and not ns.no_model:
        say("hub.no_model")
    settings = HubSettings(root=root, state=state, python=Path(sys.executable), proxy=proxy,
                           workshop_password=password, admin=ns.admin, admin_password=admin_password,
                           port=ns.port, gguf=gguf,
                           slots=max(1, min(8, ns.users)), idle_timeout=ns.idle_timeout,
                           data_limit=ns.mem_limit, account_limit=ns.account_mem_limit, disk_limit=ns.disk_limit,
                           seats=2 * ns.users if ns.seats is None else ns.seats)
    hub = Hub(settings, lang=lang, fix_permissions=ns.fix_permissions)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        watch = LogWatch(hub.log, lang)
        hub.start()
        for line in hub.said:
            print(line, flush=True)
        seats = t("hub.seats", lang, seats=settings.seats) if settings.seats else t("hub.seats_any", lang)
        say("hub.serving", url=hub.url, admin=ns.admin, users=ns.users, seats=seats)
        say("hub.admin_page", url=f"{hub.url}/hub/admin")
        from .progress import PREFIX as TRAINER_VIEW  # the trainer's own page: found in the docs alone before
        say("hub.trainer_page", url=f"{hub.url}{TRAINER_VIEW}", admin=ns.admin)
        waited = 0.0
        while hub.proc is not None and hub.proc.poll() is None:
            if gguf is not None and waited >= 0 and hub.model_ready():
                say("hub.model_ready", url=f"http://127.0.0.1:{hub.settings.model_port}/v1")
                waited = -1.0
            for line in watch.poll():
                print(line, flush=True)
            for name, held in hub.warden.said() if hub.warden is not None else ():
                say("hub.warden.ended", name=name, held=held, limit=FDS_PER_ACCOUNT)
            time.sleep(1)
            waited += 1 if waited >= 0 else 0
        say("hub.ended", log=hub.log)  # it had started: said above (it read "did not start" after 30 minutes)
        return 1
    except KeyboardInterrupt:
        return 0
    except HubRefused as exc:  # what to fix, one line each: nothing was started
        print(exc, file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        started = hub.holds_machine
        hub.stop()
        if started:  # (a hub refused started nothing: "stopped" read as the running room's)
            say("hub.stopped")


if __name__ == "__main__":
    _argv, _moved = secrets_to_env(sys.argv[1:])
    if _moved and os.name == "posix":  # see secrets_to_env: the same process, without the secrets in its command line
        os.execve(sys.executable, [sys.executable, "-m", "agentlab.hub.launch", *_argv], {**os.environ, **_moved})
    sys.exit(hub_command())

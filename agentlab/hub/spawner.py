"""Each participant's server as their own operating-system user, with their own env and a real memory limit.

JupyterHub's local spawner runs a server as the account named like the hub user; this one maps the name
``ana`` to the account ``agentlab-ana`` (:mod:`agentlab.hub.users`), creates it on the first start, copies
in the notebooks they lack, starts a Redis of their own, gives the server their own site and model keys, and limits
memory for real: ``setrlimit(RLIMIT_DATA)`` in the server process before it drops to the participant's
user (so they cannot raise it), inherited by every kernel it starts. A kernel allocating past the limit gets
a ``MemoryError``; the server and the other participants go on. (JupyterHub's ``mem_limit`` alone only
tells the server; the limit is per process, the server and each kernel.)
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..i18n import accepted_lang, t
from .disks import disks_usable, mount_home, own_output, private_temporary
from .users import SERVICES_USER, ensure_account, os_name, prepare_home, processes_of, reown

__all__ = ["CGROUP_V1", "CGROUP_V1_CPU", "CGROUP_V2", "KERNEL_MANAGER", "NICENESS", "NOFILE", "NPROC",  # noqa: F822
           "PARTICIPANTS_CPU_WEIGHT", "SHARED_FOLDERS", "OwnSocketsKernelManager", "WorkshopSpawner", "account_cgroup", "cgroups_usable", "drop_cgroup",
           "drop_cgroups", "end_processes_of", "failure_line", "kernel_sockets", "own_redis_folder",
           "participant_prefix", "remove_shared_files_of", "spawn_refusal", "start_own_redis"]

#: the kernel manager a participant's server runs each kernel with (:func:`_kernel_manager_class`)
KERNEL_MANAGER = "agentlab.hub.spawner.OwnSocketsKernelManager"

#: RLIMIT_NPROC for a participant: processes and threads of their account together (Linux counts threads). A
#: server with a few kernels runs well under 200; a fork loop stops here instead of taking the machine.
NPROC = 512


#: RLIMIT_NOFILE for a participant's processes: a kernel opening thousands of idle connections to the room's site
#: or model stops here, far below what the services may hold (they raise their own soft limit to the hard one).
NOFILE = 4096

#: How much less of the CPU a participant's processes are offered than the room's services (``nice``): a kernel
#: spinning in a loop shares the cores with the other participants' kernels, never ahead of the model or the site.
NICENESS = 5
#: The CPU share of every participant together against the room's services, where the machine has a CPU controller
#: (cgroup v2's ``cpu.weight``, of 100; v1's ``cpu.shares``, of 1024): all of them weigh as one service (the model, the
#: site), so spinners never get ahead of it; within it each account has an equal share. Measured with
#: benchmarks/hub_load.py --hostile (3 participants, 2 cores): at a quarter of a service, the notebooks took 7.7 s under
#: attack and the model gave 16.9 tokens/s; at one service 6.2 s and 15.2; at three 4.5 s and 13.0, the spinners ahead.
#: ``nice`` alone held nothing: the kernel gives each session an equal share first (autogroup), so 250 spinning
#: processes, each in a session of its own, made another participant's cell 75 times slower, and the model's answers.
PARTICIPANTS_CPU_WEIGHT = 100


def participant_prefix(name: str) -> str:
    """The Redis key prefix every store of participant ``name`` writes under (``AGENTLAB_STORE_PREFIX``)."""
    return f"agentlab:u:{name}:"


def own_redis_folder(home: Path) -> Path:
    """The folder of a participant's own Redis (its socket, its log, its append-only file): hidden in their home."""
    return home / ".redis"


#: the memory controller's tree, as cgroup v2 (one unified tree) or v1 (a hierarchy of its own) mounts it; and v1's
#: CPU controller's (v2 has both in one group)
CGROUP_V2, CGROUP_V1 = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")


def account_cgroup(account: str, limit: int) -> Path | None:
    """The ``cgroup.procs`` file of ``account``'s memory cgroup, made (or kept) with ``limit`` bytes for all of its
    processes together; None where this machine lets none be made (no memory controller, a container's read-only
    tree), where the per-process limit is all there is. RLIMIT_DATA limits each process: a participant who forked
    four children of 1.5 GiB each held 6.4 GiB against a 2 GiB limit, and a room of them the whole machine."""
    try:
        controllers = (CGROUP_V2 / "cgroup.controllers").read_text().split()
        if "memory" in controllers:
            base = CGROUP_V2 / "agentlab"
            base.mkdir(exist_ok=True)
            for parent in (CGROUP_V2, base):  # the controllers handed down to the accounts' groups
                (parent / "cgroup.subtree_control").write_text("+memory")
                if "cpu" in controllers:
                    _quietly_write(parent / "cgroup.subtree_control", "+cpu")
            _quietly_write(base / "cpu.weight", str(PARTICIPANTS_CPU_WEIGHT))
            group = base / account
            group.mkdir(exist_ok=True)
            (group / "memory.max").write_text(str(limit))
            if (group / "memory.swap.max").exists():  # swap would let the limit be passed, slowly, for everyone
                (group / "memory.swap.max").write_text("0")
            return group / "cgroup.procs"
    except OSError:
        pass
    try:
        if not (CGROUP_V1 / "memory.limit_in_bytes").exists():
            return None
        group = CGROUP_V1 / "agentlab" / account
        group.mkdir(parents=True, exist_ok=True)
        _v1_cpu_group(account)
        memsw = group / "memory.memsw.limit_in_bytes"  # memory and swap together: the same bound
        if memsw.exists():
            try:  # (never below the memory limit: raised first when the limit grows, set again after)
                memsw.write_text(str(limit))
            except OSError:
                pass
        (group / "memory.limit_in_bytes").write_text(str(limit))
        if memsw.exists():
            memsw.write_text(str(limit))
        return group / "cgroup.procs"
    except OSError:
        return None


def _quietly_write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:  # a controller this machine does not hand down: the memory limit still holds
        pass


def _v1_cpu_group(account: str) -> Path | None:
    """``account``'s group in cgroup v1's CPU hierarchy (made, with every participant's parent at its share), or None."""
    if not (CGROUP_V1_CPU / "cpu.shares").exists():
        return None
    try:
        base = CGROUP_V1_CPU / "agentlab"
        (base / account).mkdir(parents=True, exist_ok=True)
        (base / "cpu.shares").write_text(str(PARTICIPANTS_CPU_WEIGHT * 1024 // 100))
        return base / account / "cgroup.procs"
    except OSError:
        return None


def cgroups_usable() -> bool:
    """Whether this machine lets an account's processes be limited together (:func:`account_cgroup`)."""
    if CGROUP_V2.joinpath("cgroup.controllers").exists():
        try:
            return "memory" in CGROUP_V2.joinpath("cgroup.controllers").read_text().split() and \
                os.access(CGROUP_V2, os.W_OK)
        except OSError:
            return False
    return CGROUP_V1.joinpath("memory.limit_in_bytes").exists() and os.access(CGROUP_V1, os.W_OK)


def drop_cgroup(procs: Path | None) -> None:
    """Remove an account's memory cgroup (and on cgroup v1 its CPU group) once nothing of theirs runs (they are made
    again at their next start)."""
    if procs is not None:
        for group in (procs.parent, *((CGROUP_V1_CPU / "agentlab" / procs.parent.name,)
                                      if procs.is_relative_to(CGROUP_V1) else ())):
            try:
                group.rmdir()
            except OSError:  # something of theirs still ends: the next start reuses it
                pass


def drop_cgroups() -> None:
    """Remove every account's memory (and CPU) cgroup that nothing runs in (a hub's last step, after the last process
    ended)."""
    for base in (CGROUP_V2 / "agentlab", CGROUP_V1 / "agentlab", CGROUP_V1_CPU / "agentlab"):
        if base.is_dir():
            for group in base.iterdir():
                if group.is_dir():
                    drop_cgroup(group / "cgroup.procs")


def _join(procs: Path | None) -> None:
    if procs is not None:
        groups = [procs]
        if procs.is_relative_to(CGROUP_V1):  # v1: the CPU hierarchy is another tree, the account's group there too
            groups.append(CGROUP_V1_CPU / "agentlab" / procs.parent.name / "cgroup.procs")
        for group in groups:
            try:
                group.write_text(str(os.getpid()))
            except OSError:  # gone meanwhile: the per-process limit still holds
                pass


def _limits(data_limit: int, procs: Path | None = None) -> None:
    """A participant's limits, set in the child before it runs anything of theirs (each only ever lowered); with
    ``procs``, the child joins its account's memory cgroup (:func:`account_cgroup`), and so does all it starts."""
    import resource
    _join(procs)
    if data_limit:
        resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))
    resource.setrlimit(resource.RLIMIT_NPROC, (NPROC, NPROC))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = NOFILE if hard == resource.RLIM_INFINITY else min(NOFILE, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, cap), cap))
    os.nice(NICENESS)


def _as_participant(uid: int, gid: int, data_limit: int, procs: Path | None, home: Path | None) -> None:
    """The child's steps, as root, before it runs anything of the participant's: their limits, their own temporary
    folders when ``home`` is given (:func:`agentlab.hub.disks.private_temporary`), then their account."""
    _limits(data_limit, procs)
    if home is not None:
        private_temporary(home, uid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def start_own_redis(account: str, home: Path, data_limit: int = 0, timeout: float = 20, *, procs: Path | None = None,
                    private: bool = False) -> tuple[Path, subprocess.Popen[bytes] | None]:
    """Start participant ``account``'s own Redis (as them, with their limits) unless it already answers; its socket
    and the process started (None when one answered already: the caller waits for it once it has been ended, so that
    it leaves no zombie behind).

    Run as the participant from the first instruction: the folder is made by them in their own home, so nothing of
    theirs is ever opened by root. It is ended with everything else of theirs when their server stops. ``private``:
    in a mount namespace of its own where the shared temporary folders are theirs, as their server's: a process of
    theirs outside it was a way out of their server's (``/proc/PID/root`` of their own Redis is the machine's ``/``)."""
    import pwd

    from ..redis_store import answers_ping
    from .services import own_redis_command
    entry = pwd.getpwnam(account)
    folder = own_redis_folder(home)
    sock = folder / "redis.sock"
    if answers_ping(sock, 2):
        return sock, None
    script = 'mkdir -p -m 700 "$1" && cd "$1" && shift && exec "$@"'
    import shutil
    command = own_redis_command(folder)
    command[0] = shutil.which(command[0]) or command[0]  # the account's PATH is the system's alone
    proc = subprocess.Popen(["/bin/sh", "-c", script, "sh", str(folder), *command], cwd="/",
                            env={"PATH": os.defpath}, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=functools.partial(_as_participant, entry.pw_uid, entry.pw_gid, data_limit, procs,
                                                         home if private else None))
    deadline = time.monotonic() + timeout
    while not answers_ping(sock, 2):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the participant's own Redis did not start (exit {proc.poll()}; "
                               f"{folder / 'redis.log'})")
        time.sleep(0.05)
    return sock, proc


_KEYS = threading.Lock()  # two first starts at once read the same book: without it, one key was lost


def _site_key(state: Path, site_dir: Path, python: str, root: str, name: str) -> str:
    """This participant's site key: made once (by the site's own command, as the services' user), then kept."""
    book_path = state / "site-keys.json"
    with _KEYS:
        return _site_key_locked(book_path, site_dir, python, root, name)


def _site_key_locked(book_path: Path, site_dir: Path, python: str, root: str, name: str) -> str:
    book = json.loads(book_path.read_text(encoding="utf-8")) if book_path.exists() else {}
    if name not in book:
        made = subprocess.run([python, "-m", "agentlab", "site", "--data", str(site_dir), "keys", "create",
                               "--name", name], user=SERVICES_USER, group=SERVICES_USER, extra_groups=[],
                              cwd=site_dir, env={"PYTHONPATH": root, "HOME": str(site_dir), "PATH": os.defpath},
                              capture_output=True, text=True, check=True, timeout=60)
        book[name] = made.stdout.strip().splitlines()[-1]
        fd = os.open(book_path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(book, out)
        book_path.with_suffix(".tmp").replace(book_path)
    return str(book[name])


def failure_line(exc: BaseException) -> str:
    """Why a start failed, in one line for the trainer: a command's last error line (not the command itself)."""
    if isinstance(exc, subprocess.CalledProcessError):
        out = exc.stderr if isinstance(exc.stderr, str) else (exc.stderr or b"").decode("utf-8", "replace")
        lines = [x.strip() for x in out.splitlines() if x.strip()]
        return lines[-1][:300] if lines else f"exit {exc.returncode}"
    if isinstance(exc, subprocess.SubprocessError) and "preexec_fn" in str(exc):  # Python hides the child's own error
        return ("making the server the participant's own failed, before it ran (their disk, /tmp, limits or the ids of "
                f"their files): {exc}")
    return (f"{type(exc).__name__}: {exc}".splitlines() or [type(exc).__name__])[0][:300]


def spawn_refusal(why: str) -> Exception:
    """The exception JupyterHub shows the participant whose server could not start: the catalogue's sentence in
    English, then in Chinese (``jupyterhub_message``); ``why`` stays in the hub's log."""
    from jupyterhub.spawner import SpawnException
    said = "\n".join(t("hub.spawn_failed", lang) for lang in ("en", "zh"))
    exc = SpawnException(said, reason="agentlab-environment", log_message=why, status_code=500)
    exc.jupyterhub_message = said
    return exc


def end_processes_of(account: str, grace: float = 3.0) -> list[int]:
    """End every process ``account`` still runs (SIGTERM, then SIGKILL after ``grace`` seconds); their ids."""
    import pwd
    import signal
    import time
    try:
        uid = pwd.getpwnam(account).pw_uid
    except KeyError:
        return []
    if uid == 0:
        return []
    left = list(processes_of({uid}))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes_of({uid}):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while sig == signal.SIGTERM and time.monotonic() < deadline and list(processes_of({uid})):
            time.sleep(0.1)
    return left


#: the machine's folders every account may write to: what a participant left there outlives their server
SHARED_FOLDERS = ("/dev/shm", "/tmp", "/var/tmp", "/run/lock")


def remove_shared_files_of(account: str) -> None:
    """Remove what ``account`` left at the top of the machine's shared folders (:data:`SHARED_FOLDERS`: /dev/shm is a
    RAM disk outside any limit of its writer's once the writer is gone, /tmp and /var/tmp the disk the homes are on),
    by a process that is them: only what is theirs can go. Their own temporary files are in their home (TMPDIR)."""
    import pwd
    try:
        entry = pwd.getpwnam(account)
    except KeyError:
        return
    folders = [f for f in SHARED_FOLDERS if Path(f).is_dir()]
    if entry.pw_uid == 0 or not folders:
        return
    subprocess.run(["find", *folders, "-mindepth", "1", "-maxdepth", "1", "-user", str(entry.pw_uid),
                    "-exec", "rm", "-rf", "--", "{}", "+"], user=entry.pw_uid, group=entry.pw_gid, extra_groups=[],
                   cwd="/", env={"PATH": os.defpath}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60, check=False)


@functools.cache
def kernel_sockets(home: Path) -> Path:
    """Where a participant's kernels put their sockets: a hidden folder of their home (the file browser hides it)."""
    return home / ".kernels" / "kernel"


def _spawner_class() -> type:
    from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
    from traitlets import Bool, Integer, Unicode

    class WorkshopSpawner(LocalProcessSpawner):
        """See :mod:`agentlab.hub.spawner`."""

        state_dir = Unicode(config=True, help="the hub's state folder (homes/, site-keys.json)")
        notebooks_dir = Unicode(config=True, help="the notebooks every participant gets a copy of")
        python = Unicode(config=True, help="the shared environment's python")
        root = Unicode(config=True, help="the checkout the shared environment imports agentlab from")
        site_dir = Unicode("", config=True, help="the skill site's data folder ('' : no site)")
        own_redis = Bool(False, config=True, help="start a Redis of the participant's own for their store")
        model_secret = Unicode("", config=True, help="the model gate's secret ('': no model)")
        data_limit = Integer(0, config=True, help="RLIMIT_DATA in bytes for the server and each kernel (0: none)")
        account_limit = Integer(0, config=True, help="bytes for all of a participant's processes together (0: none)")
        disk_limit = Integer(0, config=True, help="bytes of the participant's own disk, their home (0: none)")

        @property
        def account(self) -> str:
            return os_name(self.user.name)

        @property
        def own_disk(self) -> bool:
            """Whether the participant's home is a disk of their own, /tmp and the rest theirs (agentlab.hub.disks)."""
            return bool(self.disk_limit) and _disks_usable()

        def _prepare(self) -> dict[str, str]:
            home = Path(self.state_dir) / "homes" / self.user.name
            entry = ensure_account(self.account, home)
            self._cgroup = account_cgroup(self.account, self.account_limit) if self.account_limit else None
            if self.own_disk:  # their home a disk of its own: what they write fills only it
                mount_home(Path(self.state_dir), self.user.name, home, self.disk_limit, entry.pw_uid, entry.pw_gid)
            reown(home, entry.pw_uid, entry.pw_gid)  # an account made again has new ids: its files are its own again
            # the notebooks and the sockets' folder, made by the participant's own account (never root: see there)
            prepare_home(Path(self.notebooks_dir), home, entry.pw_uid, entry.pw_gid)
            env: dict[str, str] = {}
            if self.site_dir:
                env["AGENTLAB_SITE_KEY"] = _site_key(Path(self.state_dir), Path(self.site_dir), self.python,
                                                     self.root, self.user.name)
            if self.own_redis:
                sock, self._own_redis = start_own_redis(self.account, home, self.data_limit, procs=self._cgroup,
                                                        private=self.own_disk)
                env["AGENTLAB_STORE"] = f"unix://{sock}?db=0"
                env["AGENTLAB_STORE_PREFIX"] = participant_prefix(self.user.name)
            if self.model_secret:
                from .model_gate import model_key
                env["AGENTLAB_API_KEY"] = model_key(self.model_secret, self.user.name)
            return env

        def browser_lang(self) -> str:
            """The language of the browser that asked for this start (its Accept-Language; "en" when the start
            came from the API, with no browser)."""
            request = getattr(getattr(self, "handler", None), "request", None)
            return accepted_lang(request.headers.get("Accept-Language", "") if request is not None else "")

        async def start(self) -> Any:
            # a Chinese browser lands in Chinese JupyterLab on the Chinese notebooks (it opened the English ones in
            # English menus, the zh_CN pack installed), as `python run.py lab --lang zh` opens them
            self._lang = self.browser_lang()
            if not hasattr(self, "_configured_url"):  # (one spawner serves each of the participant's starts)
                self._configured_url: str = str(getattr(self, "default_url", "") or "")
            self.default_url = "/lab/tree/notebooks/zh" if self._lang == "zh" else self._configured_url
            try:
                self._agentlab_env = await asyncio.get_running_loop().run_in_executor(None, self._prepare)
                return await super().start()
            except Exception as exc:
                # the participant reads a sentence (JupyterHub shows jupyterhub_message), never a command line;
                # the trainer's terminal reads why (agentlab.hub.launch.LogWatch reads this line in the log)
                why = failure_line(exc)
                self.log.error("agentlab-spawn-failed %s: %s", self.user.name, why)
                raise spawn_refusal(why) from exc

        async def stop(self, now: bool = False) -> None:
            await super().stop(now=now)
            # a process started with nohup or setsid is no child of the server: it would outlive a cull
            await asyncio.get_running_loop().run_in_executor(None, end_processes_of, self.account)
            own = getattr(self, "_own_redis", None)
            if own is not None:  # ended above with the rest: read its exit status, or it stays a zombie of the hub
                try:
                    await asyncio.get_running_loop().run_in_executor(None, functools.partial(own.wait, 10))
                except subprocess.TimeoutExpired:
                    pass
                self._own_redis = None
            drop_cgroup(getattr(self, "_cgroup", None))
            # what they left in the machine's shared folders (/dev/shm, /tmp) is theirs, and outlives them: removed as them
            await asyncio.get_running_loop().run_in_executor(None, remove_shared_files_of, self.account)

        def make_preexec_fn(self, name: str) -> Any:
            import pwd
            become = set_user_setuid(self.account)
            limit, procs = self.data_limit, getattr(self, "_cgroup", None)
            entry = pwd.getpwnam(self.account)
            own = Path(self.state_dir) / "homes" / self.user.name if self.own_disk else None

            def preexec() -> None:
                _limits(limit, procs)  # while still root: the hard limits cannot be raised again by the participant
                if own is not None:  # while still root: /tmp and the rest are their own disk's, for good
                    private_temporary(own, entry.pw_uid)
                become()
                if own is not None:  # as them: what the server prints fills their disk, not the hub's log
                    own_output(own)
            return preexec

        def get_args(self) -> list[str]:
            # kernels pick their TCP ports free at one moment and bind them the next: two participants' kernels
            # starting together took the same port (measured at 30), and Jupyter refuses a loopback address other
            # than the machine's own. Unix sockets in a folder of the participant's own need no port at all.
            sockets = kernel_sockets(Path(self.state_dir) / "homes" / self.user.name)
            lab = [f"--LabApp.app_settings_dir={Path(self.root) / 'etc' / 'lab-zh'}"] \
                if getattr(self, "_lang", "en") == "zh" else []  # its overrides choose the zh_CN language pack
            return [*super().get_args(), "--KernelManager.transport=ipc", f"--KernelManager.ip={sockets}",
                    f"--MultiKernelManager.kernel_manager_class={KERNEL_MANAGER}", *lab]

        def user_env(self, env: dict[str, str]) -> dict[str, str]:
            import pwd
            entry = pwd.getpwnam(self.account)
            # their temporary files in their own home (made 0700 by prepare_home): /tmp is every account's to list,
            # and a file one participant planted there was another's to open
            env.update(USER=self.account, HOME=entry.pw_dir, SHELL="/bin/sh", TMPDIR=str(Path(entry.pw_dir) / ".tmp"))
            return env

        def get_env(self) -> dict[str, str]:
            env = super().get_env()
            env.update(getattr(self, "_agentlab_env", {}))
            return dict(env)

    return WorkshopSpawner


@functools.cache
def _disks_usable() -> bool:
    return disks_usable()


@functools.cache
def _kernel_manager_class() -> type:
    from jupyter_server.services.kernels.kernelmanager import ServerKernelManager

    class OwnSocketsKernelManager(ServerKernelManager):
        """A kernel whose sockets are its own: ``ip`` (the participant's socket folder and name) gains a name of the
        kernel's. Jupyter picks a kernel's socket numbers as the first whose files do not exist yet, and a kernel
        makes its files only once it has started: two notebooks reopened together (a server's restart, a return
        after the idle cull) got the same five sockets, and one kernel stayed "Connecting" for good."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if self.transport == "ipc":
                import uuid
                self.ip = f"{self.ip}-{uuid.uuid4().hex[:8]}"

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            """ipykernel's launcher, with its forked processes' pipe on a Unix socket of the participant's
            (:mod:`agentlab.hub.kernel_pipe`): ipykernel's own binds a TCP port every account can push into."""
            cmd = list(super().format_kernel_cmd(extra_arguments))
            if self.transport == "ipc":
                for i in range(len(cmd) - 1):
                    if cmd[i] == "-m" and cmd[i + 1] == "ipykernel_launcher":
                        cmd[i + 1] = "agentlab.hub.kernel_pipe"
                        break
            return cmd

    return OwnSocketsKernelManager


def __getattr__(attr: str) -> Any:  # JupyterHub and jupyter_server are imported only when a class is asked for
    if attr == "WorkshopSpawner":
        return _spawner_class()
    if attr == "OwnSocketsKernelManager":
        return _kernel_manager_class()
    raise AttributeError(attr)

import os
import signal
import subprocess
from pathlib import Path

import pytest

# a test past its limit where pytest-timeout cannot stop it ends its worker, with its stack shown
from hang_watch import (  # noqa: F401
    pytest_configure,
    pytest_exception_interact,
    pytest_runtest_protocol,
    pytest_unconfigure,
)

# the run's timeline, printed at the end of a run on pytest-xdist's workers: where the wall time went
from timeline import (  # noqa: F401
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_terminal_summary,
)

# each xdist_group on one worker, as --dist loadgroup means it (pytest 9 dropped xdist's way of marking them)
from xdist_groups import pytest_collection_modifyitems  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
DATASETS = Path(os.environ.get("AGENTLAB_DATASETS", ROOT.parent / "shared" / "datasets"))
IN_CI = bool(os.environ.get("AGENTLAB_CI"))


@pytest.fixture(autouse=True)
def _review_folder_of_the_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The weekly review's folder, for every test and every app a test starts, one of the test's own: by default it is
    the current folder's, which is the checkout's, where one test's notes and its reader's place (what a reload opens
    at) met the next test, and stayed after the run. A test of the default sets its own."""
    monkeypatch.setenv("AGENTLAB_REVIEW_DIR", str(tmp_path_factory.mktemp("review")))


def need(path: Path, what: str) -> Path:
    """Skip (on a user's machine) or fail (in CI) when an external resource is absent."""
    if not path.exists():
        msg = f"{what} not found at {path}"
        if IN_CI:
            pytest.fail(msg + " (CI must not skip this)")
        pytest.skip(msg + "; see the README to get it")
    return path


@pytest.fixture(params=["pipe", "lock"])
def worker_pool(request, monkeypatch):
    """A pool of agentlab's workers of the test's own (run_with_timeout hands its calls to it as well), once with
    workers that answer through a pipe (POSIX) and once through a lock (Windows)."""
    from agentlab import timeouts, workers
    if request.param == "pipe" and not hasattr(workers.select, "poll"):
        pytest.skip("no select.poll here")
    pool = workers._Pool(workers._PipeAnswer if request.param == "pipe" else workers._LockAnswer)
    monkeypatch.setattr(workers, "_pool", pool)
    monkeypatch.setattr(timeouts, "_pool", pool)
    return pool


@pytest.fixture(scope="session")
def datasets() -> Path:
    return need(DATASETS, "../shared/datasets")


def free_port() -> int:
    """Every test's server port: agentlab's own pick, below the range outgoing connections take theirs from (a port
    from bind(0) was taken by a flood's connection before a site bound it, and the site could not start)."""
    from agentlab.ports import free_port
    return free_port()


def skip_or_fail(msg: str):
    """Skip on a user's machine; in CI (AGENTLAB_CI=1) a missing resource is a failure."""
    if IN_CI:
        pytest.fail(msg + " (CI must not skip this)")
    pytest.skip(msg)


def start_redis(exe: str, port: int, folder, *, durable: bool = True, password: str | None = None,
                extra: tuple[str, ...] = ()):
    """A redis-server on loopback ``port`` keeping its files in ``folder``, in its own process group, answering PING.

    ``durable``: every write logged before it is answered (appendonly, appendfsync always), as the site requires.
    ``password``: required of every client (``requirepass``); ``extra``: more of redis-server's arguments."""
    import signal
    import subprocess
    import time

    import redis
    aof = ["--appendonly", "yes", "--appendfsync", "always"] if durable else ["--appendonly", "no"]
    auth = ["--requirepass", password] if password is not None else []
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *aof, *auth, *extra,
                             "--dir", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    client = redis.Redis(port=port, password=password, socket_timeout=1, retry=None)
    deadline = time.monotonic() + 15
    try:
        while True:
            try:
                if client.ping():
                    return proc
            except redis.ConnectionError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                pytest.fail(f"redis-server did not answer PING on port {port}")
            time.sleep(0.05)
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server for this test session: a free loopback port, every write logged before it is answered
    (appendonly, appendfsync always: the durability the site requires), its own process group.
    Yields its URL (``redis://127.0.0.1:P/0``); stopped after the session."""
    import importlib.util
    import shutil
    # AGENTLAB_REDIS_SERVER names another binary (or a missing one, to see the skip)
    exe = os.environ.get("AGENTLAB_REDIS_SERVER") or shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(exe).is_file():
        skip_or_fail(f"redis-server not found ({exe}): apt-get install redis-server, or set AGENTLAB_REDIS_SERVER")
    if importlib.util.find_spec("redis") is None:
        skip_or_fail("the redis client is not installed (pip install agentlab[redis])")
    port, folder = free_port(), tmp_path_factory.mktemp("redis")
    proc = start_redis(exe, port, folder)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_group(proc, 10)


@pytest.fixture
def redis_url(redis_server):
    """The session's server under a prefix of this test's own, so that tests never meet."""
    import uuid
    return f"{redis_server}?prefix=t{uuid.uuid4().hex[:10]}:"


def stop_group(proc, wait: float = 15) -> None:
    """Stop a server started with ``start_new_session=True``: its whole process group, SIGTERM then SIGKILL."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def uploaded(name: str, content: bytes, kind: str = "") -> tuple[dict, ...]:
    """What a browser's upload puts in an ipywidgets 8 ``FileUpload.value``: one file, ``name`` and ``content``."""
    import datetime
    return ({"name": name, "type": kind, "size": len(content), "content": memoryview(content),
             "last_modified": datetime.datetime(2026, 3, 5, tzinfo=datetime.UTC)},)


def interrupt_once(monkeypatch, owner, name: str, *, after: bool = False) -> None:
    """``owner.name`` raises KeyboardInterrupt the next time it is called (once ``after`` it has run, when ``after``),
    as a Ctrl-C landing there would, and is itself again from then on."""
    real = getattr(owner, name)

    def interrupted(*args, **kwargs):
        monkeypatch.setattr(owner, name, real)
        if after:
            real(*args, **kwargs)
        raise KeyboardInterrupt
    monkeypatch.setattr(owner, name, interrupted)


def ignore_ctrl_c() -> None:
    """SIGINT and SIGQUIT ignored, as a script's background job (``cmd &``) starts: a ``preexec_fn``, or called in
    this process around starting one (an ignored signal stays ignored across ``exec``)."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)


def ignored_signals(pid: int) -> set[str] | None:
    """The signals process ``pid`` ignores, of SIGINT and SIGQUIT (its SigIgn mask in /proc); None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigIgn:"))
    return {s.name for s in (signal.SIGINT, signal.SIGQUIT) if mask >> (s - 1) & 1}


def children(pid: int) -> dict[int, tuple[int, str]]:
    """The processes whose parent is ``pid``: their uid and command line (a process gone meanwhile is left out)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                found[int(proc.name)] = (proc.stat().st_uid,
                                         (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, ValueError):
            continue
    return found


def stand_in_wheel(folder: Path, dist: str, version: str, files: dict[str, bytes] | None = None) -> str:
    """A minimal installable wheel under ``dist``'s name (plus ``files``); returns its sha256."""
    import hashlib
    import zipfile
    mod = dist.replace("-", "_")
    path = folder / f"{mod}-{version}-py3-none-any.whl"
    info = f"{mod}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{mod}/__init__.py", "")
        for name, data in (files or {}).items():
            z.writestr(f"{mod}/{name}", data)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def slow_dns(monkeypatch):
    """``slow_dns(port)``: the name ``model.slow-dns.example`` resolves to 127.0.0.1:``port`` only after 20 s (a DNS
    server that does not answer), every other name as usual; proxies from the environment left out. Released at the
    test's end, so no resolver thread outlives it by 20 s."""
    import socket
    import threading
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    released = threading.Event()
    real = socket.getaddrinfo

    def start(port: int) -> str:
        def slow_resolver(host, *args, **kw):
            if host == "model.slow-dns.example":
                released.wait(20)
                return real("127.0.0.1", port, type=socket.SOCK_STREAM)
            return real(host, *args, **kw)
        monkeypatch.setattr(socket, "getaddrinfo", slow_resolver)
        return f"http://model.slow-dns.example:{port}/v1"
    try:
        yield start
    finally:
        released.set()

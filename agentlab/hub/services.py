"""The room's shared services, started and stopped by the hub: Redis, the skill site, the model, the culler.

Each is one entry of ``c.JupyterHub.services`` (a command the hub runs, restarts if it exits, and stops with
itself), run as the services' own account (:data:`~agentlab.hub.users.SERVICES_USER`), never as root and
never as a participant. Secrets go in files of mode 0600 or in the environment, never on a command line
(any local user can read another's command line).
"""
from __future__ import annotations

import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..ports import free_port  # the room's services' ports, exported here as before
from .users import SERVICES_USER

__all__ = ["OWN_REDIS_MAXMEMORY", "REDIS_MAXMEMORY", "STARTED", "culler", "free_port", "logged", "model", "own_redis_command", "redis",
           "redis_conf", "redis_socket", "site", "undo_ignored_signals"]


#: The room's Redis (the site's claims and limits only). With ``noeviction`` a full Redis refuses writes rather than
#: forget a key: the site must never lose a claim. No participant can reach it (see :func:`redis_conf`), so only the
#: site fills it.
REDIS_MAXMEMORY = "256mb"

#: Each participant's own Redis (:func:`own_redis_command`): their store's claims need kilobytes; past this their
#: own writes are refused, nobody else's.
OWN_REDIS_MAXMEMORY = "64mb"


def undo_ignored_signals() -> list[str]:
    """Ctrl-C (SIGINT) and SIGQUIT back to their defaults in the hub, before it starts its services; the names of
    those that were ignored.

    A process started in the background by a script (``python run.py hub ... &``), or by anything such a job
    started (a CI run launched that way, its test workers), begins with both ignored, and a signal ignored stays
    ignored across ``exec``: every service inherited it.
    JupyterHub stops a service with SIGINT and waits 10 s before SIGTERM, one service after another, so a room of
    four services took over a minute to stop, and a hub killed meanwhile left its services running. JupyterHub
    installs its own handlers only after starting them, so this runs from the hub's configuration file."""
    undone = []
    for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL)):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, default)
            undone.append(sig.name)
    return undone


def redis_socket(folder: Path) -> Path:
    """Where the room's Redis listens: a Unix socket in the services' account's own folder (mode 0700)."""
    return folder / "redis.sock"


def redis_conf(password: str, folder: Path) -> str:
    """The room's Redis: no TCP port at all, a Unix socket in
    ``folder`` that only the services' account may open, a password, every change in its log before it answers (the
    skill site refuses a Redis that could forget a claim), within :data:`REDIS_MAXMEMORY`.

    A participant once froze it for the whole room with ``EVAL "while true do end" 0`` (every other participant and
    the site answered BUSY), and could fill it: the room's Redis is now the site's alone, and each participant has a
    Redis of their own (:func:`own_redis_command`), as they have a kernel of their own."""
    return "\n".join(["port 0", f'unixsocket "{redis_socket(folder)}"', "unixsocketperm 700", "protected-mode yes",
                      f"requirepass {password}", f'dir "{folder}"', "appendonly yes", "appendfsync always", 'save ""',
                      "daemonize no", f"maxmemory {REDIS_MAXMEMORY}", "maxmemory-policy noeviction", ""])


def own_redis_command(folder: Path) -> list[str]:
    """A participant's own Redis, run as them: a Unix socket in ``folder`` (in their home, mode 0700: only they and
    root may open it), no TCP port, no password needed, their writes kept as the room's are, within
    :data:`OWN_REDIS_MAXMEMORY`. A script that loops, or a flood of writes, stops only their own."""
    return ["redis-server", "--port", "0", "--unixsocket", str(folder / "redis.sock"), "--unixsocketperm", "700",
            "--dir", str(folder), "--appendonly", "yes", "--appendfsync", "always", "--save", "",
            "--daemonize", "no", "--logfile", "redis.log", "--maxmemory", OWN_REDIS_MAXMEMORY,
            "--maxmemory-policy", "noeviction", "--busy-reply-threshold", "1000"]


def logged(service: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """``service`` writing what it prints to a log of its own, ``folder/NAME.log`` (the same process: ``sh`` execs
    it). Every service printed into the hub's one log, so the line said when one stopped was whichever process had
    written last (the trainer's view's address beside "the service redis stopped")."""
    out = dict(service)
    # each start marked with its time: a service the hub started again at once wrote the new run's lines after the
    # old one's, and the terminal quoted the new run ("ready to accept connections") for the one that stopped
    out["command"] = ["/bin/sh", "-c", f'echo "{STARTED} $(date +%s.%N)" >>"$0"; exec "$@" >>"$0" 2>&1',
                      str(folder / f"{service['name']}.log"), *service["command"]]
    return out


#: the line a service's own log gets at each start, before the time it started (epoch seconds)
STARTED = "agentlab-service-started"


def redis(conf: Path) -> dict[str, Any]:
    return {"name": "redis", "command": ["redis-server", str(conf)], "user": SERVICES_USER,
            "cwd": str(conf.parent), "display": False}


def site(python: str, root: str, data: Path, port: int, store: str) -> dict[str, Any]:
    """The skill site; its claims in the room's Redis under a prefix of its own."""
    return {"name": "site", "command": [python, "-m", "agentlab", "site", "--data", str(data), "--host", "127.0.0.1",
                                        "--port", str(port)],
            "environment": {"AGENTLAB_STORE": store, "PYTHONPATH": root, "HOME": str(data)},
            "user": SERVICES_USER, "cwd": str(data), "display": False}


def model(python: str, root: str, gguf: Path, port: int, *, slots: int, threads: int, secret: str, sock: Path,
          ctx_per_slot: int = 4096) -> dict[str, Any]:
    """llama.cpp's server with ``slots`` parallel slots (each with ``ctx_per_slot`` tokens of context) on a Unix
    socket ``sock`` (in ``model/run``, mode 0700, the services' account's), behind the fair-share gate on ``port``
    (:mod:`agentlab.hub.model_gate`); the gate's secret in the environment, never on the command line."""
    return {"name": "model", "command": [python, "-m", "agentlab.hub.model_gate", "--gguf", str(gguf),
                                         "--port", str(port), "--socket", str(sock),
                                         "--threads", str(threads), "--parallel", str(slots),
                                         "--ctx", str(ctx_per_slot * slots)],
            "environment": {"PYTHONPATH": root, "HOME": str(gguf.parent), "AGENTLAB_MODEL_SECRET": secret},
            "user": SERVICES_USER, "cwd": str(gguf.parent), "display": False}


def culler(python: str, timeout: int) -> dict[str, Any]:
    """jupyterhub-idle-culler: a server idle for ``timeout`` seconds is stopped (its files stay)."""
    return {"name": "idle-culler", "command": [python, "-m", "jupyterhub_idle_culler", f"--timeout={timeout}",
                                               f"--cull-every={max(30, min(300, timeout // 2))}"],
            "user": SERVICES_USER, "display": False}

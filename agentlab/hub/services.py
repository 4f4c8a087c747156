"""The room's shared services, started and stopped by the hub: Redis, the skill site, the model, the culler.

Each is one entry of ``c.JupyterHub.services`` (a command the hub runs, restarts if it exits, and stops with
itself), run as the services' own account (:data:`~agentlab.hub.users.SERVICES_USER`), never as root and
never as a participant. Secrets go in files of mode 0600 or in the environment, never on a command line
(any local user can read another's command line).
"""
from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from .users import SERVICES_USER

__all__ = ["REDIS_MAXMEMORY", "culler", "free_port", "model", "redis", "redis_conf", "site"]


def free_port() -> int:
    """A port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: Redis's memory for the whole room. With ``noeviction`` a full Redis refuses writes (everyone's, the site's
#: claims too) rather than forget a key: the site must never lose a claim, and a participant filling it stops
#: the room's writes until keys are deleted, which the trainer sees and fixes; without a limit it took the machine.
REDIS_MAXMEMORY = "256mb"


def redis_conf(port: int, password: str, folder: Path) -> str:
    """Redis on loopback only, with a password, writing every change to its log before it answers (the
    skill site refuses a Redis that could forget a claim), within :data:`REDIS_MAXMEMORY`."""
    return "\n".join([f"port {port}", "bind 127.0.0.1", "protected-mode yes", f"requirepass {password}",
                      f'dir "{folder}"', "appendonly yes", "appendfsync always", 'save ""', "daemonize no",
                      f"maxmemory {REDIS_MAXMEMORY}", "maxmemory-policy noeviction", ""])


def redis(conf: Path) -> dict[str, Any]:
    return {"name": "redis", "command": ["redis-server", str(conf)], "user": SERVICES_USER,
            "cwd": str(conf.parent), "display": False}


def site(python: str, root: str, data: Path, port: int, store: str) -> dict[str, Any]:
    """The skill site; its claims in the shared Redis under a prefix of its own."""
    return {"name": "site", "command": [python, "-m", "agentlab", "site", "--data", str(data), "--host", "127.0.0.1",
                                        "--port", str(port)],
            "environment": {"AGENTLAB_STORE": store, "PYTHONPATH": root, "HOME": str(data)},
            "user": SERVICES_USER, "cwd": str(data), "display": False}


def model(python: str, root: str, gguf: Path, port: int, *, slots: int, threads: int, ctx_per_slot: int = 4096
          ) -> dict[str, Any]:
    """llama.cpp's server with ``slots`` parallel slots (each with ``ctx_per_slot`` tokens of context)."""
    return {"name": "model", "command": [python, "-m", "agentlab", "local", "--gguf", str(gguf), "--port", str(port),
                                         "--threads", str(threads), "--parallel", str(slots),
                                         "--ctx", str(ctx_per_slot * slots)],
            "environment": {"PYTHONPATH": root, "HOME": str(gguf.parent)}, "user": SERVICES_USER,
            "cwd": str(gguf.parent), "display": False}


def culler(python: str, timeout: int) -> dict[str, Any]:
    """jupyterhub-idle-culler: a server idle for ``timeout`` seconds is stopped (its files stay)."""
    return {"name": "idle-culler", "command": [python, "-m", "jupyterhub_idle_culler", f"--timeout={timeout}",
                                               f"--cull-every={max(30, min(300, timeout // 2))}"],
            "user": SERVICES_USER, "display": False}

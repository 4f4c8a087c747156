"""A workshop on one machine: JupyterHub serving the room, one shared model, skill site and Redis.

``python run.py hub`` starts it (:mod:`agentlab.hub.launch`). The hub runs as root and every participant's
server as an operating-system user of their own (:mod:`agentlab.hub.users`, :mod:`agentlab.hub.spawner`),
so no participant reads another's files or server token. The shared services are in
:mod:`agentlab.hub.services`, the login in :mod:`agentlab.hub.auth`, and :mod:`agentlab.hub.config` builds
every setting as plain data that the tests read. Importing this package imports no JupyterHub.
"""
from __future__ import annotations

__all__ = ["auth", "config", "kernel", "launch", "services", "spawner", "users"]  # modules, imported by name when needed

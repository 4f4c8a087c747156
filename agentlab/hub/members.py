"""The room's participants as the hub lists them, for the trainer's view (agentlab.hub.progress).

The view had one row per participant who had run an exercise's check: one who logged in and never reached a check
(a server that would not start, a notebook never opened), the one a trainer most needs to see, was not on it. The
hub's list of users is asked with the service's own token (its role: ``list:users`` and the names alone) and kept
for :data:`KEEP` seconds, so a page refreshed by a whole room asks the hub once; the trainers' own names are left out.
A hub that cannot be asked leaves the list as the checks made it.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable, Iterable

__all__ = ["KEEP", "SCOPES", "hub_members"]

#: what the trainer's view may read of the hub (config.py gives its service this role)
SCOPES = ("list:users", "read:users:name")
#: seconds the list is kept
KEEP = 10.0


def hub_members(trainers: Iterable[str], *, api_url: str | None = None, token: str | None = None,
                clock: Callable[[], float] = time.monotonic) -> Callable[[], Awaitable[list[str]]]:
    """A coroutine function: the names of the hub's users but ``trainers``, from the hub's REST API (by default the
    URL and token the hub gives its service); ``[]`` when it cannot be asked."""
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError
    url = (api_url or os.environ.get("JUPYTERHUB_API_URL", "")).rstrip("/") + "/users"
    auth = {"Authorization": f"token {token or os.environ.get('JUPYTERHUB_API_TOKEN', '')}"}
    skip = frozenset(trainers)
    kept: tuple[float, list[str]] = (-KEEP - 1, [])

    async def members() -> list[str]:
        nonlocal kept
        if clock() - kept[0] < KEEP:
            return kept[1]
        try:
            reply = await AsyncHTTPClient().fetch(url, headers=auth, request_timeout=5)
            names = sorted({u["name"] for u in json.loads(reply.body) if isinstance(u, dict)
                            and isinstance(u.get("name"), str)} - skip)
        except (HTTPClientError, OSError, ValueError, KeyError, TypeError):
            return kept[1]  # the hub not answering: the last list, or none
        kept = (clock(), names)
        return names
    return members

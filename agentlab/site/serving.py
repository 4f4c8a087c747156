"""A site served in the background of this process (uvicorn in a thread), for notebooks and tests.

``python -m agentlab site`` is how a site is run for real; this is for when a notebook wants the site
and the agent side by side, and to look at the site's state and logs afterwards.
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .service import SkillSite

__all__ = ["serving"]


@contextmanager
def serving(site: SkillSite, *, host: str = "127.0.0.1", port: int = 0, timeout: float = 20.0) -> Iterator[str]:
    """Serve ``site`` on ``host`` (a free port unless given) while the block runs; yields its base URL."""
    import uvicorn

    from .app import create_app
    if port == 0:
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(site), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True, name=f"site:{port}")
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise RuntimeError(f"the site did not start on {host}:{port}")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)

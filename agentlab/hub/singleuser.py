"""A participant's Jupyter server (``python -m agentlab.hub.singleuser``): JupyterHub's own single-user server, which
only root (the hub and its proxy) and its owner may reach (:func:`agentlab.hub.doors.admit_only`).

It listens on a loopback port, as JupyterHub routes to it, and every account of the machine can connect to a
loopback port: another participant held thousands of idle connections there until the server ran out of files,
its owner's login failed with 500 and it wrote a traceback a millisecond to its owner's disk. A connection from any
other account of the machine is now closed as it is accepted.
"""
from __future__ import annotations

import os
import sys

__all__ = ["run_server"]


def run_server() -> None:
    from .doors import admit_only
    admit_only({0, os.getuid()})
    from jupyterhub.singleuser import main as singleuser
    sys.exit(singleuser())


if __name__ == "__main__":
    run_server()

"""A participant's kernel: ipykernel's own, with the pipe its forked processes print through on a Unix socket beside
the kernel's other sockets, never a TCP port (``python -m agentlab.hub.kernel_pipe -f CONNECTION_FILE``).

ipykernel binds that pipe on ``tcp://127.0.0.1`` whatever the kernel's transport, and every account of the machine
can connect to a loopback port. Another participant pushed messages into it: each one that failed its check was
printed whole into the server's log, on its owner's disk, which was full in 20 s; the kernel's memory grew to its
account's limit, and the running cell never returned. The room's kernels use Unix sockets in their participant's
own folder (``--KernelManager.transport=ipc``, agentlab.hub.spawner); the pipe is made there too, so only the
participant's own processes reach it. Started by :class:`agentlab.hub.spawner.OwnSocketsKernelManager` in place of
``ipykernel_launcher``; with a TCP kernel (no ``ipc`` in the connection file) it is ``ipykernel_launcher`` itself.
"""
from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

__all__ = ["launch_kernel", "pipe_endpoint"]


def pipe_endpoint(argv: list[str]) -> str | None:
    """The pipe's endpoint for the kernel whose arguments are ``argv`` (``-f CONNECTION_FILE``): beside its own
    sockets when they are Unix sockets, else None (ipykernel's TCP pipe, as for any kernel)."""
    try:
        path = argv[argv.index("-f") + 1]
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (ValueError, IndexError, OSError):
        return None
    if info.get("transport") != "ipc" or not isinstance(info.get("ip"), str):
        return None
    return f"ipc://{info['ip']}-pipe-{uuid.uuid4().hex[:8]}"


def _use(endpoint: str) -> None:
    """ipykernel's IOPub thread, with its pipe at ``endpoint`` (its two methods that name a TCP port, redone)."""
    import zmq
    from ipykernel import iostream
    from zmq.eventloop.zmqstream import ZMQStream

    def setup_pipe_in(self: Any) -> None:
        self._pipe_uuid = os.urandom(16)  # as ipykernel's: a message must carry it to be printed
        pipe_in = self.socket.context.socket(zmq.PULL)
        pipe_in.linger = 0
        try:
            pipe_in.bind(endpoint)
        except zmq.ZMQError:  # as ipykernel's: the kernel runs, a forked process's output is lost
            self._pipe_flag = False
            pipe_in.close()
            return
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def setup_pipe_out(self: Any) -> tuple[Any, Any]:
        ctx = zmq.Context()  # a new context after the fork, as ipykernel's
        pipe_out = ctx.socket(zmq.PUSH)
        pipe_out.linger = 3000
        pipe_out.connect(endpoint)
        return ctx, pipe_out

    iostream.IOPubThread._setup_pipe_in = setup_pipe_in  # type: ignore[method-assign]
    iostream.IOPubThread._setup_pipe_out = setup_pipe_out  # type: ignore[method-assign]


def launch_kernel() -> None:
    endpoint = pipe_endpoint(sys.argv)
    if endpoint is not None:
        _use(endpoint)
    if sys.path and sys.path[0] in ("", os.getcwd()):  # as ipykernel_launcher: the kernel adds the folder back
        del sys.path[0]
    from ipykernel import kernelapp
    kernelapp.launch_new_instance()


if __name__ == "__main__":
    launch_kernel()

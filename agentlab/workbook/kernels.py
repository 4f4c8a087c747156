"""The kernel the workbook runs a notebook in by itself: ``python run.py check``, the slides, the tests.

Two faults of the Jupyter client stack, both seen in this project's own runs, are kept out here:

* **A message found only when its wait ran out.** nbclient waits for a cell's reply with one poll as long as the
  cell's timeout (and for its output with one poll of no timeout at all). The asyncio poll wakes on the socket's
  edge-triggered file descriptor; when that edge is lost, the reply sits in the socket until the poll's time is up,
  and is then found by the real check pyzmq makes at the end. A notebook run of 8 s took 248 s, passed, and 240 of
  them (the cell timeout) lay between one cell's reply and the next cell's start. Here no wait is longer than
  :data:`SLICE` without a real check of the socket: a lost edge costs at most that, and is counted
  (:func:`late_messages`), so a run can say it happened.
* **A port taken before the kernel binds it.** The client picks the kernel's five ports by binding port 0, from the
  range every outgoing connection's local end comes from, and another process can take one before the kernel
  binds it ("address already in use", the kernel dead). Where there are Unix sockets the kernel listens on five
  of its own, in a private folder made for it and removed after it; elsewhere its ports are picked by
  :func:`agentlab.ports.free_port`, below that range.

jupyter_client is imported only when :data:`KernelManager` is asked for.
"""
from __future__ import annotations

import os
import time
import weakref
from typing import Any

__all__ = ["SLICE", "KernelManager", "SlicedChannel", "error_line", "late_messages", "stop_all"]  # noqa: F822 - the classes: built on first use

#: the longest a wait for a kernel's message goes without a real check of its socket (seconds)
SLICE = 1.0

_late = [0]


def late_messages() -> int:
    """How many messages, in this process so far, were found only by the check at the end of a slice: each one an
    edge the asyncio poll missed, which would have waited for the whole of the caller's timeout."""
    return _late[0]


def _classes() -> dict[str, type]:
    from queue import Empty

    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.channels import AsyncZMQSocketChannel
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import Type, default

    from ..ports import free_port
    from ..scratch import forget, scratch_folder

    class SlicedChannel(AsyncZMQSocketChannel):
        """A kernel's channel whose waits are sliced: a lost edge costs one slice, not the caller's timeout."""

        async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                wait = SLICE if left is None else max(0.0, min(SLICE, left))
                began = time.monotonic()
                if await self.socket.poll(int(wait * 1000)):
                    msg = await self._recv()
                    if wait > 0 and time.monotonic() - began >= wait and _age(msg) > wait / 2:
                        _late[0] += 1  # the wait ran out and the real check found a message that had long been there
                    return msg
                if left is not None and left <= SLICE:
                    raise Empty

    class SlicedClient(AsyncKernelClient):
        shell_channel_class = Type(SlicedChannel)
        iopub_channel_class = Type(SlicedChannel)
        stdin_channel_class = Type(SlicedChannel)
        control_channel_class = Type(SlicedChannel)

    class WorkbookKernelManager(AsyncKernelManager):
        """nbclient's own kernel manager with the two faults above kept out: ``NotebookClient(nb,
        kernel_manager_class=KernelManager)``."""

        @default("client_factory")
        def _sliced(self) -> type:
            return SlicedClient

        @default("cache_ports")
        def _no_port_cache(self) -> bool:  # the ports are picked below, not from the provisioner's cache
            return False

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._folder: str | None = None
            if os.name == "posix" and "transport" not in kwargs:
                self.transport = "ipc"

        def write_connection_file(self, **kwargs: Any) -> None:
            if self._folder is None:
                # a folder of its own (0700), made when the kernel is started, for its connection file (its key)
                # and its sockets: no other kernel picks the same socket names, no other account reads them; a short
                # path, under the 104 bytes a socket's name may have
                self._folder = str(scratch_folder(prefix="agentlab-kernel-"))
                if not self._connection_file_written:
                    self.connection_file = os.path.join(self._folder, "kernel.json")
                if self.transport == "ipc":
                    self.ip = os.path.join(self._folder, "k")
                _live.add(self)
            if self.transport == "tcp" and not (self._connection_file_written and self.connection_file
                                                and os.path.exists(self.connection_file)):
                for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
                    if not getattr(self, name):
                        setattr(self, name, free_port(self.ip or "127.0.0.1"))
            super().write_connection_file(**kwargs)

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if self._folder and not restart:
                forget(self._folder)
                _live.discard(self)

        cleanup_resources = _async_cleanup_resources

    return {"KernelManager": WorkbookKernelManager, "SlicedChannel": SlicedChannel}


_live: weakref.WeakSet[Any] = weakref.WeakSet()  # the kernels of this process started and not yet cleaned up


def stop_all() -> int:
    """End every kernel this process started that still runs, and remove its folder (its sockets, its connection
    file with its key): what an interrupted run does before it exits (Ctrl-C, a closed terminal), where nbclient,
    waiting in another thread, would have run each notebook to its end first. Returns how many were ended."""
    from ..scratch import forget
    ended = 0
    for km in list(_live):
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
            ended += 1
        if km._folder:
            forget(km._folder)
        _live.discard(km)
    return ended


def error_line(exc: BaseException) -> tuple[str, str]:
    """Why a notebook stopped, as ``python run.py check`` and the slides say it: the last line of its error
    (IPython's colours taken out), and the first line of the cell's code that raised it ("" when no cell did)."""
    import re
    plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", str(exc))  # IPython colours its tracebacks: no escapes in a line
    lines = [x for x in plain.splitlines() if x.strip()]
    said = (lines[-1] if lines else type(exc).__name__)[:200]
    # nbclient's message for a cell that raised: the cell's code between two rules of dashes, then the traceback
    cell = re.search(r"^-{5,}\n(.*?)\n-{5,}$", plain, re.S | re.M)
    first = next((x.strip() for x in cell.group(1).splitlines() if x.strip() and not x.lstrip().startswith("#")),
                 "") if cell else ""
    return said, first[:80]


def _age(msg: dict[str, Any]) -> float:
    """Seconds since the kernel sent ``msg`` (its header's time; 0 when it has none)."""
    from datetime import UTC, datetime
    sent = msg.get("header", {}).get("date")
    return (datetime.now(UTC) - sent).total_seconds() if isinstance(sent, datetime) and sent.tzinfo else 0.0


_built: dict[str, type] = {}


def __getattr__(attr: str) -> Any:
    if attr in ("KernelManager", "SlicedChannel"):
        if not _built:
            _built.update(_classes())
        return _built[attr]
    raise AttributeError(attr)

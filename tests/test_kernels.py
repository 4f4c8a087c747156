"""agentlab.workbook.kernels: the kernel the workbook runs notebooks in by itself (the check, the slides, the tests)."""
from __future__ import annotations

import asyncio
import os
import stat
import time
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
import zmq
import zmq.asyncio
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.session import Session
from nbclient import NotebookClient

from agentlab.workbook import kernels


def _reply_after_a_lost_edge(channel_class: type, timeout: float) -> tuple[float, str]:
    """A reply lands on the client's socket while it waits, and the socket's wake-up is consumed by something other
    than the wait (here, a raw read of its events, as a send on the same socket does): how long the wait lasts."""
    async def scenario() -> tuple[float, str]:
        ctx = zmq.asyncio.Context()
        rx = ctx.socket(zmq.PAIR)
        port = rx.bind_to_random_port("tcp://127.0.0.1")
        tx = zmq.Context.instance().socket(zmq.PAIR)
        tx.connect(f"tcp://127.0.0.1:{port}")
        session = Session(key=b"")
        try:
            waiting = asyncio.ensure_future(channel_class(rx, session).get_msg(timeout=timeout))
            await asyncio.sleep(0.2)  # the wait has begun
            session.send(tx, "execute_reply", {"status": "ok"})
            deadline = time.monotonic() + 10
            raw = zmq.Socket.shadow(rx.underlying)
            while not raw.get(zmq.EVENTS) & zmq.POLLIN:  # the reply is in; reading the events consumed the edge
                assert time.monotonic() < deadline
                time.sleep(0.01)
            began = time.monotonic()
            msg = await waiting
            return time.monotonic() - began, msg["msg_type"]
        finally:
            tx.close(linger=0)
            rx.close(linger=0)
            ctx.term()
    return asyncio.run(scenario())


def test_a_reply_whose_wake_up_was_lost_is_found_within_a_slice_not_at_the_timeout():
    """The 248-s notebook run: 240 s (its cell timeout) between one cell's reply and the next cell's start, and no
    error. jupyter_client's channel finds such a reply only when its one long poll runs out; the workbook's finds it
    at the end of the current slice, and counts it."""
    took, kind = _reply_after_a_lost_edge(AsyncZMQSocketChannel, timeout=3)
    assert kind == "execute_reply" and took > 2.0  # the fault, reproduced: the whole timeout waited out
    before = kernels.late_messages()
    took, kind = _reply_after_a_lost_edge(kernels.SlicedChannel, timeout=120)
    assert kind == "execute_reply" and took < 60  # a slice (1 s), not the 120 s timeout
    assert kernels.late_messages() == before + 1


def test_a_sliced_wait_still_ends_at_its_timeout_when_nothing_comes():
    async def scenario() -> float:
        ctx = zmq.asyncio.Context()
        rx = ctx.socket(zmq.PAIR)
        rx.bind_to_random_port("tcp://127.0.0.1")
        try:
            began = time.monotonic()
            with pytest.raises(Exception) as caught:
                await kernels.SlicedChannel(rx, Session(key=b"")).get_msg(timeout=2.5)
            assert type(caught.value).__name__ == "Empty"
            return time.monotonic() - began
        finally:
            rx.close(linger=0)
            ctx.term()
    assert asyncio.run(scenario()) >= 2.4


def _notebook(*sources: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_a_kernel_listens_on_sockets_of_its_own_in_a_private_folder_removed_after_it(tmp_path):
    """No port to lose to another process between picking it and binding it (a kernel died of "address already in
    use"), no socket name another kernel started at the same moment picks too."""
    nb = _notebook("import json\nfrom ipykernel.connect import get_connection_info\n"
                   "info = get_connection_info(unpack=True)\n"
                   "print(json.dumps({k: v for k, v in info.items() if k != 'key'}))")
    client = NotebookClient(nb, timeout=120, kernel_name="python3", kernel_manager_class=kernels.KernelManager)
    client.execute()
    import json
    info = json.loads(nb.cells[0].outputs[0]["text"])
    folder = os.path.dirname(info["ip"])
    assert info["transport"] == "ipc" and os.path.basename(folder).startswith("agentlab-kernel-")
    assert len(f"{info['ip']}-{info['shell_port']}".encode()) < 104  # a socket's name, on macOS too
    assert not os.path.exists(folder)  # removed with the kernel


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_the_folder_is_the_kernels_alone_while_it_runs():
    nb = _notebook("import os, stat\nfrom ipykernel.connect import get_connection_info\n"
                   "print(oct(os.stat(os.path.dirname(get_connection_info(unpack=True)['ip'])).st_mode & 0o777))")
    NotebookClient(nb, timeout=120, kernel_name="python3", kernel_manager_class=kernels.KernelManager).execute()
    assert nb.cells[0].outputs[0]["text"].strip() == oct(stat.S_IRWXU)  # (Jupyter may add the sticky bit: kept)


def test_two_kernels_started_at_once_in_one_process_each_run_their_own_notebook():
    """As ``python run.py check`` runs the notebooks: two at a time, each in a kernel of its own."""
    def run(i: int) -> str:
        nb = _notebook(f"print({i} * 7)")
        NotebookClient(nb, timeout=120, kernel_name="python3", kernel_manager_class=kernels.KernelManager).execute()
        return nb.cells[0].outputs[0]["text"].strip()
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(run, [3, 5])) == ["21", "35"]


def test_over_tcp_the_ports_are_picked_below_the_ephemeral_range():
    """Where there are no Unix sockets (or tcp is asked for): the five ports come from agentlab.ports."""
    from agentlab import ports
    km = kernels.KernelManager(kernel_name="python3", transport="tcp")
    try:
        km.write_connection_file()
        picked = [km.shell_port, km.iopub_port, km.stdin_port, km.control_port, km.hb_port]
        assert len(set(picked)) == 5 and all(p in ports._candidates() for p in picked), picked
    finally:
        km.cleanup_connection_file()

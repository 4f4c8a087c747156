"""agentlab.hub.spawner, the parts that need no running hub: each kernel's own sockets."""
import pytest

pytest.importorskip("jupyter_server")


def test_two_kernels_of_one_participant_starting_together_get_sockets_of_their_own(tmp_path):
    """A participant's two notebooks reopened together (a server's restart, a return after the idle cull) started two
    kernels 40 ms apart on the same five sockets (Jupyter picks the first numbers whose files do not exist, and a
    kernel makes its files only once started): one stayed "Connecting" for good, the server logging Invalid Signature."""
    from traitlets.config import Config
    from traitlets.utils.importstring import import_item

    from agentlab.hub.spawner import KERNEL_MANAGER, kernel_sockets
    folder = kernel_sockets(tmp_path)
    folder.parent.mkdir()
    config = Config()
    config.KernelManager.transport, config.KernelManager.ip = "ipc", str(folder)
    managers = [import_item(KERNEL_MANAGER)(config=config) for _ in range(2)]
    for m in managers:  # what each start does first, before its kernel makes any file
        m.write_connection_file()
    try:
        files = [{f"{m.ip}-{port}" for port in (m.shell_port, m.iopub_port, m.stdin_port, m.control_port, m.hb_port)}
                 for m in managers]
        assert not files[0] & files[1], files
        assert all(m.ip.startswith(f"{folder}-") for m in managers)  # still in the participant's own folder
    finally:
        for m in managers:
            m.cleanup_connection_file()


def _tcp_listening_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table, encoding="ascii").read().splitlines()[1:]
        except OSError:
            continue
        inodes |= {f.split()[9] for f in lines if f.split()[3] == "0A"}  # state 0A: LISTEN
    return inodes


def test_a_participants_kernel_listens_on_no_tcp_port_and_a_forked_process_still_prints(tmp_path):
    """ipykernel binds its pipe for forked processes on tcp://127.0.0.1 whatever the transport: another participant
    pushed messages into it, each printed whole into the owner's server log (a 2 GB disk full in 20 s) and the kernel
    hung. The room's kernels make that pipe a Unix socket beside their others; a fork's print still arrives."""
    import os
    import sys

    from jupyter_client import KernelManager
    from traitlets.config import Config
    from traitlets.utils.importstring import import_item

    from agentlab.hub.spawner import KERNEL_MANAGER, kernel_sockets
    folder = kernel_sockets(tmp_path)
    folder.parent.mkdir()
    config = Config()
    config.KernelManager.transport, config.KernelManager.ip = "ipc", str(folder)
    room = import_item(KERNEL_MANAGER)(config=config, kernel_name="python3")
    room.write_connection_file()
    try:
        cmd = room.format_kernel_cmd()
        assert cmd[cmd.index("-m") + 1] == "agentlab.hub.kernel_pipe", cmd
    finally:
        room.cleanup_connection_file()
    class Started(KernelManager):  # the same command, started here (the room's manager is the server's, async)
        def format_kernel_cmd(self, extra_arguments=None):
            return [sys.executable, "-m", "agentlab.hub.kernel_pipe", "-f", self.connection_file]
    km = Started(transport="ipc", ip=str(folder))
    km.start_kernel()
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        code = ("import os\npid = os.fork()\nif pid == 0:\n    print('from the child', flush=True)\n    os._exit(0)\n"
                "os.waitpid(pid, 0)\nimport time; time.sleep(0.5)\n")
        said = []
        client.execute_interactive(code, timeout=60, output_hook=lambda m: said.append(m["content"].get("text", "")))
        assert "from the child" in "".join(said), said
        pid = km.provisioner.process.pid
        sockets = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
                   if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
        assert not sockets & _tcp_listening_inodes(), "the kernel listens on a TCP port"
        assert any(p.name.startswith(folder.name) and "-pipe-" in p.name for p in folder.parent.iterdir())
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)

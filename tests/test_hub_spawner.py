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

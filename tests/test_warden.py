"""One participant's hold on the descriptors every account shares, ended (agentlab/hub/warden.py)."""
import os
import subprocess
import sys
import time

import pytest

from agentlab.hub.warden import Warden

HOLD = """import socket, sys, time
held = [socket.socketpair() for _ in range(int(sys.argv[1]))]
print("ready", flush=True)
time.sleep(120)
"""


def _as_nobody(n: int) -> subprocess.Popen:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("starts processes as another account: root only")
    proc = subprocess.Popen([sys.executable, "-I", "-c", HOLD, str(n)], user=65534, group=65534, stdout=subprocess.PIPE,
                            text=True, cwd="/")
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_an_account_past_its_share_of_descriptors_is_ended_and_said():
    """An account's processes held 24,000 idle connections to the room's proxy (its limit 20,000: nobody else could
    log in), or bound every free port of the machine (no server could start): each process within its own limit."""
    few, many = _as_nobody(20), None
    try:
        warden = Warden(lambda: {65534: "nobody"}, limit=200)
        assert warden.sweep() == [] and few.poll() is None  # under the share: left alone
        many = _as_nobody(120)  # 240 descriptors more, in a second process: the account's sum counts
        [(name, held)] = warden.sweep()
        assert name == "nobody" and held > 200
        for proc in (few, many):  # every process of the account ends, not only the largest
            assert proc.wait(10) == -9
        assert warden.said() == [("nobody", held)] and warden.said() == []
    finally:
        for proc in (few, many):
            if proc is not None and proc.poll() is None:
                proc.kill()


def test_only_the_participants_accounts_are_counted():
    held = [os.pipe() for _ in range(150)]  # this process: not a participant's
    try:
        assert Warden(lambda: {65534: "nobody"}, limit=100).sweep() == []
    finally:
        for r, w in held:
            os.close(r)
            os.close(w)


def test_the_warden_counts_every_second_until_stopped():
    seen = []
    warden = Warden(lambda: seen.append(time.monotonic()) or {}, every=0.05)
    warden.start()
    time.sleep(0.4)
    warden.stop()
    warden.join(2)
    assert not warden.is_alive() and len(seen) >= 3

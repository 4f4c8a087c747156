"""One participant's hold on what every account shares, ended: the descriptors their processes keep open, counted
for the whole account, every second.

Limits set per process (RLIMIT_NOFILE, RLIMIT_NPROC: :mod:`agentlab.hub.spawner`) multiply: 512 processes of 4,096
descriptors each is two million, and one account held 24,000 idle connections to the room's proxy (whose own limit
is 20,000: nobody could log in, run a cell or see the trainer's view) or bound every free port of the machine (no
server could start, no one could log in). No participant's work needs more than a few hundred descriptors: past
:data:`FDS_PER_ACCOUNT` the account's processes are ended (their server with them: they start it again from the hub's
page) and the trainer's terminal says who and how many.
"""
from __future__ import annotations

import os
import pwd
import signal
import threading
from collections import defaultdict
from collections.abc import Callable

from .users import OS_PREFIX

__all__ = ["FDS_PER_ACCOUNT", "Warden", "participants"]

#: the descriptors (files, sockets, pipes) all of one participant's processes may hold together
FDS_PER_ACCOUNT = 8192
#: seconds between two counts
EVERY = 1.0


def participants() -> dict[int, str]:
    """The participants' accounts on this machine: uid -> the name the room knows them by."""
    return {p.pw_uid: p.pw_name[len(OS_PREFIX):] for p in pwd.getpwall() if p.pw_name.startswith(OS_PREFIX)}


class Warden(threading.Thread):
    """Counts each participant's open descriptors every :data:`EVERY` seconds and ends the processes of an account
    past ``limit``; :meth:`said` hands over (name, descriptors) of each account ended since it was last asked."""

    def __init__(self, accounts: Callable[[], dict[int, str]] = participants, *, limit: int = FDS_PER_ACCOUNT,
                 every: float = EVERY):
        super().__init__(name="agentlab-warden", daemon=True)
        self.accounts, self.limit, self.every = accounts, limit, every
        self._stop_event = threading.Event()
        self._said: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def run(self) -> None:
        while not self._stop_event.wait(self.every):
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - a count that failed (a process gone meanwhile) is tried again next time
                continue

    def stop(self) -> None:
        self._stop_event.set()

    def sweep(self) -> list[tuple[str, int]]:
        """One count: the accounts ended now, with the descriptors they held."""
        names = self.accounts()
        held: dict[int, int] = defaultdict(int)
        pids: dict[int, list[int]] = defaultdict(list)
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                try:
                    uid = entry.stat().st_uid
                    if uid not in names:
                        continue
                    held[uid] += len(os.listdir(f"/proc/{entry.name}/fd"))
                except OSError:  # gone meanwhile
                    continue
                pids[uid].append(int(entry.name))
        ended = [(uid, n) for uid, n in held.items() if n > self.limit]
        for uid, _ in ended:
            for pid in pids[uid]:  # all of them: a process started since is one more to end next time
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        out = [(names[uid], n) for uid, n in ended]
        with self._lock:
            self._said += out
        return out

    def said(self) -> list[tuple[str, int]]:
        with self._lock:
            out, self._said = self._said, []
        return out

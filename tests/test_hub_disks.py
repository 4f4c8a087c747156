"""agentlab.hub.disks: a participant's home a disk of its own, and the shared temporary folders theirs in their view.

Root and a loop device are needed (CI has both); the hub's own test (tests/test_hub.py) fills one participant's
disk in a running room.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import skip_or_fail

from agentlab.hub import disks

NOBODY = 65534
SIZE = 64 << 20


@pytest.fixture
def state():
    if not disks.disks_usable():
        skip_or_fail("this machine cannot mount a disk image (root, mkfs.ext4, a loop device, a mount namespace)")
    # outside /tmp: a home under /tmp keeps /tmp the machine's (see test_a_home_under_tmp_keeps_tmp_shared)
    folder = Path(tempfile.mkdtemp(prefix="agentlab-disks-test-", dir="/var/lib"))
    folder.chmod(0o711)
    (folder / "homes").mkdir(mode=0o711)
    yield folder
    disks.unmount_homes(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _home(state: Path, name: str = "zed") -> Path:
    home = state / "homes" / name
    home.mkdir(mode=0o700)
    os.chown(home, NOBODY, NOBODY)
    return home


def _as_participant(home: Path, code: str, *, private: bool = True) -> subprocess.CompletedProcess[str]:
    def become() -> None:
        if private:
            disks.private_temporary(home, NOBODY)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    return subprocess.run([sys.executable, "-I", "-c", code], preexec_fn=become, capture_output=True, text=True,
                          timeout=120, cwd="/", env={"PATH": os.defpath, "HOME": str(home)})


def test_a_participant_who_fills_their_disk_fills_only_theirs(state):
    """One ``fallocate -l 70G`` filled the disk everyone's homes and the hub's records were on. Now past their size
    their own writes fail with 'no space left', and the machine's disk took only what the image holds."""
    home = _home(state)
    disks.mount_home(state, "zed", home, SIZE, NOBODY, NOBODY)
    assert os.path.ismount(home) and home.stat().st_uid == NOBODY and home.stat().st_mode & 0o777 == 0o700
    assert not (home / "lost+found").exists()
    free = shutil.disk_usage(state).free
    done = _as_participant(home, (
        "import os\n"
        "try:\n"
        "    with open(os.path.join(os.environ['HOME'], 'big'), 'wb') as f:\n"
        "        for _ in range(256):\n"
        "            f.write(b'x' * (1 << 20))\n"
        "    print('all written')\n"
        "except OSError as e:\n"
        "    print('stopped', e.errno)\n"), private=False)
    assert done.stdout.strip() == "stopped 28", done  # ENOSPC, at 64 MB of the 256 asked
    assert free - shutil.disk_usage(state).free < 2 * SIZE
    disks.unmount_homes(state)
    assert not os.path.ismount(home)
    disks.mount_home(state, "zed", home, SIZE, NOBODY, NOBODY)  # the next start: their files are there again
    assert (home / "big").stat().st_size > SIZE // 2


def test_what_a_home_held_before_its_disk_is_copied_in(state):
    home = _home(state)
    (home / "notebooks").mkdir()
    (home / "notebooks" / "mine.ipynb").write_text("{}")
    (home / "link").symlink_to("/etc/shadow")  # a link of theirs stays a link: never followed by root
    for p in (home / "notebooks", home / "notebooks" / "mine.ipynb"):
        os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
    disks.mount_home(state, "zed", home, SIZE, NOBODY, NOBODY)
    assert os.path.ismount(home) and (home / "notebooks" / "mine.ipynb").read_text() == "{}"
    assert (home / "notebooks" / "mine.ipynb").stat().st_uid == NOBODY
    assert (home / "link").is_symlink() and os.readlink(home / "link") == "/etc/shadow"


def test_tmp_and_shared_memory_are_the_participants_own_in_their_processes(state):
    """What they write to /tmp, /var/tmp or /run/lock lands on their own disk (their ~/.tmp), /dev/shm is a RAM disk
    of theirs: the machine's folders get nothing of theirs."""
    home = _home(state)
    disks.mount_home(state, "zed", home, SIZE, NOBODY, NOBODY)
    (home / ".tmp").mkdir(mode=0o700)
    os.chown(home / ".tmp", NOBODY, NOBODY)
    mark = f"agentlab-disks-{os.getpid()}"
    done = _as_participant(home, (
        "import os, sys\n"
        f"for d in ('/tmp', '/var/tmp', '/dev/shm'):\n"
        f"    open(os.path.join(d, {mark!r}), 'w').write(d)\n"
        "print(sorted(os.listdir('/tmp')))\n"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr([mark]), done.stdout  # /tmp is theirs: nobody else's files there
    assert sorted(os.listdir(home / ".tmp")) == [mark]  # /tmp and /var/tmp are one folder of theirs
    assert not any(Path(d, mark).exists() for d in ("/tmp", "/var/tmp", "/dev/shm"))


def test_a_planted_link_never_gives_a_participant_a_folder_of_roots(state):
    home = _home(state)
    disks.mount_home(state, "zed", home, SIZE, NOBODY, NOBODY)
    (home / ".tmp").symlink_to("/root")
    with pytest.raises(subprocess.SubprocessError):  # refused before anything of theirs runs: the start fails
        _as_participant(home, "print('ran')")


def test_a_home_under_tmp_keeps_tmp_shared():
    """A hub's folder under /tmp (a test's): /tmp stays the machine's there, or their home would be out of reach."""
    assert "/tmp" not in disks.covered(Path("/tmp/agentlab-hub-x/homes/ana"))
    assert disks.covered(Path("/srv/room/homes/ana")) == [f for f in disks.TEMPORARY if os.path.isdir(f)]


def test_what_a_server_prints_goes_to_the_participants_own_disk(state):
    """The server's output went to the hub's log on the machine's disk, which a server made to print without end
    filled. Now it goes to their own file; a pipe planted there takes nothing, and never holds the start."""
    home = _home(state)
    disks.mount_home(state, "zed", home, SIZE, NOBODY, NOBODY)

    def start(code: str) -> subprocess.CompletedProcess[str]:
        def become() -> None:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            disks.own_output(home)
        return subprocess.run([sys.executable, "-I", "-c", code], preexec_fn=become, capture_output=True, text=True,
                              timeout=60, cwd="/")
    done = start("import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)")
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""  # nothing reached the caller's output
    assert sorted((home / disks.SERVER_LOG).read_text().splitlines()) == ["to stderr", "to stdout"]
    assert (home / disks.SERVER_LOG).stat().st_uid == NOBODY
    (home / disks.SERVER_LOG).unlink()
    os.mkfifo(home / disks.SERVER_LOG)
    os.chown(home / disks.SERVER_LOG, NOBODY, NOBODY)
    assert start("print('x' * 100000)").returncode == 0  # no reader: the start goes on, the output nowhere


def test_a_new_disk_is_refused_when_the_machines_disk_cannot_hold_it_and_the_others(state, monkeypatch):
    """The room's password is everyone's: one participant who claimed name after name got a 2 GB disk with each and
    filled the machine's (sparse images take what is written). Disks made already count at their whole size, and a
    share of the machine's disk stays for the hub's own files; past that a new disk is refused, the others unharmed."""
    import errno
    first = _home(state, "ana")
    disks.mount_home(state, "ana", first, SIZE, NOBODY, NOBODY)
    folder = state / disks.DISKS
    room = disks.room_for(folder, SIZE)
    assert room >= 1
    promised = SIZE - (folder / "ana.img").stat().st_blocks * 512  # what ana's disk may still fill
    monkeypatch.setattr(disks, "kept_free", lambda f: shutil.disk_usage(f).free - promised - SIZE // 2)
    assert disks.room_for(folder, SIZE) == 0  # ana's unwritten half-disk and the hub's share leave no room
    second = _home(state, "eve")
    with pytest.raises(OSError) as refused:
        disks.mount_home(state, "eve", second, SIZE, NOBODY, NOBODY)
    assert refused.value.errno == errno.ENOSPC and "no room left" in str(refused.value)
    assert not list(folder.glob("eve*")) and not os.path.ismount(second)  # nothing half made
    assert os.path.ismount(first)

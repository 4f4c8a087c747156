"""A participant's disk: their home on a file system of its own, of the size the trainer gives (``--disk-limit``),
and the machine's shared temporary folders, as their processes see them, a folder of that home.

Without it one participant could fill the disk the homes and the hub's state are on (one ``fallocate -l 70G``), and
every other participant's saves failed with them, as did the site's database and the hub's own records. Kernel
quotas would do it, where the machine's kernel and mount allow them; a file system image per participant, mounted
on their home through a loop device, needs neither:

* :func:`mount_home` makes ``<state>/disks/NAME.img`` (sparse: it takes only what is written), an ext4 owned by the
  participant, and mounts it on their home (``nosuid``, ``nodev``). What an earlier home held is copied in first.
  Past the size, their own writes fail with "no space left", and nobody else's.
* :func:`private_temporary`, in the server's child before it becomes the participant: a mount namespace of its own,
  where ``/tmp``, ``/var/tmp`` and ``/run/lock`` are their ``~/.tmp``, and ``/dev/shm`` a RAM disk of its own
  (counted in their memory). Every process of theirs starts from the server, so each one sees the same.
* :func:`unmount_homes` at the hub's stop, once nothing of theirs runs; the images stay for the next start.

The images and their mounts are root's: a participant reaches their home only through the mount, as before.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["DISKS", "KEEP_MIN", "KEEP_SHARE", "SERVER_LOG", "SHM_SIZE", "TEMPORARY", "covered", "disks_usable", "kept_free",
           "mount_home", "own_output", "private_temporary", "room_for", "unmount_homes"]

#: the images' folder, under the hub's state folder (root's, 0700)
DISKS = "disks"
#: the shared temporary folders, each their ``~/.tmp`` in a participant's processes
TEMPORARY = ("/tmp", "/var/tmp", "/run/lock")
#: the size of a participant's own ``/dev/shm`` (its pages count in their memory cgroup as they are written)
SHM_SIZE = 256 << 20
#: where a participant's server writes what it prints, in their home (it went to the hub's own log)
SERVER_LOG = ".jupyter-server.log"
#: what a new disk must leave free on the machine's disk, besides what the disks made already may still fill: the
#: larger of these (the hub's own records, logs and database grow there too)
KEEP_MIN, KEEP_SHARE = 2 << 30, 0.05

_CLONE_NEWNS = 0x00020000
# System V shared memory, semaphores and message queues of their own, gone with their last process: a segment made and
# left behind outlived the participant's server (and the hub), charged to no limit, a gigabyte a restart
_CLONE_NEWIPC = 0x08000000
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_MS_NOSUID, _MS_NODEV = 0x2, 0x4


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True, timeout=120)


def disks_usable() -> bool:
    """Whether this machine can give each participant a disk and temporary folders of their own: root, ext4's
    tools, a free loop device, and a mount namespace a child may make (a container may allow none of them)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not all(shutil.which(c) for c in ("mkfs.ext4", "losetup")):
        return False
    try:
        _run("losetup", "--find")
        probe = ("import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
                 f"sys.exit(0 if libc.unshare({_CLONE_NEWNS | _CLONE_NEWIPC}) == 0 else 1)")
        return subprocess.run([sys.executable, "-I", "-c", probe], timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def kept_free(folder: Path) -> int:
    """Bytes a new disk must leave free on the file system of ``folder`` (:data:`KEEP_MIN`, :data:`KEEP_SHARE`)."""
    return max(KEEP_MIN, int(shutil.disk_usage(folder).total * KEEP_SHARE))


def room_for(folder: Path, size: int) -> int:
    """How many more disks of ``size`` bytes fit on the file system of ``folder``: the disks made already (sparse: what
    they have not written yet is still theirs to fill) counted at their whole size, and :func:`kept_free` left over.
    Without it, a participant who claimed name after name (the room's password is everyone's) got a new disk with
    each and filled the machine's, two gigabytes at a time."""
    promised = 0
    for image in folder.glob("*.img"):
        st = image.stat()
        promised += max(0, st.st_size - st.st_blocks * 512)
    return max(0, (shutil.disk_usage(folder).free - promised - kept_free(folder)) // max(size, 1))


def mount_home(state: Path, name: str, home: Path, size: int, uid: int, gid: int) -> None:
    """``home`` as a file system of ``size`` bytes of participant ``name``'s own (made at their first start, kept
    after); nothing when it is mounted already. What the home held before is copied into it first."""
    if os.path.ismount(home):
        return
    folder = state / DISKS
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(0o700)
    image = folder / f"{name}.img"
    if not image.exists():
        if room_for(folder, size) < 1:  # refused: the disks made already, and the hub's own files, keep their room
            import errno
            raise OSError(errno.ENOSPC, f"no room left on the machine's disk for another participant's disk of "
                                        f"{size >> 20} MB (the disks made already and {kept_free(folder) >> 20} MB "
                                        f"for the hub are kept)", str(folder))
        made = folder / f".{name}.img.new"  # the image appears whole or not at all
        with open(made, "wb") as out:
            out.truncate(size)
        _run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", f"root_owner={uid}:{gid}", str(made))
        held = [p for p in home.iterdir()] if home.is_dir() else []
        if held:  # an earlier home (a workshop before disks): its files go into the new disk, as they are
            moving = folder / f".{name}.moving"
            moving.mkdir(mode=0o700, exist_ok=True)
            _run("mount", "-o", "loop,nosuid,nodev", str(made), str(moving))
            try:  # -a: links stay links (never followed: they are the participant's), owners and modes kept
                _run("cp", "-a", "--", *(str(p) for p in held), str(moving))
            finally:
                _run("umount", str(moving))
                moving.rmdir()
        made.rename(image)
    home.mkdir(parents=True, exist_ok=True)
    _run("mount", "-o", "loop,nosuid,nodev", str(image), str(home))
    lost = home / "lost+found"  # ext4's, root's: not a folder a participant should meet in their file browser
    if lost.is_dir() and not any(lost.iterdir()):
        lost.rmdir()
    os.chown(home, uid, gid)
    home.chmod(0o700)


def unmount_homes(state: Path) -> list[Path]:
    """Unmount every participant's disk of this hub (run once nothing of theirs runs); the homes unmounted."""
    done = []
    homes = state / "homes"
    for home in sorted(homes.iterdir()) if homes.is_dir() else []:
        if os.path.ismount(home):
            try:
                _run("umount", str(home))
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                try:  # still busy: detached now, gone when its last file is closed
                    _run("umount", "--lazy", str(home))
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                    continue  # left mounted: the next start finds it so and uses it as it is
            done.append(home)
    return done


def covered(home: Path) -> list[str]:
    """The shared temporary folders a participant's own ``~/.tmp`` covers in their processes: each one there is,
    but the one their home is in (a hub's folder under /tmp, as a test's: covered, their home would be gone)."""
    inside = os.path.realpath(home)
    return [f for f in TEMPORARY if os.path.isdir(f) and not (inside + "/").startswith(os.path.realpath(f) + "/")]


def private_temporary(home: Path, uid: int) -> None:
    """In the child that becomes the participant (``uid``), while it is still root: its own mount namespace, where
    the shared temporary folders are the participant's ``~/.tmp`` and ``/dev/shm`` a RAM disk of its own, and its own
    IPC namespace (System V shared memory left behind ends with the server's last process). Raises
    OSError when the kernel refuses (the hub checks :func:`disks_usable` before it asks), or when ``~/.tmp`` is not
    a folder of theirs: it is opened without following a link and mounted by that handle, so a link they planted
    there never makes a folder root can reach theirs to see."""
    libc = ctypes.CDLL(None, use_errno=True)

    def mount(source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None) -> None:
        if libc.mount(source, target.encode(), fstype, flags, data) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), target)

    if libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), "unshare")
    mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)  # nothing mounted here reaches the machine's view
    fd = os.open(home / ".tmp", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        if os.fstat(fd).st_uid != uid:
            raise OSError(1, "not the participant's own folder", str(home / ".tmp"))
        own = f"/proc/self/fd/{fd}".encode()
        for folder in covered(home):
            mount(own, folder, None, _MS_BIND, None)
    finally:
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        mount(b"tmpfs", "/dev/shm", b"tmpfs", _MS_NOSUID | _MS_NODEV, f"size={SHM_SIZE},mode=1777".encode())


def own_output(home: Path) -> None:
    """In the child that has just become the participant: what the server (and anything of theirs that writes to the
    same output) prints goes to :data:`SERVER_LOG` on their own disk. It went to the hub's log, on the machine's disk,
    where a server made to print without end (its own 404s, or written into through ptrace, which the participant
    may do to their own processes) filled it. Opened as them, never following a link; anything but a plain file
    there (a pipe they made) and the output goes nowhere."""
    import stat
    try:
        fd = os.open(home / SERVER_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError("not a plain file")
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)

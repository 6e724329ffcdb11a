"""One writer per output directory: a lock file that names its holder.

    with run_lock.hold(run_lock.run_lock_path(out)):        # agents.ppo, mineclip_jax.train
        ...
    with run_lock.hold(run_lock.build_lock_path(out)):      # data builders (they replace --out)
        ...

A second process that opens the same directory is refused with a `RunLockedError` naming the
holder's pid, host and command, so a scheduler that requeues a job whose first instance still
runs cannot interleave two runs' metrics and checkpoints. The lock is an advisory `flock` on the
file, which the kernel releases when its holder dies however it dies (SIGKILL, OOM, a node lost):
a stale lock file is therefore taken over by the next process at once, and the takeover is
atomic (two processes racing for a stale lock cannot both win). The file's JSON content only
names the holder for the error message and for people.

Under `jax.distributed` only process 0 takes the lock (the others write nothing into the run's
directory but their orbax shards); every other process then checks that the lock file names the
token process 0 wrote, so a process of another run that joined the wrong directory is refused.

Runs write to a file inside their directory (`run_lock_path`); data builders, which replace
their `--out` directory wholesale, lock a sibling file (`build_lock_path`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

LOCK_FILE = "run.lock"


class RunLockedError(RuntimeError):
    """Another live process holds the lock of this output directory."""


def run_lock_path(out: str | os.PathLike) -> Path:
    """The lock of a run directory (a file inside it)."""
    return Path(out).expanduser() / LOCK_FILE


def build_lock_path(out: str | os.PathLike) -> Path:
    """The lock of a dataset build's --out (a sibling file: a build replaces --out itself)."""
    out = Path(out).expanduser().absolute()
    return out.with_name(out.name + ".lock")


def describe_holder(info: dict) -> str:
    """'pid 123 on host h (python -m agents.ppo ..., since 2026-01-01 10:00:00 UTC)'."""
    since = info.get("since")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since)) if since else "?"
    return (f"pid {info.get('pid', '?')} on host {info.get('host', '?')} "
            f"({info.get('command', '?')}, since {when})")  # fmt: skip


def read_holder(path: str | os.PathLike) -> dict:
    """The holder a lock file names ({} when it is empty or unreadable)."""
    try:
        text = Path(path).read_text()
        info = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


def _stale_reason(info: dict) -> str:
    """Why a lock file whose flock was free was left behind (printed when taking it over)."""
    if info.get("host") == socket.gethostname() and not _pid_alive(info.get("pid")):
        return "that process is no longer running"
    return "its holder released it without removing the file, or died"


def acquire(path: str | os.PathLike, *, what: str = "this directory") -> tuple[int, dict]:
    """Take the lock at `path` (created if needed) for this process: (fd, holder info). Raises
    `RunLockedError` naming the holder when another process has it. Keep the fd open while the
    lock is needed; `release` it (or exit) to let the next process in."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = read_holder(path)
            raise RunLockedError(
                f"{what} is in use by {describe_holder(holder)} (lock file {path}); two "
                f"processes writing one directory interleave their metrics and checkpoints. "
                f"Wait for that process to finish or stop it, or choose another --out"
            ) from None
        # The file may have been replaced between open and flock (a holder that removed it on
        # release): then this lock is on a dead inode; try again on the new file.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    previous = read_holder(path)
    if previous.get("pid") is not None:
        print(f"taking over the stale lock {path} of {describe_holder(previous)}: "
              f"{_stale_reason(previous)}", file=sys.stderr)  # fmt: skip
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300],
        "since": time.time(),
        "token": uuid.uuid4().hex,
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
    os.fsync(fd)
    return fd, info


def release(fd: int) -> None:
    """Give the lock up. The file is emptied, not removed (removing it would let a process that
    opened the old file and one that creates a new one both hold "the" lock)."""
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the last descriptor drops the flock


@contextlib.contextmanager
def hold(path: str | os.PathLike, *, what: str = "this directory") -> Iterator[dict]:
    """`acquire` for the duration of a `with` block; yields the holder info written."""
    fd, info = acquire(path, what=what)
    try:
        yield info
    finally:
        release(fd)


@contextlib.contextmanager
def hold_distributed(path: str | os.PathLike, *, what: str = "this directory") -> Iterator[dict]:
    """`hold` for a run of one or more `jax.distributed` processes: process 0 takes the lock and
    sends its token to the others, which check that the lock file names it (all processes must
    enter together: it is a collective when there are several)."""
    import jax

    if jax.process_count() == 1:
        with hold(path, what=what) as info:
            yield info
        return
    import numpy as np
    from jax.experimental import multihost_utils

    if jax.process_index() == 0:
        fd, info = acquire(path, what=what)
        token = np.frombuffer(bytes.fromhex(info["token"]), np.uint8)
    else:
        fd, info, token = None, {}, np.zeros(16, np.uint8)
    try:
        token = np.asarray(multihost_utils.broadcast_one_to_all(token), np.uint8).tobytes().hex()
        if fd is None:
            info = read_holder(path)
            if info.get("token") != token:
                raise RunLockedError(
                    f"{what}: the lock file {path} names {describe_holder(info)}, not this run's "
                    f"process 0; another run holds the directory (or --out differs between the "
                    f"processes): give every process the same, unused --out"
                )
        yield info
    finally:
        if fd is not None:
            release(fd)

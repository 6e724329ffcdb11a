"""Process bookkeeping for bridge tests, from /proc (no psutil)."""

from __future__ import annotations

import os
import time


def children_of(pid: int) -> set[int]:
    """Direct children of ``pid`` over all its threads (Linux /proc)."""
    kids: set[int] = set()
    task_dir = f"/proc/{pid}/task"
    try:
        tids = os.listdir(task_dir)
    except FileNotFoundError:
        return kids
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/children") as f:
                kids.update(int(x) for x in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return kids


def is_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (a zombie has finished running)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def wait_all_dead(pids, timeout_s: float) -> list[int]:
    """Poll until none of ``pids`` is alive; return those still alive after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    alive = [p for p in pids if p is not None and is_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if is_alive(p)]
    return alive


def wait_exited(pid: int, timeout_s: float) -> bool:
    """Poll until our child ``pid`` has fully exited (reapable), without reaping it: True if it
    has within ``timeout_s``. A killed multi-threaded process shows as a zombie in /proc while
    its other threads are still being torn down; only then can its parent collect it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
            return True
        time.sleep(0.01)
    return False

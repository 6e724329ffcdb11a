"""Bridge faults that used to pass unnoticed: an env that crashes on every step (restarted
forever, because the skipped recovery step after each restart reset the failure count), a reward
of None or NaN (written into the float buffer as NaN without a word), and SIGTERM (which left
the default log directory and its worker logs behind: atexit hooks do not run on a signal)."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from envs.bridge import ProcessVectorEnv, WorkerFailedError
from tests.multiprocess import REPO, process_env

COUNTER = "envs.bridge.testing:faulty_env"


def test_an_env_that_crashes_on_every_step_gives_up_after_max_restarts(tmp_path):
    # Without once_marker the fault fires on the first step of every worker's life.
    env = ProcessVectorEnv(COUNTER, 1, step_faults={0: ("crash", 1)}, max_restarts=2,
                           log_dir=str(tmp_path))  # fmt: skip
    try:
        env.reset(seed=0)
        with pytest.raises(WorkerFailedError, match="failed 3 times in a row") as caught:
            for _ in range(12):  # 3 crashes, each followed by one skipped recovery step
                env.step(np.zeros(1, np.int64))
        assert "injecting fault 'crash'" in caught.value.log_tail
        assert env.restart_counts == [2]
    finally:
        env.close()


@pytest.mark.parametrize("reward", [None, "1.0", math.nan], ids=["none", "string", "nan"])
def test_a_reward_that_is_not_a_real_number_is_a_fault_naming_the_env(tmp_path, reward):
    env = ProcessVectorEnv(COUNTER, 2, bad_rewards={1: reward}, log_dir=str(tmp_path))
    try:
        env.reset(seed=0)
        with pytest.raises(TypeError, match=r"env 1 returned reward .* a real number") as caught:
            env.step(np.zeros(2, np.int64))
        assert "raised by env 1" in "".join(getattr(caught.value, "__notes__", []))
    finally:
        env.close()


_HOLD = """
import sys, time
from envs.bridge import ProcessVectorEnv
env = ProcessVectorEnv("envs.bridge.testing:faulty_env", 2)
env.reset(seed=0)
print(env.log_dir, *env.worker_pids, flush=True)
time.sleep(120)
"""


def test_sigterm_closes_the_workers_and_removes_the_default_log_dir():
    proc = subprocess.Popen([sys.executable, "-c", _HOLD], env=process_env(1), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = proc.stdout.readline().split()
        assert line, proc.stderr.read()[-3000:]
        log_dir, pids = Path(line[0]), [int(p) for p in line[1:]]
        assert log_dir.is_dir() and len(pids) == 2
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGTERM  # still dies of SIGTERM, as a scheduler expects
    assert not log_dir.exists()
    for pid in pids:  # the workers went with it (their log files with the directory)
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "zombie" in status.read_text().lower()

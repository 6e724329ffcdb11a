"""`python -m agents.ppo --distributed`: a 2-process run killed with SIGKILL after its first
checkpoint and resumed with `--resume` under 2 processes ends exactly where the same run done
uninterrupted ends; and a process count that does not divide the envs is refused by every
process, naming the counts, without a hang."""

from __future__ import annotations

import json
import subprocess
import time

import jax
import numpy as np
import pytest

from tests.multiprocess import check, free_port, run_processes, start_processes

CLI = ["-m", "agents.ppo"]
FLAGS = [
    "--task", "cartpole", "--num-envs", "8", "--num-steps", "16",
    "--total-steps", "512", "--update-epochs", "2", "--num-minibatches", "2", "--si-every", "2",
    "--si-steps", "2", "--si-batch", "2", "--si-capacity", "4", "--si-max-len", "16",
    "--smooth-coef", "0.1", "--checkpoint-every", "2", "--video-every", "-1", "--no-progress",
]  # fmt: skip
TIMING = ("sps", "updates_per_s")

# agents.ppo's CLI, stalled once it has logged update 3 (one update past the checkpoint of update
# 2, so the killed run leaves a metrics row that the resumed run must drop and redo): it says so
# in a marker file and waits to be killed.
_STALLED = """
import sys, time
from pathlib import Path
import jax
from agents import ppo
from agents import train as loop

marker, argv = Path(sys.argv[1]), sys.argv[2:]
log_row = loop._log_row

def log_then_stall(out, s, step):
    log_row(out, s, step)
    if s["update"] == 3:
        Path(f"{marker}.{jax.process_index()}").touch()
        time.sleep(600)

loop._log_row = log_then_stall
ppo.main(argv)
"""


def _dist(i: int, port: int) -> list[str]:
    return ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
            "--process-id", str(i)]  # fmt: skip


def _rows(run_dir):
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def _final_runner(run_dir):
    """The last checkpoint's whole learner state (params, optimizers, SI buffer, RNG, env
    states), restored in this process."""
    from agents.checkpoints import load_run

    return jax.device_get(load_run(run_dir)[2])


def _start_pair(argv, devices: int) -> list[subprocess.Popen]:
    """The two processes of a run, `argv(i)` the arguments of process i after the interpreter."""
    return start_processes(argv, 2, devices)


def _kill_after_markers(procs, marker, timeout_s):
    """Waits for both processes' markers, then SIGKILLs both (also on a failure or timeout)."""
    deadline = time.monotonic() + timeout_s
    try:
        while not all(marker.with_name(f"{marker.name}.{i}").exists() for i in range(2)):
            failed = [p for p in procs if p.poll() is not None]
            assert not failed and time.monotonic() < deadline, (
                "the run to be killed ended or timed out first:\n"
                + "\n".join(p.communicate()[1][-3000:] for p in procs)
            )
            time.sleep(0.2)
    finally:
        for p in procs:
            p.kill()  # SIGKILL
        for p in procs:
            p.communicate()
    return [p.returncode for p in procs]


def test_killed_two_process_run_resumes_exactly(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    port = free_port()
    check(run_processes(lambda i: [*CLI, *FLAGS, "--out", str(whole), *_dist(i, port)],
                        count=2, devices=2, timeout_s=600))  # fmt: skip

    marker, port = tmp_path / "stalled", free_port()
    procs = _start_pair(
        lambda i: ["-c", _STALLED, str(marker), *FLAGS, "--out", str(killed),
                   *_dist(i, port)], devices=2)  # fmt: skip
    assert _kill_after_markers(procs, marker, timeout_s=600) == [-9, -9]
    assert [r["update"] for r in _rows(killed)] == [1, 2, 3]
    assert sorted(p.name for p in (killed / "checkpoints").iterdir() if p.name.isdigit()) == ["2"]

    port = free_port()
    resumed = check(run_processes(
        lambda i: [*CLI, *FLAGS, "--out", str(killed), "--resume", *_dist(i, port)],
        count=2, devices=2, timeout_s=600))  # fmt: skip
    assert "dropped 1 metrics rows logged after update 2" in resumed[0]
    # The same processes and devices: the same reduction order, so bitwise equal.
    assert _rows(killed) == _rows(whole)
    a, b = _final_runner(killed), _final_runner(whole)
    assert int(a.update_step) == int(b.update_step) == 4
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--num-envs", "3"], "--num-envs 3 must be a multiple of the 2 devices in the mesh (2 "
                              "processes x 1 devices"),
        (["--num-envs", "4", "--num-devices", "1"], "--num-devices 1 under --distributed"),
    ],
)  # fmt: skip
def test_envs_that_do_not_split_over_the_processes_are_refused_by_each(tmp_path, flags, message):
    # One CPU device per process, so the process count itself must divide the envs; and
    # --num-devices, which would leave a process outside the mesh (it hung for 5 minutes, then
    # aborted), is refused. Every process says so and exits: none waits for the others.
    port = free_port()
    cmd = [*CLI, "--task", "cartpole", "--num-minibatches", "1", "--num-steps", "4",
           "--total-steps", "48", "--no-progress", "--out", str(tmp_path / "run"), *flags]  # fmt: skip
    procs = _start_pair(lambda i: [*cmd, *_dist(i, port)], devices=1)
    try:
        errs = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    assert [p.returncode for p in procs] == [2, 2], errs
    assert all(message in e for e in errs), errs
    assert not (tmp_path / "run" / "checkpoints").exists()

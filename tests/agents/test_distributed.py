"""`python -m agents.ppo --distributed`: two real local processes of two CPU devices each (gloo
collectives, coordinator on 127.0.0.1) train what one process with four devices trains."""

import json
import subprocess
import sys
import time

import pytest

from tests.multiprocess import check, free_port, process_env, run_processes, start_processes

FLAGS = [
    "-m", "agents.ppo", "--task", "cartpole", "--num-envs", "8", "--num-steps", "16",
    "--total-steps", "512", "--update-epochs", "2", "--num-minibatches", "2", "--si-every", "2",
    "--si-steps", "2", "--si-batch", "2", "--si-capacity", "4", "--si-max-len", "16",
    "--smooth-coef", "0.1", "--checkpoint-every", "2", "--video-every", "-1", "--no-progress",
    # the recipe this equality was established on: --norm-returns feeds a statistic reduced across
    # processes (another summation order) into every update, which moves losses by ~1e-5 relative
    "--core-size", "0", "--final-eval-episodes", "32", "--no-norm-returns",
]  # fmt: skip
TIMING = ("sps", "updates_per_s")


def _rows(run_dir):
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def test_two_processes_train_what_one_process_with_all_devices_trains(tmp_path):
    port = free_port()
    two = tmp_path / "two"
    dist = ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
    check(run_processes(lambda i: [*FLAGS, "--out", str(two), *dist, "--process-id", str(i)],
                        count=2, devices=2, timeout_s=600))  # fmt: skip
    one = tmp_path / "one"
    # --num-devices 4: one mesh for the rollout and the update, as under --distributed (a CPU
    # process would otherwise split them: agents.devices)
    check(run_processes(lambda i: [*FLAGS, "--out", str(one), "--num-devices", "4"], count=1,
                        devices=4, timeout_s=600))  # fmt: skip
    # Every logged loss and episode statistic of every update is the same: one global program.
    rows_two, rows_one = _rows(two), _rows(one)
    assert [r["update"] for r in rows_two] == [1, 2, 3, 4]
    # Within 1e-6 relative: a metric mean reduced across processes sums in another order (in our
    # runs only `value_mean` differed, in its last bits; the losses were bitwise equal).
    for a, b in zip(rows_two, rows_one, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-12), (a["update"], k)
    assert json.loads((two / "config.json").read_text())["process_count"] == 2
    # process 0 alone ran the final evaluation, on one device: the same figures as one process
    final = [json.loads((d / "summary.json").read_text())["final_eval"] for d in (two, one)]
    assert final[0] == final[1] and final[0]["episodes"] == 32
    assert sorted(p.name for p in (two / "checkpoints").iterdir() if p.name.isdigit()) == [
        "2",
        "4",
    ]

    # Resuming a 2-process run with one process is refused, naming both counts.
    resumed = subprocess.run(
        [sys.executable, *FLAGS, "--out", str(two), "--resume", "--total-steps", "1024"],
        env=process_env(4), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 2, resumed.stderr[-2000:]
    assert "was trained by 2 process(es), this run has 1" in resumed.stderr


# The host-stepped path: each process starts bridge workers for its own share of the envs (the
# embedded world in worker processes, as MineDojo's simulators would run on each host).
HOST_FLAGS = [
    "-m", "agents.ppo", "--backend", "process", "--task", "hunt a cow,shear a sheep,milk a cow",
    "--world-size", "16", "--world-pool", "1", "--image-size", "16", "24", "--cnn", "nature",
    "--num-envs", "4", "--num-steps", "8", "--total-steps", "64", "--num-minibatches", "2",
    "--update-epochs", "1", "--si-every", "1", "--si-max-len", "8", "--si-capacity", "4",
    "--max-episode-steps", "6", "--bridge-envs-per-worker", "2", "--checkpoint-every", "1",
    "--video-every", "-1", "--no-progress",
]  # fmt: skip


def test_host_stepped_processes_each_drive_their_own_workers(tmp_path):
    port = free_port()
    two, one = tmp_path / "two", tmp_path / "one"
    dist = ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
    check(run_processes(lambda i: [*HOST_FLAGS, "--out", str(two), *dist, "--process-id", str(i)],
                        count=2, devices=2, timeout_s=600))  # fmt: skip
    # the same two workers of two envs, started by one process (their world programs are the
    # ones the two processes' workers compiled: loaded from the session's compilation cache)
    one_flags = [*HOST_FLAGS, "--out", str(one), "--num-devices", "4"]
    check(run_processes(lambda i: one_flags, count=1, devices=4, timeout_s=600))
    # Each process ran one worker of its two envs, with the global env ids' tasks and seeds:
    # env 2 of the 2-process run (process 1's first) runs the third task, as in one process.
    logs = sorted(p.relative_to(two / "bridge_logs").as_posix()
                  for p in (two / "bridge_logs").rglob("*.log"))  # fmt: skip
    assert logs == ["process-0/worker-0.log", "process-1/worker-0.log"]
    rows_two, rows_one = _rows(two), _rows(one)
    assert [r["update"] for r in rows_two] == [1, 2] and rows_two[-1]["env_steps"] == 64
    # one global program per step and per update: the same losses, per-task episode figures
    # (summed over the processes) and SI figures (one global buffer) as one process
    for a, b in zip(rows_two, rows_one, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-12), (a["update"], k)
    assert rows_two[-1]["episodes"] == 4  # every env ended one 6-step episode per update
    # both processes wrote the learner state of every update into the one checkpoint directory
    assert sorted(p.name for p in (two / "checkpoints").iterdir() if p.name.isdigit()) == [
        "1",
        "2",
    ]


def test_a_failing_process_stops_the_run_without_a_hang(tmp_path):
    """Process 1 fails (a task id only it was given) after joining; process 0 is then waiting
    for it in a collective. Without fail-fast both would sit in JAX's shutdown barrier for 5
    minutes and abort; now process 1 leaves at once with its error and the coordination service
    stops process 0 once process 1's heartbeats are missed (--heartbeat-timeout-s 5)."""
    port = free_port()
    dist = ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
            "--heartbeat-timeout-s", "5"]  # fmt: skip
    tasks = ["cartpole", "no such task"]
    start = time.monotonic()
    procs = start_processes(
        lambda i: [*FLAGS, "--out", str(tmp_path / "run"), *dist, "--process-id", str(i),
                   "--task", tasks[i]],
        count=2, devices=2,
    )  # fmt: skip
    try:
        results = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            p.kill()
    elapsed = time.monotonic() - start
    err1 = results[1][1]
    assert procs[1].returncode == 2, err1[-2000:]
    assert "no such task" in err1 and "stops (exit 2) without waiting for the others" in err1
    assert procs[0].returncode != 0  # stopped by the coordination service, not finished
    assert elapsed < 150, elapsed  # far from the 300 s shutdown barrier of a normal exit

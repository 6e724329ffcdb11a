"""`python -m agents.ppo --distributed`: two real local processes of two CPU devices each (gloo
collectives, coordinator on 127.0.0.1) train what one process with four devices trains."""

import json
import subprocess
import sys

import pytest

from tests.multiprocess import check, free_port, process_env, run_processes

FLAGS = [
    "-m", "agents.ppo", "--task", "cartpole", "--num-envs", "8", "--num-steps", "16",
    "--total-steps", "512", "--update-epochs", "2", "--num-minibatches", "2", "--si-every", "2",
    "--si-steps", "2", "--si-batch", "2", "--si-capacity", "4", "--si-max-len", "16",
    "--smooth-coef", "0.1", "--checkpoint-every", "2", "--video-every", "-1", "--no-progress",
    "--compile-cache", "",
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


def test_distributed_refuses_host_stepped_backends():
    out = subprocess.run(
        [sys.executable, "-m", "agents.ppo", "--backend", "process", "--distributed",
         "--coordinator", "127.0.0.1:1", "--num-processes", "1", "--process-id", "0"],
        env=process_env(1), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2 and "--distributed trains on --backend jax" in out.stderr

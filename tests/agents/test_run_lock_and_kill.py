"""Two real `python -m agents.ppo` processes on one `--out`, and a SIGKILL: the second is refused
while the first lives (naming its pid and host), the killed run's stale lock is taken over by its
resume, and TensorBoard ends with every point metrics.jsonl kept, each once."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time

import pytest

from tests.multiprocess import REPO, process_env

FLAGS = [
    "--task", "cartpole", "--num-envs", "8", "--num-steps", "16", "--total-steps", "512",
    "--update-epochs", "2", "--num-minibatches", "2", "--si-every", "2", "--si-steps", "2",
    "--si-batch", "2", "--si-capacity", "4", "--si-max-len", "16", "--checkpoint-every", "2",
    "--video-every", "-1", "--final-eval-episodes", "0", "--no-progress",
]  # fmt: skip

# agents.ppo's CLI, stalled once it has logged update 3 (after the checkpoint of update 2): it
# touches a marker file and waits to be killed.
_STALLED = """
import sys, time
from pathlib import Path
from agents import ppo
from agents import train as loop

marker, argv = Path(sys.argv[1]), sys.argv[2:]
log_row = loop._log_row

def log_then_stall(out, s, step):
    log_row(out, s, step)
    if s["update"] == 3:
        marker.touch()
        time.sleep(600)

loop._log_row = log_then_stall
ppo.main(argv)
"""


def _run(argv, timeout_s=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], env=process_env(1), cwd=REPO,
                          capture_output=True, text=True, timeout=timeout_s)  # fmt: skip


def _tfrecords(path):
    """The records of a TFRecord file (length, crc, data, crc), stopping at a torn tail."""
    data = path.read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos : pos + 8])
        if pos + 12 + length + 4 > len(data):
            return
        yield data[pos + 12 : pos + 12 + length]
        pos += 12 + length + 4


def tensorboard_scalars(tb_dir, tag):
    """{step: value} of a scalar as TensorBoard shows it: event files read in order, and an
    event restarting a session at step S (a writer's `purge_step`) drops the points at >= S."""
    from tensorboardX.proto.event_pb2 import Event, SessionLog

    points: dict[int, list[float]] = {}
    for path in sorted(tb_dir.glob("events.out.tfevents.*")):
        for record in _tfrecords(path):
            event = Event.FromString(record)
            if event.HasField("session_log") and event.session_log.status == SessionLog.START:
                points = {s: v for s, v in points.items() if s < event.step}
            for value in event.summary.value:
                if value.tag == tag:
                    points.setdefault(event.step, []).append(value.simple_value)
    return points


@pytest.mark.slow
def test_second_process_is_refused_and_a_killed_run_resumes_with_its_tensorboard(tmp_path):
    # Before: the second process ran too (metrics.jsonl interleaved, config.json of one of
    # them), and after the kill TensorBoard lacked the points the killed process had not
    # flushed (its writer flushes every 120 s), which the resume never wrote again.
    out, marker = tmp_path / "run", tmp_path / "stalled"
    first = subprocess.Popen([sys.executable, "-c", _STALLED, str(marker), *FLAGS, "--out",
                              str(out)], env=process_env(1), cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not marker.exists():
            assert first.poll() is None, first.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the first run never logged update 3"
            time.sleep(0.2)
        second = _run(["-m", "agents.ppo", *FLAGS, "--seed", "1", "--out", str(out)])
        assert second.returncode == 2, second.stderr[-3000:]
        assert f"pid {first.pid} on host {socket.gethostname()}" in second.stderr
        assert "choose another --out" in second.stderr
        assert json.loads((out / "config.json").read_text())["seed"] == 0  # untouched
    finally:
        first.kill()  # SIGKILL: the lock file stays, naming a dead process
        first.communicate()
    assert first.returncode == -9
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3]

    resumed = _run(["-m", "agents.ppo", *FLAGS, "--out", str(out), "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"taking over the stale lock {out / 'run.lock'} of pid {first.pid}" in resumed.stderr
    assert "no longer running" in resumed.stderr
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3, 4]
    for tag in ("charts/pg_loss", "charts/update"):
        points = tensorboard_scalars(out / "tb", tag)
        key = tag.split("/")[1]
        want = {r["env_steps"]: [pytest.approx(r[key], rel=1e-6)] for r in rows}
        assert points == want, tag

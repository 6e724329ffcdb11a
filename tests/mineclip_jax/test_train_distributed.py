"""`python -m mineclip_jax.train --distributed`: two real local processes of two CPU devices each
(gloo collectives, coordinator on 127.0.0.1) train what one process with four devices trains,
and a run resumes under another process count."""

from __future__ import annotations

import json
import shutil

import jax
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax import train as tr
from tests.multiprocess import check, free_port, run_processes

LR = 1e-3
SHAPE = (16, 48, 64, 3)  # MineCLIP-mini's frames: the cheapest model the CLI builds


def _clips(root, n_train=12, n_test=4):
    """An array clip directory (data.synthetic's format) of random frames and distinct texts."""
    root.mkdir()
    rng = np.random.default_rng(0)
    meta = {"format": tr.ARRAY_FORMAT, "frame_shape": list(SHAPE), "clips": {}}
    for split, n in (("train", n_train), ("test", n_test)):
        np.save(root / f"{split}_frames.npy", rng.integers(0, 256, (n, *SHAPE), dtype=np.uint8))
        texts = [f"{split} clip number {i}" for i in range(n)]
        np.save(root / f"{split}_tokens.npy", mcj.tokenize(texts))
        with open(root / f"{split}_clips.jsonl", "w") as f:
            f.writelines(json.dumps({"text": t}) + "\n" for t in texts)
        meta["clips"][split] = n
    (root / "clips.json").write_text(json.dumps(meta))
    return root


def _flags(data, out):
    # Every random part of a step is on: the crop, the frame subset (avg pool) and the data order
    # (12 clips, batch 4: the second epoch's permutation is drawn within the run).
    return ["-m", "mineclip_jax.train", "--data", str(data), "--out", str(out), "--config", "mini",
            "--steps", "4", "--batch-size", "4", "--eval-batch-size", "4", "--lr", str(LR),
            "--warmup-steps", "1", "--crop-min-area", "0.8", "--train-frames", "8",
            "--ckpt-every", "2", "--log-every", "1", "--seed", "3", "--no-progress"]  # fmt: skip


def _params(run):
    return jax.tree.leaves(mcj.load_checkpoint(run / "model").params)


def _report(stdout: str) -> str:
    """The retrieval figures a run prints."""
    return stdout.split("test split")[1].split("model saved")[0]


def _assert_close(a, b):
    """Not bitwise: the gradient mean over the 4 devices is summed in another order by gloo across
    2 processes than by XLA inside one process. Nor within 1e-6 of each value: where a gradient
    component nearly cancels over the batch, that last-bit difference is large relative to the
    component, and Adam, which divides by the gradient's own scale, turns it into a step of up to
    the learning rate (a parameter that started at 0 then differs by more than 1e-6 of itself).
    So: within 1e-6 relative, or 1e-2 of one learning-rate step absolute (we saw 4e-5 of a step
    on one machine, 1.3e-3 on another, in one component of a 192-element array); a wrong
    share of the data or of the RNG moves parameters by whole steps."""
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-2 * LR)


@pytest.mark.default_codegen
def test_two_processes_train_what_one_process_with_all_devices_trains(tmp_path, monkeypatch):
    # Every program into the session's compilation cache (tests/conftest.py), however quick to
    # compile: the resuming process reuses the single process's (two thirds of a run's CPU time).
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    data = _clips(tmp_path / "clips")
    port = free_port()
    two, one = tmp_path / "two", tmp_path / "one"
    dist = ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
    outs = check(run_processes(lambda i: [*_flags(data, two), *dist, "--process-id", str(i)],
                               count=2, devices=2, timeout_s=240))  # fmt: skip
    # Process 0 reports; process 1 prints no report (gloo's connection lines aside).
    assert "model saved to" in outs[0] and "test split" not in outs[1]
    (single,) = check(run_processes(lambda i: _flags(data, one), count=1, devices=4,
                                    timeout_s=240))  # fmt: skip
    _assert_close(_params(two), _params(one))
    # The retrieval figures process 0 printed are the single process's.
    assert _report(outs[0]) == _report(single)
    assert json.loads((two / "train_config.json").read_text())["process_count"] == 2

    # The state is replicated and the data order global: one process with 4 devices resumes
    # the 2-process run at step 2 and ends where the 2-process run ended.
    shutil.rmtree(two / "checkpoints" / "4")
    shutil.rmtree(two / "model")
    (resumed,) = check(run_processes(lambda i: [*_flags(data, two), "--resume"], count=1,
                                     devices=4, timeout_s=240))  # fmt: skip
    assert f"resumed {two} at step 2" in resumed
    _assert_close(_params(two), _params(one))


_AGREE = """
import json, sys
import jax
from mineclip_jax.distributed import DistributedConfig, agree, initialize
initialize(DistributedConfig(distributed=True, coordinator=sys.argv[1], num_processes=2,
                             process_id=int(sys.argv[2]), init_timeout_s=60))
mine = jax.process_index() == 1
print(json.dumps([agree(mine), agree(not mine)]))
"""


def test_agree_gives_every_process_the_decision_of_process_0():
    # What a time limit needs: process 1's clock says stop while process 0's does not (then the
    # reverse); both take process 0's branch.
    port = free_port()
    outs = check(run_processes(lambda i: ["-c", _AGREE, f"127.0.0.1:{port}", str(i)], count=2,
                               devices=1, timeout_s=120))  # fmt: skip
    assert [json.loads(o.strip().splitlines()[-1]) for o in outs] == [[False, True]] * 2

"""`python -m data.synthetic` simulates on every CPU core by default (XLA_FLAGS unset, as a user
runs it) and writes exactly the clips of a one-device run (`--no-all-cores`)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from envs.voxel.parallel import available_cores
from tests.multiprocess import REPO

_BUILD = """
import sys
from data.synthetic import SyntheticConfig, main
main(SyntheticConfig(out=sys.argv[1], all_cores=sys.argv[2] == "1", episodes=4, batch=2,
                     test_fraction=0.5, episode_ticks=40, height=16, width=24, world_size=16,
                     world_height=24, world_pool=1))
import jax
print("devices", len(jax.devices("cpu")))
"""


def _build(out, all_cores: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", _BUILD, str(out), str(int(all_cores))],
                          capture_output=True, text=True, timeout=300, env=env, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-1]


def test_every_core_by_default_and_the_same_clips_as_one_device(tmp_path):
    assert _build(tmp_path / "all", True) == f"devices {available_cores()}"
    assert _build(tmp_path / "one", False) == "devices 1"
    for split in ("train", "test"):
        for kind in ("frames", "tokens"):
            a = np.load(tmp_path / "all" / f"{split}_{kind}.npy")
            b = np.load(tmp_path / "one" / f"{split}_{kind}.npy")
            np.testing.assert_array_equal(a, b)
        jsonl = f"{split}_clips.jsonl"
        assert (tmp_path / "all" / jsonl).read_text() == (tmp_path / "one" / jsonl).read_text()

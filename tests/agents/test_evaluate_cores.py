"""`python -m agents.evaluate` steps the envs on every CPU core by default (XLA_FLAGS unset, as a
user runs it), `--no-all-cores` keeps one device, and a caller in which JAX has already started
is told once how to get the cores."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from envs.voxel.parallel import available_cores
from tests.multiprocess import REPO

CORES = available_cores()

_EVALUATE = """
from agents.evaluate import EvaluateConfig, main
world = ("render=false", "size_x=16", "size_y=16", "size_z=16", "sea_level=6",
         "world_pool_size=1", "num_trees=2")
def evaluate(all_cores):
    main(EvaluateConfig(tasks=("milk a cow",), episodes=2, num_envs=2, max_steps=3,
                        out_dir=OUT, env_options=world, all_cores=all_cores))
"""


def _run(body: str, out_dir) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # as a user starts it
    env["PYTHONPATH"] = str(REPO)
    script = _EVALUATE.replace("OUT", repr(str(out_dir))) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env, cwd=REPO)  # fmt: skip


def test_evaluate_uses_every_core_by_default(tmp_path):
    out = _run(
        """
        evaluate(all_cores=True)
        import jax
        print("devices", len(jax.devices("cpu")))
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-1] == f"devices {CORES}"
    assert "already started" not in out.stderr
    assert "milk_cow: 0/2 successes" in out.stdout


def test_no_all_cores_keeps_one_device_and_a_started_jax_is_told_once(tmp_path):
    out = _run(
        """
        evaluate(all_cores=False)  # JAX starts here, on one CPU device, silently
        import sys
        print("after the first run", file=sys.stderr)
        evaluate(all_cores=True)  # too late now: said once ...
        evaluate(all_cores=True)  # ... not twice
        import jax
        print("devices", len(jax.devices("cpu")))
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-1] == "devices 1"
    before, after = out.stderr.split("after the first run")
    assert "already started" not in before
    said = after.count("agents.evaluate: JAX had already started with one CPU device")
    assert said == (1 if CORES > 1 else 0)  # once, and only when there are cores to gain
    if CORES > 1:
        assert f"device_count={CORES}" in after and "--no-all-cores keeps one device" in after

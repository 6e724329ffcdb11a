"""envs.make / envs.make_vector in fresh interpreters: every CPU core by default, and a clear
failure (not a hang) in a child forked after JAX started (gymnasium's AsyncVectorEnv)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = (
    "dict(size_x=24, size_y=16, size_z=24, sea_level=6, num_trees=2, render=False, "
    "world_pool_size=1, max_mobs=6, max_initial_mobs=4)"
)
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _run(body: str, timeout_s: float = 180.0) -> subprocess.CompletedProcess:
    script = f"import sys\nsys.path.insert(0, {ROOT!r})\nSMALL = {SMALL}\n" + textwrap.dedent(body)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout_s, env=env
    )


def test_make_vector_uses_every_core_when_jax_has_not_started():
    out = _run(
        """
        import envs
        vec = envs.make_vector("hunt a cow", 4 * CORES, **SMALL)
        import jax
        print(len(jax.devices("cpu")), vec.mesh.devices.size)
        """.replace("CORES", str(CORES))
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(CORES), str(CORES)]
    assert "already started" not in out.stderr


def test_make_vector_says_once_how_to_get_the_cores_when_jax_has_started():
    out = _run(
        """
        import jax
        jax.numpy.zeros(1).block_until_ready()
        import envs
        for _ in range(2):
            vec = envs.make_vector("hunt a cow", 2, **SMALL)
        print(len(jax.devices("cpu")), vec.mesh.devices.size)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"]
    said = out.stderr.count("JAX had already started with one CPU device")
    assert said == (1 if CORES > 1 else 0)  # once, and only when there are cores to gain
    if CORES > 1:
        assert "use_cpu_cores()" in out.stderr and "device_count" in out.stderr


def test_async_vector_env_with_fork_fails_fast_with_a_clear_message():
    out = _run(
        """
        import gymnasium as gym
        import envs
        try:
            vec = gym.vector.AsyncVectorEnv([lambda: envs.make("hunt a cow", **SMALL)] * 2)
            vec.reset(seed=0)
        except Exception as err:
            print("raised", type(err).__name__, err)
        else:
            print("built")
        """,
        timeout_s=120.0,  # a hang (the old behaviour) fails here instead of blocking the suite
    )
    # the workers' reason reaches the caller (it used to see a bare BrokenPipeError)
    assert "raised RuntimeError" in out.stdout, (out.stdout, out.stderr)
    assert "forked from process" in out.stdout and "context='spawn'" in out.stdout

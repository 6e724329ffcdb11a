"""Env factories that `envs.bridge.ProcessVectorEnv` workers import by name (`--backend process`).

Kept import-light at module level (workers import it before anything else): JAX is imported
inside the factory, after the worker's JAX is pinned to the CPU so N workers do not each claim
the accelerator the learner runs on.
"""

from __future__ import annotations

import os

ENV_ID_VARIABLE = "MINECLIP_BRIDGE_ENV_ID"  # set by the bridge worker before it builds an env


def voxel_env(tasks, seed: int = 0, compile_cache: str | None = None, first_env: int = 0, **kw):
    """One embedded world for bridge env id i: task `tasks[(first_env + i) % len(tasks)]`,
    `envs.make(**kw)` (`first_env`: the global index of this vector env's env 0, under
    --distributed the process's first env).

    The env is reset and stepped once here, so its jitted functions compile during the worker's
    startup (covered by the bridge's startup deadline, not the per-step one)."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import numpy as np

    import envs
    from mineclip_jax import compile_cache as xla_cache

    # envs.make turns the cache on (mineclip_jax.compile_cache); a --compile-cache the user
    # chose ('' included) is this worker's choice too; the default leaves the variable in charge
    if compile_cache is not None and compile_cache != xla_cache.DEFAULT_DIR:
        os.environ[xla_cache.ENV_VAR] = compile_cache or "0"

    env_id = int(os.environ.get(ENV_ID_VARIABLE, "0"))
    env = envs.make(tasks[(first_env + env_id) % len(tasks)], seed=seed, **kw)
    env.reset(seed=seed)
    env.step(np.zeros(env.action_space.shape, np.int64))
    return env

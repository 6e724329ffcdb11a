"""A batch of embedded worlds spread over devices: one shard per CPU core, GPU or TPU chip.

On a CPU, XLA runs the renderer's per-tile loops on one thread, so a batch of worlds stepped by
one jitted call leaves the other cores idle. Exposing each core as a JAX device
(:func:`use_cpu_cores`, before JAX starts) and stepping the batch with :func:`sharded_step`
(``jax.shard_map``: each device steps its own slice of the envs, no communication) uses them
all; ``python -m benchmarks.voxel_throughput`` measures one device against all of them in the
same run. On accelerators the same function splits the batch over the local chips.

    import jax
    from envs.voxel import parallel
    parallel.use_cpu_cores()                 # right after `import jax`, before any computation
    mesh = parallel.env_mesh(num_envs=64)    # every local device that divides the batch
    step = parallel.sharded_step(mesh, static)
    obs, states, reward, terminated, truncated, info, final_obs = step(keys, states, actions, params)

``envs.make_vector(task, n, backend="voxel")`` does this itself when JAX has several devices.
"""

from __future__ import annotations

import functools
import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from envs.voxel import env as E
from envs.voxel.state import VoxelStaticConfig

AXIS = "envs"


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def restrict_cores(num_cores: int) -> tuple[int, ...]:
    """Run this process on the first `num_cores` cores of its affinity mask; returns them.

    XLA sizes its CPU thread pool from the mask when JAX starts (and envpool its workers when an
    env is made), so this must run before JAX executes anything, like `taskset -c`. Why: on a
    small CPU a program as small as a CartPole PPO update loses more to hand-offs between XLA's
    threads than the second core gives (README: 1.5x faster on one core of two), and two runs
    side by side each on their own cores stop competing for both."""
    from envs import _jax_started

    if not hasattr(os, "sched_setaffinity"):
        raise RuntimeError(
            "restricting the CPU cores needs os.sched_setaffinity (Linux); on this system run "
            "without it"
        )
    mask = sorted(os.sched_getaffinity(0))
    if not 1 <= num_cores <= len(mask):
        raise ValueError(
            f"cannot run on {num_cores} CPU core(s): this process may use {len(mask)} "
            f"({mask}); pass a number from 1 to {len(mask)}"
        )
    chosen = tuple(mask[:num_cores])
    if _jax_started():
        raise RuntimeError(
            "restrict_cores() must run before JAX executes anything (XLA has already sized its "
            "thread pool): call it right after the imports, or start Python under "
            f"`taskset -c {','.join(map(str, chosen))}`"
        )
    os.sched_setaffinity(0, chosen)
    return chosen


def use_cpu_cores(num_cores: int | None = None) -> int:
    """Expose `num_cores` CPU cores (default: all of this process's) as JAX CPU devices.

    Must run before JAX executes anything (it sets ``jax_num_cpu_devices``). It does not change
    the default backend: on a GPU/TPU machine ``jax.devices()`` still lists the accelerators.
    Returns the number of CPU devices requested."""
    if num_cores is None:
        num_cores = available_cores()
    if num_cores < 1:
        raise ValueError(f"num_cores must be >= 1, got {num_cores}")
    try:
        jax.config.update("jax_num_cpu_devices", int(num_cores))
    except RuntimeError as e:
        raise RuntimeError(
            "envs.voxel.parallel.use_cpu_cores() must run before JAX executes anything: call it "
            "right after `import jax` (or start Python with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={num_cores})"
        ) from e
    return int(num_cores)


def env_mesh(num_envs: int, devices=None) -> Mesh:
    """A 1-D mesh (axis ``"envs"``) over the most of `devices` (default: ``jax.local_devices()``)
    whose count divides `num_envs` (at least one device)."""
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    devices = list(jax.local_devices() if devices is None else devices)
    if not devices:
        raise ValueError("env_mesh: no devices given")
    n = max(k for k in range(1, len(devices) + 1) if num_envs % k == 0)
    return Mesh(np.array(devices[:n]), (AXIS,))


def env_sharding(mesh: Mesh) -> NamedSharding:
    """Where batched world states live: split along the env axis over the mesh."""
    return NamedSharding(mesh, P(AXIS))


def sharded_step(mesh: Mesh, static: VoxelStaticConfig):
    """``step_autoreset_batch`` with the env axis split over `mesh` (jitted, states donated).

    ``f(keys [N], states [N], actions [N, 8], params) -> (obs, states, reward, terminated,
    truncated, info, final_obs)``, all batched along axis 0 and sharded like the states; the
    params are replicated. N must be a multiple of the mesh size. Each device runs the same
    per-env computation as the unsharded call on its own envs."""
    return _sharded_step(mesh, static)


def shard_envs(local, mesh: Mesh):
    """``local(keys, states, actions, params)`` (a batched step of the envs it is given) run on
    each device of `mesh` for its own slice of the env axis (``jax.shard_map``, not jitted):
    keys, states and actions split along axis 0, params replicated, every output per env."""
    env, rep = P(AXIS), P()
    # check_vma=False: the world's loops start from constants (replicated) and carry per-env
    # values (varying); every output is per env, as out_specs says.
    return jax.shard_map(
        local, mesh=mesh, in_specs=(env, env, env, rep), out_specs=env, check_vma=False
    )


@functools.cache
def _sharded_step(mesh: Mesh, static: VoxelStaticConfig):
    def local(keys, states, actions, params):
        return E.step_autoreset_batch(keys, states, actions, params, static)

    f = shard_envs(local, mesh)
    size = mesh.devices.size

    def step(keys, states, actions, params):
        n = keys.shape[0]
        if n % size:
            raise ValueError(
                f"sharded_step: {n} envs cannot be split over {size} devices; use a multiple "
                f"of {size} envs or a smaller mesh (env_mesh(num_envs))"
            )
        return jitted(keys, states, actions, params)

    jitted = jax.jit(f, donate_argnums=(1,))
    return step

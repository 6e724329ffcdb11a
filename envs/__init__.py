"""Environments: MineDojo's spaces, the task catalogue, the embedded JAX world and the bridge.

    import envs
    env = envs.make("hunt a cow")                                  # embedded world, Gymnasium Env
    vec = envs.make_vector("hunt a cow", 64, render=False)         # one jitted call for all 64
    vec = envs.make_vector("harvest_milk_with_empty_bucket_and_cow", 8, backend="minedojo",
                           jar="/path/MalmoMod-0.37.0-fat.jar")    # MineDojo's Java simulator

``task`` is anything ``envs.tasks.get`` resolves: a ``TaskSpec``, one of the paper's 12 tasks
(id or prompt) or any catalogue id / prompt. Keyword arguments of the voxel backend are the
fields of ``envs.voxel.VoxelStaticConfig`` (``render``, ``height``, ``width``, ``size_x`` ...)
plus ``seed`` (an int in [0, 2**32 - 1]: world pool and episode keys), ``passive_mobs`` /
``max_steps`` / ``target`` (see ``envs.voxel.make_params``) and ``validate_actions`` (default
True: an invalid action raises, naming the component, its range and the value; False skips the
check for a trusted policy). The vector env auto-resets in the same step (Gymnasium
``AutoresetMode.SAME_STEP``; the finished episode's last observation is in
``infos["final_obs"]``) and, on a CPU, uses every core when JAX has not started yet.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

from envs.checks import check_seed

BACKENDS = ("voxel", "minedojo")

# Set in a child forked from a process whose JAX backends were running: JAX cannot run there
# (its threads did not survive the fork) and the first JAX call would hang forever.
_FORKED_AFTER_JAX_FROM: int | None = None
_SAID_CORES = False


def _jax_started() -> bool:
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
        return True


def _note_fork_in_child() -> None:
    global _FORKED_AFTER_JAX_FROM
    if _jax_started():
        _FORKED_AFTER_JAX_FROM = os.getppid()


os.register_at_fork(after_in_child=_note_fork_in_child)


def _forked_jax_message(task) -> str:
    return (
        f"envs.make({task!r}): this process was forked from process {_FORKED_AFTER_JAX_FROM}, "
        "in which JAX had already started, so the embedded world (JAX) would hang here. "
        "gymnasium.vector.AsyncVectorEnv forks by default after building an env in the parent: "
        "pass context='spawn' to it, or use envs.make_vector(task, n) (all envs in one jitted "
        "call, no processes), or envs.bridge.ProcessVectorEnv('envs:make', n, task=task) "
        "(spawned workers)."
    )


def _refuse_forked_jax(task) -> None:
    if _FORKED_AFTER_JAX_FROM is not None:
        raise RuntimeError(_forked_jax_message(task))


def _refused_env(task, kw: dict[str, Any]):
    """In a child forked after JAX started: an env with the spaces asked for whose reset and
    step raise `_forked_jax_message`. Gymnasium's AsyncVectorEnv builds a worker's env outside
    its error handling (an env that raises there kills the worker, and the caller sees a bare
    BrokenPipeError while the reason goes to the worker's stderr); raised from `reset`, the
    reason travels through its error queue and the caller's `reset` raises it. Where the world's
    modules were never loaded (importing them here could start JAX), it raises at once."""
    if "envs.voxel.gym_env" not in sys.modules:
        _refuse_forked_jax(task)
    import gymnasium as gym

    from envs import spaces
    from envs.voxel import gym_env

    fields = {f.name for f in dataclasses.fields(gym_env.VoxelStaticConfig)}
    static = gym_env.VoxelStaticConfig(**{k: v for k, v in kw.items() if k in fields})
    message = _forked_jax_message(task)

    class RefusedEnv(gym.Env):
        def __init__(self):
            self.observation_space = gym_env.observation_space(static)
            self.action_space = spaces.ACTION_SPACE

        def reset(self, *, seed=None, options=None):
            raise RuntimeError(message)

        def step(self, action):
            raise RuntimeError(message)

    return RefusedEnv()


def _use_every_core(devices) -> None:
    """Expose every CPU core as a JAX device if JAX has not started; say once if it has."""
    if devices != 1:
        use_every_core("envs.make_vector")


def use_every_core(who: str, off_flag: str = "", enabled: bool = True) -> None:
    """Expose every CPU core as a JAX device if JAX has not started and no count was chosen
    (XLA_FLAGS, ``jax_num_cpu_devices``); if JAX already runs on one CPU device, say once, naming
    `who`, how to get the cores (and `off_flag`, the CLI flag that keeps one device). CLIs call it
    first thing, with `enabled` False for that flag: then one CPU device is pinned (when JAX has
    not started), so that envs.make_vector does not take the cores either. Accelerators are
    unaffected."""
    global _SAID_CORES
    from envs.voxel import parallel

    cores = parallel.available_cores()
    if cores <= 1:
        return
    if not _jax_started():
        if "jax" not in sys.modules or not _cpu_devices_configured():
            parallel.use_cpu_cores(cores if enabled else 1)
        return
    if not enabled:
        return
    import jax

    if jax.default_backend() == "cpu" and len(jax.devices("cpu")) == 1 and not _SAID_CORES:
        _SAID_CORES = True
        print(
            f"{who}: JAX had already started with one CPU device, so the embedded "
            f"worlds run on 1 of this machine's {cores} cores. To use all of them, call "
            "envs.voxel.parallel.use_cpu_cores() right after `import jax` (before any JAX "
            f"computation), or start Python with XLA_FLAGS=--xla_force_host_platform_device_count"
            f"={cores}"
            + (f" ({off_flag} keeps one device and silences this)." if off_flag else "."),
            file=sys.stderr,
        )


def _enable_compile_cache() -> None:
    """A second process loads the world's compiled programs from disk instead of compiling them
    for minutes (`mineclip_jax.compile_cache`: MINECLIP_JAX_COMPILE_CACHE sets or turns it off).
    Imported here: `import envs` stays free of JAX and Flax for the bridge's workers."""
    from mineclip_jax import compile_cache

    compile_cache.enable()


def _cpu_devices_configured() -> bool:
    """Whether the user already chose a CPU device count (config or XLA_FLAGS)."""
    import jax

    flags = os.environ.get("XLA_FLAGS", "")
    return "xla_force_host_platform_device_count" in flags or jax.config.jax_num_cpu_devices > 0


def _voxel_parts(task, kw: dict[str, Any]):
    from envs.voxel import VoxelStaticConfig, make_params

    static_fields = {f.name for f in dataclasses.fields(VoxelStaticConfig)}
    static_kw = {k: kw.pop(k) for k in list(kw) if k in static_fields}
    seed = check_seed(kw.pop("seed", 0))
    validate_actions = kw.pop("validate_actions", True)
    param_kw = {k: kw.pop(k) for k in ("passive_mobs", "max_steps", "target", "pool") if k in kw}
    if kw:
        raise TypeError(
            f"unknown keyword arguments for the voxel backend: {sorted(kw)}; use fields of "
            f"VoxelStaticConfig {sorted(static_fields)}, seed, passive_mobs, max_steps, target, "
            "pool, validate_actions"
        )
    from envs import tasks

    spec = tasks.get(task)
    static = VoxelStaticConfig(**static_kw)
    params = make_params(spec, static, seed=seed, **param_kw)
    return spec, static, params, seed, validate_actions


def make(task, backend: str = "voxel", **kw):
    """A Gymnasium ``Env`` for ``task`` on ``backend`` ("voxel" or "minedojo")."""
    if backend == "voxel":
        if _FORKED_AFTER_JAX_FROM is not None:
            return _refused_env(task, kw)
        _enable_compile_cache()
        from envs.voxel.gym_env import VoxelEnv

        spec, static, params, seed, validate = _voxel_parts(task, dict(kw))
        return VoxelEnv(spec, static=static, params=params, seed=seed, validate_actions=validate)
    if backend == "minedojo":
        from envs.bridge.minedojo import make_env

        return make_env(task, **kw)
    raise ValueError(f"unknown backend {backend!r}; use one of {BACKENDS}")


def make_vector(task, num_envs: int, backend: str = "voxel", **kw):
    """A Gymnasium ``VectorEnv`` of ``num_envs`` copies of ``task`` on ``backend``.

    On the voxel backend the envs are split over the local devices; on a CPU, every core becomes
    a JAX device when JAX has not started yet (``envs.voxel.parallel.use_cpu_cores``). When it
    has, a one-time message says how to get the cores; ``devices=1`` keeps one device."""
    if backend == "voxel":
        _refuse_forked_jax(task)
        kw = dict(kw)
        devices = kw.pop("devices", None)
        _use_every_core(devices)
        _enable_compile_cache()
        from envs.voxel.gym_env import VoxelVectorEnv

        spec, static, params, seed, validate = _voxel_parts(task, kw)
        return VoxelVectorEnv(
            spec, num_envs, static=static, params=params, seed=seed, devices=devices,
            validate_actions=validate,
        )  # fmt: skip
    if backend == "minedojo":
        from envs.bridge.minedojo import make_minedojo_vector

        return make_minedojo_vector(task, num_envs, **kw)
    raise ValueError(f"unknown backend {backend!r}; use one of {BACKENDS}")

"""Environments: MineDojo's spaces, the task catalogue, the embedded JAX world and the bridge.

    import envs
    env = envs.make("hunt a cow")                                  # embedded world, Gymnasium Env
    vec = envs.make_vector("hunt a cow", 64, render=False)         # one jitted call for all 64
    vec = envs.make_vector("harvest_milk_with_empty_bucket_and_cow", 8, backend="minedojo",
                           jar="/path/MalmoMod-0.37.0-fat.jar")    # MineDojo's Java simulator

``task`` is anything ``envs.tasks.get`` resolves: a ``TaskSpec``, one of the paper's 12 tasks
(id or prompt) or any catalogue id / prompt. Keyword arguments of the voxel backend are the
fields of ``envs.voxel.VoxelStaticConfig`` (``render``, ``height``, ``width``, ``size_x`` ...)
plus ``seed`` (world pool and episode keys) and ``passive_mobs`` / ``max_steps`` / ``target``
(see ``envs.voxel.make_params``). The vector env auto-resets in the same step (Gymnasium
``AutoresetMode.SAME_STEP``; the finished episode's last observation is in
``infos["final_obs"]``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from envs.checks import check_seed

BACKENDS = ("voxel", "minedojo")


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
        from envs.voxel.gym_env import VoxelEnv

        spec, static, params, seed, validate = _voxel_parts(task, dict(kw))
        return VoxelEnv(spec, static=static, params=params, seed=seed, validate_actions=validate)
    if backend == "minedojo":
        from envs.bridge.minedojo import make_env

        return make_env(task, **kw)
    raise ValueError(f"unknown backend {backend!r}; use one of {BACKENDS}")


def make_vector(task, num_envs: int, backend: str = "voxel", **kw):
    """A Gymnasium ``VectorEnv`` of ``num_envs`` copies of ``task`` on ``backend``."""
    if backend == "voxel":
        from envs.voxel.gym_env import VoxelVectorEnv

        kw = dict(kw)
        devices = kw.pop("devices", None)
        spec, static, params, seed, validate = _voxel_parts(task, kw)
        return VoxelVectorEnv(
            spec, num_envs, static=static, params=params, seed=seed, devices=devices,
            validate_actions=validate,
        )  # fmt: skip
    if backend == "minedojo":
        from envs.bridge.minedojo import make_minedojo_vector

        return make_minedojo_vector(task, num_envs, **kw)
    raise ValueError(f"unknown backend {backend!r}; use one of {BACKENDS}")

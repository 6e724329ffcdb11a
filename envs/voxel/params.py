"""Task -> params: ``make_params`` turns a ``TaskSpec`` into the world's traced ``VoxelParams``
(initial inventory and mobs, spawn biome, time of day, the privileged target, physics constants).

A task with a ``specified_biome`` the generator can make a whole world of (``world_biome``) runs
on single-biome worlds, as MineDojo's ``BiomeGenerator`` gives it: the Mob-Combat and Animal-Zoo
tasks on plains without the Creative structures. Other tasks run on the mixed worlds.
"""

from __future__ import annotations

import functools
import zlib

import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.tasks.spec import TaskParams, TaskSpec
from envs.voxel import worldgen
from envs.voxel.state import VoxelParams, VoxelStaticConfig, WorldPool

NUM_RAW_SLOTS = 41
TARGET_NONE, TARGET_ENTITY, TARGET_PORTAL, TARGET_OCEAN, TARGET_HOUSE = range(5)
TARGET_KINDS = {"none": 0, "entity": 1, "portal": 2, "ocean": 3, "house": 4}


def world_biome(spec: TaskSpec) -> str | None:
    """The biome ``spec``'s worlds are made of (None: mixed worlds with the Creative structures).

    Creative tasks always get the mixed worlds their targets (ocean, portal, house) live in.
    """
    if spec.category == "creative" or spec.specified_biome not in worldgen.SINGLE_BIOMES:
        return None
    return spec.specified_biome


def pool_for(
    spec: TaskSpec, static: VoxelStaticConfig, seed: int = 0, pool: WorldPool | None = None
):
    """The world pool ``spec`` runs on: ``pool`` when it suits the task, else one generated.

    A task with a single-biome world (``world_biome``) given a pool that is not all that biome
    gets a pool of that biome instead, of the same size; its seed comes from the given pool's
    contents, so tasks sharing one pool share the derived worlds too and pools of different
    seeds (e.g. data splits) derive different worlds. Any pool suits a task without one.
    """
    biome = world_biome(spec)
    if pool is None:
        return worldgen.generate_pool(seed, static.world_pool_size or 1, static, biome)
    if biome is None or worldgen.pool_biome(pool) == worldgen.SINGLE_BIOMES[biome]:
        return pool
    derived_seed = zlib.crc32(np.asarray(pool.blocks).tobytes())
    return _derived_pool(derived_seed, pool.blocks.shape[0], static, biome)


@functools.lru_cache(maxsize=4)
def _derived_pool(seed: int, size: int, static: VoxelStaticConfig, biome: str) -> WorldPool:
    # Cached: every task of a group (and every scripted behaviour of data.synthetic) derives
    # the same pool from the same shared one.
    return worldgen.generate_pool(seed, size, static, biome)


def make_params(
    spec: TaskSpec,
    static: VoxelStaticConfig,
    *,
    seed: int = 0,
    pool: WorldPool | None = None,
    target: str | None = None,
    passive_mobs: int | None = None,
    max_steps: int | None = None,
) -> VoxelParams:
    """Traced parameters for ``spec`` on worlds of ``static``'s size.

    Args:
      spec: the task.
      static: world shape.
      seed: seed of the world pool (ignored when ``pool`` is given).
      pool: reuse an existing ``WorldPool`` (e.g. shared between tasks); a task whose worlds
        are of one biome replaces a pool that is not by one of that biome (see ``pool_for``).
      target: what the privileged target distance measures: "entity", "portal", "ocean",
        "house" or "none"; inferred from the task when None.
      passive_mobs: wandering passive animals added at reset (default: 4, or 0 for combat).
      max_steps: episode limit (default ``spec.max_steps``).
    """
    from envs.voxel.support import can_run

    ok, why = can_run(spec)
    if not ok:
        raise ValueError(f"task {spec.id!r} cannot run in the voxel world: {why}")
    pool = pool_for(spec, static, seed, pool)
    if pool.blocks.shape[1:] != (static.size_x, static.size_y, static.size_z):
        raise ValueError(
            f"world pool of shape {pool.blocks.shape[1:]} does not match the static world size "
            f"{(static.size_x, static.size_y, static.size_z)}"
        )
    slot_item = np.zeros(NUM_RAW_SLOTS, np.int32)
    slot_count = np.zeros(NUM_RAW_SLOTS, np.int32)
    for entry in spec.initial_inventory:
        slot_item[entry.slot_index] = spaces.item_id(entry.name)
        slot_count[entry.slot_index] = entry.quantity
    mobs = list(spec.initial_mobs)
    if len(mobs) > static.max_initial_mobs:
        raise ValueError(
            f"task {spec.id!r} asks for {len(mobs)} initial mobs; the world has "
            f"max_initial_mobs={static.max_initial_mobs} (raise it in VoxelStaticConfig)"
        )
    mob_type = np.zeros(static.max_initial_mobs, np.int32)
    mob_mask = np.zeros(static.max_initial_mobs, bool)
    for k, name in enumerate(mobs):
        mob_type[k] = spaces.entity_id(name)
        mob_mask[k] = True
    target_entity = np.zeros(spaces.NUM_ENTITIES, bool)
    if spec.category == "combat":
        for n in spec.target_names:
            target_entity[spaces.entity_id(n)] = True
    elif mobs:
        target_entity[spaces.entity_id(mobs[0])] = True  # the task's animal comes first
    if target is None:
        crit = spec.success
        if crit.kind == "reach" and "portal" in crit.names:
            target = "portal"
        elif crit.kind == "biome" and "ocean" in crit.names:
            target = "ocean"
        elif crit.kind == "place" and "carpet" in crit.names:
            target = "house"
        elif target_entity.any():
            target = "entity"
        else:
            target = "none"
    if target not in TARGET_KINDS:
        raise ValueError(f"unknown target {target!r}; use one of {sorted(TARGET_KINDS)}")
    if passive_mobs is None:
        passive_mobs = 0 if spec.category == "combat" else 4
    free = static.max_mobs - static.max_initial_mobs
    if not 0 <= passive_mobs <= free:
        raise ValueError(f"passive_mobs must be in [0, {free}] for max_mobs={static.max_mobs}")
    biome_spawn = np.zeros(spaces.NUM_BIOME_IDS, bool)
    if spec.specified_biome is not None:
        biome_spawn[spaces.biome_id(spec.specified_biome)] = True
    start = 18000 if spec.always_night else (13000 if spec.start_at_night else 1000)
    low = np.array(spec.initial_mob_spawn_range_low, np.float32)
    high = np.array(spec.initial_mob_spawn_range_high, np.float32)
    f = np.float32
    return VoxelParams(
        task=TaskParams.from_spec(spec, xp=jnp),
        pool=pool,
        max_steps=jnp.int32(max_steps or spec.max_steps),
        init_slot_item=jnp.asarray(slot_item),
        init_slot_count=jnp.asarray(slot_count),
        init_mob_type=jnp.asarray(mob_type),
        init_mob_mask=jnp.asarray(mob_mask),
        spawn_low=jnp.asarray(low),
        spawn_high=jnp.asarray(high),
        passive_mobs=jnp.int32(passive_mobs),
        allow_mob_spawn=jnp.bool_(spec.allow_mob_spawn),
        start_time=jnp.int32(start),
        freeze_time=jnp.bool_(spec.always_night),
        target_entity=jnp.asarray(target_entity),
        target_kind=jnp.int32(TARGET_KINDS[target]),
        biome_spawn=jnp.asarray(biome_spawn),
        gravity=jnp.asarray(f(0.08)),
        walk_speed=jnp.asarray(f(4.317 / 20)),
        sprint_speed=jnp.asarray(f(5.612 / 20)),
        sneak_speed=jnp.asarray(f(1.31 / 20)),
        jump_velocity=jnp.asarray(f(0.42)),
        block_reach=jnp.asarray(f(4.5)),
        attack_reach=jnp.asarray(f(3.0)),
        spawn_interval=jnp.int32(200),
        end_on_any_kill=jnp.bool_(spec.end_on_any_kill),
        # Creative tasks have no programmatic success in the paper (MineCLIP judges them): the
        # world's check is reported in info["success"] for evaluation but ends nothing.
        end_on_success=jnp.bool_(spec.category != "creative"),
    )

"""The embedded world's functional API: ``make_params``, ``reset``, ``step``, ``step_autoreset``.

Pure functions over ``VoxelState`` (a pytree); ``static`` (``VoxelStaticConfig``) is the only
static argument. One ``step`` is one game tick (50 ms; MineDojo's lock-step), whatever the
functional action (MineDojo's wrapper spends 2 hidden extra ticks on drop/craft/equip/place/
destroy; we apply their effect in the same tick, so there is no action lag).

Typical use::

    static = VoxelStaticConfig(render=False)
    params = make_params(envs.tasks.paper.get("hunt a cow"), static, seed=0)
    obs, state = reset(jax.random.key(0), params, static)
    step_fn = jax.jit(step, static_argnames="static")
    obs, state, reward, terminated, truncated, info = step_fn(key, state, action, params, static)

Simplifications versus Minecraft 1.11 (chosen for speed; none changes what the paper's tasks
need): drops go straight into the inventory; eating is instant; mobs move as points on the block
grid (auto-jumping one block) rather than as boxes; vertical speed is capped at 0.95 blocks/tick;
the crafting table / furnace that counts as "nearby" is the last one the player placed within 5
blocks (MineDojo likewise only counts tables placed during the episode); hostile mobs do not
burn in daylight; skeleton arrows hit instantly within 12 blocks.
"""

from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.tasks import spec as task_spec
from envs.tasks.spec import TaskParams, TaskSignals, TaskSpec
from envs.voxel import tables as T
from envs.voxel import worldgen
from envs.voxel.state import (
    Inventory,
    Mobs,
    Player,
    VoxelParams,
    VoxelState,
    VoxelStaticConfig,
    WorldPool,
)

B = T.B
F32 = jnp.float32
I32 = jnp.int32
TICKS_PER_DAY = 24000
PLAYER_HALF_WIDTH = 0.3
PLAYER_HEIGHT = 1.8
EYE_HEIGHT = 1.62
SNEAK_EYE_HEIGHT = 1.54
MAX_FALL_SPEED = 0.95
RAY_STEPS = 12  # DDA cells visited by the interaction ray (reach <= 6 blocks)
NUM_RAW_SLOTS = 41
_SPAWN_CANDIDATES = 64
TARGET_NONE, TARGET_ENTITY, TARGET_PORTAL, TARGET_OCEAN, TARGET_HOUSE = range(5)
_TARGET_KINDS = {"none": 0, "entity": 1, "portal": 2, "ocean": 3, "house": 4}


# =============================================================================================
# Params
# =============================================================================================


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
      pool: reuse an existing ``WorldPool`` (e.g. shared between tasks).
      target: what the privileged target distance measures: "entity", "portal", "ocean",
        "house" or "none"; inferred from the task when None.
      passive_mobs: wandering passive animals added at reset (default: 4, or 0 for combat).
      max_steps: episode limit (default ``spec.max_steps``).
    """
    from envs.voxel.support import can_run

    ok, why = can_run(spec)
    if not ok:
        raise ValueError(f"task {spec.id!r} cannot run in the voxel world: {why}")
    if pool is None:
        pool = worldgen.generate_pool(seed, static.world_pool_size or 1, static)
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
    if target not in _TARGET_KINDS:
        raise ValueError(f"unknown target {target!r}; use one of {sorted(_TARGET_KINDS)}")
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
        target_kind=jnp.int32(_TARGET_KINDS[target]),
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
    )


# =============================================================================================
# Grid helpers
# =============================================================================================


def _cell_value(blocks, cell):
    """Block id at integer cell(s) [..., 3]; below/beside the grid is bedrock, above is air."""
    sx, sy, sz = blocks.shape
    x, y, z = cell[..., 0], cell[..., 1], cell[..., 2]
    inside = (x >= 0) & (x < sx) & (y >= 0) & (y < sy) & (z >= 0) & (z < sz)
    v = blocks[jnp.clip(x, 0, sx - 1), jnp.clip(y, 0, sy - 1), jnp.clip(z, 0, sz - 1)]
    outside = jnp.where(y >= sy, jnp.uint8(B["air"]), jnp.uint8(B["bedrock"]))
    return jnp.where(inside, v, outside)


def _in_bounds(blocks, cell):
    sx, sy, sz = blocks.shape
    return (
        (cell[0] >= 0) & (cell[0] < sx) & (cell[1] >= 0) & (cell[1] < sy)
        & (cell[2] >= 0) & (cell[2] < sz)
    )  # fmt: skip


def _set_block(blocks, cell, value, enable):
    """blocks with ``cell`` set to ``value`` when ``enable`` (a no-op write otherwise)."""
    sx, sy, sz = blocks.shape
    c = jnp.clip(cell, 0, jnp.array([sx - 1, sy - 1, sz - 1]))
    old = blocks[c[0], c[1], c[2]]
    ok = enable & _in_bounds(blocks, cell)
    return blocks.at[c[0], c[1], c[2]].set(jnp.where(ok, jnp.uint8(value), old))


class _Table:
    """A NumPy lookup table indexed with JAX arrays. Kept in NumPy at import so that importing
    the world does not start JAX's backends (envs.voxel.parallel.use_cpu_cores must run first)."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __getitem__(self, index):
        return jnp.asarray(self.values)[index]


_SOLID = _Table(T.BLOCK_SOLID)
_LIQUID = _Table(T.BLOCK_LIQUID)


def _column_top(blocks, x, z):
    """Height of the highest solid or liquid block in column (x, z) (-1 if none)."""
    sx, sy, sz = blocks.shape
    col = blocks[jnp.clip(x, 0, sx - 1), :, jnp.clip(z, 0, sz - 1)]
    filled = _SOLID[col] | _LIQUID[col]
    ys = jnp.arange(sy)
    return jnp.max(jnp.where(filled, ys, -1))


# Cells overlapped by the player's box: 2 x 3 x 2 around the lower corner.
_BOX_OFFSETS = np.array([(dx, dy, dz) for dx in (0, 1) for dy in (0, 1, 2) for dz in (0, 1)])


def _player_collides(blocks, pos):
    lo = pos - jnp.array([PLAYER_HALF_WIDTH, 0.0, PLAYER_HALF_WIDTH])
    hi = pos + jnp.array([PLAYER_HALF_WIDTH, PLAYER_HEIGHT, PLAYER_HALF_WIDTH])
    lo_c = jnp.floor(lo + 1e-4).astype(I32)
    hi_c = jnp.floor(hi - 1e-4).astype(I32)
    cells = lo_c[None, :] + _BOX_OFFSETS
    valid = jnp.all(cells <= hi_c[None, :], axis=-1)
    return jnp.any(valid & _SOLID[_cell_value(blocks, cells)])


def _move_axis(blocks, pos, delta, axis: int):
    """Move the player's box by ``delta`` along ``axis``; snap against the first solid cell."""
    new = pos.at[axis].add(delta)
    hit = _player_collides(blocks, new) & (delta != 0)
    lo_ext = 0.0 if axis == 1 else PLAYER_HALF_WIDTH
    hi_ext = PLAYER_HEIGHT if axis == 1 else PLAYER_HALF_WIDTH
    eps = 1e-3
    up = jnp.floor(new[axis] + hi_ext) - hi_ext - eps
    down = jnp.floor(new[axis] - lo_ext) + 1.0 + lo_ext + eps
    snapped = new.at[axis].set(jnp.where(delta > 0, up, down))
    # If snapping still collides (e.g. a block appeared inside the box), stay put.
    snapped = jnp.where(_player_collides(blocks, snapped), pos, snapped)
    return jnp.where(hit, snapped, new), hit


def look_vector(yaw_deg, pitch_deg):
    """Unit view direction, Minecraft convention (yaw 0 -> +z, yaw 90 -> -x, pitch +90 down)."""
    yaw = jnp.deg2rad(yaw_deg)
    pitch = jnp.deg2rad(pitch_deg)
    return jnp.stack(
        [-jnp.sin(yaw) * jnp.cos(pitch), -jnp.sin(pitch), jnp.cos(yaw) * jnp.cos(pitch)], axis=-1
    )


def _eye(player):
    h = jnp.where(player.sneaking, SNEAK_EYE_HEIGHT, EYE_HEIGHT)
    return player.pos + jnp.array([0.0, 1.0, 0.0]) * h


def _raycast(blocks, origin, direction, reach, hit_mask):
    """First cell along the ray whose block is in ``hit_mask`` (Amanatides-Woo DDA).

    Returns (hit, cell, previous cell, distance). ``previous`` is the empty cell in front of the
    hit face, where a placed block goes.
    """
    d = jnp.where(jnp.abs(direction) < 1e-6, 1e-6, direction)
    cell = jnp.floor(origin).astype(I32)
    step = jnp.where(d > 0, 1, -1).astype(I32)
    next_boundary = jnp.where(d > 0, cell + 1.0, cell.astype(F32))
    t_max = (next_boundary - origin) / d
    t_delta = jnp.abs(1.0 / d)

    def body(_, carry):
        hit, cell, prev, t_hit, t_max = carry
        here = hit_mask[_cell_value(blocks, cell)]
        new_hit = (~hit) & here & (t_hit <= reach)
        axis = jnp.argmin(t_max)
        onehot = jnp.arange(3) == axis
        t_next = t_max[axis]
        moving = ~(hit | new_hit)
        next_cell = jnp.where(moving & onehot, cell + step, cell)
        next_prev = jnp.where(moving, cell, prev)
        next_t_hit = jnp.where(moving, t_next, t_hit)
        next_t_max = jnp.where(moving & onehot, t_max + t_delta, t_max)
        return hit | new_hit, next_cell, next_prev, next_t_hit, next_t_max

    init = (jnp.bool_(False), cell, cell, jnp.float32(0.0), t_max)
    hit, cell, prev, t_hit, _ = jax.lax.fori_loop(0, RAY_STEPS, body, init)
    return hit & (t_hit <= reach), cell, prev, t_hit


def _ray_mobs(mobs, origin, direction, reach):
    """Nearest alive mob whose box the ray enters within ``reach``: (hit, index, distance)."""
    half_w = jnp.asarray(T.MOB_WIDTH)[mobs.mob_type] / 2
    height = jnp.asarray(T.MOB_HEIGHT)[mobs.mob_type]
    lo = mobs.pos - jnp.stack([half_w, jnp.zeros_like(half_w), half_w], -1)
    hi = mobs.pos + jnp.stack([half_w, height, half_w], -1)
    d = jnp.where(jnp.abs(direction) < 1e-6, 1e-6, direction)
    t1 = (lo - origin) / d
    t2 = (hi - origin) / d
    t_near = jnp.max(jnp.minimum(t1, t2), axis=-1)
    t_far = jnp.min(jnp.maximum(t1, t2), axis=-1)
    hit = mobs.alive & (t_near <= t_far) & (t_far >= 0) & (t_near <= reach)
    t = jnp.where(hit, jnp.maximum(t_near, 0.0), jnp.inf)
    idx = jnp.argmin(t)
    return hit[idx], idx, t[idx]


# =============================================================================================
# Inventory helpers (main slots 0..35; 36..39 armour, 40 offhand)
# =============================================================================================

_MAX_STACK = _Table(T.ITEM_MAX_STACK)
_MAX_DUR = _Table(T.ITEM_MAX_DURABILITY)


def _inv_add(inv: Inventory, item, n):
    """Add ``n`` of ``item`` to the main slots: fill matching stacks, then empty slots."""
    n = jnp.where(item > 0, n, 0)
    cap = _MAX_STACK[item]
    items, counts = inv.item[:36], inv.count[:36]
    room = jnp.where((items == item) & (counts < cap), cap - counts, 0)
    take = jnp.clip(n - (jnp.cumsum(room) - room), 0, room)
    counts = counts + take
    left = n - take.sum()
    room2 = jnp.where(items == 0, cap, 0)
    take2 = jnp.clip(left - (jnp.cumsum(room2) - room2), 0, room2)
    new_slot = take2 > 0
    items = jnp.where(new_slot, item, items)
    counts = counts + take2
    dur = jnp.where(new_slot, _MAX_DUR[item], inv.durability[:36])
    return Inventory(
        item=inv.item.at[:36].set(items),
        count=inv.count.at[:36].set(counts),
        durability=inv.durability.at[:36].set(dur),
    )


def _inv_remove(inv: Inventory, item, n):
    """Remove ``n`` of ``item`` from the main slots (first slots first)."""
    items, counts = inv.item[:36], inv.count[:36]
    have = jnp.where(items == item, counts, 0)
    take = jnp.clip(n - (jnp.cumsum(have) - have), 0, have)
    counts = counts - take
    empty = counts <= 0
    return Inventory(
        item=inv.item.at[:36].set(jnp.where(empty, 0, items)),
        count=inv.count.at[:36].set(jnp.where(empty, 0, counts)),
        durability=inv.durability.at[:36].set(jnp.where(empty, -1, inv.durability[:36])),
    )


class _Txn:
    """Inventory changes collected during a step and applied once (removals first).

    At most one functional action acts per step, so the changes never depend on each other's
    order; applying them in two ``lax.scan`` loops keeps the compiled step small.
    """

    def __init__(self):
        self.removes: list = []
        self.adds: list = []

    def remove(self, item, n):
        self.removes.append(jnp.stack([jnp.asarray(item, I32), jnp.asarray(n, I32)]))

    def add(self, item, n):
        self.adds.append(jnp.stack([jnp.asarray(item, I32), jnp.asarray(n, I32)]))

    def apply(self, inv: Inventory) -> Inventory:
        for ops, fn in ((self.removes, _inv_remove), (self.adds, _inv_add)):
            if ops:
                inv, _ = jax.lax.scan(
                    lambda v, x, fn=fn: (fn(v, x[0], x[1]), None), inv, jnp.stack(ops)
                )
        return inv


def _inv_counts(inv: Inventory):
    """f32 [NUM_ITEMS]: total count of each item over all 41 slots (air = 0)."""
    c = jnp.zeros(spaces.NUM_ITEMS, F32).at[inv.item].add(inv.count.astype(F32))
    return c.at[0].set(0.0)


def _damage_held(inv: Inventory, amount):
    """Wear the main-hand item by ``amount``; it breaks at 0 durability."""
    dur = inv.durability[0]
    damageable = dur >= 0
    new = jnp.where(damageable, dur - amount, dur)
    broken = damageable & (new <= 0)
    return Inventory(
        item=inv.item.at[0].set(jnp.where(broken, 0, inv.item[0])),
        count=inv.count.at[0].set(jnp.where(broken, 0, inv.count[0])),
        durability=inv.durability.at[0].set(jnp.where(broken, -1, new)),
    )


def _armor_points(inv: Inventory):
    return jnp.asarray(T.ITEM_ARMOR)[inv.item[36:40]].sum()


# =============================================================================================
# Reset
# =============================================================================================


def _daylight(world_time):
    t = (world_time % TICKS_PER_DAY).astype(F32)
    return jnp.clip(jnp.cos((t - 6000.0) / TICKS_PER_DAY * 2 * jnp.pi) * 1.5 + 0.5, 0.0, 1.0)


def _surface_y(blocks, x, z):
    return (_column_top(blocks, x, z) + 1).astype(F32)


def _natural_top(block):
    """Ground a mob or the player may stand on (not a structure, tree or cactus)."""
    natural = jnp.asarray(
        np.isin(np.arange(T.NUM_BLOCK_TYPES),
                [B[n] for n in ("grass", "dirt", "sand", "stone", "gravel", "sandstone", "clay")])
    )  # fmt: skip
    return natural[block]


def _place_mobs(u, blocks, center, low, high, static):
    """Surface positions at offsets low + u * (high - low) (x, z) from ``center``.

    Of the offset and its three mirror images, the first over natural ground is used, so mobs
    do not start on roofs, tree tops or the portal frame.
    """
    off = low + u * (high - low)
    mirrors = jnp.array([[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]])
    cand_x = jnp.clip(center[0] + off[:, None, 0] * mirrors[None, :, 0], 0.5, static.size_x - 0.5)
    cand_z = jnp.clip(center[2] + off[:, None, 2] * mirrors[None, :, 1], 0.5, static.size_z - 0.5)
    xi, zi = jnp.floor(cand_x).astype(I32), jnp.floor(cand_z).astype(I32)
    tops = jax.vmap(jax.vmap(lambda a, b: _column_top(blocks, a, b)))(xi, zi)
    ok = _natural_top(blocks[xi, jnp.clip(tops, 0, static.size_y - 1), zi])
    k = jnp.argmax(ok, axis=1)  # 0 when none is natural
    pick = lambda a: jnp.take_along_axis(a, k[:, None], axis=1)[:, 0]  # noqa: E731
    return jnp.stack([pick(cand_x), pick(tops).astype(F32) + 1.0, pick(cand_z)], -1)


def _new_mobs(u, blocks, player_pos, params: VoxelParams, static: VoxelStaticConfig) -> Mobs:
    mm0 = static.max_mobs
    u_init, u_pass, u_type, u_yaw, u_timer = (
        u[: 3 * static.max_initial_mobs].reshape(-1, 3),
        u[3 * mm0 : 6 * mm0].reshape(-1, 3)[: mm0 - static.max_initial_mobs],
        u[6 * mm0 : 7 * mm0],
        u[7 * mm0 : 8 * mm0],
        u[8 * mm0 : 9 * mm0],
    )
    mi, mm = static.max_initial_mobs, static.max_mobs
    init_pos = _place_mobs(
        u_init, blocks, player_pos, params.spawn_low, params.spawn_high, static,
    )  # fmt: skip
    n_pass = mm - mi
    passive_types = jnp.floor(u_type[:n_pass] * 4).astype(I32)  # cow, sheep, pig, chicken
    pass_pos = _place_mobs(
        u_pass, blocks, player_pos,
        jnp.array([-16.0, 0.0, -16.0]), jnp.array([16.0, 0.0, 16.0]), static,
    )  # fmt: skip
    pass_alive = jnp.arange(n_pass) < params.passive_mobs
    mob_type = jnp.concatenate([params.init_mob_type, passive_types]).astype(I32)
    alive = jnp.concatenate([params.init_mob_mask, pass_alive])
    pos = jnp.concatenate([init_pos, pass_pos])
    health = jnp.asarray(T.MOB_HEALTH)[mob_type]
    z_f = jnp.zeros(mm, F32)
    z_i = jnp.zeros(mm, I32)
    return Mobs(
        pos=pos,
        vel_y=z_f,
        yaw=u_yaw * 360.0 - 180.0,
        mob_type=mob_type,
        alive=alive,
        health=health,
        hurt=z_f,
        immune=z_i,
        ai_timer=jnp.floor(u_timer * 60).astype(I32),
        walking=jnp.zeros(mm, bool),
        flee=z_i,
        angry=jnp.zeros(mm, bool),
        cooldown=z_i,
        variant=z_i,
        regrow=z_i,
    )


def _choose_spawn(u, world, params: VoxelParams, static: VoxelStaticConfig):
    """A dry land column, preferring the task's biome; near the world centre if possible."""
    n = _SPAWN_CANDIDATES
    margin_x, margin_z = static.size_x // 6, static.size_z // 6
    xs = margin_x + jnp.floor(u[:n] * (static.size_x - 2 * margin_x)).astype(I32)
    zs = margin_z + jnp.floor(u[n : 2 * n] * (static.size_z - 2 * margin_z)).astype(I32)
    blocks = world.blocks
    tops = jax.vmap(lambda x, z: _column_top(blocks, x, z))(xs, zs)
    top_block = blocks[xs, jnp.clip(tops, 0, static.size_y - 1), zs]
    dry = (
        _SOLID[top_block] & (top_block != B["leaves"]) & (top_block != B["log"])
        & (top_block != B["cactus"]) & (tops < static.size_y - 3) & (tops >= 0)
    )  # fmt: skip
    # Not on or in the structures (house roof, portal frame): natural ground only.
    structure = (top_block == B["planks"]) | (top_block == B["cobblestone"])
    structure = structure | (top_block == B["obsidian"])
    hx0, hz0, hx1, hz1 = (
        world.house_floor[0],
        world.house_floor[1],
        world.house_floor[2],
        world.house_floor[3],
    )
    in_house = (xs >= hx0 - 4) & (xs <= hx1 + 4) & (zs >= hz0 - 4) & (zs <= hz1 + 4)
    dry = dry & ~structure & ~in_house
    in_biome = params.biome_spawn[world.biome[xs, zs]]
    want_biome = params.biome_spawn.any()
    score = dry.astype(I32) * 2 + (in_biome | ~want_biome).astype(I32) * 4
    # Open sky above the spawn column keeps the player out of the house and portal frame.
    k = jnp.argmax(score)
    return jnp.array([xs[k] + 0.5, tops[k] + 1.0, zs[k] + 0.5], F32)


def _house_centre(state: VoxelState):
    """The point above the middle of the house floor (the house target)."""
    return jnp.array(
        [(state.house[0] + state.house[2] + 1) / 2, state.house_floor_y + 1.0,
         (state.house[1] + state.house[3] + 1) / 2], F32,
    )  # fmt: skip


def _signals(state: VoxelState, params: VoxelParams, attack_hit_target=None) -> TaskSignals:
    """TaskSignals of ``state`` (target distance and visibility from privileged state)."""
    p = state.player
    sx, sz = state.blocks.shape[0], state.blocks.shape[2]
    xi = jnp.clip(jnp.floor(p.pos[0]).astype(I32), 0, sx - 1)
    zi = jnp.clip(jnp.floor(p.pos[2]).astype(I32), 0, sz - 1)
    look = look_vector(p.yaw, 0.0)

    def in_front(delta):
        flat = delta * jnp.array([1.0, 0.0, 1.0])
        norm = jnp.linalg.norm(flat) + 1e-6
        return jnp.dot(flat / norm, look) > 0.5  # within 60 degrees of the view direction

    # Entity targets.
    mobs = state.mobs
    is_target = mobs.alive & params.target_entity[mobs.mob_type]
    deltas = mobs.pos - p.pos
    dists = jnp.where(is_target, jnp.linalg.norm(deltas, axis=-1), task_spec.FAR)
    k = jnp.argmin(dists)
    ent_d = dists[k]
    ent_v = is_target[k] & in_front(deltas[k]) & (ent_d <= 32.0)
    portal_delta = state.portal_center - (p.pos + jnp.array([0.0, 1.0, 0.0]))
    portal_d = jnp.linalg.norm(portal_delta)
    ocean_d = state.ocean_distance[xi, zi]
    house_c = _house_centre(state)
    house_d = jnp.linalg.norm(house_c - p.pos)
    kind = params.target_kind
    dist = jnp.select(
        [kind == TARGET_ENTITY, kind == TARGET_PORTAL, kind == TARGET_OCEAN, kind == TARGET_HOUSE],
        [ent_d, portal_d, ocean_d, house_d],
        task_spec.FAR,
    ).astype(F32)
    visible = jnp.select(
        [kind == TARGET_ENTITY, kind == TARGET_PORTAL, kind == TARGET_OCEAN, kind == TARGET_HOUSE],
        [ent_v, in_front(portal_delta), jnp.bool_(True), in_front(house_c - p.pos)],
        jnp.bool_(False),
    )
    if attack_hit_target is None:
        attack_hit_target = jnp.bool_(False)
    return TaskSignals(
        inventory=_inv_counts(state.inv),
        kills=state.stats_kills,
        uses=state.stats_uses,
        crafts=state.stats_crafts,
        mines=state.stats_mines,
        places=state.stats_places,
        ticks_alive=state.ticks,
        pos=p.pos,
        biome_id=state.biome[xi, zi],
        target_distance=dist,
        target_visible=visible,
        best_target_distance=state.best_target_distance,
        attack_hit_target=attack_hit_target,
    )


TARGET_FEATURES = (
    "exists", "sin_yaw_error", "cos_yaw_error", "pitch_error", "distance", "in_reach",
    "fleeing", "immune", "health", "in_view", "screen_x", "screen_y",
)  # fmt: skip
NUM_TARGET_FEATURES = len(TARGET_FEATURES)


def target_features(state: VoxelState, params: VoxelParams, static: VoxelStaticConfig):
    """Privileged features of the task's target, f32 [NUM_TARGET_FEATURES] (``TARGET_FEATURES``).

    For learners that may use simulator state at training time but not in the policy (an
    asymmetric critic, auxiliary prediction targets). The target is the nearest alive target
    mob (aimed at its centre), the portal or the house; an ocean target or none gives
    ``exists = 0`` and zeros. ``*_yaw_error`` is the turn from the view direction to the
    target, ``pitch_error`` the pitch change to aim at it (degrees / 90, positive = look
    down, clipped to [-1, 1]), ``distance`` eye-to-target in blocks / 32 (clipped to 1),
    ``in_reach`` whether it is within attack reach; for mobs ``fleeing`` / ``immune`` (just
    hit) and ``health`` as a fraction of the mob's full health. ``in_view`` is whether the
    target point projects into the rendered frame (``static``'s field of view and aspect;
    blocks in between are not considered) and ``screen_x`` / ``screen_y`` where, in [-1, 1]
    (right and up positive; 0 when out of view).
    """
    p = state.player
    mobs = state.mobs
    eye = _eye(p)
    t = mobs.mob_type
    centre = mobs.pos + jnp.asarray(T.MOB_HEIGHT)[t][:, None] * jnp.array([0.0, 0.5, 0.0])
    is_target = mobs.alive & params.target_entity[t]
    dists = jnp.where(is_target, jnp.linalg.norm(centre - eye, axis=-1), jnp.inf)
    k = jnp.argmin(dists)
    house_c = _house_centre(state)
    kind = params.target_kind
    point = jnp.select(
        [kind == TARGET_ENTITY, kind == TARGET_PORTAL], [centre[k], state.portal_center], house_c
    )
    exists = jnp.select(
        [kind == TARGET_ENTITY, kind == TARGET_PORTAL, kind == TARGET_HOUSE],
        [is_target[k], jnp.bool_(True), jnp.bool_(True)],
        jnp.bool_(False),
    )
    rel = point - eye
    dist = jnp.linalg.norm(rel)
    horizontal = jnp.linalg.norm(rel * jnp.array([1.0, 0.0, 1.0]))
    yaw_to = jnp.rad2deg(jnp.arctan2(-rel[0], rel[2]))
    yaw_err = jnp.deg2rad(yaw_to - p.yaw)
    pitch_to = -jnp.rad2deg(jnp.arctan2(rel[1], horizontal))
    is_mob = exists & (kind == TARGET_ENTITY)
    # Camera frame: yaw-rotated (forward, right, up), then pitched (+pitch looks down).
    yaw, pitch = jnp.deg2rad(p.yaw), jnp.deg2rad(p.pitch)
    fwd_h = -rel[0] * jnp.sin(yaw) + rel[2] * jnp.cos(yaw)
    right = -rel[0] * jnp.cos(yaw) - rel[2] * jnp.sin(yaw)
    depth = fwd_h * jnp.cos(pitch) - rel[1] * jnp.sin(pitch)
    up = fwd_h * jnp.sin(pitch) + rel[1] * jnp.cos(pitch)
    tan_v = math.tan(math.radians(static.fov_deg) / 2)
    tan_h = tan_v * static.width / static.height  # square pixels: one focal length
    safe = jnp.maximum(depth, 1e-6)
    sx, sy = right / safe / tan_h, up / safe / tan_v
    in_view = (depth > 1e-3) & (jnp.abs(sx) <= 1.0) & (jnp.abs(sy) <= 1.0)
    feats = jnp.stack([
        jnp.float32(1.0),
        jnp.sin(yaw_err),
        jnp.cos(yaw_err),
        jnp.clip((pitch_to - p.pitch) / 90.0, -1.0, 1.0),
        jnp.minimum(dist / 32.0, 1.0),
        (dist <= params.attack_reach).astype(F32),
        jnp.where(is_mob, (mobs.flee[k] > 0).astype(F32), 0.0),
        jnp.where(is_mob, (mobs.immune[k] > 0).astype(F32), 0.0),
        jnp.where(is_mob, mobs.health[k] / jnp.asarray(T.MOB_HEALTH)[t[k]], 0.0),
        in_view.astype(F32),
        jnp.where(in_view, sx, 0.0),
        jnp.where(in_view, sy, 0.0),
    ]).astype(F32)  # fmt: skip
    return jnp.where(exists, feats, jnp.zeros_like(feats))


def reset(key, params: VoxelParams, static: VoxelStaticConfig):
    """A new episode: a world from the pool, a spawn point, inventory and mobs. -> (obs, state)"""
    # One draw of uniforms for everything random at reset (few RNG ops keep compiles short).
    mm = static.max_mobs
    u = jax.random.uniform(key, (1 + 2 * _SPAWN_CANDIDATES + 9 * mm,))
    k_spawn, k_mobs = u[1 : 1 + 2 * _SPAWN_CANDIDATES], u[1 + 2 * _SPAWN_CANDIDATES :]
    pool_size = params.pool.blocks.shape[0]
    w = jnp.minimum(jnp.floor(u[0] * pool_size).astype(I32), pool_size - 1)
    world = jax.tree.map(lambda a: a[w], params.pool)
    pos = _choose_spawn(k_spawn, world, params, static)
    player = Player(
        pos=pos,
        vel=jnp.zeros(3, F32),
        yaw=jnp.float32(0.0),
        pitch=jnp.float32(0.0),
        on_ground=jnp.bool_(True),
        fall_distance=jnp.float32(0.0),
        health=jnp.float32(20.0),
        food=jnp.float32(20.0),
        saturation=jnp.float32(5.0),
        exhaustion=jnp.float32(0.0),
        oxygen=jnp.float32(300.0),
        regen_timer=jnp.int32(0),
        hurt_time=jnp.int32(0),
        sneaking=jnp.bool_(False),
        last_damage=jnp.float32(0.0),
        last_damage_yaw=jnp.float32(0.0),
        last_damage_dist=jnp.float32(0.0),
    )
    items = params.init_slot_item
    inv = Inventory(
        item=items,
        count=params.init_slot_count,
        durability=jnp.where(items > 0, _MAX_DUR[items], -1),
    )
    mobs = _new_mobs(k_mobs, world.blocks, pos, params, static)
    zeros_items = jnp.zeros(spaces.NUM_ITEMS, F32)
    state = VoxelState(
        blocks=world.blocks,
        biome=world.biome,
        ocean_distance=world.ocean_distance,
        portal_center=world.portal_center,
        house=world.house_floor,
        house_floor_y=world.house_floor_y,
        player=player,
        inv=inv,
        mobs=mobs,
        world_time=params.start_time,
        ticks=jnp.int32(0),
        steps=jnp.int32(0),
        mine_target=jnp.full(3, -1, I32),
        mine_progress=jnp.float32(0.0),
        table_pos=jnp.full(3, -1, I32),
        furnace_pos=jnp.full(3, -1, I32),
        stats_kills=jnp.zeros(spaces.NUM_ENTITIES, F32),
        stats_uses=zeros_items,
        stats_crafts=zeros_items,
        stats_mines=zeros_items,
        stats_places=zeros_items,
        best_target_distance=jnp.float32(task_spec.FAR),
        initial_signals=TaskSignals.zeros(xp=jnp),
        prev_signals=TaskSignals.zeros(xp=jnp),
    )
    sig = _signals(state, params)
    best = jnp.where(sig.target_visible, sig.target_distance, task_spec.FAR)
    sig = sig.replace(best_target_distance=best)
    state = state.replace(best_target_distance=best, initial_signals=sig, prev_signals=sig)
    return observe(state, params, static), state


# =============================================================================================
# Step
# =============================================================================================


def _update_player_motion(state: VoxelState, action, params: VoxelParams):
    p = state.player
    blocks = state.blocks
    yaw = p.yaw + (action[4] - spaces.CAMERA_NOOP_BIN).astype(F32) * spaces.CAMERA_BIN_DEG
    yaw = (yaw + 180.0) % 360.0 - 180.0
    pitch = jnp.clip(
        p.pitch + (action[3] - spaces.CAMERA_NOOP_BIN).astype(F32) * spaces.CAMERA_BIN_DEG,
        -90.0,
        90.0,
    )
    fwd = (action[0] == 1).astype(F32) - (action[0] == 2).astype(F32)
    left = (action[1] == 1).astype(F32) - (action[1] == 2).astype(F32)
    jump = action[2] == 1
    sneak = action[2] == 2
    sprint = (action[2] == 3) & (fwd > 0) & (p.food > 6.0)
    body_cell = jnp.floor(p.pos + jnp.array([0.0, 0.4, 0.0])).astype(I32)
    in_water = _LIQUID[_cell_value(blocks, body_cell)]
    speed = jnp.where(
        in_water,
        0.1,
        jnp.where(
            sneak, params.sneak_speed, jnp.where(sprint, params.sprint_speed, params.walk_speed)
        ),
    )
    r = jnp.deg2rad(yaw)
    forward_v = jnp.array([-jnp.sin(r), 0.0, jnp.cos(r)])
    left_v = jnp.array([jnp.cos(r), 0.0, jnp.sin(r)])
    wish = fwd * forward_v + left * left_v
    wish = wish / jnp.maximum(jnp.linalg.norm(wish), 1.0)
    vel_xz = wish * speed
    vy = p.vel[1]
    vy = jnp.where(
        in_water,
        vy * 0.8 - 0.02 + jnp.where(jump, 0.06, 0.0),
        jnp.where(p.on_ground & jump, params.jump_velocity, (vy - params.gravity) * 0.98),
    )
    vy = jnp.clip(vy, -MAX_FALL_SPEED, MAX_FALL_SPEED)
    pos, hit_y = _move_axis(blocks, p.pos, vy, 1)
    pos, _ = _move_axis(blocks, pos, vel_xz[0], 0)
    pos, _ = _move_axis(blocks, pos, vel_xz[2], 2)
    landed = hit_y & (vy < 0)
    vy = jnp.where(hit_y, 0.0, vy)
    dy = pos[1] - p.pos[1]
    fall = jnp.where(in_water, 0.0, jnp.where(dy < 0, p.fall_distance - dy, p.fall_distance))
    fall_damage = jnp.where(landed, jnp.maximum(0.0, jnp.ceil(fall - 3.0)), 0.0)
    fall = jnp.where(landed | (dy > 0), 0.0, fall)
    moved = jnp.linalg.norm((pos - p.pos) * jnp.array([1.0, 0.0, 1.0]))
    exhaustion = (
        p.exhaustion
        + jnp.where(sprint, 0.1 * moved, 0.0)
        + jnp.where(p.on_ground & jump & ~in_water, jnp.where(sprint, 0.2, 0.05), 0.0)
    )
    player = p.replace(
        pos=pos,
        vel=jnp.array([vel_xz[0], vy, vel_xz[2]]),
        yaw=yaw,
        pitch=pitch,
        on_ground=landed | (hit_y & (vy == 0) & p.on_ground),
        fall_distance=fall,
        exhaustion=exhaustion,
        sneaking=sneak,
    )
    return player, fall_damage, in_water


def _hurt_player(player: Player, inv: Inventory, amount, from_pos):
    """Apply ``amount`` damage reduced by armour; sets damage observation fields."""
    reduced = amount * (1.0 - jnp.minimum(_armor_points(inv), 20.0) / 25.0)
    delta = from_pos - player.pos
    return player.replace(
        health=player.health - reduced,
        exhaustion=player.exhaustion + jnp.where(amount > 0, 0.1, 0.0),
        last_damage=player.last_damage + reduced,
        last_damage_yaw=jnp.where(
            amount > 0, jnp.rad2deg(jnp.arctan2(-delta[0], delta[2])), player.last_damage_yaw
        ),
        last_damage_dist=jnp.where(amount > 0, jnp.linalg.norm(delta), player.last_damage_dist),
    )


def _nearby(state: VoxelState, pos_field, block):
    cell = pos_field
    ok = (cell[0] >= 0) & (_cell_value(state.blocks, cell) == block)
    d = jnp.linalg.norm(cell.astype(F32) + 0.5 - _eye(state.player))
    return ok & (d <= 5.0)


def _recipe_ok(counts, table_ok, furnace_ok):
    """bool [NUM_RECIPES]: ingredients, station and (for smelting) fuel available."""
    need = jnp.asarray(T.RECIPE_IN_N)
    have = counts[jnp.asarray(T.RECIPE_IN)]
    ingredients = jnp.all(have >= need, axis=-1)
    station = jnp.asarray(T.RECIPE_STATION)
    fuel_items = jnp.asarray(T.FUEL_ITEMS)
    # Fuel must be available beyond what the recipe itself consumes (e.g. smelting a log).
    uses_fuel = (jnp.asarray(T.RECIPE_IN)[:, :, None] == fuel_items[None, None, :]) * need[
        :, :, None
    ]
    fuel_left = counts[fuel_items][None, :] - uses_fuel.sum(1)
    has_fuel = jnp.any(fuel_left >= 1, axis=-1)
    station_ok = jnp.select(
        [station == T.STATION_TABLE, station == T.STATION_FURNACE],
        [table_ok, furnace_ok & has_fuel],
        True,
    )
    return ingredients & station_ok


def _craft(state: VoxelState, arg, enable, txn: _Txn):
    inv = state.inv
    counts = _inv_counts(inv)
    table_ok = _nearby(state, state.table_pos, B["crafting_table"])
    furnace_ok = _nearby(state, state.furnace_pos, B["furnace"])
    r = jnp.asarray(T.CRAFT_ARG_TO_RECIPE)[arg]
    rc = jnp.maximum(r, 0)
    ok = enable & (r >= 0) & _recipe_ok(counts, table_ok, furnace_ok)[rc]
    out = jnp.asarray(T.RECIPE_OUT)[rc]
    n_out = jnp.asarray(T.RECIPE_COUNT)[rc]
    for k in range(T.MAX_INGREDIENTS):
        txn.remove(jnp.asarray(T.RECIPE_IN)[rc, k],
                          jnp.where(ok, jnp.asarray(T.RECIPE_IN_N)[rc, k], 0))  # fmt: skip
    # Smelting burns one unit of the first fuel available (coal, then log, then planks).
    is_smelt = jnp.asarray(T.RECIPE_STATION)[rc] == T.STATION_FURNACE
    fuel_items = jnp.asarray(T.FUEL_ITEMS)
    ins, ns = jnp.asarray(T.RECIPE_IN)[rc], jnp.asarray(T.RECIPE_IN_N)[rc]
    eaten = jnp.sum((ins[:, None] == fuel_items[None, :]) * ns[:, None], axis=0)
    have_fuel = counts[fuel_items] - eaten >= 1  # fuel left after the ingredients
    fuel = fuel_items[jnp.argmax(have_fuel)]
    txn.remove(fuel, jnp.where(ok & is_smelt, 1, 0))
    txn.add(out, jnp.where(ok, n_out, 0))
    crafts = state.stats_crafts.at[out].add(jnp.where(ok, n_out, 0).astype(F32))
    return state.replace(inv=inv, stats_crafts=crafts)


def _craft_apply(state: VoxelState, arg):
    """Craft argument ``arg`` now if possible (``_craft`` with its inventory changes applied)."""
    txn = _Txn()
    state = _craft(state, arg, True, txn)
    return state.replace(inv=txn.apply(state.inv))


def _equip(inv: Inventory, slot, enable):
    item = inv.item[slot]
    armor_slot = jnp.asarray(T.ITEM_ARMOR_SLOT)[item]
    dest = jnp.where(armor_slot >= 0, 36 + armor_slot, 0)
    ok = enable & (item > 0) & (slot != dest)

    def swap(a):
        a_slot, a_dest = a[slot], a[dest]
        a = a.at[slot].set(jnp.where(ok, a_dest, a_slot))
        return a.at[dest].set(jnp.where(ok, a_slot, a_dest))

    return Inventory(item=swap(inv.item), count=swap(inv.count), durability=swap(inv.durability))


def _place(state: VoxelState, slot, target_hit, place_cell, enable):
    """Place the block item in ``slot`` into ``place_cell`` (the free cell at the hit face)."""
    inv = state.inv
    item = inv.item[slot]
    block = jnp.asarray(T.ITEM_PLACES)[item]
    current = _cell_value(state.blocks, place_cell)
    solid = _SOLID[block]
    # A solid block may not be placed into the player's box or a mob's cell.
    cell_lo = place_cell.astype(F32)
    p = state.player.pos
    player_overlap = jnp.all(
        (cell_lo < p + jnp.array([PLAYER_HALF_WIDTH, PLAYER_HEIGHT, PLAYER_HALF_WIDTH]))
        & (cell_lo + 1.0 > p - jnp.array([PLAYER_HALF_WIDTH, 0.0, PLAYER_HALF_WIDTH]))
    )
    mob_cells = jnp.floor(state.mobs.pos).astype(I32)
    mob_overlap = jnp.any(state.mobs.alive & jnp.all(mob_cells == place_cell[None, :], axis=-1))
    # Non-solid attachments (carpet, torch, flowers) need solid ground below.
    below = _cell_value(state.blocks, place_cell - jnp.array([0, 1, 0]))
    supported = solid | _SOLID[below]
    ok = (
        enable & target_hit & (block > 0) & (inv.count[slot] > 0)
        & jnp.asarray(T.BLOCK_REPLACEABLE)[current] & _in_bounds(state.blocks, place_cell)
        & ~(solid & (player_overlap | mob_overlap)) & supported
    )  # fmt: skip
    blocks = _set_block(state.blocks, place_cell, block, ok)
    count = inv.count.at[slot].add(jnp.where(ok, -1, 0))
    emptied = count[slot] <= 0
    inv = Inventory(
        item=inv.item.at[slot].set(jnp.where(emptied, 0, inv.item[slot])),
        count=count.at[slot].set(jnp.maximum(count[slot], 0)),
        durability=inv.durability.at[slot].set(jnp.where(emptied, -1, inv.durability[slot])),
    )
    add = jnp.where(ok, 1.0, 0.0)
    return state.replace(
        blocks=blocks,
        inv=inv,
        stats_places=state.stats_places.at[item].add(add),
        stats_uses=state.stats_uses.at[item].add(add),
        table_pos=jnp.where(ok & (block == B["crafting_table"]), place_cell, state.table_pos),
        furnace_pos=jnp.where(ok & (block == B["furnace"]), place_cell, state.furnace_pos),
    ), ok


def _attack_mob(state: VoxelState, u, idx, enable, params: VoxelParams, txn: _Txn):
    """Melee hit on mob ``idx``: damage, knockback, flee/anger, death, drops, stats."""
    mobs = state.mobs
    held = state.inv.item[0]
    dmg = jnp.asarray(T.ITEM_DAMAGE)[held]
    can = enable & mobs.alive[idx] & (mobs.immune[idx] <= 0)
    health = mobs.health[idx] - jnp.where(can, dmg, 0.0)
    dies = can & (health <= 0)
    t = mobs.mob_type[idx]
    away = mobs.pos[idx] - state.player.pos
    away = away.at[1].set(0.0)
    away = away / (jnp.linalg.norm(away) + 1e-6)
    knock = mobs.pos[idx] + away * 0.4
    knock_cell = jnp.floor(knock + jnp.array([0.0, 0.1, 0.0])).astype(I32)
    knock_ok = ~_SOLID[_cell_value(state.blocks, knock_cell)]
    new_pos = jnp.where(can & knock_ok & ~dies, knock, mobs.pos[idx])
    mobs = mobs.replace(
        health=mobs.health.at[idx].set(health),
        alive=mobs.alive.at[idx].set(mobs.alive[idx] & ~dies),
        hurt=mobs.hurt.at[idx].set(jnp.where(can, 1.0, mobs.hurt[idx])),
        immune=mobs.immune.at[idx].set(jnp.where(can, 10, mobs.immune[idx])),
        flee=mobs.flee.at[idx].set(
            jnp.where(can & jnp.asarray(T.MOB_PASSIVE)[t], 100, mobs.flee[idx])
        ),
        angry=mobs.angry.at[idx].set(mobs.angry[idx] | (can & jnp.asarray(T.MOB_NEUTRAL)[t])),
        pos=mobs.pos.at[idx].set(new_pos),
    )
    # Drops (sheared sheep drop no wool).
    inv = state.inv
    for k in range(2):
        item = jnp.asarray(T.MOB_DROP_ITEM)[t, k]
        lo = jnp.asarray(T.MOB_DROP_MIN)[t, k]
        hi = jnp.asarray(T.MOB_DROP_MAX)[t, k]
        n = lo + jnp.floor(u[k] * (hi - lo + 1)).astype(I32)
        sheared_wool = (t == T.M["sheep"]) & (k == 1) & (state.mobs.variant[idx] == 1)
        txn.add(item, jnp.where(dies & ~sheared_wool, n, 0))
    weapon = inv.durability[0] >= 0
    is_sword = jnp.asarray(T.ITEM_TOOL_CLASS)[held] == 4
    inv = _damage_held(inv, jnp.where(can & weapon, jnp.where(is_sword, 1, 2), 0))
    uses = state.stats_uses.at[held].add(jnp.where(can & weapon & (held > 0), 1.0, 0.0))
    kills = state.stats_kills.at[t].add(jnp.where(dies, 1.0, 0.0))
    valid = can & params.target_entity[t]
    player = state.player.replace(exhaustion=state.player.exhaustion + jnp.where(can, 0.1, 0.0))
    return state.replace(
        mobs=mobs, inv=inv, stats_uses=uses, stats_kills=kills, player=player
    ), valid


def _mine(state: VoxelState, hit, cell, enable, txn: _Txn):
    """One tick of mining ``cell``; the block breaks when progress reaches 1."""
    block = _cell_value(state.blocks, cell)
    held = state.inv.item[0]
    tool_cls = jnp.asarray(T.ITEM_TOOL_CLASS)[held]
    need_cls = jnp.asarray(T.BLOCK_TOOL)[block]
    right_tool = (need_cls > 0) & (tool_cls == need_cls)
    tier = jnp.asarray(T.ITEM_TIER)[held]
    min_tier = jnp.asarray(T.BLOCK_MIN_TIER)[block]
    harvest = (min_tier == 0) | (right_tool & (tier >= min_tier))
    speed = jnp.where(right_tool, jnp.asarray(T.ITEM_SPEED)[held], 1.0)
    hardness = jnp.asarray(T.BLOCK_HARDNESS)[block]
    per_tick = jnp.where(
        hardness <= 0, 1.0, speed / jnp.maximum(hardness, 1e-6) / jnp.where(harvest, 30.0, 100.0)
    )
    breakable = jnp.asarray(T.BLOCK_BREAKABLE)[block]
    active = enable & hit & breakable
    same = jnp.all(cell == state.mine_target)
    progress = jnp.where(active, jnp.where(same, state.mine_progress, 0.0) + per_tick, 0.0)
    breaks = active & (progress >= 1.0 - 1e-5)  # float32 sums of 1/n reach 1 - ulp
    blocks = _set_block(state.blocks, cell, B["air"], breaks)
    # A plant, carpet or torch standing on the broken block goes with it.
    above = cell + jnp.array([0, 1, 0])
    above_block = _cell_value(blocks, above)
    attached = ~_SOLID[above_block] & ~_LIQUID[above_block] & (above_block != B["air"])
    attached = attached & (above_block != B["portal"])
    blocks = _set_block(blocks, above, B["air"], breaks & attached)
    drop = jnp.asarray(T.BLOCK_DROP)[block]
    n = jnp.where(breaks & harvest, jnp.asarray(T.BLOCK_DROP_COUNT)[block], 0)
    txn.add(drop, n)
    inv = state.inv
    damageable = inv.durability[0] >= 0
    inv = _damage_held(inv, jnp.where(breaks & damageable & (hardness > 0), 1, 0))
    block_item = jnp.asarray(_BLOCK_ITEM)[block]
    mines = state.stats_mines.at[block_item].add(jnp.where(breaks, 1.0, 0.0))
    uses = state.stats_uses.at[held].add(
        jnp.where(breaks & damageable & (held > 0) & (hardness > 0), 1.0, 0.0)
    )
    player = state.player.replace(
        exhaustion=state.player.exhaustion + jnp.where(breaks, 0.005, 0.0)
    )
    return state.replace(
        blocks=blocks,
        inv=inv,
        mine_target=jnp.where(active & ~breaks, cell, jnp.full(3, -1, I32)),
        mine_progress=jnp.where(breaks, 0.0, progress),
        stats_mines=mines,
        stats_uses=uses,
        player=player,
    )


# Block id -> item id of the block's own name (for mine_block statistics; 0 if not an item).
_BLOCK_ITEM = np.array(
    [spaces.item_id(n) if n in spaces.ITEMS else 0 for n in T.BLOCK_NAMES], np.int32
)


def _use(state: VoxelState, u, ent_hit, ent_idx, blk_hit, blk_cell, blk_prev, water_hit, water_cell,
         enable, txn: _Txn):  # fmt: skip
    """Right click: shear / milk the targeted mob, eat, fill / empty a bucket, or place."""
    inv = state.inv
    held = inv.item[0]
    mobs = state.mobs
    t = mobs.mob_type[ent_idx]
    i_shears, i_bucket = spaces.item_id("shears"), spaces.item_id("bucket")
    i_milk, i_water = spaces.item_id("milk_bucket"), spaces.item_id("water_bucket")
    shear = (
        enable & ent_hit & (held == i_shears) & (t == T.M["sheep"]) & (mobs.variant[ent_idx] == 0)
    )
    milk = enable & ent_hit & (held == i_bucket) & (t == T.M["cow"])
    # Shearing: 1-3 wool, the sheep regrows it after a while.
    n_wool = 1 + jnp.floor(u * 3).astype(I32)
    txn.add(spaces.item_id("wool"), jnp.where(shear, n_wool, 0))
    inv = _damage_held(inv, jnp.where(shear, 1, 0))
    mobs = mobs.replace(
        variant=mobs.variant.at[ent_idx].set(jnp.where(shear, 1, mobs.variant[ent_idx])),
        regrow=mobs.regrow.at[ent_idx].set(jnp.where(shear, 1200, mobs.regrow[ent_idx])),
    )
    # Milking: one empty bucket becomes a milk bucket.
    txn.remove(i_bucket, jnp.where(milk, 1, 0))
    txn.add(i_milk, jnp.where(milk, 1, 0))
    done = shear | milk | (enable & ent_hit)
    # Bucket on water.
    fill = enable & ~done & water_hit & (held == i_bucket)
    txn.remove(i_bucket, jnp.where(fill, 1, 0))
    txn.add(i_water, jnp.where(fill, 1, 0))
    blocks = _set_block(state.blocks, water_cell, B["air"], fill)
    done = done | fill
    # Eating (instant) when hungry; drinking milk gives the bucket back.
    food_v = jnp.asarray(T.ITEM_FOOD)[held]
    is_food = (food_v > 0) | (held == i_milk)
    eat = enable & ~done & is_food & ((state.player.food < 20.0) | (held == i_milk))
    player = state.player.replace(
        food=jnp.where(eat, jnp.minimum(20.0, state.player.food + food_v), state.player.food),
        saturation=jnp.where(
            eat,
            jnp.minimum(
                state.player.food + food_v,
                state.player.saturation + jnp.asarray(T.ITEM_SATURATION)[held],
            ),
            state.player.saturation,
        ),  # fmt: skip
    )
    txn.remove(held, jnp.where(eat, 1, 0))
    txn.add(i_bucket, jnp.where(eat & (held == i_milk), 1, 0))
    done = done | eat
    # Emptying a water bucket.
    pour_cell_free = jnp.asarray(T.BLOCK_REPLACEABLE)[_cell_value(blocks, blk_prev)]
    pour = enable & ~done & blk_hit & (held == i_water) & pour_cell_free
    blocks = _set_block(blocks, blk_prev, B["water"], pour)
    txn.remove(i_water, jnp.where(pour, 1, 0))
    txn.add(i_bucket, jnp.where(pour, 1, 0))
    done = done | pour
    used = shear | milk | fill | eat | pour
    uses = state.stats_uses.at[held].add(jnp.where(used, 1.0, 0.0))
    state = state.replace(inv=inv, mobs=mobs, blocks=blocks, player=player, stats_uses=uses)
    return state, done


def _update_mobs(state: VoxelState, key, params: VoxelParams, static: VoxelStaticConfig):
    mobs = state.mobs
    blocks = state.blocks
    m = mobs.pos.shape[0]
    t = mobs.mob_type
    p = state.player
    delta = p.pos - mobs.pos
    dist_h = jnp.linalg.norm(delta * jnp.array([1.0, 0.0, 1.0]), axis=-1)
    hostile = jnp.asarray(T.MOB_HOSTILE)[t] | (jnp.asarray(T.MOB_NEUTRAL)[t] & mobs.angry)
    chase = mobs.alive & hostile & (dist_h < 16.0) & (p.health > 0)
    fleeing = mobs.flee > 0
    # Wander decisions.
    new_decision = mobs.ai_timer <= 0
    rand_yaw = key[:m] * 360.0 - 180.0  # key: uniforms [3 * m + 3]
    rand_walk = key[m : 2 * m] < 0.6
    wander_yaw = jnp.where(new_decision, rand_yaw, mobs.yaw)
    walking = jnp.where(new_decision, rand_walk, mobs.walking)
    ai_timer = jnp.where(
        new_decision, 40 + jnp.floor(key[2 * m : 3 * m] * 80).astype(I32), mobs.ai_timer - 1
    )
    to_player = jnp.rad2deg(jnp.arctan2(-delta[:, 0], delta[:, 2]))
    yaw = jnp.where(chase, to_player, jnp.where(fleeing, to_player + 180.0, wander_yaw))
    yaw = (yaw + 180.0) % 360.0 - 180.0
    base = jnp.asarray(T.MOB_SPEED)[t]
    is_skeleton = t == T.M["skeleton"]
    speed = jnp.where(
        chase,
        jnp.where(is_skeleton & (dist_h < 6.0), 0.0, base * 1.3),
        jnp.where(fleeing, base * 2.5, jnp.where(walking, base, 0.0)),
    )
    speed = jnp.where(chase & (dist_h < 0.8), 0.0, speed)
    r = jnp.deg2rad(yaw)
    step = jnp.stack([-jnp.sin(r), jnp.zeros_like(r), jnp.cos(r)], -1) * speed[:, None]
    target = mobs.pos + step
    feet = jnp.floor(target + jnp.array([0.0, 0.05, 0.0])).astype(I32)
    up = jnp.array([0, 1, 0])
    feet_solid = _SOLID[_cell_value(blocks, feet)]
    head_solid = _SOLID[_cell_value(blocks, feet + up)]
    above_solid = _SOLID[_cell_value(blocks, feet + 2 * up)]
    can_walk = ~feet_solid & ~head_solid
    can_step = feet_solid & ~head_solid & ~above_solid
    inside = (target[:, 0] > 0.3) & (target[:, 0] < static.size_x - 0.3)
    inside = inside & (target[:, 2] > 0.3) & (target[:, 2] < static.size_z - 0.3)
    moved = mobs.alive & inside & (can_walk | can_step)
    pos = jnp.where(moved[:, None], target, mobs.pos)
    pos = pos.at[:, 1].add(jnp.where(moved & can_step & ~can_walk, 1.0, 0.0))
    # Blocked wanderers pick a new direction next tick.
    ai_timer = jnp.where(mobs.alive & ~moved & (speed > 0) & ~chase, 0, ai_timer)
    # Gravity / buoyancy.
    below = jnp.floor(pos - jnp.array([0.0, 0.01, 0.0])).astype(I32)
    standing = _SOLID[_cell_value(blocks, below)]
    in_water = _LIQUID[_cell_value(blocks, jnp.floor(pos + jnp.array([0.0, 0.3, 0.0])).astype(I32))]
    vy = jnp.where(in_water, 0.05, jnp.where(standing, 0.0, jnp.maximum(mobs.vel_y - 0.08, -0.95)))
    new_y = pos[:, 1] + vy
    land_cell = jnp.floor(pos.at[:, 1].set(new_y)).astype(I32)
    lands = (vy < 0) & _SOLID[_cell_value(blocks, land_cell)]
    new_y = jnp.where(lands, land_cell[:, 1] + 1.0, new_y)
    vy = jnp.where(lands, 0.0, vy)
    pos = pos.at[:, 1].set(new_y)
    alive = mobs.alive & (pos[:, 1] > -2.0)
    # Attacks on the player.
    melee = jnp.asarray(T.MOB_MELEE)[t]
    ranged = jnp.asarray(T.MOB_RANGED)[t]
    dy = jnp.abs(delta[:, 1])
    can_melee = chase & (melee > 0) & (dist_h < 1.6) & (dy < 2.0) & (mobs.cooldown <= 0)
    can_shoot = chase & (ranged > 0) & (dist_h < 12.0) & (mobs.cooldown <= 0)
    damage = jnp.where(can_melee, melee, 0.0) + jnp.where(can_shoot, ranged, 0.0)
    cooldown = jnp.where(can_melee, 20, jnp.where(can_shoot, 40, jnp.maximum(mobs.cooldown - 1, 0)))
    attacker = jnp.argmax(damage)
    total = jnp.where(p.hurt_time > 0, 0.0, damage.sum())
    # Wool regrowth.
    regrow = jnp.maximum(mobs.regrow - 1, 0)
    variant = jnp.where((mobs.variant == 1) & (regrow == 0), 0, mobs.variant)
    mobs = mobs.replace(
        pos=pos,
        vel_y=vy,
        yaw=jnp.where(speed > 0, yaw, mobs.yaw),
        alive=alive,
        hurt=jnp.maximum(mobs.hurt - 0.1, 0.0),
        immune=jnp.maximum(mobs.immune - 1, 0),
        ai_timer=ai_timer,
        walking=walking,
        flee=jnp.maximum(mobs.flee - 1, 0),
        cooldown=cooldown,
        variant=variant,
        regrow=regrow,
    )
    # Natural spawning of hostile mobs at night, in a free slot, 10-20 blocks away.
    night = _daylight(state.world_time) < 0.3
    attempt = params.allow_mob_spawn & night & (state.world_time % params.spawn_interval == 0)
    free = ~mobs.alive
    slot = jnp.argmax(free)
    angle = key[3 * m] * 2 * jnp.pi
    rad = 10.0 + 10.0 * key[3 * m + 1]
    sx_ = jnp.clip(p.pos[0] + rad * jnp.cos(angle), 0.5, static.size_x - 0.5)
    sz_ = jnp.clip(p.pos[2] + rad * jnp.sin(angle), 0.5, static.size_z - 0.5)
    sy_ = _surface_y(blocks, jnp.floor(sx_).astype(I32), jnp.floor(sz_).astype(I32))
    spawn_kind = jnp.minimum(jnp.floor(key[3 * m + 2] * 4).astype(I32), 3)
    spawn_type = jnp.asarray(T.HOSTILE_SPAWN_TYPES)[spawn_kind]
    do_spawn = attempt & free[slot] & (sy_ < static.size_y - 2)
    mobs = jax.tree.map(
        lambda a, b: a.at[slot].set(jnp.where(do_spawn, b, a[slot])),
        mobs,
        Mobs(
            pos=jnp.stack([sx_, sy_, sz_]), vel_y=jnp.float32(0.0), yaw=jnp.float32(0.0),
            mob_type=spawn_type.astype(I32), alive=jnp.bool_(True),
            health=jnp.asarray(T.MOB_HEALTH)[spawn_type], hurt=jnp.float32(0.0),
            immune=jnp.int32(0), ai_timer=jnp.int32(0), walking=jnp.bool_(False),
            flee=jnp.int32(0), angry=jnp.bool_(False), cooldown=jnp.int32(20),
            variant=jnp.int32(0), regrow=jnp.int32(0),
        ),
    )  # fmt: skip
    return mobs, total, mobs.pos[attacker]


def step(key, state: VoxelState, action, params: VoxelParams, static: VoxelStaticConfig):
    """One env step: ``static.action_repeat`` game ticks (one by default).

    -> (obs, state, reward, terminated, truncated, info). With a repeat of k > 1 the camera turn
    and the one-shot functional actions (use, drop, craft, equip, place, destroy) act on the
    first tick only, movement, jump, sneak/sprint and attack are held for all k ticks (holding
    attack is how blocks are mined), and the step stops at the tick the episode ends. Rewards
    (``reward``, ``info["dense_reward"]``) are summed over the ticks, ``success``/``dead`` are
    those of the last tick run, and one observation (one rendered frame) is made at the end.
    """
    action = jnp.asarray(action).astype(I32)
    chex.assert_shape(action, (8,))
    action = jnp.clip(action, 0, jnp.asarray(spaces.ACTION_NVEC) - 1)
    k = static.action_repeat
    keys = jax.random.split(key, k) if k > 1 else key[None]
    state, reward, terminated, truncated, info = _tick(keys[0], state, action, params, static)
    if k > 1:
        held = jnp.where(
            action[5] == spaces.FN_ATTACK, action[5], 0
        )  # attack is held, other functional actions are one-shot
        later = action.at[3].set(_CAMERA_CENTER).at[4].set(_CAMERA_CENTER).at[5].set(held)

        def tick(carry, key):
            state, reward, term, trunc, info = carry
            s2, r2, te2, tr2, i2 = _tick(key, state, later, params, static)
            live = ~(term | trunc)
            pick = lambda a, b: jnp.where(live, a, b)  # noqa: E731
            return (
                jax.tree.map(pick, s2, state),
                reward + jnp.where(live, r2, 0.0),
                term | (live & te2),
                trunc | (live & tr2),
                {
                    **jax.tree.map(pick, i2, info),
                    "dense_reward": info["dense_reward"] + jnp.where(live, i2["dense_reward"], 0.0),
                },
            ), None

        (state, reward, terminated, truncated, info), _ = jax.lax.scan(
            tick, (state, reward, terminated, truncated, info), keys[1:]
        )
    return observe(state, params, static), state, reward, terminated, truncated, info


_CAMERA_CENTER = spaces.CAMERA_NOOP_BIN  # MultiDiscrete camera bin of a zero turn


def _tick(key, state: VoxelState, action, params: VoxelParams, static: VoxelStaticConfig):
    """One game tick -> (state, reward, terminated, truncated, info); no observation."""
    m = static.max_mobs
    u = jax.random.uniform(key, (3 * m + 6,))  # all randomness of the step in one draw
    k_mob, k_use, k_attack = u[: 3 * m + 3], u[3 * m + 3], u[3 * m + 4 : 3 * m + 6]
    player, fall_damage, in_water = _update_player_motion(state, action, params)
    player = player.replace(last_damage=jnp.float32(0.0))
    state = state.replace(player=player)
    fn = action[5]
    slot = action[7]

    # What the crosshair points at.
    eye = _eye(player)
    look = look_vector(player.yaw, player.pitch)
    blk_hit, blk_cell, blk_prev, blk_t = _raycast(
        state.blocks, eye, look, params.block_reach, jnp.asarray(T.BLOCK_BREAKABLE | T.BLOCK_SOLID)
    )
    water_hit, water_cell, _, water_t = _raycast(
        state.blocks, eye, look, params.block_reach, jnp.asarray(T.BLOCK_LIQUID | T.BLOCK_SOLID)
    )
    water_hit = water_hit & _LIQUID[_cell_value(state.blocks, water_cell)]
    ent_hit, ent_idx, ent_t = _ray_mobs(state.mobs, eye, look, params.attack_reach)
    ent_hit = ent_hit & (~blk_hit | (ent_t < blk_t))
    blk_hit = blk_hit & ~ent_hit

    # Functional actions.
    txn = _Txn()
    is_use = fn == spaces.FN_USE
    state, use_done = _use(state, k_use, ent_hit, ent_idx, blk_hit, blk_cell, blk_prev, water_hit,
                           water_cell, is_use, txn)  # fmt: skip
    inv = state.inv
    drop = (fn == spaces.FN_DROP) & (inv.item[0] > 0)
    txn.remove(inv.item[0], jnp.where(drop, 1, 0))
    destroy = fn == spaces.FN_DESTROY
    inv = Inventory(
        item=inv.item.at[slot].set(jnp.where(destroy, 0, inv.item[slot])),
        count=inv.count.at[slot].set(jnp.where(destroy, 0, inv.count[slot])),
        durability=inv.durability.at[slot].set(jnp.where(destroy, -1, inv.durability[slot])),
    )
    inv = _equip(inv, slot, fn == spaces.FN_EQUIP)
    state = state.replace(inv=inv)
    state = _craft(state, action[6], fn == spaces.FN_CRAFT, txn)
    # Placing: the place action from any slot, or `use` with a block in the main hand.
    place_slot = jnp.where(is_use, 0, slot)
    place_on = (fn == spaces.FN_PLACE) | (is_use & ~use_done)
    state, _ = _place(state, place_slot, blk_hit, blk_prev, place_on)
    attacking = fn == spaces.FN_ATTACK
    state, valid_attack = _attack_mob(state, k_attack, ent_idx, attacking & ent_hit, params, txn)
    state = _mine(state, blk_hit, blk_cell, attacking & ~ent_hit, txn)
    state = state.replace(inv=txn.apply(state.inv))

    # Mobs, then survival bookkeeping.
    mobs, mob_damage, attacker_pos = _update_mobs(state, k_mob, params, static)
    state = state.replace(mobs=mobs)
    player = state.player
    player = _hurt_player(player, state.inv, fall_damage, player.pos)
    player = _hurt_player(player, state.inv, mob_damage, attacker_pos)
    eye_cell = jnp.floor(_eye(player)).astype(I32)
    head_wet = _LIQUID[_cell_value(state.blocks, eye_cell)]
    oxygen = jnp.where(head_wet, player.oxygen - 1.0, jnp.minimum(300.0, player.oxygen + 5.0))
    drown = (oxygen <= 0) & (state.ticks % 20 == 0)
    player = _hurt_player(player.replace(oxygen=jnp.maximum(oxygen, 0.0)), state.inv,
                          jnp.where(drown, 2.0, 0.0), player.pos)  # fmt: skip
    ex = player.exhaustion
    spend = ex >= 4.0
    sat_first = player.saturation > 0
    player = player.replace(
        exhaustion=jnp.where(spend, ex - 4.0, ex),
        saturation=jnp.where(spend & sat_first, jnp.maximum(player.saturation - 1.0, 0.0),
                             player.saturation),
        food=jnp.where(spend & ~sat_first, jnp.maximum(player.food - 1.0, 0.0), player.food),
    )  # fmt: skip
    timer = player.regen_timer + 1
    regen = (timer >= 80) & (player.food >= 18.0) & (player.health < 20.0)
    starve = (timer >= 80) & (player.food <= 0.0) & (player.health > 1.0)
    player = player.replace(
        health=jnp.clip(player.health + jnp.where(regen, 1.0, 0.0) - jnp.where(starve, 1.0, 0.0),
                        -100.0, 20.0),
        exhaustion=player.exhaustion + jnp.where(regen, 6.0, 0.0),
        regen_timer=jnp.where(timer >= 80, 0, timer),
        hurt_time=jnp.where(player.last_damage > 0, 10, jnp.maximum(player.hurt_time - 1, 0)),
    )  # fmt: skip
    world_time = jnp.where(params.freeze_time, state.world_time, state.world_time + 1)
    state = state.replace(
        player=player, world_time=world_time, ticks=state.ticks + 1, steps=state.steps + 1
    )

    # Task signals, reward, termination.
    sig = _signals(state, params, valid_attack)
    best = task_spec.update_best_distance(
        state.best_target_distance, sig.target_distance, sig.target_visible, valid_attack
    )
    sig = sig.replace(best_target_distance=best)
    prev = state.prev_signals
    reward = task_spec.task_reward(params.task, state.initial_signals, prev, sig)
    success = task_spec.task_success(params.task, state.initial_signals, sig)
    dense = task_spec.dense_reward(params.task, prev, sig)
    state = state.replace(best_target_distance=best, prev_signals=sig)
    dead = player.health <= 0
    any_kill = jnp.any(sig.kills > state.initial_signals.kills) & params.end_on_any_kill
    terminated = success | dead | any_kill
    truncated = (state.steps >= params.max_steps) & ~terminated
    info = {"success": success, "signals": sig, "dense_reward": dense, "dead": dead}
    return state, reward, terminated, truncated, info


def step_autoreset(key, state: VoxelState, action, params: VoxelParams, static: VoxelStaticConfig):
    """``step``, then replace a finished episode by a fresh ``reset`` (Gymnasium's same-step mode).

    The returned obs/state are the new episode's first ones when the episode ended; reward,
    flags and info belong to the finished step (``info["final_obs"]`` is not kept, to stay cheap;
    use ``step`` directly when you need it).
    """
    k_step, k_reset = jax.random.split(key)
    obs, new_state, reward, terminated, truncated, info = step(
        k_step, state, action, params, static
    )
    done = terminated | truncated
    obs_r, state_r = reset(k_reset, params, static)
    state = jax.tree.map(lambda a, b: jnp.where(done, a, b), state_r, new_state)
    obs = jax.tree.map(lambda a, b: jnp.where(done, a, b), obs_r, obs)
    return obs, state, reward, terminated, truncated, info


def step_autoreset_batch(keys, states, actions, params: VoxelParams, static: VoxelStaticConfig):
    """Batched ``step`` with same-step auto-reset, resetting only when some env finished.

    ``keys`` [N], ``states`` batched, ``actions`` [N, 8]; ``params`` shared. Unlike
    ``vmap(step_autoreset)`` (which computes a reset for every env every step), the resets run
    under one ``lax.cond`` taken only on steps where an episode ended. Returns
    (obs, states, reward, terminated, truncated, info, final_obs).
    """
    obs, states, rew, term, trunc, info = jax.vmap(step, in_axes=(0, 0, 0, None, None))(
        keys, states, actions, params, static
    )
    done = term | trunc
    final_obs = obs

    def do_reset(args):
        obs, states = args
        reset_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
        obs_r, states_r = jax.vmap(reset, in_axes=(0, None, None))(reset_keys, params, static)

        def pick(a, b):
            return jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b)

        return jax.tree.map(pick, obs_r, obs), jax.tree.map(pick, states_r, states)

    obs, states = jax.lax.cond(jnp.any(done), do_reset, lambda a: a, (obs, states))
    return obs, states, rew, term, trunc, info, final_obs


# =============================================================================================
# Observation
# =============================================================================================

_V_BLOCK = _Table(T.BLOCK_TO_SPACES)


def _slots_obs(inv: Inventory, idx):
    items = inv.item[idx]
    return {
        "name": items.astype(I32),
        "variant": jnp.zeros_like(items, I32),
        "quantity": inv.count[idx].astype(F32),
        "max_durability": _MAX_DUR[items].astype(F32),
        "cur_durability": jnp.where(items > 0, inv.durability[idx], -1).astype(F32),
    }


def craft_mask(state: VoxelState):
    """bool [244]: craft/smelt arguments that would succeed now."""
    counts = _inv_counts(state.inv)
    ok = _recipe_ok(
        counts,
        _nearby(state, state.table_pos, B["crafting_table"]),
        _nearby(state, state.furnace_pos, B["furnace"]),
    )
    r = jnp.asarray(T.CRAFT_ARG_TO_RECIPE)
    full = jnp.all(state.inv.item[:36] > 0)
    return (r >= 0) & ok[jnp.maximum(r, 0)] & ~full


def observe(state: VoxelState, params: VoxelParams, static: VoxelStaticConfig) -> dict:
    """The MineDojo observation dict of ``state`` (see ``envs.spaces.observation_space``)."""
    p = state.player
    inv = state.inv
    blocks = state.blocks
    sx, sz = blocks.shape[0], blocks.shape[2]
    xi = jnp.clip(jnp.floor(p.pos[0]).astype(I32), 0, sx - 1)
    zi = jnp.clip(jnp.floor(p.pos[2]).astype(I32), 0, sz - 1)
    daylight = _daylight(state.world_time)
    r = static.voxel_size // 2
    offs = jnp.arange(-r, r + 1)
    grid = jnp.stack(jnp.meshgrid(offs, offs, offs, indexing="ij"), -1)  # [v, v, v, 3]
    base = jnp.floor(p.pos).astype(I32)
    cells = base + grid
    vb = _cell_value(blocks, cells.reshape(-1, 3)).reshape(grid.shape[:3])
    look = look_vector(p.yaw, p.pitch)
    to_cell = cells.astype(F32) + 0.5 - _eye(p)
    cos = (to_cell @ look) / (jnp.linalg.norm(to_cell, axis=-1) + 1e-6)
    solid = _SOLID[vb]
    liquid = _LIQUID[vb]
    top = _column_top(blocks, xi, zi)
    sees_sky = jnp.floor(p.pos[1] + EYE_HEIGHT) >= top
    main_items = inv.item[:36]
    placeable = jnp.asarray(T.ITEM_PLACES)[main_items] > 0
    armor_or_shield = jnp.asarray(T.ITEM_ARMOR_SLOT)[main_items] >= 0
    nonempty = main_items > 0
    craft_ok = craft_mask(state)
    obs = {
        "inventory": _slots_obs(inv, jnp.arange(36)),
        "equipment": _slots_obs(inv, jnp.array([0, 36, 37, 38, 39, 40])),
        "life_stats": {
            "life": jnp.maximum(p.health, 0.0)[None],
            "armor": _armor_points(inv)[None].astype(F32),
            "food": p.food[None],
            "saturation": p.saturation[None],
            "xp": jnp.zeros(1, F32),
            "oxygen": p.oxygen[None],
            "is_sleeping": jnp.bool_(False),
        },
        "location_stats": {
            "pos": p.pos,
            "yaw": p.yaw[None],
            "pitch": p.pitch[None],
            "biome_id": state.biome[xi, zi].astype(I32),
            "rainfall": jnp.full(1, 0.4, F32),
            "temperature": jnp.full(1, 0.8, F32),
            "sea_level": jnp.full(1, float(static.sea_level), F32),
            "light_level": (jnp.where(sees_sky, 15.0 * daylight, 0.0))[None].astype(F32),
            "sky_light_level": daylight[None].astype(F32),
            "sun_brightness": daylight[None].astype(F32),
            "is_raining": jnp.bool_(False),
            "can_see_sky": sees_sky,
        },
        "voxels": {
            "block_name": _V_BLOCK[vb],
            "block_meta": jnp.zeros(vb.shape, I32),
            "is_collidable": solid,
            "is_tool_not_required": jnp.asarray(T.BLOCK_MIN_TIER)[vb] == 0,
            "blocks_movement": solid,
            "is_liquid": liquid,
            "is_solid": solid,
            "can_burn": jnp.asarray(T.BLOCK_CAN_BURN)[vb],
            "blocks_light": jnp.asarray(T.BLOCK_OPAQUE)[vb],
            "cos_look_vec_angle": jnp.clip(cos, -1.0, 1.0).astype(F32),
        },
        "nearby_tools": {
            "table": _nearby(state, state.table_pos, B["crafting_table"]),
            "furnace": _nearby(state, state.furnace_pos, B["furnace"]),
        },
        "damage_source": {
            "damage_amount": p.last_damage[None],
            "damage_distance": p.last_damage_dist[None],
            "damage_pitch": jnp.zeros(1, F32),
            "damage_yaw": p.last_damage_yaw[None],
            "hunger_damage": jnp.zeros(1, F32),
            "is_explosion": jnp.bool_(False),
            "is_fire_damage": jnp.bool_(False),
            "is_magic_damage": jnp.bool_(False),
            "is_projectile": jnp.bool_(False),
            "is_unblockable": jnp.bool_(False),
        },
        "masks": {
            "action_type": jnp.array(
                [
                    True,
                    True,
                    inv.item[0] > 0,
                    True,
                    jnp.any(craft_ok),
                    jnp.any(nonempty),
                    jnp.any(placeable),
                    jnp.any(nonempty),
                ]
            ),  # fmt: skip
            "action_arg": jnp.array([[0], [0], [0], [0], [1], [1], [1], [1]], bool),
            "equip": nonempty & ((jnp.arange(36) > 0) | armor_or_shield),
            "place": placeable,
            "destroy": nonempty,
            "craft_smelt": craft_ok,
        },
    }
    if static.render:
        obs = {"rgb": render_state(state, static), **obs}
    return obs


# =============================================================================================
# Rendering (envs.voxel.render, written by the renderer's author)
# =============================================================================================


@functools.cache
def _render_assets():
    from envs.voxel.textures import make_render_assets

    # Built eagerly even when first needed inside a trace, and cached as concrete arrays.
    with jax.ensure_compile_time_eval():
        assets = make_render_assets(T.BLOCK_NAMES, T.MOB_NAMES)
        return jax.tree.map(jnp.asarray, assets)  # concrete device arrays, never tracers


@functools.cache
def _render_config(height: int, width: int, fov_deg: float):
    from envs.voxel.render import RenderConfig

    return RenderConfig(height=height, width=width, fov_deg=fov_deg)


def scene(state: VoxelState):
    """The renderer's ``Scene`` of ``state`` (first-person camera at the player's eye)."""
    from envs.voxel.render import Scene

    p = state.player
    m = state.mobs
    return Scene(
        blocks=state.blocks,
        eye_pos=_eye(p),
        yaw_deg=p.yaw,
        pitch_deg=p.pitch,
        mob_pos=m.pos,
        mob_yaw_deg=m.yaw,
        mob_type=m.mob_type,
        mob_alive=m.alive,
        mob_variant=m.variant,
        mob_hurt=m.hurt,
        daylight=_daylight(state.world_time),
    )


def render_state(state: VoxelState, static: VoxelStaticConfig):
    """uint8 [H, W, 3] first-person view of ``state``."""
    from envs.voxel.render import render_first_person

    cfg = _render_config(static.height, static.width, static.fov_deg)
    return render_first_person(scene(state), _render_assets(), cfg)

"""Physics and cells of the embedded world: the block grid, the player's box, rays, daylight.

Pure functions over arrays of ``VoxelState`` fields. ``cell_value`` reads the grid with the
world's boundary rule (below/beside the grid is bedrock, above is air), ``raycast`` and
``ray_mobs`` find what the crosshair points at, ``update_player_motion`` moves the player's box
one tick. Lookup tables are NumPy ``Table``s so that importing the world starts no JAX backend.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.voxel import tables as T
from envs.voxel.state import VoxelParams, VoxelState

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


def cell_value(blocks, cell):
    """Block id at integer cell(s) [..., 3]; below/beside the grid is bedrock, above is air."""
    sx, sy, sz = blocks.shape
    x, y, z = cell[..., 0], cell[..., 1], cell[..., 2]
    inside = (x >= 0) & (x < sx) & (y >= 0) & (y < sy) & (z >= 0) & (z < sz)
    v = blocks[jnp.clip(x, 0, sx - 1), jnp.clip(y, 0, sy - 1), jnp.clip(z, 0, sz - 1)]
    outside = jnp.where(y >= sy, jnp.uint8(B["air"]), jnp.uint8(B["bedrock"]))
    return jnp.where(inside, v, outside)


def in_bounds(blocks, cell):
    sx, sy, sz = blocks.shape
    return (
        (cell[0] >= 0) & (cell[0] < sx) & (cell[1] >= 0) & (cell[1] < sy)
        & (cell[2] >= 0) & (cell[2] < sz)
    )  # fmt: skip


def set_block(blocks, cell, value, enable):
    """blocks with ``cell`` set to ``value`` when ``enable`` (a no-op write otherwise)."""
    sx, sy, sz = blocks.shape
    c = jnp.clip(cell, 0, jnp.array([sx - 1, sy - 1, sz - 1]))
    old = blocks[c[0], c[1], c[2]]
    ok = enable & in_bounds(blocks, cell)
    return blocks.at[c[0], c[1], c[2]].set(jnp.where(ok, jnp.uint8(value), old))


class Table:
    """A NumPy lookup table indexed with JAX arrays. Kept in NumPy at import so that importing
    the world does not start JAX's backends (envs.voxel.parallel.use_cpu_cores must run first)."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __getitem__(self, index):
        return jnp.asarray(self.values)[index]


SOLID = Table(T.BLOCK_SOLID)
LIQUID = Table(T.BLOCK_LIQUID)


def column_top(blocks, x, z):
    """Height of the highest solid or liquid block in column (x, z) (-1 if none)."""
    sx, sy, sz = blocks.shape
    col = blocks[jnp.clip(x, 0, sx - 1), :, jnp.clip(z, 0, sz - 1)]
    filled = SOLID[col] | LIQUID[col]
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
    return jnp.any(valid & SOLID[cell_value(blocks, cells)])


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


def eye_position(player):
    h = jnp.where(player.sneaking, SNEAK_EYE_HEIGHT, EYE_HEIGHT)
    return player.pos + jnp.array([0.0, 1.0, 0.0]) * h


def raycast(blocks, origin, direction, reach, hit_mask):
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
        here = hit_mask[cell_value(blocks, cell)]
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


def ray_mobs(mobs, origin, direction, reach):
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


def daylight_level(world_time):
    t = (world_time % TICKS_PER_DAY).astype(F32)
    return jnp.clip(jnp.cos((t - 6000.0) / TICKS_PER_DAY * 2 * jnp.pi) * 1.5 + 0.5, 0.0, 1.0)


def surface_y(blocks, x, z):
    return (column_top(blocks, x, z) + 1).astype(F32)


def update_player_motion(state: VoxelState, action, params: VoxelParams):
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
    in_water = LIQUID[cell_value(blocks, body_cell)]
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

"""The observation: MineDojo's dict (inventory, equipment, life and location stats, voxels,
masks) and the first-person frame (``render_state``, via ``envs.voxel.render``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from envs.voxel import tables as T
from envs.voxel.inventory import (
    MAX_DURABILITY,
    armor_points,
    inv_counts,
    recipe_ok,
    station_nearby,
)
from envs.voxel.physics import (
    EYE_HEIGHT,
    F32,
    I32,
    LIQUID,
    SOLID,
    B,
    Table,
    cell_value,
    column_top,
    daylight_level,
    eye_position,
    look_vector,
)
from envs.voxel.state import Inventory, VoxelParams, VoxelState, VoxelStaticConfig

_V_BLOCK = Table(T.BLOCK_TO_SPACES)


def _slots_obs(inv: Inventory, idx):
    items = inv.item[idx]
    return {
        "name": items.astype(I32),
        "variant": jnp.zeros_like(items, I32),
        "quantity": inv.count[idx].astype(F32),
        "max_durability": MAX_DURABILITY[items].astype(F32),
        "cur_durability": jnp.where(items > 0, inv.durability[idx], -1).astype(F32),
    }


def craft_mask(state: VoxelState):
    """bool [244]: craft/smelt arguments that would succeed now."""
    counts = inv_counts(state.inv)
    ok = recipe_ok(
        counts,
        station_nearby(state, state.table_pos, B["crafting_table"]),
        station_nearby(state, state.furnace_pos, B["furnace"]),
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
    daylight = daylight_level(state.world_time)
    r = static.voxel_size // 2
    offs = jnp.arange(-r, r + 1)
    grid = jnp.stack(jnp.meshgrid(offs, offs, offs, indexing="ij"), -1)  # [v, v, v, 3]
    base = jnp.floor(p.pos).astype(I32)
    cells = base + grid
    vb = cell_value(blocks, cells.reshape(-1, 3)).reshape(grid.shape[:3])
    look = look_vector(p.yaw, p.pitch)
    to_cell = cells.astype(F32) + 0.5 - eye_position(p)
    cos = (to_cell @ look) / (jnp.linalg.norm(to_cell, axis=-1) + 1e-6)
    solid = SOLID[vb]
    liquid = LIQUID[vb]
    top = column_top(blocks, xi, zi)
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
            "armor": armor_points(inv)[None].astype(F32),
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
            "table": station_nearby(state, state.table_pos, B["crafting_table"]),
            "furnace": station_nearby(state, state.furnace_pos, B["furnace"]),
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


@functools.cache
def render_assets():
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
        eye_pos=eye_position(p),
        yaw_deg=p.yaw,
        pitch_deg=p.pitch,
        mob_pos=m.pos,
        mob_yaw_deg=m.yaw,
        mob_type=m.mob_type,
        mob_alive=m.alive,
        mob_variant=m.variant,
        mob_hurt=m.hurt,
        daylight=daylight_level(state.world_time),
    )


def render_state(state: VoxelState, static: VoxelStaticConfig):
    """uint8 [H, W, 3] first-person view of ``state``."""
    from envs.voxel.render import render_first_person

    cfg = _render_config(static.height, static.width, static.fov_deg)
    return render_first_person(scene(state), render_assets(), cfg)

"""Mobs of the embedded world: placement at reset, melee hits, AI (wander, chase, panic),
gravity, attacks on the player and hostile spawning at night.

Mobs move as points on the block grid (auto-jumping one block) rather than as boxes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envs.voxel import tables as T
from envs.voxel.inventory import Txn, damage_held
from envs.voxel.physics import (
    F32,
    I32,
    LIQUID,
    SOLID,
    B,
    cell_value,
    column_top,
    daylight_level,
    surface_y,
)
from envs.voxel.state import Mobs, VoxelParams, VoxelState, VoxelStaticConfig


def natural_top(block):
    """Ground a mob or the player may stand on (not a structure, tree or cactus)."""
    natural = jnp.asarray(
        np.isin(np.arange(T.NUM_BLOCK_TYPES),
                [B[n] for n in ("grass", "dirt", "sand", "stone", "gravel", "sandstone", "clay")])
    )  # fmt: skip
    return natural[block]


def place_mobs(u, blocks, center, low, high, static):
    """Surface positions at offsets low + u * (high - low) (x, z) from ``center``.

    Of the offset and its three mirror images, the first over natural ground is used, so mobs
    do not start on roofs, tree tops or the portal frame.
    """
    off = low + u * (high - low)
    mirrors = jnp.array([[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]])
    cand_x = jnp.clip(center[0] + off[:, None, 0] * mirrors[None, :, 0], 0.5, static.size_x - 0.5)
    cand_z = jnp.clip(center[2] + off[:, None, 2] * mirrors[None, :, 1], 0.5, static.size_z - 0.5)
    xi, zi = jnp.floor(cand_x).astype(I32), jnp.floor(cand_z).astype(I32)
    tops = jax.vmap(jax.vmap(lambda a, b: column_top(blocks, a, b)))(xi, zi)
    ok = natural_top(blocks[xi, jnp.clip(tops, 0, static.size_y - 1), zi])
    k = jnp.argmax(ok, axis=1)  # 0 when none is natural
    pick = lambda a: jnp.take_along_axis(a, k[:, None], axis=1)[:, 0]  # noqa: E731
    return jnp.stack([pick(cand_x), pick(tops).astype(F32) + 1.0, pick(cand_z)], -1)


def new_mobs(u, blocks, player_pos, params: VoxelParams, static: VoxelStaticConfig) -> Mobs:
    mm0 = static.max_mobs
    u_init, u_pass, u_type, u_yaw, u_timer = (
        u[: 3 * static.max_initial_mobs].reshape(-1, 3),
        u[3 * mm0 : 6 * mm0].reshape(-1, 3)[: mm0 - static.max_initial_mobs],
        u[6 * mm0 : 7 * mm0],
        u[7 * mm0 : 8 * mm0],
        u[8 * mm0 : 9 * mm0],
    )
    mi, mm = static.max_initial_mobs, static.max_mobs
    init_pos = place_mobs(
        u_init, blocks, player_pos, params.spawn_low, params.spawn_high, static,
    )  # fmt: skip
    n_pass = mm - mi
    passive_types = jnp.floor(u_type[:n_pass] * 4).astype(I32)  # cow, sheep, pig, chicken
    pass_pos = place_mobs(
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


def attack_mob(state: VoxelState, u, idx, enable, params: VoxelParams, txn: Txn):
    """Melee hit on mob ``idx``: damage, knockback, panic/anger, death, drops, stats."""
    mobs = state.mobs
    held = state.inv.item[0]
    dmg = jnp.asarray(T.ITEM_DAMAGE)[held]
    can = enable & mobs.alive[idx] & (mobs.immune[idx] <= 0)
    health = mobs.health[idx] - jnp.where(can, dmg, 0.0)
    dies = can & (health <= 0)
    t = mobs.mob_type[idx]
    panics = can & jnp.asarray(T.MOB_PASSIVE)[t]
    away = mobs.pos[idx] - state.player.pos
    away = away.at[1].set(0.0)
    away = away / (jnp.linalg.norm(away) + 1e-6)
    knock = mobs.pos[idx] + away * 0.4
    knock_cell = jnp.floor(knock + jnp.array([0.0, 0.1, 0.0])).astype(I32)
    knock_ok = ~SOLID[cell_value(state.blocks, knock_cell)]
    new_pos = jnp.where(can & knock_ok & ~dies, knock, mobs.pos[idx])
    mobs = mobs.replace(
        health=mobs.health.at[idx].set(health),
        alive=mobs.alive.at[idx].set(mobs.alive[idx] & ~dies),
        hurt=mobs.hurt.at[idx].set(jnp.where(can, 1.0, mobs.hurt[idx])),
        immune=mobs.immune.at[idx].set(jnp.where(can, 10, mobs.immune[idx])),
        # A hit (re)starts the panic: revenge-targeted for PANIC_TICKS, and the expired AI timer
        # makes the next update pick a panic spot.
        flee=mobs.flee.at[idx].set(jnp.where(panics, T.PANIC_TICKS, mobs.flee[idx])),
        ai_timer=mobs.ai_timer.at[idx].set(jnp.where(panics, 0, mobs.ai_timer[idx])),
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
    inv = damage_held(inv, jnp.where(can & weapon, jnp.where(is_sword, 1, 2), 0))
    uses = state.stats_uses.at[held].add(jnp.where(can & weapon & (held > 0), 1.0, 0.0))
    kills = state.stats_kills.at[t].add(jnp.where(dies, 1.0, 0.0))
    valid = can & params.target_entity[t]
    player = state.player.replace(exhaustion=state.player.exhaustion + jnp.where(can, 0.1, 0.0))
    return state.replace(
        mobs=mobs, inv=inv, stats_uses=uses, stats_kills=kills, player=player
    ), valid


def update_mobs(state: VoxelState, key, params: VoxelParams, static: VoxelStaticConfig):
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
    base = jnp.asarray(T.MOB_SPEED)[t]
    panic_speed = base * jnp.asarray(T.MOB_PANIC_SPEED)[t]
    # Wander and panic decisions come when the AI timer runs out, from the same uniforms
    # (key: [3 * m + 3]; a mob makes one kind of decision at a time).
    new_decision = mobs.ai_timer <= 0
    u_yaw, u_walk, u_timer = key[:m], key[m : 2 * m], key[2 * m : 3 * m]
    # Wander: a random heading, walking or standing, for 40-119 ticks.
    wander_yaw = jnp.where(new_decision, u_yaw * 360.0 - 180.0, mobs.yaw)
    walking = jnp.where(new_decision, u_walk < 0.6, mobs.walking)
    wander_timer = 40 + jnp.floor(u_timer * 80).astype(I32)
    # Panic (EntityAIPanic): run to a random block within PANIC_RANGE horizontally; the AI timer
    # counts the ticks the leg takes, so arriving (or being blocked, below) picks the next spot.
    r_panic = T.PANIC_RANGE
    panic_dx = jnp.floor(u_yaw * (2 * r_panic + 1)) - r_panic
    panic_dz = jnp.floor(u_walk * (2 * r_panic + 1)) - r_panic
    panic_yaw = jnp.where(new_decision, jnp.rad2deg(jnp.arctan2(-panic_dx, panic_dz)), mobs.yaw)
    leg_ticks = jnp.ceil(jnp.hypot(panic_dx, panic_dz) / jnp.maximum(panic_speed, 1e-3))
    panic_timer = jnp.maximum(leg_ticks.astype(I32), 1)
    ai_timer = jnp.where(
        new_decision, jnp.where(fleeing, panic_timer, wander_timer), mobs.ai_timer - 1
    )
    # The panic's last tick: the next update makes a fresh wander decision.
    ai_timer = jnp.where(mobs.flee == 1, 0, ai_timer)
    to_player = jnp.rad2deg(jnp.arctan2(-delta[:, 0], delta[:, 2]))
    yaw = jnp.where(chase, to_player, jnp.where(fleeing, panic_yaw, wander_yaw))
    yaw = (yaw + 180.0) % 360.0 - 180.0
    is_skeleton = t == T.M["skeleton"]
    speed = jnp.where(
        chase,
        jnp.where(is_skeleton & (dist_h < 6.0), 0.0, base * 1.3),
        jnp.where(fleeing, panic_speed, jnp.where(walking, base, 0.0)),
    )
    speed = jnp.where(chase & (dist_h < 0.8), 0.0, speed)
    r = jnp.deg2rad(yaw)
    step = jnp.stack([-jnp.sin(r), jnp.zeros_like(r), jnp.cos(r)], -1) * speed[:, None]
    target = mobs.pos + step
    feet = jnp.floor(target + jnp.array([0.0, 0.05, 0.0])).astype(I32)
    up = jnp.array([0, 1, 0])
    feet_solid = SOLID[cell_value(blocks, feet)]
    head_solid = SOLID[cell_value(blocks, feet + up)]
    above_solid = SOLID[cell_value(blocks, feet + 2 * up)]
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
    standing = SOLID[cell_value(blocks, below)]
    in_water = LIQUID[cell_value(blocks, jnp.floor(pos + jnp.array([0.0, 0.3, 0.0])).astype(I32))]
    vy = jnp.where(in_water, 0.05, jnp.where(standing, 0.0, jnp.maximum(mobs.vel_y - 0.08, -0.95)))
    new_y = pos[:, 1] + vy
    land_cell = jnp.floor(pos.at[:, 1].set(new_y)).astype(I32)
    lands = (vy < 0) & SOLID[cell_value(blocks, land_cell)]
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
    night = daylight_level(state.world_time) < 0.3
    attempt = params.allow_mob_spawn & night & (state.world_time % params.spawn_interval == 0)
    free = ~mobs.alive
    slot = jnp.argmax(free)
    angle = key[3 * m] * 2 * jnp.pi
    rad = 10.0 + 10.0 * key[3 * m + 1]
    sx_ = jnp.clip(p.pos[0] + rad * jnp.cos(angle), 0.5, static.size_x - 0.5)
    sz_ = jnp.clip(p.pos[2] + rad * jnp.sin(angle), 0.5, static.size_z - 0.5)
    sy_ = surface_y(blocks, jnp.floor(sx_).astype(I32), jnp.floor(sz_).astype(I32))
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

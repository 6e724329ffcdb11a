"""Task signals and target features: what the task's reward and success read from the world
(``task_signals``) and the privileged target description for learners (``target_features``).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from envs.tasks import spec as task_spec
from envs.tasks.spec import TaskSignals
from envs.voxel import tables as T
from envs.voxel.inventory import inv_counts
from envs.voxel.params import TARGET_ENTITY, TARGET_HOUSE, TARGET_OCEAN, TARGET_PORTAL
from envs.voxel.physics import F32, I32, eye_position, look_vector
from envs.voxel.state import VoxelParams, VoxelState, VoxelStaticConfig


def house_centre(state: VoxelState):
    """The point above the middle of the house floor (the house target)."""
    return jnp.array(
        [(state.house[0] + state.house[2] + 1) / 2, state.house_floor_y + 1.0,
         (state.house[1] + state.house[3] + 1) / 2], F32,
    )  # fmt: skip


def task_signals(state: VoxelState, params: VoxelParams, attack_hit_target=None) -> TaskSignals:
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
    house_c = house_centre(state)
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
        inventory=inv_counts(state.inv),
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
    eye = eye_position(p)
    t = mobs.mob_type
    centre = mobs.pos + jnp.asarray(T.MOB_HEIGHT)[t][:, None] * jnp.array([0.0, 0.5, 0.0])
    is_target = mobs.alive & params.target_entity[t]
    dists = jnp.where(is_target, jnp.linalg.norm(centre - eye, axis=-1), jnp.inf)
    k = jnp.argmin(dists)
    house_c = house_centre(state)
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

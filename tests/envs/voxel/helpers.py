"""Shared small world, hand-built worlds and ONE jitted rollout function for the voxel tests.

Every test drives the world through ``run`` (a ``lax.scan`` over a fixed number of steps, each
step either a given action or the scripted oracle's), so the step compiles once per process.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.tasks.spec import InventoryItem, SuccessCriterion, TaskSpec
from envs.voxel import env as E
from envs.voxel import scripted
from envs.voxel import tables as T
from envs.voxel.gym_env import _reset as _gym_reset
from envs.voxel.state import VoxelStaticConfig, WorldPool
from envs.voxel.worldgen import generate_pool

STATIC = VoxelStaticConfig(
    size_x=32, size_y=24, size_z=32, sea_level=10, num_trees=12, render=False,
    world_pool_size=4, max_mobs=8, max_initial_mobs=4,
)  # fmt: skip
STEPS = 300  # length of every rollout (shorter scripts are padded with no-ops)
GROUND = 8  # top solid layer of the flat test world


@functools.cache
def pool() -> WorldPool:
    return generate_pool(0, STATIC.world_pool_size, STATIC)


@functools.cache
def flat_pool() -> WorldPool:
    """A flat grass world (stone below, ground top at y = GROUND) with nothing on it."""
    sx, sy, sz = STATIC.size_x, STATIC.size_y, STATIC.size_z
    blocks = np.zeros((sx, sy, sz), np.uint8)
    blocks[:, : GROUND - 2] = T.B["stone"]
    blocks[:, GROUND - 2 : GROUND] = T.B["dirt"]
    blocks[:, GROUND] = T.B["grass"]
    blocks[:, 0] = T.B["bedrock"]
    n = STATIC.world_pool_size  # same shapes as pool(): the rollout compiles once

    def f(a):
        return jnp.asarray(np.stack([a] * n))

    return WorldPool(
        blocks=f(blocks),
        biome=f(np.full((sx, sz), spaces.biome_id("plains"), np.int32)),
        ocean_distance=f(np.full((sx, sz), 100.0, np.float32)),
        portal_center=f(np.array([2.0, GROUND + 3.5, 2.5], np.float32)),
        house_floor=f(np.array([20, 20, 24, 24], np.int32)),
        house_floor_y=f(np.array(GROUND, np.int32)),
    )


def spec(inventory=(), mobs=(), category="creative", **kw) -> TaskSpec:
    """A throwaway task spec for unit tests."""
    inv = tuple(InventoryItem(i, name, q) for i, (name, q) in enumerate(inventory))
    return TaskSpec(id="test", category=category, prompt="test", initial_inventory=inv,
                    initial_mobs=tuple(mobs), allow_mob_spawn=False, **kw)  # fmt: skip


def params_for(task: TaskSpec, flat: bool = True, **kw):
    return E.make_params(task, STATIC, pool=flat_pool() if flat else pool(), **kw)


# The Gymnasium env's jitted reset: tests and envs share one compiled function.
reset = _gym_reset


@functools.partial(jax.jit, static_argnames="static")
def _run(key, state, actions, use_oracle, mode, params, static):
    def body(carry, inp):
        s, done, success, ret = carry
        k, a, oracle = inp
        a = jnp.where(oracle, scripted.oracle_action(s, params, mode), a)
        _, s2, r, term, trunc, info = E.step(k, s, a, params, static)
        keep = lambda x, y: jnp.where(done, x, y)  # noqa: E731  (freeze after the episode ends)
        s = jax.tree.map(keep, s, s2)
        ret = ret + jnp.where(done, 0.0, r)
        success = success | (info["success"] & ~done)
        out = (s.player.pos, s.player.health, jnp.where(done, 0.0, r), info["dense_reward"], done,
               s.mobs.pos)  # fmt: skip
        done = done | term | trunc
        return (s, done, success, ret), out

    keys = jax.random.split(key, actions.shape[0])
    init = (state, jnp.bool_(False), jnp.bool_(False), jnp.float32(0.0))
    (s, done, success, ret), trace = jax.lax.scan(body, init, (keys, actions, use_oracle))
    return s, done, success, ret, trace


@dataclasses.dataclass
class Rollout:
    state: object
    done: bool
    success: bool
    ret: float
    pos: np.ndarray  # [STEPS, 3]
    health: np.ndarray
    reward: np.ndarray
    dense: np.ndarray
    mob_pos: np.ndarray  # [STEPS, max_mobs, 3]


def noop(n: int = 1) -> np.ndarray:
    return np.tile(spaces.NOOP_ACTION.astype(np.int32), (n, 1))


def act(n: int = 1, **parts) -> np.ndarray:
    """``n`` copies of an action built from named parts (move, strafe, jump, pitch, yaw, fn, craft, slot)."""
    a = spaces.NOOP_ACTION.astype(np.int32).copy()
    names = ("move", "strafe", "jump", "pitch", "yaw", "fn", "craft", "slot")
    for k, v in parts.items():
        a[names.index(k)] = v
    return np.tile(a, (n, 1))


def run(state, params, actions=None, oracle_mode=None, key=0) -> Rollout:
    """Step ``actions`` (padded with no-ops to STEPS), or the oracle for STEPS steps."""
    if actions is None:
        actions = noop(0)
    actions = np.asarray(actions, np.int32).reshape(-1, 8)
    assert actions.shape[0] <= STEPS
    padded = np.concatenate([actions, noop(STEPS - actions.shape[0])])
    use_oracle = np.full(STEPS, oracle_mode is not None)
    s, done, success, ret, (pos, health, rew, dense, _, mob_pos) = _run(
        jax.random.key(key), state, jnp.asarray(padded), jnp.asarray(use_oracle),
        jnp.int32(oracle_mode or 0), params, STATIC,
    )  # fmt: skip
    return Rollout(s, bool(done), bool(success), float(ret), np.asarray(pos), np.asarray(health),
                   np.asarray(rew), np.asarray(dense), np.asarray(mob_pos))  # fmt: skip


def place_player(state, pos, yaw=0.0, pitch=0.0):
    p = state.player.replace(
        pos=jnp.asarray(pos, jnp.float32), yaw=jnp.float32(yaw), pitch=jnp.float32(pitch),
        vel=jnp.zeros(3, jnp.float32), on_ground=jnp.bool_(False),
    )  # fmt: skip
    return state.replace(player=p)


def set_block(state, cell, name):
    x, y, z = cell
    return state.replace(blocks=state.blocks.at[x, y, z].set(T.B[name]))


def place_mob(state, slot, name, pos, alive=True):
    m = state.mobs
    t = spaces.entity_id(name)
    return state.replace(
        mobs=m.replace(
            pos=m.pos.at[slot].set(jnp.asarray(pos, jnp.float32)),
            mob_type=m.mob_type.at[slot].set(t),
            alive=m.alive.at[slot].set(alive),
            health=m.health.at[slot].set(T.MOB_HEALTH[t]),
        )
    )


def clear_mobs(state):
    return state.replace(mobs=state.mobs.replace(alive=jnp.zeros_like(state.mobs.alive)))


def count(state, name) -> int:
    inv = state.inv
    return int(
        np.sum(np.where(np.asarray(inv.item) == spaces.item_id(name), np.asarray(inv.count), 0))
    )


SUCCESS_NEVER = SuccessCriterion("never")

"""The vector env's step (issue 41): one jitted program that renders only the frames it returns
gives what the old step gave (`E.step_autoreset_batch`, keys split on the host), final_obs of
finished envs included."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

import envs
from envs import spaces
from envs.tasks import paper
from envs.voxel import env as E
from envs.voxel import gym_env as G
from envs.voxel.state import VoxelStaticConfig

STATIC = VoxelStaticConfig(
    size_x=16, size_y=16, size_z=16, sea_level=6, num_trees=2, height=12, width=16,
    world_pool_size=2, max_mobs=4, max_initial_mobs=3,
)  # fmt: skip
N = 4


def _assert_same(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_render_once_matches_step_autoreset_batch(monkeypatch):
    """Envs finishing at different steps (3 at once with chunks of 2: a padded second round,
    then 1): the same observations, states, flags, info and final observations."""
    monkeypatch.setattr(G, "FINAL_FRAME_CHUNK", 2)
    params = E.make_params(paper.get("hunt a cow"), STATIC, seed=0, max_steps=3)
    keys = jax.random.split(jax.random.key(0), N)
    _, states = jax.vmap(E.reset, in_axes=(0, None, None))(keys, params, STATIC)
    states = states.replace(steps=jnp.array([2, 2, 2, 0], jnp.int32))
    old = jax.jit(E.step_autoreset_batch, static_argnames="static")
    new = jax.jit(G.step_autoreset_batch_once, static_argnames="static")
    s_old = s_new = states
    finished = []
    for t in range(3):
        keys = jax.random.split(jax.random.key(10 + t), N)
        actions = jnp.tile(jnp.asarray(spaces.NOOP_ACTION), (N, 1)).at[:, 0].set(1)
        a = old(keys, s_old, actions, params, STATIC)
        b = new(keys, s_new, actions, params, STATIC)
        _assert_same(a, b)
        s_old, s_new = a[1], b[1]
        finished.append(np.asarray(a[3] | a[4]).tolist())
    assert finished == [[True, True, True, False], [False] * 4, [False, False, False, True]]
    final_rgb = np.asarray(b[6]["rgb"])
    assert final_rgb[3].std() > 0 and not np.array_equal(final_rgb[3], np.asarray(b[0]["rgb"][3]))


def _old_vector_step(vec, actions, states, key):
    """What VoxelVectorEnv.step computed before issue 41's pass, on one device."""
    key, k = jax.random.split(key)
    keys = jax.random.split(k, vec.num_envs)
    out = jax.jit(E.step_autoreset_batch, static_argnames="static")(
        keys, states, jnp.asarray(actions, jnp.int32), vec.params, vec.static
    )
    obs, states, rew, term, trunc, info, final_obs = out
    return key, states, G._to_numpy((obs, rew, term, trunc, G._signals_info(info), final_obs))


def test_vector_env_steps_as_before_with_final_obs_on_the_truncating_step():
    small = {f.name: getattr(STATIC, f.name) for f in dataclasses.fields(STATIC)}
    vec = envs.make_vector("hunt a cow", N, max_steps=2, **small)  # split over the test's CPUs
    obs, _ = vec.reset(seed=7)
    states = jax.tree.map(np.asarray, vec.states)  # copies: the vector env donates its own
    key = jax.random.split(jax.random.key(7))[0]  # the env's key after reset's split
    rng = np.random.default_rng(0)
    for t in range(3):
        actions = rng.integers(0, spaces.ACTION_NVEC, (N, 8))
        obs, rew, term, trunc, info = vec.step(actions)
        key, states, (o, r, te, tr, inf, fo) = _old_vector_step(vec, actions, states, key)
        _assert_same((obs, rew, term, trunc), (o, r, te, tr))
        _assert_same({k: info[k] for k in inf}, inf)
        assert trunc.all() == (t == 1)
        if t == 1:  # the time limit: every env finished, its last frame is in final_obs
            assert info["_final_obs"].all() and info["_final_info"].all()
            _assert_same(info["final_obs"], fo)
            _assert_same(info["final_info"], inf)
            assert not np.array_equal(info["final_obs"]["rgb"], obs["rgb"])
        else:
            assert "final_obs" not in info


def test_the_step_program_is_traced_once_from_the_first_step_on(monkeypatch):
    """The key the step returns is replicated over the env mesh; reset places the env's key
    there too, so the first step's inputs have the types of every later step's and the step
    program is traced and compiled once, not twice (a second compile of the world)."""
    traces, step_once = [], G.step_autoreset_batch_once

    def counted(*args):
        traces.append(1)  # runs when the step program is traced, never when it is run
        return step_once(*args)

    monkeypatch.setattr(G, "step_autoreset_batch_once", counted)
    G._vector_step.cache_clear()  # a fresh program, traced by this env's steps only
    small = {f.name: getattr(STATIC, f.name) for f in dataclasses.fields(STATIC)}
    vec = envs.make_vector("hunt a cow", N, max_steps=4, **small)  # split over the test's CPUs
    actions = np.tile(spaces.NOOP_ACTION, (N, 1))
    for seed in (1, 2):  # a reset's new key is placed the same way
        vec.reset(seed=seed)
        for _ in range(3):
            vec.step(actions)
    G._vector_step.cache_clear()  # the next env's program traces the unpatched step
    assert len(traces) == 1

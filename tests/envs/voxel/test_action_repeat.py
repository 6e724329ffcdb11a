"""`VoxelStaticConfig.action_repeat`: k game ticks per env step, against a loop of single ticks."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import spaces
from envs.voxel import env as E
from envs.voxel.state import VoxelStaticConfig
from tests.envs.voxel import helpers as H

K = 4
STATIC_K = dataclasses.replace(H.STATIC, action_repeat=K)
_step1 = jax.jit(E.step, static_argnames="static")


def _reference(key, state, action, params):
    """k single ticks: the full action first, then camera centred and one-shot functions off."""
    later = np.array(action).copy()
    later[3] = later[4] = spaces.CAMERA_NOOP_BIN
    if later[5] != spaces.FN_ATTACK:
        later[5] = spaces.FN_NOOP
    keys = jax.random.split(key, K)
    total, dense = 0.0, 0.0
    for i in range(K):
        a = action if i == 0 else later
        _, state, r, term, trunc, info = _step1(keys[i], state, jnp.asarray(a), params, H.STATIC)
        total += float(r)
        dense += float(info["dense_reward"])
        if term or trunc:
            break
    return state, total, dense, bool(term), bool(trunc), i + 1


@pytest.fixture(scope="module")
def flat():
    task = H.spec(inventory=[("diamond_sword", 1), ("dirt", 10)])
    params = H.params_for(task, passive_mobs=0)
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    state = H.place_player(H.clear_mobs(state), [16.5, H.GROUND + 1.0, 16.5])
    state = H.place_mob(state, 0, "cow", [16.5, H.GROUND + 1.0, 18.5])
    return params, state


@pytest.mark.parametrize("use_jit", [False, True])
@pytest.mark.parametrize(
    "parts",
    [
        dict(move=1, yaw=13, fn=spaces.FN_ATTACK),  # walk, turn 15 degrees, attack (held)
        dict(move=1, jump=1, pitch=14, fn=spaces.FN_PLACE, slot=1),  # place is one-shot
    ],
)
def test_repeat_equals_loop_of_single_ticks(flat, parts, use_jit):
    params, state = flat
    action = H.act(1, **parts)[0]
    step_k = jax.jit(E.step, static_argnames="static") if use_jit else E.step
    key = jax.random.key(5)
    obs, got, r, term, trunc, info = step_k(key, state, jnp.asarray(action), params, STATIC_K)
    want, r_ref, dense_ref, term_ref, trunc_ref, ticks = _reference(key, state, action, params)
    assert ticks == K and not (term_ref or trunc_ref)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert float(r) == pytest.approx(r_ref) and float(info["dense_reward"]) == pytest.approx(
        dense_ref
    )
    assert int(got.ticks - state.ticks) == K
    # The camera turned once (15 degrees), not K times.
    turned = float(got.player.yaw - state.player.yaw) % 360.0
    assert turned in (pytest.approx(0.0), pytest.approx(15.0), pytest.approx(345.0))
    np.testing.assert_allclose(obs["location_stats"]["yaw"], np.asarray(got.player.yaw).reshape(-1))


def test_step_stops_at_the_tick_the_episode_ends(flat):
    params, state = flat
    params = params.replace(max_steps=state.steps + 2)  # truncation after the 2nd tick
    action = H.act(1, move=1)[0]
    key = jax.random.key(2)
    _, got, r, term, trunc, _ = _step1(key, state, jnp.asarray(action), params, STATIC_K)
    want, _, _, term_ref, trunc_ref, ticks = _reference(key, state, action, params)
    assert ticks == 2 and bool(trunc) and trunc_ref and not bool(term)
    assert int(got.steps - state.steps) == 2
    np.testing.assert_array_equal(np.asarray(got.player.pos), np.asarray(want.player.pos))


def test_bad_repeat_is_an_error():
    with pytest.raises(ValueError, match="action_repeat"):
        VoxelStaticConfig(action_repeat=0)

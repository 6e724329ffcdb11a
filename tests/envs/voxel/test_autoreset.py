"""`step_autoreset` renders one frame per env step and returns what step-then-reset returns."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.autoreset_speed import render_both_autoreset
from envs import spaces
from envs.tasks import paper
from envs.voxel import env as E
from envs.voxel.state import VoxelStaticConfig

STATIC = VoxelStaticConfig(
    size_x=16, size_y=16, size_z=16, sea_level=6, num_trees=2, height=12, width=16,
    world_pool_size=2, max_mobs=4, max_initial_mobs=3,
)  # fmt: skip


def test_step_autoreset_renders_one_frame_per_step(monkeypatch):
    params = E.make_params(paper.get("hunt a cow"), STATIC, seed=0)
    _, state = E.reset(jax.random.key(0), params, STATIC)
    calls = []
    observe = E.observe
    monkeypatch.setattr(E, "observe", lambda *a: calls.append(1) or observe(*a))
    action = jnp.asarray(spaces.NOOP_ACTION)
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    keys = jax.random.split(jax.random.key(1), 2)
    jax.make_jaxpr(jax.vmap(E.step_autoreset, in_axes=(0, 0, None, None, None)), static_argnums=4)(
        keys, batch, action, params, STATIC
    )
    assert len(calls) == 1  # the old form observed the stepped and the reset state: 2


def test_step_autoreset_matches_step_then_reset():
    # max_steps=3: the third step truncates, so both branches are compared.
    params = E.make_params(paper.get("hunt a cow"), STATIC, seed=0, max_steps=3)
    _, state = E.reset(jax.random.key(0), params, STATIC)
    step = jax.jit(E.step_autoreset, static_argnums=4)
    # the reference: step, reset, observe both and pick (the form step_autoreset replaces)
    ref = jax.jit(render_both_autoreset, static_argnums=4)
    action = jnp.asarray(spaces.NOOP_ACTION).at[0].set(1)  # walk forward
    seen_done = False
    for i in range(5):
        key = jax.random.key(10 + i)
        obs, new_state, reward, term, trunc, _ = step(key, state, action, params, STATIC)
        obs_ref, state_ref, reward_ref, term_ref, trunc_ref, _ = ref(key, state, action, params,
                                                                     STATIC)  # fmt: skip
        done_ref = term_ref | trunc_ref
        assert bool(term | trunc) == bool(done_ref)
        seen_done |= bool(done_ref)
        np.testing.assert_array_equal(np.asarray(obs["rgb"]), np.asarray(obs_ref["rgb"]))
        for a, b in zip(jax.tree.leaves(new_state), jax.tree.leaves(state_ref), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(reward), np.asarray(reward_ref))
        state = new_state
    assert seen_done

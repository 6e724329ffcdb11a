"""envs.voxel.scripted's agent-like controller: a compact action from the balanced prior, held
for AGENT_ACTION_REPEAT ticks (the frames a fresh RL agent shows MineCLIP)."""

import jax
import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.voxel import scripted

# One compiled program: actions [episodes, ticks, 8] for a batch of episode keys.
_ACTIONS = jax.jit(jax.vmap(jax.vmap(scripted.agent_action, in_axes=(None, 0)), in_axes=(0, None)))


def _actions(episode_key, ticks):
    return np.asarray(_ACTIONS(episode_key[None], jnp.arange(ticks)))[0]


def test_agent_action_is_held_for_the_repeat_and_is_a_compact_action():
    acts = _actions(jax.random.PRNGKey(3), 64)
    rows = {tuple(r) for r in np.asarray(spaces.COMPACT_ACTIONS)}
    assert all(tuple(a) in rows for a in acts)
    blocks = acts.reshape(-1, scripted.AGENT_ACTION_REPEAT, 8)
    np.testing.assert_array_equal(blocks, np.repeat(blocks[:, :1], scripted.AGENT_ACTION_REPEAT, 1))
    assert len({tuple(b[0]) for b in blocks}) > 4  # draws change between blocks


def test_agent_action_groups_follow_the_balanced_prior():
    # Group of each compact action from its name (independent of balanced_compact_logits).
    def group(name):
        if name.startswith("camera"):
            return 0 if name.startswith("camera_pitch+0_") else 1
        return 3 if name in ("use", "attack") else 2

    index = {tuple(r): i for i, r in enumerate(np.asarray(spaces.COMPACT_ACTIONS))}
    keys = jax.random.split(jax.random.PRNGKey(0), 500)
    acts = np.asarray(_ACTIONS(keys, jnp.arange(4 * 8)))[:, :: scripted.AGENT_ACTION_REPEAT]
    acts = acts.reshape(-1, acts.shape[-1])
    groups = np.array([group(spaces.COMPACT_NAMES[index[tuple(a)]]) for a in acts])
    freq = np.bincount(groups, minlength=4) / len(groups)  # 4,000 draws: sd about 0.007
    np.testing.assert_allclose(freq, 0.25, atol=0.03)


def test_scripted_action_agent_uses_the_episode_key():
    from envs import tasks
    from envs.voxel import env as E
    from tests.envs.voxel import helpers as H

    static = H.STATIC
    params = E.make_params(tasks.get("hunt a cow"), static, pool=H.pool())
    _, state = H.reset(jax.random.PRNGKey(0), params, static)
    ep = jax.random.PRNGKey(7)
    a = [scripted.scripted_action(scripted.BEHAVIOUR_AGENT, state, params, 0,
                                  jax.random.PRNGKey(t), t, ep) for t in range(4)]  # fmt: skip
    for x in a[1:]:
        np.testing.assert_array_equal(x, a[0])  # per-tick keys differ, the held action not
    np.testing.assert_array_equal(a[0], scripted.agent_action(ep, 0))


def test_wandering_and_circling_hold_the_episode_pitch():
    from envs import tasks
    from envs.voxel import env as E
    from tests.envs.voxel import helpers as H

    pitches = {float(scripted.episode_pitch(jax.random.PRNGKey(i))) for i in range(64)}
    assert pitches == {0.0, 15.0, 30.0, 45.0}  # degrees down, one per episode
    params = E.make_params(tasks.get("hunt a cow"), H.STATIC, pool=H.pool())
    _, state = H.reset(jax.random.PRNGKey(0), params, H.STATIC)
    state = state.replace(player=state.player.replace(pitch=jnp.float32(0.0)))
    for i in range(8):
        ep = jax.random.PRNGKey(100 + i)
        want = 12 + int(scripted.episode_pitch(ep)) // 15  # camera bins of 15 degrees, 12 = 0
        for behaviour in (scripted.BEHAVIOUR_WANDER, scripted.BEHAVIOUR_CIRCLE):
            a = scripted.scripted_action(behaviour, state, params, 0, jax.random.PRNGKey(i), 1, ep)
            assert int(a[3]) == want
        # Without an episode key the camera stays level (the tests' and recordings' default).
        a = scripted.scripted_action(scripted.BEHAVIOUR_WANDER, state, params, 0, ep, 1)
        assert int(a[3]) == 12

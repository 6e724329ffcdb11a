"""Episode videos of a policy on the embedded world: `record_video` rolls one env with the policy
inside one jitted `lax.scan`; the frames go to the project's one writer, `envs.video.write_video`
(the training loop's periodic videos and `agents.evaluate`'s sample episodes both use it)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from agents import losses


def record_video(built, params, key, steps: int) -> np.ndarray | None:
    """Roll env 0 of `built` (`agents.build.Built`) for `steps` steps with the policy `params`;
    uint8 frames `[T, H, W, 3]`, or None when the env renders no frames."""
    env, L = built.env, built.learner
    if not getattr(env.static, "render", False):
        return None
    dims = L.action_dims
    one = jax.tree.map(lambda x: x[:1], env.params)
    tid = jnp.asarray(env.task_ids[:1])
    noop = L.noop_action[None]

    @jax.jit
    def run(params, consts, key):
        k0, key = jax.random.split(key)
        raw, state = jax.vmap(env.reset, in_axes=(0, 0, None))(k0[None], one, env.static)

        def body(carry, k):
            raw, state, prev, core, start = carry
            obs = L.policy_obs_batch(consts, raw, tid)
            logits, _, core = L.step_policy(params, obs, prev, core, start)
            ka, ks = jax.random.split(k)
            a = losses.sample(ka, logits, dims)
            raw2, state, _, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, 0, None))(
                ks[None], state, jax.vmap(env.to_env_action)(a), one, env.static
            )
            prev = jnp.where((term | trunc)[:, None], noop, a)
            return (raw2, state, prev, core, term | trunc), raw["rgb"][0]

        first = (raw, state, noop, L.initial_core(1), jnp.ones((1,), bool))
        _, frames = jax.lax.scan(body, first, jax.random.split(key, steps))
        return frames

    return np.asarray(run(params, L.consts, key))

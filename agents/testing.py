"""A pure-JAX CartPole with the embedded world's functional signature, for tests and benchmarks.

The Anakin driver in :mod:`agents.learner` is written against the embedded voxel world's API
(`reset(key, params, static)`, `step_autoreset(key, state, action, params, static)`, see
docs/interfaces.md); this module implements the same signature for gymnasium's CartPole-v1
dynamics so the learner can be developed and tested without the voxel world:

    obs, state = reset(key, CartPoleParams(), CartPoleStatic())
    obs, state, r, term, trunc, info = step_autoreset(key, state, action, params, static)

`action` is int32 `[1]` (a one-component MultiDiscrete([2]) vector, like the world's `[8]`).
`info` has `success` (the pole survived `max_steps`) and `dense_reward` (= reward).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct


@dataclasses.dataclass(frozen=True)
class CartPoleStatic:
    """Shape-setting (static, hashable) settings; CartPole has none but the slot mirrors the world."""

    max_steps: int = 500


@struct.dataclass
class CartPoleParams:
    """Traced physics constants (gymnasium CartPole-v1 values)."""

    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5
    force_mag: float = 10.0
    tau: float = 0.02
    theta_threshold: float = 12 * 2 * 3.141592653589793 / 360
    x_threshold: float = 2.4


@struct.dataclass
class CartPoleState:
    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array
    t: jax.Array


ACTION_DIMS = (2,)


def _obs(s: CartPoleState) -> dict:
    return {"state": jnp.stack([s.x, s.x_dot, s.theta, s.theta_dot]).astype(jnp.float32)}


def reset(key: jax.Array, params: CartPoleParams, static: CartPoleStatic):
    """Uniform(-0.05, 0.05) initial state, as in gymnasium."""
    del params, static
    v = jax.random.uniform(key, (4,), minval=-0.05, maxval=0.05)
    s = CartPoleState(v[0], v[1], v[2], v[3], jnp.zeros((), jnp.int32))
    return _obs(s), s


def step(key: jax.Array, state: CartPoleState, action: jax.Array, params, static):
    """One Euler step of the cart-pole; reward 1 every step (gymnasium CartPole-v1)."""
    del key
    force = jnp.where(action[0] == 1, params.force_mag, -params.force_mag)
    cos, sin = jnp.cos(state.theta), jnp.sin(state.theta)
    total_mass = params.masscart + params.masspole
    pml = params.masspole * params.length
    temp = (force + pml * state.theta_dot**2 * sin) / total_mass
    theta_acc = (params.gravity * sin - cos * temp) / (
        params.length * (4.0 / 3.0 - params.masspole * cos**2 / total_mass)
    )
    x_acc = temp - pml * theta_acc * cos / total_mass
    x = state.x + params.tau * state.x_dot
    x_dot = state.x_dot + params.tau * x_acc
    theta = state.theta + params.tau * state.theta_dot
    theta_dot = state.theta_dot + params.tau * theta_acc
    s = CartPoleState(x, x_dot, theta, theta_dot, state.t + 1)
    terminated = (jnp.abs(x) > params.x_threshold) | (jnp.abs(theta) > params.theta_threshold)
    truncated = (s.t >= static.max_steps) & ~terminated
    reward = jnp.ones((), jnp.float32)
    info = {"success": truncated, "dense_reward": reward}
    return _obs(s), s, reward, terminated, truncated, info


def step_autoreset(key: jax.Array, state: CartPoleState, action: jax.Array, params, static):
    """`step`, then a fresh episode where it ended (the returned obs is the reset observation)."""
    k_step, k_reset = jax.random.split(key)
    obs, s, reward, term, trunc, info = step(k_step, state, action, params, static)
    obs_r, s_r = reset(k_reset, params, static)
    done = term | trunc
    s = jax.tree.map(lambda a, b: jnp.where(done, a, b), s_r, s)
    obs = jax.tree.map(lambda a, b: jnp.where(done, a, b), obs_r, obs)
    return obs, s, reward, term, trunc, info


# ----------------------------------------------------------------------------- a memory task
@dataclasses.dataclass(frozen=True)
class CueStatic:
    """Episode length: the cue is seen at step 0, acted on at step `length - 1`."""

    length: int = 5


@struct.dataclass
class CueState:
    cue: jax.Array  # int32 [], 0 or 1
    t: jax.Array  # int32 []


def _cue_obs(s: CueState, static: CueStatic) -> dict:
    """`[cue shown, is last step]`: the cue (+-1) at the first step only, 0 after."""
    shown = jnp.where(s.t == 0, 2.0 * s.cue - 1.0, 0.0)
    last = (s.t == static.length - 1).astype(jnp.float32)
    return {"state": jnp.stack([shown, last]).astype(jnp.float32)}


def cue_reset(key: jax.Array, params, static: CueStatic):
    del params
    s = CueState(jax.random.bernoulli(key).astype(jnp.int32), jnp.zeros((), jnp.int32))
    return _cue_obs(s, static), s


def cue_step(key: jax.Array, state: CueState, action: jax.Array, params, static: CueStatic):
    """A cue shown at the start must be answered at the end: action `[1]` equal to the cue at
    the last step earns 1, anything else 0. A memoryless policy sees only "this is the last
    step" then and succeeds half the time; one that remembers the cue, always."""
    del key, params
    last = state.t == static.length - 1
    correct = last & (action[0] == state.cue)
    s = state.replace(t=state.t + 1)
    reward = correct.astype(jnp.float32)
    info = {"success": correct, "dense_reward": reward}
    return _cue_obs(s, static), s, reward, last, jnp.zeros((), bool), info


def cue_step_autoreset(key: jax.Array, state: CueState, action: jax.Array, params, static):
    k_step, k_reset = jax.random.split(key)
    obs, s, reward, term, trunc, info = cue_step(k_step, state, action, params, static)
    obs_r, s_r = cue_reset(k_reset, params, static)
    s = jax.tree.map(lambda a, b: jnp.where(term, a, b), s_r, s)
    obs = jax.tree.map(lambda a, b: jnp.where(term, a, b), obs_r, obs)
    return obs, s, reward, term, trunc, info

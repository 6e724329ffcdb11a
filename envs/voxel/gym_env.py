"""Gymnasium front ends of the embedded world: ``VoxelEnv`` and ``VoxelVectorEnv``.

Both hold the functional world (``envs.voxel.env``) and call shared jitted functions, so any
number of instances with the same ``VoxelStaticConfig`` compile once. ``VoxelVectorEnv`` steps
all envs in one jitted, vmapped call (no subprocesses) and auto-resets finished envs in the same
step (Gymnasium's ``AutoresetMode.SAME_STEP``): the returned observation of a finished env is the
first of its next episode, and ``infos["final_obs"]`` / ``infos["final_info"]`` hold the last
observation and info of the finished episode (masked by ``infos["_final_obs"]``).

Actions are checked on the host before stepping (``envs.checks.check_action``): a float, NaN or
out-of-range component raises an error naming the component, its range and the value. The
functional ``step`` itself clips (it cannot raise inside ``jit``); ``validate_actions=False``
skips the host check where actions come from a trusted policy.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.checks import check_action, check_seed
from envs.tasks.spec import TaskSpec
from envs.voxel import env as E
from envs.voxel import parallel
from envs.voxel.state import VoxelParams, VoxelStaticConfig


@functools.partial(jax.jit, static_argnames="static")
def _reset(key, params, static):
    return E.reset(key, params, static)


@functools.partial(jax.jit, static_argnames="static")
def _step(key, state, action, params, static):
    return E.step(key, state, action, params, static)


def _reset_batch(keys, params, static):
    # Resets are rare: stacking single resets reuses their compiled function (shared with
    # VoxelEnv) instead of compiling a vmapped copy.
    outs = [_reset(k, params, static) for k in keys]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *outs)


_step_batch = jax.jit(E.step_autoreset_batch, static_argnames="static", donate_argnums=(1,))


def _to_numpy(tree):
    return jax.tree.map(np.asarray, jax.device_get(tree))


def _signals_info(info) -> dict:
    """Flatten the info dict for Gymnasium (signals become a dict of arrays)."""
    sig = info["signals"]
    return {
        "success": info["success"],
        "dead": info["dead"],
        "dense_reward": info["dense_reward"],
        "signals": {k: getattr(sig, k) for k in sig.__dataclass_fields__},
    }



def observation_space(static: VoxelStaticConfig) -> gym.spaces.Dict:
    """One env's observation space at `static`'s frame size and rendering (no JAX involved)."""
    return spaces.observation_space(static.height, static.width, rgb=static.render,
                                    voxel_size=static.voxel_size)  # fmt: skip

class VoxelEnv(gym.Env):
    """One embedded world as a Gymnasium env (MultiDiscrete MineDojo actions)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(
        self,
        task: TaskSpec,
        static: VoxelStaticConfig | None = None,
        params: VoxelParams | None = None,
        seed: int = 0,
        render_mode: str | None = None,
        validate_actions: bool = True,
    ):
        seed = check_seed(seed)
        self.spec_task = task
        self.validate_actions = validate_actions  # refuse invalid actions (False: clip, no check)
        self.static = static or VoxelStaticConfig()
        self.params = params if params is not None else E.make_params(task, self.static, seed=seed)
        self.observation_space = observation_space(self.static)
        self.action_space = spaces.ACTION_SPACE
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self._key = jax.random.key(seed)
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            seed = check_seed(seed)
        super().reset(seed=seed)
        if seed is not None:
            self._key = jax.random.key(seed)
        self._key, k = jax.random.split(self._key)
        obs, self._state = _reset(k, self.params, self.static)
        return _to_numpy(obs), {}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if self.validate_actions:
            action = check_action(self.action_space, action, names=spaces.ACTION_COMPONENTS)
        action = np.asarray(action)
        if action.shape != (8,):
            raise ValueError(
                f"action must be MineDojo's MultiDiscrete vector of shape (8,), got {action.shape}"
            )
        self._key, k = jax.random.split(self._key)
        obs, self._state, rew, term, trunc, info = _step(
            k, self._state, jnp.asarray(action, jnp.int32), self.params, self.static
        )
        return (
            _to_numpy(obs),
            float(rew),
            bool(term),
            bool(trunc),
            _to_numpy(_signals_info(info)),
        )

    @property
    def state(self):
        """The functional world state (a ``VoxelState`` pytree)."""
        return self._state

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        return np.asarray(
            jax.jit(E.render_state, static_argnames="static")(self._state, self.static)
        )


class VoxelVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` embedded worlds stepped by one jitted, vmapped call (same-step autoreset).

    With several JAX devices (GPUs, or CPU cores exposed by ``envs.voxel.parallel.use_cpu_cores``)
    the envs are split over them (``envs.voxel.parallel.sharded_step``): ``devices`` caps how
    many (default: all local devices, as many as divide ``num_envs``; 1 keeps one device)."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        task: TaskSpec,
        num_envs: int,
        static: VoxelStaticConfig | None = None,
        params: VoxelParams | None = None,
        seed: int = 0,
        devices: int | None = None,
        validate_actions: bool = True,
    ):
        seed = check_seed(seed)
        self.validate_actions = validate_actions  # refuse invalid actions (False: clip, no check)
        if num_envs <= 0:
            raise ValueError(f"num_envs must be positive, got {num_envs}")
        if devices is not None and devices < 1:
            raise ValueError(f"devices must be >= 1 (or None for all), got {devices}")
        self.spec_task = task
        self.num_envs = num_envs
        self.static = static or VoxelStaticConfig()
        self.params = params if params is not None else E.make_params(task, self.static, seed=seed)
        self.single_observation_space = observation_space(self.static)
        self.single_action_space = spaces.ACTION_SPACE
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self._key = jax.random.key(seed)
        self._states = None
        local = jax.local_devices()
        self.mesh = parallel.env_mesh(num_envs, local[: devices or len(local)])
        self._sharded = (
            parallel.sharded_step(self.mesh, self.static) if self.mesh.devices.size > 1 else None
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._key = jax.random.key(check_seed(seed))
        self._key, k = jax.random.split(self._key)
        obs, self._states = _reset_batch(
            jax.random.split(k, self.num_envs), self.params, self.static
        )
        if self._sharded is not None:
            self._states = jax.device_put(self._states, parallel.env_sharding(self.mesh))
        return _to_numpy(obs), {}

    def step(self, actions):
        if self._states is None:
            raise RuntimeError("call reset() before step()")
        if self.validate_actions:
            actions = check_action(
                self.single_action_space, actions, batch=self.num_envs,
                names=spaces.ACTION_COMPONENTS,
            )  # fmt: skip
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, 8):
            raise ValueError(f"actions must have shape ({self.num_envs}, 8), got {actions.shape}")
        self._key, k = jax.random.split(self._key)
        keys = jax.random.split(k, self.num_envs)
        actions = jnp.asarray(actions, jnp.int32)
        if self._sharded is not None:
            out = self._sharded(keys, self._states, actions, self.params)
        else:
            out = _step_batch(keys, self._states, actions, self.params, self.static)
        obs, self._states, rew, term, trunc, info, final_obs = out
        rew, term, trunc = np.asarray(rew), np.asarray(term), np.asarray(trunc)
        infos = _to_numpy(_signals_info(info))
        done = term | trunc
        if done.any():
            infos["final_obs"] = _to_numpy(final_obs)
            infos["_final_obs"] = done
            infos["final_info"] = {
                k: v for k, v in infos.items() if k not in ("final_obs", "_final_obs")
            }
            infos["_final_info"] = done
        return _to_numpy(obs), rew, term, trunc, infos

    @property
    def states(self):
        """The batched functional world state."""
        return self._states

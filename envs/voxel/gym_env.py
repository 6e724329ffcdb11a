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

import dataclasses
import functools
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

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


# Finished envs whose last frame is rendered together (see `step_autoreset_batch_once`): a
# small chunk keeps the frames rendered for a few finished envs few; a batch where many finish
# at once (a shared time limit) takes ceil(k / chunk) rounds of it.
FINAL_FRAME_CHUNK = 4


def _pick(done, a, b):
    """`a` where `done` (per env, axis 0), else `b`."""
    return jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b)


def step_autoreset_batch_once(keys, states, actions, params, static: VoxelStaticConfig):
    """``E.step_autoreset_batch`` (same arguments, same results) rendering each frame once.

    ``step_autoreset_batch`` renders every env's stepped frame, and on a step where some env
    finished renders the whole batch again from the reset states (the cond runs for all envs or
    none). Here the states are stepped and, where an episode ended, reset without rendering
    (``E.step_state`` / ``E.reset_state``), the states that go on are observed once, and
    ``final_obs`` renders only the finished envs' last frames, `FINAL_FRAME_CHUNK` at a time (a
    while loop that runs no round when no env finished). ``final_obs`` of an env that did not
    finish is its observation, as there.
    """
    n = keys.shape[0]
    step_state = jax.vmap(E.step_state, in_axes=(0, 0, 0, None, None))
    stepped, rew, term, trunc, info = step_state(keys, states, actions, params, static)
    done = term | trunc

    def with_resets(s):
        # The same reset keys as step_autoreset_batch: the same fresh episodes.
        reset_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
        fresh = jax.vmap(E.reset_state, in_axes=(0, None, None))(reset_keys, params, static)
        return jax.tree.map(lambda a, b: _pick(done, a, b), fresh, s)

    states = jax.lax.cond(jnp.any(done), with_resets, lambda s: s, stepped)
    observe = jax.vmap(E.observe, in_axes=(0, None, None))
    obs = observe(states, params, static)
    if not static.render:
        return obs, states, rew, term, trunc, info, observe(stepped, params, static)
    # Everything but the frame is cheap: observed for every stepped state.
    final_obs = observe(stepped, params, dataclasses.replace(static, render=False))
    chunk = min(FINAL_FRAME_CHUNK, n)
    # Finished envs first, then n (past the end: dropped by the scatter), padded to whole chunks.
    order = jnp.nonzero(done, size=n + chunk, fill_value=n)[0]
    rounds = (jnp.sum(done) + chunk - 1) // chunk
    render = jax.vmap(E.render_state, in_axes=(0, None))

    def render_chunk(i, rgb):
        rows = jax.lax.dynamic_slice(order, (i * chunk,), (chunk,))
        some = jax.tree.map(lambda x: x[jnp.minimum(rows, n - 1)], stepped)
        return rgb.at[rows].set(render(some, static), mode="drop")

    final_rgb = jax.lax.fori_loop(0, rounds, render_chunk, obs["rgb"])
    return obs, states, rew, term, trunc, info, {"rgb": final_rgb, **final_obs}


# Per-env leaves up to this many elements travel packed (see `_pack`); frames travel alone.
_PACK_MAX = 4096


def _pack(tree, layouts: dict, name: str):
    """`tree`'s per-env leaves ([N, ...]) as a few [N, K] arrays, one per dtype (the frame, or
    any leaf over `_PACK_MAX` elements per env, on its own), recording in `layouts[name]` how
    `_unpack` rebuilds it (per-env shapes: the same for any N). Why: the host fetches each
    output array separately, a few hundred microseconds each under load, and the obs and info
    dicts hold about 75 small arrays; packed, a step's outputs are half a dozen."""
    leaves, treedef = jax.tree.flatten(tree)
    groups: dict[str, list] = {}
    where = []
    for x in leaves:
        flat = x.reshape(x.shape[0], -1)
        key = str(x.dtype) if flat.shape[1] <= _PACK_MAX else f"leaf{len(where)}"
        start = sum(a.shape[1] for a in groups.get(key, []))
        groups.setdefault(key, []).append(flat)
        where.append((key, start, start + flat.shape[1], x.shape[1:], x.dtype))
    layouts[name] = (treedef, where)
    return {k: v[0] if len(v) == 1 else jnp.concatenate(v, axis=1) for k, v in groups.items()}


def _unpack(packed, layout):
    """NumPy arrays of the tree `_pack` packed (from its device arrays `packed`)."""
    treedef, where = layout
    arrays = jax.device_get(packed)  # one fetch for all of them
    leaves = []
    for key, start, stop, shape, _ in where:
        a = np.asarray(arrays[key])
        # A contiguous copy of the columns (small): users may hand the arrays on as buffers.
        leaves.append(np.ascontiguousarray(a[:, start:stop]).reshape(a.shape[:1] + shape))
    return jax.tree.unflatten(treedef, leaves)


@functools.cache
def _vector_step(static: VoxelStaticConfig, mesh: Mesh | None):
    """The whole of ``VoxelVectorEnv.step`` on the devices, as one jitted program, and the
    layouts of its packed outputs: ``f(key, states, actions, params) -> (key, host, states,
    final)``, where ``_unpack(host, layouts["host"])`` is ``(obs, reward, terminated,
    truncated, info)`` and ``_unpack(final, layouts["final"])`` is ``final_obs``; the envs split
    over `mesh` (None: one device), states donated. `layouts` is filled when f is traced.

    The key is split inside (the same per-env keys the host split gave) so that a step is one
    dispatch, and the outputs the host reads come packed (`_pack`) for one ``device_get``."""
    layouts: dict = {}

    def local(keys, states, actions, params):
        return step_autoreset_batch_once(keys, states, actions, params, static)

    if mesh is not None:
        local = parallel.shard_envs(local, mesh)

    def f(key, states, actions, params):
        key, k = jax.random.split(key)
        keys = jax.random.split(k, actions.shape[0])
        obs, states, rew, term, trunc, info, final_obs = local(keys, states, actions, params)
        host = _pack((obs, rew, term, trunc, _signals_info(info)), layouts, "host")
        return key, host, states, _pack(final_obs, layouts, "final")

    return jax.jit(f, donate_argnums=(1,)), layouts


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
    the envs are split over them (``envs.voxel.parallel.shard_envs``): ``devices`` caps how
    many (default: all local devices, as many as divide ``num_envs``; 1 keeps one device).

    A step is one jitted program (``_vector_step``: per-env keys, the batched step with
    same-step autoreset that renders only the frames it returns, the info dict) and one
    transfer of its outputs; ``final_obs`` crosses to the host only on steps where an env
    finished. ``python -m benchmarks.gym_vector_speed`` times it against the world's own loop."""

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
        split = self.mesh.devices.size > 1
        self._step_fn = _vector_step(self.static, self.mesh if split else None)
        # Placed once: params passed from one device would be copied to every device (the
        # world pool included) on every step.
        where = NamedSharding(self.mesh, P()) if split else self.mesh.devices.flat[0]
        self._params = jax.device_put(self.params, where)
        self._states_at = parallel.env_sharding(self.mesh) if split else where
        # The step returns its key replicated over the mesh; a key that came in placed
        # otherwise (a fresh one, on the default device) is another input type, and the step
        # program would be traced and compiled twice.
        self._key_at = where

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._key = jax.random.key(check_seed(seed))
        self._key, k = jax.random.split(self._key)
        self._key = jax.device_put(self._key, self._key_at)
        obs, self._states = _reset_batch(
            jax.random.split(k, self.num_envs), self.params, self.static
        )
        self._states = jax.device_put(self._states, self._states_at)
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
        # int32 on the host: the jitted step takes the NumPy array straight to its devices.
        actions = actions.astype(np.int32, copy=False)
        step, layouts = self._step_fn
        self._key, host, self._states, final = step(self._key, self._states, actions, self._params)
        obs, rew, term, trunc, infos = _unpack(host, layouts["host"])
        done = term | trunc
        if done.any():
            infos["final_obs"] = _unpack(final, layouts["final"])
            infos["_final_obs"] = done
            infos["final_info"] = {
                k: v for k, v in infos.items() if k not in ("final_obs", "_final_obs")
            }
            infos["_final_info"] = done
        return obs, rew, term, trunc, infos

    @property
    def states(self):
        """The batched functional world state."""
        return self._states

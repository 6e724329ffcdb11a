"""Gymnasium wrappers shared by every backend.

* ``ChannelsFirst``: MineDojo's exact ``rgb`` layout ``(3, H, W)`` (our backends are channels-last).
* ``CompactActions``: the paper's 89 discrete actions (``envs.spaces.COMPACT_ACTIONS``) on top of
  the MultiDiscrete MineDojo action space; works for single and vector envs.
* ``DenseReward``: reward = sparse task reward + the paper's manual dense shaping
  (``info["dense_reward"]``), the baseline reward of the paper's experiments.
* ``FlatDict``: the nested observation dict as one level of Boxes (``"life_stats/food"``), what
  Stable-Baselines3's ``MultiInputPolicy`` takes (docs/interfaces.md has the recipe).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs import spaces


def _is_vector(env) -> bool:
    return isinstance(env, gym.vector.VectorEnv)


def _channels_first_space(space: gym.spaces.Dict) -> gym.spaces.Dict:
    rgb = space["rgb"]
    low = np.moveaxis(rgb.low, -1, -3)
    high = np.moveaxis(rgb.high, -1, -3)
    return gym.spaces.Dict({**space.spaces, "rgb": gym.spaces.Box(low, high, dtype=rgb.dtype)})


def _to_channels_first(obs: dict) -> dict:
    return {**obs, "rgb": np.ascontiguousarray(np.moveaxis(obs["rgb"], -1, -3))}


class ChannelsFirst(gym.ObservationWrapper):
    """``rgb`` as MineDojo's channels-first ``(3, H, W)`` uint8 (single envs)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        if "rgb" not in env.observation_space.spaces:
            raise ValueError("ChannelsFirst needs an 'rgb' observation; the env renders none")
        self.observation_space = _channels_first_space(env.observation_space)

    def observation(self, observation):
        return _to_channels_first(observation)


class VectorChannelsFirst(gym.vector.VectorObservationWrapper):
    """``ChannelsFirst`` for vector envs: ``rgb`` becomes ``(N, 3, H, W)``."""

    def __init__(self, env: gym.vector.VectorEnv):
        super().__init__(env)
        if "rgb" not in env.single_observation_space.spaces:
            raise ValueError("VectorChannelsFirst needs an 'rgb' observation; the env renders none")
        self.single_observation_space = _channels_first_space(env.single_observation_space)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, env.num_envs
        )

    def observations(self, observations):
        return _to_channels_first(observations)


def compact_to_multidiscrete(index) -> np.ndarray:
    """MultiDiscrete action(s) int [..., 8] of compact action index(es) in [0, 89)."""
    index = np.asarray(index)
    if np.any((index < 0) | (index >= spaces.NUM_COMPACT_ACTIONS)):
        raise ValueError(
            f"compact actions must be in [0, {spaces.NUM_COMPACT_ACTIONS}), got {index}"
        )
    return spaces.COMPACT_ACTIONS[index].astype(np.int64)


class CompactActions(gym.ActionWrapper):
    """Discrete(89): the paper's compact action set (single envs)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.action_space = gym.spaces.Discrete(spaces.NUM_COMPACT_ACTIONS)

    def action(self, action):
        return compact_to_multidiscrete(int(action))


class VectorCompactActions(gym.vector.VectorActionWrapper):
    """Discrete(89) per env for vector envs (actions ``int [N]``)."""

    def __init__(self, env: gym.vector.VectorEnv):
        super().__init__(env)
        self.single_action_space = gym.spaces.Discrete(spaces.NUM_COMPACT_ACTIONS)
        self.action_space = gym.spaces.MultiDiscrete(
            np.full(env.num_envs, spaces.NUM_COMPACT_ACTIONS)
        )

    def actions(self, actions):
        return compact_to_multidiscrete(np.asarray(actions).reshape(self.num_envs))


class DenseReward(gym.Wrapper):
    """Reward = task reward + ``info["dense_reward"]`` (the paper's manual baseline reward)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if "dense_reward" not in info:
            raise KeyError("DenseReward needs info['dense_reward'] from the backend")
        total = reward + np.asarray(info["dense_reward"])
        # a single env's reward is a Python float, as Gymnasium's and SB3's checkers expect
        return obs, float(total) if np.ndim(total) == 0 else total, terminated, truncated, info


def _flat_spaces(space: gym.spaces.Dict, prefix: str = "") -> dict[str, gym.spaces.Box]:
    out = {}
    for key, sub in space.spaces.items():
        name = prefix + key
        if isinstance(sub, gym.spaces.Dict):
            out.update(_flat_spaces(sub, name + "/"))
        elif name == "rgb":  # an image: SB3's CNN extractor wants it uint8 as it is
            out[name] = sub
        else:  # everything else a float vector: bools and ids included, scalars as (1,)
            shape = sub.shape or (1,)
            low = np.broadcast_to(np.asarray(sub.low, np.float32), sub.shape).reshape(shape)
            high = np.broadcast_to(np.asarray(sub.high, np.float32), sub.shape).reshape(shape)
            out[name] = gym.spaces.Box(low, high, dtype=np.float32)
    return out


class FlatDict(gym.ObservationWrapper):
    """The observation dict one level deep: nested keys joined by "/" (``"location_stats/pos"``),
    every leaf but ``rgb`` a float32 Box of rank >= 1. Libraries whose dict policies take one
    level of Boxes (SB3's ``MultiInputPolicy``) read it as it is. ``keys``: the top-level keys
    to keep (e.g. ``("rgb", "location_stats")``; default all)."""

    def __init__(self, env: gym.Env, keys=None):
        super().__init__(env)
        space = env.observation_space
        if keys is not None:
            missing = sorted(set(keys) - set(space.spaces))
            if missing:
                raise ValueError(f"FlatDict: no observation keys {missing}; the env has "
                                 f"{sorted(space.spaces)}")  # fmt: skip
            space = gym.spaces.Dict({k: space[k] for k in keys})
        self._spaces = _flat_spaces(space)
        self.observation_space = gym.spaces.Dict(self._spaces)

    def observation(self, observation):
        out = {}
        for name, box in self._spaces.items():
            value = observation
            for part in name.split("/"):
                value = value[part]
            out[name] = np.asarray(value, box.dtype).reshape(box.shape)
        return out


def compact(env):
    """``CompactActions`` or ``VectorCompactActions`` as fits ``env``."""
    return VectorCompactActions(env) if _is_vector(env) else CompactActions(env)


def channels_first(env):
    """``ChannelsFirst`` or ``VectorChannelsFirst`` as fits ``env``."""
    return VectorChannelsFirst(env) if _is_vector(env) else ChannelsFirst(env)

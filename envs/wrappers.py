"""Gymnasium wrappers shared by every backend.

* ``ChannelsFirst``: MineDojo's exact ``rgb`` layout ``(3, H, W)`` (our backends are channels-last).
* ``CompactActions``: the paper's 89 discrete actions (``envs.spaces.COMPACT_ACTIONS``) on top of
  the MultiDiscrete MineDojo action space; works for single and vector envs.
* ``DenseReward``: reward = sparse task reward + the paper's manual dense shaping
  (``info["dense_reward"]``), the baseline reward of the paper's experiments.
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
        return obs, reward + np.asarray(info["dense_reward"]), terminated, truncated, info


def compact(env):
    """``CompactActions`` or ``VectorCompactActions`` as fits ``env``."""
    return VectorCompactActions(env) if _is_vector(env) else CompactActions(env)


def channels_first(env):
    """``ChannelsFirst`` or ``VectorChannelsFirst`` as fits ``env``."""
    return VectorChannelsFirst(env) if _is_vector(env) else ChannelsFirst(env)

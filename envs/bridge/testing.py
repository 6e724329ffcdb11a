"""Importable env factories for fault injection, async-ordering tests and benchmarks.

Workers import these by name (``"envs.bridge.testing:faulty_env"``), so they must stay at module
level and cheap to import (NumPy + Gymnasium only).
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from typing import Any

import gymnasium as gym
import numpy as np

# How a fault manifests: "crash" exits the process abruptly (like a segfaulting simulator), "kill"
# SIGKILLs itself, "hang" blocks forever (like a deadlocked socket), "raise" raises in Python,
# "gil" sits 60 s in a C call that holds the GIL (no Python signal handler or thread can run).
FAULT_KINDS = ("crash", "kill", "hang", "raise", "gil")
# Set by the bridge worker before it builds its env (see worker.py).
ENV_ID_VARIABLE = "MINECLIP_BRIDGE_ENV_ID"


class CounterEnv(gym.Env):
    """A tiny deterministic env whose observation says exactly what happened.

    Observation float64 ``[4]``: (seed the episode was reset with or -1, step in episode, last
    action, pid of the process hosting the env). Reward = action + 1. Terminates after
    ``episode_length`` steps.

    Faults are per env id (the bridge worker's, see ``ENV_ID_VARIABLE``): ``step_faults`` maps an
    env id to ``(kind, k)``: fault at the k-th step of the process's life; ``reset_faults`` maps
    it to ``(kind, k)``: fault on the k-th reset. With ``once_marker`` (a path prefix) each env's
    fault fires only once across restarts (the marker file remembers), so a replacement worker
    runs clean. ``step_delays`` maps an env id to seconds of sleep per step. ``bad_rewards``
    maps an env id to the reward its steps return instead of action + 1 (None, a string, NaN:
    a broken simulator's output).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        episode_length: int = 1000,
        step_faults: dict[int, tuple[str, int]] | None = None,
        reset_faults: dict[int, tuple[str, int]] | None = None,
        once_marker: str | None = None,
        step_delays: dict[int, float] | None = None,
        env_id: int | None = None,
        bad_rewards: dict[int, Any] | None = None,
    ) -> None:
        for kind, _ in [*(step_faults or {}).values(), *(reset_faults or {}).values()]:
            if kind not in FAULT_KINDS:
                raise ValueError(f"fault kind must be one of {FAULT_KINDS}, got {kind!r}")
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float64)
        self.action_space = gym.spaces.Discrete(3)
        self.episode_length = episode_length
        self.env_id = _own_env_id() if env_id is None else env_id
        self.step_fault = (step_faults or {}).get(self.env_id)
        self.reset_fault = (reset_faults or {}).get(self.env_id)
        self.once_marker = once_marker
        self.step_delay_s = (step_delays or {}).get(self.env_id, 0.0)
        self.bad_reward = (bad_rewards or {}).get(self.env_id, "none given")
        self.total_steps = 0
        self.resets = 0
        self.episode_seed = -1
        self.t = 0
        self.last_action = -1

    def _maybe_fault(self, kind: str) -> None:
        if self.once_marker is not None:
            path = f"{self.once_marker}.{self.env_id}"
            if os.path.exists(path):
                return
            with open(path, "w") as f:
                f.write(str(os.getpid()))
        print(f"CounterEnv {self.env_id}: injecting fault {kind!r}", flush=True)
        if kind == "crash":
            os._exit(17)
        if kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if kind == "hang":
            while True:
                time.sleep(3600)
        if kind == "gil":
            ctypes.PyDLL(None).sleep(60)  # PyDLL keeps the GIL during the call
            return
        raise RuntimeError(f"injected failure in env {self.env_id}")

    def _obs(self) -> np.ndarray:
        return np.array([self.episode_seed, self.t, self.last_action, os.getpid()], np.float64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.resets += 1
        if self.reset_fault is not None and self.resets == self.reset_fault[1]:
            self._maybe_fault(self.reset_fault[0])
        self.episode_seed = -1 if seed is None else seed
        self.t = 0
        self.last_action = -1
        return self._obs(), {"resets": self.resets}

    def step(self, action: Any):
        self.total_steps += 1
        if self.step_fault is not None and self.total_steps == self.step_fault[1]:
            self._maybe_fault(self.step_fault[0])
        if self.step_delay_s:
            time.sleep(self.step_delay_s)
        self.t += 1
        self.last_action = int(action)
        terminated = self.t >= self.episode_length
        reward = float(action) + 1.0 if self.bad_reward == "none given" else self.bad_reward
        return self._obs(), reward, terminated, False, {"t": self.t}


def _own_env_id() -> int:
    """The env id of the bridge worker hosting this process (-1 outside a worker)."""
    return int(os.environ.get(ENV_ID_VARIABLE, "-1"))


def faulty_env(**kwargs: Any) -> CounterEnv:
    """Factory: ``CounterEnv(**kwargs)``; see its docstring for the fault options."""
    return CounterEnv(**kwargs)


class SlowEnv(gym.Env):
    """Simulates a Java Minecraft instance: each step takes 1 / U(rate - jitter, rate + jitter) s.

    The step rate is drawn per step from the env's own seeded generator (``np_random``), so runs
    are reproducible given the reset seed.
    """

    metadata = {"render_modes": []}

    def __init__(self, rate_hz: float = 20.0, jitter_hz: float = 5.0, obs_size: int = 8) -> None:
        if not 0 <= jitter_hz < rate_hz:
            raise ValueError(f"need 0 <= jitter_hz < rate_hz, got {jitter_hz}, {rate_hz}")
        self.rate_hz = rate_hz
        self.jitter_hz = jitter_hz
        self.observation_space = gym.spaces.Box(0, 255, (obs_size,), np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(self.observation_space.shape, np.uint8), {}

    def step(self, action: Any):
        rate = self.np_random.uniform(self.rate_hz - self.jitter_hz, self.rate_hz + self.jitter_hz)
        time.sleep(1.0 / rate)
        self.t += 1
        obs = np.full(self.observation_space.shape, self.t % 256, np.uint8)
        return obs, 1.0, False, False, {}


def slow_env(**kwargs: Any) -> SlowEnv:
    """Factory: ``SlowEnv(**kwargs)`` (20 +/- 5 steps/s by default)."""
    return SlowEnv(**kwargs)


class FrameObservation(gym.ObservationWrapper):
    """CartPole with a uint8 ``[H, W, 3]`` frame as observation (MineCLIP's 160x256 by default).

    The frame is a fixed buffer with the state's bytes stamped into its first row, so the env costs
    the same under any vector env and the benchmark measures transport, not rendering.
    """

    def __init__(self, env: gym.Env, height: int = 160, width: int = 256) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Box(0, 255, (height, width, 3), np.uint8)
        self._frame = np.zeros((height, width, 3), np.uint8)

    def observation(self, observation: Any) -> np.ndarray:
        stamp = np.frombuffer(np.asarray(observation, np.float32).tobytes(), np.uint8)
        self._frame[0, : stamp.size // 3] = stamp[: stamp.size // 3 * 3].reshape(-1, 3)
        return self._frame


def cartpole_frames(height: int = 160, width: int = 256) -> gym.Env:
    """Factory: CartPole-v1 observed as a 160x256x3 uint8 frame (for the transport benchmark)."""
    return FrameObservation(gym.make("CartPole-v1"), height, width)

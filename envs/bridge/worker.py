"""The worker process of ``ProcessVectorEnv``: hosts one env, steps it on command.

Started by the parent as ``python -u <this file> <socket fd> <env id> <parent pid> <pdeathsig>`` (a fresh interpreter: spawn
semantics, nothing inherited but the socket). Stdout and stderr go to the worker's log file. The
wire protocol on the Unix socket (``channel.py`` length-prefixed frames):

parent -> worker                                   worker -> parent
  b"I" + pickle(config dict)  build the env          b"K" + pickle((obs_space, act_space, metadata))
  b"M" + pickle(BridgeLayout), with the buffer fd    b"A"  attached
       attached as SCM_RIGHTS ancillary data
  b"R" + pickle((seed, options, after_fault))        b"D" [+ pickle((info, final_info, has_final))]
  b"S"  step the action in shared memory row          b"D" ... (same)
  b"C"  close                                         (exits)
                                                     b"E" + "Type: message": the env raised
Observations, actions, rewards and flags live in shared memory; only small infos are pickled.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import mmap
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

# Parent-death detection: a poll of getppid() (works from any parent thread) plus PR_SET_PDEATHSIG
# (fires even while this process is busy in C code).
_WATCHDOG_PERIOD_S = 0.2
_PR_SET_PDEATHSIG = 1
ENV_ID_VARIABLE = "MINECLIP_BRIDGE_ENV_ID"


def _load_sibling(module: str) -> Any:
    """Import a sibling module without importing the ``envs`` package (which may pull in JAX)."""
    name = f"envs.bridge.{module}"
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{module}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Registered under its real name so pickled layouts resolve to this very module, and a later
    # ``import envs.bridge`` by the env factory reuses it.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _kill_own_group_and_exit(*_: Any) -> None:
    """Take down this worker and anything it launched (e.g. a JVM), then exit."""
    try:
        if os.getpgid(0) == os.getpid():  # we lead our own group: safe to kill all of it
            os.killpg(os.getpid(), signal.SIGKILL)
    finally:
        os._exit(1)


def _arm_parent_death(parent_pid: int, use_pdeathsig: bool) -> None:
    if use_pdeathsig and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            signal.signal(signal.SIGTERM, _kill_own_group_and_exit)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the polling watchdog below still covers it

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                _kill_own_group_and_exit()
            time.sleep(_WATCHDOG_PERIOD_S)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the watchdog was armed
        _kill_own_group_and_exit()


def build_env(factory: Any, kwargs: dict[str, Any]) -> Any:
    """Build an env from ``"pkg.module:function"``, a Gymnasium id, or a pickled callable."""
    if isinstance(factory, bytes):
        factory = pickle.loads(factory)
    if isinstance(factory, str):
        if ":" in factory:
            module_name, _, attr = factory.partition(":")
            module = importlib.import_module(module_name)
            try:
                fn = getattr(module, attr)
            except AttributeError as err:
                raise AttributeError(
                    f"factory {factory!r}: module {module_name!r} has no attribute {attr!r}"
                ) from err
            return fn(**kwargs)
        import gymnasium

        return gymnasium.make(factory, **kwargs)
    return factory(**kwargs)


class _Worker:
    def __init__(self, conn: Any, env_id: int, shm: Any) -> None:
        self.conn = conn  # a channel.Channel
        self.env_id = env_id
        self.shm = shm
        self.env: Any = None
        self.max_episode_steps: int | None = None
        self.same_step = False
        self.episode_steps = 0
        self.needs_reset = False  # NEXT_STEP mode: the next step command resets instead
        self.skip_next_step = False  # NEXT_STEP mode after a fault reset: obs already delivered

    def serve(self) -> None:
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                return  # the parent went away
            command = message[:1]
            if command == b"S":
                self.step()
            elif command == b"R":
                self.reset(*pickle.loads(message[1:]))
            elif command == b"I":
                self.init(pickle.loads(message[1:]))
            elif command == b"M":
                self.attach(pickle.loads(message[1:]))
            elif command == b"C":
                return
            else:
                raise RuntimeError(f"unknown command {command!r}")

    def init(self, config: dict[str, Any]) -> None:
        self.max_episode_steps = config["max_episode_steps"]
        self.same_step = config["autoreset_mode"] == "SameStep"
        self.env = build_env(config["factory"], config["kwargs"])
        spaces = (
            self.env.observation_space,
            self.env.action_space,
            dict(getattr(self.env, "metadata", {}) or {}),
        )
        self.conn.send(b"K" + pickle.dumps(spaces, protocol=pickle.HIGHEST_PROTOCOL))

    def attach(self, layout: Any) -> None:
        fds = self.conn.take_fds()  # sent along with the layout message
        if len(fds) != 1:
            raise RuntimeError("expected the shared buffer descriptor after the layout message")
        self.buffer = mmap.mmap(fds[0], layout.nbytes)
        os.close(fds[0])
        self.layout = layout
        self.obs_views = layout.obs.views(self.buffer)
        self.final_views = layout.final_obs.views(self.buffer)
        self.action_views = layout.action.views(self.buffer)
        self.reward, self.terminated, self.truncated = layout.scalar_views(self.buffer)
        self.conn.send(b"A")

    def _write_obs(self, views: list, obs: Any) -> None:
        self.shm.write_row(views, self.layout.obs.structure, self.env_id, obs)

    def _reply(self, info: dict, final_info: dict | None, has_final: bool) -> None:
        if not info and not has_final:
            self.conn.send(b"D")
        else:
            payload = pickle.dumps((info, final_info, has_final), protocol=pickle.HIGHEST_PROTOCOL)
            self.conn.send(b"D" + payload)

    def reset(self, seed: int | None, options: dict | None, after_fault: bool) -> None:
        obs, info = self.env.reset(seed=seed, options=options)
        self.episode_steps = 0
        self.needs_reset = False
        self.skip_next_step = after_fault and not self.same_step
        self._write_obs(self.obs_views, obs)
        i = self.env_id
        self.reward[i], self.terminated[i], self.truncated[i] = 0.0, False, False
        self._reply(info, None, False)

    def step(self) -> None:
        i = self.env_id
        if self.skip_next_step or self.needs_reset:
            # NEXT_STEP autoreset: this step's action is ignored and a fresh episode's first
            # observation comes back with zero reward.
            if self.needs_reset:
                obs, info = self.env.reset()
                self.episode_steps = 0
                self._write_obs(self.obs_views, obs)
            else:
                info = {}
            self.skip_next_step = self.needs_reset = False
            self.reward[i], self.terminated[i], self.truncated[i] = 0.0, False, False
            self._reply(info, None, False)
            return
        action = self.shm.read_single(self.action_views, self.layout.action, i)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_steps += 1
        if self.max_episode_steps is not None and self.episode_steps >= self.max_episode_steps:
            truncated = True  # explicit time-limit truncation, as gymnasium.wrappers.TimeLimit
        done = bool(terminated or truncated)
        self.reward[i], self.terminated[i], self.truncated[i] = reward, terminated, truncated
        if done and self.same_step:
            self._write_obs(self.final_views, obs)
            final_info = info
            obs, info = self.env.reset()
            self.episode_steps = 0
            self._write_obs(self.obs_views, obs)
            self._reply(info, final_info, True)
            return
        self._write_obs(self.obs_views, obs)
        self.needs_reset = done
        self._reply(info, None, False)


def main(argv: list[str]) -> int:
    fd, env_id, parent_pid, use_pdeathsig = int(argv[1]), int(argv[2]), int(argv[3]), argv[4]
    _arm_parent_death(parent_pid, use_pdeathsig == "1")
    # Lets env factories know which env they are (e.g. to pick a per-instance port or run dir).
    os.environ[ENV_ID_VARIABLE] = str(env_id)
    conn = _load_sibling("channel").Channel(socket.socket(fileno=fd))
    shm = _load_sibling("shm")
    worker = _Worker(conn, env_id, shm)
    print(f"[bridge worker {env_id}] pid {os.getpid()} started", file=sys.stderr, flush=True)
    try:
        worker.serve()
    except BaseException as err:
        print(traceback.format_exc(), file=sys.stderr, flush=True)  # full traceback: the log
        summary = "".join(traceback.format_exception_only(err)).strip()
        try:
            conn.send(b"E" + summary.encode("utf-8", "replace"))
        except OSError:
            pass
        return 1
    finally:
        if worker.env is not None:
            try:
                worker.env.close()
            except Exception:  # closing is best effort; the parent kills the group anyway
                traceback.print_exc()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The worker process of ``ProcessVectorEnv``: hosts one or more envs, steps them on command.

Started by the parent as ``python -u <this file> <socket fd> <worker index> <parent pid>
<pdeathsig>`` (a fresh interpreter: spawn semantics, nothing inherited but the socket). Stdout and
stderr go to the worker's log file. A worker hosts the envs with ids ``config["env_ids"]`` (one
unless the vector env was built with ``envs_per_worker`` > 1) and steps the ones a command names
one after another. The wire protocol on the Unix socket (``channel.py`` length-prefixed frames):

parent -> worker                                   worker -> parent
  b"I" + pickle(config dict)  build the envs         b"K" + pickle([(obs_space, act_space,
                                                            metadata) per env])
  b"M" + pickle(BridgeLayout), with the buffer fd    b"A"  attached
       attached as SCM_RIGHTS ancillary data
  b"R" + pickle([(env_id, seed, options,             b"D" [+ pickle({env_id: (info, final_info,
         after_fault), ...])  reset those envs             has_final)})] for the envs whose
                                                           info is not empty
  b"S" [+ uint16 env ids]  step those envs (all of    b"D" ... (same)
       this worker's without ids) with the actions
       in their shared-memory rows
  b"C"  close                                        (exits)
                                                     b"X" + pickle((env_id, pickled exception
                                                            or None, summary, traceback)): an
                                                            env's reset/step raised; the worker
                                                            keeps serving (an exception with a
                                                            true ``restart_worker`` attribute is
                                                            a simulator fault: b"E" and exit)
                                                     b"E" + "Type: message": the worker failed
                                                            (e.g. building an env) and exits
One answer per command, in order. Observations, actions, rewards and flags live in shared memory;
only non-empty infos are pickled.
"""

from __future__ import annotations

import array
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

# Parent-death detection: PR_SET_PDEATHSIG with SIGKILL (fires even while this process is busy in
# C code holding the GIL), a watchdog process that then kills the worker's group (a JVM it
# launched), and a poll of getppid() in a thread (works from any parent thread).
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


def _parent_of(pid: int) -> int:
    """The parent pid of ``pid`` from /proc (raises OSError once ``pid`` is gone)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _start_watchdog_process(parent_pid: int, close_fd: int) -> None:
    """Fork a watchdog that SIGKILLs this worker's process group once the worker or its parent is
    gone. A separate process is independent of this one's GIL and threads: it acts even while
    the worker is stuck in a C call, and it takes down what the worker launched (a JVM) after
    the kernel's death signal has killed the worker itself."""
    worker_pid = os.getpid()
    if os.getpgid(0) != worker_pid or not os.path.exists(f"/proc/{worker_pid}/stat"):
        return  # not leading our own group (or no /proc): the parent's killpg covers it
    if os.fork() != 0:
        return
    try:  # the watchdog: hold no socket end (the parent must see EOF when the worker dies)
        os.close(close_fd)
        while os.getppid() == worker_pid and _parent_of(worker_pid) == parent_pid:
            time.sleep(_WATCHDOG_PERIOD_S)
    except BaseException:
        pass
    finally:
        try:
            os.killpg(worker_pid, signal.SIGKILL)  # the worker's group, this watchdog included
        finally:
            os._exit(0)


def _arm_parent_death(parent_pid: int, use_pdeathsig: bool, socket_fd: int) -> None:
    if use_pdeathsig and sys.platform.startswith("linux"):
        try:
            # SIGKILL, not a Python handler: a handler only runs between bytecodes, so a worker
            # inside a long C call holding the GIL would outlive its parent by that call.
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdogs below still cover it
    if sys.platform.startswith("linux"):
        _start_watchdog_process(parent_pid, socket_fd)

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


class _Hosted:
    """One env of this worker and its episode bookkeeping."""

    __slots__ = ("env", "env_id", "episode_steps", "needs_reset", "skip_next_step")

    def __init__(self, env: Any, env_id: int) -> None:
        self.env = env
        self.env_id = env_id
        self.episode_steps = 0
        self.needs_reset = False  # NEXT_STEP mode: the next step command resets instead
        self.skip_next_step = False  # NEXT_STEP mode after a fault reset: obs already delivered


def check_reward(reward: Any, env_id: int) -> None:
    """A step's reward must be one real, non-NaN number: None, a string or an array would be
    written into the shared float buffer as NaN or garbage without a word."""
    try:
        ok = reward is not None and not isinstance(reward, (str, bytes)) and reward == reward
        ok = ok and float(reward) == float(reward)  # NaN != NaN; raises for non-numbers
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise TypeError(
            f"env {env_id} returned reward {reward!r} ({type(reward).__name__}) from step(); a "
            f"reward must be a real number (int or float, not NaN): fix the env or wrap it"
        )


class _Worker:
    def __init__(self, conn: Any, index: int, shm: Any) -> None:
        self.conn = conn  # a channel.Channel
        self.index = index
        self.shm = shm
        self.hosted: list[_Hosted] = []
        self.by_id: dict[int, _Hosted] = {}
        self.max_episode_steps: int | None = None
        self.same_step = False
        self.current_env_id = -1  # the env being reset or stepped (named in error reports)

    def serve(self) -> None:
        recv = self.conn.recv
        while True:
            try:
                message = recv()
            except (EOFError, OSError):
                return  # the parent went away
            command = message[:1]
            try:
                if command == b"S":
                    if len(message) == 1:
                        self.step(self.hosted)
                    else:
                        ids = array.array("H")
                        ids.frombytes(message[1:])
                        self.step([self.by_id[i] for i in ids])
                elif command == b"R":
                    self.reset(pickle.loads(message[1:]))
            except Exception as err:
                if getattr(err, "restart_worker", False):
                    raise  # a simulator fault (e.g. the JVM died): exit, the parent restarts us
                self._report_env_error(err)  # the env's own code raised: the caller's to see
                continue
            if command in (b"S", b"R"):
                continue
            if command == b"I":
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
        specs = []
        for env_id in config["env_ids"]:
            # Lets env factories know which env they are (e.g. to pick a per-instance port).
            os.environ[ENV_ID_VARIABLE] = str(env_id)
            env = build_env(config["factory"], config["kwargs"])
            hosted = _Hosted(env, env_id)
            self.hosted.append(hosted)
            self.by_id[env_id] = hosted
            specs.append(
                (env.observation_space, env.action_space, dict(getattr(env, "metadata", {}) or {}))
            )
        self.conn.send(b"K" + pickle.dumps(specs, protocol=pickle.HIGHEST_PROTOCOL))

    def attach(self, layout: Any) -> None:
        fds = self.conn.take_fds()  # sent along with the layout message
        if len(fds) != 1:
            raise RuntimeError("expected the shared buffer descriptor after the layout message")
        self.buffer = mmap.mmap(fds[0], layout.nbytes)
        os.close(fds[0])
        self.layout = layout
        self.obs_views = layout.obs.views(self.buffer)
        self.final_views = layout.final_obs.views(self.buffer)
        self.reward, self.terminated, self.truncated = layout.scalar_views(self.buffer)
        self.read_action = self.shm.single_reader(layout.action.views(self.buffer), layout.action)
        self.write_obs = self.shm.row_writer(self.obs_views, layout.obs.structure)
        self.write_final = self.shm.row_writer(self.final_views, layout.obs.structure)
        self.conn.send(b"A")

    def _report_env_error(self, err: Exception) -> None:
        """Answer the command with the env's exception (b"X"); this worker keeps serving."""
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)
        summary = "".join(traceback.format_exception_only(err)).strip()
        try:
            payload = pickle.dumps(err, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(payload)  # some exceptions pickle but do not unpickle
        except Exception:
            payload = None
        record = (self.current_env_id, payload, summary, text)
        self.conn.send(b"X" + pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))

    def _reply(self, extras: dict[int, tuple] | None) -> None:
        if not extras:
            self.conn.send(b"D")
        else:
            self.conn.send(b"D" + pickle.dumps(extras, protocol=pickle.HIGHEST_PROTOCOL))

    def reset(self, items: list[tuple[int, int | None, dict | None, bool]]) -> None:
        extras: dict[int, tuple] = {}
        for env_id, seed, options, after_fault in items:
            hosted = self.by_id[env_id]
            self.current_env_id = env_id
            obs, info = hosted.env.reset(seed=seed, options=options)
            hosted.episode_steps = 0
            hosted.needs_reset = False
            hosted.skip_next_step = after_fault and not self.same_step
            self.write_obs(env_id, obs)
            self.reward[env_id], self.terminated[env_id], self.truncated[env_id] = 0.0, False, False
            if info:
                extras[env_id] = (info, None, False)
        self._reply(extras)

    def step(self, hosted_envs: list[_Hosted]) -> None:
        extras: dict[int, tuple] | None = None
        reward_view, terminated_view, truncated_view = self.reward, self.terminated, self.truncated
        max_steps = self.max_episode_steps
        for hosted in hosted_envs:
            i = hosted.env_id
            self.current_env_id = i
            if hosted.skip_next_step or hosted.needs_reset:
                # NEXT_STEP autoreset: this step's action is ignored and a fresh episode's first
                # observation comes back with zero reward.
                if hosted.needs_reset:
                    obs, info = hosted.env.reset()
                    hosted.episode_steps = 0
                    self.write_obs(i, obs)
                    if info:
                        extras = extras or {}
                        extras[i] = (info, None, False)
                hosted.skip_next_step = hosted.needs_reset = False
                reward_view[i], terminated_view[i], truncated_view[i] = 0.0, False, False
                continue
            obs, reward, terminated, truncated, info = hosted.env.step(self.read_action(i))
            check_reward(reward, i)
            hosted.episode_steps += 1
            if max_steps is not None and hosted.episode_steps >= max_steps:
                truncated = True  # explicit time-limit truncation, as gymnasium.wrappers.TimeLimit
            reward_view[i], terminated_view[i], truncated_view[i] = reward, terminated, truncated
            if (terminated or truncated) and self.same_step:
                self.write_final(i, obs)
                final_info = info
                obs, info = hosted.env.reset()
                hosted.episode_steps = 0
                self.write_obs(i, obs)
                extras = extras or {}
                extras[i] = (info, final_info, True)
                continue
            self.write_obs(i, obs)
            hosted.needs_reset = bool(terminated or truncated) and not self.same_step
            if info:
                extras = extras or {}
                extras[i] = (info, None, False)
        self._reply(extras)

    def close(self) -> None:
        for hosted in self.hosted:
            try:
                hosted.env.close()
            except Exception:  # closing is best effort; the parent kills the group anyway
                traceback.print_exc()


def main(argv: list[str]) -> int:
    fd, index, parent_pid, use_pdeathsig = int(argv[1]), int(argv[2]), int(argv[3]), argv[4]
    _arm_parent_death(parent_pid, use_pdeathsig == "1", fd)
    conn = _load_sibling("channel").Channel(socket.socket(fileno=fd))
    shm = _load_sibling("shm")
    worker = _Worker(conn, index, shm)
    print(f"[bridge worker {index}] pid {os.getpid()} started", file=sys.stderr, flush=True)
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
        worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""``ProcessVectorEnv``: a fault-tolerant Gymnasium vector env over spawned worker processes.

Envs live in worker processes (fresh interpreters, never forks), built from an importable factory:
one env per worker by default, or ``envs_per_worker`` envs stepped one after another by each
worker, which divides the per-step process wake-ups by that number (the win for cheap envs on
few cores). Observations, actions, rewards and done flags travel through one shared buffer laid out
from the spaces (``shm.py``); per step the parent and each worker exchange one tiny message each
way over a Unix socket. On top of the Gymnasium ``reset``/``step`` API there is an envpool-style
async API: ``send(actions, env_ids)`` then ``recv()`` returns the first ``batch_size`` envs to
finish, with ``info["env_id"]`` saying which (the envs one command sent to a worker finish
together).

Bad input is refused in the parent before anything is sent: actions of a ``Discrete`` /
``MultiDiscrete`` space are checked against it (floats, NaN and out-of-range components raise,
``envs.checks.check_action``) and seeds must be ints in [0, 2**32 - 1]. An exception raised by
the env's own ``reset``/``step`` code inside a worker is re-raised by the parent's call as that
exception (the worker's traceback in a note), not treated as a crash, unless the exception
has a true ``restart_worker`` attribute (a simulator fault, e.g. ``SimulatorError``): the worker keeps running,
the other envs' results of that call are dropped, and the envs of the failed command restart
their episodes on their next step (``truncated=True`` with ``info["bridge_fault"]``).

Faults. Every command has a deadline (per env it covers). A worker that dies, fails to build its
envs, or misses its deadline is killed (with everything it launched: each worker leads its own process group) and
restarted; the pending results of its envs are delivered once the replacement has reset them, as
``truncated=True`` (or, for a reset, as the reset result) with ``info["bridge_fault"]`` saying
what happened. A worker's other envs lost their episodes with it: each one's next step (or reset)
is answered the same way. Envs of other workers are untouched: nothing is lost or duplicated. A
worker that fails ``max_restarts`` times in a row without completing a step raises
``WorkerFailedError`` carrying the end of its log.

Autoreset. ``autoreset_mode`` is ``AutoresetMode.NEXT_STEP`` (Gymnasium's default; the step
after an episode ends resets that env, ignores its action and returns reward 0) or
``AutoresetMode.SAME_STEP`` (the reset happens inside the step that ended the episode; the last
observation and info are in ``info["final_obs"]`` / ``info["final_info"]``). A fault result has no
final observation: ``obs`` is the replacement's first observation of a new episode (and in
NEXT_STEP mode the following step returns that same observation with reward 0 without stepping).

Copies. With ``copy=True`` (default, as ``AsyncVectorEnv``) every returned array is the caller's
own. With ``copy=False``, ``reset()`` and ``step()`` return observations that are views of the
shared buffer: valid until the next ``step``/``reset``/``send`` of those envs overwrites them (and
read-only in spirit: writing into them changes nothing the envs see). ``recv()`` always copies.
"""

from __future__ import annotations

import array
import atexit
import collections
import dataclasses
import math
import mmap
import os
import pickle
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs.bridge import shm
from envs.bridge.channel import Channel
from envs.checks import check_action, check_seed

_WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
_LOG_TAIL_LINES = 25
_MAX_REASON_CHARS = 4000  # an exception message in info["bridge_fault"] (log tails included)

# Worker phases. STARTING and ATTACHING expect an answer by a deadline, as does RUNNING with
# commands in flight.
_STARTING, _BUILT, _ATTACHING, _RUNNING = "starting", "built", "attaching", "running"
# Env phases. BUSY phases are owed a result.
_IDLE, _STEPPING, _RESETTING, _READY = "idle", "stepping", "resetting", "ready"
_CLOSED = "closed"
_BUSY = frozenset({_STEPPING, _RESETTING})

Factory = str | Callable[..., gym.Env]


class WorkerFailedError(RuntimeError):
    """A worker kept failing; carries the reason and the end of its log."""

    def __init__(
        self,
        env_id: int,
        reason: str,
        log_path: str,
        log_tail: str,
        env_ids: Sequence[int] | None = None,
    ) -> None:
        self.env_id = env_id
        self.env_ids = list(env_ids) if env_ids is not None else [env_id]
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail
        which = f"env {env_id}" if len(self.env_ids) == 1 else f"envs {self.env_ids}"
        super().__init__(
            f"{which}: {reason}\n--- last lines of {log_path} ---\n{log_tail}\n"
            "--- end of log --- (the worker was not restarted again; fix the env or raise "
            "max_restarts)"
        )


def _log_tail(path: str, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError as err:
        return f"(log unreadable: {err})"
    return "\n".join(text.splitlines()[-lines:])


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


@dataclasses.dataclass
class _Result:
    """Extras of a finished command (infos, final observation); most results have none."""

    info: dict[str, Any]
    final_obs: Any = None
    final_info: dict[str, Any] | None = None


class _Command:
    """A command sent to a worker and not answered yet: "step" or "reset" of ``env_ids``."""

    __slots__ = ("kind", "env_ids", "timeout_s")

    def __init__(self, kind: str, env_ids: list[int], timeout_s: float) -> None:
        self.kind = kind
        self.env_ids = env_ids
        self.timeout_s = timeout_s


@dataclasses.dataclass(eq=False)
class _Env:
    """Parent-side state of one env id."""

    env_id: int
    worker: int  # index of the worker hosting it
    phase: str = _IDLE
    # What the user asked for that is still owed: "step" or "reset" (with its seed/options).
    owed: str | None = None
    reset_seed: int | None = None
    reset_options: dict | None = None
    faults: list[str] = dataclasses.field(default_factory=list)
    # Its worker was replaced since it last ran: the episode is gone; the next command resets it.
    lost: bool = False


@dataclasses.dataclass(eq=False)
class _Proc:
    """Parent-side state of one worker process and the envs it hosts."""

    index: int
    env_ids: list[int]
    log_path: str
    proc: subprocess.Popen | None = None
    conn: Channel | None = None
    generation: int = 0
    phase: str = _CLOSED
    deadline: float = float("inf")
    inflight: collections.deque = dataclasses.field(default_factory=collections.deque)
    consecutive_failures: int = 0
    restarts: int = 0

    def expecting(self) -> bool:
        """True while the worker owes the parent a message (so it has a deadline)."""
        return bool(self.inflight) or self.phase in (_STARTING, _ATTACHING)

    def describe(self) -> str:
        pid = self.proc.pid if self.proc is not None else "?"
        if len(self.env_ids) == 1:
            return f"worker pid {pid}"
        return f"worker pid {pid} (envs {self.env_ids[0]}-{self.env_ids[-1]})"


_LIVE_ENVS: weakref.WeakSet[ProcessVectorEnv] = weakref.WeakSet()


@atexit.register
def _close_live_envs() -> None:
    # Runs before multiprocessing's own atexit hooks and before interpreter teardown, so workers
    # never outlive a parent that forgot close().
    for env in list(_LIVE_ENVS):
        env.close()


def _close_on_sigterm() -> None:
    """Make SIGTERM (a scheduler's stop, `kill`) close the live envs (their workers and default
    log directories) before the process dies as SIGTERM would kill it; atexit hooks do not run
    on a signal. Only where SIGTERM still has its default action and only from the main thread:
    a handler the program installed itself is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum, frame):
        try:
            _close_live_envs()
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)


class ProcessVectorEnv(gym.vector.VectorEnv):
    """N envs in worker processes; see the module docstring for semantics.

    Args:
        factory: ``"package.module:function"`` (called with ``factory_kwargs``), a registered
            Gymnasium id such as ``"CartPole-v1"`` (passed to ``gymnasium.make``), or a picklable
            callable returning a ``gymnasium.Env``.
        num_envs: number of envs.
        batch_size: how many results ``recv()`` returns (default: ``num_envs``).
        timeout_s: deadline of one ``step`` of one env; past it the worker counts as hung (a
            command stepping m envs of one worker has m times as long).
        reset_timeout_s: deadline of one ``reset`` of one env (default: ``timeout_s``).
        startup_timeout_s: deadline to spawn a worker and build its envs.
        max_restarts: consecutive failures of one worker (without a successful step) tolerated.
        max_episode_steps: explicit truncation after this many steps (None: env's own limits).
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` or ``AutoresetMode.SAME_STEP``.
        log_dir: where ``worker-<worker index>.log`` files (stdout+stderr of each worker) are kept
            (default: a temporary directory that ``close()`` removes).
        envs_per_worker: envs hosted (and stepped in turn) by one worker process; worker ``w``
            hosts env ids ``w*k .. w*k+k-1`` (the last one fewer if ``k`` does not divide
            ``num_envs``). 1 (default) for simulators that are processes themselves or slow;
            ``num_envs / cores`` for cheap envs. A fault in one env restarts its worker and
            truncates all of that worker's envs.
        copy: return observations the caller owns (True) or, from ``step``/``reset``, views of
            the shared buffer valid until those envs are stepped again (False).
        **factory_kwargs: passed to the factory in every worker.
    """

    def __init__(
        self,
        factory: Factory,
        num_envs: int,
        batch_size: int | None = None,
        timeout_s: float = 60.0,
        *,
        reset_timeout_s: float | None = None,
        startup_timeout_s: float = 120.0,
        max_restarts: int = 3,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        log_dir: str | None = None,
        envs_per_worker: int = 1,
        copy: bool = True,
        **factory_kwargs: Any,
    ) -> None:
        if not 1 <= num_envs <= 0xFFFF:  # env ids travel as uint16
            raise ValueError(f"num_envs must be in [1, 65535], got {num_envs}")
        batch_size = num_envs if batch_size is None else int(batch_size)
        if not 1 <= batch_size <= num_envs:
            raise ValueError(f"batch_size must be in [1, num_envs={num_envs}], got {batch_size}")
        autoreset_mode = AutoresetMode(autoreset_mode)
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {autoreset_mode}")
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        if int(envs_per_worker) < 1:
            raise ValueError(f"envs_per_worker must be >= 1, got {envs_per_worker}")
        for name, value in (("timeout_s", timeout_s), ("reset_timeout_s", reset_timeout_s),
                            ("startup_timeout_s", startup_timeout_s)):  # fmt: skip
            if value is not None and not float(value) > 0:  # NaN fails too
                raise ValueError(f"{name} must be a positive number of seconds, got {value}")

        self.num_envs = num_envs
        self.batch_size = batch_size
        self.timeout_s = float(timeout_s)
        self.reset_timeout_s = float(reset_timeout_s if reset_timeout_s is not None else timeout_s)
        self.startup_timeout_s = float(startup_timeout_s)
        self.max_restarts = int(max_restarts)
        self.autoreset_mode = autoreset_mode
        self.copy = bool(copy)
        self.envs_per_worker = min(int(envs_per_worker), num_envs)
        self.num_workers = math.ceil(num_envs / self.envs_per_worker)
        self._next_step = autoreset_mode == AutoresetMode.NEXT_STEP
        self._worker_config = {
            "factory": _encode_factory(factory),
            "kwargs": dict(factory_kwargs),
            "max_episode_steps": max_episode_steps,
            "autoreset_mode": autoreset_mode.value,
        }
        # A log dir the user names is kept; one made here is removed by close().
        self._own_log_dir = log_dir is None
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="bridge-logs-")
        self._env_error: BaseException | None = None  # raised by an env, for the caller
        os.makedirs(self.log_dir, exist_ok=True)
        self._base_seed: int | None = None
        self._failure: WorkerFailedError | None = None
        self._selector = selectors.DefaultSelector()
        k = self.envs_per_worker
        self._envs = [_Env(i, i // k) for i in range(num_envs)]
        self._workers = [
            _Proc(
                w,
                list(range(w * k, min(num_envs, (w + 1) * k))),
                os.path.join(self.log_dir, f"worker-{w}.log"),
            )
            for w in range(self.num_workers)
        ]
        self._all_ids = list(range(num_envs))
        # NEXT_STEP mode: whether the last result handed out for an env ended its episode (then a
        # fault before its next step interrupts nothing: the recovery is a plain reset step).
        self._episode_over = np.zeros(num_envs, np.bool_)
        # NEXT_STEP mode: the env's next step is answered by its worker without stepping the env
        # (its recovery reset already delivered the observation); such a step proves nothing.
        self._skips_next_step = np.zeros(num_envs, np.bool_)
        self._ready: dict[int, _Result | None] = {}  # insertion order = order of arrival
        self._buffer: mmap.mmap | None = None
        self._buffer_fd = -1
        self._spaces: tuple[gym.Space, gym.Space] | None = None
        # PR_SET_PDEATHSIG fires when the *thread* that spawned a child exits; only safe to
        # arm from the main thread. The worker's polling watchdog covers the other cases.
        self._use_pdeathsig = threading.current_thread() is threading.main_thread()
        self.closed = False
        _LIVE_ENVS.add(self)
        if self._own_log_dir:
            _close_on_sigterm()
        try:
            self._start_all()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ properties

    @property
    def worker_pids(self) -> list[int | None]:
        """Pid of the worker hosting each env id (None while it has no live process)."""
        pids = [w.proc.pid if w.proc is not None else None for w in self._workers]
        return [pids[e.worker] for e in self._envs]

    @property
    def restart_counts(self) -> list[int]:
        """How many times the worker of each env id has been replaced."""
        return [self._workers[e.worker].restarts for e in self._envs]

    # ------------------------------------------------------------------ startup

    def _start_all(self) -> None:
        for w in self._workers:
            self._spawn(w)
        self._pump(lambda: all(w.phase == _BUILT for w in self._workers))
        obs_space, act_space = self._spaces
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self.metadata = {**self._env_metadata, "autoreset_mode": self.autoreset_mode}

        self._layout = shm.make_bridge_layout(obs_space, act_space, self.num_envs)
        self._buffer_fd = shm.create_anonymous_buffer(self._layout.nbytes)
        self._buffer = mmap.mmap(self._buffer_fd, self._layout.nbytes)
        self._obs_views = self._layout.obs.views(self._buffer)
        self._final_views = self._layout.final_obs.views(self._buffer)
        self._action_views = self._layout.action.views(self._buffer)
        self._reward, self._terminated, self._truncated = self._layout.scalar_views(self._buffer)
        for w in self._workers:
            self._send_layout(w)
        self._pump(lambda: all(w.phase == _RUNNING for w in self._workers))

    def _spawn(self, w: _Proc) -> None:
        parent_sock, child_sock = socket.socketpair()
        with open(w.log_path, "ab") as log:
            log.write(
                f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting worker {w.index} for envs "
                f"{w.env_ids} (restart {w.restarts}) ===\n".encode()
            )
            log.flush()
            try:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-u",
                        _WORKER_SCRIPT,
                        str(child_sock.fileno()),
                        str(w.index),
                        str(os.getpid()),
                        "1" if self._use_pdeathsig else "0",
                    ],
                    pass_fds=(child_sock.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    process_group=0,  # own process group: killpg takes its children too
                    env=_worker_environ(),
                )
            finally:
                child_sock.close()
        w.proc = proc
        w.conn = Channel(parent_sock)
        w.generation += 1
        self._selector.register(w.conn.fileno(), selectors.EVENT_READ, (w, w.generation))
        w.phase = _STARTING
        w.deadline = time.monotonic() + self.startup_timeout_s
        config = {**self._worker_config, "env_ids": w.env_ids}
        self._send(w, b"I" + pickle.dumps(config, pickle.HIGHEST_PROTOCOL))

    def _send_layout(self, w: _Proc) -> None:
        w.phase = _ATTACHING
        w.deadline = time.monotonic() + self.startup_timeout_s
        message = b"M" + pickle.dumps(self._layout, pickle.HIGHEST_PROTOCOL)
        try:
            w.conn.send_with_fds(message, [self._buffer_fd])
        except OSError:
            self._fault(w, self._death_reason(w))

    # ------------------------------------------------------------------ plumbing

    def _send(self, w: _Proc, message: bytes) -> None:
        try:
            w.conn.send(message)
        except OSError:
            self._fault(w, self._death_reason(w))

    def _issue(self, w: _Proc, command: _Command, message: bytes) -> None:
        """Queue ``command`` on a running worker; its deadline starts when it is at the head."""
        if not w.inflight and w.proc is not None and w.proc.poll() is not None:
            # It died with nothing to do: say so (not "while stepping"), then recover as usual.
            reason = f"{w.describe()} {_describe_exit(w.proc.returncode)} while idle"
            self._fault(w, f"{reason} (found before sending a {command.kind})")
            return
        w.inflight.append(command)
        if len(w.inflight) == 1:
            w.deadline = time.monotonic() + command.timeout_s
        self._send(w, message)

    def _activity(self, w: _Proc) -> str:
        if w.inflight:
            return "stepping" if w.inflight[0].kind == "step" else "resetting"
        return w.phase

    def _death_reason(self, w: _Proc) -> str:
        code = None
        if w.proc is not None:
            try:
                code = w.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
        return f"{w.describe()} {_describe_exit(code)} while {self._activity(w)}"

    def _kill(self, w: _Proc) -> None:
        if w.conn is not None:
            try:
                self._selector.unregister(w.conn.fileno())
            except (KeyError, ValueError):
                pass
            w.conn.close()
            w.conn = None
        if w.proc is not None:
            _kill_group(w.proc)
            w.proc = None

    def _fault(self, w: _Proc, reason: str) -> None:
        """Kill worker ``w``, then restart it or give up with its log.

        Every env of the worker gets ``reason`` in the info of its next result. Envs with a
        command in flight are answered once the replacement has reset them (``_resume``); the
        others lost their episodes too and are reset by their next command (``_dispatch``).
        """
        self._kill(w)
        w.inflight.clear()
        w.deadline = float("inf")
        w.consecutive_failures += 1
        for i in w.env_ids:
            env = self._envs[i]
            env.faults.append(reason)
            if env.phase not in _BUSY:
                env.lost = True
        if w.consecutive_failures > self.max_restarts:
            w.phase = _CLOSED
            self._failure = WorkerFailedError(
                w.env_ids[0],
                f"failed {w.consecutive_failures} times in a row; last: {reason}",
                w.log_path,
                _log_tail(w.log_path),
                w.env_ids,
            )
            raise self._failure
        with open(w.log_path, "ab") as log:
            log.write(f"=== bridge: {reason}; restarting ===\n".encode())
        w.restarts += 1
        self._spawn(w)

    def _on_message(self, w: _Proc) -> None:
        try:
            message = w.conn.recv()
        except (EOFError, OSError):
            self._fault(w, self._death_reason(w))
            return
        kind = message[:1]
        if kind == b"D" and w.inflight:
            self._on_done(w, message)
        elif kind == b"K" and w.phase == _STARTING:
            self._on_built(w, pickle.loads(message[1:]))
        elif kind == b"A" and w.phase == _ATTACHING:
            w.phase = _RUNNING
            w.deadline = float("inf")
            self._resume(w)
        elif kind == b"X" and w.inflight:
            self._on_env_error(w, message)
        elif kind == b"E":
            text = message[1:].decode("utf-8", "replace").strip()
            if len(text) > _MAX_REASON_CHARS:
                text = text[:_MAX_REASON_CHARS] + " [...]"
            self._fault(w, f"env raised while {self._activity(w)}: {text} (traceback in log)")
        else:
            self._fault(w, f"protocol error: unexpected {kind!r} while {self._activity(w)}")

    def _on_env_error(self, w: _Proc, message: bytes) -> None:
        """The env's own code raised in a command: keep the worker, hold the error for the
        caller, and restart the command's envs' episodes on their next command."""
        command = w.inflight.popleft()
        w.deadline = time.monotonic() + w.inflight[0].timeout_s if w.inflight else float("inf")
        env_id, payload, summary, text = pickle.loads(message[1:])
        err: BaseException | None = None
        if payload is not None:
            try:
                err = pickle.loads(payload)
            except Exception:  # its class does not import here
                err = None
        if not isinstance(err, BaseException):
            err = RuntimeError(summary)
        doing = "resetting" if command.kind == "reset" else "stepping"
        err.add_note(
            f"raised by env {env_id} while {doing} in bridge {w.describe()}; the worker keeps "
            f"running. Worker traceback (also in {w.log_path}):\n{text.rstrip()}"
        )
        for i in command.env_ids:
            env = self._envs[i]
            env.phase, env.owed, env.lost = _IDLE, None, True
            env.faults = [f"env {env_id} raised {summary} (re-raised to the caller); episode reset"]
        if self._env_error is None:
            self._env_error = err

    def _raise_env_error(self, drop: list[int]) -> None:
        """Raise an env's pending exception; results of ``drop`` that arrived are discarded."""
        err = self._env_error
        if err is None:
            return
        self._env_error = None
        for i in drop:
            if i in self._ready:
                self._ready.pop(i)
                self._envs[i].phase = _IDLE
        raise err

    def _on_built(self, w: _Proc, specs: list[tuple[gym.Space, gym.Space, dict]]) -> None:
        for env_id, (obs_space, act_space, metadata) in zip(w.env_ids, specs, strict=True):
            if self._spaces is None:
                self._spaces = (obs_space, act_space)
                self._env_metadata = {k: v for k, v in metadata.items() if k != "autoreset_mode"}
            elif (obs_space, act_space) != self._spaces:
                w.phase = _CLOSED
                self._kill(w)
                raise RuntimeError(
                    f"env {env_id} built spaces {obs_space} / {act_space} that differ from env "
                    f"0's {self._spaces[0]} / {self._spaces[1]}; all envs must share their spaces"
                )
        if self._buffer is None:
            w.phase = _BUILT
            w.deadline = float("inf")
        else:
            self._send_layout(w)

    def _resume(self, w: _Proc) -> None:
        """A replacement worker is attached: deliver what its predecessor owed, by resets."""
        owed = [i for i in w.env_ids if self._envs[i].phase in _BUSY]
        if owed:
            self._issue_resets(w, owed)

    def _issue_resets(self, w: _Proc, env_ids: list[int]) -> None:
        """Reset ``env_ids`` on ``w``: with the user's seed for an owed reset, or as the
        fault-recovery answer to an owed step (seed derived from the run's seed)."""
        items = []
        for i in env_ids:
            env = self._envs[i]
            env.lost = False
            if env.owed == "step":
                # The step is answered by a new episode's first observation. In NEXT_STEP mode
                # it counts as truncation (and the worker skips the following step) unless the
                # episode had already ended, in which case this is just the reset step.
                truncates = not (self._next_step and self._episode_over[i])
                items.append((i, self._recovery_seed(w, i), None, truncates))
                self._skips_next_step[i] = truncates and self._next_step  # as the worker does
            else:
                items.append((i, env.reset_seed, env.reset_options, False))
                self._skips_next_step[i] = False
        message = b"R" + pickle.dumps(items, pickle.HIGHEST_PROTOCOL)
        self._issue(w, _Command("reset", env_ids, self.reset_timeout_s * len(env_ids)), message)

    def _recovery_seed(self, w: _Proc, env_id: int) -> int | None:
        if self._base_seed is None:
            return None
        seq = np.random.SeedSequence([self._base_seed, env_id, w.restarts])
        return int(seq.generate_state(1)[0])

    def _on_done(self, w: _Proc, message: bytes) -> None:
        command = w.inflight.popleft()
        w.deadline = time.monotonic() + w.inflight[0].timeout_s if w.inflight else float("inf")
        if command.kind == "step":
            # Only a step that stepped an env ends a run of failures: an env that crashes on
            # every real step would otherwise be restarted forever, its skipped recovery steps
            # resetting the count.
            skipped = self._skips_next_step[command.env_ids]
            if not skipped.all():
                w.consecutive_failures = 0
            self._skips_next_step[command.env_ids] = False
        extras = pickle.loads(message[1:]) if len(message) > 1 else None
        ready = self._ready
        for i in command.env_ids:
            env = self._envs[i]
            extra = extras.get(i) if extras else None
            result = None
            if extra is not None:
                info, final_info, has_final = extra
                final_obs = None
                if has_final:
                    final_obs = shm.read_single(self._final_views, self._layout.final_obs, i)
                result = _Result(info, final_obs, final_info)
            if env.faults:
                result = result or _Result({})
                result.info = {**result.info, "bridge_fault": "; ".join(env.faults)}
                if env.owed == "step" and command.kind == "reset":  # a recovery reset
                    truncates = not (self._next_step and self._episode_over[i])
                    self._reward[i], self._terminated[i], self._truncated[i] = 0.0, False, truncates
                env.faults = []
            ready[i] = result
            env.owed = None
            env.phase = _READY

    def _pump(self, done: Callable[[], bool]) -> None:
        """Process worker messages and deadlines until ``done()``; every wait is bounded."""
        while not done() and self._env_error is None:
            busy = [w for w in self._workers if w.expecting()]
            if not busy:
                raise RuntimeError(
                    "waiting for results but no env is in flight: call send() for more envs "
                    f"(batch_size={self.batch_size}, buffered={len(self._ready)})"
                )
            buffered = [w for w in busy if w.conn is not None and w.conn.has_frame()]
            for w in buffered:  # already read, select() would not report them
                self._on_message(w)
            if buffered:
                continue
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            for key, _ in self._selector.select(timeout):
                w, generation = key.data
                if generation == w.generation and w.conn is not None:
                    self._on_message(w)
            now = time.monotonic()
            for w in busy:
                if w.expecting() and w.deadline <= now:
                    self._timeout_fault(w)

    def _timeout_fault(self, w: _Proc) -> None:
        limit = w.inflight[0].timeout_s if w.inflight else self.startup_timeout_s
        what = self._activity(w)
        if len(w.env_ids) > 1:
            what = f"{what} ({w.describe()})"
        self._fault(w, f"no answer within {limit:g} s while {what} (hung); killed")

    def _wait_workers(self, workers: Sequence[_Proc]) -> None:
        """Wait until each of ``workers`` owes nothing, blocking on one worker at a time.

        Used when the caller needs all of them anyway (``step``/``reset``), as AsyncVectorEnv
        does: only the worker being waited for wakes the parent, and by the time the parent
        gets to the next ones their answers are usually there already (one non-blocking read,
        no poll). Deadlines are the same as in ``_pump``.
        """
        for w in workers:
            while w.expecting():
                conn = w.conn
                try:
                    if conn.has_frame() or conn.fill(block=False):
                        if conn.has_frame():
                            self._on_message(w)
                        continue
                except (EOFError, OSError):
                    self._on_message(w)  # reports the death as a fault
                    continue
                timeout = w.deadline - time.monotonic()
                if timeout > 0 and conn.wait_readable(timeout):
                    continue  # readable (data or EOF): handled at the top of the loop
                if time.monotonic() >= w.deadline:
                    self._timeout_fault(w)

    # ------------------------------------------------------------------ batches

    def _take(
        self, ids: list[int], copy: bool = True
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        ready, envs = self._ready, self._envs
        results = [ready.pop(i) for i in ids]
        for i in ids:
            envs[i].phase = _IDLE
        size = len(ids)
        if ids is self._all_ids or ids == self._all_ids:
            rows: Any = slice(None)
            if copy:
                obs = shm.read_rows(self._obs_views, self._layout.obs.structure, rows)
            else:
                obs = shm.view_rows(self._obs_views, self._layout.obs.structure, rows)
            rewards = self._reward.copy()
            terminated = self._terminated.copy()
            truncated = self._truncated.copy()
        else:
            rows = np.asarray(ids, dtype=np.int64)
            obs = shm.read_rows(self._obs_views, self._layout.obs.structure, rows)
            rewards = self._reward[rows]
            terminated = self._terminated[rows]
            truncated = self._truncated[rows]
        if self._next_step:
            self._episode_over[rows] = terminated | truncated
        infos: dict[str, Any] = {}
        for k, result in enumerate(results):
            if result is None:
                continue
            extra = result.info
            if result.final_obs is not None:
                extra = {**extra, "final_obs": result.final_obs, "final_info": result.final_info}
            if extra:
                _add_info(infos, extra, k, size)
        return obs, rewards, terminated, truncated, infos

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this ProcessVectorEnv is closed")
        if self._failure is not None:
            raise RuntimeError(
                f"this ProcessVectorEnv gave up on env {self._failure.env_id} "
                f"({self._failure.reason}); close() it and build a new one"
            ) from self._failure

    def _normalize_ids(self, env_ids: Sequence[int] | np.ndarray | None) -> list[int]:
        if env_ids is None:
            return self._all_ids
        ids = np.asarray(env_ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise ValueError(f"env_ids {ids.tolist()} out of range [0, {self.num_envs})")
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"env_ids {ids.tolist()} contain duplicates")
        return ids.tolist()

    def _require_idle(self, ids: list[int], what: str) -> None:
        envs = self._envs
        for i in ids:
            if envs[i].phase != _IDLE:
                not_idle = [j for j in ids if envs[j].phase != _IDLE]
                raise RuntimeError(
                    f"{what}: envs {not_idle} still have a command in flight or an undelivered "
                    "result; call recv() until they come back first"
                )

    def _dispatch(self, ids: list[int]) -> list[_Proc]:
        """Send a step command for ``ids`` (actions already in shared memory) to their workers.

        An env whose worker was replaced since it last ran is reset instead (see ``_fault``); a
        worker that is restarting gets its envs' commands when it is back (``_resume``).
        Returns the workers involved, in order.
        """
        envs, workers = self._envs, self._workers
        groups: dict[int, list[int]] = {}
        for i in ids:
            env = envs[i]
            env.phase = _STEPPING
            env.owed = "step"
            group = groups.get(env.worker)
            if group is None:
                groups[env.worker] = [i]
            else:
                group.append(i)
        involved = []
        for index, group in groups.items():
            w = workers[index]
            involved.append(w)
            if w.phase != _RUNNING:
                continue
            lost = [i for i in group if envs[i].lost]
            if lost:
                group = [i for i in group if not envs[i].lost]
                self._issue_resets(w, lost)
                if not group or w.phase != _RUNNING:
                    continue
            if len(group) == len(w.env_ids):
                message = b"S"  # all of the worker's envs, in order
            else:
                message = b"S" + array.array("H", group).tobytes()
            self._issue(w, _Command("step", group, self.timeout_s * len(group)), message)
        return involved

    # ------------------------------------------------------------------ async API

    def async_reset(self, seed: int | Sequence[int] | None = None, options: dict | None = None):
        """Start resetting every env; their first observations come back through ``recv()``."""
        self._check_open()
        self._require_idle(self._all_ids, "async_reset()")
        self._start_resets(seed, options)

    def send(self, actions: Any, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """Start stepping ``env_ids`` (default: all) with ``actions`` batched in the same order."""
        self._check_open()
        ids = self._normalize_ids(env_ids)
        self._require_idle(ids, "send()")
        actions = self._check_actions(actions, ids)
        rows = slice(None) if ids is self._all_ids else np.asarray(ids, dtype=np.int64)
        shm.write_batch(self._action_views, self._layout.action.structure, rows, actions)
        self._dispatch(ids)

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """The first ``batch_size`` results to finish: (obs, reward, terminated, truncated, info).

        ``info["env_id"]`` (int64 ``[batch_size]``) says which env each row belongs to. Always
        copies (the rows are gathered from the shared buffer).
        """
        self._check_open()
        self._pump(lambda: len(self._ready) >= self.batch_size)
        self._raise_env_error(drop=[])
        ids = list(self._ready)[: self.batch_size]
        obs, rewards, terminated, truncated, infos = self._take(ids)
        infos["env_id"] = np.asarray(ids, dtype=np.int64)
        return obs, rewards, terminated, truncated, infos

    # ------------------------------------------------------------------ Gymnasium API

    def _check_actions(self, actions: Any, ids: list[int]) -> Any:
        space = self.single_action_space
        if isinstance(space, gym.spaces.Discrete | gym.spaces.MultiDiscrete):
            where = f"actions for env ids {list(ids)}"
            return check_action(space, actions, batch=len(ids), where=where)
        return actions

    def _start_resets(self, seed: int | Sequence[int] | None, options: dict | None) -> None:
        ids = self._all_ids
        if seed is None:
            seeds: list[int | None] = [None] * len(ids)
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            check_seed(seed)
            check_seed(int(seed) + len(ids) - 1, f"seed + {len(ids) - 1} (the last env's seed)")
            self._base_seed = int(seed)
            seeds = [int(seed) + i for i in ids]
        else:
            seeds = [None if s is None else check_seed(s, "each seed") for s in seed]
            if len(seeds) != len(ids):
                raise ValueError(f"got {len(seeds)} seeds for {len(ids)} envs")
            self._base_seed = seeds[0]
        self._episode_over[:] = False
        for i, env_seed in zip(ids, seeds, strict=True):
            env = self._envs[i]
            env.owed = "reset"
            env.phase = _RESETTING
            env.reset_seed, env.reset_options = env_seed, options
        for w in self._workers:
            if w.phase == _RUNNING:
                self._issue_resets(w, w.env_ids)

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (env ``i`` gets ``seed + i``); discards results not yet received."""
        self._check_open()
        # Let in-flight commands finish (bounded by their deadlines) and drop their results.
        self._pump(lambda: not any(w.expecting() for w in self._workers))
        for env_id in list(self._ready):
            self._ready.pop(env_id)
            self._envs[env_id].phase = _IDLE
        self._start_resets(seed, options)
        self._wait_workers(self._workers)
        self._raise_env_error(drop=self._all_ids)
        obs, _, _, _, infos = self._take(self._all_ids, self.copy)
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step all envs and wait for all of them (results ordered by env id)."""
        self._check_open()
        ids = self._all_ids
        self._require_idle(ids, "step()")
        actions = self._check_actions(actions, ids)
        shm.write_batch(self._action_views, self._layout.action.structure, slice(None), actions)
        self._wait_workers(self._dispatch(ids))
        self._raise_env_error(drop=ids)
        return self._take(ids, self.copy)

    def close_extras(self, **kwargs: Any) -> None:
        del kwargs
        for w in self._workers:
            if w.conn is not None:
                try:
                    w.conn.send(b"C")
                except OSError:
                    pass
        # Give workers a moment to close their envs (e.g. stop a JVM) before killing the groups.
        deadline = time.monotonic() + 5.0
        for w in self._workers:
            if w.proc is not None:
                try:
                    w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            self._kill(w)
            w.phase = _CLOSED
            w.inflight.clear()
        for env in self._envs:
            env.phase = _CLOSED
        self._selector.close()
        self._ready.clear()
        for name in ("_obs_views", "_final_views", "_action_views"):
            if hasattr(self, name):
                delattr(self, name)
        for name in ("_reward", "_terminated", "_truncated"):
            if hasattr(self, name):
                delattr(self, name)
        if self._buffer is not None:
            try:
                self._buffer.close()
            except BufferError:
                pass  # a caller still holds a view; the mapping goes with the last reference
            self._buffer = None
        if self._buffer_fd >= 0:
            os.close(self._buffer_fd)
            self._buffer_fd = -1
        if self._own_log_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def close(self, **kwargs: Any) -> None:
        if self.closed:
            return
        try:
            self.close_extras(**kwargs)
        finally:
            self.closed = True
            _LIVE_ENVS.discard(self)

    def __enter__(self) -> ProcessVectorEnv:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # ``closed`` is a VectorEnv class attribute: check that __init__ got as far as workers.
        if "_workers" in self.__dict__ and not self.closed:
            self.close()

    def __repr__(self) -> str:
        return (
            f"ProcessVectorEnv(num_envs={self.num_envs}, batch_size={self.batch_size}, "
            f"envs_per_worker={self.envs_per_worker})"
        )


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group and reap the worker (bounded)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10.0)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass


def _encode_factory(factory: Factory) -> str | bytes:
    if isinstance(factory, str):
        return factory
    if not callable(factory):
        raise TypeError(
            f"factory must be 'package.module:function', a Gymnasium id or a callable; got "
            f"{type(factory).__name__}"
        )
    try:
        return pickle.dumps(factory, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError) as err:
        try:
            import cloudpickle
        except ImportError:
            raise TypeError(
                f"factory {factory!r} cannot be pickled ({err}); pass 'package.module:function' "
                "or a module-level function (or install cloudpickle for lambdas/closures)"
            ) from err
        return cloudpickle.dumps(factory)


def _worker_environ() -> dict[str, str]:
    """The parent's environment, with its import path, so factories import the same modules."""
    environ = dict(os.environ)
    paths = [p or os.getcwd() for p in sys.path]
    environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return environ


def _add_info(infos: dict[str, Any], info: dict[str, Any], index: int, size: int) -> None:
    """Gymnasium's vector-info merge (value array + ``_key`` mask) for a batch of ``size``."""
    for key, value in info.items():
        if key in ("final_obs", "final_info") and not isinstance(value, np.ndarray):
            array = infos.get(key)
            if array is None:
                array = np.full(size, None, dtype=object)
            array[index] = value
        elif isinstance(value, dict):
            array = infos.get(key, {})
            _add_info(array, value, index, size)
        else:
            array = infos.get(key)
            if array is None:
                if type(value) in (int, float, bool) or isinstance(value, np.number):
                    array = np.zeros(size, dtype=type(value))
                elif isinstance(value, np.ndarray):
                    array = np.zeros((size, *value.shape), dtype=value.dtype)
                else:
                    array = np.full(size, None, dtype=object)
            array[index] = value
        infos[key] = array
        mask = infos.get(f"_{key}")
        if mask is None:
            mask = np.zeros(size, dtype=np.bool_)
        mask[index] = True
        infos[f"_{key}"] = mask

"""``ProcessVectorEnv``: a fault-tolerant Gymnasium vector env over spawned worker processes.

Each env lives in its own process (a fresh interpreter, never a fork), built from an importable
factory. Observations, actions, rewards and done flags travel through one shared buffer laid out
from the spaces (``shm.py``); per step the parent and a worker exchange one tiny message each way
over a Unix socket. On top of the Gymnasium ``reset``/``step`` API there is an envpool-style async
API: ``send(actions, env_ids)`` then ``recv()`` returns the first ``batch_size`` envs to finish,
with ``info["env_id"]`` saying which.

Faults. Every command has a deadline. A worker that dies, raises, or misses its deadline is killed
(with everything it launched: each worker leads its own process group) and restarted; its pending
result is delivered once the replacement has reset, as ``truncated=True`` (or, for a reset, as the
reset result) with ``info["bridge_fault"]`` saying what happened. Other envs' results are
untouched: nothing is lost or duplicated. A worker that fails ``max_restarts`` times in a row
without completing a step raises ``WorkerFailedError`` carrying the end of its log.

Autoreset. ``autoreset_mode`` is ``AutoresetMode.NEXT_STEP`` (Gymnasium's default; the step
after an episode ends resets that env, ignores its action and returns reward 0) or
``AutoresetMode.SAME_STEP`` (the reset happens inside the step that ended the episode; the last
observation and info are in ``info["final_obs"]`` / ``info["final_info"]``). A fault result has no
final observation: ``obs`` is the replacement's first observation of a new episode (and in
NEXT_STEP mode the following step returns that same observation with reward 0 without stepping).
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import math
import mmap
import os
import pickle
import select
import selectors
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

_WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
_LOG_TAIL_LINES = 25
_MAX_REASON_CHARS = 4000  # an exception message in info["bridge_fault"] (log tails included)

# Slot phases. BUSY phases have a deadline and an expected answer from the worker.
_STARTING, _ATTACHING, _RESETTING, _STEPPING = "starting", "attaching", "resetting", "stepping"
_BUILT, _READY, _IDLE, _CLOSED = "built", "ready", "idle", "closed"
_BUSY = frozenset({_STARTING, _ATTACHING, _RESETTING, _STEPPING})

Factory = str | Callable[..., gym.Env]


class WorkerFailedError(RuntimeError):
    """A worker kept failing; carries the reason and the end of its log."""

    def __init__(self, env_id: int, reason: str, log_path: str, log_tail: str) -> None:
        self.env_id = env_id
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail
        super().__init__(
            f"env {env_id}: {reason}\n--- last lines of {log_path} ---\n{log_tail}\n"
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
    """A finished command, buffered until ``recv``/``step``/``reset`` hands it out."""

    env_id: int
    info: dict[str, Any]
    final_obs: Any = None
    final_info: dict[str, Any] | None = None


@dataclasses.dataclass
class _Slot:
    """Parent-side state of one env id and its current worker process."""

    env_id: int
    log_path: str
    proc: subprocess.Popen | None = None
    conn: Channel | None = None
    generation: int = 0
    phase: str = _CLOSED
    deadline: float = float("inf")
    # What the user asked for that is still owed: "step" or "reset" (with its seed/options).
    owed: str | None = None
    reset_seed: int | None = None
    reset_options: dict | None = None
    faults: list[str] = dataclasses.field(default_factory=list)
    consecutive_failures: int = 0
    restarts: int = 0
    poller: Any = None  # select.poll() on conn, for waiting on this worker alone


_LIVE_ENVS: weakref.WeakSet[ProcessVectorEnv] = weakref.WeakSet()


@atexit.register
def _close_live_envs() -> None:
    # Runs before multiprocessing's own atexit hooks and before interpreter teardown, so workers
    # never outlive a parent that forgot close().
    for env in list(_LIVE_ENVS):
        env.close()


class ProcessVectorEnv(gym.vector.VectorEnv):
    """N envs in N worker processes; see the module docstring for semantics.

    Args:
        factory: ``"package.module:function"`` (called with ``factory_kwargs``), a registered
            Gymnasium id such as ``"CartPole-v1"`` (passed to ``gymnasium.make``), or a picklable
            callable returning a ``gymnasium.Env``.
        num_envs: number of worker processes / envs.
        batch_size: how many results ``recv()`` returns (default: ``num_envs``).
        timeout_s: deadline of one ``step`` of one env; past it the worker counts as hung.
        reset_timeout_s: deadline of one ``reset`` (default: ``timeout_s``).
        startup_timeout_s: deadline to spawn a worker and build its env.
        max_restarts: consecutive failures of one env (without a successful step) tolerated.
        max_episode_steps: explicit truncation after this many steps (None: env's own limits).
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` or ``AutoresetMode.SAME_STEP``.
        log_dir: where ``worker-<env_id>.log`` files (stdout+stderr of each worker) are kept.
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
        **factory_kwargs: Any,
    ) -> None:
        if not 1 <= num_envs <= 0xFFFF:  # env ids travel as uint16 notices
            raise ValueError(f"num_envs must be in [1, 65535], got {num_envs}")
        batch_size = num_envs if batch_size is None else int(batch_size)
        if not 1 <= batch_size <= num_envs:
            raise ValueError(f"batch_size must be in [1, num_envs={num_envs}], got {batch_size}")
        autoreset_mode = AutoresetMode(autoreset_mode)
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {autoreset_mode}")
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")

        self.num_envs = num_envs
        self.batch_size = batch_size
        self.timeout_s = float(timeout_s)
        self.reset_timeout_s = float(reset_timeout_s if reset_timeout_s is not None else timeout_s)
        self.startup_timeout_s = float(startup_timeout_s)
        self.max_restarts = int(max_restarts)
        self.autoreset_mode = autoreset_mode
        self._worker_config = {
            "factory": _encode_factory(factory),
            "kwargs": dict(factory_kwargs),
            "max_episode_steps": max_episode_steps,
            "autoreset_mode": autoreset_mode.value,
        }
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="bridge-logs-")
        os.makedirs(self.log_dir, exist_ok=True)
        self._base_seed: int | None = None
        self._failure: WorkerFailedError | None = None
        self._selector = selectors.DefaultSelector()
        self._slots = [
            _Slot(i, os.path.join(self.log_dir, f"worker-{i}.log")) for i in range(num_envs)
        ]
        self._ready: collections.OrderedDict[int, _Result] = collections.OrderedDict()
        self._buffer: mmap.mmap | None = None
        self._buffer_fd = -1
        self._spaces: tuple[gym.Space, gym.Space] | None = None
        # PR_SET_PDEATHSIG fires when the *thread* that spawned a child exits; only safe to
        # arm from the main thread. The worker's polling watchdog covers the other cases.
        self._use_pdeathsig = threading.current_thread() is threading.main_thread()
        self.closed = False
        _LIVE_ENVS.add(self)
        try:
            self._start_all()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ properties

    @property
    def worker_pids(self) -> list[int | None]:
        """Current worker pid per env id (None while a slot has no live process)."""
        return [s.proc.pid if s.proc is not None else None for s in self._slots]

    @property
    def restart_counts(self) -> list[int]:
        """How many times each env's worker has been replaced."""
        return [s.restarts for s in self._slots]

    # ------------------------------------------------------------------ startup

    def _start_all(self) -> None:
        for slot in self._slots:
            self._spawn(slot)
        self._pump(lambda: all(s.phase == _BUILT for s in self._slots))
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
        for slot in self._slots:
            self._send_layout(slot)
        self._pump(lambda: all(s.phase == _IDLE for s in self._slots))

    def _spawn(self, slot: _Slot) -> None:
        parent_sock, child_sock = socket.socketpair()
        with open(slot.log_path, "ab") as log:
            log.write(
                f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting worker for env {slot.env_id}"
                f" (restart {slot.restarts}) ===\n".encode()
            )
            log.flush()
            try:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-u",
                        _WORKER_SCRIPT,
                        str(child_sock.fileno()),
                        str(slot.env_id),
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
        slot.proc = proc
        slot.conn = Channel(parent_sock)
        slot.generation += 1
        slot.poller = select.poll()
        slot.poller.register(slot.conn.fileno(), select.POLLIN)
        self._selector.register(slot.conn.fileno(), selectors.EVENT_READ, (slot, slot.generation))
        slot.phase = _STARTING
        slot.deadline = time.monotonic() + self.startup_timeout_s
        self._send(slot, b"I" + pickle.dumps(self._worker_config, pickle.HIGHEST_PROTOCOL))

    def _send_layout(self, slot: _Slot) -> None:
        slot.phase = _ATTACHING
        slot.deadline = time.monotonic() + self.startup_timeout_s
        message = b"M" + pickle.dumps(self._layout, pickle.HIGHEST_PROTOCOL)
        try:
            slot.conn.send_with_fds(message, [self._buffer_fd])
        except OSError:
            self._fault(slot, self._death_reason(slot))

    # ------------------------------------------------------------------ plumbing

    def _send(self, slot: _Slot, message: bytes) -> bool:
        try:
            slot.conn.send(message)
            return True
        except OSError:
            self._fault(slot, self._death_reason(slot))
            return False

    def _death_reason(self, slot: _Slot) -> str:
        code = None
        if slot.proc is not None:
            try:
                code = slot.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
        return f"worker pid {slot.proc.pid if slot.proc else '?'} {_describe_exit(code)} while {slot.phase}"

    def _kill(self, slot: _Slot) -> None:
        if slot.conn is not None:
            try:
                self._selector.unregister(slot.conn.fileno())
            except (KeyError, ValueError):
                pass
            slot.conn.close()
            slot.conn = None
        if slot.proc is not None:
            _kill_group(slot.proc)
            slot.proc = None

    def _fault(self, slot: _Slot, reason: str) -> None:
        """Kill the worker of ``slot``, then restart it or give up with its log."""
        self._kill(slot)
        slot.consecutive_failures += 1
        slot.faults.append(reason)
        if slot.consecutive_failures > self.max_restarts:
            slot.phase = _CLOSED
            self._failure = WorkerFailedError(
                slot.env_id,
                f"failed {slot.consecutive_failures} times in a row; last: {reason}",
                slot.log_path,
                _log_tail(slot.log_path),
            )
            raise self._failure
        with open(slot.log_path, "ab") as log:
            log.write(f"=== bridge: {reason}; restarting ===\n".encode())
        slot.restarts += 1
        self._spawn(slot)

    def _on_message(self, slot: _Slot) -> None:
        try:
            message = slot.conn.recv()
        except (EOFError, OSError):
            self._fault(slot, self._death_reason(slot))
            return
        kind = message[:1]
        if kind == b"D" and slot.phase in (_STEPPING, _RESETTING):
            self._on_result(slot, message)
        elif kind == b"K" and slot.phase == _STARTING:
            self._on_built(slot, pickle.loads(message[1:]))
        elif kind == b"A" and slot.phase == _ATTACHING:
            if slot.owed is None:
                slot.phase = _IDLE
            else:  # a replacement worker: reset it to deliver what its predecessor owed
                self._send_reset(slot, after_fault=True)
        elif kind == b"E":
            text = message[1:].decode("utf-8", "replace").strip()
            if len(text) > _MAX_REASON_CHARS:
                text = text[:_MAX_REASON_CHARS] + " [...]"
            self._fault(slot, f"env raised while {slot.phase}: {text} (traceback in log)")
        else:
            self._fault(slot, f"protocol error: unexpected {kind!r} while {slot.phase}")

    def _on_built(self, slot: _Slot, spaces: tuple[gym.Space, gym.Space, dict]) -> None:
        obs_space, act_space, metadata = spaces
        if self._spaces is None:
            self._spaces = (obs_space, act_space)
            self._env_metadata = {k: v for k, v in metadata.items() if k != "autoreset_mode"}
        elif (obs_space, act_space) != self._spaces:
            slot.phase = _CLOSED
            self._kill(slot)
            raise RuntimeError(
                f"env {slot.env_id} built spaces {obs_space} / {act_space} that differ from env "
                f"0's {self._spaces[0]} / {self._spaces[1]}; all envs must share their spaces"
            )
        if self._buffer is None:
            slot.phase = _BUILT
            slot.deadline = float("inf")
        else:
            self._send_layout(slot)

    def _send_reset(self, slot: _Slot, after_fault: bool) -> None:
        seed, options = slot.reset_seed, slot.reset_options
        if after_fault and slot.owed == "step":
            seed, options = self._recovery_seed(slot), None
        slot.phase = _RESETTING
        slot.deadline = time.monotonic() + self.reset_timeout_s
        self._send(slot, b"R" + pickle.dumps((seed, options, after_fault), pickle.HIGHEST_PROTOCOL))

    def _recovery_seed(self, slot: _Slot) -> int | None:
        if self._base_seed is None:
            return None
        seq = np.random.SeedSequence([self._base_seed, slot.env_id, slot.restarts])
        return int(seq.generate_state(1)[0])

    def _on_result(self, slot: _Slot, message: bytes) -> None:
        info: dict[str, Any] = {}
        final_obs = final_info = None
        if len(message) > 1:
            info, final_info, has_final = pickle.loads(message[1:])
            if has_final:
                final_obs = shm.read_single(self._final_views, self._layout.final_obs, slot.env_id)
        owed = slot.owed
        fault = "; ".join(slot.faults) if slot.faults else None
        if slot.phase == _STEPPING:
            slot.consecutive_failures = 0
        if fault is not None:
            info = {**info, "bridge_fault": fault}
            if owed == "step":  # the episode the fault interrupted ends here, truncated
                i = slot.env_id
                self._reward[i], self._terminated[i], self._truncated[i] = 0.0, False, True
        self._ready[slot.env_id] = _Result(slot.env_id, info, final_obs, final_info)
        slot.faults = []
        slot.owed = None
        slot.phase = _READY
        slot.deadline = float("inf")

    def _pump(self, done: Callable[[], bool]) -> None:
        """Process worker messages and deadlines until ``done()``; every wait is bounded."""
        while not done():
            busy = [s for s in self._slots if s.phase in _BUSY]
            if not busy:
                raise RuntimeError(
                    "waiting for results but no env is in flight: call send() for more envs "
                    f"(batch_size={self.batch_size}, buffered={len(self._ready)})"
                )
            buffered = [s for s in busy if s.conn is not None and s.conn.has_frame()]
            for slot in buffered:  # already read, select() would not report them
                self._on_message(slot)
            if buffered:
                continue
            timeout = max(0.0, min(s.deadline for s in busy) - time.monotonic())
            for key, _ in self._selector.select(timeout):
                slot, generation = key.data
                if generation == slot.generation and slot.conn is not None:
                    self._on_message(slot)
            now = time.monotonic()
            for slot in busy:
                if slot.phase in _BUSY and slot.deadline <= now:
                    self._timeout_fault(slot)

    def _timeout_fault(self, slot: _Slot) -> None:
        limit = {_STEPPING: self.timeout_s, _RESETTING: self.reset_timeout_s}.get(
            slot.phase, self.startup_timeout_s
        )
        self._fault(slot, f"no answer within {limit:g} s while {slot.phase} (hung); killed")

    def _wait_in_order(self, ids: np.ndarray) -> None:
        """Wait until every env in ``ids`` has a result, blocking on one worker at a time.

        Used when the caller needs all of them anyway (``step``/``reset``), as AsyncVectorEnv
        does: only the worker being waited for wakes the parent, and by the time the parent
        gets to the next ones their answers are usually there already (one non-blocking read,
        no poll). Deadlines are the same as in ``_pump``.
        """
        for i in ids:
            slot = self._slots[i]
            while slot.phase != _READY:
                if slot.phase not in _BUSY:
                    raise RuntimeError(f"env {slot.env_id} has nothing in flight ({slot.phase})")
                conn = slot.conn
                try:
                    if conn.has_frame() or conn.fill(block=False):
                        if conn.has_frame():
                            self._on_message(slot)
                        continue
                except (EOFError, OSError):
                    self._on_message(slot)  # reports the death as a fault
                    continue
                timeout_ms = max(0, math.ceil((slot.deadline - time.monotonic()) * 1000))
                if slot.poller.poll(timeout_ms):
                    continue  # readable (data or EOF): handled at the top of the loop
                if time.monotonic() >= slot.deadline:
                    self._timeout_fault(slot)

    # ------------------------------------------------------------------ batches

    def _take(self, env_ids: Sequence[int]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        ids = np.asarray(env_ids, dtype=np.int64)
        results = [self._ready.pop(int(i)) for i in ids]
        for slot_id in ids:
            self._slots[slot_id].phase = _IDLE
        obs = shm.read_rows(self._obs_views, self._layout.obs.structure, ids)
        rewards = self._reward[ids]
        terminated = self._terminated[ids]
        truncated = self._truncated[ids]
        infos: dict[str, Any] = {}
        size = len(ids)
        for k, result in enumerate(results):
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

    def _normalize_ids(self, env_ids: Sequence[int] | np.ndarray | None) -> np.ndarray:
        if env_ids is None:
            return np.arange(self.num_envs)
        ids = np.asarray(env_ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise ValueError(f"env_ids {ids.tolist()} out of range [0, {self.num_envs})")
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"env_ids {ids.tolist()} contain duplicates")
        return ids

    def _require_idle(self, ids: np.ndarray, what: str) -> None:
        not_idle = [int(i) for i in ids if self._slots[i].phase != _IDLE]
        if not_idle:
            raise RuntimeError(
                f"{what}: envs {not_idle} still have a command in flight or an undelivered "
                "result; call recv() until they come back first"
            )

    # ------------------------------------------------------------------ async API

    def async_reset(self, seed: int | Sequence[int] | None = None, options: dict | None = None):
        """Start resetting every env; their first observations come back through ``recv()``."""
        self._check_open()
        ids = np.arange(self.num_envs)
        self._require_idle(ids, "async_reset()")
        self._start_resets(ids, seed, options)

    def send(self, actions: Any, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """Start stepping ``env_ids`` (default: all) with ``actions`` batched in the same order."""
        self._check_open()
        ids = self._normalize_ids(env_ids)
        self._require_idle(ids, "send()")
        shm.write_batch(self._action_views, self._layout.action.structure, ids, actions)
        deadline = time.monotonic() + self.timeout_s
        for i in ids:
            slot = self._slots[i]
            slot.phase = _STEPPING
            slot.deadline = deadline
            slot.owed = "step"
            self._send(slot, b"S")

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """The first ``batch_size`` results to finish: (obs, reward, terminated, truncated, info).

        ``info["env_id"]`` (int64 ``[batch_size]``) says which env each row belongs to.
        """
        self._check_open()
        self._pump(lambda: len(self._ready) >= self.batch_size)
        ids = list(self._ready.keys())[: self.batch_size]
        obs, rewards, terminated, truncated, infos = self._take(ids)
        infos["env_id"] = np.asarray(ids, dtype=np.int64)
        return obs, rewards, terminated, truncated, infos

    # ------------------------------------------------------------------ Gymnasium API

    def _start_resets(
        self, ids: np.ndarray, seed: int | Sequence[int] | None, options: dict | None
    ) -> None:
        if seed is None:
            seeds: list[int | None] = [None] * len(ids)
        elif isinstance(seed, int | np.integer):
            self._base_seed = int(seed)
            seeds = [int(seed) + int(i) for i in ids]
        else:
            seeds = [None if s is None else int(s) for s in seed]
            if len(seeds) != len(ids):
                raise ValueError(f"got {len(seeds)} seeds for {len(ids)} envs")
            self._base_seed = seeds[0]
        for i, env_seed in zip(ids, seeds, strict=True):
            slot = self._slots[i]
            slot.owed = "reset"
            slot.reset_seed, slot.reset_options = env_seed, options
            self._send_reset(slot, after_fault=False)

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (env ``i`` gets ``seed + i``); discards results not yet received."""
        self._check_open()
        # Let in-flight commands finish (bounded by their deadlines) and drop their results.
        self._pump(lambda: not any(s.phase in _BUSY for s in self._slots))
        for env_id in list(self._ready):
            self._ready.pop(env_id)
            self._slots[env_id].phase = _IDLE
        ids = np.arange(self.num_envs)
        self._start_resets(ids, seed, options)
        self._wait_in_order(ids)
        obs, _, _, _, infos = self._take(ids)
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step all envs and wait for all of them (results ordered by env id)."""
        self._check_open()
        ids = np.arange(self.num_envs)
        self.send(actions, ids)
        self._wait_in_order(ids)
        return self._take(ids)

    def close_extras(self, **kwargs: Any) -> None:
        del kwargs
        for slot in self._slots:
            if slot.conn is not None:
                try:
                    slot.conn.send(b"C")
                except OSError:
                    pass
        # Give workers a moment to close their envs (e.g. stop a JVM) before killing the groups.
        deadline = time.monotonic() + 5.0
        for slot in self._slots:
            if slot.proc is not None:
                try:
                    slot.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            self._kill(slot)
            slot.phase = _CLOSED
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

    def close(self, **kwargs: Any) -> None:
        if self.closed:
            return
        try:
            self.close_extras(**kwargs)
        finally:
            self.closed = True
            _LIVE_ENVS.discard(self)

    def __del__(self) -> None:
        # ``closed`` is a VectorEnv class attribute: check that __init__ got as far as workers.
        if "_slots" in self.__dict__ and not self.closed:
            self.close()

    def __repr__(self) -> str:
        return f"ProcessVectorEnv(num_envs={self.num_envs}, batch_size={self.batch_size})"


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

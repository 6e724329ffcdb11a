"""Multi-host runs on JAX's multi-controller runtime (`jax.distributed`): one process per host.

Every process runs the same program on its own local devices; after :func:`initialize`,
``jax.devices()`` lists the devices of all processes, a mesh over them spans the hosts, and one
``jit`` over global arrays is one data-parallel computation (NCCL between GPUs, ICI on TPU pods,
gloo between CPU processes). ``agents.ppo --distributed`` and ``mineclip_jax.train
--distributed`` call :func:`initialize` first thing; under SLURM, on a TPU pod or under Open MPI
JAX finds the coordinator itself, elsewhere give all three of ``--coordinator HOST:PORT
--num-processes N --process-id I``. ``docs/cluster.md`` has the launch commands.

Why the reachability check: when the coordinator cannot be reached, JAX's C++ client aborts the
whole process (no Python exception, no hint of the address it tried), so a process other than 0
first waits for the coordinator's port itself and fails with a readable error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import sys
import time
import traceback

import jax
import numpy as np

_heartbeat_s: int | None = None  # the joined run's --heartbeat-timeout-s (for the message)


class DistributedError(RuntimeError):
    """A multi-process run could not be set up; the message names the problem and the fix."""


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    """How this process joins a multi-process run (all fields unused without --distributed).
    Marked `resumable` (field metadata, as `agents.config.resumable`): what a relaunch of the
    same run may change (a new address, another process order, a longer wait)."""

    distributed: bool = False
    """join a multi-process run via jax.distributed (SLURM, TPU pods, Open MPI are detected; elsewhere give --coordinator, --num-processes and --process-id)"""
    coordinator: str | None = dataclasses.field(default=None, metadata={"resumable": True})
    """HOST:PORT where process 0 serves the coordination service (explicit launch)"""
    num_processes: int | None = None
    """processes in the run, one per host (explicit launch)"""
    process_id: int | None = dataclasses.field(default=None, metadata={"resumable": True})
    """this process's index in [0, num_processes) (explicit launch)"""
    init_timeout_s: int = dataclasses.field(default=300, metadata={"resumable": True})
    """seconds to wait for the coordinator and for every process to join"""
    heartbeat_timeout_s: int = 100
    """seconds without a heartbeat after which a process counts as dead and the others are stopped (a process that fails stops at once; the rest within this time)"""


def _parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DistributedError(
            f"--coordinator {address!r} is not HOST:PORT (e.g. --coordinator 10.0.0.1:12345, "
            "the address of process 0's host and a free port)"
        )
    return host, int(port)


def validate(cfg: DistributedConfig) -> None:
    """Checks the flags without touching JAX; raises DistributedError naming the flag."""
    explicit = {
        "--coordinator": cfg.coordinator,
        "--num-processes": cfg.num_processes,
        "--process-id": cfg.process_id,
    }
    given = [k for k, v in explicit.items() if v is not None]
    if given and not cfg.distributed:
        raise DistributedError(f"{', '.join(given)} given without --distributed; add --distributed")
    if given and len(given) != 3:
        missing = [k for k in explicit if k not in given]
        raise DistributedError(
            f"an explicit multi-process launch needs --coordinator, --num-processes and "
            f"--process-id together; missing {', '.join(missing)} (or give none of them under "
            "SLURM, a TPU pod or Open MPI, where JAX detects them)"
        )
    if cfg.num_processes is not None and cfg.num_processes < 1:
        raise DistributedError(f"--num-processes must be >= 1, got {cfg.num_processes}")
    if cfg.process_id is not None and not 0 <= cfg.process_id < (cfg.num_processes or 0):
        raise DistributedError(
            f"--process-id {cfg.process_id} is outside [0, {cfg.num_processes}) "
            f"(--num-processes {cfg.num_processes})"
        )
    if cfg.coordinator is not None:
        _parse_address(cfg.coordinator)
    for flag, v in (("--init-timeout-s", cfg.init_timeout_s),
                    ("--heartbeat-timeout-s", cfg.heartbeat_timeout_s)):  # fmt: skip
        if v < 1:
            raise DistributedError(f"{flag} must be >= 1, got {v}")


def wait_for_coordinator(address: str, timeout_s: float) -> None:
    """Returns once a TCP connection to `address` succeeds; DistributedError after `timeout_s`."""
    host, port = _parse_address(address)
    deadline = time.monotonic() + timeout_s
    last: OSError | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=min(5.0, timeout_s)):
                return
        except OSError as e:
            last = e
            time.sleep(0.25)
    raise DistributedError(
        f"the coordinator at {address} did not answer within {timeout_s:g} s ({last}); start "
        "process 0 first with the same --coordinator, check the host name and that the port is "
        "open between the hosts, or raise --init-timeout-s"
    )


def initialize(cfg: DistributedConfig) -> bool:
    """Joins the run described by `cfg` (no-op without ``cfg.distributed``); True if joined.

    Must run before JAX executes anything: it selects gloo for CPU collectives and connects this
    process to the others, after which ``jax.devices()`` is global and ``jax.local_devices()``
    this host's."""
    validate(cfg)
    if not cfg.distributed:
        return False
    if jax.distributed.is_initialized():
        return True
    try:  # CPU processes talk through gloo; accelerators use their own collectives
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except RuntimeError as e:
        raise DistributedError(
            "--distributed must be set up before JAX executes anything (call "
            "mineclip_jax.distributed.initialize right after `import jax`)"
        ) from e
    if cfg.coordinator is not None and cfg.process_id:
        wait_for_coordinator(cfg.coordinator, cfg.init_timeout_s)
    try:
        jax.distributed.initialize(
            coordinator_address=cfg.coordinator,
            num_processes=cfg.num_processes,
            process_id=cfg.process_id,
            initialization_timeout=cfg.init_timeout_s,
            heartbeat_timeout_seconds=cfg.heartbeat_timeout_s,
        )
        global _heartbeat_s
        _heartbeat_s = cfg.heartbeat_timeout_s
    except (RuntimeError, ValueError) as e:
        raise DistributedError(
            f"jax.distributed.initialize failed: {e}. Outside SLURM, TPU pods and Open MPI give "
            "--coordinator HOST:PORT --num-processes N --process-id I"
        ) from e
    print(
        f"process {jax.process_index()} of {jax.process_count()}: {jax.local_device_count()} "
        f"local of {jax.device_count()} devices",
        file=sys.stderr,
        flush=True,
    )
    return True


@contextlib.contextmanager
def fail_fast():
    """Around a CLI's body: under several processes, a process that fails (an error, a dead
    simulator worker, Ctrl-C) prints its error and leaves at once.

    Why: the others are waiting for it in a collective, and a normal exit would wait for them
    in JAX's shutdown barrier, so every process would hang until the shutdown timeout (5 min)
    and then abort with a C++ stack trace. Leaving with `os._exit` stops this process's
    heartbeats; the coordination service then stops the others within --heartbeat-timeout-s,
    each saying that another task died."""
    try:
        yield
    except SystemExit as e:
        if e.code not in (0, None) and jax.distributed.is_initialized():
            _leave(e.code if isinstance(e.code, int) else 1)
        raise
    except BaseException:
        if jax.distributed.is_initialized():
            traceback.print_exc()
            _leave(1)
        raise


_LEFT = "mineclip_jax/left"  # coordination-service keys: the processes that have left
_COORDINATOR_GRACE_S = 10.0


def _leave(code: int) -> None:
    timeout = f" ({_heartbeat_s} s)" if _heartbeat_s is not None else ""
    print(f"process {jax.process_index()} of {jax.process_count()} stops (exit {code}) without "
          f"waiting for the others; the coordination service stops them within "
          f"--heartbeat-timeout-s{timeout}", file=sys.stderr, flush=True)  # fmt: skip
    sys.stdout.flush()
    # JAX keeps the client of the coordination service private; without it, leave at once.
    from jax._src.distributed import global_state

    client = getattr(global_state, "client", None)
    if client is not None:
        try:
            client.key_value_set(f"{_LEFT}/{jax.process_index()}", str(code))
            if jax.process_index() == 0:
                _wait_for_the_others_to_leave(client)
        except Exception:  # the service is gone already: nothing to wait for
            pass
    os._exit(code)


def _wait_for_the_others_to_leave(client) -> None:
    """Process 0 hosts the coordination service, and a process whose service goes away aborts
    with a C++ stack trace. When every process fails alike (a flag that none can run with,
    found by each after joining), a slower one would be aborted before it says why: process 0
    waits until the others have left, at most `_COORDINATOR_GRACE_S` (a process that is not
    failing waits in a collective and never leaves; it is stopped once process 0 is gone)."""
    others = {str(i) for i in range(1, jax.process_count())}
    deadline = time.monotonic() + _COORDINATOR_GRACE_S
    while time.monotonic() < deadline:
        left = {key.rsplit("/", 1)[-1] for key, _ in client.key_value_dir_get(_LEFT)}
        if others <= left:
            return
        time.sleep(0.05)


def process_share(total: int, what: str) -> slice:
    """This process's contiguous share of `total` items (envs, batch rows) split over processes.

    Process i holds rows [i * total / P, (i + 1) * total / P): the order in which a global array
    over a mesh of all devices (process-major, as ``jax.devices()`` lists them) lays them out."""
    count = jax.process_count()
    if total % count:
        raise DistributedError(
            f"{what}={total} does not split evenly over {count} processes; use a multiple of "
            f"{count}"
        )
    share = total // count
    start = jax.process_index() * share
    return slice(start, start + share)


def is_main_process() -> bool:
    """Process 0 writes logs, TensorBoard events, videos and summaries."""
    return jax.process_index() == 0


def agree(flag: bool) -> bool:
    """Process 0's `flag`, on every process (a collective: all processes must call it together).

    For decisions taken from a process's own clock or files (a time limit reached): the
    processes must take the same branch, or the ones that go on wait forever in a collective
    the others never join. A single process gets `flag` back without communication."""
    if jax.process_count() == 1:
        return bool(flag)
    from jax.experimental import multihost_utils

    return bool(multihost_utils.broadcast_one_to_all(np.asarray(flag, np.bool_)))

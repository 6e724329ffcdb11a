"""Which local devices act and which learn: the actor / learner split of `python -m agents.ppo`.

    python -m agents.ppo                                      # CPU: every core steps the envs,
                                                              # the update runs on one of them
    python -m agents.ppo --no-all-cores                       # CPU: one device does everything
    python -m agents.ppo --actor-devices 2 --learner-devices 6  # 8 GPUs, Cleanba style

Two meshes (`agents.learner.Learner`: `actor_mesh` for the rollout, `mesh` for the PPO update
and the SI phase). Why the CPU default differs from the accelerators': on a CPU, XLA renders a
batch of worlds on one thread, so splitting the envs over the cores (one JAX device each)
stepped a rendered batch 2.4x faster on 2 cores, while the same update partitioned over the
cores ran 5x slower than on one device (the gradient all-reduce and the smaller per-device
matmuls cost more than they save). On GPUs / TPUs one mesh over every device stays the default
and the iteration stays one program; `--distributed` always is one program over every host.

Defaults (`layout`), with N local devices:

| | actor devices | learner devices |
|---|---|---|
| `--distributed` or `--num-devices D` | the one mesh (all, or the first D) | the same mesh |
| CPU, N > 1 | the most of the N that divide `--num-envs` | 1 |
| accelerators | all N | all N (the same mesh) |

Explicit counts take the first `--actor-devices` local devices for the actors and the last
`--learner-devices` for the learner: disjoint when they add up to at most N (Cleanba), shared
otherwise (on a CPU every core is an actor and one of them also learns).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np


@dataclasses.dataclass(frozen=True)
class DeviceConfig:
    """Where the rollout and the update run on this machine (agents.ppo's device flags)."""

    all_cores: bool = True
    """on a CPU with --backend jax (not --distributed): expose every core as a JAX device (the rollout is split over them, the update runs on one); --no-all-cores keeps one device"""
    actor_devices: int | None = None
    """local devices the rollout (world steps, rendering, policy inference, rewards) is split over along the env axis (default: on a CPU all that divide --num-envs, else every device)"""
    learner_devices: int | None = None
    """local devices of the PPO update and SI phase (default: 1 on a CPU with several devices, else every device: the same mesh)"""
    cpu_cores: int | None = None
    """run this process on the first N cores of its CPU mask, like `taskset` (default: all); 1 speeds up CartPole-sized learners on small CPUs (no XLA thread hand-offs) and keeps side-by-side runs apart"""
    num_devices: int | None = None
    """devices of ONE data-parallel mesh for both the rollout and the update (default: see --actor-devices / --learner-devices)"""


def wants_every_core(cfg) -> bool:
    """Whether `cfg` asks for every CPU core as a device: the embedded world in one process
    (a host-stepped backend steps its worlds in worker processes that need the cores)."""
    return bool(cfg.all_cores) and cfg.backend == "jax" and not cfg.distributed


def expose_cores(cfg) -> None:
    """Before JAX starts (first thing in `agents.ppo.main`): the process restricted to
    `--cpu-cores` cores if given, then on a CPU every (allowed) core a JAX device when
    `wants_every_core`, else one device; a `--resume` follows the saved run's flags (the device
    count decides how the rollout is split). `--distributed` is left to `jax.distributed` (each
    process's own devices)."""
    saved = Path(cfg.out).expanduser() / "config.json"
    if cfg.resume and saved.exists():
        try:
            d = json.loads(saved.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            d = {}  # the resume itself reports the damaged file
        fields = ("all_cores", "backend", "distributed", "cpu_cores")
        cfg = dataclasses.replace(cfg, **{k: d[k] for k in fields if k in d})
    if cfg.cpu_cores is not None:
        from agents.errors import ConfigError
        from envs.voxel import parallel

        try:
            parallel.restrict_cores(cfg.cpu_cores)
        except (ValueError, RuntimeError) as e:
            raise ConfigError(f"--cpu-cores {cfg.cpu_cores}: {e}") from None
    if cfg.distributed:
        return
    import envs

    envs.use_every_core("agents.ppo", "--no-all-cores", enabled=wants_every_core(cfg))


def _largest_divisor(num_envs: int, at_most: int) -> int:
    return max(k for k in range(1, max(at_most, 1) + 1) if num_envs % k == 0)


def counts(cfg) -> tuple[int, int, bool]:
    """(actor devices, learner devices, one mesh) for `cfg` on this process's devices."""
    import jax

    # getattr: a run saved before these flags existed (`load_run` reads its saved fields only)
    num_devices = getattr(cfg, "num_devices", None)
    if getattr(cfg, "distributed", False) or jax.process_count() > 1 or num_devices is not None:
        n = num_devices or len(jax.devices())
        return n, n, True
    n = jax.local_device_count()
    a, lrn = getattr(cfg, "actor_devices", None), getattr(cfg, "learner_devices", None)
    cpu = jax.local_devices()[0].platform == "cpu"
    if a is None and lrn is None:
        if not cpu or n == 1:
            return n, n, True
        return _largest_divisor(cfg.num_envs, n), 1, False
    if a is None:
        a = _largest_divisor(cfg.num_envs, n - lrn if n > lrn else n)
    if lrn is None:
        lrn = 1 if cpu else (n - a if n > a else n)
    return a, lrn, False


def meshes(cfg):
    """(actor mesh, learner mesh) over this process's devices (`agents.learner.Learner`). A
    count above the devices present is cut to them here, as `--num-devices` always was (a
    saved run loaded by a smaller process); `validate` refuses it on the command line."""
    import jax
    from jax.sharding import AxisType, Mesh

    from agents import learner as lrn

    a, n_l, one = counts(cfg)
    if one:
        mesh = lrn.make_mesh(a)
        return mesh, mesh
    local = jax.local_devices()
    a, n_l = min(a, len(local)), min(n_l, len(local))

    def mesh(devs):
        return Mesh(np.array(devs), ("data",), axis_types=(AxisType.Auto,))

    return mesh(local[:a]), mesh(local[len(local) - n_l :])


def validate(cfg) -> None:
    """ConfigError (naming the flag and the fix) for device flags that cannot work, and unless
    the envs split evenly over the devices: over the one mesh (`--num-devices` or all, over
    every process under --distributed, where a process outside the mesh would hang), or over
    the actor and the learner devices each. `cfg`: these fields, `num_envs` and `distributed`
    (an `agents.ppo.PPOConfig`)."""
    import jax

    from agents.errors import ConfigError

    given = {f: getattr(cfg, f) for f in ("actor_devices", "learner_devices")}
    given = {f"--{k.replace('_', '-')}": v for k, v in given.items() if v is not None}
    if not given:
        return _validate_one_mesh(cfg)
    for flag, v in given.items():
        if v < 1:
            raise ConfigError(f"{flag} must be >= 1, got {v}")
    names = " / ".join(given)
    if cfg.distributed:
        raise ConfigError(f"{names} under --distributed: the iteration is one program over every "
                          "host's devices there; drop them")  # fmt: skip
    if cfg.num_devices is not None:
        raise ConfigError(f"--num-devices {cfg.num_devices} sets one mesh for both the rollout "
                          f"and the update; give either it or {names}")  # fmt: skip
    n = jax.local_device_count()
    for flag, v in given.items():
        if v > n:
            cpu = jax.local_devices()[0].platform == "cpu"
            more = (" (on a CPU, --all-cores exposes every core; XLA_FLAGS="
                    "--xla_force_host_platform_device_count=K sets K)") if cpu else ""  # fmt: skip
            raise ConfigError(f"{flag} {v} but this process has {n} local device(s); pass at "
                              f"most {n}{more}")  # fmt: skip
    a, n_l, _ = counts(cfg)
    for flag, v in (("--actor-devices", a), ("--learner-devices", n_l)):
        if cfg.num_envs % v:
            fits = [k for k in range(1, n + 1) if cfg.num_envs % k == 0]
            raise ConfigError(
                f"--num-envs {cfg.num_envs} does not split over {flag} {v} (each device takes "
                f"an equal share of the envs); pass --num-envs a multiple of {v} (e.g. "
                f"{-(-cfg.num_envs // v) * v}) or {flag} one of {fits}"
            )
    _validate_one_mesh(cfg)


def _validate_one_mesh(cfg) -> None:
    import jax

    from agents.errors import ConfigError

    if not counts(cfg)[2]:
        return
    ndev = cfg.num_devices or len(jax.devices())
    if ndev > len(jax.devices()):
        raise ConfigError(f"--num-devices {ndev} but only {len(jax.devices())} devices exist")
    procs = jax.process_count()
    if procs > 1 and ndev != len(jax.devices()):  # a process outside the mesh would hang
        raise ConfigError(f"--num-devices {ndev} under --distributed: the mesh spans all "
                          f"{len(jax.devices())} devices of the {procs} processes; drop it")  # fmt: skip
    if cfg.num_envs % ndev:
        raise ConfigError(
            f"--num-envs {cfg.num_envs} must be a multiple of the {ndev} devices in the mesh "
            + (f"({procs} processes x {jax.local_device_count()} devices: each process steps an "
               "equal share)" if procs > 1 else "(or pass --num-devices)")
        )  # fmt: skip

"""Embedded-world throughput: env steps/s vs batch size, rendering off and on, one device vs all.

    python -m benchmarks.voxel_throughput                      # batches 1..256, render off and on
    python -m benchmarks.voxel_throughput --batches 64 256 --no-render-on
    python -m benchmarks.voxel_throughput --batches 64 --render-batches 64 --no-render-off

Steps run inside one jitted ``lax.scan`` over time (Anakin style: random MultiDiscrete actions
and same-step auto-reset inside the loop, nothing crosses to the host), so the figure is the
world's own cost. Every setting is measured on one device and, when JAX has several, with the
batch split over all of them (``jax.shard_map``, as ``envs.voxel.parallel.sharded_step`` and
``envs.make_vector`` do); on a CPU the script first exposes every core as a JAX device
(``--cpu-devices``), because XLA runs the renderer's per-tile loops on one thread. Printed per
row: steps/s, the ratio to MineDojo's Java simulator (~20 steps/s per instance,
minedojo-sim-facts.md §7), the ratio to Craftax-Classic with pixel observations (when
``craftax`` is installed) measured in the same process with the same method on the same
devices, and the all-devices / one-device ratio. Also prints the machine load
(``os.getloadavg``): this CPU may be shared.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import tyro
from jax.sharding import PartitionSpec as P

from benchmarks import common
from envs import spaces
from envs.tasks import paper
from envs.voxel import env as E
from envs.voxel import parallel
from envs.voxel.state import VoxelStaticConfig

MINEDOJO_STEPS_PER_S = 20.0  # per instance, PKU-RL/PTGM#4 (facts §7)


@dataclasses.dataclass(frozen=True)
class Config:
    """Throughput benchmark of envs.voxel."""

    task: str = "hunt a cow"  # paper task to run
    batches: tuple[int, ...] = (1, 8, 64, 256)  # batch sizes to measure
    steps: int = 200  # steps per timed scan (per env)
    repeats: int = 3  # timed scans per setting (the best is reported)
    render_off: bool = True  # measure without rendering
    render_on: bool = True  # measure with 160x256 rendering
    render_batches: tuple[int, ...] = (1, 8, 64)  # batch sizes for the rendered runs
    height: int = 160  # rendered image height
    width: int = 256  # rendered image width
    craftax: bool = True  # also measure Craftax-Classic pixels if installed
    cpu_devices: int = 0  # CPU cores exposed as JAX devices (0: all of them; 1: one device only)


def _random_actions(key, n):
    return jax.random.randint(key, (n, 8), 0, jnp.asarray(spaces.ACTION_NVEC))


def voxel_rollout(key, states, params, static, steps, count=False):
    """One device's share: `steps` random steps of its envs; returns a checksum [1] (and, with
    `count`, the number of env steps taken [1], so a caller can check nothing was skipped)."""
    n = jax.tree.leaves(states)[0].shape[0]

    def body(carry, k):
        states, total, taken = carry
        ka, ks = jax.random.split(k)
        obs, states, rew, *_ = E.step_autoreset_batch(
            jax.random.split(ks, n), states, _random_actions(ka, n), params, static
        )
        # Use every observation leaf so the compiler cannot skip computing any of them.
        touch = sum(leaf.astype(jnp.float32).sum() for leaf in jax.tree.leaves(obs))
        return (states, total + rew.sum() + touch * 0, taken + rew.shape[0]), None

    init = (states, jnp.float32(0.0), jnp.int32(0))
    (_, total, taken), _ = jax.lax.scan(body, init, jax.random.split(key[0], steps))
    return (total[None], taken[None]) if count else total[None]


def _on_devices(local, mesh):
    """jit(shard_map(local)) with the env axis split over `mesh`:
    local(keys [1], batched_state, replicated_params) -> [1] per device."""
    env = P(parallel.AXIS)
    f = jax.shard_map(local, mesh=mesh, in_specs=(env, env, P()), out_specs=env, check_vma=False)
    return jax.jit(f)


_best_time = common.best_time


def _mesh(batch: int, devices: int):
    return parallel.env_mesh(batch, jax.local_devices()[:devices])


def measure_voxel(cfg: Config, batch: int, render: bool, devices: int = 1) -> float:
    static = VoxelStaticConfig(render=render, height=cfg.height, width=cfg.width)
    params = E.make_params(paper.get(cfg.task), static, seed=0)
    keys = jax.random.split(jax.random.key(0), batch)
    _, states = jax.jit(jax.vmap(E.reset, in_axes=(0, None, None)), static_argnames="static")(
        keys, params, static
    )
    rollout = functools.partial(voxel_rollout, static=static, steps=cfg.steps)
    run = _on_devices(rollout, _mesh(batch, devices))
    best = _best_time(
        run, lambda r: (jax.random.split(jax.random.key(r), devices), states, params), cfg.repeats
    )
    return batch * cfg.steps / best


def measure_craftax(cfg: Config, batch: int, devices: int = 1) -> float | None:
    try:
        from craftax.craftax_env import make_craftax_env_from_name
    except ImportError:
        return None
    env = make_craftax_env_from_name("Craftax-Classic-Pixels-v1", auto_reset=True)
    env_params = env.default_params

    def local(key, state, env_params):
        n = jax.tree.leaves(state)[0].shape[0]

        def body(state, k):
            ka, ks = jax.random.split(k)
            acts = jax.random.randint(ka, (n,), 0, env.action_space(env_params).n)
            obs, state, rew, done, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(ks, n), state, acts, env_params
            )
            return state, rew.sum() + obs.mean() * 0

        _, totals = jax.lax.scan(body, state, jax.random.split(key[0], cfg.steps))
        return totals.sum()[None]

    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), batch), env_params
    )
    run = _on_devices(local, _mesh(batch, devices))
    best = _best_time(
        run, lambda r: (jax.random.split(jax.random.key(r), devices), state, env_params),
        cfg.repeats,
    )  # fmt: skip
    return batch * cfg.steps / best


def _device_counts(batch: int) -> list[int]:
    """1, and the most local devices that divide the batch when that is more than 1."""
    n = parallel.env_mesh(batch).devices.size
    return [1] if n == 1 else [1, n]


def main(cfg: Config) -> list[dict]:
    rows = []
    settings = []
    if cfg.render_off:
        settings += [(b, False) for b in cfg.batches]
    if cfg.render_on:
        settings += [(b, True) for b in cfg.render_batches]
    print(f"devices: {jax.devices()}  {common.load_text()}")
    print(f"{'render':>6} {'batch':>6} {'devices':>7} {'steps/s':>12} {'x MineDojo':>11} "
          f"{'x Craftax':>10} {'x 1 device':>10}  load")  # fmt: skip
    for batch, render in settings:
        one = None
        for devices in _device_counts(batch):
            sps = measure_voxel(cfg, batch, render, devices)
            ref = measure_craftax(cfg, batch, devices) if (cfg.craftax and render) else None
            one = sps if devices == 1 else one
            row = dict(render=render, batch=batch, devices=devices, steps_per_s=sps,
                       vs_minedojo=sps / MINEDOJO_STEPS_PER_S,
                       vs_craftax=None if ref is None else sps / ref,
                       vs_one_device=sps / one, load=common.load()[0])  # fmt: skip
            rows.append(row)
            cx = "-" if ref is None else f"{sps / ref:.2f}"
            print(f"{str(render):>6} {batch:>6} {devices:>7} {sps:>12.1f} "
                  f"{sps / MINEDOJO_STEPS_PER_S:>11.1f} {cx:>10} {sps / one:>10.2f}  "
                  f"{row['load']:.1f}", flush=True)  # fmt: skip
    return rows


def cli(argv=None) -> list[dict]:
    cfg = tyro.cli(Config, args=argv)
    if cfg.cpu_devices != 1:
        # before JAX runs anything: every core a device (no effect on the accelerators)
        parallel.use_cpu_cores(cfg.cpu_devices or None)
    return main(cfg)


if __name__ == "__main__":
    cli()

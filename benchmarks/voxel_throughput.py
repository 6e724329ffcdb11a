"""Embedded-world throughput: env steps/s vs batch size, rendering off and on.

    python -m benchmarks.voxel_throughput                      # batches 1..256, render off and on
    python -m benchmarks.voxel_throughput --batches 64 256 --no-render-on

Steps run inside one jitted ``lax.scan`` over time (Anakin style: random MultiDiscrete actions
and same-step auto-reset inside the loop, nothing crosses to the host), so the figure is the
world's own cost. Printed per row: steps/s, the ratio to MineDojo's Java simulator (~20 steps/s
per instance, minedojo-sim-facts.md §7) and, when ``craftax`` is installed, the ratio to
Craftax-Classic with pixel observations measured in the same process with the same method.
Also prints the machine load (``os.getloadavg``): this CPU may be shared.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time

import jax
import jax.numpy as jnp
import tyro

from envs import spaces
from envs.tasks import paper
from envs.voxel import env as E
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


def _random_actions(key, n):
    return jax.random.randint(key, (n, 8), 0, jnp.asarray(spaces.ACTION_NVEC))


@functools.partial(jax.jit, static_argnames=("static", "steps"))
def _rollout(key, states, params, static, steps):
    n = jax.tree.leaves(states)[0].shape[0]

    def body(carry, k):
        states, total = carry
        ka, ks = jax.random.split(k)
        actions = _random_actions(ka, n)
        obs, states, rew, *_ = E.step_autoreset_batch(
            jax.random.split(ks, n), states, actions, params, static
        )
        # Use every observation leaf so the compiler cannot skip computing any of them.
        touch = sum(leaf.astype(jnp.float32).sum() for leaf in jax.tree.leaves(obs))
        return (states, total + rew.sum() + touch * 0), None

    (states, total), _ = jax.lax.scan(
        body, (states, jnp.float32(0.0)), jax.random.split(key, steps)
    )
    return states, total


def measure_voxel(cfg: Config, batch: int, render: bool) -> float:
    static = VoxelStaticConfig(render=render, height=cfg.height, width=cfg.width)
    params = E.make_params(paper.get(cfg.task), static, seed=0)
    keys = jax.random.split(jax.random.key(0), batch)
    _, states = jax.jit(jax.vmap(E.reset, in_axes=(0, None, None)), static_argnames="static")(
        keys, params, static
    )
    jax.block_until_ready(_rollout(jax.random.key(1), states, params, static, cfg.steps))
    best = float("inf")
    for r in range(cfg.repeats):
        t = time.perf_counter()
        jax.block_until_ready(_rollout(jax.random.key(2 + r), states, params, static, cfg.steps))
        best = min(best, time.perf_counter() - t)
    return batch * cfg.steps / best


def measure_craftax(cfg: Config, batch: int) -> float | None:
    try:
        from craftax.craftax_env import make_craftax_env_from_name
    except ImportError:
        return None
    env = make_craftax_env_from_name("Craftax-Classic-Pixels-v1", auto_reset=True)
    env_params = env.default_params

    @functools.partial(jax.jit, static_argnames="steps")
    def rollout(key, state, steps):
        def body(state, k):
            ka, ks = jax.random.split(k)
            acts = jax.random.randint(ka, (batch,), 0, env.action_space(env_params).n)
            obs, state, rew, done, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(ks, batch), state, acts, env_params
            )
            return state, rew.sum() + obs.mean() * 0

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), batch), env_params
    )
    jax.block_until_ready(rollout(jax.random.key(1), state, cfg.steps))
    best = float("inf")
    for r in range(cfg.repeats):
        t = time.perf_counter()
        jax.block_until_ready(rollout(jax.random.key(2 + r), state, cfg.steps))
        best = min(best, time.perf_counter() - t)
    return batch * cfg.steps / best


def main(cfg: Config) -> list[dict]:
    rows = []
    settings = []
    if cfg.render_off:
        settings += [(b, False) for b in cfg.batches]
    if cfg.render_on:
        settings += [(b, True) for b in cfg.render_batches]
    print(f"devices: {jax.devices()}  load average: {os.getloadavg()}")
    print(f"{'render':>6} {'batch':>6} {'steps/s':>12} {'x MineDojo':>11} {'x Craftax':>10}  load")
    for batch, render in settings:
        sps = measure_voxel(cfg, batch, render)
        ref = measure_craftax(cfg, batch) if (cfg.craftax and render) else None
        row = dict(render=render, batch=batch, steps_per_s=sps, vs_minedojo=sps / MINEDOJO_STEPS_PER_S,
                   vs_craftax=None if ref is None else sps / ref, load=os.getloadavg()[0])  # fmt: skip
        rows.append(row)
        cx = "-" if ref is None else f"{sps / ref:.2f}"
        print(f"{str(render):>6} {batch:>6} {sps:>12.1f} {sps / MINEDOJO_STEPS_PER_S:>11.1f} "
              f"{cx:>10}  {row['load']:.1f}", flush=True)  # fmt: skip
    return rows


if __name__ == "__main__":
    main(tyro.cli(Config))

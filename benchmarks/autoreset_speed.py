"""One rendered frame per env step: a PPO iteration with `envs.voxel.step_autoreset` as it is
(the stepped or the fresh episode's state is picked, then observed once) against the form it
replaced (both observed, then picked: two frames per env step under `vmap`), in one process.

    python -m benchmarks.autoreset_speed                  # the main job's config and the mini's
    python -m benchmarks.autoreset_speed --rounds 5 --updates 4

Each configuration builds the agents' own learner (`agents.build`) once and a second learner
that differs only in its env's step function; the two are timed in alternating rounds (order
reversed every round), compilation outside the timing. Printed per configuration: env steps/s
of each (median over rounds), the ratio, and the load average.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import time

import jax
import jax.numpy as jnp
import tyro

from agents import learner as lrn
from agents import ppo
from agents.build import build
from envs.voxel import env as E


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m benchmarks.autoreset_speed"""

    rounds: int = 3
    """alternating rounds per configuration (the median is reported)"""
    updates: int = 3
    """timed PPO iterations per round"""
    only: str = ""
    """run only the configuration whose name contains this"""


def render_both_autoreset(key, state, action, params, static):
    """The replaced form: step and reset each render a frame, then one is picked."""
    k_step, k_reset = jax.random.split(key)
    obs, new_state, reward, term, trunc, info = E.step(k_step, state, action, params, static)
    done = term | trunc
    obs_r, state_r = E.reset(k_reset, params, static)
    pick = lambda a, b: jnp.where(done, a, b)  # noqa: E731
    return (jax.tree.map(pick, obs_r, obs), jax.tree.map(pick, state_r, new_state), reward,
            term, trunc, info)  # fmt: skip


CONFIGS = {
    "main job (PPOConfig defaults)": {},
    "MineCLIP-mini reward + features": dict(reward="mineclip", mineclip_ckpt="mini"),
}


def _learners(flags: dict):
    cfg = ppo.PPOConfig(progress=False, **flags)
    ppo.validate(cfg)
    ours = build(cfg).learner
    env = dataclasses.replace(ours.env, step=render_both_autoreset)
    before = lrn.Learner(ours.static, env, ours.network, ours.mesh, hooks=ours.hooks,
                         consts=ours.consts, hp=ours.hp)  # fmt: skip
    return cfg, {"render once (now)": ours, "render twice (before)": before}


def _time(L: lrn.Learner, runner, updates: int):
    t0 = time.perf_counter()
    for _ in range(updates):
        runner, m = L.iteration(runner)
    jax.block_until_ready(m)
    return runner, time.perf_counter() - t0


def main(args: Args) -> dict:
    results = {}
    for name, flags in CONFIGS.items():
        if args.only and args.only not in name:
            continue
        cfg, learners = _learners(flags)
        runners = {}
        for label, L in learners.items():  # compile (and run once) outside the timing
            runners[label], _ = _time(L, L.init_sharded(jax.random.PRNGKey(0)), 1)
        times = {label: [] for label in learners}
        for r in range(args.rounds):
            order = list(learners) if r % 2 == 0 else list(reversed(learners))
            for label in order:
                runners[label], dt = _time(learners[label], runners[label], args.updates)
                times[label].append(dt)
        steps = args.updates * cfg.num_envs * cfg.num_steps
        sps = {label: steps / statistics.median(t) for label, t in times.items()}
        now, before = sps["render once (now)"], sps["render twice (before)"]
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        results[name] = {**sps, "ratio": now / before, "load": load}
        print(f"{name}: {now:,.0f} vs {before:,.0f} env steps/s per PPO iteration: "
              f"{now / before:.2f}x ({args.rounds} rounds, load {load})", flush=True)  # fmt: skip
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main(tyro.cli(Args))

"""The actor / learner split on a CPU: `python -m agents.ppo`'s default job (hunt a cow, manual
reward, 8 envs x 64 steps, rendered 48x64 frames, SI every 4 updates), env steps per second
including learning, with the rollout over 2 CPU devices and the update on 1 against everything
on one device.

    python -m benchmarks.actor_learner_split                  # 3 rounds of 8 timed updates each
    python -m benchmarks.actor_learner_split --rounds 2 --updates 4

A process's CPU device count is fixed when JAX starts, so the two layouts cannot alternate in
one process: each round starts one subprocess per layout, alternately (one first, then split;
the next round in the other order), each compiling (the persistent compilation cache makes that
fast after the first round), warming up for one SI period and timing `--updates` updates
(a multiple of the SI period, so both pay the same SI phases). Printed: each measurement with
`os.getloadavg()` taken beside it, the medians, and their ratio. The machine may be shared: read
the figures with the load.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import tyro

from benchmarks import common

LAYOUTS = {"one": dict(num_devices=1), "split": dict(actor_devices=2, learner_devices=1)}
CPU_DEVICES = {"one": 1, "split": 2}


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m benchmarks.actor_learner_split --rounds 3 --updates 8"""

    rounds: int = 3
    """rounds; each runs both layouts once, in alternating order"""
    updates: int = 8
    """timed updates per measurement (a multiple of the default --si-every 4)"""
    compile_cache: str = "~/.cache/mineclip_jax/xla"
    """persistent XLA compilation cache shared by the subprocesses ('' disables)"""
    worker: str = ""
    """internal: run one measurement of this layout (one | split) and print it as JSON"""
    out: str = ""
    """optional JSON file for the figures"""


def _load() -> list[float]:
    return list(common.load())


def measure(layout: str, updates: int, compile_cache: str) -> dict:
    """One layout's env steps/s over `updates` updates after compilation and a warm-up."""
    from envs.voxel import parallel

    parallel.use_cpu_cores(CPU_DEVICES[layout])  # before JAX starts
    import jax

    from agents import build, ppo
    from agents import learner as lrn
    from agents import train as loop

    loop.enable_compile_cache(compile_cache)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = ppo.PPOConfig(out=tmp, progress=False, **LAYOUTS[layout])  # the CLI's defaults
        ppo.validate(cfg)
    L = build.build(cfg).learner
    hp = lrn.HyperParams.from_config(cfg)
    runner = L.init_sharded(jax.random.PRNGKey(cfg.seed))

    def run(runner, count):
        for u in range(count):
            runner, m = L.iteration(runner, hp)
            if cfg.si_every > 0 and (u + 1) % cfg.si_every == 0:
                runner, m = L.si_phase(runner, hp)
        jax.block_until_ready(runner.params)
        return runner

    t0 = time.perf_counter()
    runner = run(runner, max(cfg.si_every, 1))  # compiles the iteration and the SI phase
    warm = time.perf_counter() - t0
    load_before = _load()
    t0 = time.perf_counter()
    run(runner, updates)
    dt = time.perf_counter() - t0
    steps = updates * cfg.num_envs * cfg.num_steps
    return dict(layout=layout, sps=steps / dt, seconds=dt, updates=updates, env_steps=steps,
                compile_and_warmup_s=warm, split=L.split, load_before=load_before,
                load_after=_load(), devices=jax.device_count())  # fmt: skip


def main(args: Args) -> None:
    if args.worker:
        print(json.dumps(measure(args.worker, args.updates, args.compile_cache)))
        return
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.setdefault("JAX_PLATFORMS", "cpu")
    results = {"one": [], "split": []}
    for r in range(args.rounds):
        for layout in ("one", "split") if r % 2 == 0 else ("split", "one"):
            cmd = [sys.executable, "-m", "benchmarks.actor_learner_split", "--worker", layout,
                   "--updates", str(args.updates), "--compile-cache", args.compile_cache]  # fmt: skip
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
            if out.returncode != 0:
                raise SystemExit(f"{layout} failed:\n{out.stderr[-3000:]}")
            m = json.loads(out.stdout.strip().splitlines()[-1])
            results[layout].append(m)
            print(f"round {r} {layout:5s}: {m['sps']:7.1f} env steps/s ({m['updates']} updates, "
                  f"{m['seconds']:.1f} s; compile + warm-up {m['compile_and_warmup_s']:.0f} s)  "
                  f"load {m['load_before']} -> {m['load_after']}", flush=True)  # fmt: skip
    med = {k: statistics.median(x["sps"] for x in v) for k, v in results.items()}
    ratio = med["split"] / med["one"]
    print(f"median: one device {med['one']:.1f} env steps/s, split (2 actor devices, 1 learner) "
          f"{med['split']:.1f} env steps/s: split / one = {ratio:.2f}x; load now {_load()}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"runs": results, "median_sps": med, "ratio": ratio}, f, indent=1)


if __name__ == "__main__":
    main(tyro.cli(Args))

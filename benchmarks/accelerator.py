"""The accelerator benchmark: one script, one GPU/TPU chip, under 8 minutes, every figure beside
the same measurement on this machine's CPU.

    python -m benchmarks.accelerator                       # on the accelerator machine
    python -m benchmarks.accelerator --tiny                # CPU, seconds: what the test runs
    python -m benchmarks.accelerator --no-ppo --sizes 64x64 --batches 1024 4096

What it measures (each on the default backend's first device and on CPU device 0):
- the embedded world's env steps/s on "hunt a cow" with random MultiDiscrete actions and same-step
  auto-reset inside one jitted ``lax.scan`` (nothing crosses to the host), rendered at each of
  ``--sizes`` and without rendering, for each of ``--batches`` on the accelerator and
  ``--cpu-batch`` on the CPU;
- MineCLIP (full ViT-B/16 at 160x256, random weights) image-encoder frames/s in fp32 and bf16;
- PPO + self-imitation end to end (rollout, reward, GAE, update) in env steps/s on hunt a cow at
  the main job's default image size, through ``agents``' own training program.

Prints a Markdown table (accelerator | CPU | ratio, with the load average) and writes the same rows
to ``--out`` as JSON. ``--budget-s`` bounds the time: once spent, the remaining measurements are
listed as skipped instead of started (compilation of the renderer on a GPU is the big unknown, so
each row also records its compile time). One device only: the figure is per chip.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import platform
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from benchmarks import common

TASK = "hunt a cow"


@dataclasses.dataclass(frozen=True)
class Config:
    """python -m benchmarks.accelerator [--tiny] [--out FILE]"""

    tiny: bool = False  # tiny sizes on the CPU in seconds (smoke mode for tests and CI)
    sizes: tuple[str, ...] = ("64x64", "128x128", "160x256")  # rendered frame sizes, HxW
    batches: tuple[int, ...] = (256, 1024, 4096, 8192)  # world batch sizes on the accelerator
    cpu_batch: int = 64  # world batch size for the CPU column
    steps: int = 16  # env steps per timed scan
    repeats: int = 2  # timed scans per setting after the compiling one (best is kept)
    mineclip: bool = True  # measure the MineCLIP image encoder
    mineclip_batch: int = 256  # frames per encoder call on the accelerator
    cpu_mineclip_batch: int = 4  # frames per encoder call on the CPU
    ppo: bool = True  # measure PPO + SI end to end on hunt a cow
    ppo_envs: int = 1024  # PPO envs on the accelerator
    cpu_ppo_envs: int = 16  # PPO envs on the CPU
    budget_s: float = 420.0  # start no new measurement after this many seconds
    out: Path = Path("runs/accelerator.json")  # JSON copy of the table


def _parse_size(text: str) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--sizes: {text!r} is not HxW (for example 160x256)") from None
    if h < 1 or w < 1:
        raise SystemExit(f"--sizes: {text!r} must be at least 1x1")
    return h, w


def _devices() -> tuple[jax.Device | None, jax.Device]:
    """(the accelerator chip or None, CPU device 0)."""
    cpu = jax.devices("cpu")[0]
    accel = jax.devices()[0]
    return (None if accel.platform == "cpu" else accel), cpu


def _timed(run, args_for, repeats: int) -> tuple[float, float, object]:
    """(compile-and-first-call s, best call s, last output)."""
    t = time.perf_counter()
    out = jax.block_until_ready(run(*args_for(0)))
    first = time.perf_counter() - t
    best = float("inf")
    for r in range(repeats):
        args = args_for(1 + r)
        t = time.perf_counter()
        out = jax.block_until_ready(run(*args))
        best = min(best, time.perf_counter() - t)
    return first, best, out


def world_steps_per_s(device, batch: int, size: tuple[int, int] | None, steps: int, repeats: int):
    """Env steps/s of `batch` worlds on `device`; size None: rendering off.

    Returns (steps/s, compile s, env steps the scan counted)."""
    from benchmarks.voxel_throughput import voxel_rollout
    from envs.tasks import paper
    from envs.voxel import env as E
    from envs.voxel.state import VoxelStaticConfig

    h, w = size or (16, 16)
    static = VoxelStaticConfig(render=size is not None, height=h, width=w)
    with jax.default_device(device):
        params = E.make_params(paper.get(TASK), static, seed=0)
        keys = jax.random.split(jax.random.key(0), batch)
        _, states = jax.jit(jax.vmap(E.reset, in_axes=(0, None, None)), static_argnums=2)(
            keys, params, static
        )
        run = jax.jit(functools.partial(voxel_rollout, static=static, steps=steps, count=True))
        first, best, out = _timed(
            run, lambda r: (jax.random.split(jax.random.key(r), 1), states, params), repeats
        )
    counted = int(np.asarray(out[1]).sum())
    return batch * steps / best, first, counted


def mineclip_frames_per_s(device, batch: int, dtype: str, tiny: bool, repeats: int):
    """Image-encoder frames/s of MineCLIP on `device` (full attn model unless tiny)."""
    import mineclip_jax as mcj

    cfg = mcj.MineCLIPConfig.tiny() if tiny else mcj.MineCLIPConfig.attn()
    h, w = cfg.image_size
    with jax.default_device(device):
        mc = mcj.create(cfg, jax.random.key(0)).astype(dtype)
        rng = np.random.default_rng(0)
        frames = [
            jnp.asarray(rng.integers(0, 256, (batch, h, w, 3), dtype=np.uint8))
            for _ in range(repeats + 1)
        ]
        first, best, out = _timed(mc.encode_frames, lambda r: (frames[r],), repeats)
    assert out.shape == (batch, cfg.embed_dim), out.shape
    return batch / best, first


def ppo_steps_per_s(
    num_envs: int, tiny: bool, updates: int = 3, task: str = TASK, **flags
) -> tuple[float, float]:
    """PPO + SI env steps/s including learning on hunt a cow at the main job's defaults (image
    size, network, SI cadence), on the default backend's devices, through the learner the
    training loop uses (`agents.build`): one rollout+update program per iteration, an SI phase
    every `si_every` iterations; `flags` are further `agents.ppo.PPOConfig` fields. Returns
    (steps/s, compile + first-iteration seconds)."""
    from agents import learner as lrn
    from agents import ppo
    from agents.build import build

    # --tiny: a smoke run (cheap to compile), not a figure.
    size = dict(num_steps=8, image_size=(16, 24), world_size=16, world_pool=2, cnn="nature",
                update_epochs=1, num_minibatches=1, si_every=1, si_steps=1) if tiny else {}  # fmt: skip
    cfg = ppo.PPOConfig(task=task, num_envs=num_envs, progress=False, **{**size, **flags})
    cfg = dataclasses.replace(cfg, total_steps=cfg.num_envs * cfg.num_steps * (updates + 1))
    ppo.validate(cfg)
    L = build(cfg, (task,)).learner
    hp = lrn.HyperParams.from_config(cfg)

    def one(runner, update):
        runner, m = L.iteration(runner, hp)
        if cfg.si_every > 0 and (update + 1) % cfg.si_every == 0:
            runner, m = L.si_phase(runner, hp)
        return runner, m

    t0 = time.perf_counter()  # compile both programs (and run them once) outside the timing
    runner, m = L.iteration(L.init_sharded(jax.random.PRNGKey(0)), hp)
    if cfg.si_every > 0:
        runner, m = L.si_phase(runner, hp)
    jax.block_until_ready(m)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for u in range(updates):
        runner, m = one(runner, u)
    jax.block_until_ready(m)
    return updates * cfg.num_envs * cfg.num_steps / (time.perf_counter() - t0), first


def ppo_steps_per_s_on_cpu(num_envs: int, tiny: bool) -> tuple[float, float]:
    """`ppo_steps_per_s` in a CPU-only child process (the learner's mesh is the default backend's
    devices, so the CPU figure cannot share the accelerator's process)."""
    import subprocess
    import sys

    code = (
        "import json; from benchmarks.accelerator import ppo_steps_per_s; "
        f"print(json.dumps(ppo_steps_per_s({num_envs}, {tiny})))"
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the CPU PPO measurement failed:\n{out.stderr[-3000:]}")
    sps, first = json.loads(out.stdout.strip().splitlines()[-1])
    return sps, first


def _rows_plan(cfg: Config):
    """(measurement name, accelerator arg, CPU arg, kind) in the order they run."""
    sizes = [_parse_size(s) for s in cfg.sizes]
    plan = []
    for size in [*sizes, None]:
        label = "no render" if size is None else f"render {size[0]}x{size[1]}"
        for b in cfg.batches:
            plan.append((f"world steps/s, {label}", b, cfg.cpu_batch, ("world", size)))
    if cfg.mineclip:
        for dtype in ("float32", "bfloat16"):
            name = f"MineCLIP{' tiny' if cfg.tiny else ''} image encoder frames/s, {dtype}"
            plan.append((name, cfg.mineclip_batch, cfg.cpu_mineclip_batch, ("mineclip", dtype)))
    if cfg.ppo:
        plan.append(("PPO + SI env steps/s (hunt a cow)", cfg.ppo_envs, cfg.cpu_ppo_envs, ("ppo",)))
    return plan


def _measure(cfg: Config, kind: tuple, device, arg: int) -> dict:
    if kind[0] == "world":
        sps, compile_s, counted = world_steps_per_s(device, arg, kind[1], cfg.steps, cfg.repeats)
        if counted != arg * cfg.steps:
            raise RuntimeError(f"the rollout ran {counted} env steps, expected {arg * cfg.steps}")
        return {"value": sps, "compile_s": compile_s}
    if kind[0] == "mineclip":
        fps, compile_s = mineclip_frames_per_s(device, arg, kind[1], cfg.tiny, cfg.repeats)
        return {"value": fps, "compile_s": compile_s}
    # the CPU column beside an accelerator needs a CPU-only process; without one, this is it
    if device.platform == "cpu" and jax.default_backend() != "cpu":
        sps, compile_s = ppo_steps_per_s_on_cpu(arg, cfg.tiny)
    else:
        sps, compile_s = ppo_steps_per_s(arg, cfg.tiny)
    return {"value": sps, "compile_s": compile_s}


def run(cfg: Config) -> dict:
    if cfg.tiny:
        cfg = dataclasses.replace(
            cfg, sizes=("16x24",), batches=(4,), cpu_batch=4, steps=2, repeats=1,
            mineclip_batch=2, cpu_mineclip_batch=2, ppo_envs=4, cpu_ppo_envs=4,
        )  # fmt: skip
    accel, cpu = _devices()
    start = time.perf_counter()
    rows, cpu_cache = [], {}
    for name, accel_arg, cpu_arg, kind in _rows_plan(cfg):
        row = {"measurement": name, "batch": accel_arg, "cpu_batch": cpu_arg}
        if time.perf_counter() - start > cfg.budget_s:
            row["skipped"] = f"time budget of {cfg.budget_s:.0f} s spent"
            rows.append(row)
            continue
        if accel is not None:
            row["accelerator"] = _measure(cfg, kind, accel, accel_arg)
        key = (name, cpu_arg)
        if key not in cpu_cache:  # one CPU figure per measurement, whatever the accel batch
            cpu_cache[key] = _measure(cfg, kind, cpu, cpu_arg)
        row["cpu"] = cpu_cache[key]
        row["load"] = common.load()[0]
        rows.append(row)
        print(_row_line(row), flush=True)
    result = {
        "accelerator": None if accel is None else accel.device_kind,
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        "tiny": cfg.tiny,
        "seconds": time.perf_counter() - start,
        "rows": rows,
    }
    cfg.out.parent.mkdir(parents=True, exist_ok=True)
    cfg.out.write_text(json.dumps(result, indent=2))
    return result


def _fmt(x: dict | None) -> str:
    return "-" if x is None else f"{x['value']:,.1f}"


def _row_line(row: dict) -> str:
    a, c = row.get("accelerator"), row.get("cpu")
    ratio = "-" if a is None or c is None else f"{a['value'] / c['value']:.1f}x"
    note = row.get("skipped", f"load {row.get('load', 0):.1f}")
    return (
        f"| {row['measurement']} | {row['batch']} | {_fmt(a)} | {row['cpu_batch']} | {_fmt(c)} "
        f"| {ratio} | {note} |"
    )


def markdown(result: dict) -> str:
    head = [
        f"Accelerator: {result['accelerator'] or 'none (CPU only)'}; CPU: {result['cpu']} "
        f"({result['cpu_count']} cores); jax {result['jax']}; {result['seconds']:.0f} s",
        "",
        "| measurement | batch | accelerator | CPU batch | CPU | ratio | note |",
        "|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + [_row_line(r) for r in result["rows"]])


def main(argv=None) -> dict:
    cfg = tyro.cli(Config, args=argv)
    result = run(cfg)
    print()
    print(markdown(result))
    print(f"\nwrote {cfg.out}")
    return result


if __name__ == "__main__":
    main()

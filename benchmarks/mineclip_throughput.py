"""MineCLIP throughput on this machine: image encoder (fp32, bf16), full video path, and the
cost of one reward step with the per-env feature cache vs recomputing all 16 frames; with
`--reference DIR` the same figures for the official PyTorch MineCLIP on the same inputs, in
the same process, with ratios. Full-size ViT-B/16 at 160x256, random weights, CPU.

    python benchmarks/mineclip_throughput.py                                  # JAX only
    python benchmarks/mineclip_throughput.py --reference /tmp/mineclip_ref    # + official torch

The official checkout is never vendored (git clone https://github.com/MineDojo/MineCLIP);
its model needs `pip install "torch>=2.1" x-transformers==0.27.1 einops dm-tree`.
Times are per call after one warm-up call (compilation excluded); "CPU-s/frame" is process CPU
time (all threads) per frame, the figure that does not depend on how many cores are free.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import tyro  # noqa: E402

import mineclip_jax as mcj  # noqa: E402
from benchmarks.mineclip_parity import import_official  # noqa: E402
from mineclip_jax import reward as rw  # noqa: E402

WINDOW = 16


@dataclasses.dataclass
class BenchConfig:
    """MineCLIP throughput benchmark (see the module docstring for the commands)."""

    reference: Path | None = None  # MineDojo/MineCLIP checkout: also time official PyTorch.
    variant: str = "attn"  # "attn" or "avg" temporal aggregator.
    frame_batch: int = 8  # frames per image-encoder call.
    envs: int = 1  # envs per reward step.
    repeats: int = 2  # timed calls per measurement (after one warm-up call).
    threads: int = 2  # torch intra-op threads (XLA uses every core by default).
    skip_bf16: bool = False  # leave out the bfloat16 image-encoder measurement.
    seed: int = 0  # seed of weights and frames.


def timed(fn, repeats: int) -> tuple[float, float]:
    """(wall s, process CPU s) per call of fn, after one warm-up call."""
    jax.block_until_ready(fn())
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        jax.block_until_ready(fn())
    return (time.perf_counter() - wall0) / repeats, (time.process_time() - cpu0) / repeats


def bench_jax(cfg: BenchConfig, frames: np.ndarray, window: np.ndarray) -> dict:
    mc = mcj.create(getattr(mcj.MineCLIPConfig, cfg.variant)(), jax.random.key(cfg.seed))
    out = {}
    frames_j, window_j = jnp.asarray(frames), jnp.asarray(window)
    wall, cpu = timed(lambda: mc.encode_frames(frames_j), cfg.repeats)
    out["image encoder fp32"] = (wall, cpu, len(frames), "frames")
    if not cfg.skip_bf16:
        mc16 = mc.astype("bfloat16")
        wall, cpu = timed(lambda: mc16.encode_frames(frames_j), cfg.repeats)
        out["image encoder bf16"] = (wall, cpu, len(frames), "frames")
    wall, cpu = timed(lambda: mc.encode_video(window_j), cfg.repeats)
    out["video path (16 frames)"] = (wall, cpu, len(window), "windows")

    reward = rw.MineCLIPReward(mc, "hunt a cow", kind="direct")
    n = cfg.envs
    state = reward.init(n)
    not_first = jnp.zeros((n,), bool)
    state, *_ = reward.step_frames(state, window_j[:, 0], jnp.ones((n,), bool))
    new_frame = window_j[:, -1]
    wall, cpu = timed(lambda: reward.step_frames(state, new_frame, not_first)[1], cfg.repeats)
    out["reward step, cached"] = (wall, cpu, n, "steps")

    @jax.jit
    def scratch_step(spec, frames16):
        video = spec.module.apply({"params": spec.params}, frames16, method="encode_video")
        logits = spec.module.apply(
            {"params": spec.params}, video, spec.text_features, method="logits"
        )
        goal = jnp.zeros((frames16.shape[0],), jnp.int32)
        p, nt = rw.goal_probability(logits, spec.goal_prompt[goal], spec.candidates[goal])
        return rw.direct_reward(p, nt)

    wall, cpu = timed(lambda: scratch_step(reward.spec, window_j), cfg.repeats)
    out["reward step, recompute 16"] = (wall, cpu, n, "steps")
    return out


def bench_torch(cfg: BenchConfig, frames: np.ndarray, window: np.ndarray) -> dict:
    torch, MineCLIP = import_official(cfg.reference.expanduser().resolve())
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    model = MineCLIP(
        "vit_base_p16_fz.v2.t2",
        resolution=(160, 256),
        pool_type="attn.d2.nh8.glusw" if cfg.variant == "attn" else "avg",
        image_feature_dim=512,
        mlp_adapter_spec="v0-2.t0",
        hidden_dim=512,
    ).eval()
    frames_t = torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous()
    window_t = torch.from_numpy(window).permute(0, 1, 4, 2, 3).contiguous()
    tokens = mcj.tokenize(list(rw.PAPER_TASK_PROMPTS))
    out = {}
    with torch.inference_mode():
        text = model.encode_text(torch.from_numpy(tokens.astype(np.int64)))

        def head(frame_feats):
            pooled = model.forward_video_features(frame_feats)
            logits, _ = model.forward_reward_head(pooled, text_tokens=text)
            p = torch.softmax(logits, dim=-1)[:, 1]  # "hunt a cow" among the 12 prompts
            return torch.clamp(p - 1.0 / logits.shape[-1], min=0.0)

        wall, cpu = timed(lambda: model.forward_image_features(frames_t), cfg.repeats)
        out["image encoder fp32"] = (wall, cpu, len(frames), "frames")
        wall, cpu = timed(lambda: model.encode_video(window_t), cfg.repeats)
        out["video path (16 frames)"] = (wall, cpu, len(window), "windows")
        cached = model.forward_image_features(window_t)  # [N, 16, 512]

        def cached_step():
            new = model.forward_image_features(window_t[:, -1:])
            return head(torch.cat([cached[:, 1:], new], dim=1))

        wall, cpu = timed(cached_step, cfg.repeats)
        out["reward step, cached"] = (wall, cpu, len(window), "steps")
        wall, cpu = timed(lambda: head(model.forward_image_features(window_t)), cfg.repeats)
        out["reward step, recompute 16"] = (wall, cpu, len(window), "steps")
    return out


def main(cfg: BenchConfig) -> dict:
    if cfg.variant not in ("attn", "avg"):
        raise SystemExit(f"--variant must be attn or avg, got {cfg.variant!r}")
    rng = np.random.default_rng(cfg.seed)
    frames = rng.integers(0, 256, size=(cfg.frame_batch, 160, 256, 3), dtype=np.uint8)
    window = rng.integers(0, 256, size=(cfg.envs, WINDOW, 160, 256, 3), dtype=np.uint8)
    load = os.getloadavg()[0]
    print(f"jax {jax.__version__} ({jax.default_backend()}), {os.cpu_count()} CPUs, ", end="")
    print(f"load avg {load:.1f} at start; MineCLIP[{cfg.variant}] full size, random weights")
    results = {"jax": bench_jax(cfg, frames, window)}
    if cfg.reference is not None:
        results["torch"] = bench_torch(cfg, frames, window)
    print(f"load avg {os.getloadavg()[0]:.1f} at end\n")

    header = f"{'measurement':28s} {'impl':6s} {'items/s':>9s} {'wall ms/call':>13s} "
    header += f"{'CPU-s/item':>11s}"
    if "torch" in results:
        header += f" {'jax/torch speed':>16s}"
    print(header)
    print("-" * len(header))
    for name, (wall, *_) in results["jax"].items():
        for impl in ("jax", "torch"):
            if impl not in results or name not in results[impl]:
                continue
            w, c, k, u = results[impl][name]
            line = f"{name:28s} {impl:6s} {k / w:9.2f} {1e3 * w:13.1f} {c / k:11.3f}"
            if impl == "torch":
                line += f" {w / wall:15.2f}x"
            print(line + f"  ({u})")
    jr = results["jax"]
    ratio = jr["reward step, recompute 16"][0] / jr["reward step, cached"][0]
    print(f"\ncached reward step is {ratio:.1f}x cheaper than recomputing 16 frames (jax)")
    if "image encoder bf16" in jr:
        r16 = jr["image encoder fp32"][0] / jr["image encoder bf16"][0]
        print(f"bf16 image encoder speed vs fp32: {r16:.2f}x (jax)")
    return results


if __name__ == "__main__":
    main(tyro.cli(BenchConfig))

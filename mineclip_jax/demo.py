"""Score a short clip against a few prompts with MineCLIP and print the table.

    python -m mineclip_jax.demo                                   # MineCLIP-mini, built-in clip
    python -m data.demo --world "milk a cow"                      # a clip of the embedded world
    python -m mineclip_jax.demo --ckpt attn.pth --video clip.mp4 --prompts "hunt a cow" "dig a hole"
    python -m mineclip_jax.demo --ckpt random --config tiny      # random weights (pipeline only)

Without `--video` the clip is a procedurally drawn 16-frame scene (grass, sky and a cow-like
block that grows as the camera walks up to it). It shows the pipeline, not the model's quality:
the mini model knows only the embedded world's video, which this drawing does not look like
(the mini model's held-out figures: `experiments/mineclip_mini/README.md`). `--world TASK`
renders the clip in the embedded world instead, through `python -m data.demo --world TASK`
(the same flags; one of the paper's 12 task prompts): the scripted oracle of `data.synthetic`
doing the task in a world of a seed never trained on, the 16
frames up to just after its first success (about 30 s, most of it compiling the world).

`--ckpt` defaults to "mini", the MineCLIP the package ships (trained on the embedded world's
video; `mineclip_jax/pretrained/mini`); with `--ckpt random` the numbers only show that the
pipeline runs, not what MineCLIP thinks. Frames are resized to the model's input size (48x64
for mini, 160x256 for the released models).

Columns: the logit exp(s) * cos(video, prompt); P = softmax over the listed prompts; Direct =
max(P - 1/N, 0), the reward an agent would get for that prompt as its goal with the others as
negatives (mineclip_jax.reward).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Literal

import jax
import numpy as np

from mineclip_jax import compile_cache
from mineclip_jax.checkpoint import load_checkpoint
from mineclip_jax.config import MineCLIPConfig
from mineclip_jax.handle import create
from mineclip_jax.reward import direct_reward

NUM_FRAMES = 16
HEIGHT, WIDTH = 160, 256
DEFAULT_PROMPTS = (
    "milk a cow",
    "hunt a cow",
    "shear a sheep",
    "find an ocean",
    "dig a hole",
    "combat a zombie",
)


@dataclasses.dataclass
class DemoConfig:
    """MineCLIP demo: score one 16-frame clip against prompts."""

    ckpt: str = "mini"  # shipped name, official .pth, native checkpoint dir, or "random".
    video: Path | None = None  # a video file to score (else a built-in procedural clip).
    world: str | None = None  # render the clip in the embedded world: the oracle doing this task.
    start_s: float = 0.0  # where the clip starts in --video (seconds).
    duration_s: float = 8.0  # clip length in --video; 16 frames are sampled uniformly.
    prompts: tuple[str, ...] = DEFAULT_PROMPTS  # prompts to score the clip against.
    config: Literal["attn", "avg", "tiny", "mini"] = "attn"  # architecture of --ckpt random.
    seed: int = 0  # seed of the random weights.


def procedural_clip(num_frames: int = NUM_FRAMES) -> np.ndarray:
    """uint8 [T, 160, 256, 3]: sky, grass and a brown-and-white block that grows as the camera
    approaches it (a stand-in for walking up to a cow)."""
    y = np.arange(HEIGHT)[:, None]
    x = np.arange(WIDTH)[None, :]
    frames = np.empty((num_frames, HEIGHT, WIDTH, 3), np.uint8)
    horizon = 70
    for t in range(num_frames):
        sky = (y < horizon)[..., None] & np.ones((1, WIDTH, 1), bool)
        img = np.where(sky, np.array([135, 180, 235]), np.array([86, 140, 48]))
        size = 12 + 5 * t  # the block grows as the camera approaches
        cy, cx = horizon + 10 + t, WIDTH // 2 + 20 - t
        body = (abs(y - cy) < size * 0.6) & (abs(x - cx) < size)
        img[body] = [90, 60, 40]
        spots = body & (((y // 6 + x // 9) % 4) == 0)
        img[spots] = [235, 235, 235]
        frames[t] = img.astype(np.uint8)
    return frames


def resize_clip(frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """uint8 [T, h, w, 3] -> [T, H, W, 3] (bilinear, PIL), unchanged when already that size."""
    from PIL import Image

    if tuple(frames.shape[1:3]) == tuple(size):
        return frames
    h, w = size
    return np.stack([np.asarray(Image.fromarray(f).resize((w, h), Image.BILINEAR)) for f in frames])


def read_video_clip(path: Path, start_s: float, duration_s: float) -> np.ndarray:
    """16 frames sampled uniformly from [start_s, start_s + duration_s) of a video file,
    resized to 160x256 RGB (PyAV). A clip with fewer than 16 frames in that interval is refused
    (saying how many it has) rather than padded with repeats."""
    import av

    if not path.is_file():
        raise FileNotFoundError(f"no video at {path}")
    times = start_s + (np.arange(NUM_FRAMES) + 0.5) * duration_s / NUM_FRAMES
    decoded: list[tuple[float, np.ndarray]] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for frame in container.decode(stream):
            if frame.time is None:
                continue
            if frame.time >= start_s + duration_s:
                break
            if frame.time >= start_s - 1.0:
                rgb = frame.to_ndarray(width=WIDTH, height=HEIGHT, format="rgb24")
                decoded.append((float(frame.time), rgb))
    if not decoded:
        raise ValueError(
            f"{path} has no frames in [{start_s}, {start_s + duration_s}) s; "
            f"check --start-s / --duration-s"
        )
    stamps = np.array([t for t, _ in decoded])
    inside = int(np.sum((stamps >= start_s) & (stamps < start_s + duration_s)))
    picks = [int(np.argmin(np.abs(stamps - t))) for t in times]
    if inside < NUM_FRAMES:
        raise ValueError(
            f"{path} has only {inside} frames in the {NUM_FRAMES}-frame window "
            f"[{start_s:g}, {start_s + duration_s:g}) s (the last decoded at "
            f"{float(stamps.max()):.2f} s); repeating frames would score a different clip. Choose "
            f"--start-s/--duration-s inside the video with at least {NUM_FRAMES} frames, or use "
            f"a longer clip"
        )
    return np.stack([decoded[i][1] for i in picks])


def score_clip(handle, frames: np.ndarray, prompts) -> dict[str, np.ndarray]:
    """Logits, softmax P and Direct reward of one clip [T, H, W, 3] against prompts."""
    video = handle.encode_video(frames[None])
    text = handle.encode_text(list(prompts))
    logits = np.asarray(handle.logits(video, text))[0]
    z = np.exp(logits - logits.max())
    probs = z / z.sum()
    direct = np.asarray(direct_reward(probs, float(len(prompts))))
    return {"logits": logits, "probs": probs, "direct": direct}


def format_table(prompts, scores) -> str:
    width = max(len("prompt"), *(len(p) for p in prompts))
    lines = [f"{'prompt':{width}s}  {'logit':>8s}  {'P':>6s}  {'Direct':>7s}"]
    lines.append("-" * len(lines[0]))
    order = np.argsort(-scores["logits"])
    for i in order:
        lines.append(
            f"{prompts[i]:{width}s}  {scores['logits'][i]:8.3f}  {scores['probs'][i]:6.3f}  "
            f"{scores['direct'][i]:7.3f}"
        )
    return "\n".join(lines)


def run(cfg: DemoConfig, world_clip=None) -> dict[str, np.ndarray]:
    """Score the clip `cfg` names and print the table. `world_clip(task, image_size, seed)`
    renders `--world` clips; it lives in `data.demo` (the embedded world's scripted oracles,
    which `mineclip_jax` does not import), so `python -m data.demo --world TASK` passes it."""
    prompts = tuple(cfg.prompts)
    if len(prompts) < 2:
        raise ValueError("give at least two --prompts (the probability is relative to the others)")
    if cfg.video is not None and cfg.world is not None:
        raise ValueError("give --video or --world, not both: the demo scores one clip")
    if cfg.world is not None and world_clip is None:
        raise ValueError(
            "--world renders the clip in the embedded world: run `python -m data.demo --world "
            f"{cfg.world!r}` (the same flags; data.demo has the world's scripted oracles)"
        )
    t0 = time.perf_counter()
    if cfg.ckpt != "random":
        handle = load_checkpoint(cfg.ckpt)
        print(f"MineCLIP[{handle.config.pool}] from {cfg.ckpt}")
    else:
        config = {
            "attn": MineCLIPConfig.attn,
            "avg": MineCLIPConfig.avg,
            "tiny": MineCLIPConfig.tiny,
            "mini": MineCLIPConfig.mini,
        }[cfg.config]()
        handle = create(config, jax.random.key(cfg.seed))
        print(
            f"NOTICE: --ckpt random, so MineCLIP[{cfg.config}] has RANDOM weights; the scores "
            f"below are meaningless. Leave --ckpt at mini (shipped), or pass attn.pth (released "
            f"weights) or a checkpoint written by python -m mineclip_jax.train."
        )
    if cfg.world is not None:
        frames, source = world_clip(cfg.world, handle.config.image_size, cfg.seed)  # data.demo
    elif cfg.video is not None:
        frames = read_video_clip(cfg.video, cfg.start_s, cfg.duration_s)
        source = f"{cfg.video} [{cfg.start_s:g}s, {cfg.start_s + cfg.duration_s:g}s)"
    else:
        frames = procedural_clip()
        source = (
            "built-in procedural clip (walking up to a cow-like block; drawn, not rendered by "
            "the embedded world, so the mini model has never seen its like: pass --world TASK "
            "or --video for a real clip)"
        )
    frames = resize_clip(frames, handle.config.image_size)
    print(f"clip: {source}, {frames.shape[0]} frames of {frames.shape[1]}x{frames.shape[2]}")
    scores = score_clip(handle, frames, prompts)
    print(format_table(prompts, scores))
    print(f"({time.perf_counter() - t0:.1f} s including model set-up and compilation)")
    return scores


def main(argv=None):
    import tyro

    cfg = tyro.cli(DemoConfig, args=argv)
    compile_cache.enable()  # a second demo loads its compiled programs (docs: README gotchas)
    run(cfg)


if __name__ == "__main__":
    main()

"""Labelled episodes of the four Creative tasks from the embedded world, to calibrate a MineCLIP
judge with (`mineclip_jax.judge`).

    python -m data.judge_episodes --out EPISODES                     # 48x64, 100 + 100 per set
    python -m mineclip_jax.judge --episodes EPISODES --ckpt DIR      # calibrate, write judge.json

Per Creative task and per episode length (`--ticks`, default `0 200 100`; 0: the task's own
limit, 1,000 ticks for the portal, the ocean and the carpets, 500 for the hole, what
`agents.evaluate` runs by default), `--episodes` successes (the scripted oracle, success reached)
and as many failures (random actions, wandering, an agent-like controller, circling the portal;
no success) from the simulator's ground truth, in worlds of `--world-seed` (never in
MineCLIP-mini's training clips), one frame per game tick at the judge's frame size. Written in
the layout `mineclip_jax.judge` reads (its docstring). The default three lengths at 48x64 take
about 9 GB (one frame per tick, 200 episodes per set); `--ticks 200` alone about 1.5 GB.
`--seed 0` gives the episodes of MineCLIP-mini's stored judge (`experiments/mineclip_mini`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from data import synthetic as S
from envs import tasks as envs_tasks
from mineclip_jax import compile_cache
from mineclip_jax.judge import write_episode_set
from mineclip_jax.reward import PAPER_TASK_PROMPTS

CREATIVE = ("find a nether portal", "find an ocean", "dig a hole", "put carpets on the floor")


@dataclasses.dataclass
class JudgeEpisodesConfig:
    """Labelled Creative episodes: python -m data.judge_episodes --out DIR"""

    out: str  # the episode directory (mineclip_jax.judge's layout).
    tasks: tuple[str, ...] = CREATIVE  # task prompts (each needs a scripted oracle).
    ticks: tuple[int, ...] = (0, 200, 100)  # game ticks per episode, one set each; 0: own limit.
    episodes: int = 100  # successes, and as many failures, per task and length.
    height: int = 48  # frame height (the judge's model's image size).
    width: int = 64  # frame width.
    world_seed: int = 2  # seed of the world pool (MineCLIP-mini's clips: train 0, test 1).
    seed: int = 0  # seed of the episodes (the stored judge's: 0).


def judge_ticks(task: str, requested: int) -> int:
    """Game ticks of the judge's episodes of `task`: `requested`, or the task's own limit."""
    return requested or envs_tasks.get(task).max_steps


def episodes(task: str, want_success: bool, count: int, seed: int, world_seed: int, cfg):
    """Frames [count, T+1, H, W, 3], truth and lengths of `count` episodes of `task` that
    succeeded (oracle) or failed (other behaviours), simulated batch by batch (`cfg`: a
    `data.synthetic.SyntheticConfig`)."""
    if want_success:
        pool = [S.task_oracle(task)]
    else:
        pool = [b for b in S.BEHAVIOURS if b.task == task and (b.controller != 0 or b.target)]
    frames, truth, kinds = [], [], []
    rng = np.random.default_rng([seed, world_seed, PAPER_TASK_PROMPTS.index(task), want_success])
    tries = 0
    while sum(len(f) for f in frames) < count:
        tries += 1
        if tries > 12 * (count // cfg.batch + 1):
            raise RuntimeError(f"could not collect {count} {want_success} episodes of {task!r}")
        b = pool[tries % len(pool)]
        f, t = S.run_episodes(cfg, b, world_seed, int(rng.integers(2**31)))
        ok = t["success"].any(axis=1) == want_success
        frames.append(f[ok])
        truth.append({k: v[ok] for k, v in t.items()})
        kinds += [b.name] * int(ok.sum())
    frames = np.concatenate(frames)[:count]
    truth = {k: np.concatenate([t[k] for t in truth])[:count] for k in truth[0]}
    done = truth["done"]
    # An episode ends at its first done step (the state is frozen after it).
    lengths = np.where(done.any(1), done.argmax(1) + 1, done.shape[1])
    return frames, truth, lengths, kinds[:count]


def main(cfg: JudgeEpisodesConfig) -> None:
    if not cfg.ticks or min(cfg.ticks) < 0:
        raise ValueError(f"--ticks needs lengths >= 0 (0: the task's own), got {cfg.ticks}")
    sim = S.SyntheticConfig(out="unused", height=cfg.height, width=cfg.width)
    for task in cfg.tasks:
        for ticks in dict.fromkeys(judge_ticks(task, t) for t in cfg.ticks):
            run = dataclasses.replace(sim, episode_ticks=ticks)
            # seed + 1: the judge's episodes are not the AUC episodes of the same seed
            fs, _, ls, _ = episodes(task, True, cfg.episodes, cfg.seed + 1, cfg.world_seed, run)
            ff, _, lf, _ = episodes(task, False, cfg.episodes, cfg.seed + 1, cfg.world_seed, run)
            path = write_episode_set(cfg.out, task, ticks, fs, ls, ff, lf,
                                     world_seed=cfg.world_seed, seed=cfg.seed)  # fmt: skip
            print(f"{task!r}, {ticks} ticks: {len(fs)} + {len(ff)} episodes -> {path}", flush=True)


if __name__ == "__main__":
    import tyro

    cfg = tyro.cli(JudgeEpisodesConfig)
    compile_cache.enable()  # a rerun loads the world's compiled episode program from disk
    main(cfg)

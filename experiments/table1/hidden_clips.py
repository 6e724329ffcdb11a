"""Clips of the scripted acts with their target hidden, appended to a clip directory.

    python -m experiments.table1.hidden_clips --base ~/mineclip_mini/clips_policy \\
        --out ~/mineclip_mini/clips_hidden --episodes 480

The MineCLIP-mini reward pays the camera motion of a scripted hunt whether the cow is in view or
not (`experiments.table1.reward_probe`). `data.synthetic`'s `hidden_*` behaviours run the oracle's hunts,
milkings and shearings with the animal removed from the frames (it still lives in the
simulation), so each clip is the act's camera motion with nothing there, labelled `wander`.
`python -m data.synthetic --hidden-targets` mixes them into a build from the start; this module
adds them to an existing clip directory, to fine-tune a trained model (`mineclip_jax.train
--init`), with the Animal-Zoo acts drawn `--zoo-weight` times as often as the combat ones. Clips
are cut and captioned as `data.synthetic` does, in the base build's train worlds; the test split
stays the base one.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import tyro

from data import synthetic
from envs.tasks import paper
from experiments.table1.policy_clips import write_clip_dir

ZOO_TASKS = tuple(paper.PAPER_TASKS[t].prompt for t in paper.ANIMAL_ZOO)  # the Animal-Zoo prompts


@dataclasses.dataclass(frozen=True)
class HiddenClipsConfig:
    """python -m experiments.table1.hidden_clips --base CLIPS --out OUT --episodes N"""

    base: str  # array clip directory (data.synthetic) the new clips are added to.
    out: str  # output clip directory (base clips + hidden-target clips in the train split).
    episodes: int = 480  # episodes to simulate (whole batches of --batch).
    clips_per_episode: int = 3  # 16-frame windows cut from each episode.
    zoo_weight: float = 4.0  # how much more often an Animal-Zoo act is drawn than a combat one.
    episode_ticks: int = 160  # game ticks per episode (20 ticks = 1 s).
    batch: int = 8  # episodes simulated together (one behaviour per batch).
    seed: int = 123  # seed of the behaviours drawn, the episodes and the captions.
    overwrite: bool = False  # replace an existing --out directory.
    all_cores: bool = True  # on a CPU, simulate a batch's episodes on every core.

    def __post_init__(self):
        if self.episodes < self.batch or self.episodes % self.batch:
            raise ValueError(f"--episodes must be a positive multiple of --batch {self.batch}, "
                             f"got {self.episodes}")  # fmt: skip
        if self.clips_per_episode < 1 or self.zoo_weight <= 0:
            raise ValueError("--clips-per-episode must be >= 1 and --zoo-weight > 0")


def build(cfg: HiddenClipsConfig) -> dict:
    """Simulate the hidden-target episodes, cut and caption them, write the clip directory."""
    meta = json.loads((Path(cfg.base).expanduser() / "clips.json").read_text())
    built = meta.get("config", {})  # the base build's world settings: its train worlds again
    worlds = {k: built[k] for k in ("world_size", "world_height", "world_pool") if k in built}
    height, width = meta["frame_shape"][1:3]  # the new clips are drawn at the base clips' size
    sim = synthetic.SyntheticConfig(out="unused", batch=cfg.batch, episode_ticks=cfg.episode_ticks,
                                    height=height, width=width, **worlds)  # fmt: skip
    world_seed = int(built.get("seed", 0))
    hidden = [b for b in synthetic.BEHAVIOURS if b.hide_target]
    weights = np.array([cfg.zoo_weight if b.task in ZOO_TASKS else 1.0 for b in hidden])
    rng = np.random.default_rng(cfg.seed)
    frames, records = [], []
    for i in range(cfg.episodes // cfg.batch):
        behaviour = hidden[rng.choice(len(hidden), p=weights / weights.sum())]
        rgb, truth = synthetic.run_episodes(sim, behaviour, world_seed, int(rng.integers(2**31)))
        for e in range(cfg.batch):
            ep = {k: v[e] for k, v in truth.items()}
            for end, stride, idx, label, text in synthetic.episode_clips(
                ep, behaviour, cfg.clips_per_episode, rng
            ):
                frames.append(rgb[e, idx])
                records.append({"text": text, "label": label, "task": behaviour.task,
                                "behaviour": behaviour.name, "stride": stride,
                                "clip_id": f"hidden/{i:05d}/{e}/{end}/{behaviour.name}",
                                "target_distance": float(ep["target_distance"][end])})  # fmt: skip
    return write_clip_dir(cfg.base, cfg.out, frames, records, cfg.overwrite,
                          {"config": dataclasses.asdict(cfg)}, kind="hidden_clips")  # fmt: skip


def main(cfg: HiddenClipsConfig) -> None:
    import envs  # before JAX starts: the episodes then run on every core

    envs.use_every_core("experiments.table1.hidden_clips", "--no-all-cores", enabled=cfg.all_cores)
    summary = build(cfg)
    added = summary["hidden_clips"]
    print(f"{added['count']} hidden-target clips added to "
          f"{summary['clips']['train'] - added['count']} base train clips -> {cfg.out}; labels "
          f"{added['labels']}")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(HiddenClipsConfig))

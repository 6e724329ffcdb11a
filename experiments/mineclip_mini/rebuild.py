"""Rebuild MineCLIP-mini from nothing: clips, training, the shipped files, the judge.

    python -m experiments.mineclip_mini.rebuild --work ~/mineclip_mini          # then copy
    python -m experiments.mineclip_mini.rebuild --work ~/mineclip_mini --install  # ship it

Steps (each resumes when rerun with the same --work: the clips are kept, training resumes from
its last orbax checkpoint):
1. `python -m data.synthetic --out WORK/clips --episodes 3000` (3,000 episodes, 9,000 clips);
2. `python -m mineclip_jax.train --data WORK/clips --out WORK/run --config mini --steps 2000
   --batch-size 64 --train-frames 8 --lr 1e-3 --warmup-steps 60 --weight-decay 0.1
   --save-dtype int8` (the token embedding int8 with a per-row scale, the rest float16);
3. SHA256SUMS beside the model; with --install the model replaces `mineclip_jax/pretrained/mini`;
4. `experiments/mineclip_mini/evaluate.py` on the result, which also calibrates the Creative judge and
   writes judge.json beside the model.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from pathlib import Path

import tyro

from data import synthetic
from mineclip_jax import checkpoint, train


@dataclasses.dataclass
class RebuildConfig:
    """Rebuild MineCLIP-mini: python -m experiments.mineclip_mini.rebuild --work DIR"""

    work: Path  # working directory: clips/, run/ (checkpoints, tb, model/).
    episodes: int = 3000  # world episodes to cut clips from (the shipped model's).
    steps: int = 2000  # training steps, batch 64 (the shipped model's).
    seed: int = 0  # seed of the clips and of training.
    hidden_targets: bool = False  # data.synthetic --hidden-targets: also the scripted hunts,
    # milkings and shearings drawn without the animal, labelled `wander` (issue 37's lever).
    install: bool = False  # copy the model into mineclip_jax/pretrained/mini.
    skip_benchmark: bool = False  # skip step 4 (no judge.json then).


def main(cfg: RebuildConfig) -> None:
    t0 = time.monotonic()
    work = cfg.work.expanduser()
    clips = work / "clips"
    if not (clips / "clips.json").is_file():
        # all_cores=False: the training below then runs on one device whatever the machine's
        # core count, as the shipped model was trained (a 2-device mesh sums in another order)
        synthetic.main(synthetic.SyntheticConfig(out=str(clips), episodes=cfg.episodes,
                                                 seed=cfg.seed, overwrite=True,
                                                 hidden_targets=cfg.hidden_targets,
                                                 all_cores=False))  # fmt: skip
    t_data = time.monotonic() - t0
    train.train(
        train.TrainConfig(
            data=clips, out=work / "run", config="mini", steps=cfg.steps, batch_size=64,
            train_frames=8, lr=1e-3, warmup_steps=60, weight_decay=0.1, ckpt_every=50,
            eval_batch_size=64, max_eval_clips=512, save_dtype="int8", seed=cfg.seed,
            progress=False, resume=(work / "run" / "checkpoints").is_dir(),  # a rerun resumes
        )
    )  # fmt: skip
    t_train = time.monotonic() - t0 - t_data
    model = work / "run" / "model"
    if cfg.install:
        target = checkpoint.shipped_path("mini")
        target.mkdir(parents=True, exist_ok=True)
        for name in (checkpoint.CONFIG_FILE, checkpoint.PARAMS_FILE):
            shutil.copy(model / name, target / name)
        model = target
    checkpoint.write_checksums(model)
    if not cfg.skip_benchmark:
        from experiments.mineclip_mini import evaluate

        evaluate.main(evaluate.BenchConfig(data=str(clips), ckpt=str(model),
                                                     write_judge=str(model)))  # fmt: skip
    print(f"clips {t_data / 60:.1f} min, training {t_train / 60:.1f} min, total "
          f"{(time.monotonic() - t0) / 60:.1f} min (load {os.getloadavg()[0]:.1f}); "
          f"model in {model}")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(RebuildConfig))

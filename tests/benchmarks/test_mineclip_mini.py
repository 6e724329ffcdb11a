"""benchmarks.mineclip_mini's judge calibration at a few episodes: what it writes beside a
checkpoint is what the evaluator reads back, and the stored negatives and delta are reproduced
from the same episodes scored with `evaluator.judge_reward`."""

import shutil

import numpy as np
import pytest

import mineclip_jax as mcj
from benchmarks import mineclip_mini as M
from data import synthetic as S
from mineclip_jax import checkpoint
from mineclip_jax import evaluator as ev
from mineclip_jax.reward import PAPER_TASK_PROMPTS


def test_judge_calibration_round_trips_through_judge_json(tmp_path, monkeypatch):
    copy = tmp_path / "mini"
    shutil.copytree(checkpoint.shipped_path("mini"), copy)
    (copy / ev.JUDGE_FILE).unlink()
    handle = mcj.load_checkpoint(copy)
    tasks = ("find an ocean", "put carpets on the floor")  # oracles that succeed within 48 ticks
    monkeypatch.setattr(M, "CREATIVE", tasks)
    features = M._features  # encoded in chunks of 128 frames, not 512: a few episodes here
    monkeypatch.setattr(M, "_features", lambda h, f, lengths: features(h, f, lengths, chunk=128))
    n = 4
    cfg = M.BenchConfig(data="unused", ckpt=str(copy), judge_episodes=n)
    # the episode program of tests/mineclip_jax/test_mini.py (2 episodes of 48 ticks at 48x64)
    sim = S.SyntheticConfig(out="unused", batch=2, episode_ticks=48, height=48, width=64)
    rows = M.judge_section(handle, cfg, sim)
    M.write_judge(copy, rows, cfg.world_seed)

    labels = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    split = np.random.default_rng([cfg.seed, 3]).permutation(2 * n)
    calib, held = split[:n], split[n:]
    for task in tasks:
        row = rows[task]
        reward = ev.judge_reward(handle, task)  # rebuilt from the judge.json just written
        extra = M.JUDGE_NEGATIVE_SETS[row["negative_set"]]
        assert sorted(reward.prompts) == sorted({*PAPER_TASK_PROMPTS, *extra})
        assert row["episode_ticks"] == 48 and set(row["calibration_auc"]) == set(
            M.JUDGE_NEGATIVE_SETS
        )
        scores = []
        for success in (True, False):
            frames, _, lengths, _ = M._episodes(task, success, n, cfg.seed + 1, 2, sim)
            feats = M._features(handle, frames, lengths)
            steps = np.asarray(reward.trajectory_rewards(feats)[0])
            scores.append(ev.trajectory_scores(steps, lengths))
        scores = np.concatenate(scores)
        # the chosen set separates the calibration half at least as well as the other
        chosen_auc = ev.roc_auc(scores[calib], labels[calib])
        assert chosen_auc == pytest.approx(row["calibration_auc"][row["negative_set"]])
        assert chosen_auc >= max(row["calibration_auc"].values()) - 1e-12
        delta = ev.calibrated_threshold(handle, task)
        assert delta == pytest.approx(ev.kmeans_threshold(scores[calib]))
        f1 = ev.binary_metrics(ev.judge(scores[held], delta), labels[held]).f1
        assert row["f1_trained"] == pytest.approx(f1)

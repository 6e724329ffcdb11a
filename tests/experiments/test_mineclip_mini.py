"""experiments.mineclip_mini.evaluate's judge calibration at a few episodes: what it writes beside a
checkpoint is what the evaluator reads back, and the stored negatives and delta are reproduced
from the same episodes scored with `evaluator.judge_reward`."""

import dataclasses
import shutil

import numpy as np
import pytest

import mineclip_jax as mcj
from data import synthetic as S
from experiments.mineclip_mini import evaluate as M
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
    cfg = M.BenchConfig(data="unused", ckpt=str(copy), judge_episodes=n, judge_ticks=(48,))
    # the episode program of tests/mineclip_jax/test_mini.py (2 episodes of 48 ticks at 48x64);
    # the judge sets the episode length from --judge-ticks, whatever `sim` says
    sim = S.SyntheticConfig(out="unused", batch=2, episode_ticks=160, height=48, width=64)
    rows = M.judge_section(handle, cfg, sim)
    M.write_judge(copy, rows, cfg.world_seed)

    labels = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    split = np.random.default_rng([cfg.seed, 3]).permutation(2 * n)
    calib, held = split[:n], split[n:]
    for task in tasks:
        [row] = rows[task]["calibrations"]
        reward = ev.judge_reward(handle, task)  # rebuilt from the judge.json just written
        extra = M.JUDGE_NEGATIVE_SETS[row["negative_set"]]
        assert sorted(reward.prompts) == sorted({*PAPER_TASK_PROMPTS, *extra})
        assert row["episode_ticks"] == 48 and set(row["calibration_auc"]) == set(
            M.JUDGE_NEGATIVE_SETS
        )
        scores = []
        for success in (True, False):
            sim_48 = dataclasses.replace(sim, episode_ticks=48)
            frames, _, lengths, _ = M._episodes(task, success, n, cfg.seed + 1, 2, sim_48)
            assert frames.shape[1] == 49
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


def test_judge_episodes_default_to_each_tasks_own_limit():
    # what agents.evaluate runs by default, so its verdicts need no --max-steps
    for task in M.CREATIVE:
        limit = M.envs_tasks.get(task).max_steps
        assert M.judge_ticks(task, 0) == limit
        assert M.judge_ticks(task, 100) == 100
    assert 0 in M.BenchConfig(data="unused").judge_ticks  # calibrated by default
    with pytest.raises(ValueError, match="judge-ticks needs lengths"):
        M.judge_section(None, M.BenchConfig(data="unused", judge_ticks=()), None)

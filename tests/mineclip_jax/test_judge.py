"""mineclip_jax.judge: the calibration entry point over a labelled-episode directory writes the
judge.json that `mineclip_jax.evaluator` reads back, and its neutral prompts are the clip
generator's `wander` phrasings (the words MineCLIP-mini was trained on)."""

import json
import shutil

import numpy as np
import pytest

import mineclip_jax as mcj
from data import synthetic as S
from mineclip_jax import checkpoint
from mineclip_jax import evaluator as ev
from mineclip_jax import judge as mj


def test_neutral_prompts_are_the_generators_wander_phrasings():
    assert tuple(mj.NEUTRAL_PROMPTS) == tuple(S.PHRASES["wander"])


def test_calibration_from_an_episode_directory_round_trips_through_judge_json(tmp_path):
    copy = tmp_path / "mini"
    shutil.copytree(checkpoint.shipped_path("mini"), copy)
    (copy / ev.JUDGE_FILE).unlink()
    rng = np.random.default_rng(0)
    n, t = 4, 12
    # successes bright, failures dark: the scores differ, whatever the model makes of them
    success = rng.integers(128, 256, (n, t, 48, 64, 3), dtype=np.uint8)
    failure = rng.integers(0, 128, (n, t, 48, 64, 3), dtype=np.uint8)
    lengths = np.array([12, 10, 8, 12])
    episodes = tmp_path / "episodes"
    mj.write_episode_set(episodes, "dig a hole", 12, success, lengths, failure, lengths,
                         world_seed=2, seed=0)  # fmt: skip
    meta, sets = mj.read_episodes(episodes)
    assert meta["world_seed"] == 2 and [s["dir"] for s in sets] == ["dig_a_hole/12"]

    tasks = mj.main(mj.JudgeConfig(episodes=str(episodes), ckpt=str(copy)))
    stored = json.loads((copy / ev.JUDGE_FILE).read_text())["tasks"]
    assert stored == json.loads(json.dumps(tasks))
    [row] = stored["dig a hole"]["calibrations"]
    assert row["episode_ticks"] == 12 and row["calibration_size"] == row["heldout_size"] == n
    assert set(row["calibration_auc"]) == set(mj.JUDGE_NEGATIVE_SETS)
    handle = mcj.load_checkpoint(copy)
    assert ev.calibrated_threshold(handle, "dig a hole") == pytest.approx(row["delta"])
    # the same calibration in memory, as experiments/mineclip_mini runs it
    feats = (
        mj.frame_features(handle, success, lengths),
        mj.frame_features(handle, failure, lengths),
    )
    baseline = mcj.create(handle.config, __import__("jax").random.key(7))
    rand = (
        mj.frame_features(baseline, success, lengths),
        mj.frame_features(baseline, failure, lengths),
    )
    again, _ = mj.calibrate("dig a hole", (handle, *feats), (baseline, *rand), lengths, lengths,
                            episode_ticks=12)  # fmt: skip
    assert (
        again["delta"] == pytest.approx(row["delta"]) and again["f1_trained"] == row["f1_trained"]
    )
    assert "dig a hole" in mj.describe("dig a hole", row)


def test_calibration_refuses_frames_of_another_size(tmp_path):
    frames = np.zeros((2, 4, 24, 32, 3), np.uint8)
    mj.write_episode_set(tmp_path, "dig a hole", 4, frames, [4, 4], frames, [4, 4],
                         world_seed=2, seed=0)  # fmt: skip
    with pytest.raises(ValueError, match="the model reads"):
        mj.main(mj.JudgeConfig(episodes=str(tmp_path), ckpt="mini", dry_run=True))
    with pytest.raises(FileNotFoundError, match="data.judge_episodes"):
        mj.read_episodes(tmp_path / "nothing")

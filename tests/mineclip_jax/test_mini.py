"""The shipped MineCLIP-mini: its files match their checksums, it loads by name, and it tells a
success from a failure in frames the embedded world renders now (the carpets by their
probabilities, the ocean by its calibrated judge)."""

import hashlib
import json
import shutil

import jax
import numpy as np
import pytest

import mineclip_jax as mcj
from data import synthetic as S
from envs import spaces
from mineclip_jax import checkpoint, demo
from mineclip_jax import evaluator as ev
from mineclip_jax.reward import PAPER_TASK_PROMPTS, MineCLIPReward


def test_shipped_files_match_their_checksums():
    directory = checkpoint.shipped_path("mini")
    lines = (directory / "SHA256SUMS").read_text().split("\n")
    listed = dict(reversed(line.split()) for line in lines if line.strip())
    assert sorted(listed) == ["config.json", "params.msgpack"]
    for name, digest in listed.items():
        assert hashlib.sha256((directory / name).read_bytes()).hexdigest() == digest
    checkpoint.verify_checksums(directory)


def test_shipped_file_is_under_5_mb_in_int8_storage_and_loads_by_name():
    directory = checkpoint.shipped_path("mini")
    assert (directory / "params.msgpack").stat().st_size < 5_000_000
    meta = json.loads((directory / "config.json").read_text())
    assert meta["format"] == "mineclip-jax/2"
    assert meta["storage"]["int8"] == [["text_encoder", "token_embedding", "embedding"]]
    mc = mcj.load_checkpoint("mini")
    assert mc.num_params == 3_449_346
    for leaf in jax.tree.leaves(mc.params):
        assert leaf.dtype == np.float32
    emb = mc.params["text_encoder"]["token_embedding"]["embedding"]
    # Each row is an integer multiple of its scale max|row| / 127 (int8), as float16 rows are not.
    scale = np.abs(emb).max(axis=1, keepdims=True) / 127
    assert scale.min() > 0
    steps = emb / scale
    np.testing.assert_allclose(steps, np.rint(steps), atol=1e-3)


def test_a_damaged_shipped_file_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "mini"
    shutil.copytree(checkpoint.shipped_path("mini"), copy)
    monkeypatch.setattr(checkpoint, "PRETRAINED_DIR", tmp_path)
    mcj.load_checkpoint("mini")  # the copy loads by name
    data = bytearray((copy / "params.msgpack").read_bytes())
    data[len(data) // 2] ^= 1
    (copy / "params.msgpack").write_bytes(bytes(data))
    with pytest.raises(mcj.CheckpointMismatchError, match="damaged: reinstall"):
        mcj.load_checkpoint("mini")
    (copy / "params.msgpack").write_bytes(bytes(data[: len(data) // 2]))  # truncated
    with pytest.raises(mcj.CheckpointMismatchError, match="damaged: reinstall"):
        mcj.load_checkpoint("mini")


def test_mini_separates_a_success_from_a_failure_in_the_world():
    mc = mcj.load_checkpoint("mini")
    assert mc.config == mcj.MineCLIPConfig.mini()
    assert mc.source == str(checkpoint.shipped_path("mini"))
    h, w = mc.config.image_size
    cfg = S.SyntheticConfig(out="unused", batch=2, episode_ticks=48, height=h, width=w)
    by_name = dict(zip(S.BEHAVIOUR_NAMES, S.BEHAVIOURS))
    # Worlds of seed 2: never seen in training (seed 0) nor in the test clips (seed 1).
    frames_ok, truth_ok = S.run_episodes(cfg, by_name["carpet"], 2, 11)
    frames_bad, truth_bad = S.run_episodes(cfg, by_name["wander_carpet"], 2, 11)
    assert truth_ok["success"][0].any() and not truth_bad["success"][0].any()
    # The 16 frames up to 2 ticks after the first carpet (from the start if that is sooner).
    end = max(int(np.argmax(truth_ok["success"][0])) + 2, 15)
    clips = np.stack([frames_ok[0, end - 15 : end + 1], frames_bad[0, end - 15 : end + 1]])
    prompts = list(PAPER_TASK_PROMPTS)
    logits = np.asarray(mc.logits(mc.encode_video(clips), mc.encode_text(prompts)))
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    goal = prompts.index("put carpets on the floor")
    assert probs[0, goal] > probs[1, goal] + 0.2
    assert logits[0].argmax() == goal

    # The shipped ocean judge, on episodes of the same length (one compiled episode program for
    # both checks), with its calibration for episodes of that length (its shortest, 100 ticks).
    # Its negatives add neutral prompts (that calibration chose them): on land they take the
    # probability that the 12 task prompts alone give the ocean, the only landscape among them,
    # while out at sea the ocean keeps it.
    task = "find an ocean"
    judge = ev.judge_reward(mc, task, episode_ticks=cfg.episode_ticks)
    assert set(judge.prompts) - set(PAPER_TASK_PROMPTS)  # neutral prompts among the negatives
    tasks_only = MineCLIPReward(mc, task)
    delta = ev.calibrated_threshold(mc, task, episode_ticks=cfg.episode_ticks)
    # The oracle reaching the sea, random play in a desert.
    sea, sea_truth = S.run_episodes(cfg, by_name["ocean"], 2, 1)
    land, land_truth = S.run_episodes(cfg, by_name["random_ocean"], 2, 5)
    assert sea_truth["success"][0].any() and not land_truth["success"][0].any()
    assert (land_truth["biome"][0] == spaces.biome_id("desert")).mean() > 0.5
    feats = mc.encode_frames(np.stack([sea[0], land[0]]))
    score = ev.trajectory_scores(np.asarray(judge.trajectory_rewards(feats)[0]))
    score_tasks_only = ev.trajectory_scores(np.asarray(tasks_only.trajectory_rewards(feats)[0]))
    assert list(ev.judge(score, delta)) == [True, False]
    assert score_tasks_only[1] > score[1] + 0.2  # the desert's "ocean" went to the neutral ones
    assert abs(score_tasks_only[0] - score[0]) < 0.1  # the sea's did not

    # The demo's --world clip (data.demo) comes from the same episode program: the oracle
    # milking a cow.
    from data import demo as world_demo

    clip, what = world_demo.world_clip("milk a cow", (h, w))
    assert clip.shape == (16, h, w, 3) and "first success" in what
    prompts = ("milk a cow", "hunt a cow", "shear a sheep", "find an ocean")
    assert np.argmax(demo.score_clip(mc, clip, prompts)["logits"]) == 0


def test_mini_judge_calibrations_are_self_consistent():
    # Per stored calibration: the F1 of its delta does not exceed the best threshold's on the
    # same held-out half, the chosen negative set had the highest calibration AUC, and the
    # negatives it names are the other task prompts, plus the neutral ones exactly when that
    # set was chosen.
    mc = mcj.load_checkpoint("mini")
    entries = ev.judge_entries(mc)
    assert sorted(entries) == sorted(PAPER_TASK_PROMPTS[-4:])
    for task, entry in entries.items():
        lengths = [row["episode_ticks"] for row in entry["calibrations"]]
        assert len(set(lengths)) == len(lengths)  # one calibration per length
        for row in entry["calibrations"]:
            assert row["f1_trained"] <= row["f1_best_threshold"] + 1e-12
            others = [p for p in PAPER_TASK_PROMPTS if p != task]
            extra = row["negatives"][len(others) :]
            assert row["negatives"][: len(others)] == others
            neutral = list(S.PHRASES["wander"]) if row["negative_set"] == "tasks+neutral" else []
            assert extra == neutral
            auc = row["calibration_auc"]
            assert auc[row["negative_set"]] == max(auc.values())

"""experiments.table1.policy_clips: ground-truth labels of policy windows against hand-built episodes, and the
merged clip directory read back by MineCLIP training. (`record` itself, the recorder the reward
probe shares, is checked against a trained run's own rewards in tests/experiments/test_table1.)"""

import json

import numpy as np
import pytest

from data import synthetic as S
from data import tokens
from envs import spaces
from experiments.table1 import policy_clips as P

T = 40  # episode steps of the hand-built recordings
COW = spaces.ENTITIES.index("cow")


def _recording(episodes=1, h=16, w=24, live_steps=T):
    """A recording as `record` returns it: nothing happens, the cow far and out of view."""
    rng = np.random.default_rng(0)
    live = np.zeros((episodes, T), bool)
    live[:, :live_steps] = True
    return {
        "rgb": rng.integers(0, 256, (episodes, T + 1, h, w, 3), dtype=np.uint8),
        "kills": np.zeros((episodes, T + 1, len(spaces.ENTITIES)), np.int32),
        "visible": np.zeros((episodes, T), bool),
        "hit": np.zeros((episodes, T), bool),
        "live": live,
        "done": np.zeros((episodes, T), bool),
        "distance": np.full((episodes, T), 20.0, np.float32),
        "reward": np.zeros((episodes, T), np.float32),
        "biome": np.ones((episodes, T), np.int32),
        "world_time": np.full((episodes, T), 1000, np.int32),
    }


def test_window_labels_follow_the_ground_truth_in_act_label_order():
    rec = _recording()
    ep = {k: rec[k][0] for k in ("kills", "hit", "visible", "distance")}
    assert P.window_label(ep, 15, "cow") == "wander"
    # the cow in view and close at the window's last frame (frame 20 is drawn by step 19)
    ep["visible"][19], ep["distance"][19] = True, 3.0
    assert P.window_label(ep, 20, "cow") == "near:cow"
    assert P.window_label(ep, 21, "cow") == "wander"  # frame 21: step 20, not in view
    ep["distance"][19] = S.NEAR_DISTANCE  # "near" is strictly closer than NEAR_DISTANCE
    assert P.window_label(ep, 20, "cow") == "wander"
    # a hit at step 10 draws frame 11: in windows whose frames include 11 after their first
    ep["hit"][10] = True
    assert P.window_label(ep, 15, "cow") == "hit:cow"  # frames 0..15
    assert P.window_label(ep, 25, "cow") == "hit:cow"  # frames 10..25: step 10 is inside
    assert P.window_label(ep, 26, "cow") == "wander"  # frames 11..26: the hit drew frame 11
    # a kill (of a sheep) between frames 29 and 30 outranks the hit
    ep["kills"][30:, spaces.ENTITIES.index("sheep")] = 1
    assert P.window_label(ep, 25, "cow") == "hit:cow"
    assert P.window_label(ep, 30, "cow") == "kill:sheep"
    assert P.window_label(ep, 40, "cow") == "kill:sheep"  # frames 25..40 span frame 29 -> 30
    with pytest.raises(ValueError, match="fewer than 16 frames"):
        P.window_label(ep, 14, "cow")


def test_windows_stay_inside_the_first_episode_and_are_distinct():
    rec = _recording(episodes=3, live_steps=T)
    rec["live"][1, 20:] = False  # episode 1 ended at step 20: frames 0..20
    rec["live"][2, 10:] = False  # episode 2 too short for one window
    rng = np.random.default_rng(1)
    cut = P.cut_clips(rec, "hunt a cow", per_episode=4, rng=rng)
    by_ep = {e: [end for ee, end, _ in cut if ee == e] for e in range(3)}
    assert len(by_ep[0]) == 4 and len(set(by_ep[0])) == 4
    assert all(15 <= end <= T for end in by_ep[0])
    assert len(set(by_ep[1])) == 4 and all(15 <= end <= 20 for end in by_ep[1])
    assert by_ep[2] == []
    # more windows asked than exist: each once
    cut = P.cut_clips(_recording(live_steps=16), "hunt a cow", per_episode=9, rng=rng)
    assert sorted(end for _, end, _ in cut) == [15, 16]


def test_merged_clip_directory_is_read_by_mineclip_training(tmp_path):
    from mineclip_jax import train as tr

    base = tmp_path / "base"
    S.build(S.SyntheticConfig(out=str(base), episodes=4, batch=2, test_fraction=0.5,
                              episode_ticks=40, height=16, width=24, world_size=16,
                              world_height=24, world_pool=1), progress=False)  # fmt: skip
    rec = _recording(episodes=2)
    rec["hit"][0, 30] = True
    frames, records = P.clips_from_recording(rec, "hunt a cow", 4, 3, np.random.default_rng(0),
                                             "trained0")  # fmt: skip
    assert len(frames) == 6
    for f, r in zip(frames, records, strict=True):
        e, end = (int(x) for x in r["clip_id"].split("/")[-2:])
        np.testing.assert_array_equal(f, rec["rgb"][e, end - 15 : end + 1])
        assert r["label"] == P.window_label({k: rec[k][e] for k in rec}, end, "cow")
    summary = P.write_clip_dir(base, tmp_path / "out", frames, records)

    src = tr.open_split(tmp_path / "out", "train", (16, 24))
    base_src = tr.open_split(base, "train", (16, 24))
    n = len(base_src)
    assert len(src) == n + 6 and summary["clips"]["train"] == n + 6
    np.testing.assert_array_equal(src.frames[:n], base_src.frames[:])
    np.testing.assert_array_equal(src.frames[n:], np.stack(frames))
    assert src.texts == base_src.texts + [r["text"] for r in records]
    assert src.labels[n:] == [r["label"] for r in records]
    np.testing.assert_array_equal(src.tokens[n:], tokens.tokenize(src.texts[n:]))
    test = tr.open_split(tmp_path / "out", "test", (16, 24))
    np.testing.assert_array_equal(test.frames[:], tr.open_split(base, "test", (16, 24)).frames[:])
    assert sum(summary["policy_clips"]["labels"].values()) == 6
    assert json.loads((tmp_path / "out" / "clips.json").read_text()) == summary

    # errors: a second write needs --overwrite; frames of another size; a caption with a prompt
    with pytest.raises(FileExistsError, match="--overwrite"):
        P.write_clip_dir(base, tmp_path / "out", frames, records)
    with pytest.raises(ValueError, match="frame size"):
        P.write_clip_dir(base, tmp_path / "o2", [f[:, :8] for f in frames], records)
    bad = [dict(r, text="hunt a cow now") for r in records]
    with pytest.raises(ValueError, match="task prompts"):
        P.write_clip_dir(base, tmp_path / "o3", frames, bad)

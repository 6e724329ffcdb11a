"""data.synthetic: act labels and captions from ground truth, no task prompt in any caption,
the episode plan, and a tiny end-to-end build that mineclip_jax.train reads."""

import dataclasses
import json

import numpy as np
import pytest

from data import synthetic as S
from envs import spaces
from envs.tasks.paper import PAPER_TASKS

PROMPTS = [t.prompt for t in PAPER_TASKS.values()]
BY_NAME = dict(zip(S.BEHAVIOUR_NAMES, S.BEHAVIOURS))


def _truth(n=40, **series):
    """Ground-truth arrays of an episode with n+1 frames; `series` overrides some of them."""
    base = {
        "success": np.zeros(n + 1, bool),
        "done": np.zeros(n + 1, bool),
        "kills": np.zeros((n + 1, spaces.NUM_ENTITIES), np.int32),
        "sheared": np.zeros(n + 1, np.int32),
        "milk": np.zeros(n + 1, np.int32),
        "places": np.zeros(n + 1, np.int32),
        "mines": np.zeros(n + 1, np.int32),
        "depth": np.zeros(n + 1, np.float32),
        "pitch": np.zeros(n + 1, np.float32),
        "in_water": np.zeros(n + 1, bool),
        "target_distance": np.full(n + 1, 10.0, np.float32),
        "target_visible": np.zeros(n + 1, bool),
        "hit": np.zeros(n + 1, bool),
        "portal_distance": np.full(n + 1, 30.0, np.float32),
        "world_time": np.full(n + 1, 1000, np.int32),
        "biome": np.full(n + 1, spaces.biome_id("plains"), np.int32),
    }
    base.update(series)
    return base


def test_task_acts_cover_the_twelve_paper_prompts():
    assert sorted(S.TASK_ACTS) == sorted(PROMPTS)


def test_no_caption_contains_a_task_prompt():
    rng = np.random.default_rng(0)
    labels = [f"kill:{m}" for m in S.MOBS] + [
        f"{k}:{m}" for k in ("approach", "circle", "chase", "hit", "near") for m in S.MOBS
    ]
    labels += ["milk", "shear", "portal", "ocean", "dig", "hole", "mine", "carpet", "wander", "sky"]
    labels += ["approach_place:nether portal", "approach_place:ocean"]
    biomes = list(spaces.BIOME_NAMES)
    captions = [
        S.caption(lab, biomes[rng.integers(len(biomes))], int(rng.integers(24000)), rng)
        for lab in labels
        for _ in range(400)
    ]
    assert len(captions) >= 10000
    lowered = [" ".join(c.lower().split()) for c in captions]
    assert not [(c, p) for c in lowered for p in PROMPTS if p in c]
    assert S.captions_contain_prompt(captions) == []
    # ... while the helper does find a prompt that is there.
    assert S.captions_contain_prompt(["you hunt a cow in the plains"]) == [
        ("you hunt a cow in the plains", "hunt a cow")
    ]


def test_several_phrasings_per_act_and_where_and_when():
    rng = np.random.default_rng(1)
    for act in S.TASK_ACTS.values():
        texts = {S.caption(act, 1, 1000, rng) for _ in range(200)}
        bare = {t for t in texts if " in the " not in t and " during " not in t}
        assert len(bare) >= 3, (act, bare)
    night = {S.caption("kill:zombie", 1, 18000, rng) for _ in range(100)}
    assert any("at night" in t for t in night) and not any("during the day" in t for t in night)
    assert any("in the plains" in t for t in night)
    assert all("zombie" in t for t in night)


def test_act_labels_follow_the_ground_truth():
    hunt = BY_NAME["kill_cow"]
    kills = np.zeros((41, spaces.NUM_ENTITIES), np.int32)
    kills[30:, spaces.entity_id("pig")] = 1  # the oracle killed a pig, not the cow
    assert S.act_label(_truth(kills=kills), hunt, 35, 2) == "kill:pig"
    assert S.act_label(_truth(kills=kills), hunt, 29, 1) != "kill:pig"  # before the kill
    # Approaching: the target got 3 blocks closer during the window; an oracle that will
    # attack is chasing, one that will milk is approaching.
    closer = np.linspace(10, 4, 41).astype(np.float32)
    assert S.act_label(_truth(target_distance=closer), hunt, 40, 2) == "chase:cow"
    assert S.act_label(_truth(target_distance=closer), BY_NAME["milk"], 40, 2) == "approach:cow"
    assert (
        S.act_label(_truth(target_distance=closer), BY_NAME["wander_kill_cow"], 40, 2) == "wander"
    )
    assert S.act_label(_truth(), hunt, 40, 2) == "wander"
    # A hit on the target inside the window (frames 10..40 at stride 2), not before it.
    hit = np.zeros(41, bool)
    hit[25] = True
    assert S.act_label(_truth(hit=hit), BY_NAME["agent_kill_cow"], 40, 2) == "hit:cow"
    assert S.act_label(_truth(hit=hit), BY_NAME["agent_kill_cow"], 24, 1) == "wander"
    # The target in view and close at the window's end, whatever the controller.
    close = np.full(41, S.NEAR_DISTANCE - 1, np.float32)
    seen = np.ones(41, bool)
    agent = BY_NAME["agent_kill_sheep"]
    assert S.act_label(_truth(target_distance=close, target_visible=seen), agent, 40, 2) == (
        "near:sheep"
    )
    assert S.act_label(_truth(target_distance=close), agent, 40, 2) == "wander"  # not in view
    far = np.full(41, S.NEAR_DISTANCE + 1, np.float32)
    assert S.act_label(_truth(target_distance=far, target_visible=seen), agent, 40, 2) == "wander"
    # Walking downhill is not digging; going down by mining while looking down is.
    downhill = np.linspace(0, 3, 41).astype(np.float32)
    dig = BY_NAME["dig"]
    assert S.act_label(_truth(depth=downhill), dig, 40, 2) == "wander"
    down = np.full(41, 90.0, np.float32)
    mined = np.arange(41) // 10  # a block every 10 ticks: 4 by frame 40
    assert S.act_label(_truth(depth=downhill, pitch=down, mines=mined), dig, 40, 2) == "dig"
    assert S.act_label(_truth(depth=downhill, pitch=down), dig, 40, 2) == "wander"  # no mining
    # Breaking blocks while looking down, without going down: "mine", not "dig".
    assert S.act_label(_truth(pitch=down, mines=mined), BY_NAME["random_dig"], 40, 2) == "mine"
    assert S.act_label(_truth(mines=mined), BY_NAME["random_dig"], 40, 2) == "wander"  # level
    # Down in the finished shaft (2+ blocks below the start, 2+ blocks mined), digging no more.
    shaft = np.minimum(np.arange(41) / 3, 3).astype(np.float32)  # 3 deep from frame 9
    assert S.act_label(_truth(depth=shaft, pitch=down, mines=mined), dig, 40, 2) == "hole"
    assert S.act_label(_truth(depth=shaft, pitch=down, mines=mined), dig, 12, 1) == "dig"
    assert S.act_label(_truth(depth=downhill, mines=np.ones(41, np.int32)), dig, 40, 2) == (
        "wander"  # downhill after mining one block is no hole
    )
    sheared = np.r_[np.zeros(20), np.ones(21)].astype(np.int32)
    assert S.act_label(_truth(sheared=sheared), BY_NAME["shear"], 30, 1) == "shear"
    near = np.full(41, 2.0, np.float32)
    assert S.act_label(_truth(portal_distance=near), BY_NAME["portal"], 40, 1) == "portal"
    # On a beach or in the water it is "ocean", unless all the frame shows is sky.
    beach = np.full(41, spaces.biome_id("beach"), np.int32)
    up = np.full(41, -45.0, np.float32)
    assert S.act_label(_truth(biome=beach), BY_NAME["ocean"], 40, 1) == "ocean"
    assert S.act_label(_truth(biome=beach, pitch=up), BY_NAME["agent_ocean"], 40, 1) == "sky"
    wet = np.ones(41, bool)
    assert S.act_label(_truth(biome=beach, pitch=up, in_water=wet), BY_NAME["ocean"], 40, 1) == (
        "ocean"
    )
    assert S.act_label(_truth(pitch=up), BY_NAME["wander_kill_cow"], 40, 1) == "sky"
    assert S.act_label(_truth(pitch=up * 0.5), BY_NAME["wander_kill_cow"], 40, 1) == "wander"
    circling = np.full(41, 4.0, np.float32)
    label = S.act_label(_truth(target_distance=circling), BY_NAME["circle_kill_zombie"], 40, 1)
    assert label == "circle:zombie"


def test_windows_hold_the_success_event_and_the_approach():
    # A hunt ends at its success: the state is frozen from frame 100 on.
    success = np.zeros(161, bool)
    success[100] = True
    done = np.arange(161) >= 100
    rng = np.random.default_rng(0)
    strides = set()
    for _ in range(20):
        (end0, s0), (end1, s1), (end2, s2) = S.choose_windows(
            {"success": success, "done": done}, BY_NAME["kill_cow"], 3, rng
        )
        assert 100 <= end0 <= 103 and end0 - 15 * s0 <= 100
        assert 15 * s1 <= end1 < 100  # before the success event
        assert 1 <= min(s0, s1, s2) and max(s0, s1, s2) <= S.MAX_STRIDE
        assert 15 * s2 <= end2 <= 103
        strides |= {s0, s1, s2}
    assert strides == set(range(1, S.MAX_STRIDE + 1))  # every frame spacing, the agent's 4 too
    np.testing.assert_array_equal(S.window_frames(40, 2), np.arange(10, 41, 2))


def test_windows_follow_a_success_the_episode_goes_on_after():
    # Find an ocean: success from frame 70 on, the episode runs to its last frame (160).
    success = np.arange(161) >= 70
    truth = {"success": success, "done": np.zeros(161, bool)}
    rng = np.random.default_rng(0)
    ends = [S.choose_windows(truth, BY_NAME["ocean"], 3, rng) for _ in range(100)]
    assert all(70 <= w[0][0] <= 73 for w in ends)  # the success event itself
    assert all(w[1][0] < 70 for w in ends)  # the approach
    later = [w[2][0] for w in ends]
    assert max(later) <= 160 and sum(e > 90 for e in later) > 40  # often after the success
    # ... but never more than 3 frames into a frozen state (an episode that ended at 100)
    truth["done"] = np.arange(161) >= 100
    assert max(S.choose_windows(truth, BY_NAME["ocean"], 3, rng)[2][0] for _ in range(100)) == 103


def test_plan_is_stratified_deterministic_and_holds_out_other_worlds(tmp_path):
    cfg = S.SyntheticConfig(out=str(tmp_path), episodes=8 * 200, test_fraction=0.25)
    plan = S.episode_plan(cfg)
    assert len(plan) == 200 and sum(p["split"] == "test" for p in plan) == 50
    assert {p["world_seed"] for p in plan if p["split"] == "test"} == {cfg.seed + 1}
    assert {p["world_seed"] for p in plan if p["split"] == "train"} == {cfg.seed}
    oracle = sum(p["behaviour"] == "kill_cow" for p in plan if p["split"] == "train")
    weights = np.array([b.weight for b in S.BEHAVIOURS if not b.hide_target])
    assert abs(oracle - 150 * 3.0 / weights.sum()) <= 1
    assert plan == S.episode_plan(cfg)
    assert not any(p["behaviour"].startswith("hidden_") for p in plan)  # opt-in only
    with_hidden = S.episode_plan(dataclasses.replace(cfg, hidden_targets=True))
    hidden = sum(p["behaviour"] == "hidden_kill_cow" for p in with_hidden if p["split"] == "train")
    assert abs(hidden - 150 * 1.5 / (weights.sum() + 8 * 1.5)) <= 1
    with pytest.raises(ValueError, match="episode-ticks"):
        S.SyntheticConfig(out="x", episode_ticks=10)


def test_tiny_build_is_read_by_mineclip_training(tmp_path):
    from mineclip_jax import train as tr

    cfg = S.SyntheticConfig(out=str(tmp_path / "clips"), episodes=4, batch=2, test_fraction=0.5,
                            episode_ticks=40, height=16, width=24, world_size=16,
                            world_height=24, world_pool=1)  # fmt: skip
    summary = S.build(cfg, progress=False)
    assert summary["clips"] == {"train": 6, "test": 6}
    assert sum(summary["labels"].values()) == 12
    src = tr.open_split(cfg.out, "test", (16, 24))
    batch = tr.load_examples(src, [0, 5])
    assert batch["frames"].shape == (2, 16, 16, 24, 3) and batch["frames"].dtype == np.uint8
    assert batch["frames"].std() > 5  # rendered worlds, not blank frames
    records = [json.loads(line) for line in open(tmp_path / "clips" / "test_clips.jsonl")]
    assert [r["text"] for r in records] == src.texts and all(r["label"] for r in records)
    assert S.captions_contain_prompt(src.texts) == []


def test_circling_never_reaches_and_the_oracle_does():
    """The near-miss controller goes round the animal without touching or hitting it; the
    oracle, from the same starts, kills it."""
    cfg = S.SyntheticConfig(out="unused", batch=2, episode_ticks=120, height=16, width=24,
                            world_pool=1)  # fmt: skip
    _, circle = S.run_episodes(cfg, BY_NAME["circle_kill_cow"], 0, 5)
    _, oracle = S.run_episodes(cfg, BY_NAME["kill_cow"], 0, 5)
    assert circle["target_distance"][:, 60:].min() > 1.0  # never touches it
    assert not circle["kills"][:, -1].any()
    assert not circle["success"].any()
    assert oracle["success"].any()


def test_hidden_target_episodes_are_the_oracle_episodes_drawn_without_the_animal():
    """The same simulation (every ground-truth series equal, the cow killed), the same frames
    wherever the cow is out of view, other frames where it is close in view; every window of
    it is labelled `wander` whatever happened to the hidden cow."""
    # the circling test's settings: one compiled episode program for both tests
    cfg = S.SyntheticConfig(out="unused", batch=2, episode_ticks=120, height=16, width=24,
                            world_pool=1)  # fmt: skip
    assert [b.name for b in S.BEHAVIOURS if b.hide_target] == [
        "hidden_milk", "hidden_kill_cow", "hidden_shear", "hidden_kill_sheep",
        "hidden_kill_spider", "hidden_kill_zombie", "hidden_kill_zombie_pigman",
        "hidden_kill_enderman",
    ]  # fmt: skip
    frames, truth = S.run_episodes(cfg, BY_NAME["kill_cow"], 0, 5)
    frames_h, truth_h = S.run_episodes(cfg, BY_NAME["hidden_kill_cow"], 0, 5)
    for k in truth:
        np.testing.assert_array_equal(truth[k], truth_h[k], err_msg=k)
    assert truth["success"].any()
    differ = (frames != frames_h).any(axis=(2, 3, 4))
    assert not (differ & ~truth["target_visible"]).any()
    close = truth["target_visible"] & (truth["target_distance"] < 4.0)
    assert close.sum() >= 5 and differ[close].all()
    e = int(np.argmax(truth["success"].any(axis=1)))
    ep = {k: v[e] for k, v in truth_h.items()}
    rng = np.random.default_rng(0)
    windows = S.choose_windows(ep, BY_NAME["hidden_kill_cow"], 3, rng)
    for end, stride in windows:
        assert S.act_label(ep, BY_NAME["hidden_kill_cow"], end, stride) == "wander"
    assert S.act_label(ep, BY_NAME["kill_cow"], *windows[0]) == "kill:cow"  # the kill's window

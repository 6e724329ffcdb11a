"""The evaluator's episode loop, videos and label files (toy envs; the voxel smoke run is separate)."""

import av
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from agents.evaluate import (
    episode_quotas,
    random_policy,
    read_human_labels,
    run_episodes,
    write_video,
)


class CountdownEnv(gym.Env):
    """Episodes of ``length`` steps; success at the end iff ``succeeds``; rgb holds the step index."""

    def __init__(self, length: int, succeeds: bool):
        self.length, self.succeeds = length, succeeds
        self.observation_space = gym.spaces.Dict(
            {"rgb": gym.spaces.Box(0, 255, (4, 6, 3), np.uint8)}
        )
        self.action_space = gym.spaces.MultiDiscrete([3, 3])
        self.t = 0

    def _obs(self):
        return {"rgb": np.full((4, 6, 3), self.t, np.uint8)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        done = self.t >= self.length
        return (
            self._obs(),
            1.0,
            done and self.succeeds,
            done and not self.succeeds,
            {"success": done and self.succeeds},
        )


def _vector(mode):
    return SyncVectorEnv(
        [lambda: CountdownEnv(2, True), lambda: CountdownEnv(3, False)], autoreset_mode=mode
    )


def test_quotas_split_evenly():
    assert episode_quotas(5, 2) == [3, 2]
    assert episode_quotas(100, 8) == [13, 13, 13, 13, 12, 12, 12, 12]
    with pytest.raises(ValueError):
        episode_quotas(0, 2)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_run_episodes_counts_each_env_quota(mode):
    env = _vector(mode)
    policy = random_policy(env.single_action_space, env.num_envs)
    records = run_episodes(
        env, policy, 5, seed=0, record_videos=1, frame_features=lambda rgb: rgb[:, 0, 0, :1] * 1.0
    )
    by_env = {i: [r for r in records if r.env_index == i] for i in (0, 1)}
    # env 0 finishes 3 episodes of 2 steps, all successful; env 1 two of 3 steps, all failed
    assert [(r.length, r.success, r.episode_return) for r in by_env[0]] == [(2, True, 2.0)] * 3
    assert [(r.length, r.success, r.episode_return) for r in by_env[1]] == [(3, False, 3.0)] * 2
    frames = [r.frames for r in records if r.frames is not None]
    assert len(frames) == 1 and frames[0].shape == (2, 4, 6, 3)
    assert list(frames[0][:, 0, 0, 0]) == [0, 1]  # the observations the policy acted on
    assert all(list(r.features[:, 0]) == list(range(r.length)) for r in records)


def test_random_policy_respects_the_space():
    space = gym.spaces.MultiDiscrete([3, 3, 4, 25, 25, 8, 244, 36])
    actions = random_policy(space, 16)(None, np.random.default_rng(0), np.ones(16, bool))
    assert actions.shape == (16, 8) and (actions >= 0).all() and (actions < space.nvec).all()
    assert len(np.unique(actions[:, 6])) > 1


def test_write_video_round_trip(tmp_path):
    frames = np.zeros((5, 160, 256, 3), np.uint8)
    frames[:, :, :128, 0] = 255
    path = write_video(frames, tmp_path / "v" / "clip.mp4", fps=10)
    with av.open(str(path)) as container:
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(decoded) == 5 and decoded[0].shape == (160, 256, 3)
    assert decoded[0][80, 10, 0] > 200 and decoded[0][80, 200, 0] < 50
    with pytest.raises(ValueError, match="frames"):
        write_video(np.zeros((5, 8, 8), np.uint8), tmp_path / "bad.mp4")


def test_read_human_labels(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("task_id,episode,label\ncreative:2,0,1\ncreative:2,1,0\ncreative:2,2,true\n")
    assert read_human_labels(path) == {
        ("creative:2", 0): True,
        ("creative:2", 1): False,
        ("creative:2", 2): True,
    }
    path.write_text("task,episode\n")
    with pytest.raises(ValueError, match="columns"):
        read_human_labels(path)


class FirstFeatureReward:
    """Stands in for MineCLIPReward: the step reward is the first feature of each frame."""

    built: list = []  # (goal, negatives) of every instance, to check what the judge asked for

    def __init__(self, handle, goal, negatives=None, kind="direct"):
        self.goal, self.negatives = goal, negatives
        self.built.append((goal, negatives))

    def trajectory_rewards(self, frame_features, goal_index=None):
        rewards = np.asarray(frame_features)[..., 0]
        return rewards, rewards


@pytest.fixture
def first_feature_reward(monkeypatch):
    import mineclip_jax.reward

    monkeypatch.setattr(mineclip_jax.reward, "MineCLIPReward", FirstFeatureReward)


def record(level, length):
    """An episode of `length` frames whose features all start with `level` (its step reward)."""
    from agents.evaluate import EpisodeRecord

    return EpisodeRecord(0, False, 0.0, length, features=np.full((length, 4), level, np.float32))


OCEAN_SPEC = type("Spec", (), {"id": "creative:2", "prompt": "find an ocean"})()


def test_creative_judge_uses_the_calibrated_threshold_and_scores_f1(first_feature_reward):
    from agents.evaluate import CreativeJudge

    spec = OCEAN_SPEC
    calibration = {"find an ocean": {"delta": 0.5, "negatives": ["dig a hole"]}}
    # mean scores 0.9, 0.1, 0.8, 0.2, 0.85 against the stored delta 0.5
    records = [record(0.9, 3), record(0.1, 5), record(0.8, 2), record(0.2, 4), record(0.85, 1)]
    labels = {
        ("creative:2", 0): True,
        ("creative:2", 1): False,
        ("creative:2", 2): False,
        ("creative:2", 3): False,
    }
    judge = CreativeJudge(handle=None, labels=labels, calibration=calibration)
    success, f1 = judge.judge(spec, records)
    assert list(success) == [True, False, True, False, True]
    # the reward it scored with competes against the calibration's stored negatives
    assert FirstFeatureReward.built[-1] == ("find an ocean", ["dig a hole"])
    # labelled episodes 0-3: predicted T F T F vs truth T F F F -> precision 1/2, recall 1 -> F1 2/3
    assert f1 == pytest.approx(2 / 3)
    assert CreativeJudge(handle=None, calibration=calibration).judge(spec, records)[1] is None

    # A policy that never gets near the goal: all below delta, so no success at all (a k-means
    # fitted on these episodes themselves would have called the upper half successes).
    failures = [record(x, 4) for x in (0.10, 0.12, 0.30, 0.32)]
    assert not judge.judge(spec, failures)[0].any()
    # ... and a perfect policy is judged 100% successful, even a single episode.
    assert judge.judge(spec, [record(0.7, 3), record(0.95, 2)])[0].all()
    assert judge.judge(spec, [record(0.7, 3)])[0].tolist() == [True]
    # A hand-given threshold overrides the calibration.
    manual = CreativeJudge(handle=None, calibration=calibration, threshold=0.86)
    assert list(manual.judge(spec, records)[0]) == [True, False, False, False, False]


def test_creative_judge_warns_when_episodes_differ_from_the_calibration(first_feature_reward):
    import warnings

    from agents.evaluate import CreativeJudge

    spec = OCEAN_SPEC
    judge = CreativeJudge(
        handle=None, calibration={"find an ocean": {"delta": 0.5, "episode_ticks": 100}}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # like the calibration's (mean 90.5 ticks): no warning
        assert list(judge.judge(spec, [record(0.9, 101), record(0.1, 80)])[0]) == [True, False]
    with pytest.warns(
        UserWarning, match=r"episodes of 1001 game ticks on average against 100\).*--max-steps 100"
    ):
        judge.judge(spec, [record(0.9, 1001), record(0.1, 1001)])
    # 26 frames 4 ticks apart: about the calibration's length, but not its frame spacing
    with pytest.warns(UserWarning, match=r"4 game ticks per frame against 1\).*--max-steps 25"):
        judge.judge(spec, [record(0.9, 26)], ticks_per_step=4)
    # the verdicts are the same with or without the warning; a hand-given delta warns of nothing
    manual = CreativeJudge(handle=None, calibration=judge.calibration, threshold=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(manual.judge(spec, [record(0.9, 1001)])[0]) == [True]


def test_creative_judge_uses_the_calibration_of_the_nearest_episode_length(
    first_feature_reward,
):
    import warnings

    from agents.evaluate import CreativeJudge

    rows = [
        {"delta": 0.6, "episode_ticks": 1000, "negatives": ["dig a hole"]},
        {"delta": 0.2, "episode_ticks": 100, "negatives": ["walk around"]},
    ]
    judge = CreativeJudge(handle=None, calibration={"find an ocean": {"calibrations": rows}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # each length has a calibration near it: no warning
        # a score of 0.4: a success against the 100-tick delta, a failure against the 1000-tick
        assert list(judge.judge(OCEAN_SPEC, [record(0.4, 90), record(0.1, 110)])[0]) == [
            True,
            False,
        ]
        assert FirstFeatureReward.built[-1] == ("find an ocean", ["walk around"])
        assert list(judge.judge(OCEAN_SPEC, [record(0.4, 900)])[0]) == [False]
        assert FirstFeatureReward.built[-1] == ("find an ocean", ["dig a hole"])
        # 25 steps of 4 ticks: 100 ticks, the short calibration, but warned for the spacing
    with pytest.warns(UserWarning, match=r"4 game ticks per frame against 1\).*--max-steps 25"):
        assert list(judge.judge(OCEAN_SPEC, [record(0.4, 25)], ticks_per_step=4)[0]) == [True]
    # far from both: the nearest (1000) is used, and the warning names its length
    with pytest.warns(UserWarning, match=r"5000 game ticks on average against 1000\)"):
        judge.judge(OCEAN_SPEC, [record(0.4, 5000)])
    # what the report states: the delta applied and its calibration's length (none by hand)
    assert judge.calibration_used(OCEAN_SPEC, [record(0.4, 90)]) == (0.2, 100)
    assert judge.calibration_used(OCEAN_SPEC, [record(0.4, 100)], ticks_per_step=8) == (0.6, 1000)
    manual = CreativeJudge(handle=None, calibration=judge.calibration, threshold=0.3)
    assert manual.calibration_used(OCEAN_SPEC, [record(0.4, 90)]) == (0.3, None)


def test_creative_judge_warns_when_its_calibration_judged_poorly(first_feature_reward):
    import warnings

    from agents.evaluate import CreativeJudge

    rows = [
        {"delta": 0.6, "episode_ticks": 1000, "f1_trained": 0.73},
        {"delta": 0.4, "episode_ticks": 200, "f1_trained": 0.989},
        {"delta": 0.2, "episode_ticks": 100, "f1_trained": 0.95},
    ]
    judge = CreativeJudge(handle=None, calibration={"find an ocean": {"calibrations": rows}})
    weak = r"1000-tick calibration agreed .* F1 0\.730 .* 200-tick calibration at 0\.989"
    with pytest.warns(UserWarning, match=weak + r".*--max-steps 200\)"):
        # the verdicts are still the 1000-tick calibration's (0.7 > 0.6 > 0.5)
        assert list(judge.judge(OCEAN_SPEC, [record(0.7, 1000), record(0.5, 900)])[0]) == [
            True,
            False,
        ]
    # 250 steps of 4 ticks: the 1000-tick calibration, the advice in steps of 4 ticks
    with pytest.warns(UserWarning, match=weak + r".*--max-steps 50\)"):
        judge.judge(OCEAN_SPEC, [record(0.7, 250)], ticks_per_step=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        judge.judge(OCEAN_SPEC, [record(0.7, 200)])  # the best calibration
        judge.judge(OCEAN_SPEC, [record(0.7, 100)])  # 0.95: reliable, though not the best
        # a hand-given delta, or a file without held-out F1s: nothing to say
        CreativeJudge(None, calibration=judge.calibration, threshold=0.5).judge(
            OCEAN_SPEC, [record(0.7, 1000)]
        )
        plain = [{k: v for k, v in row.items() if k != "f1_trained"} for row in rows]
        CreativeJudge(None, calibration={"find an ocean": {"calibrations": plain}}).judge(
            OCEAN_SPEC, [record(0.7, 1000)]
        )
        # every length weak, and this one the best of them: no better length to advise
        low = [{**rows[0], "f1_trained": 0.8}, {**rows[2], "f1_trained": 0.7}]
        low_judge = CreativeJudge(None, calibration={"find an ocean": {"calibrations": low}})
        low_judge.judge(OCEAN_SPEC, [record(0.7, 1000)])
        # an older judge.json: one calibration per prompt, so no other length to advise
        single = {"find an ocean": {"delta": 0.5, "episode_ticks": 100, "f1_trained": 0.7}}
        CreativeJudge(None, calibration=single).judge(OCEAN_SPEC, [record(0.7, 100)])
    with pytest.warns(
        UserWarning,
        match=r"judge's 100-tick calibration agreed .* F1 0\.700 .* 1000-tick calibration at 0\.800",
    ):
        low_judge.judge(OCEAN_SPEC, [record(0.7, 100)])


def test_creative_judge_without_a_calibration_says_how_to_get_one():
    from agents.evaluate import CreativeJudge, EpisodeRecord

    spec = type("Spec", (), {"id": "creative:2", "prompt": "find an ocean"})()
    rec = EpisodeRecord(0, False, 0.0, 2, features=np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="no calibrated judge threshold.*--creative-threshold"):
        CreativeJudge(handle=None, calibration={"dig a hole": {"delta": 0.1}}).judge(spec, [rec])


def test_shipped_mini_judge_loads_its_calibration():
    from agents.evaluate import CreativeJudge
    from envs import tasks
    from mineclip_jax import evaluator

    judge = CreativeJudge.load("mini")
    for prompt in (
        "find a nether portal",
        "find an ocean",
        "dig a hole",
        "put carpets on the floor",
    ):
        rows = judge.calibration[prompt]["calibrations"]
        # the default is the calibration on the task's own episode length (what evaluate runs)
        assert rows[0]["episode_ticks"] == tasks.get(prompt).max_steps
        for row in rows:
            assert row["delta"] == evaluator.calibrated_threshold(
                judge.handle, prompt, episode_ticks=row["episode_ticks"]
            )


def test_ppo_policy_feeds_back_previous_actions():
    from agents.evaluate import ppo_policy

    calls = []
    info = {"task_names": ("hunt_cow", "milk_cow"), "last_policy_action": None}

    def policy_fn(key, obs, prev_action=None, task_id=None, deterministic=False):
        calls.append((None if prev_action is None else np.array(prev_action), np.array(task_id)))
        info["last_policy_action"] = np.full((2, 3), len(calls))
        return np.zeros((2, 8), np.int32)

    act = ppo_policy(policy_fn, info, "milk_cow")
    act({}, None, np.array([True, True]))
    act({}, None, np.array([False, True]))  # env 1 started a new episode
    assert calls[0][0] is None and list(calls[0][1]) == [1, 1]
    assert calls[1][0].tolist() == [[1, 1, 1], [0, 0, 0]]
    with pytest.raises(ValueError, match="not one of them"):
        ppo_policy(policy_fn, info, "shear_sheep")


def test_resolve_tasks_skips_unjudgeable_creative_tasks(monkeypatch):
    from agents.evaluate import EvaluateConfig, resolve_tasks
    from envs.tasks import creative

    monkeypatch.delenv(creative.TASKS_DIR_ENV, raising=False)
    monkeypatch.setattr(creative, "_installed_minedojo_dir", lambda: None)
    specs, skipped = resolve_tasks(EvaluateConfig(suite="starter"))
    assert len(specs) == 32 and len(skipped) == 32
    assert all(
        task_id.startswith("creative:") and "creative_tasks.yaml" in why for task_id, why in skipped
    )
    specs, skipped = resolve_tasks(EvaluateConfig(tasks=("obtain log", "milk_cow")))
    assert [s.id for s in specs] == ["harvest_1_log", "milk_cow"] and skipped == []
    with pytest.raises(KeyError, match="Closest"):
        resolve_tasks(EvaluateConfig(tasks=("harvest_1_logs",)))


def test_parse_env_options():
    from agents.evaluate import parse_env_options

    assert parse_env_options(
        ["jar=/opt/Malmo.jar", "world_pool_size=4", "render=false", "fov_deg=60.5"]
    ) == {
        "jar": "/opt/Malmo.jar",
        "world_pool_size": 4,
        "render": False,
        "fov_deg": 60.5,
    }
    with pytest.raises(ValueError, match="key=value"):
        parse_env_options(["jar"])


def test_creative_task_is_rendered_at_the_judges_frame_size_and_judged(tmp_path, capsys):
    """A random policy's Creative episodes, judged by the shipped mini: the world renders the
    48x64 frames the judge was calibrated on (not the 160x256 default), and a frame size the
    run fixes otherwise is refused before any episode runs."""
    import dataclasses

    from agents.evaluate import (
        CreativeJudge,
        EvaluateConfig,
        evaluate,
        evaluate_task,
        resolve_tasks,
    )

    cfg = EvaluateConfig(
        tasks=("find an ocean",), episodes=2, num_envs=2, max_steps=4, videos_per_task=0,
        mineclip_checkpoint="mini", out_dir=tmp_path, all_cores=False,
    )  # fmt: skip
    with pytest.warns(UserWarning, match="calibrated on other episodes"):  # 5 frames, not 101
        report = evaluate(cfg)
    (result,) = report.results
    assert (result.judge, result.episodes) == ("mineclip", 2)
    # judged with the stored calibration nearest its 5-frame episodes (the 100-tick one), and
    # the report says so
    from mineclip_jax import evaluator

    judge = CreativeJudge.load("mini")
    assert result.judge_calibration_ticks == 100
    assert result.judge_delta == evaluator.calibrated_threshold(
        judge.handle, "find an ocean", episode_ticks=100
    )
    judged = f"mineclip (delta {result.judge_delta:.3f}, 100-tick calibration)"
    assert f"| {judged} |" in report.markdown.read_text()
    assert f"; judge: {judged})" in capsys.readouterr().out  # and the printed summary
    assert judge.frame_size_options({}, "random") == {"height": 48, "width": 64}
    assert judge.frame_size_options({"height": 48, "width": 64}, "r") == {"height": 48, "width": 64}
    spec = resolve_tasks(cfg)[0][0]
    wrong = dataclasses.replace(cfg, env_options=("height=160", "width=256"))
    message = "reads 48x64 frames, but the episodes would be rendered at 160x256"
    with pytest.raises(ValueError, match=message):
        evaluate_task(spec, wrong, lambda *a: None, creative_judge=judge)

"""Creative-task evaluator (paper G.4): scores, exact 1-D 2-means, threshold, F1."""

import jax
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax import evaluator as ev
from mineclip_jax.reward import MineCLIPReward


def _lloyd_2means(x, iters=200):
    """Loop reference: Lloyd's algorithm from (min, max)."""
    x = np.sort(np.asarray(x, float))
    c = np.array([x[0], x[-1]])
    for _ in range(iters):
        assign = np.abs(x[:, None] - c[None, :]).argmin(1)
        c = np.array([x[assign == j].mean() for j in (0, 1)])
    return tuple(c)


def test_kmeans_hand_values():
    assert ev.kmeans_1d([0.1, 0.2, 0.9, 1.0]) == pytest.approx((0.15, 0.95))
    assert ev.kmeans_threshold([0.1, 0.2, 0.9, 1.0]) == pytest.approx(0.55)
    # Splits of [0, 1, 2, 10]: SSE 48.67 / 32.5 / 2.0 -> {0, 1, 2} | {10}.
    assert ev.kmeans_1d([10, 0, 2, 1]) == pytest.approx((1.0, 10.0))
    assert ev.kmeans_threshold([10, 0, 2, 1]) == pytest.approx(5.5)
    assert ev.kmeans_1d([3.0, 3.0, 3.0]) == (3.0, 3.0)
    with pytest.raises(ValueError, match="at least 2"):
        ev.kmeans_1d([1.0])


def test_kmeans_matches_lloyd_on_bimodal_data():
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = np.concatenate([rng.normal(0.1, 0.03, 100), rng.normal(0.4, 0.05, 100)])
        np.testing.assert_allclose(ev.kmeans_1d(x), _lloyd_2means(x), rtol=1e-12)


def test_binary_metrics_hand_values():
    m = ev.binary_metrics([0, 0, 1, 1], [0, 1, 1, 0])
    assert (m.true_positive, m.false_positive, m.false_negative, m.true_negative) == (1, 1, 1, 1)
    assert (m.precision, m.recall, m.f1, m.accuracy) == (0.5, 0.5, 0.5, 0.5)
    # tp=2, fp=1, fn=1: P = 2/3, R = 2/3, F1 = 2/3.
    m = ev.binary_metrics([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    assert m.precision == pytest.approx(2 / 3) and m.recall == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(2 / 3) and m.accuracy == pytest.approx(3 / 5)
    # tp=3, fp=0, fn=1: P = 1, R = 3/4, F1 = 2 * 0.75 / 1.75 = 6/7.
    m = ev.binary_metrics([1, 1, 1, 0], [1, 1, 1, 1])
    assert m.f1 == pytest.approx(6 / 7)
    # No predicted positives: precision (0/0) and F1 are 0 by convention.
    m = ev.binary_metrics([0, 0], [1, 0])
    assert (m.precision, m.recall, m.f1) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="differ in size"):
        ev.binary_metrics([1, 0], [1])


def test_best_threshold_f1_hand_values():
    # delta 0.1 predicts (0, 1, 1, 1): tp 2, fp 1, F1 0.8; delta 0.3: tp 1, fn 1, F1 2/3;
    # below all: tp 2, fp 2, F1 2/3; 0.2 and 0.4: F1 1/2 and 0.
    f1, delta = ev.best_threshold_f1([0.3, 0.2, 0.1, 0.4], [0, 1, 0, 1])
    assert (f1, delta) == (pytest.approx(0.8), 0.1)
    # separable scores: F1 1 at the highest failure
    assert ev.best_threshold_f1([0.9, 0.8, 0.5, 0.7], [1, 1, 0, 0]) == (1.0, 0.7)
    # every episode a success: predicting all of them (delta below the lowest) is F1 1
    f1, delta = ev.best_threshold_f1([0.2, 0.5], [1, 1])
    assert f1 == 1.0 and delta < 0.2
    with pytest.raises(ValueError, match="differ in size"):
        ev.best_threshold_f1([0.1, 0.2], [1])


def test_best_threshold_f1_beats_a_grid_search():
    rng = np.random.default_rng(0)
    labels = rng.random(60) < 0.5
    scores = rng.normal(labels * 1.0, 1.0)
    f1, delta = ev.best_threshold_f1(scores, labels)
    grid = [ev.binary_metrics(scores > d, labels).f1 for d in np.linspace(-4, 5, 2001)]
    assert f1 >= max(grid) - 1e-12
    assert ev.binary_metrics(scores > delta, labels).f1 == f1


def test_roc_auc_hand_values_and_a_pair_count():
    # successes 0.9, 0.4, 0.4; failures 0.4, 0.1: pairs 0.9>0.4, 0.9>0.1, 0.4=0.4 (half) x2,
    # 0.4>0.1 x2 -> (2 + 1 + 2) / 6
    assert ev.roc_auc([0.9, 0.4, 0.4, 0.4, 0.1], [1, 1, 1, 0, 0]) == pytest.approx(5 / 6)
    assert ev.roc_auc([0.1, 0.2, 0.8], [0, 0, 1]) == 1.0
    assert ev.roc_auc([0.8, 0.2, 0.1], [0, 0, 1]) == 0.0
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=40), rng.random(40) < 0.5
    pairs = [(a > b) + 0.5 * (a == b) for a in x[y] for b in x[~y]]
    assert ev.roc_auc(x, y) == pytest.approx(np.mean(pairs))
    with pytest.raises(ValueError, match="both successes and failures"):
        ev.roc_auc([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="differ in size"):
        ev.roc_auc([0.1, 0.2], [1])


def test_calibrate_judge_chooses_the_separating_negative_set_then_kmeans():
    labels = np.array([1, 1, 1, 0, 0, 0], bool)
    # "tasks": one failure (a desert, say) above a success; "tasks+neutral": separated.
    tasks = np.array([0.9, 0.8, 0.3, 0.6, 0.2, 0.1])
    neutral = np.array([0.8, 0.7, 0.5, 0.15, 0.1, 0.05])
    chosen, delta, auc = ev.calibrate_judge({"tasks": tasks, "tasks+neutral": neutral}, labels)
    assert chosen == "tasks+neutral"
    assert auc == pytest.approx({"tasks": 8 / 9, "tasks+neutral": 1.0})
    # k-means of the chosen scores, not of the other set's: {0.05, 0.1, 0.15} | {0.5, 0.7, 0.8}
    assert delta == pytest.approx((0.1 + 2 / 3) / 2)
    # Equal AUCs: the first set (the paper's task prompts alone) is kept.
    chosen, _, _ = ev.calibrate_judge({"tasks": neutral, "tasks+neutral": neutral + 0.1}, labels)
    assert chosen == "tasks"
    with pytest.raises(ValueError, match="no negative set"):
        ev.calibrate_judge({}, labels)


def test_trajectory_scores_padded_and_list():
    rewards = np.array([[1.0, 2.0, 3.0, 99.0], [4.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(ev.trajectory_scores(rewards, [3, 1]), [2.0, 4.0])
    np.testing.assert_allclose(ev.trajectory_scores(rewards), [26.25, 1.0])
    np.testing.assert_allclose(ev.trajectory_scores([[1.0, 2.0, 3.0], [4.0]]), [2.0, 4.0])
    with pytest.raises(ValueError, match="lengths"):
        ev.trajectory_scores(rewards, [0, 1])


def test_evaluate_scores_end_to_end_hand_values():
    scores = [0.1, 0.2, 0.9, 1.0, 0.15, 0.85]
    labels = [0, 1, 1, 1, 0, 0]
    res = ev.evaluate_scores(scores, labels)
    # Clusters {0.1, 0.15, 0.2} and {0.85, 0.9, 1.0}: centroids 0.15, 0.9167, delta 0.5333.
    assert res.centroids == pytest.approx((0.15, 2.75 / 3))
    assert res.threshold == pytest.approx((0.15 + 2.75 / 3) / 2)
    np.testing.assert_array_equal(res.predicted, [0, 0, 1, 1, 0, 1])
    # tp = 2 (idx 2, 3), fp = 1 (idx 5), fn = 1 (idx 1): F1 = 2/3.
    assert res.f1 == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="no human labels"):
        _ = ev.evaluate_scores(scores).f1


def test_evaluate_trajectories_uses_reward_model():
    mc = mcj.create(mcj.MineCLIPConfig.tiny(pool="avg"), jax.random.key(1))
    reward = MineCLIPReward(mc, "dig a hole", kind="direct")
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(4, 6, mc.config.embed_dim)).astype(np.float32)
    lengths = np.array([6, 3, 5, 2])
    res = ev.evaluate_trajectories(reward, feats, lengths, labels=[1, 0, 1, 0])
    step_r, _ = reward.trajectory_rewards(feats)
    step_r = np.asarray(step_r)
    expected = [step_r[i, : lengths[i]].mean() for i in range(4)]
    np.testing.assert_allclose(res.scores, expected, rtol=1e-6)
    # Padding never changes a valid step: rewards of a 3-step trajectory alone are the same.
    alone, _ = reward.trajectory_rewards(feats[1:2, :3])
    np.testing.assert_allclose(np.asarray(alone)[0], step_r[1, :3], rtol=1e-6, atol=1e-7)
    assert res.threshold == pytest.approx(ev.kmeans_threshold(expected))
    # F1 against an independent count: predictions are scores above the threshold.
    pred = np.asarray(expected) > res.threshold
    truth = np.array([1, 0, 1, 0], bool)
    tp, fp, fn = (pred & truth).sum(), (pred & ~truth).sum(), (~pred & truth).sum()
    assert res.f1 == pytest.approx(2 * tp / (2 * tp + fp + fn) if tp else 0.0)


def test_judge_compares_with_the_calibrated_delta():
    np.testing.assert_array_equal(ev.judge([0.1, 0.5, 0.3], 0.3), [False, True, False])
    with pytest.raises(ValueError, match="1-D"):
        ev.judge([[0.1]], 0.3)
    with pytest.raises(ValueError, match="NaN"):
        ev.judge([np.nan], 0.3)
    with pytest.raises(ValueError, match="finite"):
        ev.judge([0.1], float("nan"))


def test_calibrated_threshold_reads_the_checkpoint_judge(tmp_path):
    import json

    mc = mcj.create(mcj.MineCLIPConfig.tiny(pool="avg"), jax.random.key(1))
    with pytest.raises(ValueError, match="no calibrated judge"):
        ev.calibrated_threshold(mc, "dig a hole")
    mcj.save_checkpoint(mc, tmp_path / "m")
    loaded = mcj.load_checkpoint(tmp_path / "m")
    with pytest.raises(FileNotFoundError, match="never calibrated"):
        ev.calibrated_threshold(loaded, "dig a hole")
    (tmp_path / "m" / "judge.json").write_text(
        json.dumps({"tasks": {"dig a hole": {"delta": 0.25}}})
    )
    assert ev.calibrated_threshold(loaded, "dig a hole") == 0.25
    assert ev.calibrated_threshold(str(tmp_path / "m"), "dig a hole") == 0.25
    # No stored negatives: the judge's reward is the default one (the other task prompts).
    assert (
        ev.judge_reward(loaded, "dig a hole").prompts
        == MineCLIPReward(loaded, "dig a hole").prompts
    )
    (tmp_path / "m" / "judge.json").write_text(
        json.dumps(
            {
                "tasks": {
                    "dig a hole": {
                        "delta": 0.25,
                        "negatives": ["walk around"],
                        "reward_kind": "delta",
                    }
                }
            }
        )  # fmt: skip
    )
    reward = ev.judge_reward(loaded, "dig a hole")
    assert (reward.prompts, reward.kind) == (("dig a hole", "walk around"), "delta")
    for lookup in (ev.calibrated_threshold, ev.judge_reward):
        with pytest.raises(KeyError, match="no calibrated judge threshold for 'find an ocean'"):
            lookup(loaded, "find an ocean")
    # New weights are not the checkpoint's: their judge would not apply.
    assert loaded.replace(params=loaded.params).source is None
    assert loaded.astype("bfloat16").source == loaded.source


def test_select_calibration_picks_the_nearest_episode_length_by_ratio(tmp_path):
    import json

    rows = [{"episode_ticks": t, "delta": d} for t, d in ((1000, 0.4), (200, 0.3), (100, 0.2))]
    entry = {"calibrations": rows}
    with pytest.raises(ValueError, match=r"episodes of \[1000, 200, 100\].*pass episode_ticks="):
        ev.select_calibration(entry)  # several lengths: no silent default
    # by ratio: 140 is 1.4x 100 and 1/1.43 of 200; 150 is 1.5x 100 and 1/1.33 of 200
    for ticks, want in ((40, 100), (140, 100), (150, 200), (440, 200), (460, 1000), (5000, 1000)):
        assert ev.select_calibration(entry, ticks)["episode_ticks"] == want
    old = {"delta": 0.25}  # a judge.json written before calibrations per length
    assert ev.select_calibration(old, 300) is old
    with pytest.raises(ValueError, match="positive"):
        ev.select_calibration(entry, 0)
    with pytest.raises(ValueError, match=r"calibrations \[1\].*no `episode_ticks`"):
        ev.select_calibration({"calibrations": [rows[0], {"delta": 0.1}]}, 100)
    with pytest.raises(ValueError, match="empty"):
        ev.select_calibration({"calibrations": []})
    # through a checkpoint's judge.json: delta and the reward's negatives of the same calibration
    mc = mcj.create(mcj.MineCLIPConfig.tiny(pool="avg"), jax.random.key(1))
    mcj.save_checkpoint(mc, tmp_path / "m")
    rows[2]["negatives"] = ["walk around"]
    (tmp_path / "m" / "judge.json").write_text(json.dumps({"tasks": {"dig a hole": entry}}))
    loaded = mcj.load_checkpoint(tmp_path / "m")
    assert ev.calibrated_threshold(loaded, "dig a hole", episode_ticks=1000) == 0.4
    assert ev.calibrated_threshold(loaded, "dig a hole", episode_ticks=90) == 0.2
    assert ev.judge_reward(loaded, "dig a hole", episode_ticks=90).prompts == (
        "dig a hole",
        "walk around",
    )
    default = MineCLIPReward(loaded, "dig a hole").prompts
    assert ev.judge_reward(loaded, "dig a hole", episode_ticks=900).prompts == default


def test_trajectory_scores_ignore_nan_in_the_padding():
    rewards = np.array([[1.0, 3.0, np.nan], [2.0, np.nan, np.nan]])
    np.testing.assert_allclose(ev.trajectory_scores(rewards, [2, 1]), [2.0, 2.0])

"""MineCLIP as an automatic success metric for Creative tasks (paper Sec. 5, App. G.4).

Protocol: run MineCLIP over each trajectory to get step-wise rewards, score each trajectory
by the mean of its rewards, cluster all scores with K=2 k-means, and call a trajectory
successful when its score is greater than the mean of the two centroids. Agreement with human
labels is the binary F1 (success = positive class).

    from mineclip_jax.reward import MineCLIPReward
    from mineclip_jax import evaluator
    reward = MineCLIPReward(mc, "dig a hole", kind="direct")
    result = evaluator.evaluate_trajectories(reward, features, lengths, human_labels)
    print(result.f1, result.threshold)

Calibrated judging (the threshold fitted ONCE, on labelled calibration trajectories, and then
used for any policy; fitting it on the judged policy's own episodes would give a random
policy successes and never let a perfect one reach 100%):

    reward = evaluator.judge_reward(mc, "dig a hole")          # with the judge's own negatives
    step_rewards, _ = reward.trajectory_rewards(frame_features)  # [B, T]
    delta = evaluator.calibrated_threshold(mc, "dig a hole")   # from the checkpoint's judge.json
    success = evaluator.judge(evaluator.trajectory_scores(step_rewards, lengths), delta)

Calibration may also choose the judge's negative prompts (`calibrate_judge`): the Direct reward
is a softmax over a closed set of prompts, so a scene that matches none of them (a desert, for
12 task prompts of which only "find an ocean" names a landscape) still gives its probability to
one of them. Candidate sets that add neutral prompts ("walk around", ...) are scored by ROC-AUC
on the calibration episodes, and the chosen set is stored with delta in judge.json.

The k-means here is exact: in 1-D the optimal 2-clustering splits the sorted scores at one
point, so every split is tried and the one with the least within-cluster sum of squares wins
(ties: the first, i.e. lowest, split). This is deterministic and is the global optimum that
Lloyd's algorithm (as in scikit-learn) converges to for well-separated scores.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import jax.numpy as jnp
import numpy as np

JUDGE_FILE = "judge.json"  # per-task calibrated thresholds stored beside a checkpoint


def trajectory_scores(step_rewards, lengths=None) -> np.ndarray:
    """Mean step-wise reward of each trajectory.

    step_rewards: [B, T] (padded), or a list of 1-D arrays of varying length.
    lengths: int [B] valid steps per row of a padded array (default: all T).
    """
    if isinstance(step_rewards, (list, tuple)):
        if lengths is not None:
            raise ValueError("pass lengths only with a padded [B, T] array")
        rows = [np.asarray(r, np.float64).reshape(-1) for r in step_rewards]
        if any(r.size == 0 for r in rows):
            raise ValueError("every trajectory needs at least one step")
        return np.array([r.mean() for r in rows])
    rewards = np.asarray(step_rewards, np.float64)
    if rewards.ndim != 2:
        raise ValueError(f"step_rewards must be [B, T], got shape {rewards.shape}")
    b, t = rewards.shape
    lengths = np.full((b,), t) if lengths is None else np.asarray(lengths)
    if lengths.shape != (b,) or np.any(lengths < 1) or np.any(lengths > t):
        raise ValueError(f"lengths must be [B]={b} values in [1, {t}], got {lengths.tolist()}")
    valid = np.arange(t)[None, :] < lengths[:, None]
    # where, not a product: padding may hold NaN (e.g. rewards of zero-padded frames).
    return np.where(valid, rewards, 0.0).sum(1) / lengths


def kmeans_1d(values) -> tuple[float, float]:
    """Exact K=2 k-means of 1-D values; returns the (low, high) centroids."""
    x = np.sort(np.asarray(values, np.float64).reshape(-1))
    n = x.size
    if n < 2:
        raise ValueError(f"k-means with K=2 needs at least 2 scores, got {n}")
    if x[0] == x[-1]:
        return float(x[0]), float(x[0])
    csum = np.cumsum(x)
    csq = np.cumsum(x * x)
    k = np.arange(1, n)  # size of the low cluster
    low_sum, low_sq = csum[:-1], csq[:-1]
    high_sum, high_sq = csum[-1] - low_sum, csq[-1] - low_sq
    sse = (low_sq - low_sum**2 / k) + (high_sq - high_sum**2 / (n - k))
    best = int(np.argmin(sse))
    return float(low_sum[best] / k[best]), float(high_sum[best] / (n - k[best]))


def kmeans_threshold(scores) -> float:
    """Decision boundary delta = mean of the two k-means centroids."""
    low, high = kmeans_1d(scores)
    return 0.5 * (low + high)


def best_threshold_f1(scores, labels) -> tuple[float, float]:
    """(F1, delta) of the best threshold on labelled scores: the most any threshold rule can
    reach on them. A diagnostic, not a calibration (it reads the labels it is scored on): where
    it is high and the k-means delta's F1 is low, the rule misplaces delta; where it is low too,
    the scores themselves overlap."""
    x = np.asarray(scores, np.float64).reshape(-1)
    y = np.asarray(labels).astype(bool).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"scores {x.shape} and labels {y.shape} differ in size")
    # success = score > delta, so every distinct score, and one below them all, is a candidate
    candidates = np.r_[x.min() - 1.0, np.unique(x)]
    f1 = [binary_metrics(x > d, y).f1 for d in candidates]
    best = int(np.argmax(f1))
    return float(f1[best]), float(candidates[best])


def roc_auc(scores, labels) -> float:
    """P(a success scores above a failure), ties counting one half (Mann-Whitney U / n+ n-)."""
    x = np.asarray(scores, np.float64).reshape(-1)
    y = np.asarray(labels).astype(bool).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"scores {x.shape} and labels {y.shape} differ in size")
    if y.all() or not y.any():
        raise ValueError("ROC-AUC needs both successes and failures among the labels")
    pos, neg = x[y][:, None], x[~y][None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def calibrate_judge(scores_by_negative_set, labels) -> tuple[str, float, dict[str, float]]:
    """Calibrate a judge on labelled calibration episodes: (chosen negative set, delta, AUC of
    each set).

    `scores_by_negative_set` maps a name to the episode-mean Direct rewards of the same
    episodes computed against that set of negative prompts (in the order of preference: ties go
    to the first). The set whose scores separate successes from failures best (ROC-AUC, which
    no threshold influences) is chosen; delta is then the K=2 k-means boundary of its scores,
    the paper's rule, which reads no label. Both are fitted on these episodes only; report F1 on
    others."""
    if not scores_by_negative_set:
        raise ValueError("no negative set to choose from: give at least one name -> scores")
    auc = {name: roc_auc(s, labels) for name, s in scores_by_negative_set.items()}
    chosen = max(auc, key=auc.__getitem__)  # max keeps the first of equal values
    return chosen, kmeans_threshold(scores_by_negative_set[chosen]), auc


def classify(scores, threshold: float) -> np.ndarray:
    """Success (True) where score > threshold."""
    return np.asarray(scores) > threshold


@dataclasses.dataclass(frozen=True)
class BinaryMetrics:
    precision: float
    recall: float
    f1: float
    accuracy: float
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int


def binary_metrics(predicted, labels) -> BinaryMetrics:
    """Precision, recall, F1 of predicted successes against human labels (success = positive).
    A ratio with a zero denominator is 0 (scikit-learn's zero_division=0)."""
    pred = np.asarray(predicted).astype(bool).reshape(-1)
    true = np.asarray(labels).astype(bool).reshape(-1)
    if pred.shape != true.shape:
        raise ValueError(f"predicted {pred.shape} and labels {true.shape} differ in size")
    tp = int(np.sum(pred & true))
    fp = int(np.sum(pred & ~true))
    fn = int(np.sum(~pred & true))
    tn = int(np.sum(~pred & ~true))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = (tp + tn) / pred.size if pred.size else 0.0
    return BinaryMetrics(precision, recall, f1, accuracy, tp, fp, fn, tn)


@dataclasses.dataclass(frozen=True)
class EvaluationResult:
    scores: np.ndarray  # [B] mean step-wise reward per trajectory
    threshold: float  # mean of the two k-means centroids
    centroids: tuple[float, float]  # (low, high)
    predicted: np.ndarray  # bool [B] classified successful
    metrics: BinaryMetrics | None  # against human labels, when given

    @property
    def f1(self) -> float:
        if self.metrics is None:
            raise ValueError("no human labels were given, so there is no F1")
        return self.metrics.f1


def evaluate_scores(scores, labels=None) -> EvaluationResult:
    """k-means threshold, classification and (with labels) F1 from per-trajectory scores."""
    scores = np.asarray(scores, np.float64)
    centroids = kmeans_1d(scores)
    threshold = 0.5 * (centroids[0] + centroids[1])
    predicted = classify(scores, threshold)
    metrics = None if labels is None else binary_metrics(predicted, labels)
    return EvaluationResult(scores, threshold, centroids, predicted, metrics)


def evaluate_trajectories(reward, frame_features, lengths=None, labels=None, goal_index=None):
    """The full G.4 protocol on frame features of trajectories [B, T, D] (padded; `lengths`
    [B] valid steps) with a `MineCLIPReward` (its kind sets the step-wise reward; the paper
    scores with the Direct reward's model output)."""
    frame_features = jnp.asarray(frame_features)
    step_rewards, _ = reward.trajectory_rewards(frame_features, goal_index)
    return evaluate_scores(trajectory_scores(np.asarray(step_rewards), lengths), labels)


def judge(episode_mean_rewards, delta: float) -> np.ndarray:
    """Success (True) for each episode whose mean step reward exceeds the calibrated `delta`."""
    scores = np.asarray(episode_mean_rewards, np.float64)
    if scores.ndim != 1:
        raise ValueError(f"episode_mean_rewards must be 1-D [episodes], got shape {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("episode_mean_rewards contains NaN or inf")
    if not np.isfinite(delta):
        raise ValueError(f"delta must be a finite number, got {delta!r}")
    return scores > float(delta)


def judge_entries(handle_or_dir) -> dict:
    """The per-task judge calibrations stored with a checkpoint (its judge.json `tasks`)."""
    if isinstance(handle_or_dir, (str, os.PathLike)):
        from mineclip_jax.checkpoint import SHIPPED, shipped_path

        name = str(handle_or_dir)
        directory = shipped_path(name) if name in SHIPPED else Path(name).expanduser()
    else:
        source = getattr(handle_or_dir, "source", None)
        if source is None:
            raise ValueError(
                "this MineCLIP handle was not loaded from a checkpoint directory (random or "
                "in-memory weights), so it has no calibrated judge; load one with "
                'mineclip_jax.load_checkpoint("mini"), or save the weights (save_checkpoint) and '
                "calibrate them (`python -m data.judge_episodes --out EPISODES`, then "
                "`python -m mineclip_jax.judge --episodes EPISODES --ckpt DIR`)"
            )
        directory = Path(source)
    path = directory / JUDGE_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory} has no {JUDGE_FILE}: this checkpoint was never calibrated as a judge; "
            f"calibrate it with `python -m data.judge_episodes --out EPISODES`, then "
            f"`python -m mineclip_jax.judge --episodes EPISODES --ckpt {directory}`"
        )
    from mineclip_jax.checkpoint import read_json_file

    data = read_json_file(path, "judge calibration")
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        raise ValueError(f"{path} has no 'tasks' table of calibrations; calibrate the judge again")
    return tasks


def calibrations(entry: dict) -> list[dict]:
    """The calibrations of a task's judge.json entry: its `calibrations` list (one per length of
    the labelled episodes), or the entry itself as the one calibration of an older file."""
    return entry.get("calibrations", [entry])


def select_calibration(entry: dict, episode_ticks: float | None = None) -> dict:
    """One calibration of a task's judge.json entry. An entry holds `calibrations`, one per
    length of the labelled episodes it was calibrated on (`episode_ticks`); or, as older judge
    files do, it is one calibration itself. Returns the calibration whose episodes are nearest
    `episode_ticks` long (by ratio: the score is a mean over the episode, so what matters is the
    share of frames that show the goal). `episode_ticks` may be left out only when there is
    one calibration: with several, no length is right for every episode."""
    rows = calibrations(entry)
    if not rows:
        raise ValueError("this judge entry has an empty `calibrations` list: recalibrate it")
    if len(rows) == 1:
        return rows[0]
    have = [r.get("episode_ticks") for r in rows]
    if episode_ticks is None:
        raise ValueError(
            f"this judge was calibrated on episodes of {have} game ticks; pass episode_ticks= "
            "(the judged episodes' length) to pick the calibration nearest it"
        )
    if not np.isfinite(episode_ticks) or episode_ticks <= 0:
        raise ValueError(f"episode_ticks must be a positive number, got {episode_ticks!r}")
    missing = [i for i, ticks in enumerate(have) if not ticks]
    if missing:
        raise ValueError(
            f"calibrations {missing} of this judge entry give no `episode_ticks`, so the one "
            "for these episodes cannot be chosen: recalibrate with "
            "`python -m mineclip_jax.judge --episodes EPISODES --ckpt DIR`"
        )
    return min(rows, key=lambda r: abs(np.log(episode_ticks / r["episode_ticks"])))


def _judge_entry(handle, task_prompt: str, episode_ticks: float | None = None) -> dict:
    entries = judge_entries(handle)
    if task_prompt not in entries:
        raise KeyError(
            f"the checkpoint has no calibrated judge threshold for {task_prompt!r}; it has "
            f"{sorted(entries)}"
        )
    return select_calibration(entries[task_prompt], episode_ticks)


def calibrated_threshold(handle, task_prompt: str, episode_ticks: float | None = None) -> float:
    """The judge threshold delta calibrated for `task_prompt` with this checkpoint (stored in
    its judge.json), on episodes nearest `episode_ticks` game ticks long (needed when it has
    several calibrations); a clear error when the checkpoint has none for that task."""
    return float(_judge_entry(handle, task_prompt, episode_ticks)["delta"])


def judge_reward(handle, task_prompt: str, episode_ticks: float | None = None):
    """The reward `task_prompt`'s judge was calibrated with: a `MineCLIPReward` against the
    negatives stored in judge.json (which may add neutral prompts to the task prompts) and of
    its reward kind, for the calibration `calibrated_threshold` picks for `episode_ticks`.
    Score episodes with this one before comparing them with `calibrated_threshold`: the
    default negatives give other scores. Checkpoint directories whose judge.json stores no
    negatives used the default ones."""
    from mineclip_jax.reward import MineCLIPReward

    entry = _judge_entry(handle, task_prompt, episode_ticks)
    negatives = entry.get("negatives")
    return MineCLIPReward(
        handle, task_prompt, negatives=negatives, kind=entry.get("reward_kind", "direct")
    )

"""The statistics the project reports with its figures, in one place: Wilson's score interval for
a success rate, the paired t-test across tasks (the paper's Table 1 test) and Spearman's rank
correlation.

It sits in `envs`, the lowest package every user of these may import (`envs.tasks.evaluation`'s
success tables, `agents`, `data` and the experiments; see DESIGN.md's import rules), and imports
nothing of the project. Wilson's interval is used rather than the normal approximation because
success rates near 0% or 100% (common on this benchmark) would give the latter zero width or
bounds outside [0, 1].
"""

from __future__ import annotations

import math

import numpy as np

Z_95 = 1.959963984540054  # two-sided 95% standard-normal quantile


def wilson_interval(successes: int, episodes: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion, as fractions in [0, 1]."""
    if episodes <= 0:
        raise ValueError(f"episodes must be positive, got {episodes}")
    if not 0 <= successes <= episodes:
        raise ValueError(f"successes must be in [0, episodes={episodes}], got {successes}")
    p = successes / episodes
    z2 = z * z
    centre = (p + z2 / (2 * episodes)) / (1 + z2 / episodes)
    half = (
        z / (1 + z2 / episodes) * math.sqrt(p * (1 - p) / episodes + z2 / (4 * episodes * episodes))
    )
    # p = 0 or 1 gives exactly 0 or 1 analytically; in floats centre - half is then a round-off
    # like 3.5e-18, and "0 successes >= the lower bound of 0 of 100" must hold.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == episodes else min(1.0, centre + half)
    return low, high


def paired_t_test(a, b) -> tuple[float, float]:
    """Two-sided paired t-test of a vs b (the paper's test across tasks): (t, p). Fewer than two
    pairs give (nan, nan); differences that are all equal give t = +-inf (nan when zero) and
    p = nan, since the variance is zero."""
    from scipy import stats  # a dependency of jax

    if len(a) < 2:
        return float("nan"), float("nan")
    diff = np.asarray(a) - np.asarray(b)
    if np.all(diff == diff[0]):  # zero variance: t is undefined
        return (float("inf") * np.sign(diff[0]) if diff[0] else float("nan")), float("nan")
    t, p = stats.ttest_rel(a, b)
    return float(t), float(p)


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), float)
    ranks[order] = np.arange(len(x))
    for v in np.unique(x):  # ties share their mean rank
        tie = x == v
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(x, y) -> float:
    """Spearman's rank correlation of x and y (ties share their mean rank)."""
    rx, ry = _ranks(np.asarray(x, float)), _ranks(np.asarray(y, float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / np.sqrt((rx**2).sum() * (ry**2).sum()))

"""envs.stats: the project's statistics against scipy and hand-known values."""

import math

import numpy as np
import pytest
from scipy import stats as sp

from envs import stats
from envs.tasks import evaluation


def test_wilson_interval_known_values_and_the_re_export():
    assert stats.wilson_interval(0, 100) == (0.0, pytest.approx(0.0370, abs=1e-4))
    low, high = stats.wilson_interval(12, 100)
    assert (low, high) == (pytest.approx(0.0700, abs=1e-4), pytest.approx(0.1982, abs=1e-4))
    assert stats.wilson_interval(100, 100)[1] == 1.0
    assert evaluation.wilson_interval is stats.wilson_interval
    with pytest.raises(ValueError, match="episodes must be positive"):
        stats.wilson_interval(0, 0)


def test_paired_t_test_matches_scipy_and_handles_degenerate_inputs():
    a, b = [9.0, 0.0, 12.0, 0.0], [8.0, 0.0, 13.0, 1.0]
    t, p = stats.paired_t_test(a, b)
    want = sp.ttest_rel(a, b)
    assert (t, p) == (pytest.approx(want.statistic), pytest.approx(want.pvalue))
    assert all(math.isnan(x) for x in stats.paired_t_test([1.0], [2.0]))
    t, p = stats.paired_t_test([2.0, 3.0], [1.0, 2.0])  # equal differences: zero variance
    assert t == math.inf and math.isnan(p)


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, 50).astype(float)  # many ties
    y = x + rng.normal(0, 2, 50)
    assert stats.spearman(x, y) == pytest.approx(sp.spearmanr(x, y).statistic)
    assert stats.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)

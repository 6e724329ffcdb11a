"""envs.checks: actions against their space and seeds, refused with the component and range."""

import gymnasium as gym
import numpy as np
import pytest

from envs.checks import MAX_SEED, check_action, check_seed


def test_multidiscrete_components_are_named_with_range_and_value():
    space = gym.spaces.MultiDiscrete([3, 25])
    np.testing.assert_array_equal(check_action(space, [2, 24], names=("move", "yaw")), [2, 24])
    with pytest.raises(ValueError, match=r"'yaw' \(component 1\) must be in \[0, 24\], got 25"):
        check_action(space, [0, 25], names=("move", "yaw"))
    with pytest.raises(ValueError, match=r"component 0 of env 2 must be in \[0, 2\], got -1"):
        check_action(space, [[0, 0], [1, 1], [-1, 0]], batch=3)
    with pytest.raises(TypeError, match=r"component 1 has range \[0, 24\], value inf"):
        check_action(space, np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        check_action(space, [1, 2, 3])
    # a 2-D nvec: components counted in row-major order
    grid = gym.spaces.MultiDiscrete([[2, 3], [4, 5]])
    with pytest.raises(ValueError, match=r"component 3 must be in \[0, 4\], got 5"):
        check_action(grid, [[1, 2], [3, 5]])


def test_discrete_and_other_spaces():
    space = gym.spaces.Discrete(3, start=1)
    assert int(check_action(space, 3)) == 3
    with pytest.raises(ValueError, match=r"must be in \[1, 3\], got 0"):
        check_action(space, 0)
    with pytest.raises(TypeError, match="integers"):
        check_action(space, np.float32(2.0))  # a whole-valued float is still refused
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    check_action(box, np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="not in the action space"):
        check_action(box, np.full(2, 5.0, np.float32))


@pytest.mark.parametrize("seed", [0, 7, MAX_SEED, np.int64(3)])
def test_valid_seeds_pass(seed):
    assert check_seed(seed) == int(seed)


@pytest.mark.parametrize(
    "seed, error", [(-1, ValueError), (MAX_SEED + 1, ValueError), (1.5, TypeError),
                    (True, TypeError), ("3", TypeError)],
)  # fmt: skip
def test_invalid_seeds_are_refused(seed, error):
    with pytest.raises(error, match="seed must be"):
        check_seed(seed)

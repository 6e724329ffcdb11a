"""Shared-memory layouts of nested spaces (no processes)."""

from __future__ import annotations

import mmap

import gymnasium as gym
import numpy as np
import pytest

from envs import spaces as mc_spaces
from envs.bridge import shm


def _space() -> gym.spaces.Dict:
    return gym.spaces.Dict(
        {
            "rgb": gym.spaces.Box(0, 255, (4, 5, 3), np.uint8),
            "pair": gym.spaces.Tuple((gym.spaces.Discrete(7), gym.spaces.MultiBinary(3))),
            "md": gym.spaces.MultiDiscrete([3, 4]),
            "flag": gym.spaces.Box(0, 1, (), bool),
        }
    )


def test_rows_round_trip_without_aliasing():
    space = _space()
    space.seed(0)
    layout = shm.make_layout(space, num_rows=3, base=8)
    assert all(leaf.offset % 64 == 0 for leaf in layout.leaves)
    buffer = mmap.mmap(-1, 8 + layout.nbytes)
    views = layout.views(buffer)
    samples = [space.sample() for _ in range(3)]
    for row, sample in enumerate(samples):
        shm.write_row(views, layout.structure, row, sample)
    for row, sample in enumerate(samples):
        got = shm.read_single(views, layout, row)
        assert isinstance(got["pair"][0], np.int64) and got["pair"][0] == sample["pair"][0]
        np.testing.assert_array_equal(got["rgb"], sample["rgb"])
        np.testing.assert_array_equal(got["pair"][1], sample["pair"][1])
        np.testing.assert_array_equal(got["md"], sample["md"])
    batch = shm.read_rows(views, layout.structure, np.array([2, 0]))
    assert batch["rgb"].shape == (2, 4, 5, 3) and batch["pair"][0].shape == (2,)
    np.testing.assert_array_equal(batch["rgb"][0], samples[2]["rgb"])
    batch["rgb"][:] = 0  # a copy: the shared rows are untouched
    rgb_leaf = [leaf.path for leaf in layout.leaves].index(("rgb",))
    np.testing.assert_array_equal(views[rgb_leaf][2], samples[2]["rgb"])
    assert gym.vector.utils.batch_space(space, 2).contains(batch)


def test_minedojo_space_layout_and_batch_scatter():
    layout = shm.make_bridge_layout(mc_spaces.observation_space(16, 24), mc_spaces.ACTION_SPACE, 4)
    buffer = mmap.mmap(-1, layout.nbytes)
    views = layout.action.views(buffer)
    actions = np.array([[1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 12, 12, 0, 0, 0]])
    shm.write_batch(views, layout.action.structure, np.array([3, 1]), actions)
    np.testing.assert_array_equal(shm.read_single(views, layout.action, 3), actions[0])
    np.testing.assert_array_equal(shm.read_single(views, layout.action, 1), actions[1])
    with pytest.raises(ValueError, match="does not fit"):
        shm.write_batch(views, layout.action.structure, np.array([0]), np.zeros((1, 7)))
    reward, terminated, truncated = layout.scalar_views(buffer)
    assert reward.shape == terminated.shape == truncated.shape == (4,)


def test_unsupported_space_and_bad_values_are_explained():
    with pytest.raises(TypeError, match="cannot be laid out in shared memory.*item ids"):
        shm.make_layout(gym.spaces.Dict({"name": gym.spaces.Text(10)}), 2)
    layout = shm.make_layout(_space(), 1)
    views = layout.views(mmap.mmap(-1, layout.nbytes))
    sample = _space().sample()
    del sample["md"]
    with pytest.raises(ValueError, match="missing key 'md'"):
        shm.write_row(views, layout.structure, 0, sample)
    sample = _space().sample()
    sample["rgb"] = np.zeros((2, 2, 3), np.uint8)
    with pytest.raises(ValueError, match=r"\(2, 2, 3\) does not fit .*\(4, 5, 3\)"):
        shm.write_row(views, layout.structure, 0, sample)

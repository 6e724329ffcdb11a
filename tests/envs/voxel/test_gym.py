"""Gymnasium front ends: env checkers, reproducible seeds, same-step autoreset, wrappers."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs import spaces, wrappers
from tests.envs.voxel import helpers as H

SMALL = dict(
    size_x=H.STATIC.size_x, size_y=H.STATIC.size_y, size_z=H.STATIC.size_z,
    sea_level=H.STATIC.sea_level, num_trees=H.STATIC.num_trees, render=False,
    world_pool_size=H.STATIC.world_pool_size, max_mobs=H.STATIC.max_mobs,
    max_initial_mobs=H.STATIC.max_initial_mobs,
)  # fmt: skip


@pytest.fixture(scope="module")
def env():
    return envs.make("hunt a cow", **SMALL)


def test_env_passes_gymnasium_checker(env):
    check_env(env, skip_render_check=True)


def test_flat_dict_and_dense_reward_are_what_sb3_takes(env):
    """SB3's MultiInputPolicy takes one level of Boxes and its checker a Python float reward:
    FlatDict and DenseReward give both, and Gymnasium's checker passes the pair."""
    flat = wrappers.FlatDict(wrappers.DenseReward(env))
    check_env(flat, skip_render_check=True)
    for name, box in flat.observation_space.spaces.items():
        assert isinstance(box, gym.spaces.Box) and len(box.shape) >= 1, name
    assert flat.observation_space["life_stats/food"].dtype == np.float32
    obs, _ = flat.reset(seed=0)
    assert flat.observation_space.contains(obs)
    _, reward, *_ = flat.step(flat.action_space.sample())
    assert type(reward) is float
    some = wrappers.FlatDict(env, keys=("location_stats",))
    assert all(k.startswith("location_stats/") for k in some.observation_space.spaces)
    with pytest.raises(ValueError, match="no observation keys"):
        wrappers.FlatDict(env, keys=("colour",))


def test_reset_seed_reproducible_and_steps_match(env):
    obs1, _ = env.reset(seed=11)
    traj1 = [env.step(a) for a in H.act(5, move=1, yaw=13)]
    obs2, _ = env.reset(seed=11)
    traj2 = [env.step(a) for a in H.act(5, move=1, yaw=13)]
    assert gym.utils.env_checker.data_equivalence(obs1, obs2)
    for t1, t2 in zip(traj1, traj2):
        assert gym.utils.env_checker.data_equivalence(t1[0], t2[0])
        assert t1[1:4] == t2[1:4]
    obs3, _ = env.reset(seed=12)
    assert not np.array_equal(obs3["location_stats"]["pos"], obs1["location_stats"]["pos"])
    _, _, _, _, info = traj1[-1]
    assert set(info) >= {"success", "dense_reward", "signals"}
    assert info["signals"]["inventory"].shape == (spaces.NUM_ITEMS,)


def test_bad_actions_and_kwargs_raise(env):
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="unknown keyword"):
        envs.make("hunt a cow", colour="blue")
    with pytest.raises(ValueError, match="backend"):
        envs.make("hunt a cow", backend="bedrock")
    with pytest.raises(KeyError):
        envs.make("fly to the moon with a rocket made of dirt blocks")


def _with(component: int, value, dtype=np.int64):
    a = spaces.NOOP_ACTION.astype(dtype)
    a[component] = value
    return a


# (action, error, message): each was clipped into another valid action before.
BAD_ACTIONS = [
    (_with(4, -1), ValueError, r"'yaw' \(component 4\) must be in \[0, 24\], got -1"),
    (_with(3, 99), ValueError, r"'pitch' \(component 3\) must be in \[0, 24\], got 99"),
    (_with(7, 2**40), ValueError, r"'slot_arg' \(component 7\) must be in \[0, 35\], got 1099511627776"),
    (_with(3, np.nan, np.float64), TypeError, r"integers.*'pitch' \(component 3\).*\[0, 24\].*nan"),
    (_with(0, 0.9, np.float64), TypeError, r"integers.*'move' \(component 0\).*\[0, 2\].*0\.9"),
]  # fmt: skip


@pytest.mark.parametrize("action, error, match", BAD_ACTIONS)
def test_invalid_actions_are_refused_not_clipped(env, action, error, match):
    assert not env.action_space.contains(action)
    env.reset(seed=0)
    before = env.state
    with pytest.raises(error, match=match):
        env.step(action)
    assert env.state is before  # nothing was stepped


def test_vector_env_refuses_invalid_actions_and_can_skip_the_check():
    vec = envs.make_vector("hunt a cow", 2, **SMALL)
    vec.reset(seed=0)
    for action, error, match in BAD_ACTIONS:
        actions = np.stack([spaces.NOOP_ACTION.astype(action.dtype), action])
        with pytest.raises(error, match=match.replace("must be", "of env 1 must be")
                           if error is ValueError else match):  # fmt: skip
            vec.step(actions)
    trusted = envs.make_vector("hunt a cow", 2, validate_actions=False, **SMALL)
    trusted.reset(seed=0)
    trusted.step(np.stack([spaces.NOOP_ACTION, _with(4, 99)]))  # clipped inside jit, no error


@pytest.mark.parametrize("seed", [-1, 2**32, 99999999999999999999])
def test_out_of_range_seeds_are_refused(seed):
    with pytest.raises(ValueError, match=r"seed must be in \[0, 4294967295\]"):
        envs.make("hunt a cow", seed=seed, **SMALL)
    with pytest.raises(ValueError, match="seed must be in"):
        envs.make_vector("hunt a cow", 2, seed=seed, **SMALL)


def test_reset_refuses_a_negative_seed(env):
    with pytest.raises(ValueError, match="seed must be in"):
        env.reset(seed=-5)


def test_compact_actions_wrapper(env):
    w = wrappers.CompactActions(env)
    assert w.action_space == gym.spaces.Discrete(89)
    w.reset(seed=0)
    yaw0 = float(env.state.player.yaw)
    w.step(spaces.COMPACT_NAMES.index("camera_pitch+0_yaw+30"))
    assert float(env.state.player.yaw) == pytest.approx(yaw0 + 30.0)
    with pytest.raises(ValueError, match="compact"):
        wrappers.compact_to_multidiscrete(89)
    dense = wrappers.DenseReward(env)
    dense.reset(seed=0)
    _, r, _, _, info = dense.step(spaces.NOOP_ACTION)
    assert r == pytest.approx(float(info["dense_reward"]))  # no task reward on a no-op


def test_vector_env_same_step_autoreset():
    vec = envs.make_vector("hunt a cow", 3, max_steps=4, **SMALL)
    assert vec.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    obs, _ = vec.reset(seed=5)
    assert vec.observation_space.contains(obs)
    obs_again, _ = vec.reset(seed=5)
    assert gym.utils.env_checker.data_equivalence(obs, obs_again)
    noop = np.tile(spaces.NOOP_ACTION, (3, 1))
    for _ in range(4):
        obs, rew, term, trunc, info = vec.step(noop)
        assert rew.shape == (3,) and term.shape == (3,)
    assert trunc.all()  # time limit of 4 steps
    assert info["_final_obs"].all()
    assert vec.single_observation_space.contains(
        {k: v[0] if not isinstance(v, dict) else {kk: vv[0] for kk, vv in v.items()}
         for k, v in info["final_obs"].items()}
    )  # fmt: skip
    # The returned observation is already the next episode's first one: its step counter restarts.
    assert (np.asarray(vec.states.steps) == 0).all()
    obs, *_ = vec.step(noop)
    assert (np.asarray(vec.states.steps) == 1).all()
    wrapped = wrappers.compact(vec)
    wrapped.step(np.full(3, spaces.COMPACT_NOOP))


class _RGBEnv(gym.Env):
    observation_space = gym.spaces.Dict({"rgb": gym.spaces.Box(0, 255, (4, 6, 3), np.uint8)})
    action_space = gym.spaces.Discrete(1)

    def reset(self, *, seed=None, options=None):
        return {"rgb": np.arange(72, dtype=np.uint8).reshape(4, 6, 3)}, {}

    def step(self, action):
        return self.reset()[0], 0.0, False, False, {}


def test_channels_first_matches_minedojo_layout():
    env = wrappers.ChannelsFirst(_RGBEnv())
    obs, _ = env.reset()
    assert env.observation_space["rgb"].shape == (3, 4, 6)
    ref = np.arange(72, dtype=np.uint8).reshape(4, 6, 3)
    np.testing.assert_array_equal(obs["rgb"], ref.transpose(2, 0, 1))
    with pytest.raises(ValueError, match="rgb"):
        wrappers.ChannelsFirst(envs.make("hunt a cow", **SMALL))

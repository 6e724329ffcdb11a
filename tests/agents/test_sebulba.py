"""The host-stepped driver on a Gymnasium CartPole vector env (NEXT_STEP autoreset)."""

import dataclasses

import gymnasium as gym
import jax
import numpy as np
import pytest

from agents import networks
from tests.agents.test_learner import TINY, host_driver


def test_host_driver_masks_next_step_resets_and_learns_something():
    cfg = dataclasses.replace(TINY, num_envs=4, num_steps=32, si_every=1, num_minibatches=2)
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    driver = host_driver(
        cfg, env, networks.MLPActorCritic((2,)), action_dims=(2,),
        policy_obs=lambda o: {"state": o}, to_env_action=lambda a: a[:, 0],
        success_fn=lambda info, n: np.zeros(n, bool),
    )  # fmt: skip
    runner = driver.init(jax.random.PRNGKey(0))
    p0 = jax.device_get(runner.params)
    runner, traj, stats = driver.rollout(runner)
    done = np.asarray(traj.done)
    mask = np.asarray(traj.mask)
    # every episode end (but one at the last step) is followed by exactly one ignored step
    assert stats["episodes"][0] == done.sum() > 0
    np.testing.assert_array_equal(mask[1:] == 0, done[:-1])
    assert (np.asarray(traj.reward)[mask == 0] == 0).all()
    # ignored steps do not count toward episode lengths: CartPole returns equal lengths
    np.testing.assert_allclose(stats["return_sum"], stats["length_sum"])
    runner, m = driver.learner.update(runner, traj)
    runner, msi = driver.learner.si_phase(runner)
    assert int(msi["si_size"]) > 0
    moved = [
        not np.allclose(a, b) for a, b in zip(jax.tree.leaves(p0), jax.tree.leaves(runner.params))
    ]
    assert any(moved)
    runner, metrics = driver.iteration(runner)
    assert np.isfinite(metrics["pg_loss"]) and int(runner.update_step) == 2


def test_host_driver_refuses_a_vector_env_of_another_size():
    cfg = dataclasses.replace(TINY, num_envs=4)
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    try:
        with pytest.raises(ValueError, match=r"vec_env has 2 envs but cfg.num_envs=4"):
            host_driver(cfg, env, networks.MLPActorCritic((2,)), action_dims=(2,),
                               policy_obs=lambda o: {"state": o})  # fmt: skip
    finally:
        env.close()


def test_host_driver_recurrent_rollout_log_probs_replay_with_next_step_resets():
    """The host driver's recurrent carry: an episode's first real step (the one after NEXT_STEP's
    ignored reset step) opens with a zeroed carry, and replaying the stored carries and starts
    gives the log-probs the rollout acted with."""
    from agents import learner as lrn
    from agents import losses

    cfg = dataclasses.replace(TINY, num_envs=4, num_steps=32, num_minibatches=2, core_size=8)
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    net = networks.MineAgent(action_dims=(2,), core_size=8, fusion_dim=16, feat_hidden=16,
                             actor_hidden=16, actor_depth=1, critic_hidden=16, critic_depth=1)  # fmt: skip
    driver = host_driver(
        cfg, env, net, action_dims=(2,), policy_obs=lambda o: {"state": o},
        to_env_action=lambda a: a[:, 0], success_fn=lambda info, n: np.zeros(n, bool),
    )  # fmt: skip
    runner = driver.init(jax.random.PRNGKey(0))
    for _ in range(2):  # the second rollout starts from a carried core
        params = runner.params
        runner, traj, _ = driver.rollout(runner)
    done, mask, start = (np.asarray(x) for x in (traj.done, traj.mask, traj.start))
    assert done[:-1].any()
    np.testing.assert_array_equal(start[1:], done[:-1] | (mask[:-1] == 0))
    logits, _, _ = lrn.apply_policy(net, params, traj.obs, traj.prev_action, traj.core[0],
                                    traj.start)  # fmt: skip
    replayed = losses.log_prob(logits, traj.action, (2,))
    np.testing.assert_allclose(np.asarray(replayed), np.asarray(traj.logp), atol=1e-5)
    runner, m = driver.iteration(runner)
    assert np.isfinite(m["pg_loss"])
    env.close()

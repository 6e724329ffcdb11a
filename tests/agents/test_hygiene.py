"""Learning hygiene: return normalisation, a learning rate that ends above zero, the critic's
time-left input and the success-bonus rule."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from agents import adapters, build, losses, ppo
from agents import learner as lrn
from agents.networks import MineAgent
from tests.agents.test_learner import TINY, _synthetic_batch


def test_return_stats_merge_equals_one_pass_over_every_return():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 5.0, size=(7, 4)).astype(np.float32) for _ in range(3)]
    masks = [rng.random((7, 4)) < 0.8 for _ in range(3)]
    stats = jnp.asarray([0.0, 1.0, 0.0], jnp.float32)  # no prior: exactly the data's moments
    for b, m in zip(batches, masks, strict=True):
        stats = jax.jit(losses.update_return_stats)(stats, jnp.asarray(b), jnp.asarray(m))
    seen = np.concatenate([b[m] for b, m in zip(batches, masks, strict=True)])
    np.testing.assert_allclose(float(stats[0]), seen.mean(), rtol=1e-5)
    np.testing.assert_allclose(float(stats[1]), seen.var(), rtol=1e-4)
    assert float(stats[2]) == len(seen)


def _value_loss(norm_returns: bool, scale: float) -> float:
    cfg = dataclasses.replace(TINY, norm_returns=norm_returns, num_devices=1)
    L = build.build(cfg).learner
    runner = L.init_sharded(jax.random.PRNGKey(3))
    batch = _synthetic_batch(cfg.num_steps, cfg.num_envs)
    batch = batch.replace(reward=batch.reward * scale, value=np.zeros_like(batch.value))
    _, m = L.update(runner, batch)
    return float(m["v_loss"])


def test_normalised_returns_make_the_value_loss_independent_of_the_reward_scale():
    """A reward 100x larger gives the critic the same loss with --norm-returns, and a loss
    ~10^4 larger without it (what MineCLIP-scale returns did to the shared trunk)."""
    assert _value_loss(True, 100.0) == pytest.approx(_value_loss(True, 1.0), rel=1e-3)
    assert _value_loss(False, 100.0) > 1e3 * _value_loss(False, 1.0)


def test_learning_rate_anneals_to_its_final_fraction():
    params = {"w": jnp.ones((3,))}
    grads = {"w": jnp.asarray([0.1, -0.2, 0.3])}
    opt = lrn.adam_init(params)
    opt = opt._replace(count=jnp.asarray(10, jnp.int32))  # the schedule's end (10 steps)
    ours, _ = lrn.adam_step(grads, opt, params, 1e-2, 1e3, anneal_steps=10, final_frac=0.25)
    # reference: optax Adam at 0.25 * lr from the same moments
    ref_opt = optax.adam(0.25e-2, eps=1e-5)
    updates, _ = ref_opt.update(grads, (opt, optax.EmptyState()), params)
    np.testing.assert_allclose(ours["w"], optax.apply_updates(params, updates)["w"], rtol=1e-6)
    zero, _ = lrn.adam_step(grads, opt, params, 1e-2, 1e3, anneal_steps=10, final_frac=0.0)
    np.testing.assert_array_equal(zero["w"], params["w"])  # the paper's schedule: stopped


def test_critic_time_left_feeds_the_critic_only():
    net = MineAgent(action_dims=(3,), critic_time_left=True, fusion_dim=16, feat_hidden=8,
                    actor_hidden=8, actor_depth=1, critic_hidden=8, critic_depth=1)  # fmt: skip
    obs = {"compass": jnp.ones((2, 4)), "time_left": jnp.asarray([[1.0], [0.0]])}
    params = net.init(jax.random.key(0), obs)
    logits, value = net.apply(params, obs)
    same = {**obs, "time_left": jnp.asarray([[1.0], [1.0]])}
    logits2, value2 = net.apply(params, same)
    np.testing.assert_array_equal(logits, logits2)
    assert float(value[1]) != float(value2[1]) and float(value[0]) == float(value2[0])
    # a deployed actor without the input: zeros, the logits unchanged
    np.testing.assert_array_equal(net.apply(params, {"compass": obs["compass"]})[0], logits)


def test_time_left_observation_counts_down_the_episode():
    from envs.voxel import env as E

    cfg = ppo.PPOConfig(critic_time_left=True, render=False, world_size=16, world_pool=2,
                        max_episode_steps=4, num_envs=4, progress=False)  # fmt: skip
    env = adapters.voxel_env(cfg, ("hunt a cow",))
    one = jax.tree.map(lambda x: x[0], env.params)
    obs, state = env.reset(jax.random.key(0), one, env.static)
    lefts = [float(obs["time_left"][0])]
    step = jax.jit(env.step, static_argnums=4)
    for i in range(4):
        noop = jnp.asarray(E.spaces.NOOP_ACTION)
        obs, state, _, term, trunc, _ = step(jax.random.key(i), state, noop, one, env.static)
        lefts.append(float(obs["time_left"][0]))
    assert lefts[:4] == [1.0, 0.75, 0.5, 0.25] and bool(trunc | term)
    assert lefts[4] == 1.0  # the auto-reset's new episode
    assert adapters.voxel_policy_obs(obs)["time_left"].shape == (1,)


@pytest.mark.parametrize(
    "flags, bonus",
    [
        (dict(reward="manual"), (0.1 + 1.0) / 0.01),  # nav_scale * 1 block + attack_bonus
        (dict(reward="mineclip", mineclip_ckpt="mini"), 1.0 / 0.01),
        # Peak pays an episode below 1 in all: the floor of 10 already outbids it
        (dict(reward="mineclip", mineclip_ckpt="mini", mineclip_reward="peak"), 10.0),
        (dict(reward="sparse"), 10.0),
        (dict(reward="manual", gamma=0.9), (0.1 + 1.0) / 0.1),
        (dict(reward="manual", success_bonus=3.0), 3.0),
    ],
)
def test_success_bonus_rule_outbids_any_stream(flags, bonus):
    cfg = ppo.PPOConfig(task="hunt a cow", **flags)
    specs = adapters.task_specs(("hunt a cow",))
    got = adapters.success_bonus(cfg, specs)
    assert got == pytest.approx(max(bonus, 10.0) if "success_bonus" not in flags else bonus)
    if "success_bonus" not in flags:  # the rule: more than the discounted stream forgone
        r_max = adapters.reward_step_bound(cfg, specs)
        if flags.get("mineclip_reward") == "peak":  # the episode's whole stream: below 1
            assert got > 1.0 and got < r_max * cfg.gamma / (1 - cfg.gamma)
        else:
            assert got >= r_max * cfg.gamma / (1 - cfg.gamma)


def test_paper_preset_keeps_the_papers_recipe():
    cfg = ppo.apply_preset(ppo.PPOConfig(preset="paper", norm_returns=True, core_size=64))
    assert (cfg.core_size, cfg.norm_returns, cfg.lr_final_frac, cfg.success_bonus) == (
        0, False, 0.0, 10.0)  # fmt: skip

"""The compact-action prior: group masses and the initial policy it gives."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import adapters, networks, ppo
from envs import spaces


def _groups():
    a = spaces.COMPACT_ACTIONS  # MultiDiscrete rows: [3] pitch bin, [5] functional action
    cam = np.arange(len(a)) < 81
    level = cam & (a[:, 3] == spaces.CAMERA_NOOP_BIN)
    fun = np.isin(a[:, 5], [spaces.FN_USE, spaces.FN_ATTACK]) & ~cam
    return level, cam & ~level, ~cam & ~fun, fun


def test_balanced_prior_gives_each_group_a_quarter():
    p = np.exp(np.asarray(adapters.compact_action_prior("balanced")))
    assert p.shape == (spaces.NUM_COMPACT_ACTIONS,)
    np.testing.assert_allclose(p.sum(), 1.0, rtol=1e-6)
    groups = _groups()
    assert tuple(int(g.sum()) for g in groups) == (9, 72, 6, 2)
    for g in groups:
        np.testing.assert_allclose(p[g].sum(), 1 / 4, rtol=1e-6)
        np.testing.assert_allclose(p[g], p[g][0])  # uniform inside a group
    # forward: 1/24 instead of 1/89 under the uniform policy; attack 1/8 instead of 1/89
    np.testing.assert_allclose(p[spaces.COMPACT_NAMES.index("forward")], 1 / 24, rtol=1e-6)
    np.testing.assert_allclose(p[spaces.COMPACT_NAMES.index("attack")], 1 / 8, rtol=1e-6)


def test_uniform_prior_is_none_and_unknown_kind_is_an_error():
    assert adapters.compact_action_prior("uniform") is None
    with pytest.raises(ppo.ConfigError, match="action-prior"):
        adapters.compact_action_prior("greedy")


@pytest.mark.parametrize("use_jit", [False, True])
def test_fresh_agent_policy_is_softmax_of_prior(use_jit):
    prior = adapters.compact_action_prior("balanced")
    net = networks.MineAgent(action_dims=(89,), action_prior=(prior,), cnn_channels=(4,),
                             image_dim=16, fusion_dim=16, feat_hidden=8, actor_hidden=8,
                             actor_depth=1, critic_hidden=8)  # fmt: skip
    obs = {"compass": jax.random.normal(jax.random.PRNGKey(1), (5, 4))}
    params = net.init(jax.random.PRNGKey(0), obs)
    apply = jax.jit(net.apply) if use_jit else net.apply
    logits, value = apply(params, obs)
    assert logits.shape == (5, 89) and value.shape == (5,)
    probs = np.asarray(jax.nn.softmax(logits, -1))
    want = np.exp(np.asarray(prior))
    # gain-0.01 output layer: logits = prior + a small perturbation
    np.testing.assert_allclose(probs, np.broadcast_to(want, probs.shape), rtol=0.1)
    uniform = networks.MineAgent(action_dims=(89,), cnn_channels=(4,), image_dim=16,
                                 fusion_dim=16, feat_hidden=8, actor_hidden=8, actor_depth=1,
                                 critic_hidden=8)  # fmt: skip
    lu, _ = uniform.apply(uniform.init(jax.random.PRNGKey(0), obs), obs)
    np.testing.assert_allclose(jax.nn.softmax(lu, -1), jnp.full((5, 89), 1 / 89), rtol=0.1)


@pytest.mark.parametrize("use_jit", [False, True])
def test_entropy_regularizer_is_kl_to_the_prior(use_jit):
    from agents import losses

    dims = (3, 2)
    logits = jax.random.normal(jax.random.PRNGKey(0), (4, 5))
    prior = jnp.log(jnp.array([0.5, 0.25, 0.25, 0.9, 0.1]))
    f = (
        jax.jit(losses.entropy_regularizer, static_argnums=1)
        if use_jit
        else (losses.entropy_regularizer)
    )
    # NumPy: sum over components of sum_a pi(a) (log pi(a) - log p0(a))
    want = np.zeros(4)
    for lo, hi in ((0, 3), (3, 5)):
        lg = np.asarray(logits[:, lo:hi], np.float64)
        logp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
        want += (np.exp(logp) * (logp - np.asarray(prior[lo:hi]))).sum(-1)
    np.testing.assert_allclose(f(logits, dims, prior), want, rtol=1e-5)
    # No prior: minus the entropy. Uniform prior: log n - H, i.e. the same gradient.
    np.testing.assert_allclose(f(logits, dims, None), -losses.entropy(logits, dims), rtol=1e-6)
    g_plain = jax.grad(lambda x: f(x, dims, None).sum())(logits)
    g_unif = jax.grad(lambda x: f(x, dims, jnp.zeros(5)).sum())(logits)
    np.testing.assert_allclose(g_unif, g_plain, atol=1e-6)

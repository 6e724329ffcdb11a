"""Asymmetric critic and auxiliary target prediction: the actor never reads the simulator's
features, the critic does; the auxiliary head is trained through the learner's loss."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import adapters, build, checkpoints, networks, ppo
from envs import voxel
from tests.agents.test_cli_voxel import ARGS, reset_rows

P = voxel.NUM_TARGET_FEATURES


def _net(**kw):
    return networks.MineAgent(action_dims=(89,), cnn_channels=(4,), image_dim=16, fusion_dim=16,
                              feat_hidden=8, actor_hidden=8, actor_depth=1, critic_hidden=8,
                              **kw)  # fmt: skip


def _obs(privileged_seed=None, n=5):
    obs = {"compass": jax.random.normal(jax.random.PRNGKey(1), (n, 4))}
    if privileged_seed is not None:
        obs["privileged"] = jax.random.normal(jax.random.PRNGKey(privileged_seed), (n, P))
    return obs


@pytest.mark.parametrize("use_jit", [False, True])
def test_privileged_features_reach_the_critic_but_not_the_actor(use_jit):
    net = _net(privileged_critic=True, privileged_size=P)
    params = net.init(jax.random.PRNGKey(0), _obs(2))
    apply = jax.jit(net.apply) if use_jit else net.apply
    logits_a, value_a = apply(params, _obs(2))
    logits_b, value_b = apply(params, _obs(3))
    np.testing.assert_array_equal(np.asarray(logits_a), np.asarray(logits_b))
    assert not np.allclose(np.asarray(value_a), np.asarray(value_b))
    # without the flag the same input is ignored by the critic too
    plain = _net()
    pp = plain.init(jax.random.PRNGKey(0), _obs())
    np.testing.assert_array_equal(
        np.asarray(plain.apply(pp, _obs(2))[1]), np.asarray(plain.apply(pp, _obs(3))[1])
    )


def test_privileged_critic_without_the_input_is_an_error():
    net = _net(privileged_critic=True, privileged_size=P)
    with pytest.raises(ValueError, match="privileged"):
        net.init(jax.random.PRNGKey(0), _obs())


@pytest.mark.parametrize("use_jit", [False, True])
def test_aux_head_is_sown_only_when_asked(use_jit):
    net = _net(aux_dim=P)
    params = net.init(jax.random.PRNGKey(0), _obs())

    def f(p, o):
        return net.apply(p, o, mutable=["intermediates"])

    (logits, value), inter = (jax.jit(f) if use_jit else f)(params, _obs())
    (pred,) = inter["intermediates"]["aux_pred"]
    assert pred.shape == (5, P) and logits.shape == (5, 89) and value.shape == (5,)
    # the sown head does not change the outputs, and plain apply does not return it
    plain_logits, _ = net.apply(params, _obs())
    np.testing.assert_array_equal(np.asarray(plain_logits), np.asarray(logits))
    none = _net()
    _, inter0 = none.apply(none.init(jax.random.PRNGKey(0), _obs()), _obs(),
                           mutable=["intermediates"])  # fmt: skip
    assert "aux_pred" not in inter0.get("intermediates", {})


def test_cli_trains_with_privileged_critic_and_aux_loss_and_acts_without_them(tmp_path, capsys):
    out = tmp_path / "run"
    ppo.main([*ARGS, "--privileged-critic", "--aux-coef", "0.5", "--out", str(out)])
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(np.isfinite(r["aux_loss"]) and r["aux_loss"] > 0 for r in rows if "pg_loss" in r)
    policy_fn, info = checkpoints.load_policy(out)
    cfg = ppo.config_from_json(info["config"])
    assert cfg.privileged_critic and cfg.aux_coef == 0.5
    # a deployed policy gets plain env observations (no target features) and still acts
    built = build.build(dataclasses.replace(cfg, privileged_critic=False, aux_coef=0.0))
    env = built.env
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    one = jax.tree.map(lambda x: x[:2], env.params)
    obs, _ = reset_rows(env, keys, one)
    assert "target_features" not in obs
    act = policy_fn(jax.random.key(1), jax.device_get(obs), deterministic=True)
    assert act.shape == (2, 8) and act.dtype == np.int32
    # ... the same actions as with the features present (the actor never reads them)
    trained = build.build(cfg).env
    obs_tf, _ = reset_rows(trained, keys, one)
    assert obs_tf["target_features"].shape == (2, P)
    act_tf = policy_fn(jax.random.key(1), jax.device_get(obs_tf), deterministic=True)
    np.testing.assert_array_equal(act, act_tf)


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(aux_coef=-1.0), "--aux-coef must be >= 0"),
        (dict(task="cartpole", privileged_critic=True), "cartpole has no task target"),
        (dict(backend="process", privileged_critic=True), "does not expose"),
        (dict(backend="process", aux_coef=1.0), "does not expose"),
    ],
)
def test_bad_privileged_flags_give_clear_errors(changes, match, tmp_path):
    cfg = dataclasses.replace(ppo.PPOConfig(), out=str(tmp_path / "run"), **changes)
    with pytest.raises(ppo.ConfigError, match=match):
        ppo.validate(cfg)


def test_target_features_follow_the_auto_reset():
    cfg = dataclasses.replace(ppo.PPOConfig(), privileged_critic=True, world_size=16,
                              world_pool=1, render=False, num_envs=4, num_minibatches=2,
                              max_episode_steps=2)  # fmt: skip
    env = build.build(cfg).env
    one = jax.tree.map(lambda x: x[:1], env.params)
    obs, state = reset_rows(env, jax.random.split(jax.random.PRNGKey(0), 1), one)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, 0, None)), static_argnums=4)
    for t in range(3):  # the second step ends the 2-tick episode and resets
        action = jnp.zeros((1, 8), jnp.int32).at[:, 3:5].set(12)
        obs, state, _, term, trunc, _ = step(jax.random.split(jax.random.PRNGKey(t), 1), state,
                                             action, one, env.static)  # fmt: skip
        assert bool(term[0] | trunc[0]) == (t == 1)
        want = jax.vmap(voxel.target_features, in_axes=(0, 0, None))(state, one, env.static)
        # same state -> same features (to float rounding: XLA fuses the two programs differently)
        np.testing.assert_allclose(obs["target_features"], want, rtol=1e-6, atol=1e-6)


def test_aux_targets_count_position_and_distance_only_in_view():
    names = voxel.TARGET_FEATURES
    feats = np.zeros((2, P), np.float32)
    feats[:, names.index("distance")] = [0.25, 0.5]
    feats[0, names.index("in_view")] = 1.0
    feats[0, names.index("screen_x")] = -0.4
    feats[0, names.index("screen_y")] = 0.2
    target, mask = adapters.aux_targets(jnp.asarray(feats))
    assert adapters.AUX_FEATURES == ("in_view", "screen_x", "screen_y", "distance")
    np.testing.assert_allclose(target, [[1.0, -0.4, 0.2, 0.25], [0.0, 0.0, 0.0, 0.5]])
    np.testing.assert_array_equal(mask, [[1, 1, 1, 1], [1, 0, 0, 0]])


def test_privileged_policy_reads_the_features_and_cannot_act_without_them():
    net = _net(privileged_actor=True, privileged_size=P)
    params = net.init(jax.random.PRNGKey(0), _obs(2))
    logits_a, _ = net.apply(params, _obs(2))
    logits_b, _ = net.apply(params, _obs(3))
    assert not np.allclose(np.asarray(logits_a), np.asarray(logits_b))
    with pytest.raises(ValueError, match="privileged_actor"):
        net.apply(params, _obs())
    cfg = dataclasses.replace(ppo.PPOConfig(), privileged_policy=True, world_size=16, world_pool=1,
                              render=False, num_envs=4, num_minibatches=2)  # fmt: skip
    learner = build.build(cfg).learner
    obs = {"compass": jnp.zeros((2, 4)), "task_id": jnp.zeros(2, jnp.int32)}
    params = learner.init_params(jax.random.PRNGKey(0), {**obs, "privileged": jnp.zeros((2, P))})
    with pytest.raises(ValueError, match="--privileged-policy"):
        learner.policy_logits(params, obs, jnp.zeros((2, 1), jnp.int32))

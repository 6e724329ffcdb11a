"""Recurrent PPO: the update replays the rollout's log-probs, the carry is reset at episode
starts and stored with SI trajectories, and a recurrent policy learns a memory task that a
memoryless one cannot."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import learner as lrn
from agents import losses, testing
from agents.networks import MineAgent

N, T = 8, 12  # T is not a multiple of the episode length: episodes cross rollout segments
CUE = testing.CueStatic(length=5)


def _cue_env(n: int = N) -> lrn.JaxEnv:
    return lrn.JaxEnv(
        reset=testing.cue_reset, step=testing.cue_step_autoreset, step_no_reset=testing.cue_step,
        params=jnp.zeros((n,)), static=CUE, action_dims=(2,), to_env_action=lambda a: a,
        policy_obs=lambda o: {"compass": o["state"]}, reward_fn=lambda r, info: r,
        task_ids=np.zeros(n, np.int32),
    )  # fmt: skip


def _learner(core_size: int, num_updates: int = 1, **hp) -> lrn.Learner:
    net = MineAgent(action_dims=(2,), core_size=core_size, fusion_dim=32, feat_hidden=16,
                    actor_hidden=32, actor_depth=1, critic_hidden=32, critic_depth=1)  # fmt: skip
    cfg = lrn.LearnerConfig(num_envs=N, num_steps=T, num_updates=num_updates, update_epochs=4,
                            num_minibatches=2, si_capacity=4, si_max_len=8)  # fmt: skip
    defaults = dict(lr=3e-3, si_lr=1e-3, gamma=0.9, gae_lambda=0.95, clip_eps=0.2, vf_clip=0.0,
                    ent_coef=0.01, vf_coef=0.5, smooth_coef=0.0, max_grad_norm=0.5,
                    aux_coef=0.0, si_unsuccessful_weight=0.5, si_min_return=-1.0)  # fmt: skip
    hps = lrn.HyperParams(**{k: jnp.float32(v) for k, v in {**defaults, **hp}.items()})
    return lrn.Learner(cfg, _cue_env(), net, lrn.make_mesh(1), hp=hps)


def _stepwise_logp(L: lrn.Learner, params, traj: lrn.Transition):
    """The reference: one network call per step, the carry zeroed by hand at episode starts."""
    core, out = traj.core[0], []
    for t in range(traj.action.shape[0]):
        core = jnp.where(traj.start[t][:, None], 0.0, core)
        obs = jax.tree.map(lambda x, t=t: x[t][None], traj.obs)
        logits, _, core = L.network.apply({"params": params}, obs, traj.prev_action[t][None],
                                          core, jnp.zeros((1, N), bool))  # fmt: skip
        out.append(losses.log_prob(logits[0], traj.action[t], L.action_dims))
    return jnp.stack(out)


@pytest.mark.parametrize("jit", [False, True])
def test_update_replays_the_rollouts_log_probs(jit):
    L = _learner(core_size=16)
    runner = L.init(jax.random.key(0))
    rollout = jax.jit(L.rollout) if jit else L.rollout
    # the second segment starts from a carried (non-zero) core in the middle of episodes
    for _ in range(2):
        params = runner.params
        runner, traj, _ = rollout(runner, L.consts)
    assert bool(jnp.any(traj.start)) and not bool(jnp.all(traj.start[0]))
    assert float(jnp.abs(traj.core[0]).max()) > 0
    replay = jax.jit(lrn.apply_policy, static_argnums=0) if jit else lrn.apply_policy
    logits, _, _ = replay(L.network, params, traj.obs, traj.prev_action, traj.core[0], traj.start)
    replayed = losses.log_prob(logits, traj.action, L.action_dims)
    np.testing.assert_allclose(np.asarray(replayed), np.asarray(traj.logp), atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(_stepwise_logp(L, params, traj)), np.asarray(traj.logp), atol=1e-5
    )
    # without the episode-start resets the replay differs: the flags carry information
    logits, _, _ = lrn.apply_policy(L.network, params, traj.obs, traj.prev_action, traj.core[0],
                                    jnp.zeros_like(traj.start))  # fmt: skip
    wrong = losses.log_prob(logits, traj.action, L.action_dims)
    assert float(jnp.abs(wrong - traj.logp).max()) > 1e-4


def test_si_buffer_keeps_the_carry_each_step_was_acted_on():
    L = _learner(core_size=16)
    runner = L.init(jax.random.key(1))
    runner, traj, _ = L.rollout(runner, L.consts)
    buf = runner.si_buffer
    assert bool(jnp.any(buf.valid))
    # every stored episode is a whole cue episode (5 steps) opening with a zeroed carry, and
    # each of its carries is one the rollout acted on (after the start reset)
    acted = np.asarray(jnp.where(traj.start[..., None], 0.0, traj.core)).reshape(-1, 16)
    for i in np.flatnonzero(np.asarray(buf.valid)):
        assert int(buf.length[i]) == CUE.length
        np.testing.assert_array_equal(np.asarray(buf.core[i, 0]), 0.0)
        for row in np.asarray(buf.core[i, 1 : CUE.length]):
            assert np.min(np.abs(acted - row).max(axis=1)) == 0.0


def _train_success(core_size: int, updates: int) -> float:
    L = _learner(core_size=core_size, num_updates=updates)
    runner = L.init(jax.random.key(2))
    it = jax.jit(L._iteration)
    rates = []
    for _ in range(updates):
        runner, m = it(runner, L.consts, L.hp)
        rates.append(float(m["success_sum"].sum()) / max(float(m["episodes"].sum()), 1.0))
    return float(np.mean(rates[-10:]))


def test_recurrent_policy_learns_what_a_memoryless_one_cannot():
    """The cue is shown at the first of 5 steps and must be answered at the last: the memoryless
    policy stays near chance (50%), the recurrent one learns it."""
    memoryless = _train_success(core_size=0, updates=120)
    recurrent = _train_success(core_size=16, updates=120)
    assert memoryless < 0.7, memoryless
    assert recurrent > 0.9, recurrent


def test_recurrent_network_refuses_a_call_without_its_carry():
    L = _learner(core_size=8)
    obs = {"compass": jnp.zeros((N, 2))}
    with pytest.raises(ValueError, match="recurrent"):
        L.apply(L.init_params(jax.random.key(0), obs), obs, jnp.zeros((N, 1), jnp.int32))


def test_memoryless_config_is_unchanged_by_the_carry():
    """A memoryless network passes its one-unit carry through untouched."""
    L = _learner(core_size=0)
    runner = L.init(jax.random.key(3))
    runner, traj, _ = L.rollout(runner, L.consts)
    assert traj.core.shape == (T, N, 1)
    np.testing.assert_array_equal(np.asarray(traj.core), 0.0)


def test_patch_encoder_equals_strided_convolutions():
    """The matmul encoder is two non-overlapping convolutions (4x4/4, 2x2/2) and a Dense: the
    same numbers as flax's nn.Conv with those kernels and its weights."""
    import flax.linen as nn

    from agents.networks import PatchEncoder

    enc = PatchEncoder(channels=(5, 7), out=9)
    x = jax.random.randint(jax.random.key(0), (2, 3, 17, 26, 3), 0, 256).astype(jnp.uint8)
    params = enc.init(jax.random.key(1), x)["params"]
    got = enc.apply({"params": params}, x)
    assert got.shape == (2, 3, 9)

    def reference(x):
        h = x[:, :16, :24].astype(jnp.float32) / 255.0  # cropped to multiples of 8
        for i, (c, p) in enumerate(zip((5, 7), (4, 2), strict=True)):
            d = params[f"Dense_{i}"]
            conv = nn.Conv(c, (p, p), strides=(p, p), padding="VALID")
            kernel = d["kernel"].reshape(p, p, -1, c)
            h = nn.relu(conv.apply({"params": {"kernel": kernel, "bias": d["bias"]}}, h))
        h = h.reshape(h.shape[0], -1)
        d = params["Dense_2"]
        return nn.relu(h @ d["kernel"] + d["bias"])

    want = reference(x.reshape(6, 17, 26, 3)).reshape(2, 3, 9)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)

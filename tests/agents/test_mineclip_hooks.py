"""The MineCLIP path of agents.ppo: frozen frame features + prompt features for the policy and
the Direct reward (+ success bonus), with a tiny random MineCLIP saved as a native checkpoint."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mineclip_jax as mcj
from agents import build, mineclip_hooks, ppo
from agents import learner as lrn


def test_mineclip_hooks_features_prompts_and_reward(tmp_path):
    mc = mcj.create(mcj.MineCLIPConfig.tiny(), jax.random.PRNGKey(0))
    mcj.save_checkpoint(mc, tmp_path / "mc")
    cfg = dataclasses.replace(
        ppo.PPOConfig(), reward="mineclip", mineclip_ckpt=str(tmp_path / "mc"), success_bonus=5.0
    )
    env = lrn.JaxEnv(
        reset=None, step=None, params=None, static=None, action_dims=(89,),
        to_env_action=None, policy_obs=None,
        reward_fn=lambda r, info: 5.0 * info["success"].astype(jnp.float32),
        task_ids=np.array([0, 1]), num_tasks=2, task_conditioned=True,
    )  # fmt: skip
    hooks, consts, _ = mineclip_hooks.mineclip_hooks(cfg, env, ("hunt a cow", "shear a sheep"))
    frames = jax.random.randint(jax.random.PRNGKey(1), (2, 160, 256, 3), 0, 255).astype(jnp.uint8)
    obs = jax.jit(hooks.featurize)(consts, {"rgb": frames, "task_id": jnp.array([0, 1])})
    assert set(obs) == {"rgb_feat", "prompt"} and obs["rgb_feat"].shape == (2, 64)
    want = mc.encode_frames(frames)
    np.testing.assert_allclose(obs["rgb_feat"], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(obs["prompt"][1], consts["goal_text"][1])
    state = hooks.init(consts, 2, np.array([0, 1]))
    info = {"success": jnp.array([False, True])}
    done = jnp.array([False, True])
    step = jax.jit(hooks.step)
    state, r = step(consts, state, obs, jnp.array([False, False]), jnp.zeros(2), info)
    # the Direct reward of each env's first window (an independent whole-trajectory pass over
    # that one frame), plus the bonus where the task succeeded
    from mineclip_jax import reward as mcr

    want, _ = mcr.trajectory_rewards(consts["spec"], obs["rgb_feat"][:, None], jnp.array([0, 1]))
    assert r.shape == (2,)
    np.testing.assert_allclose(np.asarray(r), np.asarray(want[:, 0]) + [0.0, 5.0], atol=1e-6)
    _, r2 = step(consts, state, obs, done, jnp.zeros(2), info)
    assert float(r2[1]) == 5.0  # a done step: the new frame is the next episode's, bonus only


@pytest.mark.parametrize("kind", ["direct", "peak"])
def test_device_rollout_mineclip_window_opens_on_the_reset_frame(tmp_path, kind):
    """On the JAX world the first episode's window starts at its reset frame, as every later
    episode's does: step t's reward (Direct, or Peak, whose best starts at the reset frame's
    Direct) equals that of an independent whole-trajectory pass over frames 0..t+1
    (`trajectory_rewards`, which treats frame 0 as the episode start)."""
    from mineclip_jax import reward as mcr

    mc = mcj.create(mcj.MineCLIPConfig.tiny(), jax.random.PRNGKey(2))
    mcj.save_checkpoint(mc, tmp_path / "mc")
    cfg = dataclasses.replace(
        ppo.PPOConfig(), task="shear a sheep", reward="mineclip", mineclip_ckpt=str(tmp_path / "mc"),
        mineclip_reward=kind, num_envs=2, num_steps=4, num_minibatches=1, update_epochs=1,
        world_size=32, world_pool=1, max_episode_steps=100, num_devices=1, out=str(tmp_path / "run"),
    )  # fmt: skip
    L = build.build(cfg).learner
    runner = jax.jit(L.init)(jax.random.PRNGKey(0))
    assert np.all(np.asarray(runner.reward_state.cache.count) == 1)
    end, traj, _ = jax.jit(L.rollout)(runner, L.consts)
    assert not np.any(np.asarray(traj.done)) and not np.any(np.asarray(traj.reward) > 4.0)
    feats = jnp.concatenate([traj.obs["rgb_feat"], end.obs["rgb_feat"][None]])  # [T + 1, N, D]
    spec = L.consts["spec"]
    assert spec.kind == kind
    want, _ = mcr.trajectory_rewards(
        spec, jnp.swapaxes(feats, 0, 1), runner.reward_state.goal_index
    )
    assert np.all(np.asarray(want)[:, 1:] > 0)  # this random model pays every step: no 0 == 0
    np.testing.assert_allclose(np.asarray(traj.reward).T, np.asarray(want)[:, 1:], atol=1e-5)


def test_extra_negatives_join_the_reward_softmax(tmp_path):
    """--mineclip-negatives: each goal's softmax runs over the 12 paper prompts plus the extra
    ones (chance level 1/(12 + k)); the reward equals one computed from the handle directly;
    the flag is refused without the MineCLIP reward and with an empty prompt."""
    import pytest

    from mineclip_jax import reward as mcr

    mc = mcj.create(mcj.MineCLIPConfig.tiny(), jax.random.PRNGKey(0))
    mcj.save_checkpoint(mc, tmp_path / "mc")
    extra = ("walk around", "look around")
    cfg = dataclasses.replace(ppo.PPOConfig(), reward="mineclip", mineclip_ckpt=str(tmp_path / "mc"),
                              mineclip_negatives=extra)  # fmt: skip
    ppo.validate(cfg)
    env = lrn.JaxEnv(
        reset=None, step=None, params=None, static=None, action_dims=(89,),
        to_env_action=None, policy_obs=None, reward_fn=lambda r, info: jnp.zeros(()),
        task_ids=np.array([0]), num_tasks=1, task_conditioned=True,
    )  # fmt: skip
    _, consts, _ = mineclip_hooks.mineclip_hooks(cfg, env, ("hunt a cow",))
    assert consts["spec"].candidates.sum(axis=-1).tolist() == [12 + len(extra)]
    feats = jax.random.normal(jax.random.PRNGKey(2), (1, 20, 64))
    got, _ = mcr.trajectory_rewards(consts["spec"], feats)
    direct = mcr.MineCLIPReward(mc, "hunt a cow", negatives=mcr.PAPER_TASK_PROMPTS + extra)
    want, _ = direct.trajectory_rewards(feats)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-7)
    paper_only, _ = mcr.MineCLIPReward(mc, "hunt a cow").trajectory_rewards(feats)
    assert not np.allclose(np.asarray(got), np.asarray(paper_only))
    # a run saved before the flag existed (its config.json lacks the field) loads with the 12
    from agents.checkpoints import config_from_json, config_to_json

    saved = config_to_json(cfg)
    del saved["mineclip_negatives"]
    _, old, _ = mineclip_hooks.mineclip_hooks(config_from_json(saved), env, ("hunt a cow",))
    assert old["spec"].candidates.sum(axis=-1).tolist() == [12]
    for bad, match in (
        (dataclasses.replace(cfg, reward="manual"), "--reward mineclip"),
        (dataclasses.replace(cfg, mineclip_negatives=("walk around", " ")), "empty prompt"),
    ):
        with pytest.raises(ppo.ConfigError, match=match):
            ppo.validate(bad)


def test_no_mineclip_features_policy_sees_frames_reward_unchanged(tmp_path):
    """--no-mineclip-features: the policy's inputs are the frames and the task id (the network
    of a run without a checkpoint: a CNN, a task embedding, no MineCLIP features), while the
    rollout's reward equals the one the feature-input run computes from the same frames; the
    flag is refused without a checkpoint."""
    import pytest

    mc = mcj.create(mcj.MineCLIPConfig.tiny(), jax.random.PRNGKey(2))
    mcj.save_checkpoint(mc, tmp_path / "mc")
    base = dataclasses.replace(
        ppo.PPOConfig(), task="shear a sheep", reward="mineclip", mineclip_ckpt=str(tmp_path / "mc"),
        num_envs=2, num_steps=4, num_minibatches=1, update_epochs=1, world_size=32, world_pool=1,
        max_episode_steps=100, num_devices=1, out=str(tmp_path / "run"),
    )  # fmt: skip
    frames_cfg = dataclasses.replace(base, mineclip_features=False)
    ppo.validate(frames_cfg, frozenset({"mineclip_features"}))
    L = build.build(frames_cfg).learner
    params = jax.jit(L.init)(jax.random.PRNGKey(0)).params
    names = set(params)
    assert "rgb_cnn" in names and "task_emb" in names, names
    runner = jax.jit(L.init)(jax.random.PRNGKey(0))
    assert set(runner.obs) >= {"rgb", "task_id", mineclip_hooks.REWARD_FEATURES_KEY}
    assert "rgb_feat" not in runner.obs and "prompt" not in runner.obs
    _, traj, _ = jax.jit(L.rollout)(runner, L.consts)
    # the reward from the same frames through the feature-input hooks
    env = L.env
    hooks, consts, _ = mineclip_hooks.mineclip_hooks(base, env, ("shear a sheep",))
    feats = jax.jit(hooks.featurize)(
        consts, {"rgb": traj.obs["rgb"][0], "task_id": jnp.zeros(2, int)}
    )
    np.testing.assert_allclose(
        feats["rgb_feat"], traj.obs[mineclip_hooks.REWARD_FEATURES_KEY][0], rtol=1e-4, atol=1e-5
    )
    state = hooks.start(consts, hooks.init(consts, 2, np.zeros(2, int)), feats)
    rewards = []
    for t in range(4):
        nxt = traj.obs["rgb"][t + 1] if t + 1 < 4 else None
        if nxt is None:
            break
        f = jax.jit(hooks.featurize)(consts, {"rgb": nxt, "task_id": jnp.zeros(2, int)})
        info = {"success": jnp.zeros(2, bool), "dense_reward": jnp.zeros(2)}
        state, r = hooks.step(consts, state, f, traj.done[t], jnp.zeros(2), info)
        rewards.append(r)
    np.testing.assert_allclose(np.stack(rewards), np.asarray(traj.reward)[:3], atol=1e-5)
    with pytest.raises(ppo.ConfigError, match="--no-mineclip-features|--mineclip-features"):
        ppo.validate(dataclasses.replace(frames_cfg, mineclip_ckpt=None, reward="manual"),
                     frozenset({"mineclip_features"}))  # fmt: skip

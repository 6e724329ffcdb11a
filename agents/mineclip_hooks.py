"""MineCLIP as the policy's frozen encoder and as the reward: `agents.learner.RewardHooks`.

`featurize` encodes every frame once (policy features `rgb_feat`, the goal's text feature as
`prompt`); `init` / `start` / `step` keep MineCLIP's 16-frame window per env and give the Direct,
Delta or Peak reward (`mineclip_jax.reward`). The same hooks serve the on-device driver (added to
the env's own reward) and the host-stepped one (`host_mineclip_hooks`: the MineCLIP term alone,
the host adds manual / sparse itself). Swap this module to change the learned reward or the
frozen encoder; nothing else in `agents/` knows MineCLIP's internals.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

from agents import learner as lrn

FEATURES_KEY = "rgb_feat"  # the policy's image input (agents.networks.MineAgent reads it)
REWARD_FEATURES_KEY = (
    "reward_feat"  # the reward's alone (--no-mineclip-features; no network reads it)
)


def mineclip_hooks(cfg, env: lrn.JaxEnv, prompts: tuple[str, ...]):
    """(hooks, consts, MineCLIP handle): frozen MineCLIP frame features for the policy (+ the
    MineCLIP reward on top of `env.reward_fn` with --reward mineclip). Reads `cfg.mineclip_ckpt`,
    `cfg.mineclip_reward`, `cfg.mineclip_negatives` and `cfg.reward`."""
    import mineclip_jax as mcj
    from mineclip_jax import reward as mcr

    mc = mcj.load_checkpoint(cfg.mineclip_ckpt)  # a shipped name or a path (~ expanded)
    # runs saved before --mineclip-negatives existed load as configs without the field
    extra = tuple(getattr(cfg, "mineclip_negatives", ()))
    negatives = mcr.DEFAULT_NEGATIVE_PROMPTS + extra if extra else None
    rew = mcr.MineCLIPReward(mc, goal=list(prompts), negatives=negatives, kind=cfg.mineclip_reward)
    goal_text = rew.spec.text_features[rew.spec.goal_prompt]  # [G, D]
    consts = {"spec": rew.spec, "goal_text": goal_text}
    module = mc.module
    use_reward = cfg.reward == "mineclip"
    base_reward = env.reward_fn
    # runs saved before --no-mineclip-features existed load as configs without the field
    policy_features = getattr(cfg, "mineclip_features", True)
    feat_key = FEATURES_KEY if policy_features else REWARD_FEATURES_KEY

    def featurize(c, obs):
        obs = dict(obs)
        if not policy_features:  # the policy sees the frames and its task id; MineCLIP only pays
            if use_reward:
                obs[feat_key] = module.apply({"params": c["spec"].params}, obs["rgb"],
                                             method="encode_frames")  # fmt: skip
            return obs
        rgb = obs.pop("rgb")
        obs[feat_key] = module.apply({"params": c["spec"].params}, rgb, method="encode_frames")
        obs["prompt"] = c["goal_text"][obs.pop("task_id")]
        return obs

    def init(c, n, task_ids):
        return mcr.init_state(c["spec"], n, np.asarray(task_ids) % len(prompts))

    def step(c, rstate, obs, done, r_env, info):
        base = jax.vmap(base_reward)(r_env, info)
        if not use_reward:
            return rstate, base
        rstate, r_clip, _ = mcr.reward_step(c["spec"], rstate, obs[feat_key], done)
        # On a done step the new frame belongs to the next episode: no MineCLIP term.
        return rstate, base + jnp.where(done, 0.0, r_clip)

    def start(c, rstate, obs):
        if not use_reward:
            return rstate
        first = jnp.ones(obs[feat_key].shape[:1], jnp.bool_)
        return mcr.reward_step(c["spec"], rstate, obs[feat_key], first)[0]

    hooks = lrn.RewardHooks(featurize=featurize, init=init, step=step, start=start)
    return hooks, consts, mc


def host_mineclip_hooks(cfg, tasks: tuple[str, ...]):
    """`mineclip_hooks` for `agents.sebulba.HostDriver`: the same featurize / init / step, with a
    zero base reward (the host adds manual / sparse + success bonus itself), so `step` gives the
    MineCLIP term alone (zero without --reward mineclip). Returns (hooks, consts, handle)."""
    from envs import tasks as envs_tasks

    prompts = tuple(envs_tasks.get(t).prompt for t in tasks)
    return mineclip_hooks(cfg, SimpleNamespace(reward_fn=lambda r, info: r), prompts)

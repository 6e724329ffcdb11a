"""One stage's parts, built once: env adapter, network, MineCLIP hooks and the jitted learner
(`build`, on-device driver) or the host-stepped driver over a Gymnasium vector env
(`build_host_driver`). Both drivers get the same network, observations, action table and
reward choice (`agents.adapters`).

`build` is cached per static configuration (shapes, branches, env, seed) and ignores the run's
bookkeeping (`agents.config.RunConfig`) and the values of its traced hyper-parameters
(`agents.config.HyperConfig`): two runs in one process that differ only in, say, `ent_coef` share
one compiled learner. The learner and the host driver get their sections (`LearnerConfig`,
`HyperParams`), not the CLI's config.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from agents import adapters, devices, networks, sebulba
from agents import learner as lrn
from agents.config import HyperConfig, RunConfig, field_names
from agents.mineclip_hooks import host_mineclip_hooks, mineclip_hooks


def static_key(cfg) -> tuple:
    """What `build` depends on: every field outside the run's bookkeeping (`RunConfig`: the run
    directory, logging, the number of seeds, which stacks identical runs) and the
    hyper-parameters (`HyperConfig`), which enter only as far as the compiled `LearnerConfig`
    holds them: whether a term is on. The task list is in (`EnvConfig`): every stage's tasks
    make the policy's task vocabulary."""
    skip = field_names(RunConfig) | field_names(HyperConfig)
    fields = tuple(
        (f.name, _hashable(getattr(cfg, f.name)))
        for f in dataclasses.fields(cfg)
        if f.name not in skip
    )
    return fields, lrn.LearnerConfig.from_config(cfg)


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


def build_network(cfg, env: lrn.JaxEnv):
    if env.task_names == ("cartpole",):
        if not cfg.core_size:
            return networks.MLPActorCritic(env.action_dims)
        return networks.MineAgent(  # CartPole with memory: the MineAgent on its state vector
            action_dims=env.action_dims,
            core_size=cfg.core_size,
            fusion_dim=64,
            feat_hidden=64,
            actor_hidden=64,
            actor_depth=1,
            critic_hidden=64,
            critic_depth=1,
        )
    from envs import spaces, voxel

    prior = None
    if cfg.action_space == "compact":
        p = adapters.compact_action_prior(cfg.action_prior)
        prior = None if p is None else (p,)

    size = (
        dict(fusion_dim=512, actor_hidden=256, actor_depth=3, critic_hidden=256, image_dim=512)
        if cfg.agent_size == "paper"
        else dict(fusion_dim=256, actor_hidden=128, actor_depth=2, critic_hidden=128,
                  image_dim=256, cnn_channels=(16, 32), feat_hidden=64)
    )  # fmt: skip
    return networks.MineAgent(
        action_dims=env.action_dims,
        num_tasks=env.num_tasks,
        num_block_ids=int(spaces.NUM_BLOCKS),
        action_prior=prior,
        cnn=cfg.cnn,
        privileged_critic=cfg.privileged_critic,
        privileged_actor=cfg.privileged_policy,
        privileged_size=voxel.NUM_TARGET_FEATURES,
        aux_dim=len(adapters.AUX_FEATURES) if cfg.aux_coef > 0 else 0,
        core_size=cfg.core_size,
        critic_time_left=cfg.critic_time_left,
        **size,
    )


@dataclasses.dataclass
class Built:
    learner: lrn.Learner
    env: lrn.JaxEnv
    mineclip: object | None


_BUILT: dict = {}


def build(cfg, tasks: tuple[str, ...] | None = None) -> Built:
    """Env, network, hooks and the jitted learner for one stage (cached, see the module doc)."""
    tasks = tuple(tasks or adapters.stage_tasks(cfg.task, cfg.stages)[0])
    key = (static_key(cfg), tasks)
    if key not in _BUILT:
        _BUILT[key] = _build(cfg, tasks)
    return _BUILT[key]


def _unroll(cfg, cnn: bool) -> bool:
    """Unrolled epoch/minibatch scans on CPU for a convolutional encoder (jax-ml/jax#12868),
    unless --unroll says. The patch encoder is matrix products, which scans do not slow: its
    programs stay rolled (unrolled, the recurrent update compiled for minutes)."""
    if cfg.unroll is not None:
        return bool(cfg.unroll)
    return jax.default_backend() == "cpu" and cnn and cfg.cnn != "patch"


def _build(cfg, tasks: tuple[str, ...]) -> Built:
    cartpole = tasks == ("cartpole",)
    hooks, consts, mc = None, None, None
    if cartpole:
        env = adapters.cartpole_env(cfg)
    else:
        env = adapters.voxel_env(cfg, tasks)
        if cfg.mineclip_ckpt:
            prompts = tuple(s.prompt for s in adapters.task_specs(env.task_names))
            hooks, consts, mc = mineclip_hooks(cfg, env, prompts)
    network = build_network(cfg, env)
    # a run saved before --no-mineclip-features existed fed the policy MineCLIP's features
    features = cfg.mineclip_ckpt and getattr(cfg, "mineclip_features", True)
    actor_mesh, mesh = devices.meshes(cfg)
    learner = lrn.Learner(learner_config(cfg, cnn=not cartpole and not features), env, network,
                          mesh, hooks=hooks, consts=consts, actor_mesh=actor_mesh,
                          hp=lrn.HyperParams.from_config(cfg))  # fmt: skip
    return Built(learner, env, mc)


def learner_config(cfg, cnn: bool) -> lrn.LearnerConfig:
    """The learner's static config of `cfg`, its scans unrolled as `_unroll` says."""
    return dataclasses.replace(lrn.LearnerConfig.from_config(cfg), unroll=_unroll(cfg, cnn))


def build_host_driver(cfg, tasks: tuple[str, ...], vec_env) -> sebulba.HostDriver:
    """HostDriver over `vec_env` with the policy, observations, actions and rewards of the
    on-device path: the same network (`build_network`), `voxel_policy_obs`, the compact action
    table, manual / sparse rewards and, with --mineclip-ckpt, frozen MineCLIP features (+ the
    MineCLIP reward with --reward mineclip) computed once per frame in the driver's inference
    call (`host_mineclip_hooks`)."""
    from types import SimpleNamespace

    names = adapters.task_vocabulary(cfg, tasks)  # the policy's task ids (all stages')
    stage_ids = np.array([names.index(s.id) for s in adapters.task_specs(tasks)])
    dims, _, noop = adapters.action_table(cfg.action_space)
    n = cfg.num_envs
    net = build_network(cfg, SimpleNamespace(task_names=names, action_dims=dims,
                                             num_tasks=len(names)))  # fmt: skip
    use_mc = bool(cfg.mineclip_ckpt)
    hooks, consts = host_mineclip_hooks(cfg, names)[:2] if use_mc else (None, None)
    features = use_mc and getattr(cfg, "mineclip_features", True)
    actor_mesh, mesh = devices.meshes(cfg)  # per-step inference on the actors' devices
    return sebulba.HostDriver(
        learner_config(cfg, cnn=not features), vec_env, net, hp=lrn.HyperParams.from_config(cfg),
        si_every=cfg.si_every, action_dims=dims, policy_obs=adapters.host_policy_obs(cfg),
        to_env_action=adapters.to_env_action_fn(cfg.action_space, np),
        reward_fn=adapters.host_reward_fn(cfg, tasks), success_fn=adapters.host_success_fn,
        mesh=mesh, actor_mesh=actor_mesh, task_ids=stage_ids[np.arange(n) % len(stage_ids)],
        num_tasks=len(names), task_conditioned=True, hooks=hooks, consts=consts,
        noop_action=noop,
    )  # fmt: skip

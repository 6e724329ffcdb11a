"""The jitted, data-parallel PPO + self-imitation learner (Anakin driver over a JAX env).

purejaxrl structure, `Learner(static, env, network, hp=hp)` holds pure functions of (runner, hp):

    init(key) -> Runner                          # params, Adam states, env states, SI buffer ...
    iteration(runner, hp) -> (runner, metrics)   # rollout (lax.scan over time, vmapped env) +
                                                 # GAE + PPO epochs x minibatches; one jit
    si_phase(runner, hp) -> (runner, metrics)    # self-imitation: BC on prioritised samples
    update(runner, traj, hp) -> (runner, metrics)   # the update alone (the host driver's)

The config is split: `LearnerConfig` (static, hashable: everything that sets a shape or a
branch) is compiled in; `HyperParams` (a pytree of float32 scalars: learning rates, gamma,
lambda, clips, loss coefficients) is a jit argument, so changing one reuses the program. Both
come from the CLI's sections (`agents.config.ShapeConfig`, `HyperConfig`) through `from_config`;
the learner never sees the rest of the CLI's config.
`iteration(..., seeds=True)` runs a runner stacked over a leading seed axis (K independent
seeds, vmapped, in one program).

All of them are jitted with the runner donated, over a 1-D `jax.sharding.Mesh` axis "data": every
per-env array (env state, observations, episode stats, trajectories) is sharded along the env
axis, parameters and optimizer states are replicated, and XLA's partitioner inserts the gradient
all-reduce (the loss is a mean over the *global* minibatch, so the update is the same on 1 or N
devices). `num_envs` must be a multiple of the device count.

With the action-smoothing loss on or a recurrent policy, minibatches are sets of whole envs (all
`num_steps` steps of each) so the loss can compare consecutive steps and the recurrent core can
be replayed over them; otherwise single transitions are shuffled. Terminated and truncated both
stop the GAE bootstrap.

Recurrent PPO (a network with `core_size > 0`, `agents.networks.MineAgent`): the actor state
carries each env's core `[N, H]` and whether its observation opens an episode; every transition
stores the carry it was acted on and that flag (a memoryless policy's carry is one unused unit), and the update replays each minibatch's envs
from the carry stored at the rollout's first step, zeroing it where an episode starts, so the
update's log-probs are the rollout's (`apply_policy` is the one function both call).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from agents import episodes, losses
from agents import self_imitation as si
from agents.config import ShapeConfig


def core_size(network: nn.Module) -> int:
    """GRU units of a network's recurrent core (0: memoryless)."""
    return int(getattr(network, "core_size", 0) or 0)


def apply_policy(network: nn.Module, params, obs, prev_action, core, start, mutable=False):
    """Any policy network over a `[T, B]` sequence: obs leaves `[T, B, ...]`, `prev_action
    [T, B, K]`, the carry `core [B, H]` at step 0 (passed through by a memoryless network),
    `start [T, B]` (an episode opens there) -> `(logits [T, B, A], value [T, B], core [B, H])`, plus the mutable
    collections with `mutable`. A memoryless network sees the `T * B` steps as one batch."""
    t, b = start.shape
    variables = {"params": params}
    if core_size(network):
        out = network.apply(variables, obs, prev_action, core, start, mutable=mutable)
        (logits, value, core), extra = out if mutable else (out, None)
    else:
        flat = lambda x: x.reshape((t * b,) + x.shape[2:])  # noqa: E731
        out = network.apply(variables, jax.tree.map(flat, obs), flat(prev_action),
                            mutable=mutable)  # fmt: skip
        (logits, value), extra = out if mutable else (out, None)
        logits, value = logits.reshape(t, b, -1), value.reshape(t, b)
    return ((logits, value, core), extra) if mutable else (logits, value, core)


@dataclasses.dataclass(frozen=True)
class JaxEnv:
    """A batch of functional JAX envs with the embedded world's signature (docs/interfaces.md).

    reset(key, params, static) -> (obs, state); step(key, state, action, params, static) ->
    (obs, state, reward, terminated, truncated, info) with auto-reset; both for ONE env (vmapped
    here). `params` is batched `[N, ...]` (one row per env, e.g. different tasks).
    `to_env_action` maps a policy action int32 `[K]` to the env's action; `policy_obs` maps one
    raw observation to the policy's input dict (without `rgb_feat`, see `featurize`).
    `reward_fn(env_reward, info) -> reward` picks the training reward (manual / sparse ...).
    """

    reset: Callable
    step: Callable
    params: Any
    static: Any
    action_dims: tuple[int, ...]
    to_env_action: Callable
    policy_obs: Callable
    reward_fn: Callable
    task_ids: np.ndarray  # int32 [N]
    num_tasks: int = 1
    task_names: tuple[str, ...] = ("task",)
    task_conditioned: bool = False  # add obs["task_id"] (int32) for the policy
    noop_action: tuple[int, ...] | None = None  # policy action "do nothing" (default: zeros)
    step_no_reset: Callable | None = None  # `step` without the auto-reset (one episode per env)


@struct.dataclass
class RewardHooks:
    """Optional frozen-feature path (MineCLIP). `consts` is a replicated pytree (e.g. MineCLIP
    params and prompt features) passed into every jitted call, not baked into the program.
    `featurize(consts, obs_batch) -> obs_batch` adds `rgb_feat` / `prompt` (and drops `rgb` /
    `task_id`); `init(consts, n, task_ids) -> rstate`; `start(consts, rstate, obs_batch) ->
    rstate` pushes the reset frames (a learned reward's window opens on an episode's first
    frame, as after every later reset); `step(consts, rstate, obs_batch, done, r_env, info) ->
    (rstate, reward)` replaces `env.reward_fn` when given."""

    featurize: Callable | None = struct.field(pytree_node=False, default=None)
    init: Callable | None = struct.field(pytree_node=False, default=None)
    step: Callable | None = struct.field(pytree_node=False, default=None)
    start: Callable | None = struct.field(pytree_node=False, default=None)


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
    """What sets a shape or a branch of the compiled learner (static, hashable): two runs with
    equal `LearnerConfig`s share one compiled program whatever their `HyperParams`."""

    num_envs: int
    num_steps: int
    num_updates: int
    update_epochs: int = 4
    num_minibatches: int = 4
    norm_adv: bool = True
    anneal_lr: bool = True
    clip_value: bool = False  # a value-clip range is given (its size is a hyper-parameter)
    smoothing: bool = False  # the action-smoothing loss is on: minibatches of whole envs
    smooth_window: int = 4
    aux: bool = False  # the auxiliary target-prediction loss is on
    si_steps: int = 4
    si_batch: int = 4
    si_capacity: int = 32
    si_max_len: int = 128
    si_balance_tasks: bool = True
    unroll: bool = False
    norm_returns: bool = False  # the critic learns value targets scaled by their running std

    def __post_init__(self):
        ShapeConfig.check_minibatches(self.num_envs, self.num_minibatches)

    @classmethod
    def from_config(cls, cfg) -> LearnerConfig:
        """From the learner's shapes and which hyper-parameter terms are on: any config with the
        fields of `agents.config.ShapeConfig` and `HyperConfig` (an `agents.ppo.PPOConfig`, or a
        saved run's config, whose fields added since keep their old meaning)."""
        steps_per_update = cfg.num_envs * cfg.num_steps
        return cls(
            num_envs=cfg.num_envs, num_steps=cfg.num_steps,
            num_updates=max(1, cfg.total_steps // steps_per_update),
            update_epochs=cfg.update_epochs, num_minibatches=cfg.num_minibatches,
            norm_adv=bool(cfg.norm_adv), anneal_lr=bool(cfg.anneal_lr),
            clip_value=cfg.vf_clip is not None, smoothing=cfg.smooth_coef > 0,
            smooth_window=cfg.smooth_window, aux=getattr(cfg, "aux_coef", 0.0) > 0,
            si_steps=cfg.si_steps, si_batch=cfg.si_batch, si_capacity=cfg.si_capacity,
            si_max_len=cfg.si_max_len, si_balance_tasks=bool(cfg.si_balance_tasks),
            unroll=bool(getattr(cfg, "unroll", False)),
            norm_returns=bool(getattr(cfg, "norm_returns", False)),
        )  # fmt: skip


@struct.dataclass
class HyperParams:
    """The learner's traced hyper-parameters (float32 scalars, a jit argument): changing one
    between runs reuses the compiled update. Whether a term is on at all (`vf_clip` given,
    `smooth_coef` or `aux_coef` > 0) is static (`LearnerConfig`). The fields are those of the
    CLI's section `agents.config.HyperConfig` (a test keeps them equal)."""

    lr: jax.Array
    si_lr: jax.Array
    gamma: jax.Array
    gae_lambda: jax.Array
    clip_eps: jax.Array
    vf_clip: jax.Array
    ent_coef: jax.Array
    vf_coef: jax.Array
    smooth_coef: jax.Array
    max_grad_norm: jax.Array
    aux_coef: jax.Array
    si_unsuccessful_weight: jax.Array
    si_min_return: jax.Array
    lr_final_frac: jax.Array = 0.0  # the annealed PPO learning rate ends at lr * this

    @classmethod
    def from_config(cls, cfg) -> HyperParams:
        """From any config with these fields (`agents.config.HyperConfig`, an
        `agents.ppo.PPOConfig`); None (no `vf_clip`) and a field a saved run lacks read 0."""

        def value(name):
            v = getattr(cfg, name, 0.0)
            return jnp.asarray(0.0 if v is None else v, jnp.float32)

        return cls(**{f.name: value(f.name) for f in dataclasses.fields(cls)})


def adam_init(params):
    """Adam moments and step count (`optax.scale_by_adam`); the step count drives the annealing."""
    return _ADAM.init(params)


_ADAM = optax.scale_by_adam(eps=1e-5)


def adam_step(grads, opt_state, params, lr, max_grad_norm, anneal_steps: int | None = None,
              final_frac=0.0):  # fmt: skip
    """Clip by global norm, Adam, learning rate `lr` (annealed linearly to `lr * final_frac`
    over `anneal_steps` gradient steps when given): optax's `chain(clip_by_global_norm,
    adam(linear_schedule))` with the rate and the clip as traced values instead of constants
    baked into the program."""
    g_norm = optax.global_norm(grads)
    keep = g_norm < max_grad_norm
    grads = jax.tree.map(lambda g: jnp.where(keep, g, g / g_norm * max_grad_norm), grads)
    if anneal_steps is not None:
        frac = jnp.clip(opt_state.count.astype(jnp.float32) / anneal_steps, 0.0, 1.0)
        lr = lr * (1.0 - (1.0 - final_frac) * frac)
    updates, opt_state = _ADAM.update(grads, opt_state, params)
    params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    return params, opt_state


@struct.dataclass
class LearnerState:
    """What the update changes (the same for both drivers)."""

    params: Any
    opt_state: Any
    si_opt_state: Any
    si_buffer: si.SIBuffer
    key: jax.Array
    update_step: jax.Array  # int32 []
    # running (mean, variance, count) of the value targets (`losses.update_return_stats`): with
    # norm_returns the critic learns targets in these units, whatever the reward's scale
    return_stats: jax.Array = None


@struct.dataclass
class ActorState:
    """What a rollout advances: per-env observations and episode counters (sharded over the env
    axis), the reward's state and, on device only, the envs themselves (`env_params`,
    `env_state`; None in the host-stepped driver, whose simulators live in the vector env)."""

    obs: Any
    prev_action: jax.Array  # int32 [N, K]
    ep_return: jax.Array  # f32 [N]
    ep_length: jax.Array  # int32 [N]
    episode_id: jax.Array  # int32 [N]
    task_id: jax.Array  # int32 [N]
    reward_state: Any
    si_store: si.EpisodeStore
    env_steps: jax.Array  # int32 []
    env_params: Any = None
    env_state: Any = None
    core: jax.Array = None  # f32 [N, H]: the recurrent policy's carry (memoryless: 1 unused unit)
    episode_start: jax.Array = None  # bool [N]: `obs` is an episode's first observation


LEARNER_FIELDS = tuple(f.name for f in dataclasses.fields(LearnerState))
ACTOR_FIELDS = tuple(f.name for f in dataclasses.fields(ActorState))


@struct.dataclass
class Runner:
    """One learner state and one actor state. Their fields read through (`runner.params`);
    `update(**fields)` replaces any of them; `Runner.make(**fields)` builds one from all."""

    learner: LearnerState
    actor: ActorState

    @classmethod
    def make(cls, **fields) -> Runner:
        return cls(
            learner=LearnerState(**{k: fields.pop(k) for k in LEARNER_FIELDS}),
            actor=ActorState(**fields),
        )

    def update(self, **fields) -> Runner:
        learner = {k: v for k, v in fields.items() if k in LEARNER_FIELDS}
        actor = {k: v for k, v in fields.items() if k not in LEARNER_FIELDS}
        return self.replace(learner=self.learner.replace(**learner),
                            actor=self.actor.replace(**actor))  # fmt: skip

    def __getattr__(self, name):
        if name in LEARNER_FIELDS:
            return getattr(self.learner, name)
        if name in ACTOR_FIELDS:
            return getattr(self.actor, name)
        raise AttributeError(name)


@struct.dataclass
class Transition:
    obs: Any
    prev_action: jax.Array
    action: jax.Array
    logp: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array
    episode_id: jax.Array
    mask: jax.Array
    core: jax.Array  # f32 [T, N, H]: the carry each step was acted on (before its reset)
    start: jax.Array  # bool [T, N]: the step opens an episode (the carry is zeroed first)


def make_mesh(num_devices: int | None = None) -> Mesh:
    devs = jax.devices()[: num_devices or len(jax.devices())]
    return Mesh(np.array(devs), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


_NO_ACTOR = {f: None for f in ACTOR_FIELDS}


def _copy(tree, shardings):
    """A copy of `tree` placed by `shardings` that shares no buffer with it, so either side can be
    donated while the other lives (a device present in both meshes might otherwise alias)."""
    return jax.device_put(tree, shardings, may_alias=False)


def runner_shardings(runner: Runner, mesh: Mesh, seeds: bool = False):
    """NamedSharding tree: the actor's per-env fields split along the env axis over "data"
    (axis 0, or 1 behind a leading seed axis with `seeds`), the rest replicated."""
    rep = NamedSharding(mesh, P())
    env = NamedSharding(mesh, P(None, "data") if seeds else P("data"))
    actor = {
        f: jax.tree.map(lambda _, s=(rep if f == "env_steps" else env): s, getattr(runner.actor, f))
        for f in ACTOR_FIELDS
    }
    return Runner(learner=jax.tree.map(lambda _: rep, runner.learner), actor=ActorState(**actor))


def transition_shardings(traj: Transition, mesh: Mesh):
    """Trajectories are [T, N, ...]: shard axis 1."""
    return jax.tree.map(lambda _: NamedSharding(mesh, P(None, "data")), traj)


class Learner:
    """Holds the jitted functions for one (static config, env, network, mesh).

    `cfg` is the `LearnerConfig` (shapes, branches: compiled in) and `hp` the default
    `HyperParams` (every entry point also takes its own `hp`, a jit argument); from a CLI
    config: `LearnerConfig.from_config(cfg)`, `HyperParams.from_config(cfg)`."""

    def __init__(self, cfg: LearnerConfig, env: JaxEnv | None, network: nn.Module,
                 mesh: Mesh | None = None, hooks: RewardHooks | None = None, consts=None,
                 actor_mesh: Mesh | None = None, action_dims: tuple[int, ...] | None = None,
                 num_tasks: int | None = None, hp: HyperParams | None = None,
                 noop_action: tuple[int, ...] | None = None):  # fmt: skip
        if not isinstance(cfg, LearnerConfig) or hp is None:
            raise TypeError("Learner(LearnerConfig, ..., hp=HyperParams(...)); from a config "
                            "with the CLI's fields: LearnerConfig.from_config(cfg) and "
                            "hp=HyperParams.from_config(cfg)")  # fmt: skip
        self.static, self.hp = cfg, hp
        st = self.static
        self.env = env
        self.network = network
        # Initial action logits of the policy (MineAgent.action_prior): the entropy bonus is
        # taken relative to them (losses.entropy_regularizer).
        prior = getattr(network, "action_prior", None)
        self.prior_logits = (
            None if prior is None else jnp.concatenate([jnp.asarray(p, jnp.float32) for p in prior])
        )
        self.mesh = mesh or make_mesh()  # the learner's: PPO update and SI phase
        # the rollout's; the same devices (in the same order) are one mesh and one program
        same = actor_mesh is None or actor_mesh.devices.tolist() == self.mesh.devices.tolist()
        self.actor_mesh = self.mesh if same else actor_mesh
        self.split = not same
        self.hooks = hooks or RewardHooks()
        self.action_dims = tuple(action_dims or env.action_dims)
        self.num_tasks = num_tasks or (env.num_tasks if env is not None else 1)
        noop = noop_action if noop_action is not None else getattr(env, "noop_action", None)
        # the previous action an episode starts with (the policy's "do nothing", not id 0)
        self.noop_action = jnp.asarray(
            noop if noop is not None else (0,) * len(self.action_dims), jnp.int32
        )
        self.num_updates = st.num_updates
        self.grad_steps = st.num_updates * st.update_epochs * st.num_minibatches
        self.consts = {} if consts is None else consts
        self.core_size = core_size(network)
        # minibatches of whole env sequences: the smoothing loss compares consecutive steps,
        # a recurrent core is replayed over them
        self.sequences = st.smoothing or self.core_size > 0
        self._jit_cache = {}

    # ---------------------------------------------------------------- pieces
    def apply(self, params, obs, prev_action):
        """A memoryless network on one batch of observations -> (logits, value)."""
        if self.core_size:
            raise ValueError("this policy is recurrent: use Learner.step_policy (it carries "
                             "the core between steps)")  # fmt: skip
        return self.network.apply({"params": params}, obs, prev_action)

    def step_policy(self, params, obs, prev_action, core, start):
        """One step of any policy for a batch `[B, ...]`: the carry `core [B, H]` and
        `start [B]` (the observation opens an episode) -> (logits, value, core)."""
        one = lambda x: x[None]  # noqa: E731
        logits, value, core = apply_policy(self.network, params, jax.tree.map(one, obs),
                                           one(prev_action), core, one(start))  # fmt: skip
        return logits[0], value[0], core

    @property
    def carry_size(self) -> int:
        """Width of the stored carry: the core's, or 1 unused unit for a memoryless policy (a
        zero-width per-env array would lose its env-axis sharding in XLA's outputs)."""
        return max(self.core_size, 1)

    def initial_core(self, n: int) -> jax.Array:
        """The carry a fresh episode starts from: zeros `[n, carry_size]`."""
        return jnp.zeros((n, self.carry_size), jnp.float32)

    def policy_logits(self, params, obs, prev_action, core=None, start=None):
        """The actor's logits alone (and, for a recurrent policy given `core` and `start`, the
        new carry: `(logits, core)`). A privileged critic's input is training-only: where the
        observations come without it (a deployed policy on any env), the critic is fed zeros,
        which cannot change the logits (the actor never reads it) and whose value is dropped."""
        if "privileged" not in obs and getattr(self.network, "privileged_actor", False):
            raise ValueError("this policy was trained with --privileged-policy and acts on the "
                             "embedded world's target features: pass obs['target_features'] "
                             "(envs.voxel.target_features), as agents.ppo's env does")  # fmt: skip
        if getattr(self.network, "privileged_critic", False) and "privileged" not in obs:
            n = jax.tree.leaves(obs)[0].shape[0]
            size = self.network.privileged_size
            obs = {**obs, "privileged": jnp.zeros((n, size), jnp.float32)}
        if core is None:
            return self.apply(params, obs, prev_action)[0]
        logits, _, core = self.step_policy(params, obs, prev_action, core, start)
        return logits, core

    def policy_obs_batch(self, consts, raw_obs, task_id):
        """Raw env observations `[N, ...]` -> the policy's input dict (features computed once)."""
        obs = jax.vmap(self.env.policy_obs)(raw_obs)
        if self.env.task_conditioned:
            obs["task_id"] = task_id
        if self.hooks.featurize is not None:
            obs = self.hooks.featurize(consts, obs)
        return obs

    def init_params(self, key, obs_batch):
        k = len(self.action_dims)
        n = obs_batch_leading(obs_batch)
        prev = jnp.zeros((n, k), jnp.int32)
        if not self.core_size:
            return self.network.init(key, obs_batch, prev)["params"]
        one = lambda x: x[None]  # noqa: E731
        return self.network.init(key, jax.tree.map(one, obs_batch), one(prev),
                                 self.initial_core(n), jnp.ones((1, n), bool))["params"]  # fmt: skip

    def init(self, key, env_params=None) -> Runner:
        """Fresh runner (unsharded; `shard` places it on the mesh). `env_params` (default: the
        env's own) lets K seeds share one learner with their own worlds."""
        st, env = self.static, self.env
        env_params = env.params if env_params is None else env_params
        n = st.num_envs
        k_net, k_env, k_run = jax.random.split(key, 3)
        raw_obs, env_state = jax.vmap(env.reset, in_axes=(0, 0, None))(
            jax.random.split(k_env, n), env_params, env.static
        )
        task_id = jnp.asarray(env.task_ids, jnp.int32)
        obs = self.policy_obs_batch(self.consts, raw_obs, task_id)
        rstate = None
        if self.hooks.init is not None:
            rstate = self.hooks.init(self.consts, n, env.task_ids)
        if self.hooks.start is not None:  # the reset frames open every env's reward window
            rstate = self.hooks.start(self.consts, rstate, obs)
        return self.new_runner(k_net, k_run, obs, task_id, rstate,
                               env_params=jax.tree.map(jnp.array, env_params),  # a copy: donated
                               env_state=env_state)  # fmt: skip

    def new_runner(self, k_net, k_run, obs, task_id, reward_state, env_params=None,
                   env_state=None) -> Runner:  # fmt: skip
        """The one initialisation of both drivers around a first batch of policy inputs `obs`
        `[N, ...]`: fresh params, Adam states, SI buffer and store, episode counters (the
        previous action the no-op). The host-stepped driver has no env fields (None)."""
        st = self.static
        n, k = st.num_envs, len(self.action_dims)
        params = self.init_params(k_net, obs)
        obs_one = jax.tree.map(lambda x: x[0], obs)
        return Runner.make(
            params=params,
            opt_state=adam_init(params),
            si_opt_state=adam_init(params),
            env_params=env_params,
            env_state=env_state,
            obs=obs,
            prev_action=jnp.tile(self.noop_action, (n, 1)),
            ep_return=jnp.zeros((n,), jnp.float32),
            ep_length=jnp.zeros((n,), jnp.int32),
            episode_id=jnp.zeros((n,), jnp.int32),
            task_id=jnp.asarray(task_id, jnp.int32),
            reward_state=reward_state,
            si_buffer=si.init_buffer(st.si_capacity, st.si_max_len, obs_one, k, self.carry_size),
            si_store=si.init_store(n, st.si_max_len, obs_one, k, self.carry_size),
            key=k_run,
            update_step=jnp.zeros((), jnp.int32),
            return_stats=losses.init_return_stats(),
            env_steps=jnp.zeros((), jnp.int32),
            core=self.initial_core(n),
            episode_start=jnp.ones((n,), bool),
        )

    def placement(self, runner: Runner, seeds: bool = False):
        """Where a runner's arrays live between calls (a NamedSharding tree): one mesh,
        `runner_shardings`; split, the actor's fields on the actor mesh (per-env ones along the
        env axis) and the SI buffer with them (the rollout writes it every step), the rest of
        the learner state (params, Adam states, RNG key, update count) on the learner mesh."""
        if not self.split:
            return runner_shardings(runner, self.mesh, seeds)
        actor = runner_shardings(runner, self.actor_mesh, seeds)
        learner = runner_shardings(runner, self.mesh, seeds).learner
        return actor.replace(learner=learner.replace(si_buffer=actor.learner.si_buffer))

    def shard(self, runner: Runner) -> Runner:
        return jax.device_put(runner, self.placement(runner))

    def init_params_only(self, key):
        """The policy parameters `init(key)` starts with (the untrained policy), jitted: the
        envs' reset and first frames, which the parameters do not depend on, are compiled away
        instead of run op by op."""
        if "init_params" not in self._jit_cache:
            self._jit_cache["init_params"] = jax.jit(lambda k: self.init(k).params)
        return self._jit_cache["init_params"](key)

    def init_sharded(self, key) -> Runner:
        """`init` as one jitted call whose outputs are created already sharded over the (actor)
        mesh; split, the learner's fields then move to the learner mesh."""
        if "init" not in self._jit_cache:

            def init_placed(key):
                # The shardings follow the runner's tree structure only, so they are declared
                # inside the one trace (an eval_shape first to build out_shardings traced the
                # whole init, env resets and first frames, a second time: 2-3 s per learner).
                runner = self.init(key)
                return jax.lax.with_sharding_constraint(
                    runner, runner_shardings(runner, self.actor_mesh)
                )

            self._jit_cache["init"] = jax.jit(init_placed)
        runner = self._jit_cache["init"](key)
        return self.shard(runner) if self.split else runner

    # ---------------------------------------------------------------- rollout
    def rollout(self, runner: Runner, consts, hp: HyperParams | None = None):
        st, env = self.static, self.env
        hp = self.hp if hp is None else hp
        dims = self.action_dims
        n = st.num_envs

        def env_part(keys, env_state, env_action, env_params, consts, reward_state, task_id):
            """Everything per env: the world's step, the next policy inputs, the reward."""
            raw_obs, env_state, r_env, term, trunc, info = jax.vmap(
                env.step, in_axes=(0, 0, 0, 0, None)
            )(keys, env_state, env_action, env_params, env.static)
            done = term | trunc
            next_obs = self.policy_obs_batch(consts, raw_obs, task_id)
            if self.hooks.step is not None:
                rstate, reward = self.hooks.step(consts, reward_state, next_obs, done, r_env, info)
            else:
                rstate, reward = reward_state, jax.vmap(env.reward_fn)(r_env, info)
            return env_state, next_obs, rstate, reward, done, episodes.env_success(info)

        if self.split and self.actor_mesh.devices.size > 1:
            # each actor device steps its own slice of the envs: no communication (the
            # partitioner alone may gather a world's tables); check_vma=False as in
            # envs.voxel.parallel: loops start from constants and carry per-env values
            e = P("data")
            env_part = jax.shard_map(env_part, mesh=self.actor_mesh, in_specs=(e, e, e, e, P(), e, e),
                                     out_specs=e, check_vma=False)  # fmt: skip

        def step_fn(r: Runner, _):
            key, k_act, k_env = jax.random.split(r.key, 3)
            logits, value, core = self.step_policy(r.params, r.obs, r.prev_action, r.core,
                                                   r.episode_start)  # fmt: skip
            action = losses.sample(k_act, logits, dims)
            logp = losses.log_prob(logits, action, dims)
            env_action = jax.vmap(env.to_env_action)(action)
            env_state, next_obs, rstate, reward, done, success = env_part(
                jax.random.split(k_env, n), r.env_state, env_action, r.env_params, consts,
                r.reward_state, r.task_id,
            )  # fmt: skip
            reward = reward.astype(jnp.float32)
            success = success.astype(bool)
            ep_return, ep_length, finished = episodes.step_episodes(
                r.ep_return, r.ep_length, reward, done
            )
            acted_core = jnp.where(r.episode_start[:, None], 0.0, r.core)  # what the step saw
            store = si.record_step(r.si_store, r.obs, r.prev_action, action, acted_core)
            buf, store = si.finish_episodes(
                r.si_buffer, store, done, finished["return"], success, r.task_id,
                hp.si_min_return, num_tasks=self.num_tasks,
                balance_tasks=self.static.si_balance_tasks,
            )  # fmt: skip
            t = Transition(
                obs=r.obs, prev_action=r.prev_action, action=action, logp=logp, value=value,
                reward=reward, done=done, episode_id=r.episode_id,
                mask=jnp.ones((n,), jnp.float32), core=r.core, start=r.episode_start,
            )  # fmt: skip
            stats = {**finished, "success": success}
            r = r.update(
                key=key,
                env_state=env_state,
                obs=next_obs,
                prev_action=jnp.where(done[:, None], self.noop_action, action),
                ep_return=ep_return,
                ep_length=ep_length,
                episode_id=r.episode_id + done.astype(jnp.int32),
                core=core,
                episode_start=done,
                reward_state=rstate,
                si_buffer=buf,
                si_store=store,
                env_steps=r.env_steps + n,
            )
            return r, (t, stats)

        runner, (traj, stats) = jax.lax.scan(step_fn, runner, None, st.num_steps)
        return runner, traj, self._episode_metrics(stats, runner.task_id)

    def _episode_metrics(self, stats, task_id):
        return episodes.per_task_totals(stats["done"], stats["return"], stats["length"],
                                        stats["success"], task_id, self.num_tasks)  # fmt: skip

    # ---------------------------------------------------------------- PPO update
    def _loss(self, params, mb: Transition, adv, ret, hp: HyperParams):
        st, dims = self.static, self.action_dims
        t_len, nb = mb.action.shape[:2]
        # the carry of each env at the sequence's first step (a memoryless policy's is [nb, 0])
        args = (self.network, params, mb.obs, mb.prev_action, mb.core[0], mb.start)
        if st.aux:
            (logits, value, _), inter = apply_policy(*args, mutable=["intermediates"])
            pred = inter["intermediates"]["aux_pred"][0].reshape(t_len, nb, -1)
            target = jax.lax.stop_gradient(mb.obs["aux_target"])
            valid = mb.obs.get("aux_mask", jnp.ones_like(target))  # per-target: is it defined
            aux = losses.masked_mean(jnp.sum(valid * (pred - target) ** 2, axis=-1), mb.mask)
        else:
            logits, value, _ = apply_policy(*args)
            aux = jnp.zeros(())
        new_logp = losses.log_prob(logits, mb.action, dims)
        if st.norm_adv:
            mean = losses.masked_mean(adv, mb.mask)
            std = jnp.sqrt(losses.masked_mean((adv - mean) ** 2, mb.mask))
            adv = (adv - mean) / (std + 1e-8)
        pg, clipfrac = losses.policy_loss(new_logp, mb.logp, adv, hp.clip_eps, mb.mask)
        vf_clip = hp.vf_clip if st.clip_value else None
        vl = losses.value_loss(value, mb.value, ret, vf_clip, mb.mask)
        ent = losses.masked_mean(losses.entropy(logits, dims), mb.mask)
        reg = losses.masked_mean(
            losses.entropy_regularizer(logits, dims, self.prior_logits), mb.mask
        )
        smooth = (
            losses.action_smoothing_loss(logits, mb.episode_id, st.smooth_window, dims, mb.mask)
            if st.smoothing
            else jnp.zeros(())
        )
        total = pg + hp.vf_coef * vl + hp.ent_coef * reg + hp.smooth_coef * smooth
        total = total + hp.aux_coef * aux
        approx_kl = losses.masked_mean(
            (jnp.exp(new_logp - mb.logp) - 1) - (new_logp - mb.logp), mb.mask
        )
        info = {"pg_loss": pg, "v_loss": vl, "entropy": ent, "smooth_loss": smooth,
                "approx_kl": approx_kl, "clipfrac": clipfrac}  # fmt: skip
        if st.aux:
            info["aux_loss"] = aux
        return total, info

    def ppo_update(self, runner: Runner, traj: Transition, hp: HyperParams | None = None):
        st = self.static
        hp = self.hp if hp is None else hp
        chex.assert_rank(traj.reward, 2)
        _, last_value, _ = self.step_policy(runner.params, runner.obs, runner.prev_action,
                                            runner.core, runner.episode_start)  # fmt: skip
        stats = runner.return_stats
        if st.norm_returns:
            # The critic predicts returns in the running statistics' units (PopArt's targets
            # without its output correction): its loss, and so its gradient on the trunk the
            # policy shares, no longer grows with the reward's scale (a MineCLIP return is ~50x
            # a manual one). GAE works in the reward's own units.
            mean, std = losses.return_mean_std(stats)
            raw_value, last_value = traj.value * std + mean, last_value * std + mean
            adv, ret = losses.gae(traj.reward, raw_value, traj.done, last_value, hp.gamma,
                                  hp.gae_lambda)  # fmt: skip
            stats = losses.update_return_stats(stats, ret, traj.mask)
            mean, std = losses.return_mean_std(stats)
            traj = traj.replace(value=(raw_value - mean) / std)
            ret = (ret - mean) / std
        else:
            adv, ret = losses.gae(
                traj.reward, traj.value, traj.done, last_value, hp.gamma, hp.gae_lambda
            )
        if not self.sequences:
            # no temporal term: shuffle single transitions (flatten [T, N] -> [1, T * N])
            flat = lambda x: x.reshape((1, -1) + x.shape[2:])  # noqa: E731
            traj, adv, ret = jax.tree.map(flat, (traj, adv, ret))
        n = traj.reward.shape[1]
        mb_size = n // st.num_minibatches
        unroll = bool(st.unroll)
        anneal = self.grad_steps if st.anneal_lr else None
        key, k_upd = jax.random.split(runner.key)

        def epoch(carry, k):
            perm = jax.random.permutation(k, n).reshape(st.num_minibatches, mb_size)

            def minibatch(carry, idx):
                params, opt_state = carry
                take = lambda x: jnp.take(x, idx, axis=1)  # noqa: E731
                mb = jax.tree.map(take, traj)
                grads, info = jax.grad(self._loss, has_aux=True)(
                    params, mb, take(adv), take(ret), hp
                )
                params, opt_state = adam_step(grads, opt_state, params, hp.lr,
                                              hp.max_grad_norm, anneal,
                                              hp.lr_final_frac)  # fmt: skip
                return (params, opt_state), info

            return jax.lax.scan(minibatch, carry, perm, unroll=unroll)

        (params, opt_state), info = jax.lax.scan(
            epoch, (runner.params, runner.opt_state),
            jax.random.split(k_upd, st.update_epochs), unroll=unroll,
        )  # fmt: skip
        runner = runner.update(params=params, opt_state=opt_state, key=key,
                               update_step=runner.update_step + 1, return_stats=stats)  # fmt: skip
        metrics = jax.tree.map(jnp.mean, info)
        if st.norm_returns:
            metrics["return_std"] = losses.return_mean_std(stats)[1]
        metrics["value_mean"] = jnp.mean(traj.value)
        metrics["reward_mean"] = jnp.mean(traj.reward)
        return runner, metrics

    def _iteration(self, runner: Runner, consts, hp: HyperParams):
        runner, traj, ep = self.rollout(runner, consts, hp)
        runner, metrics = self.ppo_update(runner, traj, hp)
        return runner, {**metrics, **ep}

    # ---------------------------------------------------------------- self-imitation
    def _si_phase(self, runner: Runner, consts, hp: HyperParams):
        del consts
        st, dims = self.static, self.action_dims
        buf = runner.si_buffer
        nt = self.num_tasks

        def step(carry, k):
            params, opt_state = carry
            idx, ok = si.sample(k, buf, st.si_batch, hp.si_unsuccessful_weight, nt,
                                st.si_balance_tasks)  # fmt: skip
            # time-major [L, b] sequences, replayed from the carry of their first kept step
            take = lambda x: jnp.swapaxes(x[idx], 0, 1)  # noqa: E731
            obs = jax.tree.map(take, buf.obs)
            length = buf.length[idx]
            b, L = st.si_batch, buf.max_len
            mask = (jnp.arange(L)[:, None] < length[None, :]).astype(jnp.float32) * ok
            core0 = buf.core[idx, 0]
            no_start = jnp.zeros((L, b), bool)  # stored carries are already zeroed at a start

            def loss_fn(p):
                logits, _, _ = apply_policy(self.network, p, obs, take(buf.prev_action), core0,
                                            no_start)  # fmt: skip
                return losses.imitation_loss(logits, take(buf.action), dims, mask)

            loss, grads = jax.value_and_grad(loss_fn)(params)
            grads = jax.tree.map(lambda g: g * ok, grads)
            new_params, new_opt = adam_step(grads, opt_state, params, hp.si_lr, hp.max_grad_norm)
            params = jax.tree.map(lambda a, b_: jnp.where(ok, a, b_), new_params, params)
            opt_state = jax.tree.map(lambda a, b_: jnp.where(ok, a, b_), new_opt, opt_state)
            return (params, opt_state), loss

        key, k = jax.random.split(runner.key)
        (params, opt_state), loss = jax.lax.scan(
            step, (runner.params, runner.si_opt_state), jax.random.split(k, st.si_steps),
            unroll=bool(st.unroll),
        )  # fmt: skip
        runner = runner.update(params=params, si_opt_state=opt_state, key=key)
        return runner, {
            "si_loss": jnp.mean(loss),
            "si_size": jnp.sum(buf.valid),
            "si_successes": jnp.sum(buf.valid & buf.success),
        }

    # ---------------------------------------------------------------- jitted entry points
    def _jitted(self, name, fn, runner, extra_in=None, seeds: bool = False):
        """`fn(runner, extra, hp)` jitted once per name (the runner donated, `hp` a traced
        argument, so new hyper-parameters reuse the program); with `seeds`, vmapped over a
        leading seed axis of the runner (K independent runs in one program)."""
        key = (name, seeds)
        if key not in self._jit_cache:
            rs = runner_shardings(runner, self.mesh, seeds=seeds)
            rep = NamedSharding(self.mesh, P())
            in_sh = (rs, rep if extra_in is None else extra_in, rep)
            if seeds:
                fn = jax.vmap(fn, in_axes=(0, None if extra_in is None else 0, None))
            self._jit_cache[key] = jax.jit(
                fn, in_shardings=in_sh, out_shardings=(rs, rep), donate_argnums=0
            )
        return self._jit_cache[key]

    def iteration(self, runner: Runner, hp: HyperParams | None = None, *, seeds: bool = False):
        """Rollout + GAE + PPO update: one jitted, donated call (`seeds`: a seed-stacked runner);
        split meshes: the rollout on the actor devices, the update on the learner's."""
        hp = self.hp if hp is None else hp
        if self.split:
            return self._split_iteration(runner, hp, seeds)
        return self._jitted("iteration", self._iteration, runner, seeds=seeds)(
            runner, self.consts, hp
        )

    def si_phase(self, runner: Runner, hp: HyperParams | None = None, *, seeds: bool = False):
        """`si_steps` behaviour-cloning steps on prioritised buffer samples (compiled once), on
        the learner mesh."""
        hp = self.hp if hp is None else hp
        if self.split:
            return self._split_si(runner, hp, seeds)
        return self._jitted("si", self._si_phase, runner, seeds=seeds)(runner, self.consts, hp)

    def update(self, runner: Runner, traj: Transition, hp: HyperParams | None = None):
        """The PPO update alone on a given `[T, N]` batch (host-stepped driver, tests)."""
        hp = self.hp if hp is None else hp
        if self.split:
            return self._split_update(runner, traj, hp, seeds=False)
        ts = transition_shardings(traj, self.mesh)
        traj = jax.device_put(traj, ts)
        return self._jitted("update", self.ppo_update, runner, ts)(runner, traj, hp)

    # ---------------------------------------------------------------- split meshes
    # Each call below sees only the fields it needs (the others None), placed on its own mesh;
    # what crosses from one mesh to the other is copied (`_copy`), so donating is always safe.
    def _env_spec(self, seeds: bool, time: bool = False) -> P:
        return P(*(None,) * (int(seeds) + int(time)), "data")

    def actor_consts(self):
        """The frozen consts (MineCLIP params, prompt features) replicated on the actor mesh,
        put there once."""
        if "consts" not in self._jit_cache:
            self._jit_cache["consts"] = _copy(self.consts, NamedSharding(self.actor_mesh, P()))
        return self._jit_cache["consts"]

    def _split_iteration(self, runner: Runner, hp: HyperParams, seeds: bool):
        rep_a = NamedSharding(self.actor_mesh, P())
        params, key = _copy((runner.params, runner.key), rep_a)  # this update's actor copy
        view = runner.update(params=None, opt_state=None, si_opt_state=None, key=None,
                             update_step=None, return_stats=None)  # fmt: skip
        if ("split_rollout", seeds) not in self._jit_cache:

            def rollout(view, params, key, consts, hp):
                r, traj, ep = self.rollout(view.update(params=params, key=key), consts, hp)
                return r.update(params=None, key=None), r.key, traj, ep

            if seeds:
                rollout = jax.vmap(rollout, in_axes=(0, 0, 0, None, None))
            vs = runner_shardings(view, self.actor_mesh, seeds)
            traj_sh = NamedSharding(self.actor_mesh, self._env_spec(seeds, time=True))
            self._jit_cache[("split_rollout", seeds)] = jax.jit(
                rollout, in_shardings=(vs, rep_a, rep_a, rep_a, rep_a),
                out_shardings=(vs, rep_a, traj_sh, rep_a), donate_argnums=0,
            )  # fmt: skip
        view, key, traj, ep = self._jit_cache[("split_rollout", seeds)](
            view, params, key, self.actor_consts(), hp
        )
        rep_l = NamedSharding(self.mesh, P())
        runner = Runner(learner=runner.learner.replace(si_buffer=view.si_buffer,
                                                       key=_copy(key, rep_l)),
                        actor=view.actor)  # fmt: skip
        runner, metrics = self._split_update(runner, traj, hp, seeds)
        return runner, {**metrics, **ep}

    def _split_update(self, runner: Runner, traj: Transition, hp: HyperParams, seeds: bool):
        """The update on the learner mesh: the trajectory and the last observations (the GAE
        bootstrap) copied there; the SI buffer stays with the actors."""
        env_l = NamedSharding(self.mesh, self._env_spec(seeds))
        traj_l = NamedSharding(self.mesh, self._env_spec(seeds, time=True))
        obs, prev, core, start = _copy(
            (runner.obs, runner.prev_action, runner.core, runner.episode_start), env_l
        )
        bootstrap = {"obs": obs, "prev_action": prev, "core": core, "episode_start": start}
        view = Runner(learner=runner.learner.replace(si_buffer=None),
                      actor=ActorState(**{**_NO_ACTOR, **bootstrap}))  # fmt: skip
        if ("split_update", seeds) not in self._jit_cache:
            fn = jax.vmap(self.ppo_update, in_axes=(0, 0, None)) if seeds else self.ppo_update
            vs, rep = runner_shardings(view, self.mesh, seeds), NamedSharding(self.mesh, P())
            self._jit_cache[("split_update", seeds)] = jax.jit(
                fn, in_shardings=(vs, traj_l, rep), out_shardings=(vs, rep), donate_argnums=0
            )
        view, metrics = self._jit_cache[("split_update", seeds)](view, _copy(traj, traj_l), hp)
        learner = view.learner.replace(si_buffer=runner.si_buffer)
        return runner.replace(learner=learner), metrics

    def _split_si(self, runner: Runner, hp: HyperParams, seeds: bool):
        """The SI phase on the learner mesh, on a copy of the actors' SI buffer."""
        rep = NamedSharding(self.mesh, P())
        view = Runner(learner=runner.learner.replace(si_buffer=None), actor=ActorState(**_NO_ACTOR))
        if ("split_si", seeds) not in self._jit_cache:

            def si_phase(view, buf, hp):  # the buffer is read, not donated: it stays an input
                r, m = self._si_phase(view.update(si_buffer=buf), None, hp)
                return r.update(si_buffer=None), m

            fn = jax.vmap(si_phase, in_axes=(0, 0, None)) if seeds else si_phase
            vs = runner_shardings(view, self.mesh, seeds)
            self._jit_cache[("split_si", seeds)] = jax.jit(
                fn, in_shardings=(vs, rep, rep), out_shardings=(vs, rep), donate_argnums=0
            )
        buf = _copy(runner.si_buffer, rep)
        view, metrics = self._jit_cache[("split_si", seeds)](view, buf, hp)
        learner = view.learner.replace(si_buffer=runner.si_buffer)
        return runner.replace(learner=learner), metrics


def obs_batch_leading(obs) -> int:
    return jax.tree.leaves(obs)[0].shape[0]

"""`python -m agents.ppo`: PPO + self-imitation on the embedded world (or a JAX CartPole).

    python -m agents.ppo                                   # "hunt a cow", manual dense reward
    python -m agents.ppo --task "hunt a cow" --reward sparse --total-steps 200000 --out runs/sparse
    python -m agents.ppo --task "milk a cow,hunt a cow" --num-envs 8      # multi-task (per-env prompts)
    python -m agents.ppo --task animal_zoo --stages "milk a cow,hunt a cow;shear a sheep,hunt a sheep"
    python -m agents.ppo --reward mineclip --mineclip-ckpt attn.pth       # the paper's setup
    python -m agents.ppo --task cartpole --total-steps 500000             # sanity check
    python -m agents.ppo --out runs/hunt_cow --resume                     # continue a run exactly
    python -m agents.ppo --backend process --num-envs 4                   # host-stepped (bridge)
    python -m agents.ppo --backend minedojo --task harvest_milk_with_empty_bucket_and_cow \
        --minedojo-jar MalmoMod-0.37.0-fat.jar                           # MineDojo's Java simulator
    python -m agents.ppo --backend minedojo --task harvest_milk_with_empty_bucket_and_cow \
        --minedojo-jar MalmoMod-0.37.0-fat.jar --reward mineclip --mineclip-ckpt attn.pth

The run directory (`--out`) gets `config.json`, orbax checkpoints (params, optimizer states, SI
buffer, env and RNG state, step), `metrics.jsonl`, TensorBoard events and MP4 episode videos.
Everything here is importable: `train(cfg)`, `build(cfg)`, `load_policy(run_dir)`.

`--backend jax` rolls out inside one jitted `lax.scan` (Anakin); `process` and `minedojo` step a
Gymnasium vector env of bridge workers on the host with batched jitted inference per step
(`agents.sebulba.HostDriver`, Sebulba), then run the same update; with --mineclip-ckpt that
per-step call also encodes each 160x256 frame once with MineCLIP (policy features and, with
--reward mineclip, the reward's 16-frame window). Host-stepped runs checkpoint the learner, not
the simulators: `--resume` restarts the envs, so it is not bitwise-identical.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from agents import learner as lrn
from agents import losses, networks, testing

TASK_GROUPS = {  # fallback when envs.tasks.paper.GROUPS is unavailable
    "animal_zoo": ("milk_cow", "hunt_cow", "shear_sheep", "hunt_sheep"),
}


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO + self-imitation for MineDojo tasks (paper Sec. 4.2, App. F-G).

    Run: python -m agents.ppo --task "hunt a cow" --reward manual --out runs/hunt_cow
    """

    task: str = "hunt a cow"
    """task id or prompt, several separated by commas (one per env, round robin), a group (animal_zoo, mob_combat), or cartpole"""
    reward: Literal["mineclip", "manual", "sparse"] = "manual"
    """training reward: MineCLIP (needs --mineclip-ckpt), the task's manual dense reward, or success only; success bonus added to all"""
    mineclip_ckpt: str | None = None
    """MineCLIP checkpoint (attn.pth / avg.pth / native dir): frozen image features for the policy and, with --reward mineclip, the reward"""
    mineclip_reward: Literal["direct", "delta"] = "direct"
    """MineCLIP reward form: Direct (moving targets) or Delta (static targets)"""
    success_bonus: float = 10.0
    """reward added on the step a programmatic task succeeds"""
    stages: str = ""
    """multi-stage training: task lists separated by ';' trained in turn (SI buffer kept, policy head reset); overrides --task"""
    num_envs: int = 8
    """parallel environments (a multiple of the device count and of --num-minibatches)"""
    num_steps: int = 64
    """rollout length per env per update"""
    total_steps: int = 16_384
    """env steps per stage"""
    seed: int = 0
    """random seed (params, envs, sampling)"""
    out: str = "runs/ppo"
    """run directory: config, checkpoints, metrics.jsonl, TensorBoard events, videos"""
    resume: bool = False
    """continue the run in --out from its latest checkpoint (its saved config is used)"""
    lr: float = 3e-4
    """Adam learning rate of the PPO phase"""
    anneal_lr: bool = True
    """linearly anneal the PPO learning rate to 0"""
    gamma: float = 0.99
    """discount"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    clip_eps: float = 0.2
    """PPO ratio clip"""
    vf_clip: float | None = None
    """value clip range (None: unclipped value loss)"""
    ent_coef: float = 0.01
    """entropy bonus coefficient (with --action-prior balanced: of KL(policy || prior), the bonus measured against the prior)"""
    vf_coef: float = 0.5
    """value loss coefficient"""
    smooth_coef: float = 0.0
    """action-smoothing KL coefficient (paper App. G.3; 0 disables)"""
    smooth_window: int = 4
    """action-smoothing sliding window |W| (steps)"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    update_epochs: int = 4
    """PPO epochs per update"""
    num_minibatches: int = 4
    """minibatches per epoch (each a set of whole envs)"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    si_every: int = 4
    """PPO updates between self-imitation phases (0 disables SI)"""
    si_steps: int = 4
    """gradient steps per SI phase"""
    si_batch: int = 4
    """trajectories per SI gradient step"""
    si_capacity: int = 32
    """trajectories kept in the SI buffer"""
    si_max_len: int = 128
    """steps kept per SI trajectory (longer episodes keep their last steps, the ones that led to the outcome)"""
    si_lr: float = 1e-4
    """Adam learning rate of the SI phase"""
    si_unsuccessful_weight: float = 0.5
    """sampling weight of the best unsuccessful trajectory (successful ones weigh 1)"""
    si_min_return: float = 0.0
    """unsuccessful episodes need a return above this to enter the SI buffer"""
    si_balance_tasks: bool = True
    """give every task the same SI sampling mass (multi-task replay balancing)"""
    privileged_critic: bool = False
    """embedded world: the critic also sees simulator features of the task's target (direction, distance, reach, fleeing; envs.voxel.target_features); the policy still sees only MineDojo's observations"""
    privileged_policy: bool = False
    """embedded world, ablation: the policy itself also sees those target features (oracle perception; such a policy cannot act without them)"""
    aux_coef: float = 0.0
    """weight of an auxiliary loss in which the policy's own features predict whether the target is in the frame, where and how far (embedded world; 0: off)"""
    action_space: Literal["compact", "multidiscrete"] = "compact"
    """policy head: the paper's 89 compact actions, or MineDojo's first 6 MultiDiscrete components (factorised)"""
    action_prior: Literal["uniform", "balanced"] = "balanced"
    """initial policy over the compact actions: uniform over all 89 (72 tilt the view, so a fresh agent mostly stares at sky or ground) or a quarter each to level turns, tilting turns, movement and use/attack"""
    cnn: Literal["impala", "nature"] = "impala"
    """image encoder without MineCLIP: IMPALA residual CNN, or the strided DQN CNN (about 4x cheaper to train on a CPU)"""
    agent_size: Literal["small", "paper"] = "small"
    """MineAgent widths: small (fast on CPU) or the paper's (fusion 512, actor 256x3)"""
    image_size: tuple[int, int] = (48, 64)
    """embedded world rgb height, width without MineCLIP (MineCLIP forces 160 256)"""
    world_size: int = 32
    """embedded world extent in blocks (x and z)"""
    world_pool: int = 8
    """pre-generated worlds resets draw from"""
    render: bool = True
    """render rgb frames (off: much faster; the policy sees compass, gps, voxels; no videos)"""
    max_episode_steps: int = 200
    """embedded world episode limit in game ticks (an env step is --action-repeat ticks)"""
    action_repeat: int = 1
    """embedded world game ticks per env step (camera turn and one-shot actions on the first tick, movement and attack held, one frame rendered)"""
    backend: Literal["jax", "process", "minedojo"] = "jax"
    """rollouts: jax (embedded world in a lax.scan on device), process (embedded world, one env per bridge worker process, host-stepped) or minedojo (MineDojo's Java simulator via the bridge, frames at --image-size, 160x256 with MineCLIP)"""
    bridge_envs_per_worker: int = 1
    """--backend process: envs hosted (stepped in turn) by one worker process"""
    bridge_timeout_s: float | None = None
    """host-stepped backends: deadline of one env step in seconds, past it the worker is restarted and the episode truncated (default: 60 process, 120 minedojo)"""
    bridge_max_restarts: int = 3
    """host-stepped backends: consecutive failures of one worker tolerated before the run stops"""
    minedojo_jar: str | None = None
    """--backend minedojo: prebuilt MalmoMod-0.37.0-fat.jar (default: $MINECLIP_MALMO_JAR; docs/bridge.md)"""
    minedojo_java: str | None = None
    """--backend minedojo: Java 8 executable (default: $JAVA_HOME/bin/java, then PATH)"""
    minedojo_run_template: str | None = None
    """--backend minedojo: MineDojo's Malmo/Minecraft/run dir copied per instance (default: $MINECLIP_MALMO_RUN_TEMPLATE)"""
    minedojo_headless: bool | None = None
    """--backend minedojo: run Minecraft under xvfb-run (default: when $DISPLAY is unset)"""
    minedojo_port: int | None = None
    """--backend minedojo: connect to a Malmo server already listening on this port instead of launching Minecraft (--num-envs 1)"""
    num_devices: int | None = None
    """devices in the data-parallel mesh (default: all)"""
    unroll: bool | None = None
    """unroll the epoch/minibatch scans (default: on CPU with a CNN, avoiding jax-ml/jax#12868)"""
    log_every: int = 1
    """updates between console/TensorBoard logs"""
    checkpoint_every: int = 20
    """updates between checkpoints (the last update is always saved)"""
    video_every: int = 0
    """updates between MP4 episode videos (0: only at the end; -1: never)"""
    video_length: int = 100
    """steps per video"""
    progress: bool = True
    """show the console progress bar"""
    compile_cache: str = "~/.cache/mineclip_jax/xla"
    """persistent XLA compilation cache directory, reused by later runs ('' disables)"""


# ----------------------------------------------------------------------------- validation
class ConfigError(ValueError):
    """A bad flag; the message names the flag and the fix."""


def resolve_tasks(task: str) -> tuple[str, ...]:
    """`--task` -> tuple of task prompts/ids (group names expanded)."""
    task = task.strip()
    if not task:
        raise ConfigError("--task is empty; give a task id or prompt, e.g. --task 'hunt a cow'")
    try:
        from envs.tasks.paper import GROUPS
    except ImportError:  # pragma: no cover - older envs package
        GROUPS = TASK_GROUPS
    if task.lower() in GROUPS:
        return tuple(GROUPS[task.lower()])
    return tuple(t.strip() for t in task.split(",") if t.strip())


def _task_specs(names):
    from envs import tasks as envs_tasks

    specs = []
    for name in names:
        try:
            specs.append(envs_tasks.get(name))
        except KeyError as e:  # UnknownTaskError carries suggestions
            raise ConfigError(
                f"unknown task {name!r} for --task: {e}. Use a task id or prompt from "
                "envs.tasks.list_tasks(backend='voxel'), a group "
                f"({', '.join(TASK_GROUPS)}), or cartpole"
            ) from None
    return specs


def validate(cfg: PPOConfig) -> None:
    """Raise ConfigError for flags that cannot work, before anything is built."""
    for name in ("num_envs", "num_steps", "total_steps", "update_epochs", "num_minibatches"):
        if getattr(cfg, name) <= 0:
            raise ConfigError(
                f"--{name.replace('_', '-')} must be positive, got {getattr(cfg, name)}"
            )
    if cfg.num_envs % cfg.num_minibatches:
        raise ConfigError(
            f"--num-envs {cfg.num_envs} must be divisible by --num-minibatches "
            f"{cfg.num_minibatches} (minibatches are sets of whole envs)"
        )
    ndev = cfg.num_devices or len(jax.devices())
    if ndev > len(jax.devices()):
        raise ConfigError(f"--num-devices {ndev} but only {len(jax.devices())} devices exist")
    if cfg.num_envs % ndev:
        raise ConfigError(
            f"--num-envs {cfg.num_envs} must be a multiple of the {ndev} devices in the mesh "
            "(or pass --num-devices)"
        )
    if cfg.reward == "mineclip" and not cfg.mineclip_ckpt:
        raise ConfigError("--reward mineclip needs --mineclip-ckpt PATH (attn.pth, avg.pth or a "
                          "native checkpoint dir); without one use --reward manual or sparse")  # fmt: skip
    if cfg.mineclip_ckpt and not Path(cfg.mineclip_ckpt).expanduser().exists():
        raise ConfigError(
            f"--mineclip-ckpt {cfg.mineclip_ckpt!r} does not exist; download attn.pth from the "
            "MineCLIP release (or convert one with mineclip_jax.convert) and pass its path"
        )
    if cfg.smooth_window < 1:
        raise ConfigError(f"--smooth-window must be >= 1, got {cfg.smooth_window}")
    if cfg.aux_coef < 0:
        raise ConfigError(f"--aux-coef must be >= 0, got {cfg.aux_coef}")
    if cfg.si_every > 0 and (cfg.si_capacity <= 0 or cfg.si_max_len <= 0 or cfg.si_batch <= 0):
        raise ConfigError("--si-capacity, --si-max-len and --si-batch must be positive with SI on")
    stages = stage_tasks(cfg)
    _validate_backend(cfg, stages)
    if any(t == "cartpole" for s in stages for t in s):
        if any(t != "cartpole" for s in stages for t in s) or any(len(s) > 1 for s in stages):
            raise ConfigError("cartpole cannot be mixed with other tasks")
        if cfg.mineclip_ckpt:
            raise ConfigError("--mineclip-ckpt needs a task with rgb frames; cartpole has none")
    else:
        for s in stages:
            _task_specs(s)


def _uses_target_features(cfg: PPOConfig) -> bool:
    """Whether training reads envs.voxel.target_features (privileged critic / policy, aux loss)."""
    return cfg.privileged_critic or cfg.privileged_policy or cfg.aux_coef > 0


def _validate_backend(cfg: PPOConfig, stages) -> None:
    uses_target_features = _uses_target_features(cfg)
    if cfg.backend == "jax":
        if uses_target_features and any(t == "cartpole" for s in stages for t in s):
            raise ConfigError("--privileged-critic / --privileged-policy / --aux-coef read the "
                              "embedded world's state; cartpole has no task target")  # fmt: skip
        return
    flag = f"--backend {cfg.backend}"
    if any(t == "cartpole" for s in stages for t in s):
        raise ConfigError(f"cartpole is a JAX env; train it with --backend jax, not {flag}")
    if uses_target_features:
        raise ConfigError(f"--privileged-critic / --privileged-policy / --aux-coef read the "
                          f"embedded world's state, which {flag} does not expose; use --backend "
                          f"jax or turn them off")  # fmt: skip
    if cfg.bridge_envs_per_worker < 1:
        raise ConfigError(
            f"--bridge-envs-per-worker must be >= 1, got {cfg.bridge_envs_per_worker}"
        )
    if cfg.bridge_timeout_s is not None and cfg.bridge_timeout_s <= 0:
        raise ConfigError(f"--bridge-timeout-s must be positive, got {cfg.bridge_timeout_s}")
    if cfg.bridge_max_restarts < 0:
        raise ConfigError(f"--bridge-max-restarts must be >= 0, got {cfg.bridge_max_restarts}")
    if cfg.backend != "minedojo":
        return
    if any(len(s) > 1 for s in stages):
        raise ConfigError(
            "--backend minedojo runs one task per stage (every env runs it); give one --task, "
            "or a curriculum with --stages 'task a;task b'"
        )
    if cfg.bridge_envs_per_worker != 1:
        raise ConfigError("--bridge-envs-per-worker is for --backend process; MineDojo runs one "
                          "Minecraft per worker")  # fmt: skip
    if cfg.minedojo_port is not None:
        if cfg.num_envs != 1:
            raise ConfigError(
                f"--minedojo-port connects every env to one running server; use --num-envs 1 "
                f"(and --num-minibatches 1), got --num-envs {cfg.num_envs}"
            )
        return
    from envs.bridge import launcher

    try:  # the bridge's own checks, here rather than after N workers failed to launch
        launcher.resolve_jar(cfg.minedojo_jar)
        launcher.resolve_java(cfg.minedojo_java)
    except launcher.LaunchError as e:
        raise ConfigError(
            f"--backend minedojo: {e}. CLI: --minedojo-jar PATH / --minedojo-java PATH; or train "
            "on the embedded world with --backend jax or process"
        ) from None


def stage_tasks(cfg: PPOConfig) -> list[tuple[str, ...]]:
    if cfg.stages.strip():
        return [resolve_tasks(s) for s in cfg.stages.split(";") if s.strip()]
    return [resolve_tasks(cfg.task)]


# ----------------------------------------------------------------------------- building
def _cartpole_env(cfg: PPOConfig) -> lrn.JaxEnv:
    n = cfg.num_envs
    params = jax.tree.map(
        lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float32), (n,)), testing.CartPoleParams()
    )
    return lrn.JaxEnv(
        reset=testing.reset,
        step=testing.step_autoreset,
        params=params,
        static=testing.CartPoleStatic(),
        action_dims=testing.ACTION_DIMS,
        to_env_action=lambda a: a,
        policy_obs=lambda o: o,
        reward_fn=lambda r, info: r,
        task_ids=np.zeros(n, np.int32),
        num_tasks=1,
        task_names=("cartpole",),
    )


def _with_target_features(reset, step):
    """reset/step that add obs["target_features"] (envs.voxel.target_features of the state the
    observation belongs to; after an auto-reset, of the new episode)."""
    from envs import voxel

    def reset_tf(key, params, static):
        obs, state = reset(key, params, static)
        return {**obs, "target_features": voxel.target_features(state, params, static)}, state

    def step_tf(key, state, action, params, static):
        obs, state, reward, terminated, truncated, info = step(key, state, action, params, static)
        obs = {**obs, "target_features": voxel.target_features(state, params, static)}
        return obs, state, reward, terminated, truncated, info

    return reset_tf, step_tf


def _voxel_policy_obs(obs):
    """Embedded-world observation -> MineAgent inputs (see agents.networks)."""
    out = {}
    if "rgb" in obs:
        out["rgb"] = obs["rgb"]
    loc = obs.get("location_stats", {})
    if "yaw" in loc and "pitch" in loc:
        yaw = jnp.deg2rad(jnp.asarray(loc["yaw"], jnp.float32).reshape(()))
        pitch = jnp.deg2rad(jnp.asarray(loc["pitch"], jnp.float32).reshape(()))
        out["compass"] = jnp.stack([jnp.sin(yaw), jnp.cos(yaw), jnp.sin(pitch), jnp.cos(pitch)])
    if "pos" in loc:
        out["gps"] = jnp.asarray(loc["pos"], jnp.float32).reshape(3) / jnp.array(
            [1000.0, 100.0, 1000.0]
        )
    vox = obs.get("voxels")
    if isinstance(vox, dict) and "block_name" in vox:
        out["voxels"] = jnp.asarray(vox["block_name"], jnp.int32).reshape(-1)
    if "target_features" in obs:  # training-only: the critic's input / the auxiliary targets
        tf = jnp.asarray(obs["target_features"], jnp.float32)
        out["privileged"] = tf
        out["aux_target"], out["aux_mask"] = _aux_targets(tf)
    return out


AUX_FEATURES = ("in_view", "screen_x", "screen_y", "distance")
"""What --aux-coef asks the policy's features to predict: whether the task's target is in the
frame, where, and how far; where and how far count only while it is in view (what the frame
shows)."""


def _aux_targets(target_features):
    from envs.voxel import env as voxel_env

    idx = [voxel_env.TARGET_FEATURES.index(n) for n in AUX_FEATURES]
    target = target_features[..., jnp.array(idx)]
    in_view = target_features[..., voxel_env.TARGET_FEATURES.index("in_view")]
    mask = jnp.stack([jnp.ones_like(in_view)] + [in_view] * (len(AUX_FEATURES) - 1), axis=-1)
    return target, mask


def _voxel_api():
    """The embedded world's functional API (docs/interfaces.md), from `envs.voxel` or, while its
    package exports are not in place, from its modules."""
    from envs import voxel

    if all(
        hasattr(voxel, n) for n in ("reset", "step_autoreset", "make_params", "VoxelStaticConfig")
    ):
        api = voxel
    else:
        from types import SimpleNamespace

        from envs.voxel import env as venv
        from envs.voxel.state import VoxelStaticConfig

        api = SimpleNamespace(reset=venv.reset, step_autoreset=venv.step_autoreset,
                              make_params=venv.make_params, VoxelStaticConfig=VoxelStaticConfig)  # fmt: skip
    # Build the renderer's cached assets outside any trace (they are cached on first use and a
    # first use under jit would leak tracers into the cache).
    try:
        from envs.voxel import env as venv

        if hasattr(venv, "_render_assets"):
            venv._render_assets()
    except ImportError:  # pragma: no cover
        pass
    return api


def _voxel_env(cfg: PPOConfig, task_names: tuple[str, ...], use_mineclip: bool) -> lrn.JaxEnv:
    from envs import spaces

    voxel = _voxel_api()

    specs = _task_specs(task_names)
    h, w = (160, 256) if use_mineclip else tuple(cfg.image_size)
    static = voxel.VoxelStaticConfig(
        size_x=cfg.world_size, size_z=cfg.world_size, height=h, width=w,
        render=cfg.render or use_mineclip,
        world_pool_size=cfg.world_pool, action_repeat=cfg.action_repeat,
    )  # fmt: skip
    n = cfg.num_envs
    task_ids = np.arange(n, dtype=np.int32) % len(specs)
    pool = None
    per_task = []
    for spec in specs:  # one world pool shared by every task
        p = voxel.make_params(spec, static, seed=cfg.seed, pool=pool,
                              max_steps=cfg.max_episode_steps)  # fmt: skip
        pool = p.pool
        per_task.append(p)
    params = jax.tree.map(lambda *xs: jnp.stack(xs)[task_ids], *per_task)
    if cfg.action_space == "compact":
        table = jnp.asarray(spaces.COMPACT_ACTIONS, jnp.int32)
        dims = (int(spaces.NUM_COMPACT_ACTIONS),)

        def to_env_action(a):
            return table[a[0]]
    else:
        dims = tuple(int(x) for x in spaces.ACTION_NVEC[:6])

        def to_env_action(a):
            return jnp.concatenate([a, jnp.zeros((2,), jnp.int32)])

    bonus = cfg.success_bonus
    if cfg.reward == "manual":

        def reward_fn(r, info):
            return info["dense_reward"] + bonus * info["success"].astype(jnp.float32)
    else:  # sparse (mineclip adds its own term through the hooks)

        def reward_fn(r, info):
            return bonus * info["success"].astype(jnp.float32)

    reset, step = voxel.reset, voxel.step_autoreset
    if _uses_target_features(cfg):
        reset, step = _with_target_features(reset, step)

    return lrn.JaxEnv(
        reset=reset,
        step=step,
        params=params,
        static=static,
        action_dims=dims,
        to_env_action=to_env_action,
        policy_obs=_voxel_policy_obs,
        reward_fn=reward_fn,
        task_ids=task_ids,
        num_tasks=len(specs),
        task_names=tuple(s.id for s in specs),
        task_conditioned=True,
    )


def _mineclip_hooks(cfg: PPOConfig, env: lrn.JaxEnv, prompts: tuple[str, ...]):
    """Frozen MineCLIP frame features for the policy (+ the MineCLIP reward with --reward mineclip)."""
    import mineclip_jax as mcj
    from mineclip_jax import reward as mcr

    mc = mcj.load_checkpoint(os.path.expanduser(cfg.mineclip_ckpt))
    rew = mcr.MineCLIPReward(mc, goal=list(prompts), kind=cfg.mineclip_reward)
    goal_text = rew.spec.text_features[rew.spec.goal_prompt]  # [G, D]
    consts = {"spec": rew.spec, "goal_text": goal_text}
    module = mc.module
    use_reward = cfg.reward == "mineclip"
    base_reward = env.reward_fn

    def featurize(c, obs):
        obs = dict(obs)
        rgb = obs.pop("rgb")
        obs["rgb_feat"] = module.apply({"params": c["spec"].params}, rgb, method="encode_frames")
        obs["prompt"] = c["goal_text"][obs.pop("task_id")]
        return obs

    def init(c, n, task_ids):
        return mcr.init_state(c["spec"], n, np.asarray(task_ids) % len(prompts))

    def step(c, rstate, obs, done, r_env, info):
        base = jax.vmap(base_reward)(r_env, info)
        if not use_reward:
            return rstate, base
        rstate, r_clip, _ = mcr.reward_step(c["spec"], rstate, obs["rgb_feat"], done)
        # On a done step the new frame belongs to the next episode: no MineCLIP term.
        return rstate, base + jnp.where(done, 0.0, r_clip)

    def start(c, rstate, obs):
        if not use_reward:
            return rstate
        first = jnp.ones(obs["rgb_feat"].shape[:1], jnp.bool_)
        return mcr.reward_step(c["spec"], rstate, obs["rgb_feat"], first)[0]

    hooks = lrn.RewardHooks(featurize=featurize, init=init, step=step, start=start)
    return hooks, consts, mc


def compact_action_prior(kind: str) -> tuple[float, ...] | None:
    """Initial logits over the 89 compact actions (None for a uniform policy).

    "balanced" gives four groups a quarter of the probability each, uniform within a group:
    level camera turns (pitch 0, 9 incl. the no-op), turns that change the pitch (72), movement
    (6) and {use, attack}. Under a uniform policy forward has probability 2/89 and attack 1/89,
    and 72/89 of the steps tilt the view, so a fresh agent ends up staring at the sky or the
    ground, turning in place; in "hunt a cow" random play hits a cow in 1.2% of 400-tick
    episodes with the uniform policy and 7.8% with this one.
    """
    if kind == "uniform":
        return None
    if kind != "balanced":
        raise ConfigError(f"--action-prior must be uniform or balanced, got {kind!r}")
    from envs import spaces

    def group(name: str) -> int:
        if name.startswith("camera_pitch+0_"):
            return 0
        if name.startswith("camera"):
            return 1
        return 3 if name in ("use", "attack") else 2

    groups = [group(n) for n in spaces.COMPACT_NAMES]
    sizes = np.bincount(groups, minlength=4)
    return tuple(float(np.log(1.0 / (4.0 * sizes[g]))) for g in groups)


def build_network(cfg: PPOConfig, env: lrn.JaxEnv):
    if env.task_names == ("cartpole",):
        return networks.MLPActorCritic(env.action_dims)
    from envs import spaces
    from envs.voxel import env as voxel_env

    prior = None
    if cfg.action_space == "compact":
        p = compact_action_prior(cfg.action_prior)
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
        privileged_size=voxel_env.NUM_TARGET_FEATURES,
        aux_dim=len(AUX_FEATURES) if cfg.aux_coef > 0 else 0,
        **size,
    )


@dataclasses.dataclass
class Built:
    learner: lrn.Learner
    env: lrn.JaxEnv
    mineclip: object | None


_BUILT: dict = {}


def build(cfg: PPOConfig, tasks: tuple[str, ...] | None = None) -> Built:
    """Env, network, hooks and the jitted learner for one stage.

    Cached per (config, tasks) within the process, ignoring run-directory and logging fields, so
    a resumed or repeated run in the same process reuses the compiled functions."""
    tasks = tuple(tasks or stage_tasks(cfg)[0])
    key = (dataclasses.replace(cfg, task="", stages="", out="", resume=False, progress=False,
                               log_every=1,
                               checkpoint_every=1, video_every=0, video_length=1), tasks)  # fmt: skip
    if key not in _BUILT:
        _BUILT[key] = _build(cfg, tasks)
    return _BUILT[key]


def _build(cfg: PPOConfig, tasks: tuple[str, ...]) -> Built:
    if tasks == ("cartpole",):
        env = _cartpole_env(cfg)
        hooks, consts, mc = None, None, None
    else:
        use_mc = bool(cfg.mineclip_ckpt)
        env = _voxel_env(cfg, tasks, use_mc)
        hooks, consts, mc = (None, None, None)
        if use_mc:
            from envs import tasks as envs_tasks

            prompts = tuple(envs_tasks.get(t).prompt for t in tasks)
            hooks, consts, mc = _mineclip_hooks(cfg, env, prompts)
    network = build_network(cfg, env)
    unroll = cfg.unroll
    if unroll is None:
        unroll = (
            jax.default_backend() == "cpu"
            and not cfg.mineclip_ckpt
            and env.task_names != ("cartpole",)
        )
    lcfg = dataclasses.replace(cfg, unroll=unroll)
    mesh = lrn.make_mesh(cfg.num_devices)
    return Built(lrn.Learner(lcfg, env, network, mesh, hooks=hooks, consts=consts), env, mc)


# ----------------------------------------------------------------------------- host-stepped
def make_host_vector_env(cfg: PPOConfig, tasks: tuple[str, ...], log_dir: Path | None = None):
    """The Gymnasium vector env of a host-stepped backend: the embedded world in bridge worker
    processes (`process`, env i runs `tasks[i % len(tasks)]`) or MineDojo's Java simulator.
    With a MineCLIP checkpoint the frames are 160x256 (what MineCLIP was trained on) and
    rendered whatever --image-size / --no-render say, as on the jax backend."""
    use_mc = bool(cfg.mineclip_ckpt)
    h, w = (160, 256) if use_mc else tuple(cfg.image_size)
    common = dict(max_restarts=cfg.bridge_max_restarts,
                  log_dir=None if log_dir is None else str(log_dir))  # fmt: skip
    if cfg.backend == "process":
        from envs.bridge import ProcessVectorEnv

        timeout = cfg.bridge_timeout_s or 60.0
        return ProcessVectorEnv(
            "agents.host_envs:voxel_env", cfg.num_envs, timeout_s=timeout,
            startup_timeout_s=max(600.0, timeout), envs_per_worker=cfg.bridge_envs_per_worker,
            tasks=tuple(tasks), seed=cfg.seed, compile_cache=cfg.compile_cache,
            render=cfg.render or use_mc, height=h, width=w, size_x=cfg.world_size, size_z=cfg.world_size,
            world_pool_size=cfg.world_pool, max_steps=cfg.max_episode_steps, **common,
        )  # fmt: skip
    if cfg.backend == "minedojo":
        import envs

        opts = dict(jar=cfg.minedojo_jar, java=cfg.minedojo_java,
                    run_template=cfg.minedojo_run_template, headless=cfg.minedojo_headless)  # fmt: skip
        if cfg.minedojo_port is not None:
            opts["malmo_port"] = cfg.minedojo_port
        return envs.make_vector(tasks[0], cfg.num_envs, backend="minedojo", height=h, width=w,
                                timeout_s=cfg.bridge_timeout_s or 120.0, **common, **opts)  # fmt: skip
    raise ConfigError(f"--backend {cfg.backend!r} is not host-stepped")


def host_mineclip_hooks(cfg: PPOConfig, tasks: tuple[str, ...]):
    """`_mineclip_hooks` for `agents.sebulba.HostDriver`: the same featurize / init / step, with a
    zero base reward (the host adds manual / sparse + success bonus itself), so `step` gives the
    MineCLIP term alone (zero without --reward mineclip). Returns (hooks, consts, handle)."""
    from types import SimpleNamespace

    from envs import tasks as envs_tasks

    prompts = tuple(envs_tasks.get(t).prompt for t in tasks)
    return _mineclip_hooks(cfg, SimpleNamespace(reward_fn=lambda r, info: r), prompts)


def build_host_driver(cfg: PPOConfig, tasks: tuple[str, ...], vec_env):
    """HostDriver over `vec_env` with the policy, observations, actions and rewards of the
    on-device path: the same network (`build_network`), `_voxel_policy_obs` (the Gymnasium obs
    dict has the embedded world's layout), the compact action table, manual / sparse rewards
    and, with --mineclip-ckpt, frozen MineCLIP features (+ the MineCLIP reward with --reward
    mineclip) computed once per frame in the driver's inference call (`host_mineclip_hooks`)."""
    from types import SimpleNamespace

    from agents import sebulba
    from envs import spaces

    names = tuple(s.id for s in _task_specs(tasks))
    if cfg.action_space == "compact":
        dims = (int(spaces.NUM_COMPACT_ACTIONS),)
        table = np.asarray(spaces.COMPACT_ACTIONS, np.int64)

        def to_env_action(a):
            return table[a[:, 0]]
    else:
        dims = tuple(int(x) for x in spaces.ACTION_NVEC[:6])

        def to_env_action(a):
            return np.concatenate([a, np.zeros((a.shape[0], 2), a.dtype)], axis=1)

    use_mc = bool(cfg.mineclip_ckpt)

    def policy_obs(obs):
        if not cfg.render and not use_mc:  # MineDojo always sends frames; --no-render hides them
            obs = {k: v for k, v in obs.items() if k != "rgb"}
        return _voxel_policy_obs(obs)

    n, bonus = cfg.num_envs, np.float32(cfg.success_bonus)

    def success_fn(info, n=n):
        return np.asarray(info.get("success", np.zeros(n, bool)), bool)

    def reward_fn(r, info):
        r_succ = bonus * success_fn(info).astype(np.float32)
        if cfg.reward != "manual":  # sparse; mineclip adds its term through the hooks
            return r_succ
        # manual: the embedded world reports its dense shaping; MineDojo cannot (Malmo has no
        # target distances), so there it is the task's programmatic reward
        dense = info.get("dense_reward") if cfg.backend == "process" else r
        if dense is None:  # no env reported one this step (all were resetting)
            dense = np.zeros(n, np.float32)
        return np.asarray(dense, np.float32) + r_succ

    net = build_network(cfg, SimpleNamespace(task_names=names, action_dims=dims,
                                             num_tasks=len(names)))  # fmt: skip
    hooks, consts = (host_mineclip_hooks(cfg, tasks)[:2]) if use_mc else (None, None)
    # as on the jax backend: unrolled scans on CPU for the CNN, not for MineCLIP features
    unroll = (jax.default_backend() == "cpu" and not use_mc) if cfg.unroll is None else cfg.unroll
    return sebulba.HostDriver(
        dataclasses.replace(cfg, unroll=unroll), vec_env, net, action_dims=dims,
        policy_obs=policy_obs, to_env_action=to_env_action, reward_fn=reward_fn,
        success_fn=success_fn, mesh=lrn.make_mesh(cfg.num_devices),
        task_ids=np.arange(n) % len(names), num_tasks=len(names), task_conditioned=True,
        hooks=hooks, consts=consts,
    )  # fmt: skip


# ----------------------------------------------------------------------------- checkpoints
CONFIG_FILE = "config.json"


def _ckpt_manager(run_dir: Path):
    import orbax.checkpoint as ocp

    return ocp.CheckpointManager(
        (run_dir / "checkpoints").absolute(),
        options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True),
    )


def save_checkpoint(mgr, step: int, runner: lrn.Runner, stage: int, base: int = 0) -> None:
    import orbax.checkpoint as ocp

    mgr.save(step, args=ocp.args.Composite(
        runner=ocp.args.StandardSave(runner),
        meta=ocp.args.JsonSave({"stage": stage, "base_updates": base}),
    ))  # fmt: skip
    mgr.wait_until_finished()


def restore_checkpoint(mgr, like: lrn.Runner, shardings, step: int | None = None):
    import orbax.checkpoint as ocp

    step = mgr.latest_step() if step is None else step
    abstract = jax.tree.map(
        lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), like, shardings
    )
    out = mgr.restore(step, args=ocp.args.Composite(
        runner=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore(),
    ))  # fmt: skip
    return out["runner"], out["meta"]


def config_to_json(cfg: PPOConfig) -> dict:
    return dataclasses.asdict(cfg)


def config_from_json(d: dict) -> PPOConfig:
    d = dict(d)
    if d.get("image_size") is not None:
        d["image_size"] = tuple(d["image_size"])
    names = {f.name for f in dataclasses.fields(PPOConfig)}
    return PPOConfig(**{k: v for k, v in d.items() if k in names})


# ----------------------------------------------------------------------------- videos
def record_video(built: Built, params, key, steps: int) -> np.ndarray | None:
    """Roll one env for `steps` steps with the current policy; uint8 frames [T, H, W, 3]."""
    env, L = built.env, built.learner
    if not getattr(env.static, "render", False):
        return None
    dims = L.action_dims
    one = jax.tree.map(lambda x: x[:1], env.params)
    tid = jnp.asarray(env.task_ids[:1])

    @jax.jit
    def run(params, consts, key):
        k0, key = jax.random.split(key)
        raw, state = jax.vmap(env.reset, in_axes=(0, 0, None))(k0[None], one, env.static)

        def body(carry, k):
            raw, state, prev = carry
            obs = L.policy_obs_batch(consts, raw, tid)
            logits, _ = L.apply(params, obs, prev)
            ka, ks = jax.random.split(k)
            a = losses.sample(ka, logits, dims)
            raw2, state, _, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, 0, None))(
                ks[None], state, jax.vmap(env.to_env_action)(a), one, env.static
            )
            prev = jnp.where((term | trunc)[:, None], 0, a)
            return (raw2, state, prev), raw["rgb"][0]

        prev0 = jnp.zeros((1, len(dims)), jnp.int32)
        _, frames = jax.lax.scan(body, (raw, state, prev0), jax.random.split(key, steps))
        return frames

    frames = run(params, L.consts, key)
    return None if frames is None else np.asarray(frames)


def write_mp4(path: Path, frames: np.ndarray, fps: int = 20) -> None:
    import av

    h, w = frames.shape[1:3]
    h2, w2 = h - h % 2, w - w % 2
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = w2, h2, "yuv420p"
        for f in frames:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(f[:h2, :w2]), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


# ----------------------------------------------------------------------------- training
def _summarise(m, task_names):
    eps = np.asarray(m["episodes"])
    out = {k: float(np.mean(v)) for k, v in m.items() if np.ndim(v) == 0}
    tot = max(float(eps.sum()), 1.0)
    out["episodes"] = float(eps.sum())
    if eps.sum() > 0:
        out["episodic_return"] = float(np.sum(m["return_sum"]) / tot)
        out["episode_length"] = float(np.sum(m["length_sum"]) / tot)
        out["success_rate"] = float(np.sum(m["success_sum"]) / tot)
        if len(task_names) > 1:
            for i, name in enumerate(task_names):
                if eps[i] > 0:
                    out[f"success_rate/{name}"] = float(m["success_sum"][i] / eps[i])
                    out[f"episodic_return/{name}"] = float(m["return_sum"][i] / eps[i])
    return out


def _accumulate(acc, m):
    keys = ("episodes", "return_sum", "length_sum", "success_sum")
    if acc is None:
        return {k: np.asarray(m[k], np.float64) for k in keys}
    return {k: acc[k] + np.asarray(m[k]) for k in keys}


def train(cfg: PPOConfig, *, stop_after_updates: int | None = None) -> dict:
    """Train (or resume) a run; returns the final summary. `stop_after_updates` ends the process
    early as if killed after that many updates (tests of exact resumption)."""
    run_dir = Path(cfg.out).expanduser()
    cfg_path = run_dir / CONFIG_FILE
    if cfg.resume:
        if not cfg_path.exists():
            raise ConfigError(
                f"--resume: no run in {str(run_dir)!r} (no {CONFIG_FILE}); drop --resume to start "
                "a new run there"
            )
        saved = config_from_json(json.loads(cfg_path.read_text()))
        cfg = dataclasses.replace(saved, out=cfg.out, resume=True, progress=cfg.progress)
    else:
        validate(cfg)
    if (
        not cfg.resume
        and (run_dir / "checkpoints").exists()
        and any((run_dir / "checkpoints").iterdir())
    ):
        raise ConfigError(
            f"--out {str(run_dir)!r} already holds checkpoints; pass --resume to continue it or "
            "choose a new --out"
        )
    validate(cfg)
    _enable_compile_cache(cfg.compile_cache)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not cfg.resume:
        cfg_path.write_text(json.dumps(config_to_json(cfg), indent=2) + "\n")
    mgr = _ckpt_manager(run_dir)
    writer = _summary_writer(run_dir)
    stages = stage_tasks(cfg)
    start_stage, runner, carried_si = 0, None, None
    if cfg.resume and mgr.latest_step() is not None:
        meta = mgr.restore(mgr.latest_step(), args=_meta_args())["meta"]
        start_stage = int(meta["stage"])
        global_updates = int(meta.get("base_updates", 0))
    else:
        global_updates = 0
    summary = {}
    # --backend jax: rollout + update in one jitted call; process / minedojo: host-stepped envs
    run_stage = _anakin_stage if cfg.backend == "jax" else _host_stage
    for stage in range(start_stage, len(stages)):
        restore = cfg.resume and runner is None and mgr.latest_step() is not None
        summary = run_stage(cfg, stages[stage], stage, mgr, writer, run_dir, stop_after_updates,
                            global_updates, restore=restore, carried_si=carried_si)  # fmt: skip
        runner = summary.pop("runner")
        if summary.get("stopped"):
            break
        global_updates = summary["updates_total"]
        carried_si = (jax.device_get(runner.si_buffer), jax.device_get(runner.params))
    writer.close()
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return {**summary, "runner": runner}


def _enable_compile_cache(path: str) -> None:
    """Persist compiled executables across processes (the embedded world takes minutes to compile
    on a small CPU). Best effort: a process that already compiled without a cache keeps none."""
    if not path or jax.config.jax_compilation_cache_dir:
        return
    path = os.path.expanduser(path)
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 2.0)


def _meta_args():
    import orbax.checkpoint as ocp

    return ocp.args.Composite(meta=ocp.args.JsonRestore())


def _next_stage(runner: lrn.Runner, carried, L: lrn.Learner) -> lrn.Runner:
    si_buf, old_params = carried
    params = networks.reset_policy_head(old_params, runner.params)
    if jax.tree.structure(si_buf) == jax.tree.structure(runner.si_buffer) and all(
        a.shape == b.shape
        for a, b in zip(jax.tree.leaves(si_buf), jax.tree.leaves(runner.si_buffer))
    ):
        # task ids are per stage; keep the trajectories, mark them as one extra "old" task 0
        runner = runner.replace(si_buffer=si_buf)
    return runner.replace(params=params, opt_state=L.tx.init(params),
                          si_opt_state=L.si_tx.init(params))  # fmt: skip


def _summary_writer(run_dir: Path):
    from tensorboardX import SummaryWriter

    return SummaryWriter(str(run_dir / "tb"))


def _anakin_stage(cfg, tasks, stage, mgr, writer, run_dir, stop_after, base, *, restore,
                  carried_si):  # fmt: skip
    """One stage on a JAX env: each update is one jitted rollout (lax.scan) + PPO call."""
    built = build(cfg, tasks)
    L = built.learner
    runner = L.init_sharded(jax.random.PRNGKey(cfg.seed + 1000 * stage))
    if restore:
        runner, _ = restore_checkpoint(mgr, runner, lrn.runner_shardings(runner, L.mesh))
    elif carried_si is not None:  # multi-stage: keep SI buffer, reset the policy head
        runner = L.shard(_next_stage(runner, carried_si, L))

    def iterate(runner, update):
        runner, m = L.iteration(runner)
        if cfg.si_every > 0 and (update + 1) % cfg.si_every == 0:
            runner, msi = L.si_phase(runner)
            m = {**m, **msi}
        return runner, m

    def video(params, key):
        return record_video(built, params, key, cfg.video_length)

    return _train_stage(cfg, iterate, runner, L.num_updates, built.env.task_names, video, mgr,
                        writer, stage, run_dir, stop_after, base)  # fmt: skip


def _host_stage(cfg, tasks, stage, mgr, writer, run_dir, stop_after, base, *, restore,
                carried_si):  # fmt: skip
    """One stage on host-stepped envs (`--backend process|minedojo`, agents.sebulba.HostDriver):
    the envs step on the host, one batched jitted inference call per step, then the same PPO
    update and SI phase as the on-device path. The vector env is closed when the stage ends,
    also on errors. Resuming restarts the envs (simulator state is not checkpointed; episodes in
    flight are dropped), so a resumed run is not bitwise-identical to an uninterrupted one; the
    learner state (params, optimizers, SI buffer, RNG, counters) is restored exactly. No videos:
    the host-stepped path has no JAX env to replay an episode in."""
    vec = make_host_vector_env(cfg, tasks, run_dir / "bridge_logs")
    try:
        driver = build_host_driver(cfg, tasks, vec)
        L = driver.learner
        fresh = driver.init(jax.random.PRNGKey(cfg.seed + 1000 * stage))
        if restore:
            restored, _ = restore_checkpoint(mgr, fresh, lrn.runner_shardings(fresh, L.mesh))
            runner = driver.adopt(restored, fresh)
        elif carried_si is not None:
            runner = L.shard(_next_stage(fresh, carried_si, L))
        else:
            runner = fresh
        names = tuple(s.id for s in _task_specs(tasks))
        return _train_stage(cfg, lambda r, _: driver.iteration(r), runner, L.num_updates, names,
                            None, mgr, writer, stage, run_dir, stop_after, base)  # fmt: skip
    finally:
        vec.close()


def _train_stage(cfg, iterate, runner, num_updates, task_names, video, mgr, writer, stage,
                 run_dir, stop_after, base):  # fmt: skip
    """The update loop of one stage, whatever the driver: `iterate(runner, update) -> (runner,
    metrics)`, logging, checkpoints and (with `video(params, key) -> frames`) MP4 videos."""
    from tqdm import tqdm

    first = int(jax.device_get(runner.update_step))
    steps_per_update = cfg.num_envs * cfg.num_steps
    bar = tqdm(total=num_updates, initial=first, disable=not cfg.progress,
               desc=f"stage {stage} {','.join(task_names)}"[:60], dynamic_ncols=True)  # fmt: skip
    metrics_f = open(run_dir / "metrics.jsonl", "a")
    acc, summary, t_last, u_last = None, {}, time.time(), first
    videos = run_dir / "videos"
    update = first
    try:
        for update in range(first, num_updates):
            runner, m = iterate(runner, update)
            m = jax.device_get(m)
            acc = _accumulate(acc, m)
            done_updates = update + 1
            if done_updates % cfg.log_every == 0 or done_updates == num_updates:
                now = time.time()
                dt = max(now - t_last, 1e-9)
                s = _summarise({**m, **acc}, task_names)
                s["sps"] = (done_updates - u_last) * steps_per_update / dt
                s["updates_per_s"] = (done_updates - u_last) / dt
                step = (base + done_updates) * steps_per_update
                s.update(env_steps=step, update=base + done_updates, stage=stage)
                for k, v in s.items():
                    writer.add_scalar(k if "/" in k else f"charts/{k}", v, step)
                metrics_f.write(json.dumps(s) + "\n")
                metrics_f.flush()
                post = {"sps": f"{s['sps']:.0f}", "ups": f"{s['updates_per_s']:.2f}"}
                if "episodic_return" in s:
                    post["ret"] = f"{s['episodic_return']:.2f}"
                    post["succ"] = f"{s['success_rate']:.2f}"
                    for name in task_names if len(task_names) > 1 else ():
                        if f"success_rate/{name}" in s:
                            post[name[:12]] = f"{s[f'success_rate/{name}']:.2f}"
                bar.set_postfix(post)
                summary, acc, t_last, u_last = s, None, now, done_updates
            bar.update(1)
            last = done_updates == num_updates
            stopping = stop_after is not None and done_updates >= stop_after
            if done_updates % cfg.checkpoint_every == 0 or last or stopping:
                save_checkpoint(mgr, base + done_updates, runner, stage, base)
            if (
                video is not None
                and cfg.video_every >= 0
                and ((cfg.video_every > 0 and done_updates % cfg.video_every == 0) or last)
            ):
                frames = video(runner.params, jax.random.PRNGKey(done_updates))
                if frames is not None:
                    videos.mkdir(exist_ok=True)
                    write_mp4(videos / f"stage{stage}_update{done_updates:06d}.mp4", frames)
            if stopping and not last:
                summary["stopped"] = True
                break
    finally:
        bar.close()
        metrics_f.close()
    summary["runner"] = runner
    summary["updates_total"] = base + update + 1
    return summary


# ----------------------------------------------------------------------------- evaluation API
def load_policy(run_dir: str | os.PathLike, step: int | None = None):
    """A trained run -> (policy_fn, info).

    `policy_fn(key, obs_batch, prev_action=None, task_id=None, deterministic=False)` maps a batch
    of raw env observations (the dict the env returns, leading axis B) to env actions (int32
    `[B, 8]` MultiDiscrete for the embedded world / MineDojo, `[B, 1]` for cartpole).
    `prev_action` is the previous *policy* action `[B, K]` (zeros at episode start; returned in
    `info` as `info["last_policy_action"]` after each call for convenience); `task_id` `[B]`
    indexes `info["task_names"]` (default 0).
    """
    run_dir = Path(run_dir).expanduser()
    cfg_path = run_dir / CONFIG_FILE
    if not cfg_path.exists():
        raise FileNotFoundError(
            f"no trained run in {str(run_dir)!r} ({CONFIG_FILE} missing); train one with "
            f"python -m agents.ppo --out {run_dir}"
        )
    cfg = config_from_json(json.loads(cfg_path.read_text()))
    mgr = _ckpt_manager(run_dir)
    if mgr.latest_step() is None:
        raise FileNotFoundError(
            f"run {str(run_dir)!r} has no checkpoint yet; train longer or check --out"
        )
    meta = mgr.restore(step or mgr.latest_step(), args=_meta_args())["meta"]
    stages = stage_tasks(cfg)
    built = build(cfg, stages[int(meta["stage"])])
    L, env = built.learner, built.env
    like = jax.eval_shape(L.init, jax.random.PRNGKey(0))
    if cfg.backend != "jax":  # a host-stepped runner holds no env state (agents.sebulba)
        none = jax.ShapeDtypeStruct((cfg.num_envs,), jnp.float32)
        like = like.replace(env_params=none, env_state=none)
        if L.hooks.init is None:  # its reward state is MineCLIP's window, as here, or nothing
            like = like.replace(reward_state=none)
    runner, _ = restore_checkpoint(mgr, like, lrn.runner_shardings(like, L.mesh), step)
    params = runner.params
    dims = L.action_dims
    info = {
        "config": config_to_json(cfg),
        "task_names": env.task_names,
        "action_dims": dims,
        "env_steps": int(runner.env_steps),
        "update": int(runner.update_step),
        "last_policy_action": None,
    }

    @jax.jit
    def _act(params, consts, key, obs, prev, task_id, deterministic):
        pobs = L.policy_obs_batch(consts, obs, task_id)
        logits = L.policy_logits(params, pobs, prev)
        a = jnp.where(deterministic, losses.mode(logits, dims), losses.sample(key, logits, dims))
        return jax.vmap(env.to_env_action)(a), a

    def policy_fn(key, obs_batch, prev_action=None, task_id=None, deterministic=False):
        obs = jax.tree.map(jnp.asarray, obs_batch)
        b = jax.tree.leaves(obs)[0].shape[0]
        prev = (
            jnp.zeros((b, len(dims)), jnp.int32)
            if prev_action is None
            else jnp.asarray(prev_action, jnp.int32)
        )
        tid = jnp.zeros((b,), jnp.int32) if task_id is None else jnp.asarray(task_id, jnp.int32)
        env_a, a = _act(params, L.consts, key, obs, prev, tid, jnp.asarray(deterministic))
        info["last_policy_action"] = np.asarray(a)
        return np.asarray(env_a)

    return policy_fn, info


def main(argv=None) -> None:
    import sys

    import tyro

    cfg = tyro.cli(PPOConfig, args=argv)
    try:
        s = train(cfg)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    keys = ("env_steps", "episodic_return", "success_rate", "sps")
    print(json.dumps({k: s[k] for k in keys if k in s}))


if __name__ == "__main__":
    main()


__all__ = ["PPOConfig", "ConfigError", "build", "train", "load_policy", "validate", "main"]
_ = math  # keep the import for callers computing budgets

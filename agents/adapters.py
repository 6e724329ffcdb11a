"""Env adapters shared by both rollout drivers: which tasks a run trains, how a raw observation
becomes the policy's input, how a policy action becomes the env's action, and which reward the
learner sees (the task's manual dense reward, success only, or MineCLIP's term added by
`agents.mineclip_hooks`).

    agents.learner (on device, `voxel_env` / `cartpole_env`: a `JaxEnv`)
    agents.sebulba (host-stepped, `make_host_vector_env` + `host_actions` / `host_reward_fn`)

Both read the same `voxel_policy_obs`, the same action tables and the same reward choice. A
Creative task has no success bonus (paper Sec. 4: under MineCLIP the learned reward alone).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from agents import learner as lrn
from agents import testing
from agents.errors import ConfigError


# ----------------------------------------------------------------------------- tasks
def resolve_tasks(task: str) -> tuple[str, ...]:
    """`--task` -> tuple of task prompts/ids (group names expanded)."""
    from envs.tasks.paper import GROUPS

    task = task.strip()
    if not task:
        raise ConfigError("--task is empty; give a task id or prompt, e.g. --task 'hunt a cow'")
    if task.lower() in GROUPS:
        return tuple(GROUPS[task.lower()])
    return tuple(t.strip() for t in task.split(",") if t.strip())


def stage_tasks(task: str, stages: str = "") -> list[tuple[str, ...]]:
    """The task tuple of every stage (`--stages 'a,b;c'` overrides `--task`)."""
    if stages.strip():
        return [resolve_tasks(s) for s in stages.split(";") if s.strip()]
    return [resolve_tasks(task)]


def task_vocabulary(cfg, tasks=()) -> tuple[str, ...]:
    """The task ids a run's policy knows: every stage's, in order of first appearance (then any
    of `tasks` not among them). A stage's envs carry their task's index in this tuple as
    `task_id`, so the policy's task embedding, the MineCLIP goal prompts and the SI buffer's
    tasks mean the same in every stage, and a multi-stage policy can be asked for any task."""
    ids: list[str] = []
    for stage in [*stage_tasks(cfg.task, cfg.stages), tuple(tasks)]:
        ids += [s.id for s in task_specs(stage) if s.id not in ids]
    return tuple(ids)


def task_specs(names) -> list:
    """Task ids / prompts -> `envs.tasks.TaskSpec`s (ConfigError naming the flag if unknown)."""
    from envs import tasks as envs_tasks
    from envs.tasks.paper import GROUPS

    specs = []
    for name in names:
        try:
            specs.append(envs_tasks.get(name))
        except KeyError as e:  # UnknownTaskError carries suggestions
            raise ConfigError(
                f"unknown task {name!r} for --task: {e}. Use a task id or prompt from "
                "envs.tasks.list_tasks(backend='voxel'), a group "
                f"({', '.join(GROUPS)}), or cartpole"
            ) from None
    return specs


def reward_step_bound(cfg, specs) -> float:
    """The most one step of the training reward's dense stream can pay: the MineCLIP Direct
    reward `max(P_goal - 1/N, 0)` and Delta reward are below 1; the manual shaping pays
    `nav_scale` per block of progress (under 1 block per tick, times the action repeat) plus
    `attack_bonus` per hit; the sparse reward has no stream."""
    if cfg.reward == "mineclip":
        return 1.0
    if cfg.reward == "manual":
        return max(s.nav_scale * cfg.action_repeat + s.attack_bonus for s in specs)
    return 0.0


def reward_stream_bound(cfg, specs) -> float:
    """The most the dense stream can pay from one step to the end of time: `r_max / (1 -
    gamma)` for a stream that may pay `r_max` every step; below 1 for MineCLIP's Peak reward,
    which pays an episode no more than its best Direct reward (`mineclip_jax.reward`)."""
    if cfg.reward == "mineclip" and getattr(cfg, "mineclip_reward", "direct") == "peak":
        return 1.0
    return reward_step_bound(cfg, specs) / (1.0 - cfg.gamma)


def success_bonus(cfg, specs) -> float:
    """The success bonus of a stage: none on Creative tasks (their success is the simulator's
    privileged check, which the paper never pays; under --reward mineclip MineCLIP alone).

    Without --success-bonus, the rule: at least `reward_stream_bound` (and at least 10), in
    general `r_max / (1 - gamma)`, `r_max` being `reward_step_bound`. Ending an episode by
    succeeding then always pays more than any stream the policy could farm instead for the rest
    of time: the discounted stream from the next step on is below `r_max * gamma / (1 - gamma)`.
    (A fixed +10 against a MineCLIP stream of ~0.25 per step was outbid with 60-125 decisions
    left.) MineCLIP's Peak reward pays an episode less than 1 in all, so 10 outbids it."""
    creative = [s.id for s in specs if s.category == "creative"]
    if creative and len(creative) < len(specs) and cfg.success_bonus != 0:
        raise ConfigError(
            f"a stage mixes Creative tasks {creative} (no success bonus) with programmatic ones "
            "(--success-bonus): train them in separate --stages, or pass --success-bonus 0"
        )
    if creative:
        return 0.0
    if cfg.success_bonus is not None:
        return float(cfg.success_bonus)
    return max(10.0, reward_stream_bound(cfg, specs))


def uses_target_features(cfg) -> bool:
    """Whether training reads envs.voxel.target_features (privileged critic / policy, aux loss)."""
    return cfg.privileged_critic or cfg.privileged_policy or cfg.aux_coef > 0


def uses_world_state(cfg) -> bool:
    """Whether training reads the embedded world's state beyond MineDojo's observations."""
    return uses_target_features(cfg) or cfg.critic_time_left


def validate_tasks(cfg, stages) -> None:
    """ConfigError for tasks, rewards and backends that cannot go together (before any env is
    built): unknown tasks, cartpole mixed with others, MineCLIP without frames, a stage mixing
    Creative and programmatic tasks, what the backend cannot run. The flags each section checks
    alone (`agents.config`) are checked before."""
    validate_backend(cfg, stages)
    if any(t == "cartpole" for s in stages for t in s):
        if any(t != "cartpole" for s in stages for t in s) or any(len(s) > 1 for s in stages):
            raise ConfigError("cartpole cannot be mixed with other tasks")
        if cfg.mineclip_ckpt:
            raise ConfigError("--mineclip-ckpt needs a task with rgb frames; cartpole has none")
    else:
        for s in stages:
            success_bonus(cfg, task_specs(s))


def validate_backend(cfg, stages) -> None:
    """ConfigError for what the chosen backend cannot run (before any env is built)."""
    target_features_on = uses_world_state(cfg)
    if cfg.backend == "jax":
        if target_features_on and any(t == "cartpole" for s in stages for t in s):
            raise ConfigError("--privileged-critic / --privileged-policy / --aux-coef / "
                              "--critic-time-left read the embedded world's state; cartpole "
                              "has no task target")  # fmt: skip
        return
    flag = f"--backend {cfg.backend}"
    if any(t == "cartpole" for s in stages for t in s):
        raise ConfigError(f"cartpole is a JAX env; train it with --backend jax, not {flag}")
    if target_features_on:
        raise ConfigError(f"--privileged-critic / --privileged-policy / --aux-coef / "
                          f"--critic-time-left read the embedded world's state, which {flag} "
                          f"does not expose; use --backend jax or turn them off")  # fmt: skip
    if cfg.backend != "minedojo":
        return
    if any(len(s) > 1 for s in stages):
        raise ConfigError(
            "--backend minedojo runs one task per stage (every env runs it); give one --task, "
            "or a curriculum with --stages 'task a;task b'"
        )
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


# ----------------------------------------------------------------------------- actions
def action_table(action_space: str) -> tuple[tuple[int, ...], np.ndarray | None, tuple[int, ...]]:
    """(policy action dims, compact table int [A, 8] or None, the policy's no-op action)."""
    from envs import spaces

    if action_space in ("compact", "combo"):
        actions = spaces.compact_action_set("paper" if action_space == "compact" else "combo")
        return (actions.num_actions,), np.asarray(actions.table, np.int64), (actions.noop,)
    dims = tuple(int(x) for x in spaces.ACTION_NVEC[:6])
    return dims, None, tuple(int(x) for x in spaces.NOOP_ACTION[:6])


def to_env_action_fn(action_space: str, xp=jnp):
    """Policy action -> MineDojo MultiDiscrete action: one env `[K] -> [8]` for `xp=jnp`, a
    batch `[B, K] -> [B, 8]` for `xp=np` (the host driver)."""
    _, table, _ = action_table(action_space)
    if table is not None:
        t = xp.asarray(table, xp.int32 if xp is jnp else np.int64)
        return (lambda a: t[a[0]]) if xp is jnp else (lambda a: t[a[:, 0]])
    if xp is jnp:
        return lambda a: jnp.concatenate([a, jnp.zeros((2,), jnp.int32)])
    return lambda a: np.concatenate([a, np.zeros((a.shape[0], 2), a.dtype)], axis=1)


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

    return tuple(float(x) for x in spaces.balanced_compact_logits())


# ----------------------------------------------------------------------------- observations
AUX_FEATURES = ("in_view", "screen_x", "screen_y", "distance")
"""What --aux-coef asks the policy's features to predict: whether the task's target is in the
frame, where, and how far; where and how far count only while it is in view (what the frame
shows)."""


def aux_targets(target_features):
    from envs import voxel

    idx = [voxel.TARGET_FEATURES.index(n) for n in AUX_FEATURES]
    target = target_features[..., jnp.array(idx)]
    in_view = target_features[..., voxel.TARGET_FEATURES.index("in_view")]
    mask = jnp.stack([jnp.ones_like(in_view)] + [in_view] * (len(AUX_FEATURES) - 1), axis=-1)
    return target, mask


def voxel_policy_obs(obs):
    """Embedded-world (or MineDojo) observation of one env -> MineAgent inputs (agents.networks)."""
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
        out["aux_target"], out["aux_mask"] = aux_targets(tf)
    if "time_left" in obs:  # training-only: the critic's input
        out["time_left"] = jnp.asarray(obs["time_left"], jnp.float32).reshape(1)
    return out


def _with_world_state(reset, step, target_features: bool, time_left: bool):
    """reset/step that add training-only observations of the state the observation belongs to
    (after an auto-reset, of the new episode): obs["target_features"]
    (envs.voxel.target_features) and obs["time_left"] (the fraction of the episode's step limit
    still to run, 1 at a reset: with it the critic can tell a time-limit truncation coming,
    so cutting the bootstrap there is part of its input rather than noise)."""
    from envs import voxel

    def extra(obs, state, params, static):
        obs = dict(obs)
        if target_features:
            obs["target_features"] = voxel.target_features(state, params, static)
        if time_left:
            left = 1.0 - state.steps.astype(jnp.float32) / params.max_steps.astype(jnp.float32)
            obs["time_left"] = left.reshape(1)
        return obs

    def reset_x(key, params, static):
        obs, state = reset(key, params, static)
        return extra(obs, state, params, static), state

    def step_x(key, state, action, params, static):
        obs, state, reward, terminated, truncated, info = step(key, state, action, params, static)
        return extra(obs, state, params, static), state, reward, terminated, truncated, info

    return reset_x, step_x


# ----------------------------------------------------------------------------- on-device envs
def cartpole_env(cfg) -> lrn.JaxEnv:
    n = cfg.num_envs
    params = jax.tree.map(
        lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float32), (n,)), testing.CartPoleParams()
    )
    return lrn.JaxEnv(
        reset=testing.reset,
        step=testing.step_autoreset,
        step_no_reset=testing.step,
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


def frame_size(cfg) -> tuple[int, int]:
    """With MineCLIP the frames are the size its model was trained on (48x64 for the shipped
    mini, 160x256 for the released weights), else --image-size."""
    if cfg.mineclip_ckpt:
        from mineclip_jax.checkpoint import checkpoint_image_size

        return checkpoint_image_size(cfg.mineclip_ckpt)
    return tuple(cfg.image_size)


def voxel_env(cfg, task_names: tuple[str, ...], seed: int | None = None) -> lrn.JaxEnv:
    """The embedded world for one stage: env i runs `task_names[i % len(task_names)]`, its
    `task_id` that task's index in the run's `task_vocabulary`; the worlds are generated from
    `seed` (default `cfg.seed`)."""
    from envs import voxel

    use_mineclip = bool(cfg.mineclip_ckpt)
    specs = task_specs(task_names)
    h, w = frame_size(cfg)
    static = voxel.VoxelStaticConfig(
        size_x=cfg.world_size, size_z=cfg.world_size, height=h, width=w,
        render=cfg.render or use_mineclip,
        world_pool_size=cfg.world_pool, action_repeat=cfg.action_repeat,
    )  # fmt: skip
    n = cfg.num_envs
    local = np.arange(n, dtype=np.int32) % len(specs)  # env i's task among this stage's
    vocabulary = task_vocabulary(cfg, task_names)
    task_ids = np.array([vocabulary.index(s.id) for s in specs], np.int32)[local]
    pool = None
    per_task = []
    for spec in specs:  # one world pool shared by every task
        p = voxel.make_params(spec, static, seed=cfg.seed if seed is None else seed, pool=pool,
                              max_steps=cfg.max_episode_steps)  # fmt: skip
        pool = p.pool
        per_task.append(p)
    params = jax.tree.map(lambda *xs: jnp.stack(xs)[local], *per_task)
    dims, _, noop = action_table(cfg.action_space)
    bonus = success_bonus(cfg, specs)
    if cfg.reward == "manual":

        def reward_fn(r, info):
            return info["dense_reward"] + bonus * info["success"].astype(jnp.float32)
    else:  # sparse (mineclip adds its own term through the hooks)

        def reward_fn(r, info):
            return bonus * info["success"].astype(jnp.float32)

    reset, step, step_no_reset = voxel.reset, voxel.step_autoreset, voxel.step
    if uses_world_state(cfg):
        flags = (uses_target_features(cfg), cfg.critic_time_left)
        step_no_reset = _with_world_state(reset, step_no_reset, *flags)[1]
        reset, step = _with_world_state(reset, step, *flags)

    return lrn.JaxEnv(
        reset=reset,
        step=step,
        step_no_reset=step_no_reset,
        params=params,
        static=static,
        action_dims=dims,
        to_env_action=to_env_action_fn(cfg.action_space),
        policy_obs=voxel_policy_obs,
        reward_fn=reward_fn,
        task_ids=task_ids,
        num_tasks=len(vocabulary),
        task_names=vocabulary,
        task_conditioned=True,
        noop_action=noop,
    )


# ----------------------------------------------------------------------------- host-stepped envs
def voxel_env_kwargs(cfg) -> dict:
    """`envs.make` / `envs.make_vector` keyword arguments of the embedded world a run trains on
    (frame size, rendering, world size and pool, episode limit, action repeat): what the host
    driver's workers and `agents.evaluate` build, so a policy meets the env it was trained on."""
    h, w = frame_size(cfg)
    return dict(render=bool(cfg.render or cfg.mineclip_ckpt), height=h, width=w,
                size_x=cfg.world_size, size_z=cfg.world_size, world_pool_size=cfg.world_pool,
                max_steps=cfg.max_episode_steps, action_repeat=cfg.action_repeat)  # fmt: skip


def make_host_vector_env(cfg, tasks: tuple[str, ...], log_dir: Path | None = None):
    """The Gymnasium vector env of a host-stepped backend: the embedded world in bridge worker
    processes (`process`, env i runs `tasks[i % len(tasks)]`) or MineDojo's Java simulator.
    With a MineCLIP checkpoint the frames are the model's size (`frame_size`) and rendered
    whatever --image-size / --no-render say, as on the jax backend.

    Under --distributed each process starts the workers of its own share of the envs (global
    env ids `process_share`; their logs under `log_dir/process-<i>`), on its own host."""
    from mineclip_jax.distributed import process_share

    h, w = frame_size(cfg)
    share = process_share(cfg.num_envs, "--num-envs")
    num_local = share.stop - share.start
    if jax.process_count() > 1 and log_dir is not None:
        log_dir = Path(log_dir) / f"process-{jax.process_index()}"
    common = dict(max_restarts=cfg.bridge_max_restarts,
                  log_dir=None if log_dir is None else str(log_dir))  # fmt: skip
    if cfg.backend == "process":
        from envs.bridge import ProcessVectorEnv

        timeout = cfg.bridge_timeout_s or 60.0
        return ProcessVectorEnv(
            "agents.host_envs:voxel_env", num_local, timeout_s=timeout,
            startup_timeout_s=max(600.0, timeout), envs_per_worker=cfg.bridge_envs_per_worker,
            tasks=tuple(tasks), seed=cfg.seed, compile_cache=cfg.compile_cache,
            first_env=share.start, **voxel_env_kwargs(cfg), **common,
        )  # fmt: skip
    if cfg.backend == "minedojo":
        import envs

        opts = dict(jar=cfg.minedojo_jar, java=cfg.minedojo_java,
                    run_template=cfg.minedojo_run_template, headless=cfg.minedojo_headless)  # fmt: skip
        if cfg.minedojo_port is not None:
            opts["malmo_port"] = cfg.minedojo_port
        return envs.make_vector(tasks[0], num_local, backend="minedojo", height=h, width=w,
                                timeout_s=cfg.bridge_timeout_s or 120.0, **common, **opts)  # fmt: skip
    raise ConfigError(f"--backend {cfg.backend!r} is not host-stepped")


def host_policy_obs(cfg):
    """One env's Gymnasium observation -> policy inputs (the embedded world's layout; MineDojo
    always sends frames, which --no-render hides as on the jax backend)."""
    hide_rgb = not cfg.render and not cfg.mineclip_ckpt

    def policy_obs(obs):
        if hide_rgb:
            obs = {k: v for k, v in obs.items() if k != "rgb"}
        return voxel_policy_obs(obs)

    return policy_obs


def host_success_fn(info, n: int) -> np.ndarray:
    return np.asarray(info.get("success", np.zeros(n, bool)), bool)


def host_reward_fn(cfg, tasks: tuple[str, ...]):
    """`reward_fn(env_reward [N], info) -> [N]` of the host driver: manual / sparse + success
    bonus (MineCLIP adds its term through the hooks). Manual: the embedded world reports its
    dense shaping; MineDojo cannot (Malmo has no target distances), so there it is the task's
    programmatic reward."""
    bonus = np.float32(success_bonus(cfg, task_specs(tasks)))

    def reward_fn(r, info):
        n = len(r)  # this process's envs (its share under --distributed)
        r_succ = bonus * host_success_fn(info, n).astype(np.float32)
        if cfg.reward != "manual":
            return r_succ
        dense = info.get("dense_reward") if cfg.backend == "process" else r
        if dense is None:  # no env reported one this step (all were resetting)
            dense = np.zeros(n, np.float32)
        return np.asarray(dense, np.float32) + r_succ

    return reward_fn

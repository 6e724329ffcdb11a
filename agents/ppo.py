"""`python -m agents.ppo`: PPO + self-imitation on the embedded world (or a JAX CartPole).

    python -m agents.ppo                                   # "combat a zombie" from pixels, ~6 min
    python -m agents.ppo --task "hunt a cow" --reward sparse --total-steps 200000 --out runs/sparse
    python -m agents.ppo --task "milk a cow,hunt a cow" --num-envs 8      # multi-task (per-env prompts)
    python -m agents.ppo --task animal_zoo --stages "milk a cow,hunt a cow;shear a sheep,hunt a sheep"
    python -m agents.ppo --preset paper --reward mineclip --mineclip-ckpt mini  # the paper's method
    python -m agents.ppo --task cartpole --total-steps 524288 --seeds 3   # 3 seeds, one program
    python -m agents.ppo --out runs/hunt_cow --resume                     # continue a run exactly
    python -m agents.ppo --backend minedojo --task harvest_milk_with_empty_bucket_and_cow \
        --minedojo-jar MalmoMod-0.37.0-fat.jar                           # MineDojo's Java simulator

The CLI alone (config, validation, `main`) over `agents.train`, `agents.build`, `agents.checkpoints`,
none importing it (docs/interfaces.md); `--distributed`, the actor / learner devices:
docs/cluster.md; `--resume`: docs/agents.md.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Literal

from agents import checkpoints, devices
from agents import train as loop
from agents.adapters import ConfigError, task_specs
from agents.checkpoints import CONFIG_FILE, NonFiniteError
from mineclip_jax.distributed import DistributedConfig, DistributedError, fail_fast, initialize
from mineclip_jax.run_lock import RunLockedError


@dataclasses.dataclass(frozen=True)
class PPOConfig(devices.DeviceConfig, DistributedConfig):
    """PPO + self-imitation for MineDojo tasks (paper Sec. 4.2, App. F-G).

    Run: python -m agents.ppo --task "hunt a cow" --reward manual --out runs/hunt_cow
    """

    task: str = "combat a zombie"
    """task id or prompt, several separated by commas (one per env, round robin), a group (animal_zoo, mob_combat), or cartpole"""
    reward: Literal["mineclip", "manual", "sparse"] = "manual"
    """training reward: MineCLIP (needs --mineclip-ckpt), the task's manual dense reward, or success only; success bonus added to all"""
    mineclip_ckpt: str | None = None
    """MineCLIP checkpoint: mini (shipped with the package, 48x64 frames), attn.pth / avg.pth or a native dir; frozen image features for the policy and, with --reward mineclip, the reward"""
    mineclip_reward: Literal["direct", "delta"] = "direct"
    """MineCLIP reward form: Direct (moving targets) or Delta (static targets)"""
    mineclip_negatives: tuple[str, ...] = ()
    """prompts added to the paper's 12 as the MineCLIP reward's negatives (e.g. "walk around"): P_goal competes with them too and chance level becomes 1/(12 + k)"""
    mineclip_features: bool = True
    """with --mineclip-ckpt: the policy's image input is MineCLIP's frozen frame features (the paper's MineAgent); off (--no-mineclip-features): the frames through --cnn, the same network as without a checkpoint, and MineCLIP gives only the reward"""
    success_bonus: float | None = None
    """reward added on the step a programmatic task succeeds (never on Creative tasks); default: the rule max(10, r_max / (1 - gamma)), r_max the most one step of the dense reward can pay, so no stream outbids success (agents.adapters.success_bonus)"""
    stages: str = ""
    """multi-stage training: task lists separated by ';' trained in turn (SI buffer kept, policy head reset); overrides --task"""
    num_envs: int = 16
    """parallel environments (a multiple of the device count and of --num-minibatches)"""
    num_steps: int = 64
    """rollout length per env per update"""
    total_steps: int = 65_536
    """env steps per stage"""
    seed: int = 0
    """random seed (params, envs, sampling), 0 .. 2**31 - 1"""
    seeds: int = 1
    """train seeds --seed .. --seed + K - 1 in one compiled program (--backend jax; OUT/seed<s>/ per seed)"""
    preset: Literal["none", "paper"] = "none"
    """paper: the paper's recipe (docs/agents.md): smoothing on, uniform initial policy, paper-size agent, each task's episode length, whole-episode SI; a flag given with it that it would change is refused"""
    out: str = "runs/ppo"
    """run directory: config, checkpoints, metrics.jsonl, TensorBoard events, videos (on the command line without --out and --resume, a taken runs/ppo gives runs/ppo-YYYYmmdd-HHMMSS, so a rerun starts a new run)"""
    resume: bool = False
    """continue the run in --out from its latest checkpoint (its saved config is used)"""
    lr: float = 3e-4
    """Adam learning rate of the PPO phase"""
    anneal_lr: bool = True
    """linearly anneal the PPO learning rate (to --lr-final-frac of --lr)"""
    lr_final_frac: float = 0.1
    """with --anneal-lr, the fraction of --lr the schedule ends at (0: the paper's anneal to zero; above 0 a short run keeps learning to its last update)"""
    norm_returns: bool = True
    """the critic learns value targets scaled by their running mean and std, so its gradient on the shared trunk does not grow with the reward's scale (GAE stays in reward units)"""
    critic_time_left: bool = False
    """embedded world: the critic also sees the fraction of the episode's step limit left, so a time-limit truncation is in its view (not the policy's)"""
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
    action_space: Literal["compact", "combo", "multidiscrete"] = "combo"
    """policy head: the paper's 89 compact actions, 22 'combo' actions (a step moves and attacks or uses at once: {noop, forward, forward+jump, back, left, right} x {noop, attack, use} and four 15-degree turns; uniform initial policy), or MineDojo's first 6 MultiDiscrete components (factorised)"""
    action_prior: Literal["uniform", "balanced"] = "balanced"
    """initial policy over the compact actions: uniform over all 89 (72 tilt the view, so a fresh agent mostly stares at sky or ground) or a quarter each to level turns, tilting turns, movement and use/attack"""
    cnn: Literal["impala", "nature", "patch"] = "patch"
    """image encoder without MineCLIP: IMPALA residual CNN, the strided DQN CNN (about 4x cheaper to train on a CPU), or patch convolutions written as matrix products (4x4 then 2x2 patches; the cheapest on a CPU)"""
    agent_size: Literal["small", "paper"] = "small"
    """MineAgent widths: small (fast on CPU) or the paper's (fusion 512, actor 256x3)"""
    core_size: int = 128
    """GRU units of a recurrent core between the fused features and the heads (memory across steps; recurrent PPO over whole env sequences); 0: memoryless, as the paper's agent"""
    image_size: tuple[int, int] = (48, 64)
    """embedded world rgb height, width without MineCLIP (with --mineclip-ckpt the checkpoint's frame size: 48x64 for mini, 160x256 for attn.pth / avg.pth)"""
    world_size: int = 32
    """embedded world extent in blocks (x and z)"""
    world_pool: int = 8
    """pre-generated worlds resets draw from"""
    render: bool = True
    """render rgb frames (off: much faster; the policy sees compass, gps, voxels; no videos)"""
    max_episode_steps: int | None = 200
    """embedded world episode limit in game ticks (an env step is --action-repeat ticks; None: each task's own)"""
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
    """devices of ONE data-parallel mesh for both the rollout and the update (default: see --actor-devices / --learner-devices)"""
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
    final_eval_episodes: int = 100
    """at the end, the untrained (initial) and the trained policy play the same N episodes per task, actions sampled (agents.evaluate's default); success rates (95% Wilson intervals) and mean returns printed and in summary.json (--backend jax; 0: off)"""
    time_limit_min: float = 0.0
    """stop cleanly after this many minutes (checkpoint saved, summary marked stopped); continue with --resume (0: no limit)"""
    compile_cache: str = "~/.cache/mineclip_jax/xla"
    """persistent XLA compilation cache directory, reused by later runs ('' disables; the default is $MINECLIP_JAX_COMPILE_CACHE when set, mineclip_jax.compile_cache)"""


# Flags a `--resume` may change (budget, logging, a process's address); the rest is the saved run's.
RESUME_OVERRIDES = ("total_steps", "progress", "log_every", "checkpoint_every", "video_every",
                    "video_length", "compile_cache", "time_limit_min", "coordinator", "process_id",
                    "init_timeout_s", "final_eval_episodes")  # fmt: skip

# `--preset paper` (the paper's Table A.4 is lost, so the smoothing weight is ours; docs/agents.md)
PAPER_PRESET = dict(smooth_coef=0.01, action_prior="uniform", agent_size="paper",
                    max_episode_steps=None, action_space="compact", core_size=0,
                    norm_returns=False, lr_final_frac=0.0, critic_time_left=False,
                    success_bonus=10.0)  # fmt: skip

MAX_SEED = 2**31 - 1


def stage_tasks(cfg: PPOConfig) -> list[tuple[str, ...]]:
    return loop.adapters.stage_tasks(cfg.task, cfg.stages)


def apply_preset(cfg: PPOConfig, given: frozenset[str] | None = None) -> PPOConfig:
    """`--preset paper` -> the paper's recipe; SI keeps whole episodes of the longest task.
    `given` (the CLI's flags, `given_flags`): a given flag the preset would change is refused,
    naming it, instead of being overridden; None (a Python caller): the preset wins."""
    if cfg.preset != "paper":
        return cfg
    specs = [s for tasks in stage_tasks(cfg) if tasks != ("cartpole",) for s in task_specs(tasks)]
    longest = max((s.max_steps for s in specs), default=cfg.si_max_len)
    si_len = -(-int(longest) // cfg.action_repeat)
    recipe = dict(PAPER_PRESET, si_max_len=max(si_len, 1))
    if cfg.si_every == 0:  # SI off: its episode length is not part of the recipe
        del recipe["si_max_len"]
    clash = sorted(k for k in given or () if k in recipe and getattr(cfg, k) != recipe[k])
    if clash:
        flags = ", ".join(f"--{k.replace('_', '-')} {getattr(cfg, k)}" for k in clash)
        want = ", ".join(f"{k.replace('_', '-')}={recipe[k]}" for k in clash)
        them = "it" if len(clash) == 1 else "them"
        raise ConfigError(f"--preset paper sets {want}; {flags} would be overridden: drop "
                          f"{them} or drop --preset paper")  # fmt: skip
    return dataclasses.replace(cfg, **recipe, preset="none")


# Flags that do nothing unless another turns their feature on (`unused_flags`).
SI_FLAGS = ("si_steps", "si_batch", "si_capacity", "si_max_len", "si_lr", "si_unsuccessful_weight",
            "si_min_return", "si_balance_tasks")  # fmt: skip


def unused_flags(cfg: PPOConfig, given: frozenset[str]) -> None:
    """ConfigError for a given flag whose feature is off, so that it would change nothing (a user
    who passes it expects it to)."""
    features = (  # (flags, feature off, why, what turns it on)
        (("mineclip_reward",), cfg.reward != "mineclip", f"--reward {cfg.reward}",
         "--reward mineclip"),
        (("mineclip_features",), not cfg.mineclip_ckpt, "no --mineclip-ckpt", "--mineclip-ckpt"),
        (("smooth_window",), cfg.smooth_coef == 0, "--smooth-coef 0", "a --smooth-coef above 0"),
        (SI_FLAGS, cfg.si_every == 0, "--si-every 0", "a --si-every above 0"),
    )  # fmt: skip
    for names, off, why, fix in features:
        dead = [f"--{k.replace('_', '-')}" for k in names if k in given]
        if off and dead:
            one = len(dead) == 1
            raise ConfigError(f"{' '.join(dead)}: with {why} {'it does' if one else 'they do'} "
                              f"nothing; drop {'it' if one else 'them'} or pass {fix}")  # fmt: skip


def validate(cfg: PPOConfig, given: frozenset[str] | None = None) -> None:
    """Raise ConfigError for flags that cannot work, before anything is built or written, and
    for `given` flags (the CLI's) that would do nothing (`unused_flags`)."""
    if given is not None:
        unused_flags(cfg, given)
    for name in ("num_envs", "num_steps", "total_steps", "update_epochs", "num_minibatches",
                 "seeds"):  # fmt: skip
        if getattr(cfg, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be positive, got {getattr(cfg, name)}")  # fmt: skip
    if not 0 <= cfg.seed <= MAX_SEED - cfg.seeds + 1:
        raise ConfigError(f"--seed must be in 0 .. {MAX_SEED - cfg.seeds + 1} (with --seeds "
                          f"{cfg.seeds}), got {cfg.seed}")  # fmt: skip
    if cfg.num_envs % cfg.num_minibatches:
        raise ConfigError(
            f"--num-envs {cfg.num_envs} must be divisible by --num-minibatches "
            f"{cfg.num_minibatches} (minibatches are sets of whole envs)"
        )
    loop.adapters.validate_mesh(cfg)
    per_update = cfg.num_envs * cfg.num_steps
    if cfg.total_steps % per_update:
        lo, hi = cfg.total_steps // per_update * per_update, -(-cfg.total_steps // per_update) * per_update  # fmt: skip
        raise ConfigError(
            f"--total-steps {cfg.total_steps} is not a whole number of updates of --num-envs "
            f"{cfg.num_envs} x --num-steps {cfg.num_steps} = {per_update} env steps; pass "
            + (f"--total-steps {lo} or {hi}" if lo else f"--total-steps {hi}")
        )
    off = " (0 turns the final evaluation off)"
    for name, low, hint in (("smooth_window", 1, ""), ("aux_coef", 0, ""), ("core_size", 0, " (0: memoryless)"),
                            ("final_eval_episodes", 0, off)):  # fmt: skip
        if getattr(cfg, name) < low:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= {low}{hint}, got {getattr(cfg, name)}")  # fmt: skip
    if not 0.0 <= cfg.lr_final_frac <= 1.0:
        raise ConfigError(f"--lr-final-frac must be in [0, 1] (a fraction of --lr), got "
                          f"{cfg.lr_final_frac}")  # fmt: skip
    if cfg.success_bonus is not None and cfg.success_bonus < 0:
        raise ConfigError(f"--success-bonus must be >= 0, got {cfg.success_bonus}")
    if cfg.si_every > 0 and (cfg.si_capacity <= 0 or cfg.si_max_len <= 0 or cfg.si_batch <= 0):
        raise ConfigError("--si-capacity, --si-max-len and --si-batch must be positive with SI on")
    if cfg.seeds > 1 and cfg.backend != "jax":
        raise ConfigError(f"--seeds {cfg.seeds} runs the seeds in one program on --backend jax; "
                          f"with --backend {cfg.backend} train one seed per run")  # fmt: skip
    loop.adapters.validate_reward(cfg)
    loop.adapters.validate_tasks(cfg, stage_tasks(cfg))


def resume_config(cfg: PPOConfig, given: frozenset[str] | None = None) -> PPOConfig:
    """The saved config of `cfg.out`, with the flags of `RESUME_OVERRIDES` that `cfg` changes
    from the saved run; any other changed flag is refused. `given`: the fields the user set (the
    CLI's flags, `given_flags`), each taken as set whatever its value (`--time-limit-min 0` lifts
    a saved limit); None (a Python caller): the fields that differ from the defaults."""
    run_dir = Path(cfg.out).expanduser()
    if not (run_dir / CONFIG_FILE).exists():
        raise ConfigError(f"--resume: no run in {str(run_dir)!r} (no {CONFIG_FILE}); drop "
                          "--resume to start a new run there")  # fmt: skip
    try:
        saved = checkpoints.load_config(run_dir, PPOConfig)
    except ValueError as e:
        raise ConfigError(f"--resume: {e}") from None
    over = checkpoints.resume_overrides(saved, cfg, PPOConfig(), RESUME_OVERRIDES, given)
    return dataclasses.replace(saved, **over, out=cfg.out, resume=True, progress=cfg.progress)


def given_flags(argv) -> frozenset[str]:
    """The PPOConfig fields a command line sets (`--num-envs 8`, `--num-envs=8`, `--no-progress`),
    whatever their values."""
    names = {f.name for f in dataclasses.fields(PPOConfig)}
    given = set()
    for arg in argv:
        if not arg.startswith("--"):
            continue
        flag = arg[2:].split("=", 1)[0].replace("-", "_")
        if flag not in names and flag.startswith("no_") and flag[3:] in names:
            flag = flag[3:]
        if flag in names:
            given.add(flag)
    return frozenset(given)


def train(cfg: PPOConfig, *, stop_after_updates: int | None = None,
          given: frozenset[str] | None = None) -> dict:  # fmt: skip
    """Validate (or, with --resume, merge with the saved config; `given`: see `resume_config`)
    and run `agents.train.train`, which refuses a new run in an --out that holds checkpoints."""
    cfg = resume_config(cfg, given) if cfg.resume else apply_preset(cfg, given)
    validate(cfg, None if cfg.resume else given)
    return loop.train(cfg, stop_after_updates=stop_after_updates)


def config_from_json(d: dict) -> PPOConfig:
    return checkpoints.config_from_json(d, PPOConfig)


def default_out(cfg: PPOConfig, given: frozenset[str]) -> PPOConfig:
    """Without --out (and --resume), a run directory that already holds a run is left alone: the
    new run goes to OUT-YYYYmmdd-HHMMSS (so running the README's command twice starts a second
    run instead of failing). Under --distributed every process must name the same directory, so
    there the default stays as it is."""
    run_dir = Path(cfg.out).expanduser()
    if "out" in given or cfg.resume or cfg.distributed or not (run_dir / CONFIG_FILE).exists():
        return cfg
    out = f"{cfg.out}-{time.strftime('%Y%m%d-%H%M%S')}"
    print(f"{cfg.out} holds an earlier run (continue it with --resume --out {cfg.out}); this run "
          f"goes to {out}")  # fmt: skip
    return dataclasses.replace(cfg, out=out)


def what_next(cfg: PPOConfig) -> str:
    """Where the run went and the command that evaluates it (printed at the end of `main`)."""
    tasks = [t for s in stage_tasks(cfg) for t in s]
    lines = [f"run saved in {cfg.out} (config, checkpoints, metrics.jsonl, TensorBoard: "
             f"tensorboard --logdir {cfg.out})"]  # fmt: skip
    if tasks != ["cartpole"]:
        names = " ".join(json.dumps(t) for t in dict.fromkeys(tasks))
        lines.append(f"evaluate it: python -m agents.evaluate --policy {cfg.out} --tasks {names} "
                     f"--episodes 100 --out-dir {cfg.out}/eval")  # fmt: skip
    return "\n".join(lines)


def main(argv=None) -> None:
    import tyro

    argv = sys.argv[1:] if argv is None else list(argv)
    cfg = tyro.cli(PPOConfig, args=argv)
    given = given_flags(argv)
    cfg = default_out(cfg, given)
    with fail_fast():  # --distributed: a failing process leaves at once (no hang)
        try:
            devices.expose_cores(cfg)  # before JAX starts: on a CPU every core a device (or one)
            initialize(cfg)  # --distributed: join the other processes before JAX computes
            s = train(cfg, given=given)
        except (ConfigError, DistributedError, RunLockedError, NonFiniteError) as e:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    keys = ("env_steps", "episodic_return", "success_rate", "sps")
    if "seeds" in s:
        print(json.dumps({k: {x: v[x] for x in keys if x in v} for k, v in s["seeds"].items()}))
    else:
        print(json.dumps({k: s[k] for k in keys if k in s}))
    print(what_next(cfg))
    # the result last: "final evaluation (N episodes, TASK): untrained X% [lo, hi], trained ..."
    for seed_summary in s["seeds"].values() if "seeds" in s else [s]:
        for line in seed_summary.get("final_eval_lines", ()):
            print(line)


if __name__ == "__main__":
    main()

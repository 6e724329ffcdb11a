"""The sections of `python -m agents.ppo`'s config: each a frozen dataclass with one line of help
per field (tyro reads them) and its own `validate()`; `agents.ppo.PPOConfig` inherits them all,
so the command line and `PPOConfig(num_envs=...)` stay flat.

    EnvConfig      what a run trains on: tasks, stages, backend, seed, world size, frames, ...
    RewardConfig   the training reward and MineCLIP
    ModelConfig    the policy network and what its critic sees
    ShapeConfig    the learner's shapes and schedule (static: `agents.learner.LearnerConfig`)
    HyperConfig    the traced hyper-parameters (`agents.learner.HyperParams`, a jit argument)
    RunConfig      where a run writes, its logging and budgets of time (never changes what is built)
    DeviceConfig   `agents.devices`: which local devices act and learn
    DistributedConfig   `mineclip_jax.distributed`: how a process joins a multi-host run

What a section means is used as is, so no list of names is kept by hand: `agents.build` leaves
`RunConfig`'s fields out of its cache key and reduces `HyperConfig`'s to what
`agents.learner.LearnerConfig` compiles in (whether a term is on); `--resume` may change the
fields marked `resumable` (`resumable_fields`). `section(cfg, Section)` takes one section out of
a `PPOConfig` (or a saved run's config). Rules that tie two sections together (the seed range
and `--seeds`, the envs over the devices, tasks against backend and reward) are checked where
the sections meet: `agents.ppo.validate`, `agents.devices.validate`, `agents.adapters`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Literal, TypeVar

from agents.errors import ConfigError

RESUMABLE = "resumable"
"""Field metadata key: True where a `--resume` may change the field (budget, logging, a
process's address); every other field is the saved run's."""

S = TypeVar("S")


def resumable(default):
    """A field a `--resume` may change (`resumable_fields`)."""
    return dataclasses.field(default=default, metadata={RESUMABLE: True})


def resumable_fields(cls) -> tuple[str, ...]:
    """The fields of a config class that a `--resume` may change."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get(RESUMABLE))


def field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def section(cfg, cls: type[S]) -> S:
    """The `cls` section of `cfg` (a `PPOConfig`, or a saved run's config, whose missing fields
    take the section's defaults)."""
    return cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cls) if hasattr(cfg, f.name)})  # fmt: skip


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _at_least(obj, low, names, hint: str = "") -> None:
    for name in names:
        if getattr(obj, name) < low:
            raise ConfigError(f"{_flag(name)} must be >= {low}{hint}, got {getattr(obj, name)}")


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """What a run trains on: its tasks and stages (all stages' tasks make the policy's task
    vocabulary), the backend that steps the worlds, the seed they are generated from, their
    size, frames and episode limit, and the bridge's workers (host-stepped backends)."""

    task: str = "combat a zombie"
    """task id or prompt, several separated by commas (one per env, round robin), a group (animal_zoo, mob_combat), or cartpole"""
    stages: str = ""
    """multi-stage training: task lists separated by ';' trained in turn (SI buffer kept, policy head reset); overrides --task"""
    seed: int = 0
    """random seed (params, envs, sampling), 0 .. 2**31 - 1"""
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

    def validate(self) -> None:
        """The bridge's flags, on the host-stepped backends that use them (what the backend
        cannot run with the run's tasks and envs: `agents.adapters.validate_backend`)."""
        if self.backend == "jax":
            return
        _at_least(self, 1, ("bridge_envs_per_worker",))
        if self.bridge_timeout_s is not None and self.bridge_timeout_s <= 0:
            raise ConfigError(f"--bridge-timeout-s must be positive, got {self.bridge_timeout_s}")
        _at_least(self, 0, ("bridge_max_restarts",))
        if self.backend == "minedojo" and self.bridge_envs_per_worker != 1:
            raise ConfigError("--bridge-envs-per-worker is for --backend process; MineDojo "
                              "runs one Minecraft per worker")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class RewardConfig:
    """The training reward: the task's manual dense reward, success only, or MineCLIP's (and
    MineCLIP's frozen features as the policy's image input); the success bonus."""

    reward: Literal["mineclip", "manual", "sparse"] = "manual"
    """training reward: MineCLIP (needs --mineclip-ckpt), the task's manual dense reward, or success only; success bonus added to all"""
    mineclip_ckpt: str | None = None
    """MineCLIP checkpoint: mini (shipped with the package, 48x64 frames), attn.pth / avg.pth or a native dir; frozen image features for the policy and, with --reward mineclip, the reward"""
    mineclip_reward: Literal["direct", "delta", "peak"] = "direct"
    """MineCLIP reward form: Direct (moving targets), Delta (static targets) or Peak (pays only rises of the episode's best Direct, so lingering near the target earns nothing more)"""
    mineclip_negatives: tuple[str, ...] = ()
    """prompts added to the paper's 12 as the MineCLIP reward's negatives (e.g. "walk around"): P_goal competes with them too and chance level becomes 1/(12 + k)"""
    mineclip_features: bool = True
    """with --mineclip-ckpt: the policy's image input is MineCLIP's frozen frame features (the paper's MineAgent); off (--no-mineclip-features): the frames through --cnn, the same network as without a checkpoint, and MineCLIP gives only the reward"""
    success_bonus: float | None = None
    """reward added on the step a programmatic task succeeds (never on Creative tasks); default: the rule max(10, r_max / (1 - gamma)), r_max the most one step of the dense reward can pay (max(10, 1) under --mineclip-reward peak, which pays an episode below 1 in all), so no stream outbids success (agents.adapters.success_bonus)"""

    def validate(self) -> None:
        """The reward's flags (tasks without frames, or mixing Creative and programmatic ones:
        `agents.adapters.validate_tasks`)."""
        if self.success_bonus is not None and self.success_bonus < 0:
            raise ConfigError(f"--success-bonus must be >= 0, got {self.success_bonus}")
        if self.mineclip_negatives and self.reward != "mineclip":
            raise ConfigError(f"--mineclip-negatives shapes the MineCLIP reward; with --reward "
                              f"{self.reward} it would do nothing: drop it or pass --reward mineclip")  # fmt: skip
        if any(not n.strip() for n in self.mineclip_negatives):
            raise ConfigError("--mineclip-negatives holds an empty prompt: give each negative "
                              "as text")  # fmt: skip
        if self.reward == "mineclip" and not self.mineclip_ckpt:
            raise ConfigError("--reward mineclip needs --mineclip-ckpt PATH (mini: the shipped "
                              "model; or attn.pth, avg.pth, a native checkpoint dir); without one "
                              "use --reward manual or sparse")  # fmt: skip
        # here, not at the top: the checkpoint module brings JAX and Flax, this module nothing
        from mineclip_jax.checkpoint import SHIPPED

        ckpt = self.mineclip_ckpt
        if ckpt and ckpt not in SHIPPED and not Path(ckpt).expanduser().exists():
            raise ConfigError(
                f"--mineclip-ckpt {ckpt!r} does not exist; use a shipped model "
                f"({', '.join(SHIPPED)}), or download attn.pth from the MineCLIP release (or "
                "convert one with mineclip_jax.convert) and pass its path"
            )


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The policy network (`agents.build.build_network`) and what its critic sees beyond
    MineDojo's observations."""

    privileged_critic: bool = False
    """embedded world: the critic also sees simulator features of the task's target (direction, distance, reach, fleeing; envs.voxel.target_features); the policy still sees only MineDojo's observations"""
    privileged_policy: bool = False
    """embedded world, ablation: the policy itself also sees those target features (oracle perception; such a policy cannot act without them)"""
    critic_time_left: bool = False
    """embedded world: the critic also sees the fraction of the episode's step limit left, so a time-limit truncation is in its view (not the policy's)"""
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

    def validate(self) -> None:
        _at_least(self, 0, ("core_size",), " (0: memoryless)")


@dataclasses.dataclass(frozen=True)
class ShapeConfig:
    """The learner's shapes and schedule: envs, steps, budget, epochs, minibatches, the SI
    buffer's sizes and which optional parts are on. Static: `agents.learner.LearnerConfig` is
    derived from it (and from which hyper-parameter terms are on), compiled in."""

    num_envs: int = 16
    """parallel environments (a multiple of the device count and of --num-minibatches)"""
    num_steps: int = 64
    """rollout length per env per update"""
    total_steps: int = resumable(65_536)
    """env steps per stage"""
    update_epochs: int = 4
    """PPO epochs per update"""
    num_minibatches: int = 4
    """minibatches per epoch (each a set of whole envs)"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    anneal_lr: bool = True
    """linearly anneal the PPO learning rate (to --lr-final-frac of --lr)"""
    norm_returns: bool = True
    """the critic learns value targets scaled by their running mean and std, so its gradient on the shared trunk does not grow with the reward's scale (GAE stays in reward units)"""
    smooth_window: int = 4
    """action-smoothing sliding window |W| (steps)"""
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
    si_balance_tasks: bool = True
    """multi-task replay balancing: every task the same SI sampling mass and its share of the buffer's slots (a later stage's successes do not displace an earlier stage's)"""
    unroll: bool | None = None
    """unroll the epoch/minibatch scans (default: on CPU with a CNN, avoiding jax-ml/jax#12868)"""

    def validate(self) -> None:
        """Sizes and the divisibility of the envs into minibatches and of the budget into
        updates (the envs over the devices: `agents.devices.validate`)."""
        for name in ("num_envs", "num_steps", "total_steps", "update_epochs", "num_minibatches"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_flag(name)} must be positive, got {getattr(self, name)}")
        self.check_minibatches(self.num_envs, self.num_minibatches)
        per_update = self.num_envs * self.num_steps
        if self.total_steps % per_update:
            lo, hi = self.total_steps // per_update * per_update, -(-self.total_steps // per_update) * per_update  # fmt: skip
            raise ConfigError(
                f"--total-steps {self.total_steps} is not a whole number of updates of --num-envs "
                f"{self.num_envs} x --num-steps {self.num_steps} = {per_update} env steps; pass "
                + (f"--total-steps {lo} or {hi}" if lo else f"--total-steps {hi}")
            )
        _at_least(self, 1, ("smooth_window",))
        if self.si_every > 0 and (self.si_capacity <= 0 or self.si_max_len <= 0 or self.si_batch <= 0):  # fmt: skip
            raise ConfigError("--si-capacity, --si-max-len and --si-batch must be positive with SI on")  # fmt: skip

    @staticmethod
    def check_minibatches(num_envs: int, num_minibatches: int) -> None:
        """Minibatches are sets of whole envs (also `agents.learner.LearnerConfig`'s rule)."""
        if num_envs % num_minibatches:
            raise ConfigError(
                f"--num-envs {num_envs} must be divisible by --num-minibatches "
                f"{num_minibatches} (minibatches are sets of whole envs)"
            )


@dataclasses.dataclass(frozen=True)
class HyperConfig:
    """The learner's hyper-parameters: traced, not compiled in (`agents.learner.HyperParams`
    has exactly these fields, as float32 scalars), so two runs that differ only here share one
    compiled program. Whether a term is on at all (`vf_clip` given, `smooth_coef` or `aux_coef`
    above 0) is static (`agents.learner.LearnerConfig`)."""

    lr: float = 3e-4
    """Adam learning rate of the PPO phase"""
    lr_final_frac: float = 0.1
    """with --anneal-lr, the fraction of --lr the schedule ends at (0: the paper's anneal to zero; above 0 a short run keeps learning to its last update)"""
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
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    aux_coef: float = 0.0
    """weight of an auxiliary loss in which the policy's own features predict whether the target is in the frame, where and how far (embedded world; 0: off)"""
    si_lr: float = 1e-4
    """Adam learning rate of the SI phase"""
    si_unsuccessful_weight: float = 0.5
    """sampling weight of the best unsuccessful trajectory (successful ones weigh 1)"""
    si_min_return: float = 0.0
    """unsuccessful episodes need a return above this to enter the SI buffer"""

    def validate(self) -> None:
        _at_least(self, 0, ("aux_coef",))
        if not 0.0 <= self.lr_final_frac <= 1.0:
            raise ConfigError(f"--lr-final-frac must be in [0, 1] (a fraction of --lr), got "
                              f"{self.lr_final_frac}")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """The run's bookkeeping: its directory, logging, checkpoint and video cadence, budgets of
    time, the number of seeds (which stacks identical runs) and the preset (applied before
    anything is built); none of it changes what is built."""

    seeds: int = 1
    """train seeds --seed .. --seed + K - 1 in one compiled program (--backend jax; OUT/seed<s>/ per seed); for an accelerator: on a CPU a pixel job ran 0.36x as fast as K runs in turn (benchmarks/RESULTS.md)"""
    preset: Literal["none", "paper"] = "none"
    """paper: the paper's recipe (docs/agents.md): smoothing on, uniform initial policy, paper-size agent, each task's episode length, whole-episode SI; a flag given with it that it would change is refused"""
    out: str = "runs/ppo"
    """run directory: config, checkpoints, metrics.jsonl, TensorBoard events, videos (on the command line without --out and --resume, a taken runs/ppo gives runs/ppo-YYYYmmdd-HHMMSS, so a rerun starts a new run)"""
    resume: bool = False
    """continue the run in --out from its latest checkpoint (its saved config is used)"""
    log_every: int = resumable(1)
    """updates between console/TensorBoard logs"""
    checkpoint_every: int = resumable(20)
    """updates between checkpoints (the last update is always saved)"""
    video_every: int = resumable(0)
    """updates between MP4 episode videos (0: only at the end; -1: never)"""
    video_length: int = resumable(100)
    """steps per video"""
    progress: bool = resumable(True)
    """show the console progress bar"""
    final_eval_episodes: int = resumable(100)
    """at the end, the untrained (initial) and the trained policy play the same N episodes per task, actions sampled (agents.evaluate's default); success rates (95% Wilson intervals) and mean returns printed and in summary.json (--backend jax; 0: off)"""
    time_limit_min: float = resumable(0.0)
    """stop cleanly after this many minutes (checkpoint saved, summary marked stopped); continue with --resume (0: no limit)"""
    compile_cache: str = resumable("~/.cache/mineclip_jax/xla")
    """persistent XLA compilation cache directory, reused by later runs ('' disables; the default is $MINECLIP_JAX_COMPILE_CACHE when set, mineclip_jax.compile_cache)"""

    def validate(self) -> None:
        if self.seeds <= 0:
            raise ConfigError(f"--seeds must be positive, got {self.seeds}")
        _at_least(self, 0, ("final_eval_episodes",), " (0 turns the final evaluation off)")


# --- a run's config.json ---------------------------------------------------------------------

CONFIG_FILE = "config.json"


def config_to_json(cfg) -> dict:
    return dataclasses.asdict(cfg)


def _hashable(v):
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def config_from_json(d: dict, cls=None):
    """Saved JSON -> `cls(**fields)` (fields `cls` does not know are dropped, missing ones take
    `cls`'s defaults); without `cls`, a frozen dataclass holding exactly the saved fields."""
    d = {k: _hashable(v) for k, v in d.items()}
    if cls is None:
        cls = dataclasses.make_dataclass("SavedConfig", list(d), frozen=True)
        return cls(**d)
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def load_config(run_dir: str | os.PathLike, cls=None):
    """The run's `config.json` (see `config_from_json`); clear errors when missing or damaged."""
    path = Path(run_dir).expanduser() / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"no trained run in {str(path.parent)!r} ({CONFIG_FILE} missing); train one with "
            f"python -m agents.ppo --out {path.parent}"
        )
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(
            f"{path} is damaged ({e}); it is not the JSON a run writes. Restore it from a copy "
            "or start a new run with a new --out"
        ) from None
    return config_from_json(d, cls)

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

from agents import checkpoints, devices
from agents import train as loop
from agents.adapters import ConfigError, task_specs
from agents.checkpoints import CONFIG_FILE, NonFiniteError
from agents.config import (
    EnvConfig,
    HyperConfig,
    ModelConfig,
    RewardConfig,
    RunConfig,
    ShapeConfig,
    resumable_fields,
    section,
)
from mineclip_jax.distributed import DistributedConfig, DistributedError, fail_fast, initialize
from mineclip_jax.run_lock import RunLockedError


# The fields are those of the sections (agents.config), inherited: flat on the command line and in
# `PPOConfig(num_envs=...)`, `section(cfg, HyperConfig)` takes one out. The help lists them
# section by section (a dataclass puts the fields of its last base first).
@dataclasses.dataclass(frozen=True)
class PPOConfig(DistributedConfig, devices.DeviceConfig, RunConfig, HyperConfig, ShapeConfig,
                ModelConfig, RewardConfig, EnvConfig):  # fmt: skip
    """PPO + self-imitation for MineDojo tasks (paper Sec. 4.2, App. F-G).

    Run: python -m agents.ppo --task "hunt a cow" --reward manual --out runs/hunt_cow
    """


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


SECTIONS = (EnvConfig, RewardConfig, ModelConfig, ShapeConfig, HyperConfig, RunConfig)
"""The sections that check their own flags (`validate`); the device and distributed flags are
checked by `agents.devices.validate` and `mineclip_jax.distributed.initialize`."""


def validate(cfg: PPOConfig, given: frozenset[str] | None = None) -> None:
    """Raise ConfigError for flags that cannot work, before anything is built or written, and
    for `given` flags (the CLI's) that would do nothing (`unused_flags`): each section's own
    rules, then those across sections (the seed range, --seeds, the envs over the devices, the
    tasks with the backend and the reward)."""
    if given is not None:
        unused_flags(cfg, given)
    for cls in SECTIONS:
        section(cfg, cls).validate()
    if not 0 <= cfg.seed <= MAX_SEED - cfg.seeds + 1:
        raise ConfigError(f"--seed must be in 0 .. {MAX_SEED - cfg.seeds + 1} (with --seeds "
                          f"{cfg.seeds}), got {cfg.seed}")  # fmt: skip
    if cfg.seeds > 1 and cfg.backend != "jax":
        raise ConfigError(f"--seeds {cfg.seeds} runs the seeds in one program on --backend jax; "
                          f"with --backend {cfg.backend} train one seed per run")  # fmt: skip
    devices.validate(cfg)
    loop.adapters.validate_tasks(cfg, stage_tasks(cfg))


def resume_config(cfg: PPOConfig, given: frozenset[str] | None = None) -> PPOConfig:
    """The saved config of `cfg.out`, with the resumable flags (`agents.config.resumable`) that
    `cfg` changes from the saved run; any other changed flag is refused. `given`: the fields the
    user set (the CLI's flags, `given_flags`), each taken as set whatever its value
    (`--time-limit-min 0` lifts a saved limit); None (a Python caller): the fields that differ
    from the defaults."""
    run_dir = Path(cfg.out).expanduser()
    if not (run_dir / CONFIG_FILE).exists():
        raise ConfigError(f"--resume: no run in {str(run_dir)!r} (no {CONFIG_FILE}); drop "
                          "--resume to start a new run there")  # fmt: skip
    try:
        saved = checkpoints.load_config(run_dir, PPOConfig)
    except ValueError as e:
        raise ConfigError(f"--resume: {e}") from None
    allowed = resumable_fields(PPOConfig)
    over = checkpoints.resume_overrides(saved, cfg, PPOConfig(), allowed, given)
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
    # a resumed run's tasks are the saved run's (read quietly), not the command line's defaults
    saved = checkpoints.load_config(cfg.out, PPOConfig) if cfg.resume else None
    print(what_next(cfg if saved is None else dataclasses.replace(saved, out=cfg.out)))
    # the result last: "final evaluation (N episodes, TASK): untrained X% [lo, hi], trained ..."
    for seed_summary in s["seeds"].values() if "seeds" in s else [s]:
        for line in seed_summary.get("final_eval_lines", ()):
            print(line)


if __name__ == "__main__":
    main()

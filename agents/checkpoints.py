"""A run directory's saved state: `config.json`, orbax checkpoints of the runner (params,
optimizer states, SI buffer, env and RNG state, counters) with their stage metadata, and
`load_policy`, which turns a run back into a policy over raw env observations.

Layout: `RUN/config.json`, `RUN/checkpoints/<global update>/{runner,meta}`. The config is stored
as plain JSON; `load_config` gives it back as a frozen dataclass with the saved fields (no
dependence on the CLI's class), `config_from_json(d, cls)` as the caller's own config class.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from agents import adapters, losses
from agents import learner as lrn
from mineclip_jax.checkpoint import write_json  # noqa: F401  (the runs' JSON files)

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


def resume_overrides(saved, given, default, allowed) -> dict:
    """The fields a resume changes: those where `given` differs from both `default` (so the
    user passed them) and `saved`; a ConfigError unless all are in `allowed`. Prints each."""
    skip = ("out", "resume")
    changed = sorted(
        f.name for f in dataclasses.fields(given)
        if f.name not in skip
        and getattr(given, f.name) not in (getattr(default, f.name), getattr(saved, f.name))
    )  # fmt: skip
    flag = lambda n: "--" + n.replace("_", "-")  # noqa: E731
    refused = [n for n in changed if n not in allowed]
    if refused:
        listed = ", ".join(f"{flag(n)} (saved {getattr(saved, n)!r})" for n in refused)
        raise adapters.ConfigError(
            f"--resume keeps the saved run's {listed}; only {', '.join(map(flag, allowed))} may "
            "change. Drop those flags, or start a new run with a new --out"
        )
    for n in changed:
        print(f"--resume: overriding {flag(n)} {getattr(saved, n)!r} -> {getattr(given, n)!r}")
    print("--resume: every other flag is the saved run's")
    return {n: getattr(given, n) for n in changed}


def ckpt_manager(run_dir: Path):
    import orbax.checkpoint as ocp

    return ocp.CheckpointManager(
        (Path(run_dir) / "checkpoints").absolute(),
        options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True),
    )


def save_checkpoint(mgr, step: int, runner: lrn.Runner, stage: int, base: int = 0) -> None:
    import orbax.checkpoint as ocp

    mgr.save(step, args=ocp.args.Composite(
        runner=ocp.args.StandardSave(runner),
        meta=ocp.args.JsonSave({"stage": stage, "base_updates": base}),
    ))  # fmt: skip
    mgr.wait_until_finished()


def restore_meta(mgr, step: int | None = None) -> dict:
    import orbax.checkpoint as ocp

    step = mgr.latest_step() if step is None else step
    return mgr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]


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


def load_run(run_dir: str | os.PathLike, step: int | None = None):
    """A run's checkpoint -> (cfg, built, runner): its config, the learner and env of the stage
    the checkpoint belongs to (`agents.build.Built`) and the restored `Runner` (`runner.params`
    are the policy's parameters). `step` None: the latest checkpoint."""
    from agents.build import build

    run_dir = Path(run_dir).expanduser()
    cfg = load_config(run_dir)
    mgr = ckpt_manager(run_dir)
    if mgr.latest_step() is None:
        raise FileNotFoundError(
            f"run {str(run_dir)!r} has no checkpoint yet; train longer or check --out"
        )
    meta = restore_meta(mgr, step)
    stages = adapters.stage_tasks(cfg.task, cfg.stages)
    built = build(cfg, stages[int(meta["stage"])])
    L = built.learner
    like = jax.eval_shape(L.init, jax.random.PRNGKey(0))
    if cfg.backend != "jax":  # a host-stepped runner holds no env state (agents.sebulba)
        like = like.update(env_params=None, env_state=None)
    runner, _ = restore_checkpoint(mgr, like, L.placement(like), step)
    return cfg, built, runner


def load_policy(run_dir: str | os.PathLike, step: int | None = None):
    """A trained run -> (policy_fn, info).

    `policy_fn(key, obs_batch, prev_action=None, task_id=None, deterministic=False)` maps a batch
    of raw env observations (the dict the env returns, leading axis B) to env actions (int32
    `[B, 8]` MultiDiscrete for the embedded world / MineDojo, `[B, 1]` for cartpole).
    `prev_action` is the previous *policy* action `[B, K]` (the no-op `info["noop_action"]` at
    an episode start, the default; returned in `info` as `info["last_policy_action"]` after
    each call for convenience); `task_id` `[B]` indexes `info["task_names"]` (default 0).
    """
    cfg, built, runner = load_run(run_dir, step)
    params = runner.params
    L, env = built.learner, built.env
    dims = L.action_dims
    noop = np.asarray(L.noop_action)
    info = {
        "config": config_to_json(cfg),
        "task_names": env.task_names,
        "action_dims": dims,
        "noop_action": noop,
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
            jnp.tile(jnp.asarray(noop, jnp.int32), (b, 1))
            if prev_action is None
            else jnp.asarray(prev_action, jnp.int32)
        )
        tid = jnp.zeros((b,), jnp.int32) if task_id is None else jnp.asarray(task_id, jnp.int32)
        env_a, a = _act(params, L.consts, key, obs, prev, tid, jnp.asarray(deterministic))
        info["last_policy_action"] = np.asarray(a)
        return np.asarray(env_a)

    return policy_fn, info

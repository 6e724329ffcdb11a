"""A run directory's saved state: `config.json`, orbax checkpoints of the runner (params,
optimizer states, SI buffer, env and RNG state, counters) with their stage metadata, and
`load_policy`, which turns a run back into a policy over raw env observations.

Layout: `RUN/config.json`, `RUN/checkpoints/<global update>/{runner,meta,SHA256SUMS}`. The config
is stored as plain JSON; `load_config` gives it back as a frozen dataclass with the saved fields
(no dependence on the CLI's class), `config_from_json(d, cls)` as the caller's own config class.

Integrity: orbax commits a step by renaming its temporary directory; right after that,
`save_checkpoint` writes the step's `SHA256SUMS` (every file of the step), and every restore
(`--resume`, `load_run` / `load_policy`, `agents.evaluate --policy`) verifies it first. A flipped
byte in a data file is otherwise decoded by TensorStore without complaint (NaN or 3e38 in Adam's
moments). A run saves only finite parameters and optimizer states (`NonFiniteError` otherwise), so
`max_to_keep` never rotates an intact checkpoint out for a bad one.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from agents import adapters, losses, pretrained
from agents import learner as lrn
from agents.config import (  # noqa: F401  (a run's config.json, read and written through here)
    CONFIG_FILE,
    config_from_json,
    config_to_json,
    load_config,
)
from mineclip_jax.checkpoint import (
    CHECKSUM_FILE,
    verify_checksums,
    write_json,  # noqa: F401  (the runs' JSON files)
    write_tree_checksums,
)

# The name part of the directory orbax writes a step into before it commits it by a rename.
UNFINALISED = ".orbax-checkpoint-tmp"


class DamagedCheckpointError(ValueError):
    """A checkpoint step whose files do not match its SHA256SUMS, or that holds non-finite
    parameters or optimizer states."""


class IncompatibleCheckpointError(ValueError):
    """A checkpoint step whose files are intact but whose state is not the one this version of
    the code builds (saved by another version): not damage, so it is never moved aside."""


class NonFiniteError(RuntimeError):
    """The run's loss, parameters or optimizer states are NaN or infinite: it stops before it
    saves them."""


def resume_overrides(saved, given, default, allowed, explicit=None) -> dict:
    """The fields a resume changes: those the user set that differ from `saved`; a ConfigError
    unless all are in `allowed`. Prints each. `explicit`: the names of the fields the user set
    (their command-line flags, whatever the values); None: those where `given` differs from
    `default` (a flag set to its default value then reads as not set)."""
    skip = ("out", "resume")
    if explicit is None:
        explicit = {f.name for f in dataclasses.fields(given)
                    if getattr(given, f.name) != getattr(default, f.name)}  # fmt: skip
    changed = sorted(
        n for n in explicit if n not in skip and getattr(given, n) != getattr(saved, n)
    )
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


def step_dir(mgr, step: int) -> Path:
    """The directory of checkpoint `step`."""
    return Path(mgr.directory) / str(step)


def unfinalised_steps(run_dir: str | os.PathLike) -> list[Path]:
    """Steps orbax began to write but never committed (a kill during the save)."""
    ckpts = Path(run_dir) / "checkpoints"
    return sorted(p for p in ckpts.glob(f"*{UNFINALISED}*")) if ckpts.is_dir() else []


def verify_step(mgr, step: int) -> bool:
    """Check step `step` against its SHA256SUMS: True when verified, False when it has none (a
    run of an older version, or a kill between orbax's commit and the manifest); raises
    `DamagedCheckpointError` naming the first file that differs."""
    directory = step_dir(mgr, step)
    if not (directory / CHECKSUM_FILE).is_file():
        return False
    try:
        verify_checksums(directory, hint="the checkpoint is damaged")
    except (ValueError, OSError) as e:
        raise DamagedCheckpointError(str(e)) from None
    return True


@jax.jit
def _all_finite(tree) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)
              if jnp.issubdtype(x.dtype, jnp.inexact)]  # fmt: skip
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def trained_state(runner: lrn.Runner) -> tuple:
    """What training changes by gradients: parameters and both optimizers' states."""
    return (runner.params, runner.opt_state, runner.si_opt_state)


def all_finite(tree) -> bool:
    """True when every float leaf of `tree` is finite (one reduction on device)."""
    return bool(_all_finite(tree))


def save_checkpoint(mgr, step: int, runner: lrn.Runner, stage: int, base: int = 0) -> None:
    """Save `runner` as step `step` and, once orbax has committed it, its SHA256SUMS (process 0;
    every process's shards are on disk when orbax's save returns). Refuses non-finite
    parameters or optimizer states (`NonFiniteError`), before anything is written."""
    import orbax.checkpoint as ocp

    if not all_finite(trained_state(runner)):
        raise NonFiniteError(
            f"update {step}: the parameters or optimizer states hold NaN or inf; not saved (the "
            f"checkpoints on disk stay intact). Lower --lr or --max-grad-norm, then continue "
            f"from the newest checkpoint with --resume"
        )
    mgr.save(step, args=ocp.args.Composite(
        runner=ocp.args.StandardSave(runner),
        meta=ocp.args.JsonSave({"stage": stage, "base_updates": base}),
    ))  # fmt: skip
    mgr.wait_until_finished()
    if jax.process_index() == 0:
        write_tree_checksums(step_dir(mgr, step))


def restore_meta(mgr, step: int | None = None) -> dict:
    import orbax.checkpoint as ocp

    step = mgr.latest_step() if step is None else step
    return mgr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]


def _leaf_paths(tree) -> set[tuple[str, ...]]:
    """The path of every leaf, attributes and dict keys alike (orbax saves both as dict keys)."""
    return {tuple(str(getattr(k, "name", getattr(k, "key", getattr(k, "idx", k)))) for k in path)
            for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]}  # fmt: skip


def check_state_structure(mgr, like: lrn.Runner, step: int) -> None:
    """IncompatibleCheckpointError when step `step` saved other leaves than `like` has: orbax's
    own error says only that the trees differ, and any restore error used to count as damage."""
    import orbax.checkpoint as ocp

    absl = logging.getLogger("absl")  # orbax warns of the step metadata file it does not write
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        saved = ocp.StandardCheckpointer().metadata(step_dir(mgr, step).absolute() / "runner")
    finally:
        absl.setLevel(level)
    on_disk, in_code = _leaf_paths(dict(saved.item_metadata)), _leaf_paths(like)
    if on_disk == in_code:
        return

    def listed(paths):
        names = sorted("/".join(p) for p in paths)
        return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")

    raise IncompatibleCheckpointError(
        f"checkpoint step {step} ({step_dir(mgr, step)}) is intact, but another version of the "
        f"code saved it: leaves only in the checkpoint: {listed(on_disk - in_code) or 'none'}; "
        f"only in this version's state: {listed(in_code - on_disk) or 'none'}. Resume or load "
        f"it with the version that saved it, or start the run over in a new --out"
    )


def restore_checkpoint(mgr, like: lrn.Runner, shardings, step: int | None = None):
    import orbax.checkpoint as ocp

    step = mgr.latest_step() if step is None else step
    check_state_structure(mgr, like, step)
    abstract = jax.tree.map(
        lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), like, shardings
    )
    out = mgr.restore(step, args=ocp.args.Composite(
        runner=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore(),
    ))  # fmt: skip
    return out["runner"], out["meta"]


def restore_verified(mgr, like: lrn.Runner, shardings, step: int):
    """`restore_checkpoint` after `verify_step`; a restored state that is not finite (a step
    saved without a manifest and damaged since) is a `DamagedCheckpointError` too."""
    verified = verify_step(mgr, step)
    runner, meta = restore_checkpoint(mgr, like, shardings, step)
    if not all_finite(trained_state(runner)):
        raise DamagedCheckpointError(
            f"{step_dir(mgr, step)} restores NaN or inf parameters or optimizer states"
            + ("" if verified else " (it has no SHA256SUMS: saved by an older version)")
        )
    return runner, meta


def describe_damage(directory: Path, err: Exception) -> str:
    """'checkpoint step 4 (RUN/checkpoints/4) is damaged: Error: first line'."""
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return (f"checkpoint step {directory.name} ({directory}) is damaged: "
            f"{type(err).__name__}: {first[:300]}")  # fmt: skip


def load_run(run_dir: str | os.PathLike, step: int | None = None):
    """A run's checkpoint -> (cfg, built, runner): its config, the learner and env of the stage
    the checkpoint belongs to (`agents.build.Built`) and the restored `Runner` (`runner.params`
    are the policy's parameters). `step` None: the newest intact checkpoint (a damaged newer one
    is named on stderr and skipped, not moved: a reader leaves the run as it is); a given `step`
    that is damaged raises `DamagedCheckpointError`."""
    from agents.build import build

    run_dir = Path(run_dir).expanduser()
    cfg = load_config(run_dir)
    mgr = ckpt_manager(run_dir)
    if mgr.latest_step() is None:
        raise FileNotFoundError(
            f"run {str(run_dir)!r} has no checkpoint yet; train longer or check --out"
        )
    steps = sorted(mgr.all_steps(), reverse=True) if step is None else [step]
    problems = []
    for s in steps:
        try:
            verify_step(mgr, s)
            meta = restore_meta(mgr, s)
            stages = adapters.stage_tasks(cfg.task, cfg.stages)
            built = build(cfg, stages[int(meta["stage"])])
            L = built.learner
            like = jax.eval_shape(L.init, jax.random.PRNGKey(0))
            if cfg.backend != "jax":  # a host-stepped runner holds no env state (sebulba)
                like = like.update(env_params=None, env_state=None)
            runner, _ = restore_verified(mgr, like, L.placement(like), s)
        except IncompatibleCheckpointError:
            raise  # every step of the run was saved by that version: none is older and loads
        except Exception as e:  # noqa: BLE001 - any unreadable file means a damaged checkpoint
            problems.append(describe_damage(step_dir(mgr, s), e))
            if step is None:
                print(f"warning: {problems[-1]}; trying an older one", file=sys.stderr)
            continue
        if problems:
            print(f"loaded checkpoint step {s} of {run_dir} instead", file=sys.stderr)
        return cfg, built, runner
    raise DamagedCheckpointError(
        f"no intact checkpoint in {str(run_dir)!r}: " + "; ".join(problems)
    )


def export_policy(run_dir: str | os.PathLike, out_dir: str | os.PathLike, card: dict) -> Path:
    """Write a run's newest intact policy as a shipped-agent directory (`agents.pretrained`):
    its config, parameters, the `card` with the checkpoint's env steps and update added (those of
    its stage in a multi-stage run), checksums.
    Only the policy's parameters travel: no optimizer state, SI buffer or env state."""
    cfg, _, runner = load_run(run_dir)
    card = {**card, "env_steps": int(runner.env_steps), "update": int(runner.update_step)}
    return pretrained.write_exported(out_dir, config_to_json(cfg), runner.params, card)


def load_policy(run_dir: str | os.PathLike, step: int | None = None):
    """A trained run (its directory, an exported policy's, or a shipped agent's name such as
    "animal-zoo", `agents.pretrained`) -> (policy_fn, info).

    `policy_fn(key, obs_batch, prev_action=None, task_id=None, deterministic=False)` maps a batch
    of raw env observations (the dict the env returns, leading axis B) to env actions (int32
    `[B, 8]` MultiDiscrete for the embedded world / MineDojo, `[B, 1]` for cartpole).
    `prev_action` is the previous *policy* action `[B, K]` (the no-op `info["noop_action"]` at
    an episode start, the default; returned in `info` as `info["last_policy_action"]` after
    each call for convenience); `task_id` `[B]` indexes `info["task_names"]` (default 0).
    A recurrent policy (`info["core_size"] > 0`) also takes its carry `core [B, H]` (default:
    a fresh episode's) and `episode_start [B]` (default: True where `core` is not given), and
    leaves the new carry in `info["last_core"]`: pass it back with the next step.
    """
    path = pretrained.shipped_dir(str(run_dir)) or Path(run_dir).expanduser()
    if pretrained.is_exported(path):  # a shipped agent (or one exported like it)
        if step is not None:
            raise ValueError(f"{str(path)!r} holds one exported policy; it has no step {step}")
        cfg, built, params, card = pretrained.load_exported(path)
        env_steps, update = card["env_steps"], card["update"]
    else:
        cfg, built, runner = load_run(path, step)
        params, env_steps, update = runner.params, int(runner.env_steps), int(runner.update_step)
    L, env = built.learner, built.env
    dims = L.action_dims
    noop = np.asarray(L.noop_action)
    info = {
        "config": config_to_json(cfg),
        "task_names": env.task_names,
        "action_dims": dims,
        "noop_action": noop,
        "env_steps": env_steps,
        "update": update,
        "last_policy_action": None,
        "core_size": L.core_size,
        "last_core": None,
    }

    @jax.jit
    def _act(params, consts, key, obs, prev, task_id, deterministic, core, start):
        pobs = L.policy_obs_batch(consts, obs, task_id)
        logits, core = L.policy_logits(params, pobs, prev, core, start)
        a = jnp.where(deterministic, losses.mode(logits, dims), losses.sample(key, logits, dims))
        return jax.vmap(env.to_env_action)(a), a, core

    def policy_fn(key, obs_batch, prev_action=None, task_id=None, deterministic=False,
                  core=None, episode_start=None):  # fmt: skip
        obs = jax.tree.map(jnp.asarray, obs_batch)
        b = jax.tree.leaves(obs)[0].shape[0]
        prev = (
            jnp.tile(jnp.asarray(noop, jnp.int32), (b, 1))
            if prev_action is None
            else jnp.asarray(prev_action, jnp.int32)
        )
        tid = jnp.zeros((b,), jnp.int32) if task_id is None else jnp.asarray(task_id, jnp.int32)
        if episode_start is None:
            episode_start = np.full((b,), core is None)
        core = L.initial_core(b) if core is None else jnp.asarray(core, jnp.float32)
        if core.shape != (b, L.carry_size):
            raise ValueError(f"core has shape {core.shape}; this policy's carry is "
                             f"[{b}, {L.carry_size}] (pass info['last_core'] back)")  # fmt: skip
        env_a, a, core = _act(params, L.consts, key, obs, prev, tid, jnp.asarray(deterministic),
                              core, jnp.asarray(episode_start, bool))  # fmt: skip
        info["last_policy_action"] = np.asarray(a)
        info["last_core"] = np.asarray(core)
        return np.asarray(env_a)

    return policy_fn, info

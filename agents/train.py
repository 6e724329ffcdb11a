"""The training loop behind `python -m agents.ppo`: stages, logging, checkpoint cadence, videos.

    from agents import train
    summary = train.train(cfg)      # cfg: a validated config (agents.ppo.PPOConfig)

Each stage builds its learner (`agents.build`) and runs one of two drivers with the same update:
`--backend jax` rolls out inside one jitted `lax.scan` (Anakin), `process` / `minedojo` step a
Gymnasium vector env on the host (`agents.sebulba`, Sebulba). Hyper-parameters travel as a traced
pytree (`agents.learner.HyperParams`), so runs that differ only in them share compiled code.

`cfg.seeds` K > 1 (jax backend) trains seeds `cfg.seed .. cfg.seed + K - 1` in ONE compiled
program (the runner stacked over a leading seed axis, `vmap`ped); each seed gets its own run
directory `OUT/seed<s>/` with `config.json` (a single-seed config: `load_policy` and
`agents.evaluate` take it as is), checkpoints, `metrics.jsonl`, TensorBoard events, videos and
`summary.json`; `OUT/summary.json` holds every seed's summary.

Resuming (`cfg.resume`) restores the newest checkpoint that verifies against its SHA256SUMS (a
damaged one is named and moved to `damaged_checkpoints/`), with K seeds the newest update every
seed saved; it drops the metrics rows and videos written after it, re-logs TensorBoard from
metrics.jsonl (a kill loses unflushed events) and continues up to the (possibly larger) budget;
a run with nothing left to train keeps its `summary.json`. docs/runs.md says what a run survives.

One process writes a run directory: `train` holds `OUT/run.lock` (mineclip_jax.run_lock) while it
runs, and a second process on the same `--out` is refused, naming the holder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import jax
import numpy as np

from agents import adapters, checkpoints, networks
from agents import learner as lrn
from agents.build import build, build_host_driver
from agents.video import record_video
from envs.video import write_video
from mineclip_jax import compile_cache, run_lock
from mineclip_jax.distributed import agree

ConfigError = adapters.ConfigError


# ----------------------------------------------------------------------------- per-seed outputs
@dataclasses.dataclass
class RunOutput:
    """One seed's run directory and its open writers."""

    seed: int
    run_dir: Path
    mgr: object
    writer: object = None
    metrics: object = None

    def close(self):
        if self.writer is not None:
            self.writer.close()
        if self.metrics is not None:
            self.metrics.close()


def seed_dirs(cfg) -> list[tuple[int, Path]]:
    """(seed, run directory) of every seed the run trains."""
    run_dir = Path(cfg.out).expanduser()
    k = int(getattr(cfg, "seeds", 1))
    if k == 1:
        return [(cfg.seed, run_dir)]
    return [(cfg.seed + i, run_dir / f"seed{cfg.seed + i}") for i in range(k)]


def _seed_config(cfg, seed: int, run_dir: Path):
    return dataclasses.replace(cfg, seed=seed, seeds=1, out=str(run_dir))


# ----------------------------------------------------------------------------- metrics
def summarise(m, task_names):
    """One update's metrics (+ episode totals accumulated since the last log) -> a log row."""
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


DAMAGED_ROWS = "metrics.damaged.jsonl"


@dataclasses.dataclass(frozen=True)
class DroppedRows:
    """What `drop_rows_after` took out of metrics.jsonl."""

    later: int = 0  # rows after the restored update (the resumed run logs them again)
    damaged: int = 0  # rows that are not JSON, in the middle of the file (a bad disk or an edit)
    cut: int = 0  # the last row, cut by a kill while it was written

    def describe(self, run_dir: Path, update: int) -> list[str]:
        lines = []
        if self.later:
            lines.append(f"{run_dir}: dropped {self.later} metrics rows logged after update "
                         f"{update}")  # fmt: skip
        if self.cut:
            lines.append(f"{run_dir}: the last metrics row was cut by a kill while it was "
                         f"written; moved to {run_dir / DAMAGED_ROWS}")  # fmt: skip
        if self.damaged:
            lines.append(f"warning: {run_dir}: {self.damaged} metrics rows in the middle of "
                         f"metrics.jsonl are not JSON (damaged on disk or edited); moved to "
                         f"{run_dir / DAMAGED_ROWS}")  # fmt: skip
        return lines


def split_rows(text: str, update: int) -> tuple[list[str], list[str], list[str], list[str]]:
    """metrics.jsonl's lines -> (kept: update <= `update`, later, damaged mid-file, cut last)."""
    lines = text.splitlines()
    kept, later, damaged, cut = [], [], [], []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except ValueError:
            # Only the last line can be cut by a kill (rows are appended and flushed one by one).
            last = i == len(lines) - 1 and not text.endswith("\n")
            (cut if last else damaged).append(line)
            continue
        (kept if row.get("update", 0) <= update else later).append(line)
    return kept, later, damaged, cut


def drop_rows_after(run_dir: Path, update: int) -> DroppedRows:
    """Keep the metrics rows up to global update `update` (a resume continues after it); rows that
    are not JSON go to `metrics.damaged.jsonl`, kept for inspection. Videos named after a later
    update go too."""
    path = run_dir / "metrics.jsonl"
    dropped = DroppedRows()
    if path.exists():
        kept, later, damaged, cut = split_rows(path.read_text(errors="replace"), update)
        if damaged or cut:
            with open(run_dir / DAMAGED_ROWS, "a") as f:
                f.write("".join(x + "\n" for x in damaged + cut))
        tmp = path.with_name(path.name + ".tmp")  # atomic: a kill here loses no row
        tmp.write_text("".join(x + "\n" for x in kept))
        os.replace(tmp, path)
        dropped = DroppedRows(len(later), len(damaged), len(cut))
    for video in (run_dir / "videos").glob("*_update*.mp4"):
        if int(video.stem.rsplit("_update", 1)[1]) > update:
            video.unlink()
    return dropped


def logged_rows(run_dir: Path) -> list[dict]:
    """metrics.jsonl's rows (after `drop_rows_after`, every line is one)."""
    path = run_dir / "metrics.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _summary_writer(run_dir: Path, purge_step: int | None = None):
    from tensorboardX import SummaryWriter

    return SummaryWriter(str(run_dir / "tb"), purge_step=purge_step)


def enable_compile_cache(path: str) -> None:
    """Persist compiled executables across processes (`mineclip_jax.compile_cache`). The flag's
    default stands for "not chosen", so MINECLIP_JAX_COMPILE_CACHE applies to this job too."""
    compile_cache.enable(None if path == compile_cache.DEFAULT_DIR else path)


# ----------------------------------------------------------------------------- checkpoints
def _move_aside(out: RunOutput, step: int, problem: str) -> None:
    """A damaged step goes to RUN/damaged_checkpoints/ (kept for inspection; the resumed run may
    save that step again). Under --distributed process 0 moves it; every process forgets it."""
    if _is_main():
        aside = out.run_dir / "damaged_checkpoints" / str(step)
        aside.parent.mkdir(exist_ok=True)
        if aside.exists():
            shutil.rmtree(aside)
        shutil.move(str(checkpoints.step_dir(out.mgr, step)), str(aside))
        print(f"warning: {problem}; moved to {aside}")
    _sync("moved a damaged checkpoint aside")
    out.mgr.reload()


def _sync(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def clean_unfinalised(out: RunOutput) -> None:
    """Remove the steps orbax began but never committed (a kill during a save): they hold no
    usable state and orbax would not overwrite them."""
    if _is_main():
        for path in checkpoints.unfinalised_steps(out.run_dir):
            print(f"{out.run_dir}: removing {path.name}, a checkpoint whose save was interrupted")
            shutil.rmtree(path, ignore_errors=True)
    _sync("cleaned unfinalised checkpoints")
    out.mgr.reload()


def intact_steps(out: RunOutput) -> tuple[dict[int, dict], list[str]]:
    """({step: meta} of the seed's checkpoints that verify against their SHA256SUMS and whose
    metadata reads, what was wrong with the others); damaged ones are named and moved aside."""
    found, problems = {}, []
    for step in sorted(out.mgr.all_steps(), reverse=True):
        try:
            checkpoints.verify_step(out.mgr, step)
            found[step] = checkpoints.restore_meta(out.mgr, step)
        except Exception as e:  # noqa: BLE001 - any unreadable file means a damaged checkpoint
            problems.append(checkpoints.describe_damage(checkpoints.step_dir(out.mgr, step), e))
            _move_aside(out, step, problems[-1])
    return found, problems


def resume_point(outs: list[RunOutput]) -> tuple[int, dict]:
    """(step, meta) every seed resumes from: the newest update that all of them saved intact (a
    kill between two seeds' saves leaves the first seed one checkpoint ahead). Newer steps of a
    seed are removed: the resumed run recomputes them bit for bit."""
    for out in outs:
        clean_unfinalised(out)
    checked = [intact_steps(out) for out in outs]
    per_seed = [steps for steps, _ in checked]
    common = set.intersection(*(set(steps) for steps in per_seed))
    if not common:
        out = outs[0]
        if not any(per_seed):
            damaged = [p for _, problems in checked for p in problems]
            raise ConfigError(
                f"--resume: {str(out.run_dir.parent if len(outs) > 1 else out.run_dir)!r} has a "
                "config but no checkpoint to resume from (a kill during the first save, or they were "
                "deleted or damaged); drop --resume to start the run over in the same --out"
                + (": " + "; ".join(damaged) if damaged else "")
            )
        listed = "; ".join(f"seed {o.seed}: {sorted(s)}" for o, s in zip(outs, per_seed))
        raise ConfigError(f"--resume: no update that every seed saved ({listed}); drop --resume "
                          "to start the run over in the same --out")  # fmt: skip
    step = max(common)
    for out, steps in zip(outs, per_seed, strict=True):
        for newer in sorted(s for s in steps if s > step):
            print(f"{out.run_dir}: removing checkpoint step {newer}: not every seed saved it "
                  f"(resuming all seeds from step {step})")  # fmt: skip
            if _is_main():
                shutil.rmtree(checkpoints.step_dir(out.mgr, newer))
        _sync("removed checkpoints ahead of the other seeds")
        out.mgr.reload()
    return step, per_seed[0][step]


def restore_intact(out: RunOutput, like: lrn.Runner, shardings, stage: int, step: int,
                   fallback: bool = True) -> lrn.Runner:  # fmt: skip
    """Restore checkpoint `step` (already verified by `resume_point`); if its arrays still do not
    restore (or are not finite), it is named and moved aside and, with `fallback`, the next older
    step of this stage is tried."""
    problems = []
    candidates = [s for s in sorted(out.mgr.all_steps(), reverse=True) if s <= step]
    for s in candidates if fallback else [step]:
        try:
            runner, meta = checkpoints.restore_verified(out.mgr, like, shardings, s)
        except checkpoints.IncompatibleCheckpointError:
            raise  # intact files of another code version: moving them aside would lose the run
        except Exception as e:  # noqa: BLE001 - see intact_steps
            problems.append(checkpoints.describe_damage(checkpoints.step_dir(out.mgr, s), e))
            _move_aside(out, s, problems[-1])
            continue
        if int(meta["stage"]) != stage:
            break
        if problems:
            print(f"resuming from checkpoint step {s} instead")
        return runner
    again = "" if fallback else "; run --resume again to continue from the older checkpoints"
    raise ConfigError(
        f"no intact checkpoint of stage {stage} in {str(out.run_dir)!r}: {'; '.join(problems)}"
        + again
    )


def _check_fresh_out(outs: list[RunOutput]) -> None:
    """A new run (no --resume) refuses a directory holding committed checkpoints; the leftovers
    of a run killed during its first save (an unfinalised step) are cleaned instead."""
    for out in outs:
        if out.mgr.all_steps():
            raise ConfigError(f"--out {str(out.run_dir)!r} already holds checkpoints; pass "
                              "--resume to continue it or choose a new --out")  # fmt: skip
        clean_unfinalised(out)


# ----------------------------------------------------------------------------- the loop
@dataclasses.dataclass(frozen=True)
class Stop:
    """When a run stops before its budget: after `updates` updates of a stage (tests of exact
    resumption, as if killed) or at the monotonic-clock `deadline` (--time-limit-min). Either way
    the update it stops after is checkpointed and the summary is marked "stopped"."""

    updates: int | None = None
    deadline: float | None = None

    def timed_out(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def now(self, done_updates: int) -> bool:
        if self.updates is not None and done_updates >= self.updates:
            return True
        # Under --distributed process 0's clock decides for all: they must stop at one update.
        return self.deadline is not None and agree(self.timed_out())


def train(cfg, *, stop_after_updates: int | None = None) -> dict:
    """Train (or, with `cfg.resume`, continue) a run; returns the final summary with the runner
    (`"runner"`; seed-stacked with K seeds, whose summaries are under `"seeds"`).
    `stop_after_updates` ends the process early as if killed after that many updates (tests of
    exact resumption). `cfg` is validated by the caller (`agents.ppo.validate`). The run holds
    `OUT/run.lock` throughout: another process on the same --out gets `run_lock.RunLockedError`."""
    enable_compile_cache(cfg.compile_cache)
    run_dir = Path(cfg.out).expanduser()
    with run_lock.hold_distributed(run_lock.run_lock_path(run_dir), what=f"--out {run_dir}"):
        return _train_locked(cfg, run_dir, stop_after_updates)


def _train_locked(cfg, run_dir: Path, stop_after_updates: int | None) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    _check_process_count(cfg, run_dir)
    stages = adapters.stage_tasks(cfg.task, cfg.stages)
    outs = []
    for seed, d in seed_dirs(cfg):
        d.mkdir(parents=True, exist_ok=True)
        outs.append(RunOutput(seed, d, checkpoints.ckpt_manager(d)))
    start_stage, global_updates, resume_step = 0, 0, None
    if cfg.resume:
        resume_step, meta = resume_point(outs)
        start_stage, global_updates = int(meta["stage"]), int(meta.get("base_updates", 0))
    else:
        _check_fresh_out(outs)
    if _is_main():
        saved = {**checkpoints.config_to_json(cfg), "process_count": jax.process_count()}
        checkpoints.write_json(run_dir / checkpoints.CONFIG_FILE, saved)
        for out in outs:
            if out.run_dir != run_dir:
                scfg = _seed_config(cfg, out.seed, out.run_dir)
                saved = {**checkpoints.config_to_json(scfg),
                         "process_count": jax.process_count()}  # fmt: skip
                checkpoints.write_json(out.run_dir / checkpoints.CONFIG_FILE, saved)
    summary, runner, carried, trained, initial = {}, None, None, False, None
    hp = lrn.HyperParams.from_config(cfg)
    limit_min = cfg.time_limit_min
    stop = Stop(stop_after_updates, time.monotonic() + 60 * limit_min if limit_min > 0 else None)
    run_stage = _anakin_stage if cfg.backend == "jax" else _host_stage
    try:
        for stage in range(start_stage, len(stages)):
            restore = resume_step if runner is None else None
            summary = run_stage(cfg, hp, stages, stage, outs, stop, global_updates,
                                restore=restore, carried=carried)  # fmt: skip
            runner = summary.pop("runner")
            trained |= summary.pop("trained")
            initial = summary.pop("initial_params", None)
            if summary.get("stopped"):
                if stop.timed_out():
                    print(f"--time-limit-min {limit_min:g} reached after update "
                          f"{summary.get('update')}: checkpoint saved; continue with --resume "
                          f"--out {cfg.out}")  # fmt: skip
                break
            global_updates = summary["updates_total"]
            carried = (jax.device_get(runner.si_buffer), jax.device_get(runner.params),
                       _task_ids(cfg, stages[stage]))  # fmt: skip
        if trained and not summary.get("stopped") and cfg.final_eval_episodes > 0:
            _final_evaluation(cfg, stages[-1], outs, runner, initial, summary)
    finally:
        for out in outs:
            out.close()
    if not trained:  # nothing left to train: the finished run's summary stays as it is
        print(f"nothing to train in {str(run_dir)!r}: it already ran its {global_updates} "
              "updates; pass a larger --total-steps with --resume to continue it")  # fmt: skip
        old = run_dir / "summary.json"
        return {**(json.loads(old.read_text()) if old.exists() else {}), "runner": runner}
    per_seed = summary.pop("seeds", None)
    if not _is_main():  # process 0 writes the summaries
        return {**summary, "runner": runner, "untrained_params": initial}
    if per_seed is None:
        checkpoints.write_json(run_dir / "summary.json", summary)
        return {**summary, "runner": runner, "untrained_params": initial}
    for out, s in zip(outs, per_seed, strict=True):
        checkpoints.write_json(out.run_dir / "summary.json", s)
    top = {"seeds": {str(out.seed): s for out, s in zip(outs, per_seed, strict=True)}}
    checkpoints.write_json(run_dir / "summary.json", top)
    return {**top, "runner": runner, "untrained_params": initial}


def _final_evaluation(cfg, tasks, outs, runner, initial, summary) -> None:
    """The run's untrained policy (this stage's fresh params for the seed) and its trained one
    on the same `cfg.final_eval_episodes` episodes per task (`agents.final_eval`): printed, in
    each seed's summary (`final_eval`) and TensorBoard (`final_eval/...`). Process 0 evaluates
    alone, on one of its devices; host-stepped backends are skipped with the reason."""
    if cfg.backend != "jax":
        if _is_main():
            print(f"final evaluation skipped: --backend {cfg.backend} steps its envs on the host "
                  f"and it evaluates on-device envs; evaluate the run with python -m "
                  f"agents.evaluate --policy {cfg.out}")  # fmt: skip
        return
    if not _is_main():
        return
    from agents import final_eval

    seeded = len(outs) > 1
    trained_params = jax.device_get(runner.params)  # replicated: readable on any process
    per_seed = summary["seeds"] if seeded else [summary]
    for i, (out, s) in enumerate(zip(outs, per_seed, strict=True)):
        scfg = _seed_config(cfg, out.seed, out.run_dir) if seeded else cfg
        built = build(scfg, tasks)  # cached: the stage's own env (this seed's worlds)
        policies = {"untrained": initial[i],
                    "trained": _slice(trained_params, i) if seeded else trained_params}  # fmt: skip
        result = final_eval.evaluate_policies(built, policies, cfg.final_eval_episodes,
                                              out.seed, tasks)  # fmt: skip
        prefix = f"final evaluation, seed {out.seed}" if seeded else "final evaluation"
        lines = final_eval.describe(result, prefix)
        for line in lines:
            print(line)
        s["final_eval"] = final_eval.to_json(result)
        s["final_eval_lines"] = lines  # agents.ppo prints them again as its last lines
        step = int(s.get("env_steps", 0))
        multi = len(result["tasks"]) > 1
        for label, by in result["tasks"].items():
            for name, score in by.items():
                tag = f"final_eval/{label}/{name}" if multi else f"final_eval/{name}"
                out.writer.add_scalar(f"{tag}_success_rate", score.success_rate, step)
                out.writer.add_scalar(f"{tag}_return", score.mean_return, step)


def remap_si_tasks(si_buf, old_tasks, new_tasks):
    """A carried SI buffer's task ids (and the policy's `task_id` inputs it stores) re-indexed
    from the previous stage's task list to this stage's; trajectories of tasks this stage does
    not train leave the buffer (their task has no slot here)."""
    new_index = {t: i for i, t in enumerate(new_tasks)}
    table = np.array([new_index.get(t, -1) for t in old_tasks], np.int32)
    mapped = table[np.asarray(si_buf.task_id)]
    keep = np.asarray(si_buf.valid) & (mapped >= 0)
    obs = dict(si_buf.obs)
    if "task_id" in obs:
        obs["task_id"] = np.maximum(table[np.asarray(obs["task_id"])], 0)
    return si_buf.replace(task_id=np.maximum(mapped, 0), valid=keep, obs=obs)


def next_stage(runner: lrn.Runner, carried, L: lrn.Learner, new_tasks=None) -> lrn.Runner:
    """Multi-stage training (paper App. G.3): keep the SI buffer (task ids re-indexed for this
    stage) and the network but the policy head, which starts fresh; fresh optimizer states."""
    si_buf, old_params = carried[:2]
    if len(carried) > 2 and new_tasks is not None:
        si_buf = remap_si_tasks(si_buf, carried[2], new_tasks)
    params = networks.reset_policy_head(old_params, runner.params)
    if jax.tree.structure(si_buf) == jax.tree.structure(runner.si_buffer) and all(
        a.shape == b.shape
        for a, b in zip(jax.tree.leaves(si_buf), jax.tree.leaves(runner.si_buffer))
    ):
        runner = runner.update(si_buffer=si_buf)
    return runner.update(params=params, opt_state=lrn.adam_init(params),
                          si_opt_state=lrn.adam_init(params))  # fmt: skip


def _task_ids(cfg, tasks) -> tuple[str, ...]:
    """The task ids a stage's `task_id`s index: the run's `adapters.task_vocabulary`, the same
    for every stage (so a carried SI buffer keeps every task's trajectories)."""
    return tuple(tasks) if tuple(tasks) == ("cartpole",) else adapters.task_vocabulary(cfg, tasks)


def _slice(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def _anakin_stage(cfg, hp, stages, stage, outs, stop_after, base, *, restore, carried):
    """One stage on a JAX env: each update is one jitted rollout (lax.scan) + PPO call; with K
    seeds one call for all of them (the runner stacked over a leading seed axis)."""
    tasks = stages[stage]
    built = build(cfg, tasks)
    L = built.learner
    k = len(outs)

    initial = []  # host copies of each seed's fresh params (the final evaluation's untrained)

    def prepare(i, out):
        scfg = cfg if k == 1 else _seed_config(cfg, out.seed, out.run_dir)
        key = jax.random.PRNGKey(out.seed + 1000 * stage)
        if k == 1:
            runner = L.init_sharded(key)
        else:  # this seed's worlds (the learner is the first seed's: the same program)
            runner = jax.jit(L.init)(key, build(scfg, tasks).env.params)
        if cfg.final_eval_episodes > 0:  # copied before training donates the buffers;
            # re-derived from the seed on --resume
            initial.append(jax.tree.map(np.array, jax.device_get(runner.params)))
        if restore is not None:  # every seed at the same step: no fallback with K seeds
            return restore_intact(out, runner, L.placement(runner), stage, restore, k == 1)
        if carried is not None:  # multi-stage: keep SI buffer, reset the policy head
            c = carried if k == 1 else (*_slice(carried[:2], i), carried[2])
            return next_stage(runner, c, L, _task_ids(cfg, tasks))
        return runner

    runners = [prepare(i, out) for i, out in enumerate(outs)]
    if k == 1:
        runner = L.shard(runners[0])
    else:
        stacked = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *runners)
        runner = jax.device_put(stacked, L.placement(stacked, seeds=True))

    def iterate(runner, update):
        runner, m = L.iteration(runner, hp, seeds=k > 1)
        if cfg.si_every > 0 and (update + 1) % cfg.si_every == 0:
            runner, msi = L.si_phase(runner, hp, seeds=k > 1)
            m = {**m, **msi}
        return runner, m

    def video(params, key):
        return record_video(built, params, key, cfg.video_length)

    if jax.process_count() > 1:  # the replayed episode would span the hosts' devices
        video = None

    summary = _train_stage(cfg, iterate, runner, L.num_updates, built.env.task_names, video,
                           outs, stage, stop_after, base)  # fmt: skip
    return {**summary, "initial_params": initial}


def _host_stage(cfg, hp, stages, stage, outs, stop_after, base, *, restore, carried):
    """One stage on host-stepped envs (`--backend process|minedojo`, agents.sebulba.HostDriver):
    the envs step on the host, one batched jitted inference call per step, then the same PPO
    update and SI phase as the on-device path. The vector env is closed when the stage ends,
    also on errors. Resuming restarts the envs (simulator state is not checkpointed; episodes in
    flight are dropped), so a resumed run is not bitwise-identical to an uninterrupted one; the
    learner state (params, optimizers, SI buffer, RNG, counters) is restored exactly. No videos:
    the host-stepped path has no JAX env to replay an episode in."""
    tasks = stages[stage]
    (out,) = outs
    vec = adapters.make_host_vector_env(cfg, tasks, out.run_dir / "bridge_logs")
    try:
        driver = build_host_driver(cfg, tasks, vec)
        L = driver.learner
        fresh = driver.init(jax.random.PRNGKey(cfg.seed + 1000 * stage))
        if restore is not None:
            restored = restore_intact(out, fresh, L.placement(fresh), stage, restore)
            runner = driver.adopt(restored, fresh)
        elif carried is not None:
            runner = L.shard(next_stage(fresh, carried, L, _task_ids(cfg, tasks)))
        else:
            runner = fresh
        names = tuple(s.id for s in adapters.task_specs(tasks))
        return _train_stage(cfg, lambda r, _: driver.iteration(r, hp), runner, L.num_updates,
                            names, None, outs, stage, stop_after, base)  # fmt: skip
    finally:
        vec.close()


class _NoLogs:
    """The logs of a process other than 0 under --distributed: metrics are global means, so
    process 0's logs are the run's."""

    def add_scalar(self, *args, **kwargs) -> None:
        pass

    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _is_main() -> bool:
    return jax.process_index() == 0


def _check_process_count(cfg, run_dir: Path) -> None:
    """A resumed run continues with the process count it was saved with (each process restores
    its own shards of the checkpoint)."""
    path = run_dir / checkpoints.CONFIG_FILE
    if not cfg.resume or not path.exists():
        return
    saved = json.loads(path.read_text()).get("process_count", 1)
    if saved != jax.process_count():
        raise ConfigError(
            f"--resume: {str(run_dir)!r} was trained by {saved} process(es), this run has "
            f"{jax.process_count()}; resume it with --num-processes {saved} (the same hosts)"
        )


def _open_logs(out: RunOutput, restored: int | None, steps_per_update: int) -> None:
    """Open a seed's metrics file and TensorBoard writer. When resuming from global update
    `restored` (0: a new run, over whatever an attempt without checkpoints left), first drop what
    was logged after it (a kill between a log and a checkpoint), then re-log metrics.jsonl's rows
    into TensorBoard after a purge of everything before: events the killed process had not yet
    flushed are back, and none is doubled. Under --distributed only process 0 logs."""
    if not _is_main():
        out.writer = out.metrics = _NoLogs()
        return
    purge = None
    rows = []
    if restored is not None:
        for line in drop_rows_after(out.run_dir, restored).describe(out.run_dir, restored):
            print(line)
        rows = logged_rows(out.run_dir)
        purge = 1  # TensorBoard drops every earlier event at or after this step
    out.writer = _summary_writer(out.run_dir, purge_step=purge)
    for row in rows:
        _log_scalars(out.writer, row, int(row["env_steps"]))
    out.writer.flush()
    out.metrics = open(out.run_dir / "metrics.jsonl", "a")


def _log_scalars(writer, s: dict, step: int) -> None:
    for k, v in s.items():
        writer.add_scalar(k if "/" in k else f"charts/{k}", v, step)


def _log_row(out: RunOutput, s: dict, step: int) -> None:
    _log_scalars(out.writer, s, step)
    out.writer.flush()  # best effort (tensorboardX writes on a thread); a resume re-logs
    out.metrics.write(json.dumps(s) + "\n")
    out.metrics.flush()


def check_finite_metrics(m: dict, update: int, seed_names: list[str]) -> None:
    """Raise `NonFiniteError` when an update's losses or statistics are NaN or infinite (the run
    stops before it logs or saves them); `seed_names` label the leading seed axis (K > 1)."""
    bad = []
    for k, v in m.items():
        x = np.asarray(v)
        if np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
            first = np.ravel(x)[~np.isfinite(np.ravel(x))][0]
            where = ""
            if len(seed_names) > 1 and x.ndim:  # the leading axis is the seed's
                seeds = [n for n, xi in zip(seed_names, x) if not np.all(np.isfinite(xi))]
                where = f" (seed {', '.join(seeds)})"
            bad.append(f"{k}={first}{where}")
    if bad:
        raise checkpoints.NonFiniteError(
            f"update {update}: non-finite training statistics {', '.join(bad[:6])}; the run stops "
            f"before it logs or saves them (the checkpoints on disk stay intact). Lower --lr, "
            f"--si-lr or --max-grad-norm, then continue from the newest checkpoint with --resume"
        )


def _train_stage(cfg, iterate, runner, num_updates, task_names, video, outs, stage, stop_after,
                 base):  # fmt: skip
    """The update loop of one stage, whatever the driver: `iterate(runner, update) -> (runner,
    metrics)`, logging, checkpoints and (with `video(params, key) -> frames`) MP4 videos. With K
    seeds the runner and the metrics carry a leading seed axis; each seed logs and saves to its
    own `RunOutput`."""
    from tqdm import tqdm

    k = len(outs)
    seeded = k > 1
    first = int(np.ravel(jax.device_get(runner.update_step))[0])
    steps_per_update = cfg.num_envs * cfg.num_steps
    for out in outs:
        if out.metrics is None:  # the run's first stage in this process: open its logs
            _open_logs(out, base + first, steps_per_update)
    bar = tqdm(total=num_updates, initial=first, disable=not cfg.progress,
               desc=f"stage {stage} {','.join(task_names)}"[:60], dynamic_ncols=True)  # fmt: skip
    accs, summaries = [None] * k, [{} for _ in range(k)]
    t_last, u_last = time.time(), first
    update, trained = first, False
    try:
        for update in range(first, num_updates):
            runner, m = iterate(runner, update)
            m = jax.device_get(m)
            check_finite_metrics(m, base + update + 1, [str(out.seed) for out in outs])
            trained = True
            per_seed = [_slice(m, i) for i in range(k)] if seeded else [m]
            accs = [_accumulate(a, mi) for a, mi in zip(accs, per_seed, strict=True)]
            done_updates = update + 1
            if done_updates % cfg.log_every == 0 or done_updates == num_updates:
                now = time.time()
                dt = max(now - t_last, 1e-9)
                step = (base + done_updates) * steps_per_update
                for i, out in enumerate(outs):
                    s = summarise({**per_seed[i], **accs[i]}, task_names)
                    s["sps"] = k * (done_updates - u_last) * steps_per_update / dt
                    s["updates_per_s"] = (done_updates - u_last) / dt
                    s.update(env_steps=step, update=base + done_updates, stage=stage)
                    _log_row(out, s, step)
                    summaries[i], accs[i] = s, None
                s = summaries[0]
                post = {"sps": f"{s['sps']:.0f}", "ups": f"{s['updates_per_s']:.2f}"}
                if "episodic_return" in s:
                    post["ret"] = f"{s['episodic_return']:.2f}"
                    post["succ"] = f"{s['success_rate']:.2f}"
                    for name in task_names if len(task_names) > 1 else ():
                        if f"success_rate/{name}" in s:
                            post[name[:12]] = f"{s[f'success_rate/{name}']:.2f}"
                bar.set_postfix(post)
                t_last, u_last = now, done_updates
            bar.update(1)
            last = done_updates == num_updates
            stopping = stop_after.now(done_updates)
            if done_updates % cfg.checkpoint_every == 0 or last or stopping:
                for i, out in enumerate(outs):
                    r = _slice(runner, i) if seeded else runner
                    checkpoints.save_checkpoint(out.mgr, base + done_updates, r, stage, base)
            if (
                video is not None
                and cfg.video_every >= 0
                and ((cfg.video_every > 0 and done_updates % cfg.video_every == 0) or last)
            ):
                for i, out in enumerate(outs):
                    params = _slice(runner.params, i) if seeded else runner.params
                    frames = video(params, jax.random.PRNGKey(done_updates))
                    if frames is not None:
                        name = f"stage{stage}_update{base + done_updates:06d}.mp4"
                        write_video(frames, out.run_dir / "videos" / name)
            if stopping and not last:
                for s in summaries:
                    s["stopped"] = True
                break
    finally:
        bar.close()
    summary = dict(summaries[0])
    if seeded:
        summary["seeds"] = summaries
    summary["runner"] = runner
    summary["trained"] = trained
    summary["updates_total"] = base + (update + 1 if trained else first)
    return summary


__all__ = [
    "train",
    "next_stage",
    "remap_si_tasks",
    "summarise",
    "seed_dirs",
    "drop_rows_after",
    "resume_point",
    "check_finite_metrics",
]

"""Evaluate a policy on MineDojo tasks: success rates with 95% intervals, tables and sample videos.

    python -m agents.evaluate --tasks harvest_1_log "hunt a cow in plains" --episodes 100
    python -m agents.evaluate --suite starter-programmatic --policy runs/ppo_milk --backend minedojo
    python -m agents.evaluate --suite starter-creative --mineclip-checkpoint attn.pth \\
        --creative-path ~/MineDojo/minedojo/tasks/description_files --human-labels labels.csv

Each task runs ``episodes`` episodes (100 by default, as the paper recommends) on ``num_envs``
parallel envs of the chosen backend. Programmatic tasks are judged by their own success check;
Creative tasks by MineCLIP (paper appendix G.4: per-trajectory mean reward against the threshold
calibrated once by K=2 k-means on labelled trajectories and stored with the checkpoint; to
calibrate one, see `mineclip_jax.judge`: `python -m mineclip_jax.judge`), with binary F1 against human labels when a label file is given. Writes ``results.md``,
``results.csv`` and ``videos/`` under ``out_dir``.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agents.episodes import step_episodes
from envs.video import write_video
from mineclip_jax import compile_cache
from mineclip_jax.judge import (  # the judge lives in mineclip_jax; re-exported here
    RELIABLE_JUDGE_F1,  # noqa: F401
    CreativeJudge,
    read_human_labels,  # noqa: F401
)

# (batched obs, rng, is_first [N]: the obs starts an episode) -> actions [N, 8]
Policy = Callable[[Mapping[str, np.ndarray], np.random.Generator, np.ndarray], np.ndarray]
FrameFeatures = Callable[[np.ndarray], np.ndarray]  # uint8 [N, H, W, 3] -> f32 [N, D]

Suite = Literal["starter", "starter-programmatic", "starter-creative", "paper"]
Backend = Literal["voxel", "minedojo"]


@dataclasses.dataclass(frozen=True)
class EvaluateConfig:
    """Evaluate a policy on tasks; see the module docstring for example commands."""

    tasks: tuple[str, ...] = ()  # task ids or prompts; empty: evaluate `suite`
    suite: Suite = "starter"  # the task list used when `tasks` is empty
    episodes: int = 100  # episodes per task (the paper recommends 100)
    backend: Backend = "voxel"  # embedded JAX world or MineDojo's Java simulator
    num_envs: int = 8  # parallel envs per task
    policy: str = "random"
    """"random" (uniform over the action space), a PPO run directory, or the name of an agent
    shipped with the package (agents.pretrained, e.g. animal-zoo)"""
    seed: int = 0  # seeds env resets and the policy's sampling
    max_steps: int | None = None  # episode step limit; None: each task's own max_steps
    out_dir: Path = Path("eval_results")  # where results.md, results.csv and videos/ go
    videos_per_task: int = 1  # episodes recorded as MP4 per task (from env 0)
    video_fps: int = 20  # frame rate of the videos
    skip_unsupported: bool = True  # skip (and list) tasks the backend cannot run instead of failing
    mineclip_checkpoint: str | None = None
    """Creative judge: mini (shipped), attn.pth, avg.pth or a native dir with its judge.json"""
    creative_threshold: float | None = None
    """Creative judge delta by hand (default: the checkpoint's, calibrated nearest the episodes' length)"""
    human_labels: Path | None = None  # Creative: CSV task_id,episode,label (1/0) for the F1
    creative_path: Path | None = None  # MineDojo's creative_tasks.yaml or its directory
    env_options: tuple[str, ...] = ()  # backend options key=value, e.g. jar=/path/Malmo.jar
    all_cores: bool = True  # on a CPU, step the envs on every core (one JAX device each)


# ---------------------------------------------------------------------------------------------
# Episodes
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class EpisodeRecord:
    """What the evaluator keeps of one finished episode."""

    env_index: int
    success: bool
    episode_return: float
    length: int
    frames: np.ndarray | None = None  # uint8 [T, H, W, 3] when recorded
    features: np.ndarray | None = None  # f32 [T, D] MineCLIP frame features when requested


def parse_env_options(options: Sequence[str]) -> dict[str, Any]:
    """``["jar=/x.jar", "world_pool_size=4", "render=false"]`` -> keyword arguments (YAML scalars)."""
    import yaml

    kwargs: dict[str, Any] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise ValueError(
                f"env option {option!r} must look like key=value (e.g. jar=/path/MalmoMod.jar)"
            )
        kwargs[key.strip()] = yaml.safe_load(value) if value.strip() else ""
    return kwargs


def episode_quotas(episodes: int, num_envs: int) -> list[int]:
    """How many episodes each env contributes: an even split, the remainder to the first envs.

    Counting only each env's first episodes (instead of the first ``episodes`` to finish anywhere)
    keeps short episodes, often the successful ones, from being over-represented.
    """
    if episodes <= 0 or num_envs <= 0:
        raise ValueError(f"episodes and num_envs must be positive, got {episodes}, {num_envs}")
    base, extra = divmod(episodes, num_envs)
    return [base + (i < extra) for i in range(num_envs)]


def _autoreset_mode(env) -> str:
    mode = getattr(env, "metadata", {}).get("autoreset_mode", "next_step")
    # Gymnasium's AutoresetMode values are "NextStep" / "SameStep" / "Disabled"
    return str(getattr(mode, "value", mode)).lower().replace("_", "")


def _info_flags(info: Mapping[str, Any], key: str, num_envs: int) -> np.ndarray:
    """A per-env bool array from a vector-env info dict (absent entries are False)."""
    if key not in info:
        return np.zeros(num_envs, bool)
    values = np.asarray(info[key]).astype(bool).reshape(num_envs)
    mask = np.asarray(info.get(f"_{key}", np.ones(num_envs, bool))).astype(bool).reshape(num_envs)
    return values & mask


def run_episodes(
    env,
    policy: Policy,
    episodes: int,
    seed: int,
    *,
    record_videos: int = 0,
    frame_features: FrameFeatures | None = None,
) -> list[EpisodeRecord]:
    """Run ``policy`` on a Gymnasium vector env until every env has finished its quota of episodes.

    Success is the env's ``info["success"]`` at the episode's last step. Supports the next-step
    and same-step autoreset modes of Gymnasium 1.x vector envs.
    """
    num_envs = env.num_envs
    quotas = episode_quotas(episodes, num_envs)
    mode = _autoreset_mode(env)
    if mode not in ("nextstep", "samestep"):
        raise ValueError(
            f"vector env autoreset mode {mode!r} is not supported; use next_step or same_step"
        )
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    done_count = [0] * num_envs
    returns = np.zeros(num_envs)
    lengths = np.zeros(num_envs, np.int64)
    skip_step = np.zeros(num_envs, bool)  # next_step mode: this step only resets the env
    frames: list[list[np.ndarray]] = [[] for _ in range(num_envs)]
    features: list[list[np.ndarray]] = [[] for _ in range(num_envs)]
    recorded = 0
    records: list[EpisodeRecord] = []

    def observe(observation, rows: np.ndarray):
        """Keep frames / features of the observation the policy is about to act on."""
        nonlocal recorded
        rgb = (
            observation["rgb"]
            if isinstance(observation, Mapping) and "rgb" in observation
            else None
        )
        if rgb is None:
            return
        if recorded < record_videos and rows[0] and done_count[0] < quotas[0]:
            frames[0].append(np.asarray(rgb[0]))
        if frame_features is not None:
            feats = np.asarray(frame_features(np.asarray(rgb)))
            for i in np.flatnonzero(rows):
                features[i].append(feats[i])

    observe(obs, np.ones(num_envs, bool))
    is_first = np.ones(num_envs, bool)
    while any(d < q for d, q in zip(done_count, quotas, strict=True)):
        actions = policy(obs, rng, is_first)
        obs, reward, terminated, truncated, info = env.step(actions)
        active = ~skip_step
        finished = active & (np.asarray(terminated) | np.asarray(truncated))
        returns, lengths, ended = step_episodes(
            returns, lengths, np.asarray(reward, float), finished, active
        )
        if mode == "samestep" and finished.any():
            final_info = info.get("final_info", info)
            success = _info_flags(final_info, "success", num_envs)
        else:
            success = _info_flags(info, "success", num_envs)
        for i in np.flatnonzero(finished):
            if done_count[i] < quotas[i]:
                keep_video = i == 0 and recorded < record_videos
                records.append(
                    EpisodeRecord(
                        env_index=int(i),
                        success=bool(success[i]),
                        episode_return=float(ended["return"][i]),
                        length=int(ended["length"][i]),
                        frames=np.stack(frames[i]) if keep_video and frames[i] else None,
                        features=np.stack(features[i]) if features[i] else None,
                    )
                )
                recorded += keep_video
                done_count[i] += 1
            frames[i], features[i] = [], []
        # next_step mode: a step that only reset an env returns that episode's first obs
        is_first = skip_step.copy() if mode == "nextstep" else finished
        skip_step = finished if mode == "nextstep" else np.zeros(num_envs, bool)
        # The obs after a finished step is the new episode's first in same_step mode; in
        # next_step mode it is the terminal obs and the reset obs comes on the next step.
        observe(obs, ~finished if mode == "nextstep" else np.ones(num_envs, bool))
    return records


# ---------------------------------------------------------------------------------------------
# Policies
# ---------------------------------------------------------------------------------------------


def random_policy(single_action_space, num_envs: int) -> Policy:
    """Uniform over one env's MultiDiscrete action space, for ``num_envs`` envs at once."""
    if not hasattr(single_action_space, "nvec"):
        raise TypeError(
            f"the random policy needs a MultiDiscrete action space, got {single_action_space}"
        )
    nvec = np.broadcast_to(
        np.asarray(single_action_space.nvec), (num_envs, *np.shape(single_action_space.nvec))
    )

    def act(obs, rng: np.random.Generator, is_first: np.ndarray) -> np.ndarray:
        del obs, is_first
        return (rng.random(nvec.shape) * nvec).astype(np.int64)

    return act


def ppo_policy(policy_fn: Callable, info: Mapping, task_id: str, seed: int = 0) -> Policy:
    """Adapt ``agents.checkpoints.load_policy``'s ``policy_fn`` to the evaluator: feed back the
    previous policy action (the no-op at episode starts, as in training), a recurrent policy's
    carry (zeroed at episode starts) and the index of ``task_id`` among the run's tasks."""
    import jax

    names = tuple(info.get("task_names", ()))
    if task_id in names:
        index = names.index(task_id)
    elif len(names) <= 1:
        index = 0  # a single-task policy evaluated on another task: its only prompt slot
    else:
        raise ValueError(
            f"the run was trained on {names}; {task_id!r} is not one of them, so it has no task index"
        )
    state = {"key": jax.random.key(seed), "prev": None, "core": None}

    def act(obs, rng: np.random.Generator, is_first: np.ndarray) -> np.ndarray:
        del rng
        state["key"], key = jax.random.split(state["key"])
        prev = state["prev"]
        if prev is not None:
            noop = np.asarray(info.get("noop_action", 0))
            prev = np.where(np.asarray(is_first)[:, None], noop, prev)
        num_envs = len(is_first)
        memory = {}
        if info.get("core_size", 0):  # a recurrent policy's carry, zeroed at episode starts
            memory = dict(core=state["core"], episode_start=np.asarray(is_first, bool))
        actions = policy_fn(
            key, obs, prev_action=prev, task_id=np.full((num_envs,), index, np.int32), **memory
        )
        state["prev"] = np.asarray(info["last_policy_action"])
        state["core"] = info.get("last_core")
        return actions

    return act


def policy_path(policy: str) -> Path:
    """A PPO run directory, an exported policy's, or a shipped agent's name -> its directory."""
    from agents.pretrained import SHIPPED_POLICIES, shipped_dir

    path = shipped_dir(policy) or Path(policy).expanduser()
    if not path.exists():
        raise FileNotFoundError(
            f"policy {policy!r} is neither 'random', a shipped agent "
            f"({', '.join(SHIPPED_POLICIES) or 'none installed'}) nor an existing PPO run directory"
        )
    return path


def load_ppo_run(policy: str) -> tuple[Callable, Mapping]:
    """``agents.checkpoints.load_policy`` on a run directory or a shipped agent, with errors that
    say what is wrong."""
    from agents.checkpoints import load_policy

    return load_policy(policy_path(policy))


POLICY_SHAPE_OPTIONS = ("height", "width", "render")
"""Env options a trained policy's input shapes depend on: an override is refused."""


def run_env_options(policy: str, backend: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The env options of the run a policy was trained in (``config.json``: frame size,
    rendering, world size and pool, episode limit, action repeat; frame size alone on MineDojo),
    under ``overrides`` (``--env-options``); an override of what the policy's inputs depend on
    is refused with the trained value."""
    from agents import adapters
    from agents.checkpoints import load_config

    if policy == "random":
        return dict(overrides)
    run_cfg = load_config(policy_path(policy))
    trained = adapters.voxel_env_kwargs(run_cfg)
    if backend != "voxel":
        trained = {k: trained[k] for k in ("height", "width")}
    for key in POLICY_SHAPE_OPTIONS:
        if key in overrides and key in trained and overrides[key] != trained[key]:
            raise ValueError(
                f"env option {key}={overrides[key]!r} does not fit the policy in {policy!r}, "
                f"trained with {key}={trained[key]!r}; drop the option (the run's config.json "
                "sets it)"
            )
    return {**trained, **overrides}


# ---------------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------------


def resolve_tasks(cfg: EvaluateConfig) -> tuple[list, list[tuple[str, str]]]:
    """(``TaskSpec`` objects ``cfg`` names, [(id, why skipped)]).

    Tasks named explicitly must resolve. From a suite, Creative tasks are skipped (with the reason)
    when MineDojo's Creative file is missing or no MineCLIP checkpoint is given to judge them.
    """
    from envs import tasks

    if cfg.tasks:
        specs = [tasks.get(name, creative_path=cfg.creative_path) for name in cfg.tasks]
        unjudged = [s.id for s in specs if s.category == "creative" and not cfg.mineclip_checkpoint]
        if unjudged:
            raise ValueError(
                f"{unjudged} are Creative tasks, which have no programmatic success check: "
                "pass --mineclip-checkpoint to judge them with MineCLIP"
            )
        return specs, []
    if cfg.suite == "paper":
        names: Sequence[str] = tasks.paper_task_ids()
    elif cfg.suite == "starter":
        names = tasks.STARTER_SUITE
    else:
        names = tasks.starter_suite(cfg.suite.removeprefix("starter-"))
    specs, skipped = [], []
    for name in names:
        try:
            spec = tasks.get(name, creative_path=cfg.creative_path)
        except tasks.DescriptionFileNotFound:
            skipped.append((name, "MineDojo's creative_tasks.yaml not found (--creative-path)"))
            continue
        if spec.category == "creative" and not cfg.mineclip_checkpoint:
            skipped.append((name, "a Creative task needs --mineclip-checkpoint to be judged"))
            continue
        specs.append(spec)
    return specs, skipped


def split_supported(specs: Sequence, backend: str) -> tuple[list, list[tuple[str, str]]]:
    """(runnable specs, [(task id, why not)]) for ``backend``."""
    if backend == "minedojo":
        return list(specs), []
    from envs.voxel.support import can_run

    runnable, skipped = [], []
    for spec in specs:
        ok, reason = can_run(spec)
        if ok:
            runnable.append(spec)
        else:
            skipped.append((spec.id, reason))
    return runnable, skipped


# ---------------------------------------------------------------------------------------------
# Creative judging (paper appendix G.4)
# ---------------------------------------------------------------------------------------------


# CreativeJudge, read_human_labels and RELIABLE_JUDGE_F1 live in mineclip_jax.judge, which also
# calibrates a judge (`python -m mineclip_jax.judge`); imported above, re-exported here.


# ---------------------------------------------------------------------------------------------
# The evaluation run
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EvaluationReport:
    """Results of ``evaluate``: one ``TaskResult`` per evaluated task, the skipped ones, the files."""

    results: tuple
    skipped: tuple[tuple[str, str], ...]
    markdown: Path
    csv: Path
    videos: tuple[Path, ...]


def _video_name(task_id: str, k: int) -> str:
    return f"{task_id.replace(':', '_').replace('/', '_')}_{k}.mp4"


def evaluate_task(
    spec, cfg: EvaluateConfig, policy_for: Callable, *, creative_judge=None, seed: int = 0
):
    """Run one task; returns (TaskResult, episode records)."""
    import envs
    from envs.tasks.evaluation import TaskResult

    if cfg.max_steps is not None:
        spec = dataclasses.replace(spec, max_steps=cfg.max_steps)
    num_envs = min(cfg.num_envs, cfg.episodes)
    options = run_env_options(cfg.policy, cfg.backend, parse_env_options(cfg.env_options))
    if cfg.max_steps is not None:  # the evaluator's limit wins over the run's
        options["max_steps"] = cfg.max_steps
    elif "max_steps" in options and options["max_steps"] is None:
        del options["max_steps"]
    judged = spec.category == "creative" and creative_judge is not None
    if judged:
        options = creative_judge.frame_size_options(options, cfg.policy)
    env = envs.make_vector(spec, num_envs, backend=cfg.backend, **options)
    try:
        policy = policy_for(env, spec, seed)
        records = run_episodes(
            env,
            policy,
            cfg.episodes,
            seed,
            record_videos=cfg.videos_per_task,
            frame_features=creative_judge.frame_features if judged else None,
        )
    finally:
        env.close()
    f1 = delta = calibration_ticks = None
    judge = "programmatic"
    if spec.category == "creative":
        if creative_judge is None:
            raise ValueError(
                f"{spec.id} is a Creative task: it has no programmatic success, so pass --mineclip-checkpoint"
                " to judge it with MineCLIP"
            )
        ticks_per_step = int(options.get("action_repeat", 1))
        successes, f1 = creative_judge.judge(spec, records, ticks_per_step=ticks_per_step)
        delta, calibration_ticks = creative_judge.calibration_used(spec, records, ticks_per_step)
        records = [
            dataclasses.replace(r, success=bool(s)) for r, s in zip(records, successes, strict=True)
        ]
        judge = "mineclip"
    result = TaskResult(
        task_id=spec.id,
        prompt=spec.prompt,
        category=spec.category,
        backend=cfg.backend,
        episodes=len(records),
        successes=sum(r.success for r in records),
        mean_return=float(np.mean([r.episode_return for r in records])),
        mean_length=float(np.mean([r.length for r in records])),
        judge=judge,
        f1=f1,
        judge_delta=delta,
        judge_calibration_ticks=calibration_ticks,
    )
    return result, records


def _write_episodes(rows: list[dict], path: Path) -> None:
    fields = ("task_id", "episode", "env", "success", "return", "length")
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def evaluate(cfg: EvaluateConfig) -> EvaluationReport:
    """Evaluate ``cfg.policy`` on ``cfg``'s tasks; write tables and videos under ``cfg.out_dir``."""
    from envs.tasks.evaluation import judge_text, write_csv, write_markdown

    specs, unresolved = resolve_tasks(cfg)
    runnable, skipped = split_supported(specs, cfg.backend)
    if skipped and not cfg.skip_unsupported:
        listing = "; ".join(f"{task_id}: {why}" for task_id, why in skipped)
        raise ValueError(
            f"the {cfg.backend} backend cannot run: {listing}. Use --backend minedojo or --skip-unsupported"
        )
    if not runnable:
        raise ValueError(
            f"none of the {len(specs)} tasks runs on the {cfg.backend} backend; try --backend minedojo"
        )
    skipped = unresolved + skipped
    creative_judge = None
    if any(spec.category == "creative" for spec in runnable) and cfg.mineclip_checkpoint:
        creative_judge = CreativeJudge.load(
            cfg.mineclip_checkpoint, cfg.human_labels, cfg.creative_threshold
        )

    loaded: dict = {}  # the PPO run, restored once and adapted per task

    def policy_for(env, spec, seed: int) -> Policy:
        if cfg.policy == "random":
            return random_policy(env.single_action_space, env.num_envs)
        if not loaded:
            loaded["fn"], loaded["info"] = load_ppo_run(cfg.policy)
        return ppo_policy(loaded["fn"], loaded["info"], spec.id, seed)

    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results, videos, episode_rows = [], [], []
    for k, spec in enumerate(runnable):
        result, records = evaluate_task(
            spec, cfg, policy_for, creative_judge=creative_judge, seed=cfg.seed + 1000 * k
        )
        results.append(result)
        recorded = 0
        for j, record in enumerate(records):
            episode_rows.append(
                {
                    "task_id": spec.id,
                    "episode": j,
                    "env": record.env_index,
                    "success": int(record.success),
                    "return": record.episode_return,
                    "length": record.length,
                }
            )
            if record.frames is not None:
                video = out / "videos" / _video_name(spec.id, recorded)
                videos.append(write_video(record.frames, video, cfg.video_fps))
                recorded += 1
        judged_by = "" if result.judge == "programmatic" else f"; judge: {judge_text(result)}"
        print(
            f"{spec.id}: {result.successes}/{result.episodes} successes "
            f"({100 * result.success_rate:.1f}%, 95% CI {100 * result.interval[0]:.1f}-{100 * result.interval[1]:.1f}"
            f"{judged_by})"
        )
    title = f"Success rates: policy {cfg.policy}, backend {cfg.backend}, {cfg.episodes} episodes per task"
    markdown = write_markdown(results, out / "results.md", title=title)
    if skipped:
        with open(markdown, "a", encoding="utf-8") as f:
            f.write(f"\nSkipped ({len(skipped)}):\n\n")
            f.writelines(f"- `{task_id}`: {why}\n" for task_id, why in skipped)
    table = write_csv(results, out / "results.csv")
    _write_episodes(episode_rows, out / "episodes.csv")
    return EvaluationReport(tuple(results), tuple(skipped), markdown, table, tuple(videos))


def main(cfg: EvaluateConfig) -> None:
    import envs  # before JAX starts (restoring a policy would start it on one device)

    envs.use_every_core("agents.evaluate", "--no-all-cores", enabled=cfg.all_cores)
    compile_cache.enable()  # a second evaluation loads the policy's and world's programs
    report = evaluate(cfg)
    print(
        f"wrote {report.markdown} and {report.csv} ({len(report.results)} tasks, {len(report.skipped)} skipped)"
    )


if __name__ == "__main__":
    import tyro

    main(tyro.cli(EvaluateConfig))

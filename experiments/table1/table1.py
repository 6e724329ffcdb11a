"""Table 1 in miniature: PPO + self-imitation trained by the MineCLIP reward vs manual vs sparse.

    python -m experiments.table1.table1                          # train, evaluate, report (resumable)
    python -m experiments.table1.table1 --time-limit-min 170     # stop cleanly; rerun the same line to go on
    python -m experiments.table1.table1 --steps report           # table + curves from what exists
    python -m experiments.table1.table1 --tasks "hunt a cow" --rewards manual sparse   # one pair

Every run uses the same network, seed, PPO + SI settings and env-step budget; only `--reward`
differs. As in the paper ("policy networks of all methods share the same architecture"), every
run's policy sees the frozen MineCLIP frame features as its image input (`--mineclip-ckpt`, no
trainable CNN); `--reward mineclip` also takes the Direct reward over the 16-frame window from the
same per-frame features. `--no-shared-features` gives manual and sparse the trainable CNN instead. Each run is its own
`python -m agents.ppo` process writing to `runs_dir/<task>/<reward>/seed<k>`; a stopped run is
resumed from its checkpoint, a finished one is skipped. Each final policy is evaluated with
`python -m agents.evaluate` (`--episodes` episodes, Wilson 95% intervals). The report is a
Markdown table (success rate with CI per task and reward), the paper's paired t-test of MineCLIP vs
manual (and vs sparse) across tasks, the issue's goal check, and one PNG of learning curves per
task.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

import numpy as np
import tyro

from envs.stats import paired_t_test, wilson_interval

ANIMAL_ZOO = ("milk a cow", "hunt a cow", "shear a sheep", "hunt a sheep")
Reward = Literal["mineclip", "manual", "sparse"]
Step = Literal["train", "evaluate", "report", "diagnose"]


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m experiments.table1.table1 --time-limit-min 60"""

    tasks: tuple[str, ...] = ANIMAL_ZOO
    """task prompts (one row each)"""
    rewards: tuple[Reward, ...] = ("mineclip", "manual", "sparse")
    """training rewards compared (one column each)"""
    seeds: tuple[int, ...] = (0,)
    """seeds per (task, reward); the paper uses three"""
    total_steps: int = 512_000
    """env steps per run (the same budget for every run; a whole number of num_envs x 64-step updates)"""
    num_envs: int = 16
    """parallel envs per run"""
    mineclip_ckpt: str = "mini"
    """MineCLIP checkpoint (a shipped name, a native dir or attn.pth): the reward of the mineclip runs and the image features of every run"""
    mineclip_negatives: tuple[str, ...] = ()
    """prompts added to the paper's 12 as negatives of the mineclip runs' reward (agents.ppo --mineclip-negatives)"""
    shared_features: bool = True
    """every reward's policy sees the frozen MineCLIP features (the paper's shared architecture); off: manual and sparse train a CNN on the frames"""
    action_repeat: int = 4
    """game ticks per env step (the paper's 500-tick episodes are 125 steps)"""
    episode_ticks: int = 500
    """episode length in game ticks"""
    privileged_critic: bool = True
    """the critic (never the policy) also sees the target's simulator features, for every reward"""
    extra: tuple[str, ...] = ()
    """further `agents.ppo` flags appended to every run, e.g. --extra=--aux-coef 0 (the "=" keeps the first from being read as a flag of this script)"""
    runs_dir: str = "runs/table1"
    """where the runs and their evaluations go"""
    episodes: int = 100
    """evaluation episodes per final policy"""
    steps: tuple[Step, ...] = ("train", "evaluate", "report")
    """what to do"""
    time_limit_min: float = 0.0
    """stop training after this many minutes in all (0: no limit); rerun the same command to resume"""
    markdown: str = "experiments/table1/table1.md"
    """the report (Markdown)"""
    png: str = "experiments/table1/table1_curves.png"
    """the learning curves"""
    diagnosis: str = "experiments/table1/diagnosis.md"
    """--steps diagnose: every trained policy scored by every reward (Markdown)"""
    diagnose_episodes: int = 64
    """--steps diagnose: episodes per policy (the same worlds and keys for every policy)"""
    smoke: bool = False
    """tiny settings (a few hundred steps, a few 16-step episodes) for the test suite"""


def run_dir(args: Args, task: str, reward: str, seed: int) -> Path:
    return Path(args.runs_dir) / task.replace(" ", "_") / reward / f"seed{seed}"


def rollout_steps(args: Args) -> int:
    """Env steps per env and update of every run."""
    return 16 if args.smoke else 64


def validate(args: Args) -> None:
    """Checks the budget before any run starts (agents.ppo would refuse it only once launched)."""
    per_update = args.num_envs * rollout_steps(args)
    if args.total_steps <= 0 or args.total_steps % per_update:
        lo = max(args.total_steps // per_update, 1) * per_update
        raise SystemExit(
            f"error: --total-steps {args.total_steps} is not a positive whole number of updates of "
            f"--num-envs {args.num_envs} x {rollout_steps(args)} steps = {per_update} env steps; "
            f"pass --total-steps {lo} or {lo + per_update}"
        )


def ppo_flags(args: Args, task: str, reward: str, seed: int) -> list[str]:
    """The `agents.ppo` command line of one run; only --reward (and its checkpoint) varies."""
    steps_per_episode = args.episode_ticks // args.action_repeat
    num_steps = str(rollout_steps(args))
    world, pool = ("16", "2") if args.smoke else ("32", "4")
    flags = [
        "--task", task, "--reward", reward, "--seed", str(seed),
        "--total-steps", str(args.total_steps), "--num-envs", str(args.num_envs),
        "--num-steps", num_steps, "--num-minibatches", "2", "--update-epochs", "4",
        "--max-episode-steps", str(args.episode_ticks), "--action-repeat", str(args.action_repeat),
        "--si-max-len", str(steps_per_episode), "--world-size", world, "--world-pool", pool,
        "--image-size", "32", "48", "--cnn", "nature", "--checkpoint-every", "20",
        "--video-every", "-1", "--no-progress", "--final-eval-episodes", "4" if args.smoke else "32",
        "--privileged-critic" if args.privileged_critic else "--no-privileged-critic",
        "--out", str(run_dir(args, task, reward, seed)),
        # the recipe of the recorded table (agents.ppo's defaults before issue 41)
        "--action-space", "compact", "--core-size", "0", "--no-norm-returns",
        "--lr-final-frac", "0", "--success-bonus", "10",
    ]  # fmt: skip
    if reward == "mineclip" or args.shared_features:
        flags += ["--mineclip-ckpt", args.mineclip_ckpt]
    if reward == "mineclip" and args.mineclip_negatives:
        flags += ["--mineclip-negatives", *args.mineclip_negatives]
    return flags + list(args.extra)


def _finished(out: Path, total_steps: int) -> bool:
    return (_env_steps(out) or 0) >= total_steps


def _env_steps(out: Path) -> int | None:
    """The env steps a run trained (its summary.json), None before it has one."""
    summary = out / "summary.json"
    return json.loads(summary.read_text()).get("env_steps") if summary.exists() else None


def _has_checkpoint(out: Path) -> bool:
    ckpts = out / "checkpoints"
    return ckpts.is_dir() and any(p.name.isdigit() for p in ckpts.iterdir())


def train(args: Args) -> bool:
    """Runs (or resumes) every unfinished run in turn; False when the time limit stopped it."""
    start = time.monotonic()
    for task in args.tasks:
        for reward in args.rewards:
            for seed in args.seeds:
                out = run_dir(args, task, reward, seed)
                if _finished(out, args.total_steps):
                    continue
                cmd = [sys.executable, "-m", "agents.ppo", *ppo_flags(args, task, reward, seed)]
                if _has_checkpoint(out):
                    cmd.append("--resume")
                elif out.exists():  # a run killed before its first checkpoint: start it again
                    shutil.rmtree(out)
                if args.time_limit_min > 0:
                    left = args.time_limit_min - (time.monotonic() - start) / 60
                    if left < 1.0:
                        print(f"time limit reached; rerun to resume ({out})", flush=True)
                        return False
                    cmd += ["--time-limit-min", f"{left:.2f}"]
                print("$", " ".join(cmd[1:]), flush=True)
                subprocess.run(cmd, check=True)
                if not _finished(out, args.total_steps):
                    return False  # the run stopped at the time limit
    return True


def evaluate(args: Args) -> None:
    """`agents.evaluate` on every finished run that has no results yet."""
    for task in args.tasks:
        for reward in args.rewards:
            for seed in args.seeds:
                out = run_dir(args, task, reward, seed)
                if not _finished(out, args.total_steps) or (out / "eval" / "results.csv").exists():
                    continue
                cmd = [
                    sys.executable, "-m", "agents.evaluate", "--tasks", task, "--policy", str(out),
                    "--episodes", str(args.episodes), "--num-envs", str(min(args.num_envs, 16)),
                    "--seed", str(1000 + seed), "--out-dir", str(out / "eval"),
                    "--videos-per-task", "0" if args.smoke else "1",
                ]  # fmt: skip
                print("$", " ".join(cmd[1:]), flush=True)
                subprocess.run(cmd, check=True)


def read_result(out: Path) -> dict | None:
    path = out / "eval" / "results.csv"
    if not path.exists():
        return None
    with open(path, newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    return {
        "episodes": int(row["episodes"]),
        "successes": int(row["successes"]),
        "rate": float(row["success_rate"]),
        "low": float(row["ci95_low"]),
        "high": float(row["ci95_high"]),
    }


def _cell(r: dict | None) -> str:
    if r is None:
        return "—"
    return f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"


def report(args: Args) -> dict:
    """The Markdown table, the t-tests, the goal check and the curves; returns the numbers."""
    seed_results = {
        (t, rw): [read_result(run_dir(args, t, rw, s)) for s in args.seeds]
        for t in args.tasks
        for rw in args.rewards
    }
    # Several seeds: pool their episodes (the CI then covers all of them).
    pooled = {}
    for key, rs in seed_results.items():
        rs = [r for r in rs if r is not None]
        if not rs:
            pooled[key] = None
            continue
        eps, succ = sum(r["episodes"] for r in rs), sum(r["successes"] for r in rs)
        low, high = wilson_interval(succ, eps)
        pooled[key] = {"episodes": eps, "successes": succ, "rate": succ / eps, "low": low,
                       "high": high}  # fmt: skip
    lines = [
        "| task | " + " | ".join(f"{rw} reward" for rw in args.rewards) + " |",
        "|---|" + "---|" * len(args.rewards),
    ]
    for t in args.tasks:
        lines.append(f"| {t} | " + " | ".join(_cell(pooled[t, rw]) for rw in args.rewards) + " |")
    numbers = {"table": {f"{t} / {rw}": pooled[t, rw] for t in args.tasks for rw in args.rewards}}
    complete = [t for t in args.tasks if all(pooled[t, rw] for rw in args.rewards)]
    if "mineclip" in args.rewards and complete:
        for other in [rw for rw in ("manual", "sparse") if rw in args.rewards]:
            a = [pooled[t, "mineclip"]["rate"] for t in complete]
            b = [pooled[t, other]["rate"] for t in complete]
            t_stat, p = paired_t_test(a, b)
            numbers[f"t-test mineclip vs {other}"] = {"t": t_stat, "p": p, "tasks": len(complete)}
            test = (f"t = {t_stat:z.2f}, p = {p:.3f}" if len(complete) > 1 else
                    "not defined for one task (it needs two or more)")  # fmt: skip
            lines.append(
                f"\nPaired t-test, MineCLIP vs {other} over {len(complete)} tasks: {test} (mean "
                f"difference {100 * (np.mean(a) - np.mean(b)):+z.1f} points)."
            )
        if {"manual", "sparse"} <= set(args.rewards):
            at_manual = sum(
                pooled[t, "mineclip"]["rate"] >= pooled[t, "manual"]["low"] for t in complete
            )
            above_sparse = sum(
                pooled[t, "mineclip"]["rate"] > pooled[t, "sparse"]["rate"] for t in complete
            )
            numbers["goal"] = {"at_or_above_manual_low": at_manual, "above_sparse": above_sparse}
            lines.append(
                f"\nGoal check: MineCLIP at or above manual's lower CI bound on {at_manual} of "
                f"{len(complete)} tasks (goal 2 of 4); above sparse on {above_sparse} of "
                f"{len(complete)} (goal all)."
            )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    # each run's own budget (summary.json); --total-steps for runs not trained yet
    budgets = {t: sorted({_env_steps(run_dir(args, t, rw, s)) or args.total_steps
                          for rw in args.rewards for s in args.seeds}) for t in args.tasks}  # fmt: skip
    if len({tuple(b) for b in budgets.values()}) == 1 and len(budgets[args.tasks[0]]) == 1:
        budget = f"{budgets[args.tasks[0]][0]:,} env steps per run"
    else:  # tasks (or runs) trained with different budgets
        budget = "env steps per run: " + "; ".join(
            f"{t} {', '.join(f'{n:,}' for n in b)}" for t, b in budgets.items()
        )
    lines.append(
        f"\n{budget}, seeds {list(args.seeds)}, {args.episodes} evaluation episodes per policy; "
        f"load average at report time {load}."
    )
    text = "\n".join(lines) + "\n"
    Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
    Path(args.markdown).write_text(text)
    print(text)
    plot_curves(args)
    return numbers


def cross_scores(runs: dict[str, Path], episodes: int, seed: int) -> dict:
    """Every policy scored by every reward: `runs` maps a reward name to a finished run of one
    task; each run's trained policy, and the untrained one, play the same `episodes` episodes
    of that task under each run's own env and reward (`agents.final_eval`: the same worlds and
    keys for all) -> {reward: {policy: {"success_rate", "return", "return_without_bonus"}}}.
    The policies must share one architecture (the Table 1 runs do: the frozen MineCLIP
    features), so that any run's parameters act in any other run's learner. Whatever env a
    policy plays in, it meets the same episodes, so its success rate must agree across rewards.
    `return_without_bonus` is the mean return minus the success bonus of each success (every
    reward adds it once, when an Animal-Zoo episode succeeds and ends)."""
    import jax

    from agents import final_eval
    from agents.checkpoints import load_run

    loaded = {rw: load_run(out) for rw, out in runs.items()}
    (cfg0, built0, _), *_ = loaded.values()
    shapes = {rw: jax.tree.map(np.shape, r.params) for rw, (_, _, r) in loaded.items()}
    for rw, shape in shapes.items():
        if shape != next(iter(shapes.values())):
            raise ValueError(
                f"the {rw!r} run's policy has another architecture than the others; diagnose "
                "needs runs that share it (Table 1's shared frozen features, not "
                "--no-shared-features)"
            )
    untrained = built0.learner.init_params_only(jax.random.PRNGKey(cfg0.seed))
    policies = {"untrained": untrained, **{f"trained by {rw}": r.params
                                          for rw, (_, _, r) in loaded.items()}}  # fmt: skip
    out = {}
    for rw, (cfg, built, _) in loaded.items():
        result = final_eval.evaluate_policies(built, policies, episodes, seed, (cfg.task,))
        (by_policy,) = result["tasks"].values()
        out[rw] = {
            name: {"success_rate": sc.success_rate, "return": sc.mean_return,
                   "return_without_bonus": sc.mean_return - cfg.success_bonus * sc.success_rate}
            for name, sc in by_policy.items()
        }  # fmt: skip
    return out


def diagnose(args: Args) -> dict:
    """For each task whose runs are all finished: every policy under every reward, as Markdown
    (`args.diagnosis`). The question it answers when the MineCLIP policy fails: does the
    MineCLIP reward pay the manual policy's successful episodes more than its own policy's (then
    the optimisation fell short) or less (then the reward pays for something else)?"""
    text, numbers = ["# Table 1 diagnosis: each policy scored by each reward\n"], {}
    for task in args.tasks:
        runs = {rw: run_dir(args, task, rw, args.seeds[0]) for rw in args.rewards}
        if not all(_finished(out, args.total_steps) for out in runs.values()):
            continue
        scores = cross_scores(runs, args.diagnose_episodes, 2000 + args.seeds[0])
        numbers[task] = scores
        policies = list(next(iter(scores.values())))
        text += [
            f"\n## {task} ({args.diagnose_episodes} episodes per policy, seed {args.seeds[0]})\n",
            "| policy | success | " + " | ".join(f"{rw} return" for rw in scores) + " |",
            "|---|---|" + "---|" * len(scores),
        ]
        for name in policies:
            rate = scores[next(iter(scores))][name]["success_rate"]
            cells = " | ".join(f"{scores[rw][name]['return_without_bonus']:.2f}" for rw in scores)
            text.append(f"| {name} | {100 * rate:.1f}% | {cells} |")
    text.append(
        "\nReturns are per episode without the success bonus (each reward's own shaping alone); "
        "every policy meets the same worlds and random keys under every reward."
    )
    Path(args.diagnosis).parent.mkdir(parents=True, exist_ok=True)
    Path(args.diagnosis).write_text("\n".join(text) + "\n")
    print("\n".join(text))
    return numbers


def _curve(out: Path, window: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """(env steps, success rate) of a run, episode-weighted over the last `window` logs."""
    path = out / "metrics.jsonl"
    if not path.exists():
        return np.zeros(0), np.zeros(0)
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if "success_rate" in r and "episodes" in r]
    steps = np.array([r["env_steps"] for r in rows], dtype=np.float64)
    succ = np.array([r["success_rate"] * r["episodes"] for r in rows])
    eps = np.array([r["episodes"] for r in rows], dtype=np.float64)
    kernel = np.ones(window)
    num = np.convolve(succ, kernel)[: len(rows)]
    den = np.convolve(eps, kernel)[: len(rows)]
    return steps, num / np.maximum(den, 1.0)


def plot_curves(args: Args) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed (pip install matplotlib): no curves drawn")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"mineclip": "tab:green", "manual": "tab:blue", "sparse": "tab:orange"}
    fig, axes = plt.subplots(1, len(args.tasks), figsize=(4 * len(args.tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], args.tasks):
        for rw in args.rewards:
            for k, seed in enumerate(args.seeds):
                steps, rate = _curve(run_dir(args, task, rw, seed))
                if len(steps):
                    ax.plot(steps, rate, color=colors[rw], alpha=0.9,
                            label=f"{rw} reward" if k == 0 else None)  # fmt: skip
        ax.set(title=task, xlabel=f"env steps ({args.action_repeat} ticks each)",
               ylabel="training success rate")  # fmt: skip
        # "100k" ticks: full numbers (100000, 200000, ...) run into each other on a 4-inch axis
        ax.xaxis.set_major_formatter(lambda x, _pos: f"{x / 1000:g}k" if x else "0")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=100)
    plt.close(fig)


def resolved(args: Args) -> Args:
    """`args` with --smoke's tiny budget applied (what every step of a smoke run uses)."""
    if not args.smoke:
        return args
    return dataclasses.replace(args, total_steps=min(args.total_steps, 512),
                               num_envs=min(args.num_envs, 4), episodes=min(args.episodes, 4),
                               episode_ticks=min(args.episode_ticks, 64),
                               diagnose_episodes=min(args.diagnose_episodes, 4))  # fmt: skip


def main(args: Args) -> dict | None:
    args = resolved(args)
    validate(args)
    if "train" in args.steps and not train(args):
        return None
    if "evaluate" in args.steps:
        evaluate(args)
    if "diagnose" in args.steps:
        diagnose(args)
    if "report" in args.steps:
        return report(args)
    return None


if __name__ == "__main__":
    main(tyro.cli(Args))

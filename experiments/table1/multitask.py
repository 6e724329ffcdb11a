"""One multi-task agent per task group, trained by the MineCLIP-mini reward in two stages, as the
paper trains its Animal-Zoo agent (App. G.3: the self-imitation buffer carried over, the policy
head reset at stage 2, replay balanced over tasks), then evaluated on worlds it never saw, and
shipped.

    python -m experiments.table1.multitask --group animal_zoo --time-limit-min 120   # rerun to resume
    python -m experiments.table1.multitask --group animal_zoo --ship                 # + agents/pretrained/animal-zoo

Stage 1 trains two tasks on half of the envs each; stage 2 adds the other two, the envs split
four ways (`STAGES`). Table 1's recipe for the group (`experiments.table1.table1.TASK_RECIPE`,
`ppo_flags`), `STAGE_BUDGETS` Table 1 runs' env steps per stage. Evaluation: `python -m agents.evaluate` on each task of
the group, `--episodes` episodes on worlds of seed `EVAL_WORLD_SEED` (training: the run's seed).
`--ship` exports the final policy with its card (tasks, stages, seeds, budget, evaluation, this
command) into `agents/pretrained/<name>`, where `load_policy(name)` and `agents.evaluate --policy
name` find it.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import tyro

from envs.stats import wilson_interval
from experiments.table1 import table1

STAGES = {
    "animal_zoo": "milk a cow,hunt a cow;milk a cow,hunt a cow,shear a sheep,hunt a sheep",
    "mob_combat": "combat a spider,combat a zombie;"
    "combat a spider,combat a zombie,combat a zombie pigman,combat an enderman",
}
"""Stage 1 trains two tasks; stage 2 adds the other two and keeps training the first two (the
paper's stage 2 trains only its new tasks: here that forgot stage 1's, README)."""
STAGE_BUDGETS = 3
"""Env steps per stage, in Table 1 runs' budgets: stage 2's new tasks get 3/4 of a Table 1 run's
env steps each, stage 1's tasks 2 1/4."""
SHIPPED_NAME = {"animal_zoo": "animal-zoo", "mob_combat": "mob-combat"}
Step = Literal["train", "evaluate", "report"]


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m experiments.table1.multitask --group animal_zoo"""

    group: Literal["animal_zoo", "mob_combat"] = "animal_zoo"
    """the task group (its four tasks in two stages of two, STAGES)"""
    reward: table1.Reward = "mineclip"
    """training reward (the paper's agent: MineCLIP)"""
    seed: int = 0
    """training seed (its worlds, params, sampling)"""
    steps_per_stage: int | None = None
    """env steps per stage (default: STAGE_BUDGETS times the group's Table 1 budget)"""
    runs_dir: str = "runs/multitask"
    """where the run and its evaluations go"""
    episodes: int = 100
    """evaluation episodes per task"""
    steps: tuple[Step, ...] = ("train", "evaluate", "report")
    """what to do"""
    time_limit_min: float = 0.0
    """stop training after this many minutes (0: no limit); rerun the same command to resume"""
    ship: bool = False
    """export the trained policy into agents/pretrained/<name> (animal-zoo, mob-combat)"""
    ship_dir: str = ""
    """export to this directory instead of the package's (tests)"""
    markdown: str = ""
    """the report (default: experiments/table1/multitask_<group>.md)"""
    smoke: bool = False
    """tiny settings for the test suite"""


def table_args(args: Args) -> table1.Args:
    return table1.Args(tasks=_tasks(args), rewards=(args.reward,),
                       seeds=(args.seed,), runs_dir=args.runs_dir, episodes=args.episodes,
                       smoke=args.smoke)  # fmt: skip


def _tasks(args: Args) -> tuple[str, ...]:
    """The group's tasks, each once, in the order the stages first train them."""
    tasks = (t.strip() for s in STAGES[args.group].split(";") for t in s.split(","))
    return tuple(dict.fromkeys(tasks))


def run_dir(args: Args) -> Path:
    return Path(args.runs_dir) / args.group / args.reward / f"seed{args.seed}"


def stage_budget(args: Args) -> int:
    """Env steps per stage: --steps-per-stage, else STAGE_BUDGETS Table 1 runs'."""
    if args.steps_per_stage is not None:
        return args.steps_per_stage
    if args.smoke:
        return 128  # two updates of 4 envs x 16 steps
    return STAGE_BUDGETS * table1.budget(table_args(args), args.group)


def ppo_command(args: Args) -> list[str]:
    t_args = table1.resolved(table_args(args))
    return ["-m", "agents.ppo", *table1.ppo_flags(t_args, args.group, args.reward, args.seed,
                                                 stages=STAGES[args.group],
                                                 total_steps=stage_budget(args),
                                                 out=run_dir(args))]  # fmt: skip


def _finished(out: Path, stages: int) -> bool:
    path = out / "summary.json"
    if not path.exists():
        return False
    summary = json.loads(path.read_text())
    return not summary.get("stopped") and summary.get("stage") == stages - 1


def train(args: Args) -> bool:
    out = run_dir(args)
    if _finished(out, len(STAGES[args.group].split(";"))):
        return True
    cmd = ppo_command(args)
    if (out / "checkpoints").is_dir():
        cmd.append("--resume")
    if args.time_limit_min > 0:
        cmd += ["--time-limit-min", f"{args.time_limit_min:.2f}"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run([sys.executable, *cmd], check=True)
    return _finished(out, len(STAGES[args.group].split(";")))


def evaluate_command(args: Args) -> list[str]:
    """The final policy on each task of the group (one process), on worlds of a seed training
    never used."""
    out = run_dir(args)
    return [
        "-m", "agents.evaluate", "--tasks", *_tasks(args), "--policy", str(out),
        "--episodes", str(args.episodes), "--num-envs", str(min(args.episodes, 16)),
        "--seed", str(1000 + args.seed), "--env-options", f"seed={table1.EVAL_WORLD_SEED + args.seed}",
        "--out-dir", str(out / "eval"), "--videos-per-task", "0" if args.smoke else "1",
    ]  # fmt: skip


def evaluate(args: Args) -> None:
    if (run_dir(args) / "eval" / "results.csv").exists():
        return
    cmd = evaluate_command(args)
    print("$", " ".join(cmd), flush=True)
    subprocess.run([sys.executable, *cmd], check=True)


def results(args: Args) -> dict:
    """{task prompt: {episodes, successes, rate, low, high}} of the evaluation, if it exists."""
    path = run_dir(args) / "eval" / "results.csv"
    if not path.exists():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = {row["prompt"]: row for row in csv.DictReader(f)}
    out = {}
    for task in _tasks(args):
        if task in rows:
            n, k = int(rows[task]["episodes"]), int(rows[task]["successes"])
            low, high = wilson_interval(k, n)
            out[task] = {"episodes": n, "successes": k, "rate": k / n, "low": low, "high": high}
    return out


def report(args: Args) -> dict:
    res = results(args)
    steps = table1.trained_env_steps(run_dir(args))
    lines = [
        f"Multi-task {args.group} agent, {args.reward} reward, seed {args.seed}, stages "
        f"`{STAGES[args.group]}`, {stage_budget(args):,} env steps per stage (last stage "
        f"ended at {steps:,} env steps); {args.episodes} evaluation episodes per task on worlds "
        f"of seed {table1.EVAL_WORLD_SEED + args.seed} (training: seed {args.seed}):"
        if steps is not None
        else f"Multi-task {args.group} agent: not trained yet.",
        "",
        "| task | success rate (Wilson 95%) |",
        "|---|---|",
    ]
    for task in _tasks(args):
        r = res.get(task)
        cell = "—" if r is None else (f"{r['successes']}/{r['episodes']} = {100 * r['rate']:.1f}% "
                                      f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}]")  # fmt: skip
        lines.append(f"| {task} | {cell} |")
    if len(res) == len(_tasks(args)):
        worst = min(r["rate"] for r in res.values())
        lines.append(f"\nGoal (at least 30% on each task): {'met' if worst >= 0.3 else 'missed'}, "
                     f"lowest {100 * worst:.1f}%.")  # fmt: skip
    text = "\n".join(lines) + "\n"
    path = Path(args.markdown or f"experiments/table1/multitask_{args.group}.md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(text)
    return res


def ship(args: Args) -> Path:
    """Export the trained policy with its card into the package (or --ship-dir)."""
    from agents import checkpoints, pretrained

    res = results(args)
    missing = [t for t in _tasks(args) if t not in res]
    if missing:
        raise SystemExit(f"error: evaluate {missing} first (--steps evaluate); a shipped agent "
                         "carries its evaluation")  # fmt: skip
    name = SHIPPED_NAME[args.group]
    card = {
        "name": name,
        "group": args.group,
        "tasks": list(_tasks(args)),
        "stages": STAGES[args.group],
        "reward": args.reward,
        "training_seed": args.seed,
        "training_world_seed": args.seed,
        "evaluation_world_seed": table1.EVAL_WORLD_SEED + args.seed,
        "evaluation": res,
        "env_steps_per_stage": stage_budget(args),
        "env_steps_total": table1.trained_env_steps(run_dir(args)),
        "rebuild": f"python -m experiments.table1.multitask --group {args.group} --seed "
        f"{args.seed} --ship",
        "train_command": "python " + " ".join(ppo_command(args)),
    }
    target = Path(args.ship_dir) if args.ship_dir else pretrained.PRETRAINED_DIR / name
    out = checkpoints.export_policy(run_dir(args), target, card)
    print(f"shipped {name} to {out}")
    return out


def main(args: Args) -> dict | None:
    if args.smoke:
        args = dataclasses.replace(args, episodes=min(args.episodes, 4))
    if "train" in args.steps and not train(args):
        print(f"stopped by the time limit; rerun to resume ({run_dir(args)})")
        return None
    if "evaluate" in args.steps:
        evaluate(args)
    res = report(args) if "report" in args.steps else None
    if args.ship:
        ship(args)
    return res


if __name__ == "__main__":
    main(tyro.cli(Args))

"""K seeds in one `agents.ppo --seeds K` program against K single-seed runs, on a Table 1 job.

    python -m benchmarks.seeds_program_speed                       # combat an enderman, MineCLIP-mini
    python -m benchmarks.seeds_program_speed --task "hunt a cow" --reward manual --rounds 3

Whole jobs, so the two run as alternating subprocesses (`agents.ppo` with Table 1's flags for
the task, `experiments.table1.table1.ppo_flags`, and `--updates` updates per seed, no final
evaluation). The one-program side trains seeds 0..K-1 in one process; the sequential side
trains seed 0 alone. The single-seed run is one seed's share of K sequential runs: each of
them runs the same program, so K of them take K times as long. Printed per round: env steps/s
over all seeds after the first `--warmup` updates (compilation and warm-up left out), the
wall time of each process, and the load average; then the median ratio.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tyro

from benchmarks import common
from experiments.table1 import table1


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m benchmarks.seeds_program_speed --rounds 2"""

    task: str = "combat an enderman"
    """Table 1 task (its recipe's flags, TASK_RECIPE)"""
    reward: table1.Reward = "mineclip"
    """training reward"""
    seeds: int = 3
    """K: seeds in the one program"""
    updates: int = 10
    """updates per seed of each timed run"""
    warmup: int = 2
    """first updates left out of the env steps/s (compilation, warm-up)"""
    rounds: int = 2
    """alternating rounds (one program, then one single seed)"""


def job(args: Args, k: int, out: Path) -> list[str]:
    """`agents.ppo` of the Table 1 run of `args.task`, `k` seeds, `args.updates` updates."""
    t_args = table1.Args(tasks=(args.task,))
    per_update = t_args.num_envs * table1.rollout_steps(t_args)
    flags = table1.ppo_flags(t_args, args.task, args.reward, 0, k, total_steps=args.updates * per_update, out=out)  # fmt: skip
    flags[flags.index("--final-eval-episodes") + 1] = "0"
    flags[flags.index("--checkpoint-every") + 1] = str(args.updates + 1)
    return [sys.executable, "-m", "agents.ppo", *flags]


def timed(args: Args, k: int, root: Path) -> dict:
    """One run: its env steps/s after the warm-up (all seeds together) and its wall time."""
    out = root / f"seeds{k}"
    start = time.perf_counter()
    proc = subprocess.run(job(args, k, out), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(f"agents.ppo --seeds {k} failed:\n{proc.stderr[-3000:]}")
    metrics = (out / "seed0" if k > 1 else out) / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    sps = [r["sps"] for r in rows if "sps" in r][args.warmup :]
    if not sps:
        raise SystemExit(f"error: --updates {args.updates} leaves no update after --warmup {args.warmup}")  # fmt: skip
    return {"sps": statistics.median(sps), "wall_s": wall, "load": common.load()[0]}


def main(args: Args) -> dict:
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            one = timed(args, args.seeds, Path(tmp) / f"r{r}")
            single = timed(args, 1, Path(tmp) / f"r{r}")
            ratio = one["sps"] / single["sps"]
            rounds.append({"one_program": one, "single_seed": single, "ratio": ratio})
            print(
                f"round {r + 1}: {args.seeds} seeds in one program {one['sps']:.0f} env steps/s "
                f"({one['wall_s']:.0f} s), one seed {single['sps']:.0f} env steps/s "
                f"({single['wall_s']:.0f} s); one program / sequential {ratio:.2f}x; "
                f"{common.load_text()}",
                flush=True,
            )
    median = statistics.median(r["ratio"] for r in rounds)
    print(f"{args.task}, {args.reward} reward: one program / sequential {median:.2f}x (median of {args.rounds} rounds)")  # fmt: skip
    return {"rounds": rounds, "ratio": median}


if __name__ == "__main__":
    main(tyro.cli(Args))

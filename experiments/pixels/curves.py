"""Learning curves of `agents.ppo` runs: training success rate against env steps, one line per
group of runs (the mean over its seeds, with a band from the lowest to the highest seed).

    python -m experiments.pixels.curves --group "combat a zombie=runs/zombie_s0,runs/zombie_s1" \
        "hunt a cow=runs/cow_s0" --png experiments/pixels/curves.png

Each run's success rate is episode-weighted over its last `--window` logs (a log holds the
episodes that ended in one update). Prints, per group, the env steps reached and the training
success rate over the last 10% of each run's logs.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import tyro


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m experiments.pixels.curves --group "NAME=RUN[,RUN...]" --png OUT.png"""

    group: tuple[str, ...] = ()
    """NAME=RUN_DIR[,RUN_DIR...]: runs of one configuration (seeds), drawn as one line and band"""
    png: str = "experiments/pixels/curves.png"
    """output figure"""
    window: int = 10
    """logs per success-rate window"""
    title: str = "training success rate (manual reward, from pixels)"
    """figure title"""


def read_rows(run_dir: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x]
    return [r for r in rows if "success_rate" in r]


def windowed_success(rows: list[dict], k: int) -> np.ndarray:
    """Episode-weighted success rate over the last k logs at each log."""
    out = []
    for i in range(len(rows)):
        w = rows[max(0, i - k + 1) : i + 1]
        eps = sum(r["episodes"] for r in w)
        out.append(sum(r["success_rate"] * r["episodes"] for r in w) / max(eps, 1.0))
    return np.asarray(out)


def parse_group(spec: str) -> tuple[str, list[Path]]:
    if "=" not in spec:
        raise SystemExit(f"--group {spec!r}: expected NAME=RUN_DIR[,RUN_DIR...]")
    name, dirs = spec.split("=", 1)
    return name, [Path(d).expanduser() for d in dirs.split(",") if d]


def main(args: Args) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    summary = {}
    for spec in args.group:
        name, dirs = parse_group(spec)
        runs = [read_rows(d) for d in dirs]
        steps = min(len(r) for r in runs)  # the seeds' common length
        x = np.asarray([r["env_steps"] for r in runs[0][:steps]])
        ys = np.stack([windowed_success(r[:steps], args.window) for r in runs])
        line = ax.plot(x, ys.mean(0), marker=".", markersize=3, label=f"{name} ({len(runs)})")
        if len(runs) > 1:
            ax.fill_between(x, ys.min(0), ys.max(0), color=line[0].get_color(), alpha=0.2)
        tails = []
        for r in runs:
            tail = r[int(0.9 * len(r)) :]
            eps = sum(t["episodes"] for t in tail)
            tails.append(sum(t["success_rate"] * t["episodes"] for t in tail) / max(eps, 1.0))
        summary[name] = {"env_steps": int(x[-1]), "success_last_10pct": tails}
    ax.set(xlabel="env steps", ylabel="success rate", title=args.title, ylim=(-0.02, 1.02))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=110)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main(tyro.cli(Args))

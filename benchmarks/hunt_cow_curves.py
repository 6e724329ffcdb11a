"""Learning curves on the embedded world, "hunt a cow": manual dense reward vs sparse success only.

    python benchmarks/hunt_cow_curves.py                       # both runs, then docs/learning_curve.png
    python benchmarks/hunt_cow_curves.py --total-steps 50000 --plot-only

Both runs use the same seed, network, PPO + self-imitation settings and env-step budget; only
`--reward` differs (the success bonus is the same in both). The figure plots success rate and
episodic return (of the training reward) against env steps, smoothed over 5 logs, and the
script prints the final success rates and the machine load.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import tyro


@dataclasses.dataclass(frozen=True)
class Args:
    """python benchmarks/hunt_cow_curves.py --total-steps 100000"""

    total_steps: int = 40_960
    """env steps per run"""
    num_envs: int = 16
    """parallel envs"""
    seed: int = 0
    """seed (both runs)"""
    runs_dir: str = "runs/hunt_cow_curves"
    """where the two runs go"""
    png: str = "docs/learning_curve.png"
    """output figure"""
    plot_only: bool = False
    """re-plot existing runs"""
    only: str = ""
    """run just this reward ("manual" or "sparse"; for running the two in parallel), no plot"""


def _config(args: Args, reward: str):
    from agents import ppo

    return ppo.PPOConfig(
        task="hunt a cow", reward=reward, num_envs=args.num_envs, num_steps=64,
        total_steps=args.total_steps, seed=args.seed, max_episode_steps=200,
        out=str(Path(args.runs_dir) / reward), video_every=-1, checkpoint_every=20,
        num_minibatches=2, update_epochs=2, image_size=(32, 48), world_size=32, world_pool=4,
        progress=False,
    )  # fmt: skip


def _read(run_dir: Path):
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x]
    rows = [r for r in rows if "success_rate" in r]
    return [r["env_steps"] for r in rows], rows


def _smooth(xs, k=5):
    out = []
    for i in range(len(xs)):
        w = xs[max(0, i - k + 1) : i + 1]
        out.append(sum(w) / len(w))
    return out


def plot(args: Args) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    final = {}
    for reward, color in (("manual", "tab:blue"), ("sparse", "tab:orange")):
        steps, rows = _read(Path(args.runs_dir) / reward)
        succ = _smooth([r["success_rate"] for r in rows])
        ret = _smooth([r["episodic_return"] for r in rows])
        axes[0].plot(steps, succ, color=color, label=f"{reward} reward")
        axes[1].plot(steps, ret, color=color, label=f"{reward} reward")
        tail = rows[-max(1, len(rows) // 10) :]
        final[reward] = sum(r["success_rate"] for r in tail) / len(tail)
    axes[0].set(xlabel="env steps", ylabel="success rate", title='"hunt a cow" (embedded world)')
    axes[1].set(xlabel="env steps", ylabel="episodic return (training reward)")
    for a in axes:
        a.grid(alpha=0.3)
        a.legend()
    fig.tight_layout()
    Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=110)
    return final


def main(args: Args) -> None:
    from agents import ppo

    if not args.plot_only:
        for reward in (args.only,) if args.only else ("manual", "sparse"):
            cfg = _config(args, reward)
            resume = (Path(cfg.out) / "config.json").exists()
            ppo.train(dataclasses.replace(cfg, resume=resume))
        if args.only:
            return
    final = plot(args)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(json.dumps({"final_success_rate (last 10% of logs)": final, "load": load}))


if __name__ == "__main__":
    main(tyro.cli(Args))

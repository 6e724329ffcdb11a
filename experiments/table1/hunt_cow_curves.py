"""Learning curves on the embedded world, "hunt a cow": manual dense reward vs sparse success only.

    python -m experiments.table1.hunt_cow_curves                       # both runs, then experiments/table1/learning_curve.png
    python -m experiments.table1.hunt_cow_curves --total-steps 50000 --plot-only

Both runs use the same seed, network, PPO + self-imitation settings and env-step budget; only
`--reward` differs (the success bonus is the same in both). The policy sees 32x48 frames (plus
compass, position, voxels); by default the critic also sees the target's simulator features
(`--privileged-critic`) and the policy's features are trained to say where the target is in the
frame (`--aux-coef`), as the pixel encoder otherwise learns too slowly on a CPU budget. An env
step is `--action-repeat` (4) game ticks. The figure plots success rate and episodic return (of
the training reward) against env steps, episode-weighted over the last 10 logs, up to the budget
both runs reached, and the script prints the final success rates and the machine load.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import tyro


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m experiments.table1.hunt_cow_curves --total-steps 100000"""

    total_steps: int = 1_000_000
    """env steps per run"""
    num_envs: int = 16
    """parallel envs"""
    seed: int = 0
    """seed (both runs)"""
    runs_dir: str = "runs/hunt_cow_curves"
    """where the two runs go"""
    png: str = "experiments/table1/learning_curve.png"
    """output figure"""
    plot_only: bool = False
    """re-plot existing runs"""
    action_repeat: int = 4
    """game ticks per env step (500-tick episodes are 500 / action_repeat steps)"""
    privileged_critic: bool = True
    """critic sees the target's simulator features (asymmetric actor-critic)"""
    aux_coef: float = 10.0
    """weight of the auxiliary where-is-the-target loss"""
    privileged_policy: bool = False
    """ablation: the policy also sees the target features (oracle perception)"""
    only: str = ""
    """run just this reward ("manual" or "sparse"; for running the two in parallel), no plot"""


def _config(args: Args, reward: str):
    from agents import ppo

    return ppo.PPOConfig(
        task="hunt a cow", reward=reward, num_envs=args.num_envs, num_steps=64,
        # whole updates (agents.ppo refuses a partial one): --total-steps rounded down
        total_steps=args.total_steps // (64 * args.num_envs) * 64 * args.num_envs,
        seed=args.seed, max_episode_steps=500,
        out=str(Path(args.runs_dir) / reward), video_every=-1, checkpoint_every=20,
        num_minibatches=2, update_epochs=4, image_size=(32, 48), world_size=32, world_pool=4,
        cnn="nature", action_prior="balanced", action_repeat=args.action_repeat,
        si_max_len=500 // args.action_repeat, privileged_critic=args.privileged_critic,
        aux_coef=args.aux_coef, privileged_policy=args.privileged_policy, progress=False,
        # the recipe of the recorded curves (agents.ppo's defaults before issue 41)
        action_space="compact", core_size=0, norm_returns=False, lr_final_frac=0.0,
        success_bonus=10.0,
    )  # fmt: skip


def _read(run_dir: Path):
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x]
    rows = [r for r in rows if "success_rate" in r]
    return [r["env_steps"] for r in rows], rows


def _window(rows, key, k=10):
    """Episode-weighted mean of `key` over the last k logs (a log holds a few episodes)."""
    out = []
    for i in range(len(rows)):
        w = rows[max(0, i - k + 1) : i + 1]
        eps = sum(r["episodes"] for r in w)
        out.append(sum(r[key] * r["episodes"] for r in w) / max(eps, 1.0))
    return out


def plot(args: Args) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {rw: _read(Path(args.runs_dir) / rw) for rw in ("manual", "sparse")}
    budget = min(steps[-1] for steps, _ in runs.values())  # compare at the same env steps
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    final = {}
    for reward, color in (("manual", "tab:blue"), ("sparse", "tab:orange")):
        steps, rows = runs[reward]
        keep = [i for i, s in enumerate(steps) if s <= budget]
        steps, rows = [steps[i] for i in keep], [rows[i] for i in keep]
        axes[0].plot(steps, _window(rows, "success_rate"), color=color, label=f"{reward} reward")
        axes[1].plot(steps, _window(rows, "episodic_return"), color=color,
                     label=f"{reward} reward")  # fmt: skip
        tail = [r for s, r in zip(steps, rows) if s > 0.9 * budget]
        eps = sum(r["episodes"] for r in tail)
        final[reward] = {
            "env_steps": steps[-1],
            "episodes_in_last_10pct": eps,
            "success_rate_last_10pct": sum(r["success_rate"] * r["episodes"] for r in tail)
            / max(eps, 1.0),
            "success_rate_all": sum(r["success_rate"] * r["episodes"] for r in rows)
            / max(sum(r["episodes"] for r in rows), 1.0),
        }
    cfg = json.loads((Path(args.runs_dir) / "manual" / "config.json").read_text())
    xlabel = f"env steps ({cfg.get('action_repeat', 1)} game ticks each)"
    sees = (
        "also the target features" if cfg.get("privileged_policy") else "pixels, no target features"
    )
    axes[0].set(xlabel=xlabel, ylabel="success rate", title=f'"hunt a cow"; the policy sees {sees}')
    axes[1].set(xlabel=xlabel, ylabel="episodic return (training reward)")
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

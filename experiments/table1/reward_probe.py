"""What does a MineCLIP reward pay for? Play trained policies and score their frames by view.

    python -m experiments.table1.reward_probe --runs-dir runs/table1 --task "hunt a cow"
    python -m experiments.table1.reward_probe ... --ckpts mini ~/mini_ft/model   # models compared on the same frames

Plays the untrained policy and each finished Table 1 run's trained policy (`--rewards`) on the
same episodes of one task, records every frame with the simulator's ground truth (is the target
in view, how far), then scores the frames with a MineCLIP checkpoint (default: the runs' own)
and prints P(goal prompt) per step binned by what the frame shows, and each policy's Direct
return. A reward that tracks the task pays more for the target in view and close; one that is
exploited pays the exploiting policy's frames the same whether the target is there or not.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tyro

from experiments.table1.policy_clips import record

BINS = (("not in view", None, None), ("in view, >= 6 blocks", 6.0, None),
        ("in view, < 6 blocks", None, 6.0))  # fmt: skip


@dataclasses.dataclass
class Args:
    """python -m experiments.table1.reward_probe --runs-dir DIR --task "hunt a cow" """

    runs_dir: str = "runs/table1"  # experiments.table1.table1's --runs-dir
    task: str = "hunt a cow"  # the task whose runs are played
    rewards: tuple[str, ...] = ("mineclip", "manual")  # runs whose trained policies play
    seed: int = 0  # the runs' seed (seed0 directories)
    ckpts: tuple[str, ...] = ()  # MineCLIP checkpoints that score the same frames, one table
    # each (none: the runs' own)
    episodes: int = 64  # episodes per policy (a multiple of the runs' --num-envs)
    eval_seed: int = 2000  # key of the episodes (the same for every policy)
    negatives: tuple[str, ...] = ()  # prompts added to the paper's 12 as negatives (agents.ppo
    # --mineclip-negatives); each table is then printed with and without them


def goal_probability(handle, prompt: str, rgb: np.ndarray, chunk: int = 512, negatives=()):
    """Direct reward and P(prompt) [E, T] of frames uint8 [E, T, H, W, 3] (window 16, the
    paper's 12 prompts and `negatives` as negatives), frame t scored with the frames up to it."""
    from mineclip_jax.reward import PAPER_TASK_PROMPTS, MineCLIPReward

    e, t = rgb.shape[:2]
    flat = rgb.reshape(e * t, *rgb.shape[2:])
    feats = np.concatenate([np.asarray(handle.encode_frames(flat[i : i + chunk]))
                            for i in range(0, len(flat), chunk)])  # fmt: skip
    extra = dict(negatives=PAPER_TASK_PROMPTS + tuple(negatives)) if negatives else {}
    r, p = MineCLIPReward(handle, prompt, **extra).trajectory_rewards(feats.reshape(e, t, -1))
    return np.asarray(r), np.asarray(p)


def by_view(p, visible, distance, live) -> dict:
    """Mean of `p` over live steps in each of `BINS` -> {bin: (mean or nan, fraction of steps)}."""
    out = {}
    for name, lo, hi in BINS:
        m = live & (~visible if lo is None and hi is None else visible)
        if lo is not None:
            m &= distance >= lo
        if hi is not None:
            m &= distance < hi
        out[name] = (float(p[m].mean()) if m.any() else float("nan"), float(m.sum() / live.sum()))
    return out


def main(args: Args) -> str:
    import jax

    import mineclip_jax as mcj
    from agents.checkpoints import load_run
    from experiments.table1 import table1

    t_args = table1.Args(runs_dir=args.runs_dir, tasks=(args.task,), seeds=(args.seed,))
    runs = {rw: table1.run_dir(t_args, args.task, rw, args.seed) for rw in args.rewards}
    first = next(iter(runs.values()))
    loaded = {rw: load_run(out) for rw, out in runs.items()}
    cfg0, built0, _ = loaded0 = next(iter(loaded.values()))
    policies = {"untrained": built0.learner.init_params_only(jax.random.PRNGKey(cfg0.seed))}
    policies |= {f"trained by {rw}": run[2].params for rw, run in loaded.items()}
    rec = record(first, policies, args.episodes, args.eval_seed, loaded0)
    lines = []
    for ckpt, negatives in [(c, n) for c in args.ckpts or (cfg0.mineclip_ckpt,)
                            for n in ({(), args.negatives} if args.negatives else {()})]:  # fmt: skip
        handle = mcj.load_checkpoint(ckpt)
        with_neg = f" with negatives {list(negatives)}" if negatives else ""
        lines += [f"P({args.task!r}) per step under MineCLIP {ckpt!r}{with_neg}, {args.episodes} episodes "
                  f"per policy, by what the frame shows (fraction of steps in brackets); load "
                  f"{os.getloadavg()[0]:.1f}", "",
                  "| policy | Direct return | " + " | ".join(b for b, _, _ in BINS) + " |",
                  "|---" * (2 + len(BINS)) + "|"]  # fmt: skip
        for name, r in rec.items():
            direct, p = (
                x[:, 1:] for x in goal_probability(handle, args.task, r["rgb"], negatives=negatives)
            )
            ret = float((direct * r["live"]).sum(1).mean())
            bins = by_view(p, r["visible"], r["distance"], r["live"])
            cells = " | ".join(f"{m:.3f} ({f:.0%})" for m, f in bins.values())
            lines.append(f"| {name} | {ret:.2f} | {cells} |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main(tyro.cli(Args))

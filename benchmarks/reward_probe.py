"""What does a MineCLIP reward pay for? Play trained policies and score their frames by view.

    python -m benchmarks.reward_probe --runs-dir runs/table1 --task "hunt a cow"
    python -m benchmarks.reward_probe ... --ckpt ~/mineclip_mini/run/model   # another model

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
from pathlib import Path

import numpy as np
import tyro

BINS = (("not in view", None, None), ("in view, >= 6 blocks", 6.0, None),
        ("in view, < 6 blocks", None, 6.0))  # fmt: skip


@dataclasses.dataclass
class Args:
    """python -m benchmarks.reward_probe --runs-dir DIR --task "hunt a cow" """

    runs_dir: str = "runs/table1"  # benchmarks.table1's --runs-dir
    task: str = "hunt a cow"  # the task whose runs are played
    rewards: tuple[str, ...] = ("mineclip", "manual")  # runs whose trained policies play
    seed: int = 0  # the runs' seed (seed0 directories)
    ckpt: str = ""  # MineCLIP checkpoint that scores the frames ("": the runs' own)
    episodes: int = 64  # episodes per policy (a multiple of the runs' --num-envs)
    eval_seed: int = 2000  # key of the episodes (the same for every policy)


def record(run_dir, params_by_policy: dict, episodes: int, seed: int) -> dict:
    """Each policy's `episodes` episodes (no auto-reset; every env's first episode) ->
    {policy: {"rgb" uint8 [E, T + 1, H, W, 3] (the reset frame first), "visible" / "live" /
    "done" bool [E, T], "distance", "reward" float32 [E, T] (the run's own training reward)}}
    for steps 1..T. `run_dir` gives the env."""
    import jax
    import jax.numpy as jnp

    from agents import losses
    from agents.checkpoints import load_run

    cfg, built, runner = load_run(run_dir)
    L = built.learner
    env, hooks = L.env, L.hooks
    n = int(jax.tree.leaves(runner.env_params)[0].shape[0])
    if episodes % n:
        raise ValueError(f"--episodes {episodes} must be a multiple of the runs' {n} envs")
    tid = jnp.zeros(n, jnp.int32)
    steps = int(cfg.max_episode_steps)
    step = env.step_no_reset or env.step

    def play(params, consts, env_params, key):
        k_reset, k_env, k_act = jax.random.split(key, 3)
        raw, es = jax.vmap(env.reset, in_axes=(0, 0, None))(
            jax.random.split(k_reset, n), env_params, env.static
        )
        obs = L.policy_obs_batch(consts, raw, tid)
        rs = hooks.init(consts, n, np.zeros(n, np.int32)) if hooks.init is not None else None
        if hooks.start is not None:
            rs = hooks.start(consts, rs, obs)

        def body(c, t):
            es, obs, prev, rs, over = c
            a = losses.sample(jax.random.fold_in(k_act, t), L.policy_logits(params, obs, prev),
                              L.action_dims)  # fmt: skip
            raw, es, r_env, term, trunc, info = jax.vmap(step, in_axes=(0, 0, 0, 0, None))(
                jax.random.split(jax.random.fold_in(k_env, t), n), es,
                jax.vmap(env.to_env_action)(a), env_params, env.static)  # fmt: skip
            done = term | trunc
            obs = L.policy_obs_batch(consts, raw, tid)
            if hooks.step is not None:
                rs, rew = hooks.step(consts, rs, obs, done, r_env, info)
            else:
                rew = jax.vmap(env.reward_fn)(r_env, info)
            sig = info["signals"]
            out = {"rgb": raw["rgb"], "visible": sig.target_visible, "live": ~over,
                   "distance": sig.target_distance, "reward": rew, "done": done}  # fmt: skip
            prev = jnp.where(done[:, None], L.noop_action, a)
            return (es, obs, prev, rs, over | done), out

        c0 = (es, obs, jnp.tile(L.noop_action, (n, 1)), rs, jnp.zeros(n, bool))
        out = jax.lax.scan(body, c0, jnp.arange(steps))[1]
        out["rgb"] = jnp.concatenate([raw["rgb"][None], out["rgb"]])
        return out

    fn = jax.jit(play)
    host = jax.device_get((L.consts, runner.env_params))
    out = {}
    for name, params in params_by_policy.items():
        chunks = [jax.device_get(fn(jax.device_get(params), *host,
                                    jax.random.fold_in(jax.random.PRNGKey(seed), i)))
                  for i in range(episodes // n)]  # fmt: skip
        out[name] = {k: np.concatenate([np.swapaxes(c[k], 0, 1) for c in chunks])
                     for k in chunks[0]}  # fmt: skip
    return out


def goal_probability(handle, prompt: str, rgb: np.ndarray, chunk: int = 512):
    """Direct reward and P(prompt) [E, T] of frames uint8 [E, T, H, W, 3] (window 16, the
    paper's 12 prompts as negatives), frame t scored with the frames up to it."""
    from mineclip_jax.reward import MineCLIPReward

    e, t = rgb.shape[:2]
    flat = rgb.reshape(e * t, *rgb.shape[2:])
    feats = np.concatenate([np.asarray(handle.encode_frames(flat[i : i + chunk]))
                            for i in range(0, len(flat), chunk)])  # fmt: skip
    r, p = MineCLIPReward(handle, prompt).trajectory_rewards(feats.reshape(e, t, -1))
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
    from agents.checkpoints import load_config, load_run
    from benchmarks import table1

    t_args = table1.Args(runs_dir=args.runs_dir, tasks=(args.task,), seeds=(args.seed,))
    runs = {rw: table1.run_dir(t_args, args.task, rw, args.seed) for rw in args.rewards}
    first = next(iter(runs.values()))
    cfg0, built0, _ = load_run(first)
    policies = {"untrained": built0.learner.init(jax.random.PRNGKey(cfg0.seed)).params}
    policies |= {f"trained by {rw}": load_run(out)[2].params for rw, out in runs.items()}
    rec = record(first, policies, args.episodes, args.eval_seed)
    ckpt = args.ckpt or load_config(first).mineclip_ckpt
    handle = mcj.load_checkpoint(ckpt)
    lines = [f"P({args.task!r}) per step under MineCLIP {ckpt!r}, {args.episodes} episodes per "
             f"policy, by what the frame shows (fraction of steps in brackets); load "
             f"{os.getloadavg()[0]:.1f}", "",
             "| policy | Direct return | " + " | ".join(b for b, _, _ in BINS) + " |",
             "|---" * (2 + len(BINS)) + "|"]  # fmt: skip
    for name, r in rec.items():
        direct, p = (x[:, 1:] for x in goal_probability(handle, args.task, r["rgb"]))
        ret = float((direct * r["live"]).sum(1).mean())
        bins = by_view(p, r["visible"], r["distance"], r["live"])
        cells = " | ".join(f"{m:.3f} ({f:.0%})" for m, f in bins.values())
        lines.append(f"| {name} | {ret:.2f} | {cells} |")
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main(tyro.cli(Args))

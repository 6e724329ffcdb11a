"""PPO throughput and return on envpool CartPole-v1: our jitted learner vs Stable-Baselines3 PPO.

    python benchmarks/ppo_throughput.py                      # 500k steps each, 4 envs x 128 steps
    python benchmarks/ppo_throughput.py --total-steps 100000 --skip-sb3

Ours: envpool's XLA interface (`env.xla()`) stepped inside a `lax.scan`, the rollout and the
`agents.learner.Learner.ppo_update` (GAE, 4 epochs x 4 minibatches, Adam, annealed lr) in ONE
jitted, donated call per iteration; envpool's NEXT_STEP auto-reset transition is masked.
Baseline: SB3 PPO ("MlpPolicy", 64-64 tanh like ours, same 8 envs x 128 steps, 4 epochs,
batch 256, same lr/clip/gamma/lambda/entropy) on its standard DummyVecEnv, in this process.
Both report env steps per second including learning, and the mean return of the last 20 finished
episodes of training plus a 20-episode greedy evaluation. Needs the `envpool` extra and, for the
baseline, `torch` + `stable-baselines3`. Prints the machine load beside the figures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import numpy as np
import tyro


@dataclasses.dataclass(frozen=True)
class Args:
    """python benchmarks/ppo_throughput.py --total-steps 500000"""

    total_steps: int = 500_000
    """env steps per run"""
    num_envs: int = 4
    """parallel envs (both runs)"""
    num_steps: int = 128
    """rollout length (both runs)"""
    seed: int = 1
    """seed"""
    skip_sb3: bool = False
    """run only ours"""
    out: str = ""
    """optional JSON file for the figures"""
    seeds: int = 0
    """K > 0: also time K seeds in one program (agents.learner, JAX CartPole) against K sequential single-seed runs"""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_ours(args: Args) -> dict:
    import envpool
    import jax
    import jax.numpy as jnp

    from agents import learner as lrn
    from agents import losses, networks, ppo
    from agents import self_imitation as si

    cfg = ppo.PPOConfig(
        task="cartpole", num_envs=args.num_envs, num_steps=args.num_steps,
        total_steps=args.total_steps, lr=2.5e-4, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5,
        max_grad_norm=0.5, update_epochs=4, num_minibatches=4, gamma=0.99, gae_lambda=0.95,
        smooth_coef=0.0, si_every=0, num_devices=1, unroll=False,
    )  # fmt: skip
    envs = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=args.num_envs,
                        batch_size=args.num_envs, seed=args.seed)  # fmt: skip
    handle, _, _, step_env = envs.xla()
    obs0, _ = envs.reset()
    net = networks.MLPActorCritic((2,))
    L = lrn.Learner(cfg, None, net, lrn.make_mesh(1), action_dims=(2,))
    n = args.num_envs
    obs = {"state": jnp.asarray(obs0, jnp.float32)}
    params = L.init_params(jax.random.PRNGKey(args.seed), obs)
    runner = lrn.Runner.make(
        params=params, opt_state=lrn.adam_init(params), si_opt_state=(), env_params=jnp.zeros((n,)),
        env_state=handle, obs=obs, prev_action=jnp.zeros((n, 1), jnp.int32),
        ep_return=jnp.zeros((n,)), ep_length=jnp.zeros((n,), jnp.int32),
        episode_id=jnp.zeros((n,), jnp.int32), task_id=jnp.zeros((n,), jnp.int32),
        reward_state=jnp.zeros((n,), bool),  # here: "the next step is envpool's reset step"
        si_buffer=si.init_buffer(1, 1, {"state": jnp.zeros(4)}, 1),
        si_store=si.init_store(n, 1, {"state": jnp.zeros(4)}, 1),
        key=jax.random.PRNGKey(args.seed + 1), update_step=jnp.zeros((), jnp.int32),
        env_steps=jnp.zeros((), jnp.int32),
    )  # fmt: skip

    def iteration(r: lrn.Runner):
        def step(r, _):
            key, k = jax.random.split(r.key)
            logits, value = L.apply(r.params, r.obs, r.prev_action)
            a = losses.sample(k, logits, (2,))
            handle, (nobs, rew, term, trunc, _) = step_env(r.env_state, a[:, 0])
            valid = ~r.reward_state
            done = (term | trunc) & valid
            reward = jnp.where(valid, rew, 0.0).astype(jnp.float32)
            ret = r.ep_return + reward
            t = lrn.Transition(obs=r.obs, prev_action=r.prev_action, action=a,
                               logp=losses.log_prob(logits, a, (2,)), value=value, reward=reward,
                               done=done, episode_id=r.episode_id,
                               mask=valid.astype(jnp.float32))  # fmt: skip
            r = r.update(key=key, env_state=handle, obs={"state": nobs.astype(jnp.float32)},
                          ep_return=jnp.where(done, 0.0, ret), reward_state=done,
                          episode_id=r.episode_id + done)  # fmt: skip
            return r, (t, jnp.where(done, ret, jnp.nan))

        r, (traj, finished) = jax.lax.scan(step, r, None, cfg.num_steps)
        r, m = L.ppo_update(r, traj)
        return r, finished

    it = jax.jit(iteration, donate_argnums=0)
    returns: list[float] = []
    t0 = time.time()
    runner, fin = it(runner)
    jax.block_until_ready(runner)
    compile_s = time.time() - t0
    t1 = time.time()
    for _ in range(L.num_updates - 1):
        runner, fin = it(runner)
        f = np.asarray(fin)
        returns.extend(f[~np.isnan(f)].tolist())
    jax.block_until_ready(runner)
    wall = time.time() - t1
    sps = (L.num_updates - 1) * n * cfg.num_steps / wall

    # greedy evaluation on a fresh envpool (host loop)
    ev = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=20, seed=args.seed + 99)
    o, _ = ev.reset()
    act = jax.jit(lambda p, o: losses.mode(L.apply(p, {"state": o}, None)[0], (2,))[:, 0])
    total, done = np.zeros(20), np.zeros(20, bool)
    while not done.all():
        o, r, te, tr, _ = ev.step(np.asarray(act(runner.params, jnp.asarray(o, jnp.float32))))
        total += r * ~done
        done |= te | tr
    return {
        "sps_incl_learning": sps,
        "compile_s": compile_s,
        "train_return_last20": float(np.mean(returns[-20:])) if returns else float("nan"),
        "eval_return_greedy20": float(total.mean()),
        "env_steps": L.num_updates * n * cfg.num_steps,
    }


def run_sb3(args: Args) -> dict:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env("CartPole-v1", n_envs=args.num_envs, seed=args.seed)
    model = PPO("MlpPolicy", env, n_steps=args.num_steps, batch_size=args.num_envs * args.num_steps // 4,
                n_epochs=4, learning_rate=lambda f: 2.5e-4 * f, clip_range=0.2, ent_coef=0.01,
                gamma=0.99, gae_lambda=0.95, max_grad_norm=0.5, seed=args.seed, device="cpu",
                verbose=0)  # fmt: skip

    class Returns(BaseCallback):
        def __init__(self):
            super().__init__()
            self.returns = []

        def _on_step(self):
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.returns.append(info["episode"]["r"])
            return True

    cb = Returns()
    t0 = time.time()
    model.learn(total_timesteps=args.total_steps, callback=cb)
    wall = time.time() - t0
    import gymnasium as gym

    ev = gym.make("CartPole-v1")
    tot = []
    for i in range(20):
        o, _ = ev.reset(seed=args.seed + 99 + i)
        done, r_sum = False, 0.0
        while not done:
            a, _ = model.predict(o, deterministic=True)
            o, r, te, tr, _ = ev.step(a)
            r_sum += r
            done = te or tr
        tot.append(r_sum)
    return {
        "sps_incl_learning": model.num_timesteps / wall,
        "train_return_last20": float(np.mean(cb.returns[-20:])),
        "eval_return_greedy20": float(np.mean(tot)),
        "env_steps": int(model.num_timesteps),
    }


def run_seeds(args: Args) -> dict:
    """The project's own learner on its JAX CartPole (`agents.testing`, SI on): K seeds stacked
    and vmapped in one jitted iteration against the single-seed iteration called K times in turn
    (compilation excluded from both)."""
    import jax

    from agents import learner as lrn
    from agents.build import build
    from agents.ppo import PPOConfig

    cfg = PPOConfig(task="cartpole", num_envs=args.num_envs, num_steps=args.num_steps,
                    total_steps=args.total_steps // (args.num_envs * args.num_steps)
                    * args.num_envs * args.num_steps, smooth_coef=0.0, si_every=1,
                    num_devices=1, unroll=False, progress=False)  # fmt: skip
    L = build(cfg).learner
    hp, k = lrn.HyperParams.from_config(cfg), args.seeds
    updates = L.num_updates

    def run(runner, seeds):
        runner, m = L.iteration(runner, hp, seeds=seeds)
        runner, _ = L.si_phase(runner, hp, seeds=seeds)
        return runner

    singles = [L.init_sharded(jax.random.PRNGKey(s)) for s in range(k)]
    stacked = jax.tree.map(lambda *x: jax.numpy.stack(x), *[jax.device_get(r) for r in singles])
    stacked = jax.device_put(stacked, lrn.runner_shardings(stacked, L.mesh, seeds=True))
    singles[0] = jax.block_until_ready(run(singles[0], False))  # compile
    stacked = jax.block_until_ready(run(stacked, True))
    t0 = time.time()
    for i in range(k):
        r = singles[i]
        for _ in range(updates - 1):
            r = run(r, False)
        jax.block_until_ready(r)
    seq = time.time() - t0
    t0 = time.time()
    for _ in range(updates - 1):
        stacked = run(stacked, True)
    jax.block_until_ready(stacked)
    one = time.time() - t0
    steps = k * (updates - 1) * args.num_envs * args.num_steps
    return {"seeds": k, "sps_one_program": steps / one, "sps_sequential": steps / seq,
            "ratio": seq / one}  # fmt: skip


def main(args: Args) -> dict:
    res = {"load_before": _load()}
    if args.seeds > 0:
        res["seeds"] = run_seeds(args)
        print("seeds:", json.dumps(res["seeds"]), "| load", _load(), flush=True)
    try:
        import envpool  # noqa: F401
    except ImportError:
        print("envpool is not installed (pip install -e '.[envpool]'): no CartPole-v1 runs")
        return res
    res["ours"] = run_ours(args)
    print("ours:", json.dumps(res["ours"]), "| load", _load(), flush=True)
    if not args.skip_sb3:
        res["sb3"] = run_sb3(args)
        print("sb3: ", json.dumps(res["sb3"]), "| load", _load(), flush=True)
        res["speedup"] = res["ours"]["sps_incl_learning"] / res["sb3"]["sps_incl_learning"]
        print(f"speedup (steps/s incl. learning, ours / SB3): {res['speedup']:.2f}x")
    res["load_after"] = _load()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2)
    return res


if __name__ == "__main__":
    main(tyro.cli(Args))

"""PPO throughput and return on CartPole: our jitted learner vs a minimal PPO and Stable-Baselines3.

    python benchmarks/ppo_throughput.py                      # 500k steps each, 4 envs x 128 steps
    python benchmarks/ppo_throughput.py --num-envs 8 --total-steps 204800 --skip-sb3 --reference-minimal
    python benchmarks/ppo_throughput.py --num-envs 8 --total-steps 204800 --skip-sb3 --seeds 3
    python benchmarks/ppo_throughput.py --num-envs 8 --skip-sb3 --cpu-cores 1   # one core of two

Ours: envpool's XLA interface (`env.xla()`) stepped inside a `lax.scan`, the rollout and the
`agents.learner.Learner.ppo_update` (GAE, 4 epochs x 4 minibatches, Adam, annealed lr) in ONE
jitted, donated call per iteration; envpool's NEXT_STEP auto-reset transition is masked.
`--reference-minimal`: an independent minimal PPO (purejaxrl's shape) on the same envpool
CartPole with the same network and hyper-parameters, trained in rounds alternating with ours in
this process: the ratio is what the learner's generality costs. `--seeds K`: the project's
learner on its JAX CartPole (SI on), K seeds in one program vs K sequential runs vs one seed with
K times the envs (the most batching can give on this machine), alternating rounds.
Baseline: SB3 PPO ("MlpPolicy", 64-64 tanh like ours, same envs x 128 steps, 4 epochs,
4 minibatches, same lr/clip/gamma/lambda/entropy) on its standard DummyVecEnv, in this process.
All report env steps per second including learning, and PPO runs the mean return of the last
20 finished training episodes plus a 20-episode greedy evaluation. Needs the `envpool` extra
and, for the baseline, `torch` + `stable-baselines3`. Prints the machine load beside the figures.
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
    envpool_threads: int = 0
    """envpool worker threads (0: envpool's default)"""
    reference_minimal: bool = False
    """also train an independent minimal PPO on the same envpool CartPole, alternating rounds with ours"""
    round_updates: int = 10
    """updates per round when alternating with --reference-minimal"""
    seeds: int = 0
    """K > 0: also time K seeds in one program (agents.learner, JAX CartPole) against K sequential single-seed runs"""
    cpu_cores: int = 0
    """N > 0: run the whole benchmark (both PPOs, SB3 too) on the first N cores of this process's mask, as agents.ppo --cpu-cores N does (set before JAX starts)"""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _envpool(args: Args, num_envs: int, seed: int):
    import envpool

    # num_threads: envpool's worker pool (0: its default). On both cores 1 vs 0 changed both
    # PPOs alike and within this machine's noise (one run each way, load 3); with --cpu-cores 1,
    # 1 thread was 1.1x (README: its default pool's workers take turns on the one core).
    return envpool.make("CartPole-v1", env_type="gymnasium", num_envs=num_envs,
                        batch_size=num_envs, seed=seed, num_threads=args.envpool_threads)  # fmt: skip


def ours_program(args: Args):
    """The project's learner on envpool's XLA CartPole: a benchmark-local rollout (envpool's
    handle is one batched stateful env, not `agents.learner.JaxEnv`'s functional per-env
    signature) and `Learner.ppo_update` (GAE, epochs x minibatches, Adam, annealed lr) in ONE
    jitted, donated call per update. Returns (iteration, state, greedy_action(state, obs))."""
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
        norm_returns=False, lr_final_frac=0.0,  # the plain PPO the baselines run
    )  # fmt: skip
    envs = _envpool(args, args.num_envs, args.seed)
    handle, _, _, step_env = envs.xla()
    obs0, _ = envs.reset()
    net = networks.MLPActorCritic((2,))
    L = lrn.Learner(
        lrn.LearnerConfig.from_config(cfg),
        None,
        net,
        lrn.make_mesh(1),
        action_dims=(2,),
        hp=lrn.HyperParams.from_config(cfg),
    )
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
        env_steps=jnp.zeros((), jnp.int32), core=L.initial_core(n),
        episode_start=jnp.ones((n,), bool),
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
                               mask=valid.astype(jnp.float32), core=r.core,
                               start=r.episode_start)  # fmt: skip
            r = r.update(key=key, env_state=handle, obs={"state": nobs.astype(jnp.float32)},
                          ep_return=jnp.where(done, 0.0, ret), reward_state=done,
                          episode_id=r.episode_id + done)  # fmt: skip
            return r, (t, jnp.where(done, ret, jnp.nan))

        r, (traj, finished) = jax.lax.scan(step, r, None, cfg.num_steps)
        r, _ = L.ppo_update(r, traj)
        return r, finished

    def greedy(r, o):
        return losses.mode(L.apply(r.params, {"state": o}, None)[0], (2,))[:, 0]

    return jax.jit(iteration, donate_argnums=0), runner, greedy, L.num_updates


def minimal_program(args: Args):
    """An independent minimal PPO (purejaxrl's shape, written here without the project's code):
    the same envpool XLA CartPole, 64-64 tanh actor and critic, the same hyper-parameters and
    annealing, rollout + GAE + 4 epochs x 4 minibatches in one jitted, donated call. The
    reference for what a PPO without the learner's generality (factorised actions, masks,
    traced hyper-parameters, SI hooks) costs on this machine."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    n, t_len = args.num_envs, args.num_steps
    updates = args.total_steps // (n * t_len)
    envs = _envpool(args, n, args.seed)
    handle, _, _, step_env = envs.xla()
    obs0, _ = envs.reset()

    class ActorCritic(nn.Module):
        @nn.compact
        def __call__(self, x):
            def mlp(out, gain):
                h = x
                for _ in range(2):
                    h = nn.tanh(nn.Dense(64, kernel_init=nn.initializers.orthogonal(2**0.5))(h))
                return nn.Dense(out, kernel_init=nn.initializers.orthogonal(gain))(h)

            return mlp(2, 0.01), mlp(1, 1.0)[:, 0]

    net = ActorCritic()
    params = net.init(jax.random.PRNGKey(args.seed), jnp.zeros((1, 4)))
    lr = optax.linear_schedule(2.5e-4, 0.0, updates * 4 * 4)
    tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(lr, eps=1e-5))
    state = (params, tx.init(params), handle, jnp.asarray(obs0, jnp.float32),
             jnp.zeros(n, bool), jnp.zeros(n), jax.random.PRNGKey(args.seed + 1))  # fmt: skip

    def loss_fn(p, batch):
        obs, act, old_logp, adv, ret, mask = batch
        logits, value = net.apply(p, obs)
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, act[:, None], axis=1)[:, 0]
        w = mask / jnp.maximum(mask.sum(), 1.0)
        adv = (adv - (adv * w).sum()) / (
            jnp.sqrt((((adv - (adv * w).sum()) ** 2) * w).sum()) + 1e-8
        )
        ratio = jnp.exp(logp - old_logp)
        pg = -(jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv) * w).sum()
        v = (0.5 * (value - ret) ** 2 * w).sum()
        ent = (-(jnp.exp(logp_all) * logp_all).sum(-1) * w).sum()
        return pg + 0.5 * v - 0.01 * ent

    def iteration(state):
        params, opt, handle, obs, skip, ep_ret, key = state

        def step(c, _):
            handle, obs, skip, ep_ret, key = c
            key, k = jax.random.split(key)
            logits, value = net.apply(params, obs)
            act = jax.random.categorical(k, logits)
            logp = jnp.take_along_axis(jax.nn.log_softmax(logits), act[:, None], axis=1)[:, 0]
            handle, (nobs, rew, term, trunc, _) = step_env(handle, act)
            valid = ~skip  # envpool's NEXT_STEP reset step: masked, as in ours
            done = (term | trunc) & valid
            rew = jnp.where(valid, rew, 0.0).astype(jnp.float32)
            ret = ep_ret + rew
            out = (obs, act, logp, value, rew, done, valid, jnp.where(done, ret, jnp.nan))
            return (handle, nobs.astype(jnp.float32), done, jnp.where(done, 0.0, ret), key), out

        (handle, obs, skip, ep_ret, key), traj = jax.lax.scan(
            step, (handle, obs, skip, ep_ret, key), None, t_len
        )
        o, a, logp, value, rew, done, valid, finished = traj
        _, last_value = net.apply(params, obs)

        def gae(carry, x):
            adv, next_value = carry
            r, v, d = x
            nonterminal = 1.0 - d.astype(jnp.float32)
            delta = r + 0.99 * next_value * nonterminal - v
            adv = delta + 0.99 * 0.95 * nonterminal * adv
            return (adv, v), adv

        _, adv = jax.lax.scan(gae, (jnp.zeros(n), last_value), (rew, value, done), reverse=True)
        flat = lambda x: x.reshape((t_len * n,) + x.shape[2:])  # noqa: E731
        batch = tuple(map(flat, (o, a, logp, adv, adv + value, valid.astype(jnp.float32))))

        def epoch(carry, k):
            perm = jax.random.permutation(k, t_len * n).reshape(4, -1)

            def minibatch(carry, idx):
                p, opt = carry
                grads = jax.grad(loss_fn)(p, tuple(x[idx] for x in batch))
                upd, opt = tx.update(grads, opt, p)
                return (optax.apply_updates(p, upd), opt), None

            return jax.lax.scan(minibatch, carry, perm)[0], None

        key, k = jax.random.split(key)
        (params, opt), _ = jax.lax.scan(epoch, (params, opt), jax.random.split(k, 4))
        return (params, opt, handle, obs, skip, ep_ret, key), finished

    def greedy(state, o):
        return jnp.argmax(net.apply(state[0], o)[0], axis=-1)

    return jax.jit(iteration, donate_argnums=0), state, greedy, updates


def greedy_return(args: Args, greedy, state) -> float:
    """Mean return of 20 greedy episodes on a fresh envpool (host loop)."""
    import jax
    import jax.numpy as jnp

    ev = _envpool(args, 20, args.seed + 99)
    o, _ = ev.reset()
    act = jax.jit(greedy)
    total, done = np.zeros(20), np.zeros(20, bool)
    while not done.all():
        o, r, te, tr, _ = ev.step(np.asarray(act(state, jnp.asarray(o, jnp.float32))))
        total += r * ~done
        done |= te | tr
    return float(total.mean())


def run_envpool(args: Args) -> dict:
    """Train ours (and with --reference-minimal the minimal PPO) for --total-steps each. With the
    reference, the two alternate in rounds of --round-updates updates in this process, so both
    see the same machine load; the ratio is the median of the per-round ratios."""
    import jax

    names = ("ours", "minimal") if args.reference_minimal else ("ours",)
    makers = {"ours": ours_program, "minimal": minimal_program}
    progs, out = {}, {}
    for name in names:
        fn, state, greedy, updates = makers[name](args)
        t0 = time.time()
        state, fin = fn(state)
        jax.block_until_ready(state)
        progs[name] = {"fn": fn, "state": state, "greedy": greedy, "left": updates - 1,
                       "returns": [], "wall": [], "steps": []}  # fmt: skip
        out[name] = {"compile_s": time.time() - t0}
    per_update = args.num_envs * args.num_steps
    while any(p["left"] > 0 for p in progs.values()):
        for p in progs.values():
            k = min(args.round_updates, p["left"])
            if k <= 0:
                continue
            state, t0 = p["state"], time.time()
            for _ in range(k):
                state, fin = p["fn"](state)
                f = np.asarray(fin)  # read every update, as a training loop logs
                p["returns"].extend(f[~np.isnan(f)].tolist())
            jax.block_until_ready(state)
            p["wall"].append(time.time() - t0)
            p["steps"].append(k * per_update)
            p["state"], p["left"] = state, p["left"] - k
    for name, p in progs.items():
        out[name].update({
            "sps_incl_learning": sum(p["steps"]) / sum(p["wall"]),
            "train_return_last20": float(np.mean(p["returns"][-20:])) if p["returns"] else float("nan"),
            "eval_return_greedy20": greedy_return(args, p["greedy"], p["state"]),
            "env_steps": sum(p["steps"]) + per_update,
        })  # fmt: skip
    if args.reference_minimal:
        rounds = [
            (s1 / w1) / (s2 / w2)
            for s1, w1, s2, w2 in zip(progs["ours"]["steps"], progs["ours"]["wall"],
                                      progs["minimal"]["steps"], progs["minimal"]["wall"])
        ]  # fmt: skip
        out["ours_over_minimal"] = float(np.median(rounds))
    return out


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
    """The project's own learner on its JAX CartPole (`agents.testing`, SI phase after every
    update): K seeds stacked and vmapped in one jitted program ("one_program") against the
    single-seed program run for each of the K seeds in turn ("sequential"), and, as the ceiling
    of what batching can give on this machine, ONE seed with K times the envs ("k_envs": the
    same env steps per update as the K seeds, no seed axis). The three alternate in rounds of
    --round-updates updates (compilation excluded), so they share the machine's load; ratios
    are medians of the per-round ratios."""
    import jax

    from agents import learner as lrn
    from agents.build import build
    from agents.ppo import PPOConfig

    k, n, t_len = args.seeds, args.num_envs, args.num_steps

    def learner(num_envs):
        cfg = PPOConfig(task="cartpole", num_envs=num_envs, num_steps=t_len,
                        total_steps=max(args.total_steps // (num_envs * t_len), 1) * num_envs * t_len,
                        smooth_coef=0.0, si_every=1, num_devices=1, unroll=False, progress=False,
                        core_size=0)  # fmt: skip
        return build(cfg).learner, lrn.HyperParams.from_config(cfg)

    L, hp = learner(n)
    wide, hp_wide = learner(k * n)

    def run(lr, h, runner, seeds):
        runner, _ = lr.iteration(runner, h, seeds=seeds)
        runner, _ = lr.si_phase(runner, h, seeds=seeds)
        return runner

    singles = [L.init_sharded(jax.random.PRNGKey(s)) for s in range(k)]
    stacked = jax.tree.map(lambda *x: jax.numpy.stack(x), *[jax.device_get(r) for r in singles])
    stacked = jax.device_put(stacked, lrn.runner_shardings(stacked, L.mesh, seeds=True))
    one_wide = wide.init_sharded(jax.random.PRNGKey(0))
    singles = jax.block_until_ready([run(L, hp, r, False) for r in singles])  # 1st: compiles
    stacked = jax.block_until_ready(run(L, hp, stacked, True))
    one_wide = jax.block_until_ready(run(wide, hp_wide, one_wide, False))
    steps = k * n * t_len * args.round_updates  # per round, the same for all three
    rounds = max(1, (args.total_steps // (n * t_len) - 1) // args.round_updates)
    sps = {"sequential": [], "one_program": [], "k_envs": []}
    for _ in range(rounds):
        t0 = time.time()
        for i in range(k):
            for _ in range(args.round_updates):
                singles[i] = run(L, hp, singles[i], False)
        jax.block_until_ready(singles)
        sps["sequential"].append(steps / (time.time() - t0))
        t0 = time.time()
        for _ in range(args.round_updates):
            stacked = run(L, hp, stacked, True)
        jax.block_until_ready(stacked)
        sps["one_program"].append(steps / (time.time() - t0))
        t0 = time.time()
        for _ in range(args.round_updates):
            one_wide = run(wide, hp_wide, one_wide, False)
        jax.block_until_ready(one_wide)
        sps["k_envs"].append(steps / (time.time() - t0))
    # the timed programs compute the same runs: seed i of the stacked runner is single run i
    gap = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b)[i])))
        for i in range(k)
        for a, b in zip(jax.tree.leaves(singles[i].params), jax.tree.leaves(stacked.params))
    )
    ratio = lambda a, b: float(np.median(np.array(sps[a]) / np.array(sps[b])))  # noqa: E731
    return {"seeds": k, "rounds": rounds, "max_param_gap_seed_vs_single": gap,
            **{f"sps_{name}": float(np.median(v)) for name, v in sps.items()},
            "one_program_over_sequential": ratio("one_program", "sequential"),
            "k_envs_over_sequential": ratio("k_envs", "sequential")}  # fmt: skip


def main(args: Args) -> dict:
    res = {"load_before": _load()}
    if args.cpu_cores:
        from envs.voxel import parallel

        res["cpu_cores"] = list(parallel.restrict_cores(args.cpu_cores))
        print(f"running on CPU cores {res['cpu_cores']}", flush=True)
    if args.seeds > 0:
        res["seeds"] = run_seeds(args)
        print("seeds:", json.dumps(res["seeds"]), "| load", _load(), flush=True)
    try:
        import envpool  # noqa: F401
    except ImportError:
        print("envpool is not installed (pip install -e '.[envpool]'): no CartPole-v1 runs")
        return res
    res.update(run_envpool(args))
    for name in ("ours", "minimal"):
        if name in res:
            print(f"{name}:", json.dumps(res[name]), "| load", _load(), flush=True)
    if "ours_over_minimal" in res:
        print(f"ours / minimal PPO (median of alternating rounds): {res['ours_over_minimal']:.2f}x")
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

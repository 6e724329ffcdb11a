"""Host-stepped (Sebulba-style) driver for envs that are not JAX: MineDojo's Java simulator through
`envs.make_vector(..., backend="minedojo")`, or any Gymnasium `VectorEnv`.

The env batch is stepped on the host; every step runs ONE jitted, batched inference call
(policy, plus frozen features through `featurize` when given) and one jitted bookkeeping call
(self-imitation episode store); after `num_steps` steps the `[T, N]` batch goes to the same
jitted, data-parallel PPO update as the Anakin driver (`Learner.update`), and every `si_every`
updates to the same SI phase.

Gymnasium autoreset modes: SAME_STEP needs nothing; NEXT_STEP (the Gymnasium 1.x default) returns
a reset observation on the step *after* an episode ended, ignoring that step's action, so that
transition gets `mask = 0` and is excluded from every loss (the env's real last transition keeps
`done = True`, which stops the GAE bootstrap).

    driver = HostDriver(cfg, vec_env, network, action_dims=(2,), policy_obs=lambda o: {"state": o})
    runner = driver.init(jax.random.PRNGKey(0))
    for _ in range(n):
        runner, metrics = driver.iteration(runner)
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from agents import learner as lrn
from agents import losses
from agents import self_imitation as si


class HostDriver:
    """PPO + SI on a Gymnasium VectorEnv (actor on the host, learner jitted over the mesh)."""

    def __init__(
        self,
        cfg,
        vec_env: gym.vector.VectorEnv,
        network,
        action_dims: tuple[int, ...],
        policy_obs: Callable,
        to_env_action: Callable = lambda a: a,
        reward_fn: Callable | None = None,
        success_fn: Callable | None = None,
        mesh=None,
        task_ids=None,
        num_tasks: int = 1,
        task_conditioned: bool = False,
    ):
        if vec_env.num_envs != cfg.num_envs:
            raise ValueError(f"vec_env has {vec_env.num_envs} envs but cfg.num_envs={cfg.num_envs}")
        self.cfg = cfg
        self.env = vec_env
        self.action_dims = tuple(action_dims)
        self.policy_obs = policy_obs
        self.to_env_action = to_env_action
        self.reward_fn = reward_fn or (lambda r, info: r)
        self.success_fn = success_fn or (
            lambda info, n: np.asarray(info.get("success", np.zeros(n, bool)), bool)
        )
        # per-env task index (episode stats, SI balancing) and, task_conditioned, obs["task_id"]
        self.task_ids = (
            np.zeros(cfg.num_envs, np.int32) if task_ids is None else np.asarray(task_ids, np.int32)
        )
        self.num_tasks = int(num_tasks)
        self.task_conditioned = task_conditioned
        self.learner = lrn.Learner(cfg, None, network, mesh, action_dims=self.action_dims,
                                   num_tasks=self.num_tasks)  # fmt: skip
        mode = vec_env.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
        self.next_step_reset = str(mode).endswith("NEXT_STEP") or mode == "next_step"
        L = self.learner
        dims = self.action_dims

        @jax.jit
        def act(params, obs, prev, task_id, key):
            pobs = self._policy_obs(obs, task_id)
            logits, value = L.apply(params, pobs, prev)
            a = losses.sample(key, logits, dims)
            return pobs, a, losses.log_prob(logits, a, dims), value

        @jax.jit
        def book(buf, store, pobs, prev, action, done, ret, success, task_id, valid):
            # an ignored (NEXT_STEP reset) step is written but not kept: its pointer stays
            store = si.record_step(store, pobs, prev, action).replace(
                ptr=jnp.where(valid, store.ptr + 1, store.ptr)
            )
            return si.finish_episodes(buf, store, done, ret, success, task_id, cfg.si_min_return)

        self._act, self._book = act, book
        self._obs = None
        self._autoreset = np.zeros(cfg.num_envs, bool)

    def _policy_obs(self, obs, task_id):
        pobs = jax.vmap(self.policy_obs)(obs)
        if self.task_conditioned:
            pobs["task_id"] = jnp.array(task_id)  # a copy: the runner's own is donated too
        return pobs

    def init(self, key) -> lrn.Runner:
        cfg, n, k = self.cfg, self.cfg.num_envs, len(self.action_dims)
        k_net, k_run = jax.random.split(key)
        obs, _ = self.env.reset(seed=int(jax.random.randint(k_run, (), 0, 2**31 - 1)))
        self._obs = obs
        task_id = jnp.asarray(self.task_ids)
        pobs = self._policy_obs(jax.tree.map(jnp.asarray, obs), task_id)
        params = self.learner.init_params(k_net, pobs)
        one = jax.tree.map(lambda x: x[0], pobs)
        runner = lrn.Runner(
            params=params,
            opt_state=self.learner.tx.init(params),
            si_opt_state=self.learner.si_tx.init(params),
            env_params=jnp.zeros((n,)),
            env_state=jnp.zeros((n,)),
            obs=pobs,
            prev_action=jnp.zeros((n, k), jnp.int32),
            ep_return=jnp.zeros((n,), jnp.float32),
            ep_length=jnp.zeros((n,), jnp.int32),
            episode_id=jnp.zeros((n,), jnp.int32),
            task_id=task_id,
            reward_state=jnp.zeros((n,)),
            si_buffer=si.init_buffer(cfg.si_capacity, cfg.si_max_len, one, k),
            si_store=si.init_store(n, cfg.si_max_len, one, k),
            key=k_run,
            update_step=jnp.zeros((), jnp.int32),
            env_steps=jnp.zeros((), jnp.int32),
        )
        return self.learner.shard(runner)

    def rollout(self, runner: lrn.Runner):
        """`num_steps` host steps -> (runner with new obs/SI state, Transition [T, N], episode stats)."""
        cfg, n = self.cfg, self.cfg.num_envs
        prev = np.asarray(runner.prev_action)
        ep_ret = np.asarray(runner.ep_return, np.float64)
        ep_len = np.asarray(runner.ep_length)
        ep_id = np.asarray(runner.episode_id)
        buf, store = runner.si_buffer, runner.si_store
        key = runner.key
        steps = []
        nt, tid = self.num_tasks, self.task_ids
        stats = {k: np.zeros(nt) for k in ("episodes", "return_sum", "length_sum", "success_sum")}
        for _ in range(cfg.num_steps):
            key, k_act = jax.random.split(key)
            obs = jax.tree.map(jnp.asarray, self._obs)
            pobs, a, logp, value = self._act(
                runner.params, obs, jnp.asarray(prev), runner.task_id, k_act
            )
            a_np = np.asarray(a)
            next_obs, r, term, trunc, info = self.env.step(self.to_env_action(a_np))
            valid = ~self._autoreset
            done = (np.asarray(term) | np.asarray(trunc)) & valid
            reward = np.where(
                valid, np.asarray(self.reward_fn(np.asarray(r), info), np.float32), 0.0
            )
            success = self.success_fn(info, n) & done
            ep_ret = ep_ret + reward
            buf, store = self._book(buf, store, pobs, jnp.asarray(prev), a, jnp.asarray(done),
                                    jnp.asarray(ep_ret, jnp.float32), jnp.asarray(success),
                                    runner.task_id, jnp.asarray(valid))  # fmt: skip
            steps.append(dict(obs=pobs, prev_action=prev.copy(), action=a_np, logp=logp,
                              value=value, reward=reward.astype(np.float32), done=done,
                              episode_id=ep_id.copy(), mask=valid.astype(np.float32)))  # fmt: skip
            per_task = lambda x: np.bincount(tid, weights=x, minlength=nt)  # noqa: E731
            stats["episodes"] += per_task(done.astype(np.float64))
            stats["return_sum"] += per_task(np.where(done, ep_ret, 0.0))
            stats["length_sum"] += per_task(np.where(done, ep_len + 1, 0).astype(np.float64))
            stats["success_sum"] += per_task(success.astype(np.float64))
            ep_len = np.where(done, 0, ep_len + valid)
            ep_ret = np.where(done, 0.0, ep_ret)
            ep_id = ep_id + done
            prev = np.where((done | ~valid)[:, None], 0, a_np)
            self._autoreset = done if self.next_step_reset else np.zeros(n, bool)
            self._obs = next_obs
        traj = lrn.Transition(**{
            k: (jax.tree.map(lambda *xs: jnp.stack(xs), *[s[k] for s in steps]) if k == "obs"
                else jnp.stack([jnp.asarray(s[k]) for s in steps]))
            for k in steps[0]
        })  # fmt: skip
        last_obs = self._policy_obs(jax.tree.map(jnp.asarray, self._obs), runner.task_id)
        runner = runner.replace(
            obs=last_obs, prev_action=jnp.asarray(prev, jnp.int32),
            ep_return=jnp.asarray(ep_ret, jnp.float32), ep_length=jnp.asarray(ep_len, jnp.int32),
            episode_id=jnp.asarray(ep_id, jnp.int32), si_buffer=buf, si_store=store, key=key,
            env_steps=runner.env_steps + n * cfg.num_steps,
        )  # fmt: skip
        return self.learner.shard(runner), traj, stats

    def adopt(self, restored: lrn.Runner, fresh: lrn.Runner) -> lrn.Runner:
        """Continue a restored runner (params, optimizers, SI buffer, RNG, counters) on the envs
        as `init` just reset them: simulator state is not checkpointed, so the episodes in flight
        at the checkpoint are dropped (their partial SI trajectories too)."""
        self._autoreset = np.zeros(self.cfg.num_envs, bool)
        return self.learner.shard(restored.replace(
            obs=fresh.obs, prev_action=fresh.prev_action, ep_return=fresh.ep_return,
            ep_length=fresh.ep_length, si_store=fresh.si_store, task_id=fresh.task_id,
            episode_id=restored.episode_id + 1,
        ))  # fmt: skip

    def iteration(self, runner: lrn.Runner):
        runner, traj, stats = self.rollout(runner)
        runner, metrics = self.learner.update(runner, traj)
        metrics = {**jax.device_get(metrics), **stats}
        if self.cfg.si_every > 0 and int(runner.update_step) % self.cfg.si_every == 0:
            runner, msi = self.learner.si_phase(runner)
            metrics.update(jax.device_get(msi))
        return runner, metrics

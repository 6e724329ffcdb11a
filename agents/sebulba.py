"""Host-stepped (Sebulba-style) driver for envs that are not JAX: MineDojo's Java simulator through
`envs.make_vector(..., backend="minedojo")`, or any Gymnasium `VectorEnv`.

The env batch is stepped on the host; every step runs ONE jitted, batched inference call
(observation -> policy inputs, frozen features through `hooks.featurize` when given, the reward
hook, the policy) and one jitted bookkeeping call (self-imitation episode store); after
`num_steps` steps the `[T, N]` batch goes to the same jitted, data-parallel PPO update as the
Anakin driver (`Learner.update`), and every `si_every` updates to the same SI phase.

Devices, as Cleanba: the per-step calls run on the learner's actor mesh (`--actor-devices`, the
envs split along their axis, a copy of the parameters replicated there at the start of each
rollout), the update and the SI phase on its learner mesh (`--learner-devices`); the `[T, N]`
batch is copied across. With one mesh (one device, or the same devices for both) every call
runs on it.

Gymnasium autoreset modes: SAME_STEP needs nothing; NEXT_STEP (the Gymnasium 1.x default) returns
a reset observation on the step *after* an episode ended, ignoring that step's action, so that
transition gets `mask = 0` and is excluded from every loss (the env's real last transition keeps
`done = True`, which stops the GAE bootstrap).

Frozen features and a learned reward (`hooks`, `agents.learner.RewardHooks`, e.g. MineCLIP from
`agents.mineclip_hooks.host_mineclip_hooks`): every frame is featurized exactly once, in the inference
call of the step that acts on it, and that call also pushes it through `hooks.step`, which
gives the reward term of the transition that *produced* the frame. So a step's reward is
complete one call later (the last step of a rollout is completed by one featurize-only call,
whose features become `runner.obs`, the next rollout's first input: no frame is encoded twice).
The hook sees `done = skip`, True where the frame follows an episode end or is an episode's
first frame, and must then give no term and restart its window there (`mineclip_hooks.mineclip_hooks`
does: no MineCLIP term on a done step, exactly as on the device path). Consequences:

- SAME_STEP: the frame of a done step is the next episode's reset frame: no term, it refills
  the window (the on-device rule).
- NEXT_STEP: the done step's frame is the real terminal frame: no term either (the same rule
  on both paths, so rewards are comparable); it refills the window, and the reset frame
  returned by the following ignored step refills it again, with no term (that transition is
  masked): nothing of the ended episode reaches the next one's window.
- The reset frames of `init` go into the window too, so every episode's window starts at its
  own reset frame (on the device path the first episode of each env starts at its second frame).

The policy inputs (features, not frames) are what the SI buffer stores, as on the device path.

Several processes (`--distributed`, one per host): each process steps its own share of the env
axis on its own simulator workers (`vec_env` holds `num_envs / P` envs, process i the global env
ids `[i * num_envs / P, (i + 1) * num_envs / P)`, `mineclip_jax.distributed.process_share`), and
every per-step call is one global program over the one mesh of all processes' devices: the
host's frames enter it as its rows of a global array (`jax.make_array_from_process_local_data`)
and the actions come back as this process's rows. So the SI buffer is global (each call's
episode store gathers every host's finished episodes into the one replicated buffer), the
update is the one data-parallel `jit`, and a run on P processes x D devices computes what one
process with P·D devices computes, given the same simulators (env i reset with `seed + i`).
The episode statistics are summed over the processes once per rollout.

    driver = HostDriver(lrn.LearnerConfig.from_config(cfg), vec_env, network, action_dims=(2,),
                        policy_obs=lambda o: {"state": o}, hp=lrn.HyperParams.from_config(cfg),
                        si_every=cfg.si_every)
    runner = driver.init(jax.random.PRNGKey(0))
    for _ in range(n):
        runner, metrics = driver.iteration(runner)
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from agents import episodes, losses
from agents import learner as lrn
from agents import self_imitation as si
from mineclip_jax.distributed import process_share


class HostDriver:
    """PPO + SI on a Gymnasium VectorEnv (actor on the host, learner jitted over the mesh).

    `cfg` is the learner's static config (`agents.learner.LearnerConfig`), `hp` its default
    hyper-parameters (`iteration` and `rollout` also take their own), `si_every` the number of
    updates between SI phases (0: none).

    `reward_fn(env_reward, info) -> [N]` is the host-side reward (manual / sparse + success
    bonus); with `hooks` (`RewardHooks(featurize, init, step)`) and their replicated `consts`,
    `hooks.featurize(consts, obs)` turns the policy inputs into features once per frame and
    `hooks.step(consts, rstate, obs, skip, zeros [N], {}) -> (rstate, extra [N])` adds a learned
    reward term (see the module docstring for when `skip` is True)."""

    def __init__(
        self,
        cfg: lrn.LearnerConfig,
        vec_env: gym.vector.VectorEnv,
        network,
        action_dims: tuple[int, ...],
        policy_obs: Callable,
        to_env_action: Callable = lambda a: a,
        reward_fn: Callable | None = None,
        success_fn: Callable | None = None,
        mesh=None,
        actor_mesh=None,
        task_ids=None,
        num_tasks: int = 1,
        task_conditioned: bool = False,
        hooks: lrn.RewardHooks | None = None,
        consts=None,
        noop_action: tuple[int, ...] | None = None,
        hp: lrn.HyperParams | None = None,
        si_every: int = 0,
    ):
        # this process's rows of the env axis (all of them in a single process)
        self.local = process_share(cfg.num_envs, "num_envs")
        self.num_local = self.local.stop - self.local.start
        self.multi = jax.process_count() > 1
        if vec_env.num_envs != self.num_local:
            share = (f"this process's share ({self.num_local} of cfg.num_envs={cfg.num_envs} over "
                     f"{jax.process_count()} processes)" if self.multi
                     else f"cfg.num_envs={cfg.num_envs}")  # fmt: skip
            raise ValueError(f"vec_env has {vec_env.num_envs} envs but {share}")
        self.static = cfg
        self.si_every = int(si_every)
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
        self.hooks = hooks or lrn.RewardHooks()
        self.learner = lrn.Learner(cfg, None, network, mesh, hooks=self.hooks, consts=consts,
                                   actor_mesh=actor_mesh, action_dims=self.action_dims,
                                   num_tasks=self.num_tasks, noop_action=noop_action,
                                   hp=hp)  # fmt: skip
        # MineCLIP params and prompt features: on the actor devices once, replicated, passed to
        # every inference call
        self.consts = self.learner.actor_consts()
        mode = vec_env.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
        self.next_step_reset = str(mode).endswith("NEXT_STEP") or mode == "next_step"
        self.hp = self.learner.hp
        L, hooks = self.learner, self.hooks
        dims, n = self.action_dims, cfg.num_envs

        def observe(consts, rstate, obs, task_id, skip):
            """Raw obs -> policy inputs (features computed here, once) + the reward term of
            the transition that produced the frame."""
            pobs = self._policy_obs(obs, task_id)
            if hooks.featurize is not None:
                pobs = hooks.featurize(consts, pobs)
            zero = jnp.zeros((n,), jnp.float32)
            if hooks.step is None:
                return pobs, rstate, zero
            rstate, extra = hooks.step(consts, rstate, pobs, skip, zero, {})
            return pobs, rstate, jnp.where(skip, 0.0, extra).astype(jnp.float32)

        def act(params, pobs, prev, core, start, key):
            logits, value, core = L.step_policy(params, pobs, prev, core, start)
            a = losses.sample(key, logits, dims)
            return a, losses.log_prob(logits, a, dims), value, core

        def observe_act(params, consts, rstate, obs, task_id, skip, prev, core, start, key):
            pobs, rstate, extra = observe(consts, rstate, obs, task_id, skip)
            return (pobs, rstate, extra, *act(params, pobs, prev, core, start, key))

        # Every per-step call runs on the actor mesh (the learner's mesh when there is one):
        # per-env arguments split along the env axis, parameters / consts / keys replicated.
        am = self.learner.actor_mesh
        e, r = NamedSharding(am, P("data")), NamedSharding(am, P())
        self._rep = r

        def on_actors(fn, in_sh, out_sh):
            return jax.jit(fn, in_shardings=in_sh, out_shardings=out_sh)

        @functools.partial(on_actors, in_sh=(r, e, e, e, e, e, e, e, e, e, e, e, r), out_sh=(r, e))
        def book(buf, store, pobs, prev, action, core, start, done, ret, success, task_id, valid,
                 min_return):  # fmt: skip
            # an ignored (NEXT_STEP reset) step is written but not kept: its pointer stays
            acted_core = jnp.where(start[:, None], 0.0, core)  # the carry the step saw
            store = si.record_step(store, pobs, prev, action, acted_core).replace(
                ptr=jnp.where(valid, store.ptr + 1, store.ptr)
            )
            return si.finish_episodes(buf, store, done, ret, success, task_id, min_return,
                                      num_tasks=self.num_tasks,
                                      balance_tasks=self.static.si_balance_tasks)  # fmt: skip

        self._observe = on_actors(observe, (r, e, e, e, e), e)
        self._act = on_actors(act, (r, e, e, e, e, r), e)
        self._observe_act = on_actors(observe_act, (r, r, e, e, e, e, e, e, e, r), e)
        self._book = book
        self._obs = None
        self._autoreset = np.zeros(self.num_local, bool)

    # Host arrays hold this process's envs; the jitted calls take and give global arrays.
    def _put(self, x, time: bool = False):
        """This process's rows `[n_local, ...]` (`[T, n_local, ...]` with `time`) -> the global
        array over every process's envs (a plain device array in a single process)."""
        if not self.multi:
            return jnp.asarray(x)
        x = np.asarray(x)
        spec = P(None, "data") if time else P("data")
        sharding = NamedSharding(self.learner.actor_mesh, spec)
        axis = int(time)
        shape = (*x.shape[:axis], self.static.num_envs, *x.shape[axis + 1 :])
        return jax.make_array_from_process_local_data(sharding, x, shape)

    def _host(self, x) -> np.ndarray:
        """A global per-env array (env axis first) -> this process's rows, on the host."""
        if not self.multi:
            return np.asarray(x)
        parts = {}
        for shard in x.addressable_shards:  # this process's devices hold its contiguous rows
            parts.setdefault(shard.index[0].start or 0, shard.data)
        rows = np.concatenate([np.asarray(parts[k]) for k in sorted(parts)])
        if len(rows) != self.num_local:
            raise RuntimeError(
                f"expected this process's {self.num_local} env rows, got {len(rows)}"
            )
        return rows

    def _global_totals(self, stats: dict) -> dict:
        """Per-task episode totals summed over the processes (metrics are global)."""
        if not self.multi:
            return stats
        from jax.experimental import multihost_utils

        keys = sorted(stats)
        local = np.stack([np.asarray(stats[k], np.float64) for k in keys])
        total = np.asarray(multihost_utils.process_allgather(local)).sum(0)
        return dict(zip(keys, total, strict=True))

    def _policy_obs(self, obs, task_id):
        pobs = jax.vmap(self.policy_obs)(obs)
        if self.task_conditioned:
            pobs["task_id"] = jnp.array(task_id)  # a copy: the runner's own is donated too
        return pobs

    def init(self, key) -> lrn.Runner:
        """Reset the envs and build the runner with the learner's one initialisation
        (`Learner.new_runner`; no env fields: the simulators live in the vector env)."""
        n = self.static.num_envs
        k_net, k_run = jax.random.split(key)
        # env i (global index) gets seed + i, whichever process steps it
        seed = int(jax.random.randint(k_run, (), 0, 2**31 - 1)) + self.local.start
        obs, _ = self.env.reset(seed=seed)
        self._obs = obs
        self._autoreset = np.zeros(self.num_local, bool)
        task_id = jnp.asarray(self.task_ids)
        rstate = None
        if self.hooks.init is not None:
            rstate = self.hooks.init(self.consts, n, self.task_ids)
        # the reset frames open every env's reward window (skip: no reward term)
        pobs, rstate, _ = self._observe(self.consts, rstate, jax.tree.map(self._put, obs),
                                        task_id, jnp.ones((n,), bool))  # fmt: skip
        return self.learner.shard(self.learner.new_runner(k_net, k_run, pobs, task_id, rstate))

    def rollout(self, runner: lrn.Runner, hp: lrn.HyperParams | None = None):
        """`num_steps` host steps -> (runner with new obs/SI state, Transition [T, N], episode stats).

        Step t acts on `runner.obs` (t = 0) or on the frame step t - 1 returned, featurized in
        the same call that completes step t - 1's reward; after the loop one featurize-only call
        completes the last step and gives the next rollout's first policy inputs."""
        hp = self.hp if hp is None else hp
        n, num_steps = self.num_local, self.static.num_steps
        noop = np.asarray(self.learner.noop_action)
        prev = self._host(runner.prev_action)
        s = dict(ep_ret=self._host(runner.ep_return).astype(np.float32),
                 ep_len=self._host(runner.ep_length), ep_id=self._host(runner.episode_id),
                 buf=runner.si_buffer, store=runner.si_store)  # fmt: skip
        key, rstate, pobs = runner.key, runner.reward_state, runner.obs
        params = runner.params
        if self.learner.split:  # this rollout's copy of the parameters and key on the actors
            params, key = jax.device_put((params, key), self._rep, may_alias=False)
        steps = []
        nt, tid = self.num_tasks, self.task_ids[self.local]
        stats = {k: np.zeros(nt) for k in ("episodes", "return_sum", "length_sum", "success_sum")}

        def finish(p, extra):
            """Step `p` once the frame it produced was observed: reward, SI, episode stats."""
            valid, done = p["valid"], p["done"]
            reward = (p["reward"] + np.where(p["skip"], 0.0, self._host(extra))).astype(np.float32)
            s["ep_ret"], s["ep_len"], fin = episodes.step_episodes(
                s["ep_ret"], s["ep_len"], reward, done, valid
            )
            put = self._put
            s["buf"], s["store"] = self._book(
                s["buf"], s["store"], p["pobs"], put(p["prev"]), p["a"], p["core"],
                put(p["start"]), put(done),
                put(np.asarray(fin["return"], np.float32)), put(p["success"]), runner.task_id,
                put(valid), hp.si_min_return,
            )  # fmt: skip
            steps.append(dict(obs=p["pobs"], prev_action=p["prev"], action=p["a_np"],
                              logp=p["logp"], value=p["value"], reward=reward, done=done,
                              episode_id=s["ep_id"].copy(), mask=valid.astype(np.float32),
                              core=p["core"], start=p["start"]))  # fmt: skip
            totals = episodes.per_task_totals(fin["done"], fin["return"], fin["length"],
                                              p["success"], tid, nt)  # fmt: skip
            for k in stats:
                stats[k] += totals[k]
            s["ep_id"] = s["ep_id"] + done

        pending, skip = None, None
        # the recurrent carry (on the actors) and whether each env's observation opens an episode
        core, start = runner.core, self._host(runner.episode_start)
        for t in range(num_steps):
            key, k_act = jax.random.split(key)
            acted_on = core
            if t == 0:  # the runner's obs are this frame's policy inputs already
                a, logp, value, core = self._act(params, pobs, self._put(prev), core,
                                                 self._put(start), k_act)  # fmt: skip
            else:
                pobs, rstate, extra, a, logp, value, core = self._observe_act(
                    params, self.consts, rstate, jax.tree.map(self._put, self._obs),
                    runner.task_id, self._put(skip), self._put(prev), core, self._put(start),
                    k_act,
                )  # fmt: skip
                finish(pending, extra)
            a_np = self._host(a)
            next_obs, r, term, trunc, info = self.env.step(self.to_env_action(a_np))
            valid = ~self._autoreset
            done = (np.asarray(term) | np.asarray(trunc)) & valid
            reward = np.where(
                valid, np.asarray(self.reward_fn(np.asarray(r), info), np.float32), 0.0
            )
            success = self.success_fn(info, n) & done
            # the frame just returned gets no learned-reward term and restarts the window
            skip = done | ~valid
            pending = dict(pobs=pobs, prev=prev.copy(), a=a, a_np=a_np, logp=logp, value=value,
                           reward=reward, done=done, valid=valid, success=success,
                           skip=skip, core=acted_on, start=start)  # fmt: skip
            # the next observation opens an episode after an end, and after an ignored step
            # (NEXT_STEP mode: the reset observation comes then)
            start = skip
            prev = np.where((done | ~valid)[:, None], noop, a_np)
            self._autoreset = done if self.next_step_reset else np.zeros(n, bool)
            self._obs = next_obs
        last_obs, rstate, extra = self._observe(
            self.consts, rstate, jax.tree.map(self._put, self._obs), runner.task_id,
            self._put(skip),
        )  # fmt: skip
        finish(pending, extra)
        on_device = ("obs", "logp", "value", "core")  # the per-step calls' outputs (global)

        def stack(k):
            xs = [x[k] for x in steps]
            if k == "obs":
                return jax.tree.map(lambda *leaves: jnp.stack(leaves), *xs)
            if k in on_device or not self.multi:
                return jnp.stack([jnp.asarray(x) for x in xs])
            return self._put(np.stack(xs), time=True)  # this process's [T, n_local] rows

        traj = lrn.Transition(**{k: stack(k) for k in steps[0]})
        runner = runner.update(
            obs=last_obs, prev_action=self._put(prev.astype(np.int32)),
            ep_return=self._put(s["ep_ret"].astype(np.float32)),
            ep_length=self._put(s["ep_len"].astype(np.int32)),
            episode_id=self._put(s["ep_id"].astype(np.int32)), reward_state=rstate,
            core=core, episode_start=self._put(start),
            si_buffer=s["buf"], si_store=s["store"], key=key,
            env_steps=runner.env_steps + self.static.num_envs * num_steps,
        )  # fmt: skip
        return self.learner.shard(runner), traj, self._global_totals(stats)

    def adopt(self, restored: lrn.Runner, fresh: lrn.Runner) -> lrn.Runner:
        """Continue a restored runner (params, optimizers, SI buffer, RNG, counters) on the envs
        as `init` just reset them: simulator state is not checkpointed, so the episodes in flight
        at the checkpoint are dropped (their partial SI trajectories and reward windows too)."""
        self._autoreset = np.zeros(self.num_local, bool)
        return self.learner.shard(restored.update(
            obs=fresh.obs, prev_action=fresh.prev_action, ep_return=fresh.ep_return,
            ep_length=fresh.ep_length, si_store=fresh.si_store, task_id=fresh.task_id,
            reward_state=fresh.reward_state, episode_id=restored.episode_id + 1,
            core=fresh.core, episode_start=fresh.episode_start,
        ))  # fmt: skip

    def iteration(self, runner: lrn.Runner, hp: lrn.HyperParams | None = None):
        hp = self.hp if hp is None else hp
        runner, traj, stats = self.rollout(runner, hp)
        runner, metrics = self.learner.update(runner, traj, hp)
        metrics = {**jax.device_get(metrics), **stats}
        if self.si_every > 0 and int(runner.update_step) % self.si_every == 0:
            runner, msi = self.learner.si_phase(runner, hp)
            metrics.update(jax.device_get(msi))
        return runner, metrics

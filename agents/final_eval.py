"""The final evaluation of `python -m agents.ppo`: the run's untrained policy (the parameters
`init` produced for its seed) and its trained one play the same episodes; their success rates
(95% Wilson intervals) and mean returns are printed side by side and stored in summary.json.

    scores = final_eval.evaluate_policies(built, {"untrained": p0, "trained": p1}, episodes=32,
                                          seed=0, labels=("hunt a cow",))
    for line in final_eval.describe(scores): print(line)

Paired: every episode is one env of a batch of `episodes x tasks` envs, reset from one key
derived from the run's seed (apart from the keys training uses), and the env's per-step keys do
not depend on the actions, so both policies start from the same worlds and meet the same
randomness: the policy is the only difference. Actions are sampled from the policy, as
`agents.evaluate` does by default.

It runs on one device, as one jitted `lax.while_loop` over the run's own `JaxEnv` (the same
observation adapter, target features, MineCLIP features and training reward), until every env
has finished its first episode. Returns and successes are counted by `agents.episodes`, the
intervals by `envs.tasks.evaluation.wilson_interval`. `agents.evaluate` remains the evaluator
of saved runs (Gymnasium envs of any backend, videos, Creative judging); this is the in-process
check at the end of training, on the on-device (`--backend jax`) envs.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from agents import learner as lrn
from agents import losses
from agents.episodes import env_success, per_task_totals, step_episodes
from envs.tasks.evaluation import SuccessCount

EVAL_KEY_SALT = 0xE7A1
"""The evaluation episodes' key is `fold_in(PRNGKey(seed), EVAL_KEY_SALT)`: other worlds than
the training's first ones (`PRNGKey(seed)`), the same for every evaluation of the run."""

ACTIONS = "sampled"  # what the summary records: actions drawn from the policy, not its mode


@dataclasses.dataclass(frozen=True)
class Score(SuccessCount):
    """One policy on one task: `successes` of `episodes` with their 95% Wilson interval."""

    episodes: int
    successes: int
    mean_return: float
    mean_length: float

    def to_json(self) -> dict:
        low, high = self.interval
        return {"episodes": self.episodes, "successes": self.successes,
                "success_rate": self.success_rate, "ci95": [low, high],
                "mean_return": self.mean_return, "mean_length": self.mean_length}  # fmt: skip


def eval_key(seed: int) -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(seed), EVAL_KEY_SALT)


def step_limit(env: lrn.JaxEnv, env_params) -> int:
    """A bound on any episode's env steps: the env's truncation limit (`max_steps` of the
    embedded world's params, in ticks, at least its env steps; CartPole's static one)."""
    limit = getattr(env_params, "max_steps", None)
    if limit is None:
        limit = getattr(env.static, "max_steps", None)
    if limit is None:
        raise ValueError(
            "the env declares no episode limit (params.max_steps or static.max_steps): the "
            "final evaluation needs one so that every episode ends; turn it off with "
            "--final-eval-episodes 0"
        )
    return int(np.max(np.asarray(limit))) + 1


_PROGRAMS: dict = {}


def _program(learner: lrn.Learner, task_id: tuple[int, ...], max_steps: int):
    """One jitted while loop per (learner, task ids of the batch, step limit), reused."""
    key = (learner, task_id, max_steps)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = jax.jit(_episode_fn(learner, np.asarray(task_id, np.int32), max_steps))
    return _PROGRAMS[key]


def _episode_fn(L: lrn.Learner, task_id: np.ndarray, max_steps: int):
    env, hooks, dims = L.env, L.hooks, L.action_dims
    # Only each env's first episode counts: no auto-reset (half the work on the embedded world,
    # whose vmapped auto-reset renders a reset frame on every step).
    step = env.step_no_reset or env.step
    n = len(task_id)
    tid = jnp.asarray(task_id)

    def run(params, consts, env_params, key):
        k_reset, k_env, k_act = jax.random.split(key, 3)
        raw, env_state = jax.vmap(env.reset, in_axes=(0, 0, None))(
            jax.random.split(k_reset, n), env_params, env.static
        )
        obs = L.policy_obs_batch(consts, raw, tid)
        rstate = hooks.init(consts, n, task_id) if hooks.init is not None else None
        if hooks.start is not None:
            rstate = hooks.start(consts, rstate, obs)
        zf, zi, zb = jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.int32), jnp.zeros(n, bool)
        carry = dict(t=jnp.zeros((), jnp.int32), env_state=env_state, obs=obs,
                     prev=jnp.tile(L.noop_action, (n, 1)), core=L.initial_core(n),
                     rstate=rstate, ret=zf, length=zi,
                     over=zb, out_return=zf, out_length=zi, out_success=zb)  # fmt: skip

        def body(c):
            t = c["t"]
            first = jnp.broadcast_to(t == 0, (n,))  # one episode per env: its first step
            logits, core = L.policy_logits(params, c["obs"], c["prev"], c["core"], first)
            action = losses.sample(jax.random.fold_in(k_act, t), logits, dims)
            raw, env_state, r_env, term, trunc, info = jax.vmap(
                step, in_axes=(0, 0, 0, 0, None)
            )(jax.random.split(jax.random.fold_in(k_env, t), n), c["env_state"],
              jax.vmap(env.to_env_action)(action), env_params, env.static)  # fmt: skip
            done = term | trunc
            obs = L.policy_obs_batch(consts, raw, tid)
            if hooks.step is not None:
                rstate, reward = hooks.step(consts, c["rstate"], obs, done, r_env, info)
            else:
                rstate, reward = c["rstate"], jax.vmap(env.reward_fn)(r_env, info)
            live = ~c["over"]  # an env counts its first episode only (then it runs on unseen)
            ret, length, fin = step_episodes(
                c["ret"], c["length"], reward.astype(jnp.float32), done & live, live
            )
            ends = done & live
            return dict(
                t=t + 1, env_state=env_state, obs=obs, rstate=rstate, ret=ret, length=length,
                core=core,
                prev=jnp.where(done[:, None], L.noop_action, action), over=c["over"] | done,
                out_return=jnp.where(ends, fin["return"], c["out_return"]),
                out_length=jnp.where(ends, fin["length"], c["out_length"]),
                out_success=jnp.where(ends, env_success(info).astype(bool), c["out_success"]),
            )  # fmt: skip

        def cond(c):
            return (c["t"] < max_steps) & ~jnp.all(c["over"])

        c = jax.lax.while_loop(cond, body, carry)
        return {"done": c["over"], "return": c["out_return"], "length": c["out_length"],
                "success": c["out_success"]}  # fmt: skip

    return run


def play_episodes(learner: lrn.Learner, params, env_params, task_id, key, consts=None) -> dict:
    """One episode per row of `env_params` (batched `[N, ...]`; `task_id` `[N]` the policy's
    task index of each) with the policy `params` -> NumPy `[N]` arrays `done`, `return`,
    `length`, `success`. Runs on one device (host copies of the parameters); an episode still
    running at the env's step limit is an error, never silently dropped."""
    task_id = tuple(int(t) for t in np.asarray(task_id).reshape(-1))
    if not task_id or jax.tree.leaves(env_params)[0].shape[0] != len(task_id):
        raise ValueError(
            f"play_episodes needs one task id per env params row, got {len(task_id)} ids for "
            f"{jax.tree.leaves(env_params)[0].shape[0]} rows"
        )
    limit = step_limit(learner.env, env_params)
    consts = learner.consts if consts is None else consts
    host = jax.device_get((params, consts, env_params))  # one device, under any mesh
    out = jax.device_get(_program(learner, task_id, limit)(*host, key))
    if not np.all(out["done"]):
        raise RuntimeError(
            f"{int(np.sum(~out['done']))} of {len(task_id)} evaluation episodes did not end "
            f"within the env's {limit - 1}-step limit"
        )
    return {k: np.asarray(v) for k, v in out.items()}


def scores(out: dict, task_id, num_tasks: int) -> list[Score | None]:
    """Per-task `Score`s of `play_episodes`' output (None for a task without episodes)."""
    task_id = np.asarray(task_id, np.int32)
    tot = per_task_totals(out["done"], out["return"], out["length"], out["success"],
                                   task_id, num_tasks)  # fmt: skip
    result = []
    for t in range(num_tasks):
        n = int(round(float(tot["episodes"][t])))
        result.append(None if n == 0 else Score(
            episodes=n, successes=int(round(float(tot["success_sum"][t]))),
            mean_return=float(tot["return_sum"][t]) / n,
            mean_length=float(tot["length_sum"][t]) / n,
        ))  # fmt: skip
    return result


def evaluate_policies(built, policies: dict, episodes: int, seed: int, labels) -> dict:
    """Each policy of `policies` (name -> params) plays the same `episodes` episodes per task
    of the run's env (`built`: `agents.build.Built`) -> {"episodes", "actions", "seed",
    "tasks": {label: {name: Score}}}. `labels` names the stage's tasks in their order (what the
    user typed: a prompt or an id; env i runs task i % len(labels)); a task of the run's
    vocabulary that no env of this stage trains on is left out."""
    if episodes <= 0:
        raise ValueError(f"episodes must be positive, got {episodes}")
    env = built.env
    trained_ids = np.asarray(env.task_ids)
    tasks = [t for t in range(env.num_tasks) if np.any(trained_ids == t)]
    label_of = {int(trained_ids[k]): label for k, label in enumerate(labels)}
    rows = np.repeat([int(np.argmax(trained_ids == t)) for t in tasks], episodes)
    task_id = np.repeat(tasks, episodes).astype(np.int32)
    env_params = jax.tree.map(lambda x: np.asarray(x)[rows], env.params)
    key = eval_key(seed)
    per_policy = {}
    for name, params in policies.items():
        out = play_episodes(built.learner, params, env_params, task_id, key)
        per_policy[name] = scores(out, task_id, env.num_tasks)
    return {
        "episodes": episodes, "actions": ACTIONS, "seed": seed,
        "tasks": {label_of[t]: {name: s[t] for name, s in per_policy.items()} for t in tasks},
    }  # fmt: skip


def to_json(result: dict) -> dict:
    return {**result, "tasks": {label: {name: s.to_json() for name, s in by.items()}
                                for label, by in result["tasks"].items()}}  # fmt: skip


def describe(result: dict, prefix: str = "final evaluation") -> list[str]:
    """One line per task: success rates in percent with their 95% intervals, then mean returns:
    `final evaluation (32 episodes, hunt a cow): untrained 3.1% [0.6, 15.7], trained 40.6%
    [25.5, 57.7]; mean return untrained 0.52, trained 7.31`."""
    lines = []
    for label, by in result["tasks"].items():
        rates = ", ".join(
            f"{name} {100 * s.success_rate:.1f}% [{100 * s.interval[0]:.1f}, "
            f"{100 * s.interval[1]:.1f}]"
            for name, s in by.items()
        )
        rets = ", ".join(f"{name} {s.mean_return:.2f}" for name, s in by.items())
        lines.append(f"{prefix} ({result['episodes']} episodes, {label}): {rates}; "
                     f"mean return {rets}")  # fmt: skip
    return lines

"""The final evaluation of `python -m agents.ppo` (agents.final_eval): the untrained and the
trained policy on the same episodes, checked against a step-by-step loop written here, against
hand-computed rates on envs that always / never succeed, across --resume and --seeds, and its
flag (0: off; negative: refused)."""

import copy
import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import final_eval, losses, ppo
from agents import train as loop
from agents.build import build
from agents.testing import CartPoleParams
from tests.agents.test_learner import TINY

CFG = dataclasses.replace(TINY, final_eval_episodes=6, seed=3, progress=False)
Z = 1.959963984540054


def _wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval from its textbook form (an independent check)."""
    p = k / n
    centre = (k + Z**2 / 2) / (n + Z**2)
    half = Z * math.sqrt(n) / (n + Z**2) * math.sqrt(p * (1 - p) + Z**2 / (4 * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _assert_same(a, b) -> None:
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _loop_evaluation(L, params, seed: int, n: int) -> dict:
    """The evaluation episodes played one Python step at a time: every env resets from the
    evaluation key, steps with its per-step key, and its first episode's return, length and
    success are kept by hand (the while loop and agents.episodes are not used)."""
    env = L.env
    k_reset, k_env, k_act = jax.random.split(final_eval.eval_key(seed), 3)
    env_params = jax.tree.map(lambda x: x[np.zeros(n, int)], env.params)
    one = lambda tree, i: jax.tree.map(lambda x: x[i], tree)  # noqa: E731
    resets = [env.reset(k, one(env_params, i), env.static)
              for i, k in enumerate(jax.random.split(k_reset, n))]  # fmt: skip
    obs = jax.tree.map(lambda *xs: jnp.stack(xs), *[o for o, _ in resets])
    states = [s for _, s in resets]
    prev = jnp.tile(L.noop_action, (n, 1))
    ret, length, success = np.zeros(n), np.zeros(n, int), np.zeros(n, bool)
    over = np.zeros(n, bool)
    t = 0
    while not over.all():
        logits = L.policy_logits(params, jax.vmap(env.policy_obs)(obs), prev)
        action = losses.sample(jax.random.fold_in(k_act, t), logits, L.action_dims)
        keys = jax.random.split(jax.random.fold_in(k_env, t), n)
        new_obs = []
        for i in range(n):
            o, states[i], r, term, trunc, info = env.step_no_reset(
                keys[i], states[i], env.to_env_action(action[i]), one(env_params, i), env.static
            )
            new_obs.append(o)
            if not over[i]:
                ret[i] += float(env.reward_fn(r, info))
                length[i] += 1
                if bool(term | trunc):
                    over[i], success[i] = True, bool(info["success"])
        obs = jax.tree.map(lambda *xs: jnp.stack(xs), *new_obs)
        prev = action
        t += 1
    return {"episodes": n, "successes": int(success.sum()), "mean_return": ret.mean(),
            "mean_length": length.mean()}  # fmt: skip


def _check_block(block: dict, want: dict) -> None:
    assert block["episodes"] == want["episodes"]
    assert block["successes"] == want["successes"]
    assert block["success_rate"] == want["successes"] / want["episodes"]
    assert block["ci95"] == pytest.approx(_wilson(want["successes"], want["episodes"]))
    assert block["mean_return"] == pytest.approx(want["mean_return"], rel=1e-6)
    assert block["mean_length"] == pytest.approx(want["mean_length"], rel=1e-6)


def test_both_rates_equal_a_step_by_step_evaluation_of_the_init_and_final_params(tmp_path, capsys):
    s = ppo.train(dataclasses.replace(CFG, out=str(tmp_path / "run")))
    L = build(CFG).learner
    fresh = jax.device_get(L.init_params_only(jax.random.PRNGKey(CFG.seed)))
    _assert_same(s["untrained_params"][0], fresh)  # what init produced for this seed
    stored = json.loads((tmp_path / "run" / "summary.json").read_text())["final_eval"]
    assert (stored["episodes"], stored["actions"], stored["seed"]) == (6, "sampled", 3)
    got = stored["tasks"]["cartpole"]
    _check_block(got["untrained"], _loop_evaluation(L, fresh, CFG.seed, 6))
    trained = jax.device_get(s["runner"].params)
    _check_block(got["trained"], _loop_evaluation(L, trained, CFG.seed, 6))
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("final evaluation")]
    u, t = got["untrained"], got["trained"]
    assert line == [
        f"final evaluation (6 episodes, cartpole): untrained 0.0% [0.0, "
        f"{100 * u['ci95'][1]:.1f}], trained 0.0% [0.0, {100 * t['ci95'][1]:.1f}]; mean return "
        f"untrained {u['mean_return']:.2f}, trained {t['mean_return']:.2f}"
    ]


def test_envs_that_always_or_never_succeed_give_the_hand_computed_rates():
    """CartPole whose bounds are never crossed (every episode lasts its 500 steps: a success,
    return 500) next to one whose bounds are crossed on the first step (return 1, failure)."""
    L = build(CFG).learner
    params = jax.device_get(L.init_params_only(jax.random.PRNGKey(0)))
    big, none = 1e9, -1.0
    rows = [big, none, big, none, none, big, none, none]  # 3 of 8 succeed
    env_params = CartPoleParams(
        x_threshold=jnp.asarray(rows, jnp.float32), theta_threshold=jnp.asarray(rows, jnp.float32)
    )
    env_params = jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float32), (8,)),
                              env_params)  # fmt: skip
    out = final_eval.play_episodes(L, params, env_params, np.zeros(8, int), jax.random.key(5))
    np.testing.assert_array_equal(out["success"], np.array(rows) > 0)
    np.testing.assert_array_equal(out["length"], np.where(np.array(rows) > 0, 500, 1))
    (score,) = final_eval.scores(out, np.zeros(8, int), 1)
    assert (score.episodes, score.successes, score.success_rate) == (8, 3, 3 / 8)
    assert score.mean_return == (3 * 500 + 5 * 1) / 8
    assert score.interval == pytest.approx(_wilson(3, 8))

    # Through evaluate_policies: a two-task env, task "always" on an always-succeeding row,
    # task "never" on a never-succeeding one; 5 episodes each, both policies.
    # (evaluate_policies plays each task on its first row: row 0 always, row 1 never succeeds)
    two = dataclasses.replace(L.env, params=env_params, task_ids=np.array([0, 1] * 4),
                              num_tasks=2)  # fmt: skip
    L2 = copy.copy(L)
    L2.env = two
    built = dataclasses.replace(build(CFG), learner=L2, env=two)
    result = final_eval.evaluate_policies(built, {"untrained": params, "trained": params}, 5, 0,
                                          ("always", "never"))  # fmt: skip
    assert final_eval.describe(result) == [
        "final evaluation (5 episodes, always): untrained 100.0% [56.6, 100.0], trained 100.0% "
        "[56.6, 100.0]; mean return untrained 500.00, trained 500.00",
        "final evaluation (5 episodes, never): untrained 0.0% [0.0, 43.4], trained 0.0% "
        "[0.0, 43.4]; mean return untrained 1.00, trained 1.00",
    ]


def test_a_resumed_run_evaluates_the_same_untrained_policy(tmp_path):
    full = ppo.train(dataclasses.replace(CFG, out=str(tmp_path / "full")))
    cfg = dataclasses.replace(CFG, out=str(tmp_path / "cut"))
    ppo.train(cfg, stop_after_updates=1)  # as if killed after the first update
    assert not (tmp_path / "cut" / "summary.json").exists() or "final_eval" not in json.loads(
        (tmp_path / "cut" / "summary.json").read_text()
    )
    resumed = ppo.train(dataclasses.replace(cfg, resume=True))
    fresh = jax.device_get(build(CFG).learner.init_params_only(jax.random.PRNGKey(CFG.seed)))
    _assert_same(resumed["untrained_params"][0], fresh)
    a = json.loads((tmp_path / "full" / "summary.json").read_text())["final_eval"]
    b = json.loads((tmp_path / "cut" / "summary.json").read_text())["final_eval"]
    assert a["tasks"]["cartpole"]["untrained"] == b["tasks"]["cartpole"]["untrained"]
    assert a == full["final_eval"]


def test_each_seed_is_evaluated_with_its_own_init(tmp_path, capsys):
    ppo.train(dataclasses.replace(CFG, seeds=2, seed=3, out=str(tmp_path / "k")))
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("final evaluation")]
    assert [x.split(" (")[0] for x in lines] == [
        "final evaluation, seed 3",
        "final evaluation, seed 4",
    ]
    top = json.loads((tmp_path / "k" / "summary.json").read_text())["seeds"]
    for seed in (3, 4):
        mine = json.loads((tmp_path / "k" / f"seed{seed}" / "summary.json").read_text())
        assert top[str(seed)]["final_eval"] == mine["final_eval"]
        L = build(dataclasses.replace(CFG, seed=seed)).learner
        fresh = jax.device_get(L.init_params_only(jax.random.PRNGKey(seed)))
        _check_block(mine["final_eval"]["tasks"]["cartpole"]["untrained"],
                     _loop_evaluation(L, fresh, seed, 6))  # fmt: skip


def test_zero_turns_it_off_and_a_negative_count_is_refused(tmp_path, capsys):
    flags = ["--task", "cartpole", "--num-envs", "8", "--num-steps", "16", "--total-steps",
             "128", "--num-minibatches", "2", "--update-epochs", "1", "--si-every", "0",
             "--no-progress"]  # fmt: skip
    ppo.main([*flags, "--final-eval-episodes", "0", "--out", str(tmp_path / "off")])
    assert "final evaluation" not in capsys.readouterr().out
    summary = json.loads((tmp_path / "off" / "summary.json").read_text())
    assert "final_eval" not in summary and summary["env_steps"] == 128
    with pytest.raises(SystemExit) as e:
        ppo.main([*flags, "--final-eval-episodes", "-1", "--out", str(tmp_path / "bad")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--final-eval-episodes must be >= 0 (0 turns the final evaluation off), got -1" in err
    assert not (tmp_path / "bad").exists()


def test_host_stepped_backends_say_why_they_are_skipped(capsys):
    cfg = dataclasses.replace(CFG, backend="process", out="runs/x")
    loop._final_evaluation(cfg, ("hunt a cow",), [], None, None, {})
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("final evaluation skipped: --backend process steps its envs")
    assert "python -m agents.evaluate --policy runs/x" in line

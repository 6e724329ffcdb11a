"""Smoke run of `python -m agents.ppo` on the embedded world (tiny world, rendering off)."""

import json

import jax
import numpy as np

from agents import build, checkpoints, ppo

ARGS = [
    "--task", "hunt a cow", "--world-size", "16", "--world-pool", "1", "--no-render",
    "--num-envs", "4", "--num-steps", "8", "--total-steps", "64", "--num-minibatches", "2",
    "--update-epochs", "1", "--si-every", "1", "--si-max-len", "8", "--si-capacity", "16",
    "--max-episode-steps", "8", "--smooth-coef", "0.01", "--no-progress",
    "--si-min-return=-1e9",  # every finished episode enters the SI buffer
]  # fmt: skip


def reset_rows(env, keys, params):
    """`env.reset` of each row of the batched `params`, as one jitted call (op by op, one reset
    of the embedded world takes tens of seconds)."""
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, 0, None)), static_argnums=2)
    return reset(keys, params, env.static)


def test_cli_smoke_on_the_embedded_world(tmp_path, capsys):
    out = tmp_path / "run"
    ppo.main([*ARGS, "--out", str(out)])
    lines = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(next(x for x in lines if x.startswith("{")))
    assert lines[-1].startswith("final evaluation (")  # the result is the job's last line
    assert summary["env_steps"] == 64
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(np.isfinite(r["pg_loss"]) for r in rows)
    # 8-step episodes: every env finished one per update; the SI phase ran after each update
    assert rows[0]["episodes"] == 4 and rows[1]["episodes"] == 4
    # every finished episode qualified: the buffer holds the 4 of update 1, then all 8
    assert np.isfinite(rows[0]["si_loss"]) and rows[0]["si_size"] == 4 and rows[1]["si_size"] == 8
    assert list((out / "tb").iterdir())
    # the run loads as a policy over raw env observations (what agents.evaluate calls)
    policy_fn, info = checkpoints.load_policy(out)
    assert info["task_names"] == ("hunt_cow",)
    built = build.build(ppo.config_from_json(info["config"]))
    env = built.env
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    one = jax.tree.map(lambda x: x[:2], env.params)
    obs, _ = reset_rows(env, keys, one)
    act = policy_fn(jax.random.key(1), jax.device_get(obs), deterministic=True)
    assert act.shape == (2, 8) and act.dtype == np.int32
    assert info["last_policy_action"].shape == (2, 1)


def test_evaluate_rebuilds_the_env_the_policy_was_trained_on(tmp_path):
    """A run trained with --world-size 16 --no-render evaluates with the README's command alone:
    the evaluator reads the run's config.json instead of its own env defaults."""
    import pytest

    from agents.evaluate import EvaluateConfig, evaluate

    out = tmp_path / "run"
    # SI off: its flags are left out (with --si-every 0 the CLI refuses them as doing nothing)
    no_si = ARGS[: ARGS.index("--si-every")] + ARGS[ARGS.index("--max-episode-steps") : -1]
    ppo.main([*no_si, "--total-steps", "32", "--si-every", "0", "--out", str(out)])
    cfg = EvaluateConfig(tasks=("hunt a cow",), episodes=2, num_envs=2, max_steps=4,
                         policy=str(out), out_dir=tmp_path / "eval", videos_per_task=0)  # fmt: skip
    report = evaluate(cfg)
    (result,) = report.results
    assert (result.task_id, result.episodes, result.mean_length) == ("hunt_cow", 2, 4.0)
    bad = EvaluateConfig(tasks=("hunt a cow",), episodes=2, num_envs=2, policy=str(out),
                         out_dir=tmp_path / "eval2", env_options=("render=true",))  # fmt: skip
    with pytest.raises(ValueError, match="trained with render=False"):
        evaluate(bad)

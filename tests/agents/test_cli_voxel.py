"""Smoke run of `python -m agents.ppo` on the embedded world (tiny world, rendering off)."""

import json

import jax
import numpy as np

from agents import ppo

ARGS = [
    "--task", "hunt a cow", "--world-size", "16", "--world-pool", "1", "--no-render",
    "--num-envs", "4", "--num-steps", "8", "--total-steps", "64", "--num-minibatches", "2",
    "--update-epochs", "1", "--si-every", "1", "--si-max-len", "8", "--si-capacity", "4",
    "--max-episode-steps", "8", "--smooth-coef", "0.01", "--no-progress",
]  # fmt: skip


def test_cli_smoke_on_the_embedded_world(tmp_path, capsys):
    out = tmp_path / "run"
    ppo.main([*ARGS, "--out", str(out)])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["env_steps"] == 64
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(np.isfinite(r["pg_loss"]) for r in rows)
    # 8-step episodes: every env finished one per update; the SI phase ran after each update
    assert rows[0]["episodes"] == 4 and rows[1]["episodes"] == 4
    assert np.isfinite(rows[0]["si_loss"]) and 0 <= rows[1]["si_size"] <= 4
    assert list((out / "tb").iterdir())
    # the run loads as a policy over raw env observations (what agents.evaluate calls)
    policy_fn, info = ppo.load_policy(out)
    assert info["task_names"] == ("hunt_cow",)
    built = ppo.build(ppo.config_from_json(info["config"]))
    env = built.env
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    one = jax.tree.map(lambda x: x[:2], env.params)
    obs, _ = jax.vmap(env.reset, in_axes=(0, 0, None))(keys, one, env.static)
    act = policy_fn(jax.random.key(1), jax.device_get(obs), deterministic=True)
    assert act.shape == (2, 8) and act.dtype == np.int32
    assert info["last_policy_action"].shape == (2, 1)

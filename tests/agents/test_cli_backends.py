"""`python -m agents.ppo --backend process|minedojo`: host-stepped (Sebulba) training from the CLI.

The process backend runs the embedded world in bridge worker processes (tiny world, tiny frames),
the same path a MineDojo run takes; MineDojo itself is only checked for its missing-jar error.
"""

import dataclasses
import json

import jax
import numpy as np
import pytest

from agents import adapters, build, checkpoints, ppo

TINY = [
    "--task", "hunt a cow", "--world-size", "16", "--world-pool", "1", "--image-size", "16", "24",
    "--cnn", "nature",
    "--num-envs", "4", "--num-steps", "8", "--total-steps", "64", "--num-minibatches", "2",
    "--update-epochs", "1", "--si-every", "1", "--si-max-len", "8", "--si-capacity", "4",
    "--max-episode-steps", "6", "--video-every", "-1", "--no-progress",
]  # fmt: skip


def _cfg(out, *extra):
    import tyro

    args = [*TINY, "--backend", "process", "--bridge-envs-per-worker", "2", "--out", str(out)]
    return tyro.cli(ppo.PPOConfig, args=[*args, *extra])


def _rows(out):
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


def test_process_backend_trains_checkpoints_and_resumes(tmp_path):
    out = tmp_path / "run"
    cfg = _cfg(out)
    first = ppo.train(cfg, stop_after_updates=1)  # as if killed after one update
    assert first["stopped"] and first["env_steps"] == 32 and first["sps"] > 0
    assert (out / "checkpoints" / "1").exists() and (out / "bridge_logs").is_dir()
    s = ppo.train(dataclasses.replace(cfg, resume=True))  # restarts the envs, restores the rest
    rows = _rows(out)
    assert [r["update"] for r in rows] == [1, 2]
    assert [r["env_steps"] for r in rows] == [32, 64] and s["env_steps"] == 64
    assert all(r["sps"] > 0 and np.isfinite(r["pg_loss"]) and "si_loss" in r for r in rows)
    # 4 envs (2 workers of 2), 6-step episodes in 8-step rollouts, NEXT_STEP autoreset (one ignored step after each end):
    # every env ends exactly one episode per update, also after the restart
    assert all(r["episodes"] == 4 and r["episode_length"] == 6 for r in rows)
    runner = s["runner"]
    assert int(runner.update_step) == 2 and int(runner.env_steps) == 64
    assert (out / "checkpoints" / "2").exists() and list((out / "tb").iterdir())
    assert json.loads((out / "config.json").read_text())["backend"] == "process"
    # a host-stepped run loads as a policy like an on-device one
    _, info = checkpoints.load_policy(out)
    assert info["update"] == 2 and info["task_names"] == ("hunt_cow",)


def test_process_rollout_metrics_obs_layout_and_tasks(tmp_path):
    cfg = _cfg(tmp_path / "r", "--task", "hunt a cow,shear a sheep")
    tasks = ppo.stage_tasks(cfg)[0]
    vec = adapters.make_host_vector_env(cfg, tasks, tmp_path / "logs")
    try:
        driver = build.build_host_driver(cfg, tasks, vec)
        runner = driver.init(jax.random.PRNGKey(0))
        runner, traj, stats = driver.rollout(runner)
    finally:
        vec.close()
    assert vec.closed
    T, N = cfg.num_steps, cfg.num_envs
    done, mask = np.asarray(traj.done), np.asarray(traj.mask)
    assert done.shape == mask.shape == (T, N) and int(runner.env_steps) == T * N
    # per-task episode stats (env i runs task i % 2), one ignored step after each episode end
    assert stats["episodes"].shape == (2,)
    np.testing.assert_array_equal(stats["episodes"], done.reshape(T, 2, 2).sum((0, 1)))
    np.testing.assert_array_equal(mask[1:] == 0, done[:-1])
    np.testing.assert_array_equal(np.asarray(traj.obs["task_id"]), np.tile([0, 1, 0, 1], (T, 1)))
    assert (np.asarray(traj.reward)[mask == 0] == 0).all()
    # the policy sees the same inputs as on the on-device path (keys, shapes, dtypes)
    env = build.build(cfg, tasks).env  # JaxEnv; only traced here
    raw = jax.eval_shape(
        lambda k: env.reset(k, jax.tree.map(lambda x: x[0], env.params), env.static),
        jax.random.PRNGKey(0),
    )[0]
    want = jax.eval_shape(adapters.voxel_policy_obs, raw)
    got = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[2:], x.dtype), traj.obs)
    got.pop("task_id")
    assert jax.tree.map(lambda x: (x.shape, x.dtype), got) == jax.tree.map(
        lambda x: (x.shape, x.dtype), want
    )
    assert set(got) == {"rgb", "compass", "gps", "voxels"}


def test_minedojo_without_jar_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MINECLIP_MALMO_JAR", raising=False)
    base = [*TINY, "--backend", "minedojo", "--out", str(tmp_path / "m")]
    with pytest.raises(SystemExit) as e:
        ppo.main(base)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "MalmoMod" in err and "--minedojo-jar" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as e:
        ppo.main([*base, "--minedojo-jar", str(tmp_path / "missing.jar")])
    assert e.value.code == 2 and "not found" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()  # nothing was started or written


def test_host_backends_reject_what_they_cannot_run(tmp_path, capsys):
    out = ["--out", str(tmp_path / "x")]
    for args, msg in [
        (["--backend", "process", "--reward", "mineclip"], "needs --mineclip-ckpt PATH"),
        (["--backend", "minedojo", "--mineclip-ckpt", str(tmp_path / "no.pth")], "does not exist"),
        (["--backend", "process", "--task", "cartpole"], "--backend jax"),
        (["--backend", "minedojo", "--task", "hunt a cow,shear a sheep"], "one task per stage"),
    ]:  # fmt: skip
        with pytest.raises(SystemExit) as e:
            ppo.main([*TINY, *args, *out])
        assert e.value.code == 2 and msg in capsys.readouterr().err


def test_minedojo_backend_trains_against_a_fake_malmo_server(tmp_path):
    """The MineDojo path end to end (bridge worker, Malmo protocol, decoding) without Minecraft."""
    from envs.bridge.fake_server import FakeMalmoServer

    out = tmp_path / "md"
    with FakeMalmoServer(height=16, width=24) as server:
        ppo.main([
            *TINY, "--backend", "minedojo", "--minedojo-port", str(server.port),
            "--task", "harvest_milk_with_empty_bucket_and_cow", "--num-envs", "1",
            "--num-devices", "1", "--num-minibatches", "1", "--total-steps", "16",
            "--out", str(out),
        ])  # fmt: skip
        assert not server.errors
    rows = _rows(out)
    assert [r["env_steps"] for r in rows] == [8, 16] and all(r["sps"] > 0 for r in rows)
    assert (out / "checkpoints" / "2").exists()

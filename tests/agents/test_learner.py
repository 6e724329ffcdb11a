"""Learner-level tests on the JAX CartPole: sharded == single-device update, exact resume, SI
phase, CLI errors and a CLI smoke run."""

import ast
import dataclasses
import inspect
import json
import textwrap

import jax
import numpy as np
import pytest

from agents import build, checkpoints, ppo, sebulba
from agents import learner as lrn
from agents import train as loop

TINY = ppo.PPOConfig(
    task="cartpole",
    core_size=0,  # the MLP actor-critic; tests of a recurrent core set it
    num_envs=8,
    num_steps=16,
    total_steps=8 * 16 * 4,
    update_epochs=2,
    num_minibatches=2,
    si_every=2,
    si_steps=2,
    si_batch=2,
    si_capacity=4,
    si_max_len=16,
    smooth_coef=0.1,
    checkpoint_every=100,
    video_every=-1,
    progress=False,
)


def host_driver(cfg, vec_env, network, **kwargs) -> sebulba.HostDriver:
    """A HostDriver with the sections of `cfg` (a PPOConfig), as agents.build passes them."""
    return sebulba.HostDriver(lrn.LearnerConfig.from_config(cfg), vec_env, network,
                              hp=lrn.HyperParams.from_config(cfg), si_every=cfg.si_every,
                              **kwargs)  # fmt: skip


def _leaves_equal(a, b, exact=True):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        if exact:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-5, atol=2e-6)


def _synthetic_batch(t_len, n):
    rng = np.random.default_rng(0)
    return lrn.Transition(
        obs={"state": rng.normal(size=(t_len, n, 4)).astype(np.float32)},
        prev_action=np.zeros((t_len, n, 1), np.int32),
        action=rng.integers(0, 2, size=(t_len, n, 1)).astype(np.int32),
        logp=np.full((t_len, n), np.log(0.5), np.float32),
        value=rng.normal(size=(t_len, n)).astype(np.float32),
        reward=rng.normal(size=(t_len, n)).astype(np.float32),
        done=rng.random((t_len, n)) < 0.1,
        episode_id=np.zeros((t_len, n), np.int32),
        mask=np.ones((t_len, n), np.float32),
        core=np.zeros((t_len, n, 1), np.float32),
        start=np.zeros((t_len, n), bool),
    )


def test_sharded_update_equals_single_device():
    """The same global [T, N] batch gives the same PPO update on a 1- and a 4-device mesh."""
    assert len(jax.devices()) == 4, "conftest sets 4 host devices"
    runs = {}
    for ndev in (1, 4):
        cfg = dataclasses.replace(TINY, num_devices=ndev)  # one mesh of ndev devices
        L = build.build(cfg).learner
        assert L.mesh.devices.size == ndev
        r = L.init_sharded(jax.random.PRNGKey(3))
        p0 = jax.device_get(r.params)
        r, m = L.update(r, _synthetic_batch(cfg.num_steps, cfg.num_envs))
        if ndev == 4:
            sh = r.obs["state"].sharding
            assert len(sh.device_set) == 4 and not sh.is_fully_replicated
        runs[ndev] = (p0, jax.device_get(r.params), jax.device_get(m))
    (p0_1, p1, m1), (p0_4, p4, m4) = runs[1], runs[4]
    _leaves_equal(p0_1, p0_4, exact=True)
    _leaves_equal(p1, p4, exact=False)
    for k in ("pg_loss", "v_loss", "entropy", "smooth_loss"):
        np.testing.assert_allclose(m1[k], m4[k], rtol=1e-4, atol=1e-6)
    # the update moved the params (so the comparison is not trivially equal)
    assert any(not np.allclose(a, b) for a, b in zip(jax.tree.leaves(p0_1), jax.tree.leaves(p1)))


@pytest.mark.parametrize("core_size", [0, 8])
def test_killed_and_resumed_equals_uninterrupted(tmp_path, core_size):
    """Also for a recurrent policy: its carry is part of the checkpointed runner."""
    tiny = dataclasses.replace(TINY, core_size=core_size)
    full = ppo.train(dataclasses.replace(tiny, out=str(tmp_path / "a")))
    cfg_b = dataclasses.replace(tiny, out=str(tmp_path / "b"))
    part = ppo.train(cfg_b, stop_after_updates=1)
    assert int(part["runner"].update_step) == 1
    resumed = ppo.train(dataclasses.replace(cfg_b, resume=True))
    assert int(resumed["runner"].update_step) == int(full["runner"].update_step) == 4
    _leaves_equal(full["runner"].params, resumed["runner"].params, exact=True)
    _leaves_equal(full["runner"].si_buffer, resumed["runner"].si_buffer, exact=True)
    lines = (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 4 and "si_loss" in json.loads(lines[1])
    # the saved run loads as a policy
    policy_fn, info = checkpoints.load_policy(tmp_path / "a")
    obs = {"state": np.zeros((3, 4), np.float32)}
    act = policy_fn(jax.random.PRNGKey(0), obs, deterministic=True)
    assert act.shape == (3, 1) and set(np.unique(act)) <= {0, 1}
    assert info["update"] == 4 and info["core_size"] == core_size
    if core_size:  # the carry comes back and moves with the observations
        _leaves_equal(full["runner"].core, resumed["runner"].core, exact=True)
        first = info["last_core"]
        policy_fn(jax.random.PRNGKey(0), obs, core=first, episode_start=np.zeros(3, bool))
        assert first.shape == (3, core_size) and not np.allclose(info["last_core"], first)


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(task="no such task at all"), "unknown task"),
        (dict(reward="mineclip"), "--mineclip-ckpt"),
        (dict(mineclip_ckpt="/nonexistent/attn.pth"), "does not exist"),
        (dict(num_envs=6, num_minibatches=4, num_devices=1), "divisible"),
        (dict(num_envs=2, num_minibatches=1, num_devices=4), "multiple of the 4 devices"),
        (dict(resume=True, out="/nonexistent_run_dir"), "no run in"),
    ],
)
def test_bad_flags_give_clear_errors(changes, match, tmp_path):
    cfg = dataclasses.replace(TINY, **{"out": str(tmp_path / "run"), **changes})
    with pytest.raises(ppo.ConfigError, match=match):
        ppo.train(cfg)


def test_load_policy_missing_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="no trained run"):
        checkpoints.load_policy(tmp_path / "nothing")


def _field_docs(cls) -> dict[str, str]:
    """Each dataclass field's help as tyro reads it: the string right after the field's line,
    in `cls` or the dataclass it inherits the field from ('' where there is none)."""
    docs = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for stmt, after in zip(body, [*body[1:], None]):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                doc = getattr(getattr(after, "value", None), "value", None)
                docs[stmt.target.id] = doc.strip() if isinstance(doc, str) else ""
    return docs


def test_cli_help_documents_every_flag(capsys):
    @dataclasses.dataclass
    class Undocumented:
        documented: int = 0
        """a line of help"""
        bare: int = 0

    assert _field_docs(Undocumented) == {"documented": "a line of help", "bare": ""}
    docs = _field_docs(ppo.PPOConfig)
    fields = [f.name for f in dataclasses.fields(ppo.PPOConfig)]
    assert [f for f in fields if not docs.get(f)] == [], "fields without help text"
    with pytest.raises(SystemExit):
        ppo.main(["--help"])
    out = capsys.readouterr().out
    for f in fields:
        assert "--" + f.replace("_", "-") in out


def test_cli_exits_2_on_bad_task(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        ppo.main(["--task", "frobnicate the moon", "--out", str(tmp_path / "x")])
    assert e.value.code == 2
    assert "unknown task" in capsys.readouterr().err


def test_runner_shardings_split_env_axis():
    built = build.build(TINY)
    r = jax.eval_shape(built.learner.init, jax.random.PRNGKey(0))
    sh = lrn.runner_shardings(r, built.learner.mesh)
    assert sh.obs["state"].spec == jax.sharding.PartitionSpec("data")
    assert jax.tree.leaves(sh.params)[0].spec == jax.sharding.PartitionSpec()


def test_multi_stage_keeps_si_buffer_and_resets_policy_head(tmp_path):
    cfg = dataclasses.replace(TINY, stages="cartpole;cartpole", out=str(tmp_path / "s"))
    seen = {}
    orig = loop.next_stage

    def spy(runner, carried, L, *rest):
        out = orig(runner, carried, L, *rest)
        seen["carried_valid"] = int(np.sum(carried[0].valid))
        seen["buffer_valid"] = int(np.sum(np.asarray(out.si_buffer.valid)))
        seen["old"], seen["fresh"], seen["new"] = jax.device_get(
            (carried[1], runner.params, out.params)
        )
        return out

    loop.next_stage = spy
    try:
        res = ppo.train(cfg)
    finally:
        loop.next_stage = orig
    assert seen["carried_valid"] > 0 and seen["buffer_valid"] == seen["carried_valid"]
    # MLPActorCritic's policy head is "actor": taken fresh; the critic is carried over
    _leaves_equal(seen["new"]["actor"], seen["fresh"]["actor"])
    _leaves_equal(seen["new"]["critic"], seen["old"]["critic"])
    rows = [json.loads(x) for x in (tmp_path / "s" / "metrics.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in rows] == [0] * 4 + [1] * 4
    assert [r["update"] for r in rows] == list(range(1, 9)) and res["stage"] == 1

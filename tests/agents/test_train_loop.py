"""The training loop on the JAX CartPole: traced hyper-parameters (no recompilation), K seeds in
one program, and resuming without losing, doubling or silently ignoring anything."""

import dataclasses
import json
import shutil

import jax
import numpy as np
import pytest

from agents import checkpoints, ppo
from agents.build import build
from tests.agents.test_learner import TINY, _leaves_equal


def _rows(run_dir):
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_changing_a_hyper_parameter_reuses_the_compiled_update(tmp_path):
    a = dataclasses.replace(TINY, out=str(tmp_path / "a"))
    b = dataclasses.replace(a, out=str(tmp_path / "b"), ent_coef=0.2, lr=1e-3, gamma=0.9)
    ra = ppo.train(a)
    L = build(a).learner
    assert build(b).learner is L
    # TINY on conftest's 4 CPU devices: the rollout split over them, the update on one
    names = ("split_rollout", "split_update", "split_si") if L.split else ("iteration", "si")
    fns = [L._jit_cache[(name, False)] for name in names]
    assert [f._cache_size() for f in fns] == [1] * len(fns)
    rb = ppo.train(b)
    assert [f._cache_size() for f in fns] == [1] * len(fns)  # no second compilation
    # the new values were used: the same seed learns different params
    pa, pb = jax.device_get((ra["runner"].params, rb["runner"].params))
    assert any(not np.allclose(x, y) for x, y in zip(jax.tree.leaves(pa), jax.tree.leaves(pb)))


@pytest.mark.parametrize("core_size", [0, 8])
def test_seed_i_of_a_two_seed_run_equals_a_single_run_with_seed_i(tmp_path, core_size):
    """Also with a recurrent core: each seed's carry is vmapped with its runner."""
    tiny = dataclasses.replace(TINY, core_size=core_size)
    two = ppo.train(dataclasses.replace(tiny, seeds=2, seed=3, out=str(tmp_path / "k")))
    one = ppo.train(dataclasses.replace(tiny, seed=4, out=str(tmp_path / "s")))
    stacked = jax.device_get(two["runner"])
    seed4 = jax.tree.map(lambda x: x[1], stacked)
    _leaves_equal(one["runner"].params, seed4.params, exact=False)
    _leaves_equal(one["runner"].si_buffer, seed4.si_buffer, exact=False)
    _leaves_equal(one["runner"].core, seed4.core, exact=False)
    # seed 3 is another run
    seed3 = jax.tree.map(lambda x: x[0], stacked)
    assert any(
        not np.allclose(x, y)
        for x, y in zip(jax.tree.leaves(seed3.params), jax.tree.leaves(seed4.params))
    )
    # per-seed run directories: metrics, summary, a loadable policy
    rows_k, rows_s = _rows(tmp_path / "k" / "seed4"), _rows(tmp_path / "s")
    assert [r["update"] for r in rows_k] == [1, 2, 3, 4]
    for rk, rs in zip(rows_k, rows_s, strict=True):
        np.testing.assert_allclose(rk["pg_loss"], rs["pg_loss"], rtol=1e-3, atol=1e-5)
        assert rk["episodes"] == rs["episodes"]
    summary = json.loads((tmp_path / "k" / "summary.json").read_text())
    assert set(summary["seeds"]) == {"3", "4"}
    assert json.loads((tmp_path / "k" / "seed3" / "summary.json").read_text())["update"] == 4
    _, info = checkpoints.load_policy(tmp_path / "k" / "seed3")
    assert info["update"] == 4 and info["config"]["seed"] == 3


def test_resume_a_finished_run_keeps_its_summary_and_a_larger_budget_continues(tmp_path, capsys):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"))
    ppo.train(cfg)
    summary = (tmp_path / "r" / "summary.json").read_text()
    again = ppo.train(dataclasses.replace(cfg, resume=True))
    assert (tmp_path / "r" / "summary.json").read_text() == summary  # not overwritten
    assert again["update"] == 4 and "nothing to train" in capsys.readouterr().out
    more = ppo.train(dataclasses.replace(cfg, resume=True, total_steps=2 * TINY.total_steps))
    assert "overriding --total-steps 512 -> 1024" in capsys.readouterr().out
    assert int(more["runner"].update_step) == 8 and more["update"] == 8
    assert [r["update"] for r in _rows(tmp_path / "r")] == list(range(1, 9))
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["update"] == 8


def test_resume_refuses_flags_that_change_the_run(tmp_path):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), total_steps=8 * 16)
    ppo.train(cfg)
    with pytest.raises(ppo.ConfigError, match="--num-envs .*saved 8"):
        ppo.train(dataclasses.replace(cfg, resume=True, num_envs=4))


def test_killed_after_its_last_checkpoint_resumes_without_duplicate_rows(tmp_path, capsys):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), checkpoint_every=2)
    full = ppo.train(dataclasses.replace(cfg, out=str(tmp_path / "full")))
    ppo.train(cfg)
    shutil.rmtree(tmp_path / "r" / "checkpoints" / "4")  # killed before update 4 was saved
    assert [r["update"] for r in _rows(tmp_path / "r")] == [1, 2, 3, 4]
    resumed = ppo.train(dataclasses.replace(cfg, resume=True))
    assert "dropped 2 metrics rows logged after update 2" in capsys.readouterr().out
    assert [r["update"] for r in _rows(tmp_path / "r")] == [1, 2, 3, 4]
    _leaves_equal(full["runner"].params, resumed["runner"].params, exact=True)


def test_damaged_checkpoint_is_named_and_resume_falls_back(tmp_path, capsys):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), checkpoint_every=2)
    ppo.train(cfg)
    step4 = tmp_path / "r" / "checkpoints" / "4"
    damaged = [f for f in (step4 / "runner").rglob("*") if f.is_file() and f.stat().st_size > 0]
    assert damaged
    for f in damaged:
        f.write_bytes(b"\x00garbage")
    resumed = ppo.train(dataclasses.replace(cfg, resume=True, total_steps=6 * 8 * 16))
    out = capsys.readouterr().out
    assert "checkpoint step 4" in out and str(step4) in out and "damaged" in out
    assert int(resumed["runner"].update_step) == 6
    assert [r["update"] for r in _rows(tmp_path / "r")] == [1, 2, 3, 4, 5, 6]
    # nothing intact: one clear error naming the steps
    for step in (tmp_path / "r" / "checkpoints").iterdir():
        for f in step.rglob("*"):
            if f.is_file():
                f.write_bytes(b"")
    with pytest.raises(ppo.ConfigError, match="checkpoint step 6 .*damaged"):
        ppo.train(dataclasses.replace(cfg, resume=True, total_steps=8 * 8 * 16))


def test_resume_without_checkpoints_refuses(tmp_path):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"))
    ppo.train(cfg)
    shutil.rmtree(tmp_path / "r" / "checkpoints")
    rows = (tmp_path / "r" / "metrics.jsonl").read_text()
    with pytest.raises(ppo.ConfigError, match="no checkpoint"):
        ppo.train(dataclasses.replace(cfg, resume=True))
    assert (tmp_path / "r" / "metrics.jsonl").read_text() == rows


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(total_steps=1000, num_envs=4, num_steps=64), "--total-steps 768 or 1024"),
        (dict(total_steps=100, num_envs=4, num_steps=64), "--total-steps 256"),
        (dict(seed=-1), "--seed must be in 0"),
        (dict(seed=2**63), "--seed must be in 0"),
        (dict(seeds=2, backend="process", task="hunt a cow"), "--seeds 2"),
    ],
)
def test_bad_budgets_and_seeds_are_refused_before_anything_is_written(tmp_path, changes, match):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "run"), **changes)
    with pytest.raises(ppo.ConfigError, match=match):
        ppo.train(cfg)
    assert not (tmp_path / "run").exists()


def test_truncated_config_gives_one_readable_error(tmp_path):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), total_steps=8 * 16)
    ppo.train(cfg)
    path = tmp_path / "r" / "config.json"
    path.write_text(path.read_text()[:40])
    with pytest.raises(ppo.ConfigError, match="config.json is damaged"):
        ppo.train(dataclasses.replace(cfg, resume=True))
    with pytest.raises(ValueError, match="config.json is damaged"):
        checkpoints.load_policy(tmp_path / "r")


def test_time_limit_stops_at_a_checkpoint_and_resume_finishes_the_same_run(tmp_path, capsys):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), checkpoint_every=100)
    full = ppo.train(dataclasses.replace(cfg, out=str(tmp_path / "full")))
    # A limit already spent: the run stops after its first update, saved although the checkpoint
    # cadence (100) would not have saved it.
    stopped = ppo.train(dataclasses.replace(cfg, time_limit_min=1e-9))
    assert "--time-limit-min 1e-09 reached after update 1" in capsys.readouterr().out
    assert stopped["stopped"] and stopped["update"] == 1
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["stopped"] is True
    assert checkpoints.ckpt_manager(tmp_path / "r").all_steps() == [1]
    resumed = ppo.train(dataclasses.replace(cfg, resume=True, time_limit_min=60.0))
    assert "overriding --time-limit-min" in capsys.readouterr().out
    assert resumed["update"] == 4 and "stopped" not in resumed
    assert [r["update"] for r in _rows(tmp_path / "r")] == [1, 2, 3, 4]
    _leaves_equal(full["runner"].params, resumed["runner"].params, exact=True)

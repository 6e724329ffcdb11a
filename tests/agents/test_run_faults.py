"""Faults a long `agents.ppo` run meets, injected for real on tiny CartPole runs: flipped bytes in
an orbax checkpoint, a loss that goes NaN, a kill between two seeds' saves, a kill during the
first save, damaged metrics rows, flags given at their default value on --resume. Each test
states what the code before these fixes did."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import checkpoints, ppo
from agents import train as loop
from tests.agents.test_learner import TINY, _leaves_equal


def _rows(run_dir):
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _flip_bytes(path, count=16):
    """Flip `count` bytes in the middle of `path` (a bad disk or copy)."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    for i in range(mid, min(mid + count, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _largest_data_file(step_dir):
    files = [f for f in (step_dir / "runner").rglob("*") if f.is_file()]
    return max(files, key=lambda f: f.stat().st_size)


@pytest.mark.slow
def test_flipped_bytes_in_the_latest_checkpoint_are_caught_by_its_checksums(tmp_path, capsys):
    # Before: TensorStore decoded the flipped bytes without error, --resume trained on from the
    # damaged state (NaN / 3e38 in Adam's moments), and load_policy returned it.
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), checkpoint_every=2)
    full = ppo.train(dataclasses.replace(cfg, out=str(tmp_path / "full")))
    ppo.train(cfg)
    step4 = tmp_path / "r" / "checkpoints" / "4"
    assert (step4 / "SHA256SUMS").is_file()
    _flip_bytes(_largest_data_file(step4))
    capsys.readouterr()

    # A reader (agents.evaluate --policy, load_policy) names the damage and loads step 2.
    _, info = checkpoints.load_policy(tmp_path / "r")
    err = capsys.readouterr().err
    assert info["update"] == 2
    assert "checkpoint step 4" in err and "does not match its checksum" in err
    assert step4.exists()  # a reader leaves the run as it is
    from agents import evaluate  # agents.evaluate --policy RUN: the same fallback, no traceback

    _, info = evaluate.load_ppo_run(str(tmp_path / "r"))
    assert info["update"] == 2 and "checkpoint step 4" in capsys.readouterr().err
    with pytest.raises(checkpoints.DamagedCheckpointError, match="does not match its checksum"):
        checkpoints.load_run(tmp_path / "r", step=4)

    # --resume moves it aside, continues from step 2 and ends where the whole run ended.
    resumed = ppo.train(dataclasses.replace(cfg, resume=True))
    out = capsys.readouterr().out
    assert "checkpoint step 4" in out and "moved to" in out
    assert (tmp_path / "r" / "damaged_checkpoints" / "4" / "runner").is_dir()
    assert [r["update"] for r in _rows(tmp_path / "r")] == [1, 2, 3, 4]
    _leaves_equal(full["runner"], resumed["runner"], exact=True)
    assert np.isfinite(json.loads((tmp_path / "r" / "summary.json").read_text())["pg_loss"])


def _poison_update(monkeypatch, at: int, *, loss: bool):
    """From update `at` on, the learner's update returns NaN parameters (and with `loss`, a NaN
    policy loss): what a diverging run produces, at a known update."""
    from agents import learner as lrn

    real = lrn.Learner.iteration
    calls = []

    def iteration(self, runner, hp=None, *, seeds=False):
        runner, m = real(self, runner, hp, seeds=seeds)
        calls.append(1)
        if len(calls) >= at:
            runner = runner.update(params=jax.tree.map(lambda x: x * np.nan, runner.params))
            if loss:
                m = {**m, "pg_loss": m["pg_loss"] * np.nan}
        return runner, m

    monkeypatch.setattr(lrn.Learner, "iteration", iteration)


@pytest.mark.parametrize("loss", [True, False], ids=["nan_loss", "nan_params_only"])
def test_a_run_that_goes_nan_stops_before_it_saves(tmp_path, monkeypatch, loss):
    # Before: the run trained on to the end, exited normally, wrote NaN into metrics.jsonl and
    # summary.json, and saved NaN checkpoints that rotated the intact ones out (max_to_keep 2).
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), checkpoint_every=1, si_every=0)
    _poison_update(monkeypatch, at=3, loss=loss)
    with pytest.raises(checkpoints.NonFiniteError, match="update 3: .*NaN|update 3: .*nan"):
        ppo.train(cfg)
    rows = _rows(tmp_path / "r")
    assert [r["update"] for r in rows] == ([1, 2] if loss else [1, 2, 3])
    assert all(np.isfinite(v) for r in rows for v in r.values())
    assert checkpoints.ckpt_manager(tmp_path / "r").all_steps() == [1, 2]
    _, _, runner = checkpoints.load_run(tmp_path / "r")
    assert int(runner.update_step) == 2
    assert checkpoints.all_finite(checkpoints.trained_state(runner))
    assert not (tmp_path / "r" / "summary.json").exists()


@pytest.mark.slow
def test_seeds_resume_at_the_newest_update_all_of_them_saved(tmp_path, capsys):
    # Before: killed after seed 3 saved update 3 but before seed 4 did, --resume restored seed 3
    # at 3 and seed 4 at 2 and trained both as if at 3 (seed 4's checkpoint "4" held update 3).
    cfg = dataclasses.replace(TINY, seeds=2, seed=3, checkpoint_every=2,
                              out=str(tmp_path / "k"))  # fmt: skip
    full = ppo.train(dataclasses.replace(cfg, out=str(tmp_path / "full")))
    ppo.train(cfg, stop_after_updates=3)  # both seeds save update 3 when stopping...
    seed4 = tmp_path / "k" / "seed4" / "checkpoints"
    # ...then seed 4's save of update 3 never committed (orbax's temporary directory stays)
    (seed4 / "3").rename(seed4 / "3.orbax-checkpoint-tmp-1765000000")
    capsys.readouterr()
    resumed = ppo.train(dataclasses.replace(cfg, resume=True))
    out = capsys.readouterr().out
    assert "not every seed saved it" in out and "interrupted" in out
    assert not list(seed4.glob("*orbax-checkpoint-tmp*"))
    for seed in (3, 4):
        assert [r["update"] for r in _rows(tmp_path / "k" / f"seed{seed}")] == [1, 2, 3, 4]
    _leaves_equal(jax.device_get(full["runner"]), jax.device_get(resumed["runner"]), exact=True)
    for seed in (3, 4):  # each seed's last checkpoint holds that seed's update 4
        _, _, r = checkpoints.load_run(tmp_path / "k" / f"seed{seed}")
        assert int(r.update_step) == 4


def test_a_kill_during_the_first_save_leaves_a_way_forward(tmp_path, capsys):
    # Before: --resume said "no checkpoint: drop --resume", and without --resume the run said
    # "already holds checkpoints: pass --resume" (orbax's uncommitted step counted).
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"))
    ppo.train(cfg, stop_after_updates=1)
    ckpts = tmp_path / "r" / "checkpoints"
    (ckpts / "1").rename(ckpts / "1.orbax-checkpoint-tmp-1765000000")
    with pytest.raises(ppo.ConfigError, match="drop --resume to start the run over"):
        ppo.train(dataclasses.replace(cfg, resume=True))
    done = ppo.train(cfg)  # what the message says works
    assert done["update"] == 4
    assert [r["update"] for r in _rows(tmp_path / "r")] == [1, 2, 3, 4]
    assert not list(ckpts.glob("*orbax-checkpoint-tmp*"))
    # committed checkpoints are still protected from a new run
    with pytest.raises(ppo.ConfigError, match="already holds checkpoints"):
        ppo.train(cfg)


def test_damaged_metrics_rows_are_moved_aside_with_their_cause(tmp_path):
    # Before: every row that was not JSON was deleted, reported as "logged after update N".
    rows = [json.dumps({"update": u, "env_steps": 8 * u}) for u in range(1, 6)]
    text = "\n".join([rows[0], "{\x00\x00garbage", rows[1], rows[2], rows[3], '{"upd'])
    (tmp_path / "metrics.jsonl").write_text(text)  # the last row cut by a kill: no newline
    dropped = loop.drop_rows_after(tmp_path, 3)
    assert dropped == loop.DroppedRows(later=1, damaged=1, cut=1)
    assert [r["update"] for r in _rows(tmp_path)] == [1, 2, 3]
    aside = (tmp_path / loop.DAMAGED_ROWS).read_text().splitlines()
    assert aside == ["{\x00\x00garbage", '{"upd']
    said = "\n".join(dropped.describe(tmp_path, 3))
    assert "dropped 1 metrics rows logged after update 3" in said
    assert "cut by a kill" in said and "1 metrics rows in the middle" in said


def test_resume_sees_a_flag_given_at_its_default_value(tmp_path, capsys):
    # Before: a flag equal to its default read as "not given": --time-limit-min 0 could not
    # lift a saved limit, and --num-envs 8 over a saved 4 was dropped without a word.
    saved = dataclasses.replace(TINY, num_envs=4, time_limit_min=30.0, out=str(tmp_path / "r"))
    (tmp_path / "r").mkdir()
    checkpoints.write_json(tmp_path / "r" / "config.json", checkpoints.config_to_json(saved))
    argv = ["--out", str(tmp_path / "r"), "--resume", "--time-limit-min", "0"]
    given = ppo.given_flags(argv)
    assert given == {"out", "resume", "time_limit_min"}
    cfg = ppo.PPOConfig(out=str(tmp_path / "r"), resume=True, time_limit_min=0.0)
    merged = ppo.resume_config(cfg, given)
    assert merged.time_limit_min == 0.0 and merged.num_envs == 4
    assert "overriding --time-limit-min 30.0 -> 0.0" in capsys.readouterr().out
    argv = ["--out", str(tmp_path / "r"), "--resume", "--num-envs=8", "--no-progress"]
    assert ppo.given_flags(argv) == {"out", "resume", "num_envs", "progress"}
    with pytest.raises(ppo.ConfigError, match="--num-envs .*saved 4"):
        ppo.resume_config(dataclasses.replace(cfg, time_limit_min=0.0), ppo.given_flags(argv))
    # a flag given with the saved value changes nothing
    same = ppo.resume_config(
        dataclasses.replace(cfg, num_envs=4), ppo.given_flags(["--num-envs", "4"])
    )
    assert same.num_envs == 4 and same.time_limit_min == 30.0


def test_a_checkpoint_of_another_code_version_is_refused_by_name_and_kept(tmp_path, monkeypatch):
    # Before: a checkpoint whose state tree differed from the code's (saved before the MineCLIP
    # reward state gained a leaf) failed orbax's restore, counted as damaged, and --resume moved
    # every step aside (the run was lost); readers called its intact files damaged.
    from agents import build
    from agents import learner as lrn

    cfg = dataclasses.replace(TINY, out=str(tmp_path / "r"), checkpoint_every=2)
    ppo.train(cfg, stop_after_updates=2)
    steps = sorted(p.name for p in (tmp_path / "r" / "checkpoints").iterdir())
    init = lrn.Learner.init

    def init_with_a_new_leaf(self, key, env_params=None):  # this version's state has one more
        return init(self, key, env_params).update(reward_state={"best": jnp.zeros((8,))})

    monkeypatch.setattr(lrn.Learner, "init", init_with_a_new_leaf)
    monkeypatch.setattr(build, "_BUILT", {})  # learners built (and their inits jitted) anew
    with pytest.raises(checkpoints.IncompatibleCheckpointError, match="reward_state/best"):
        ppo.train(dataclasses.replace(cfg, resume=True))
    assert sorted(p.name for p in (tmp_path / "r" / "checkpoints").iterdir()) == steps
    assert not (tmp_path / "r" / "damaged_checkpoints").exists()
    with pytest.raises(
        checkpoints.IncompatibleCheckpointError,
        match="only in this version's state: actor/reward_state/best",
    ):
        checkpoints.load_run(tmp_path / "r")
    monkeypatch.undo()  # the version that saved it resumes it
    resumed = ppo.train(dataclasses.replace(cfg, resume=True))
    assert int(resumed["runner"].update_step) == 4

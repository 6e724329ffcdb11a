"""`mineclip_jax.train` runs that meet a careless flag, a second process or a bad disk. Before
these checks a rerun into an --out with checkpoints resumed it silently with whatever learning
rate, seed or batch size it was given (overwriting the record of the old recipe), nothing kept a
second process out, and a flipped byte in a checkpoint was restored without a word."""

from __future__ import annotations

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax import run_lock
from mineclip_jax import train as tr
from tests.mineclip_jax.test_train import _array_clips

SIZE = (32, 48)  # frames of a tiny model small enough to train in a second


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """(clip directory, a tiny model at SIZE to start from)."""
    root = tmp_path_factory.mktemp("data")
    model = mcj.create(mcj.MineCLIPConfig.tiny(pool="avg", image_size=SIZE), jax.random.key(0))
    return _array_clips(root / "clips", shape=(16, *SIZE, 3)), str(
        mcj.save_checkpoint(model, root / "init")
    )


def _cfg(clips, out, **kw):
    data, init = clips
    return tr.TrainConfig(data=data, out=out, init=init, steps=2, batch_size=4, lr=1e-3,
                          warmup_steps=1, ckpt_every=1, eval_batch_size=6, progress=False,
                          **kw)  # fmt: skip


def _leaves(handle):
    return [np.asarray(x) for x in jax.tree.leaves(handle.params)]


@pytest.mark.slow
def test_resume_is_explicit_and_refuses_a_changed_recipe(clips, tmp_path, capsys):
    cfg = _cfg(clips, tmp_path / "run")
    tr.train(cfg)
    recipe = (tmp_path / "run" / "train_config.json").read_text()
    with pytest.raises(ValueError, match="already holds checkpoints of a run; pass --resume"):
        tr.train(dataclasses.replace(cfg, lr=3e-3))
    with pytest.raises(ValueError) as info:
        tr.train(dataclasses.replace(cfg, lr=3e-3, seed=1, resume=True))
    assert "--lr 0.003 (saved 0.001)" in str(info.value) and "--seed 1 (saved 0)" in str(info.value)
    assert (tmp_path / "run" / "train_config.json").read_text() == recipe  # the record stays
    # the flags a resume may change are taken
    tr.train(dataclasses.replace(cfg, resume=True, log_every=5, max_eval_clips=4))
    assert "resumed" in capsys.readouterr().out
    with pytest.raises(ValueError, match="--resume: no run in"):
        tr.train(_cfg(clips, tmp_path / "new", resume=True))


def test_a_second_run_on_the_same_out_is_refused(clips, tmp_path):
    out = (tmp_path / "run").resolve()
    with run_lock.hold(run_lock.run_lock_path(out)):  # another run holds the directory
        with pytest.raises(run_lock.RunLockedError, match=f"pid {os.getpid()} on host"):
            tr.train(_cfg(clips, out))
    assert not (out / "checkpoints").exists()


@pytest.mark.slow
def test_a_damaged_checkpoint_is_moved_aside_and_the_run_resumes_before_it(clips, tmp_path, capsys):
    whole, _ = tr.train(_cfg(clips, tmp_path / "whole"))
    cfg = _cfg(clips, tmp_path / "run")
    tr.train(cfg)
    step2 = tmp_path / "run" / "checkpoints" / "2"
    assert (step2 / "SHA256SUMS").is_file()
    data = max((f for f in step2.rglob("*") if f.is_file() and f.name != "SHA256SUMS"),
               key=lambda f: f.stat().st_size)  # fmt: skip
    raw = bytearray(data.read_bytes())
    for i in range(len(raw) // 2, len(raw) // 2 + 16):
        raw[i] ^= 0xFF
    data.write_bytes(bytes(raw))
    capsys.readouterr()
    resumed, _ = tr.train(dataclasses.replace(cfg, resume=True))
    out = capsys.readouterr().out
    assert "checkpoint step 2" in out and "does not match its checksum" in out
    assert f"resumed {(tmp_path / 'run').resolve()} at step 1" in out
    assert (tmp_path / "run" / "damaged_checkpoints" / "2").is_dir()
    for a, b in zip(_leaves(resumed), _leaves(whole), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_run_whose_loss_goes_nan_stops_before_it_saves(clips, tmp_path, monkeypatch):
    # Before: the run saved the NaN weights (rotating the intact checkpoints out) and wrote a
    # NaN model.
    real = tr.make_train_step

    def poisoned(*args, **kwargs):  # from step 2 on, the weights and the loss are NaN
        step_fn = real(*args, **kwargs)

        def step(state, frames, tokens):
            state, metrics = step_fn(state, frames, tokens)
            bad = state.step >= 2
            params = jax.tree.map(lambda x: jnp.where(bad, x * jnp.nan, x), state.params)
            loss = jnp.where(bad, jnp.nan, metrics["loss"])
            return state.replace(params=params), {**metrics, "loss": loss}

        return step

    monkeypatch.setattr(tr, "make_train_step", poisoned)
    cfg = _cfg(clips, tmp_path / "run", seed=7)  # a recipe of its own: compiled with the patch
    with pytest.raises(tr.NonFiniteError, match="step 2: the loss"):
        tr.train(cfg)
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == ["1"]
    assert not (tmp_path / "run" / "model").exists()

"""Damaged MineCLIP checkpoints on disk: a flipped byte in a copied model, a damaged config.json
or judge.json. Before these checks a copied mini with one flipped byte loaded (its weights off
by up to 1.8e4), save_checkpoint wrote no checksums, and a damaged JSON file raised a bare
JSONDecodeError that named no file."""

from __future__ import annotations

import hashlib
import shutil

import pytest

import mineclip_jax as mcj
from mineclip_jax import checkpoint as ck
from mineclip_jax import evaluator


def _flip_byte(path, at=None):
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if at is None else at] ^= 0x40
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_a_copied_model_is_refused_naming_the_file(tmp_path):
    copy = tmp_path / "mini"
    shutil.copytree(ck.shipped_path("mini"), copy)
    mcj.load_checkpoint(copy)  # the intact copy loads
    _flip_byte(copy / "params.msgpack")
    with pytest.raises(mcj.CheckpointMismatchError) as info:
        mcj.load_checkpoint(copy)
    assert str(copy / "params.msgpack") in str(info.value)
    assert "does not match its checksum" in str(info.value) and "copy it again" in str(info.value)


def test_save_checkpoint_writes_checksums_that_load_verifies(tmp_path):
    handle = mcj.create(mcj.MineCLIPConfig.tiny(pool="avg"))
    d = mcj.save_checkpoint(handle, tmp_path / "c")
    listed = dict(reversed(line.split()) for line in (d / "SHA256SUMS").read_text().splitlines())
    for name in ("config.json", "params.msgpack"):
        assert listed[name] == hashlib.sha256((d / name).read_bytes()).hexdigest()
    mcj.load_checkpoint(d)
    _flip_byte(d / "params.msgpack")
    with pytest.raises(mcj.CheckpointMismatchError, match="params.msgpack is missing or does not"):
        mcj.load_checkpoint(d)


def test_a_damaged_config_json_names_the_file(tmp_path):
    handle = mcj.create(mcj.MineCLIPConfig.tiny(pool="avg"))
    d = mcj.save_checkpoint(handle, tmp_path / "c")
    (d / "config.json").write_text('{"format": "mineclip-jax/1", "config": {')  # cut short
    with pytest.raises(mcj.CheckpointMismatchError, match="config.json is missing or does not"):
        mcj.load_checkpoint(d)
    (d / "SHA256SUMS").unlink()  # no checksums (an older save): the JSON reader names it
    with pytest.raises(mcj.CheckpointMismatchError) as info:
        mcj.load_checkpoint(d)
    assert f"{d / 'config.json'} is damaged" in str(info.value)
    with pytest.raises(mcj.CheckpointMismatchError, match="config.json is damaged"):
        ck.checkpoint_image_size(d)
    (d / "config.json").write_text('{"format": "mineclip-jax/1", "config": {"bogus": 1}}')
    with pytest.raises(mcj.CheckpointMismatchError, match="config.json holds no valid model"):
        mcj.load_checkpoint(d)


def test_a_damaged_judge_json_names_the_file(tmp_path):
    copy = tmp_path / "mini"
    shutil.copytree(ck.shipped_path("mini"), copy)
    assert evaluator.judge_entries(copy)
    (copy / "judge.json").write_bytes((copy / "judge.json").read_bytes()[:50])
    with pytest.raises(mcj.CheckpointMismatchError) as info:
        evaluator.judge_entries(copy)
    assert f"{copy / 'judge.json'} is damaged" in str(info.value)
    (copy / "judge.json").write_text("[]")
    with pytest.raises(ValueError, match="judge.json has no 'tasks'"):
        evaluator.judge_entries(copy)

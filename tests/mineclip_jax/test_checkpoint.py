"""Native save/load, .npz and path dispatch of load_checkpoint, torch-absent error."""

import json
import sys

import jax
import numpy as np
import pytest

import mineclip_jax as mcj
from tests.mineclip_jax import numpy_reference as ref


@pytest.fixture(scope="module")
def tiny():
    return ref.tiny_handle("attn")


@pytest.fixture(scope="module")
def feats(tiny):
    return np.random.default_rng(0).normal(size=(2, 5, tiny.config.embed_dim)).astype(np.float32)


def test_native_round_trip(tiny, feats, tmp_path):
    mcj.save_checkpoint(tiny, tmp_path / "ckpt")
    meta = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert meta["config"]["pool"] == "attn" and meta["format"] == "mineclip-jax/1"
    mc = mcj.load_checkpoint(tmp_path / "ckpt")
    assert mc.config == tiny.config
    jax.tree.map(
        np.testing.assert_array_equal, jax.device_get(mc.params), jax.device_get(tiny.params)
    )
    np.testing.assert_array_equal(mc.aggregate(feats), tiny.aggregate(feats))
    bf16 = mcj.load_checkpoint(str(tmp_path / "ckpt"), dtype="bfloat16")
    assert bf16.config == tiny.config.replace(dtype="bfloat16")


def test_native_checkpoint_with_wrong_params_is_refused(tiny, tmp_path):
    mcj.save_checkpoint(tiny, tmp_path / "a")
    mcj.save_checkpoint(ref.tiny_handle("avg"), tmp_path / "b")
    # avg params under an attn config: the temporal encoder is missing.
    (tmp_path / "a" / "params.msgpack").write_bytes(
        (tmp_path / "b" / "params.msgpack").read_bytes()
    )
    with pytest.raises(mcj.CheckpointMismatchError, match="temporal_encoder"):
        mcj.load_checkpoint(tmp_path / "a")


def test_npz_and_mapping_sources(tiny, feats, tmp_path):
    sd = mcj.export_state_dict(tiny)
    np.savez(tmp_path / "w.npz", **sd)
    mc = mcj.load_checkpoint(tmp_path / "w.npz", tiny.config)
    np.testing.assert_array_equal(mc.aggregate(feats), tiny.aggregate(feats))
    mc2 = mcj.load_checkpoint({"state_dict": {"model." + k: v for k, v in sd.items()}}, tiny.config)
    jax.tree.map(
        np.testing.assert_array_equal, jax.device_get(mc2.params), jax.device_get(mc.params)
    )


def test_path_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        mcj.load_checkpoint(tmp_path / "nothing.pth")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="not a native mineclip-jax checkpoint"):
        mcj.load_checkpoint(tmp_path / "empty")


def test_pth_without_torch_names_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "attn.pth"
    path.write_bytes(b"not really a checkpoint")
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(ImportError, match=r'pip install "mineclip-jax\[torch\]"'):
        mcj.load_checkpoint(path)
    with pytest.raises(ImportError, match=r'pip install "mineclip-jax\[torch\]"'):
        mcj.save_torch_checkpoint(ref.tiny_handle("attn"), tmp_path / "out.pth")

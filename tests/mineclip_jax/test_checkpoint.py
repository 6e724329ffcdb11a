"""Native save/load, .npz and path dispatch of load_checkpoint, torch-absent error."""

import json
import pickle
import sys
import zipfile

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
    path.write_bytes(pickle.dumps({"state_dict": {}}, protocol=2))  # a legacy torch.save file
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(ImportError, match=r'pip install "mineclip-jax\[torch\]"'):
        mcj.load_checkpoint(path)
    with pytest.raises(ImportError, match=r'pip install "mineclip-jax\[torch\]"'):
        mcj.save_torch_checkpoint(ref.tiny_handle("attn"), tmp_path / "out.pth")


@pytest.mark.parametrize(
    "content",
    [b"", b"not really a checkpoint", bytes(range(256)) * 4],
    ids=["empty", "text", "random"],
)
def test_a_file_that_is_no_checkpoint_says_so_before_torch(tmp_path, monkeypatch, content):
    path = tmp_path / "attn.pth"
    path.write_bytes(content)
    for torch_missing in (True, False):
        if torch_missing:
            monkeypatch.setitem(sys.modules, "torch", None)
        else:
            monkeypatch.delitem(sys.modules, "torch", raising=False)
        with pytest.raises(mcj.CheckpointMismatchError) as info:
            mcj.load_checkpoint(path)
        message = str(info.value)
        assert message.startswith(f"{path} is not a checkpoint")
        assert "expected a PyTorch checkpoint" in message and "native checkpoint" in message
        assert "torch" not in message.split("expected")[0]
        assert "install" not in message and "weights_only" not in message


def test_a_zip_that_is_neither_torch_nor_npz_is_refused(tmp_path):
    path = tmp_path / "model.pth"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(mcj.CheckpointMismatchError, match=r"zip archive holding \['readme.txt'\]"):
        mcj.load_checkpoint(path)


def test_float16_storage_loads_back_as_float32(tiny, tmp_path):
    mcj.save_checkpoint(tiny, tmp_path / "half", dtype="float16")
    full = mcj.save_checkpoint(tiny, tmp_path / "full")
    half_size = (tmp_path / "half" / "params.msgpack").stat().st_size
    assert half_size < 0.6 * (full / "params.msgpack").stat().st_size
    mc = mcj.load_checkpoint(tmp_path / "half")
    for got, want in zip(jax.tree.leaves(mc.params), jax.tree.leaves(tiny.params)):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.asarray(want).astype(np.float16).astype(np.float32))
    assert mc.source == str(tmp_path / "half")
    with pytest.raises(ValueError, match="dtype must be"):
        mcj.save_checkpoint(tiny, tmp_path / "x", dtype="int8")


def test_checksums_detect_a_damaged_file(tiny, tmp_path):
    from mineclip_jax import checkpoint as ck

    d = mcj.save_checkpoint(tiny, tmp_path / "c")
    ck.write_checksums(d)
    ck.verify_checksums(d)
    line = (d / "SHA256SUMS").read_text().splitlines()[1]
    import hashlib

    assert line.split()[0] == hashlib.sha256((d / "params.msgpack").read_bytes()).hexdigest()
    data = bytearray((d / "params.msgpack").read_bytes())
    data[-1] ^= 1
    (d / "params.msgpack").write_bytes(bytes(data))
    with pytest.raises(mcj.CheckpointMismatchError, match="does not match its checksum"):
        ck.verify_checksums(d)

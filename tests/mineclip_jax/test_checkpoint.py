"""Native save/load, .npz and path dispatch of load_checkpoint, torch-absent error."""

import json
import pickle
import sys
import zipfile

import jax
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax import checkpoint as ck
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
    with pytest.raises(mcj.CheckpointMismatchError, match="does not match its checksum"):
        mcj.load_checkpoint(tmp_path / "a")
    # assembled by hand, without checksums: the structure check names the missing weights
    (tmp_path / "a" / "SHA256SUMS").unlink()
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
        mcj.save_checkpoint(tiny, tmp_path / "x", dtype="bfloat16")


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


# ---------------------------------------------------------------------------- int8 storage
HALF_STEP = 0.5 * (1 + 1e-4)  # max abs error per row, in units of the row's scale


def reference_int8(x):
    """NumPy reference of the int8 storage: symmetric per row, scale = max|row| / 127, rounded
    to the nearest integer; an all-zero row has scale 0 and decodes to zeros."""
    x = np.asarray(x, np.float32)
    scale = np.abs(x).max(axis=1) / np.float32(127)
    q = np.zeros(x.shape, np.int8)
    rows = scale > 0
    q[rows] = np.clip(np.rint(x[rows] / scale[rows, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32), q.astype(np.float32) * scale[:, None]


def table_with_edge_rows(shape, seed=0):
    x = np.random.default_rng(seed).normal(scale=0.05, size=shape).astype(np.float32)
    x[0] = 0.0  # all-zero row
    x[1] = -np.abs(x[1])  # negative values only
    x[2, :] = 0.0
    x[2, 3] = -1e-30  # one tiny negative value: scale is tiny but not zero
    x[3] = 1e4 * x[3]  # a large row
    return x


def test_quantize_int8_matches_the_numpy_reference():
    x = table_with_edge_rows((50, 64))
    with np.errstate(all="raise"):  # no division by zero for the all-zero row
        q, scale = ck.quantize_int8(x)
    q_ref, scale_ref, decoded_ref = reference_int8(x)
    assert q.dtype == np.int8 and scale.dtype == np.float32 and scale.shape == (50,)
    np.testing.assert_array_equal(q, q_ref)
    np.testing.assert_array_equal(scale, scale_ref)
    decoded = ck.dequantize_int8(q, scale)
    np.testing.assert_array_equal(decoded, decoded_ref)
    # Every element within half a step of its row's original value (1e-4 relative slack: x / scale
    # is rounded in float32, so a value at a .5 tie may land a few float32 ulps past it).
    err = np.abs(decoded - x).max(axis=1)
    assert np.all(err <= HALF_STEP * scale), (err / np.maximum(scale, 1e-45)).max()
    assert scale[0] == 0 and not decoded[0].any()
    assert np.all(decoded[1] <= 0) and q[1].min() == -127
    assert decoded[2, 3] < 0 and np.count_nonzero(decoded[2]) == 1
    with pytest.raises(ValueError, match="2-D"):
        ck.quantize_int8(np.zeros(5, np.float32))


def test_int8_storage_round_trip(tiny, tmp_path):
    """float32 -> int8 storage -> load: the token embedding (49,408 x 64, the one array of at
    least 1M elements) dequantised as the NumPy reference, every other array as float16."""
    params = jax.device_get(tiny.params)
    emb = table_with_edge_rows(params["text_encoder"]["token_embedding"]["embedding"].shape, 1)
    params["text_encoder"]["token_embedding"]["embedding"] = emb
    handle = tiny.replace(params=params)
    d = mcj.save_checkpoint(handle, tmp_path / "q", dtype="int8")
    meta = json.loads((d / "config.json").read_text())
    assert meta["format"] == "mineclip-jax/2"
    assert meta["storage"]["int8"] == [["text_encoder", "token_embedding", "embedding"]]
    with np.errstate(all="raise"):
        mc = mcj.load_checkpoint(d)
    assert mc.config == tiny.config
    _, scale, want_emb = reference_int8(emb)
    got_emb = mc.params["text_encoder"]["token_embedding"]["embedding"]
    assert got_emb.dtype == np.float32
    np.testing.assert_array_equal(got_emb, want_emb)
    assert np.all(np.abs(got_emb - emb).max(axis=1) <= HALF_STEP * scale)
    assert not got_emb[0].any()
    paths = jax.tree_util.tree_leaves_with_path(params)
    for (path, want), got in zip(paths, jax.tree.leaves(mc.params)):
        assert got.dtype == np.float32
        if "token_embedding" not in jax.tree_util.keystr(path):
            np.testing.assert_array_equal(got, want.astype(np.float16).astype(np.float32))
    # Less than 0.3 of the float32 file (int8 + per-row scales + float16 for the rest).
    full = mcj.save_checkpoint(handle, tmp_path / "f32")
    size = (d / "params.msgpack").stat().st_size
    assert size < 0.3 * (full / "params.msgpack").stat().st_size


def test_int8_storage_keeps_the_model_outputs(tiny, feats, tmp_path):
    """A tiny model saved with int8 storage computes what it computed (video side: float16
    rounding only; text side: the int8 embedding too), within the stated tolerances."""
    mc = mcj.load_checkpoint(mcj.save_checkpoint(tiny, tmp_path / "q", dtype="int8"))
    prompts = ["hunt a cow", "find a nether portal", "put carpets on the floor"]
    want_t, got_t = np.asarray(tiny.encode_text(prompts)), np.asarray(mc.encode_text(prompts))
    frames = np.random.default_rng(3).integers(0, 256, (2, 4, 160, 256, 3), dtype=np.uint8)
    want_v, got_v = np.asarray(tiny.encode_video(frames)), np.asarray(mc.encode_video(frames))

    def cos(a, b):
        return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))

    # Stated tolerance: cosine >= 0.999 and 2% of the feature norm in max abs difference.
    for want, got in ((want_t, got_t), (want_v, got_v)):
        assert np.all(cos(want, got) >= 0.999), cos(want, got)
        assert np.abs(got - want).max() <= 0.02 * np.linalg.norm(want, axis=-1).min()
    np.testing.assert_allclose(mc.aggregate(feats), tiny.aggregate(feats), rtol=0.02, atol=0.02)


def _old_format_dir(handle, directory, dtype):
    """A native directory written as mineclip-jax wrote it before int8 storage existed."""
    from flax import serialization

    directory.mkdir()
    params = jax.tree.map(lambda x: np.asarray(x, dtype=dtype), jax.device_get(handle.params))
    (directory / "params.msgpack").write_bytes(serialization.msgpack_serialize(params))
    meta = {"format": "mineclip-jax/1", "config": handle.config.to_dict()}
    (directory / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return directory


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_old_format_dirs_still_load_bit_exactly(tiny, tmp_path, dtype):
    old = _old_format_dir(tiny, tmp_path / "old", dtype)
    mc = mcj.load_checkpoint(old)
    for got, want in zip(jax.tree.leaves(mc.params), jax.tree.leaves(tiny.params)):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.asarray(want).astype(dtype).astype(np.float32))
    # float32 and float16 saves still write exactly that format (older versions read them).
    new = mcj.save_checkpoint(tiny, tmp_path / "new", dtype=dtype)
    for name in ("config.json", "params.msgpack"):
        assert (new / name).read_bytes() == (old / name).read_bytes()


def test_an_unknown_format_names_the_problem_and_the_fix(tiny, tmp_path):
    d = mcj.save_checkpoint(tiny, tmp_path / "c", dtype="int8")
    (d / "SHA256SUMS").unlink()  # edited by hand below: its checksums would refuse it first
    meta = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**meta, "format": "mineclip-jax/99"}))
    with pytest.raises(mcj.CheckpointMismatchError) as info:
        mcj.load_checkpoint(d)
    message = str(info.value)
    assert "'mineclip-jax/99'" in message and "cannot read" in message
    assert "'mineclip-jax/1', 'mineclip-jax/2'" in message
    assert "pip install -U mineclip-jax" in message
    del meta["storage"]
    (d / "config.json").write_text(json.dumps(meta))
    with pytest.raises(mcj.CheckpointMismatchError, match="no storage.int8 list"):
        mcj.load_checkpoint(d)


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_a_truncated_params_file_says_so(tiny, tmp_path, dtype):
    d = mcj.save_checkpoint(tiny, tmp_path / "c", dtype=dtype)
    data = (d / "params.msgpack").read_bytes()
    (d / "params.msgpack").write_bytes(data[: len(data) // 2])
    with pytest.raises(mcj.CheckpointMismatchError, match="does not match its checksum"):
        mcj.load_checkpoint(d)
    (d / "SHA256SUMS").unlink()  # an older save, without checksums: the reader says it too
    for keep in (len(data) // 2, len(data) - 1, 0):
        (d / "params.msgpack").write_bytes(data[:keep])
        with pytest.raises(mcj.CheckpointMismatchError, match="truncated or damaged"):
            mcj.load_checkpoint(d)


def test_int8_params_missing_their_table_are_refused(tiny, tmp_path):
    d = mcj.save_checkpoint(tiny, tmp_path / "q", dtype="int8")
    mcj.save_checkpoint(tiny, tmp_path / "h", dtype="float16")
    (d / "params.msgpack").write_bytes((tmp_path / "h" / "params.msgpack").read_bytes())
    (d / "SHA256SUMS").unlink()  # assembled by hand: no checksums to refuse it first
    with pytest.raises(mcj.CheckpointMismatchError, match="does not hold the int8 array"):
        mcj.load_checkpoint(d)

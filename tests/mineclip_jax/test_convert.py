"""Official state dict <-> Flax params: key coverage, round trips, refusal of bad dicts, and the
torch-compatible bicubic position-table resize."""

from pathlib import Path

import jax
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax.convert import bicubic_matrix, param_entries
from tests.mineclip_jax import numpy_reference as ref

KEYS_FILE = Path(__file__).with_name("official_keys_attn.txt")


def committed_keys() -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for line in KEYS_FILE.read_text().splitlines():
        if line and not line.startswith("#"):
            key, shape = line.split(" ", 1)
            out.append((key, tuple(int(s) for s in shape.strip("[]").split(",") if s.strip())))
    return out


def zeros_state_dict(cfg) -> dict:
    # Broadcast views: full-size shapes without allocating 600 MB.
    return {k: np.broadcast_to(np.float32(0), s) for k, s in mcj.official_key_shapes(cfg)}


@pytest.fixture(scope="module")
def tiny():
    return ref.tiny_handle("attn")


# --------------------------------------------------------------------------- key coverage
def test_official_key_list_matches_committed_dump():
    expected = committed_keys()
    assert len(expected) == 788
    assert mcj.official_key_shapes(mcj.MineCLIPConfig.attn()) == expected
    avg = [(k, s) for k, s in expected if not k.startswith("temporal_encoder.")]
    assert len(avg) == 761
    assert mcj.official_key_shapes(mcj.MineCLIPConfig.avg()) == avg


@pytest.mark.parametrize("pool", ["attn", "avg"])
def test_every_flax_param_has_exactly_one_official_tensor(pool):
    cfg = mcj.MineCLIPConfig.attn() if pool == "attn" else mcj.MineCLIPConfig.avg()
    shapes = mcj.param_shapes(cfg)
    flax_paths = {
        tuple(k.key for k in path): leaf.shape
        for path, leaf in jax.tree_util.tree_leaves_with_path(shapes)
    }
    entries = param_entries(cfg)
    mapped = {e.path: e for e in entries}
    assert len(mapped) == len(entries) == len(flax_paths)  # a bijection
    assert set(mapped) == set(flax_paths)
    for path, shape in flax_paths.items():  # torch shape = Flax shape up to the layout change
        assert sorted(mapped[path].shape) == sorted(shape), path
    assert len({k for e in entries for k in e.keys}) == (788 if pool == "attn" else 761)


@pytest.mark.parametrize("pool", ["attn", "avg"])
def test_infer_config_detects_variant_from_full_size_keys(pool):
    cfg = mcj.infer_config(zeros_state_dict(mcj.MineCLIPConfig(pool=pool)))
    assert cfg == (mcj.MineCLIPConfig.attn() if pool == "attn" else mcj.MineCLIPConfig.avg())


# ---------------------------------------------------------------------------- round trips
def test_params_state_dict_round_trip(tiny):
    sd = mcj.export_state_dict(tiny)
    assert list(sd) == [k for k, _ in mcj.official_key_shapes(tiny.config)]
    # Alias keys are one array, as torch saves one storage per alias group.
    assert sd["image_encoder.conv1.weight"] is sd["clip_model.vision_model.conv1.weight"]
    back = mcj.state_dict_to_params(sd, tiny.config)
    jax.tree.map(np.testing.assert_array_equal, back, jax.device_get(tiny.params))
    # Layout checks by hand: Linear [out, in] <-> kernel [in, out]; conv OIHW <-> HWIO.
    blk = tiny.params["image_encoder"]["blocks_0"]["attn"]["in_proj"]["kernel"]
    np.testing.assert_array_equal(
        sd["image_encoder.blocks.0.attn.in_proj_weight"], np.asarray(blk).T
    )
    conv = np.asarray(tiny.params["image_encoder"]["conv1"]["kernel"])
    np.testing.assert_array_equal(sd["image_encoder.conv1.weight"][5, 2, 3, 7], conv[3, 7, 2, 5])


def test_load_state_dict_infers_tiny_config_with_overrides(tiny):
    sd = mcj.export_state_dict(tiny)
    cfg = tiny.config
    heads = dict(
        vision_heads=cfg.vision_heads,
        text_heads=cfg.text_heads,
        temporal_heads=cfg.temporal_heads,
        temporal_dim_head=cfg.temporal_dim_head,
    )
    mc = mcj.load_state_dict(
        {"state_dict": {"model." + k: v for k, v in sd.items()}, "epoch": 3}, **heads
    )
    assert mc.config == cfg
    feats = np.random.default_rng(0).normal(size=(1, 4, cfg.embed_dim)).astype(np.float32)
    np.testing.assert_array_equal(mc.aggregate(feats), tiny.aggregate(feats))


def test_only_canonical_or_only_alias_keys_suffice(tiny):
    full = mcj.export_state_dict(tiny)
    canonical = mcj.params_to_state_dict(tiny.params, tiny.config, aliases=False)
    assert len(canonical) < len(full)
    mcj.state_dict_to_params(canonical, tiny.config)
    # Drop the canonical copies: the remaining alias copies are used instead.
    only_alias = {
        k: v
        for k, v in full.items()
        if k not in canonical or k.startswith("temporal") or k.startswith("reward_head.video")
    }
    params = mcj.state_dict_to_params(only_alias, tiny.config)
    jax.tree.map(np.testing.assert_array_equal, params, jax.device_get(tiny.params))


# ------------------------------------------------------------------------------ refusals
def test_missing_unexpected_and_misshaped_keys_are_listed(tiny):
    sd = dict(mcj.export_state_dict(tiny))
    for prefix in (
        "image_encoder.",
        "reward_head.clip_model.vision_model.",
        "clip_model.vision_model.",
    ):
        del sd[prefix + "ln_post.bias"]
    del sd["temporal_encoder.attn.model.norm.weight"]
    sd["clip_model.text_model.extra_head.weight"] = np.zeros(3, np.float32)
    sd["reward_head.video_adapter.0.bias"] = np.zeros(5, np.float32)
    with pytest.raises(mcj.CheckpointMismatchError) as err:
        mcj.state_dict_to_params(sd, tiny.config)
    msg = str(err.value)
    assert "missing keys" in msg and "image_encoder.ln_post.bias" in msg
    assert "temporal_encoder.attn.model.norm.weight" in msg
    assert "unexpected keys (1)" in msg and "clip_model.text_model.extra_head.weight" in msg
    assert "wrong shapes" in msg and "reward_head.video_adapter.0.bias: got [5]" in msg


def test_disagreeing_alias_copies_are_refused(tiny):
    sd = {k: np.array(v) for k, v in mcj.export_state_dict(tiny).items()}
    sd["clip_model.vision_model.ln_pre.weight"] += 1.0
    with pytest.raises(
        mcj.CheckpointMismatchError, match="clip_model.vision_model.ln_pre.weight differs"
    ):
        mcj.state_dict_to_params(sd, tiny.config)


def test_avg_checkpoint_into_attn_config_is_refused():
    sd = zeros_state_dict(mcj.MineCLIPConfig.avg())
    with pytest.raises(mcj.CheckpointMismatchError, match=r"missing keys .*\(27\)"):
        mcj.state_dict_to_params(sd, mcj.MineCLIPConfig.attn())


def test_non_mineclip_dict_gives_clear_error():
    with pytest.raises(mcj.CheckpointMismatchError, match="cannot infer the MineCLIP architecture"):
        mcj.infer_config({"fc.weight": np.zeros((2, 2))})


# ------------------------------------------------------------------ bicubic pos-embed resize
def torch_bicubic_reference(image: np.ndarray, out_h: int, out_w: int, a: float = -0.75):
    """Per-output-pixel bicubic as torch's upsample_bicubic2d (align_corners=False): source
    coordinate (dst + 0.5) * in/out - 0.5, 4x4 taps with clamped indices, Keys kernel."""

    def kernel(x):
        x = abs(x)
        if x <= 1:
            return (a + 2) * x**3 - (a + 3) * x**2 + 1
        if x < 2:
            return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
        return 0.0

    in_h, in_w = image.shape[:2]
    out = np.zeros((out_h, out_w) + image.shape[2:])
    for i in range(out_h):
        sy = (i + 0.5) * in_h / out_h - 0.5
        y0 = int(np.floor(sy))
        for j in range(out_w):
            sx = (j + 0.5) * in_w / out_w - 0.5
            x0 = int(np.floor(sx))
            acc = 0.0
            for dy in range(-1, 3):
                for dx in range(-1, 3):
                    yy = min(max(y0 + dy, 0), in_h - 1)
                    xx = min(max(x0 + dx, 0), in_w - 1)
                    acc = acc + kernel(sy - (y0 + dy)) * kernel(sx - (x0 + dx)) * image[yy, xx]
            out[i, j] = acc
    return out


def test_bicubic_hand_values():
    # 4 -> 2: source x = 0.5, weights [-0.09375, 0.59375, 0.59375, -0.09375] at taps
    # (clamped) 0, 0, 1, 2 -> 1.40625 for the input 1, 2, 3, 4.
    m = bicubic_matrix(4, 2)
    np.testing.assert_allclose(m[0], [0.5, 0.59375, -0.09375, 0.0])
    np.testing.assert_allclose(m @ np.array([1.0, 2, 3, 4]), [1.40625, 3.59375])
    np.testing.assert_allclose(bicubic_matrix(5, 5), np.eye(5), atol=1e-12)  # same size: identity
    np.testing.assert_allclose(bicubic_matrix(14, 10).sum(1), 1.0)  # weights sum to one


def test_resize_pos_embed_matches_reference_14x14_to_10x16():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(1 + 14 * 14, 6)).astype(np.float32)
    resized = mcj.resize_pos_embed(table, 14, (10, 16))
    assert resized.shape == (161, 6)
    np.testing.assert_array_equal(resized[0], table[0])  # cls row kept
    expected = torch_bicubic_reference(table[1:].reshape(14, 14, 6).astype(np.float64), 10, 16)
    np.testing.assert_allclose(resized[1:].reshape(10, 16, 6), expected, atol=1e-5)
    with pytest.raises(ValueError, match="cls row"):
        mcj.resize_pos_embed(table[:100], 14, (10, 16))


def test_init_from_openai_clip_maps_names_and_resizes():
    cfg = ref.small_init_config()  # 32x48 frames: a 2x3 patch grid
    rng = np.random.default_rng(1)
    towers = {
        k: rng.normal(size=s).astype(np.float32)
        for k, s in mcj.official_key_shapes(cfg)
        if k.startswith(("image_encoder.", "clip_model.text_model."))
    }
    clip = {"visual.positional_embedding": rng.normal(size=(197, cfg.vision_width))}
    vision_names = {"cls_token": "class_embedding", "projection": "proj"}
    text_names = {"pos_embed": "positional_embedding", "projection": "text_projection"}
    for key, value in towers.items():
        if key.endswith("image_encoder.pos_embed"):
            continue
        if key.startswith("image_encoder."):
            name = vision_names.get(key[len("image_encoder.") :], key[len("image_encoder.") :])
            clip["visual." + name.replace("blocks.", "transformer.resblocks.")] = value
        else:
            name = key[len("clip_model.text_model.") :]
            clip[text_names.get(name, name).replace("blocks.", "transformer.resblocks.")] = value
    clip["logit_scale"] = np.float32(4.6)
    mc = mcj.init_from_openai_clip(clip, cfg)
    got = mcj.params_to_state_dict(mc.params, cfg, aliases=False)
    for key, value in towers.items():
        if not key.endswith("image_encoder.pos_embed"):
            np.testing.assert_array_equal(got[key], value, err_msg=key)
    np.testing.assert_allclose(
        got["image_encoder.pos_embed"],
        mcj.resize_pos_embed(clip["visual.positional_embedding"], 14, (2, 3)),
    )
    assert float(got["clip_model.logit_scale"]) == pytest.approx(4.6)
    assert got["reward_head.video_residual_weight"] == 4.0  # not in CLIP: fresh init

"""MineCLIP Flax modules vs an independent NumPy reference (tiny config), API behaviour."""

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax.model import CLIPAttention, Dense, preprocess_frames, quick_gelu
from tests.mineclip_jax import numpy_reference as ref

H, W = 160, 256


@pytest.fixture(scope="module")
def attn():
    return ref.tiny_handle("attn")


@pytest.fixture(scope="module")
def avg():
    return ref.tiny_handle("avg")


@pytest.fixture(scope="module")
def video():
    return np.random.default_rng(0).integers(0, 256, size=(2, 3, H, W, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def tokens():
    return mcj.tokenize(["shear a sheep", "milk a cow", "a" * 30 + " find a nether portal!"])


def official_sd(handle):
    return mcj.export_state_dict(handle)


def cfg_heads(handle):
    c = handle.config
    return c.vision_heads, c.vision_layers, c.text_heads, c.text_layers


# ------------------------------------------------------------------------- small pieces
def test_preprocessing_matches_numpy():
    frames = np.random.default_rng(1).integers(0, 256, size=(2, 4, 5, 3), dtype=np.uint8)
    expected = (frames / 255.0 - np.array(mcj.MC_IMAGE_MEAN)) / np.array(mcj.MC_IMAGE_STD)
    np.testing.assert_allclose(preprocess_frames(jnp.asarray(frames)), expected, atol=1e-6)
    # Hand value: white pixel, red channel = (1 - 0.3331) / 0.2439.
    white = preprocess_frames(jnp.full((1, 1, 3), 255, jnp.uint8))
    np.testing.assert_allclose(white[0, 0, 0], (1 - 0.3331) / 0.2439, rtol=1e-6)


def test_quick_gelu_hand_values():
    x = jnp.array([-1.0, 0.0, 2.0])
    expected = np.array([-1.0 / (1 + np.exp(1.702)), 0.0, 2.0 / (1 + np.exp(-3.404))])
    np.testing.assert_allclose(quick_gelu(x), expected, rtol=1e-6)


@pytest.mark.parametrize("use_jit", [False, True])
def test_quick_gelu_tanh_form_equals_sigmoid_form(use_jit):
    # quick_gelu computes x * sigmoid(1.702 x) as 0.5 x (1 + tanh(0.851 x)) (faster on CPU).
    # Where 1 + tanh cancels (x < about -5, |result| < 1e-4) only the absolute error is small.
    x = jnp.linspace(-20.0, 20.0, 8001, dtype=jnp.float32)
    gelu = jax.jit(quick_gelu) if use_jit else quick_gelu
    expected = x * jax.nn.sigmoid(1.702 * x)
    np.testing.assert_allclose(gelu(x), expected, rtol=0, atol=2e-6)
    big = np.abs(np.asarray(expected)) > 0.1
    np.testing.assert_allclose(np.asarray(gelu(x))[big], np.asarray(expected)[big], rtol=1e-5)


@pytest.mark.parametrize("use_jit", [False, True])
def test_dense_accumulates_in_float32(use_jit):
    x = jax.random.normal(jax.random.key(0), (5, 7, 96))
    ours = Dense(32, dtype=jnp.float32, bias_init=jax.nn.initializers.normal(1.0))
    params = ours.init(jax.random.key(1), x)
    apply = jax.jit(ours.apply) if use_jit else ours.apply
    reference = nn.Dense(32, dtype=jnp.float32).apply(params, x)
    np.testing.assert_allclose(apply(params, x), reference, rtol=1e-6, atol=1e-6)
    # bfloat16: the bf16 x bf16 product is kept in float32 until after the bias add.
    ours16 = Dense(32, dtype=jnp.bfloat16)
    apply16 = jax.jit(ours16.apply) if use_jit else ours16.apply
    y16 = apply16(params, x)
    assert y16.dtype == jnp.bfloat16
    kernel, bias = params["params"]["kernel"], params["params"]["bias"]
    bf = lambda a: a.astype(jnp.bfloat16).astype(jnp.float32)  # noqa: E731
    expected = (bf(x) @ bf(kernel) + bf(bias)).astype(jnp.bfloat16)
    np.testing.assert_allclose(
        y16.astype(jnp.float32), expected.astype(jnp.float32), rtol=1e-2, atol=1e-2
    )


def _attention_token_major(params, x, heads, causal):
    """The einsum formulation CLIPAttention used before the head-major rewrite: q/k/v as
    [..., T, H, D], plain softmax, no optimization barriers."""
    *batch, length, width = x.shape
    head_dim = width // heads
    qkv = x @ params["in_proj"]["kernel"] + params["in_proj"]["bias"]
    q, k, v = (t.reshape(*batch, length, heads, head_dim) for t in jnp.split(qkv, 3, axis=-1))
    logits = jnp.einsum("...qhd,...khd->...hqk", q * head_dim**-0.5, k)
    if causal:
        logits = jnp.where(jnp.tril(jnp.ones((length, length), bool)), logits, -jnp.inf)
    out = jnp.einsum("...hqk,...khd->...qhd", jax.nn.softmax(logits, axis=-1), v)
    out = out.reshape(*batch, length, width)
    return out @ params["out_proj"]["kernel"] + params["out_proj"]["bias"]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("use_jit", [False, True])
def test_head_major_attention_equals_token_major(causal, use_jit):
    width, heads, length = 48, 4, 11
    init = jax.nn.initializers.normal(0.3)
    layer = CLIPAttention(width, heads, causal, jnp.float32, init, init)
    x = jax.random.normal(jax.random.key(1), (2, 3, length, width))
    params = layer.init(jax.random.key(0), x)["params"]
    # Non-zero biases so the q/k/v row split of in_proj is exercised too.
    params = jax.tree.map(lambda p: p + 0.1 * jnp.cos(jnp.arange(p.size).reshape(p.shape)), params)

    def ours(p, x):
        return layer.apply({"params": p}, x)

    def old(p, x):
        return _attention_token_major(p, x, heads, causal)

    if use_jit:
        ours, old = jax.jit(ours), jax.jit(old)
    np.testing.assert_allclose(ours(params, x), old(params, x), rtol=1e-5, atol=1e-5)
    # The optimization barriers are transparent to autodiff and vmap.
    loss = lambda f: lambda p, x: jnp.sum(jnp.sin(f(p, x)))  # noqa: E731
    g_ours, g_old = jax.grad(loss(ours))(params, x), jax.grad(loss(old))(params, x)
    for a, b in zip(jax.tree.leaves(g_ours), jax.tree.leaves(g_old), strict=True):
        # Gradients sum over 66 tokens: compare to 1e-5 of the largest entry.
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * float(jnp.max(jnp.abs(b))))
    np.testing.assert_allclose(
        jax.vmap(ours, in_axes=(None, 1))(params, x),
        jax.vmap(old, in_axes=(None, 1))(params, x),
        rtol=1e-5,
        atol=1e-5,
    )


# ---------------------------------------------------------------- full model vs NumPy
def test_frame_features_match_numpy(attn, video):
    vh, vl, _, _ = cfg_heads(attn)
    frames = video[0, :2]
    expected = ref.vision(frames, official_sd(attn), vh, vl)
    np.testing.assert_allclose(attn.encode_frames(frames), expected, rtol=1e-4, atol=1e-4)


def test_text_features_match_numpy(attn, tokens):
    _, _, th, tl = cfg_heads(attn)
    expected = ref.text(tokens, official_sd(attn), th, tl)
    np.testing.assert_allclose(attn.encode_text(tokens), expected, rtol=1e-4, atol=1e-4)


def test_attn_temporal_encoder_matches_numpy(attn):
    feats = np.random.default_rng(2).normal(size=(2, 5, attn.config.embed_dim)).astype(np.float32)
    sd = official_sd(attn)
    pooled = ref.temporal_attn(
        feats.astype(np.float64), sd, attn.config.temporal_depth, attn.config.temporal_heads
    )
    np.testing.assert_allclose(attn.temporal_pool(feats), pooled, rtol=1e-4, atol=1e-4)
    adapted = ref.video_adapter(pooled, sd, attn.config.video_adapter_layers)
    np.testing.assert_allclose(attn.aggregate(feats), adapted, rtol=1e-4, atol=1e-4)


def test_avg_aggregate_is_adapted_mean(avg):
    feats = np.random.default_rng(3).normal(size=(3, 7, avg.config.embed_dim)).astype(np.float32)
    expected = ref.video_adapter(feats.mean(1), official_sd(avg), avg.config.video_adapter_layers)
    np.testing.assert_allclose(avg.aggregate(feats), expected, rtol=1e-5, atol=1e-5)
    assert "temporal_encoder" not in avg.params


def test_video_and_logits_match_numpy(attn, video, tokens):
    cfg = attn.config
    sd = official_sd(attn)
    frame_feats = ref.vision(video.reshape(-1, H, W, 3), sd, cfg.vision_heads, cfg.vision_layers)
    pooled = ref.temporal_attn(
        frame_feats.reshape(2, 3, -1), sd, cfg.temporal_depth, cfg.temporal_heads
    )
    video_emb = ref.video_adapter(pooled, sd, cfg.video_adapter_layers)
    text_emb = ref.text(tokens, sd, cfg.text_heads, cfg.text_layers)
    expected = ref.logits(video_emb, text_emb, sd["clip_model.logit_scale"])
    ours_video = attn.encode_video(video)
    np.testing.assert_allclose(ours_video, video_emb, rtol=1e-4, atol=1e-4)
    ours = attn.logits(ours_video, attn.encode_text(tokens))
    assert ours.shape == (2, 3) and ours.dtype == jnp.float32
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4)


def test_logits_hand_values(attn):
    v = np.array([[3.0, 4.0] + [0.0] * 62], np.float32)
    t = np.array([[1.0, 0.0] + [0.0] * 62, [0.0, -2.0] + [0.0] * 62], np.float32)
    scale = np.exp(float(attn.params["logit_scale"]))
    np.testing.assert_allclose(attn.logits(v, t), scale * np.array([[0.6, -0.8]]), rtol=1e-6)


# ------------------------------------------------------------------------ API behaviour
def test_jit_and_eager_apply_agree(attn):
    # Eager (op-by-op) vs jit of the video head; the towers are checked under jit vs NumPy.
    module, params = attn.module, attn.params
    rng = np.random.default_rng(4)
    video_feats = rng.normal(size=(2, attn.config.embed_dim)).astype(np.float32)
    text_feats = rng.normal(size=(3, attn.config.embed_dim)).astype(np.float32)

    def head(p, v, t):
        adapted = module.apply({"params": p}, v, method="adapt_video")
        return module.apply({"params": p}, adapted, t, method="logits")

    np.testing.assert_allclose(
        head(params, video_feats, text_feats),
        jax.jit(head)(params, video_feats, text_feats),
        rtol=1e-5,
        atol=1e-5,
    )


def test_leading_dims_and_composition(attn, video):
    feats = attn.encode_frames(video)  # [2, 3, D]
    assert feats.shape == (2, 3, attn.config.embed_dim)
    flat = attn.encode_frames(video[0, :2])  # the same frames without the batch dims
    np.testing.assert_allclose(feats[0, :2], flat, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        attn.encode_video(video), attn.aggregate(feats), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        attn.aggregate(feats), attn.adapt_video(attn.temporal_pool(feats)), rtol=1e-6, atol=1e-6
    )


def test_encode_text_accepts_strings_and_tokens(attn, tokens):
    from_tokens = attn.encode_text(tokens)
    from_text = attn.encode_text(
        ["shear a sheep", "milk a cow", "a" * 30 + " find a nether portal!"]
    )
    np.testing.assert_array_equal(from_tokens, from_text)
    with pytest.raises(ValueError, match="empty list"):
        attn.encode_text([])


def test_text_features_ignore_tokens_after_eot(attn, tokens):
    # Causal mask + EOT pooling: what follows the EOT position cannot change the feature.
    noisy = tokens.copy()
    eot = int(np.argmax(noisy[0]))
    noisy[0, eot + 1 :] = 7
    clean = attn.encode_text(tokens)
    np.testing.assert_allclose(attn.encode_text(noisy), clean, rtol=1e-6, atol=1e-6)
    changed = tokens.copy()
    changed[0, 1] = 7  # a token before EOT does matter
    assert not np.allclose(attn.encode_text(changed)[0], clean[0])


def test_bfloat16_compute_close_to_float32(attn, video):
    bf16 = attn.astype("bfloat16")
    # The same float32 weight arrays; only the compute dtype changes.
    assert all(a is b for a, b in zip(jax.tree.leaves(bf16.params), jax.tree.leaves(attn.params)))
    ours = np.asarray(bf16.encode_frames(video[0, :2]))
    assert ours.dtype == np.float32
    ref32 = np.asarray(attn.encode_frames(video[0, :2]))
    cos = np.sum(ours * ref32, -1) / np.linalg.norm(ours, axis=-1) / np.linalg.norm(ref32, axis=-1)
    assert np.all(cos > 0.99) and not np.array_equal(ours, ref32)


def test_bad_inputs_raise_clear_errors(attn, video, tokens):
    with pytest.raises(ValueError, match=r"\[\.\.\., 160, 256, 3\]"):
        attn.encode_frames(np.zeros((2, 3, H, W), np.uint8))  # channels-first
    with pytest.raises(ValueError, match="channels last|160x256"):
        attn.encode_frames(np.zeros((2, 128, 128, 3), np.uint8))
    with pytest.raises(ValueError, match="max_seq_len=32"):
        attn.aggregate(np.zeros((1, 33, attn.config.embed_dim), np.float32))
    with pytest.raises(ValueError, match="token ids"):
        attn.encode_text(tokens[:, :50])
    with pytest.raises(TypeError, match="dtype"):
        attn.encode_text(tokens.astype(np.float32))
    with pytest.raises(ValueError, match="frame features"):
        attn.aggregate(np.zeros((1, 4, 3), np.float32))


# ------------------------------------------------------------------------- init / config
def test_random_init_matches_official_distributions():
    cfg = ref.small_init_config()
    p = jax.device_get(mcj.init_params(cfg, jax.random.key(0)))
    assert float(p["video_residual_weight"]) == 4.0
    np.testing.assert_allclose(float(p["logit_scale"]), np.log(1 / 0.07), rtol=1e-6)
    k = p["video_adapter"]["fc_0"]["kernel"]
    np.testing.assert_allclose(
        k.T @ k, 2.0 * np.eye(k.shape[0]), atol=1e-4
    )  # orthogonal, gain sqrt 2
    np.testing.assert_allclose(
        p["text_encoder"]["token_embedding"]["embedding"].std(), 0.02, rtol=0.02
    )
    blk = p["image_encoder"]["blocks_0"]
    assert np.all(blk["ln_1"]["scale"] == 1) and np.all(blk["attn"]["in_proj"]["bias"] == 0)
    bound = np.sqrt(6 / (4 * cfg.vision_width))  # xavier-uniform on the packed [3w, w] matrix
    assert np.abs(blk["attn"]["in_proj"]["kernel"]).max() <= bound
    np.testing.assert_allclose(
        p["image_encoder"]["pos_embed"].std(), cfg.vision_width**-0.5, rtol=0.05
    )
    np.testing.assert_allclose(p["temporal_encoder"]["pos_emb"].std(), 1.0, rtol=0.05)


def test_full_size_param_counts_match_official():
    for cfg, expected in (
        (mcj.MineCLIPConfig.attn(), 158_537_730),
        (mcj.MineCLIPConfig.avg(), 150_118_402),
    ):
        shapes = mcj.param_shapes(cfg)
        assert sum(int(np.prod(x.shape)) for x in jax.tree.leaves(shapes)) == expected


def test_config_presets_and_validation():
    attn, avg = mcj.MineCLIPConfig.attn(), mcj.MineCLIPConfig.avg()
    assert (attn.pool, avg.pool) == ("attn", "avg")
    assert attn.grid_size == (10, 16) and attn.num_patches == 160
    assert attn.vision_heads == attn.vision_width // 64 and attn.max_seq_len == 32
    tiny = mcj.MineCLIPConfig.tiny(pool="avg")
    assert tiny.image_size == (160, 256) and tiny.vocab_size == 49408 and tiny.context_length == 77
    assert hash(tiny) == hash(mcj.MineCLIPConfig.tiny(pool="avg"))  # usable as a static arg
    assert mcj.MineCLIPConfig.from_dict(tiny.to_dict()) == tiny
    with pytest.raises(dataclasses.FrozenInstanceError):
        tiny.pool = "attn"
    with pytest.raises(ValueError, match="pool must be"):
        mcj.MineCLIPConfig(pool="max")
    with pytest.raises(ValueError, match="divisible by patch_size"):
        mcj.MineCLIPConfig(image_size=(150, 256))
    with pytest.raises(ValueError, match="dtype"):
        mcj.MineCLIPConfig(dtype="float64x")
    with pytest.raises(ValueError, match="unknown MineCLIPConfig fields"):
        mcj.MineCLIPConfig.from_dict({"width": 3})

"""MineCLIP in Flax linen: ViT-B/16 frame encoder, CLIP text transformer, temporal aggregator,
residual adapters and the CLIP logit head, numerically equivalent to the official PyTorch model.

Layouts follow the official code so a checkpoint converts by transposes only (see convert.py):
packed q/k/v `in_proj` in the CLIP towers, bias-free q/k/v/out in the temporal transformer,
`projection` matrices used as `x @ P`. Frames are channels-last on every API.

Pure functional use inside your own jit:

    module = MineCLIP(cfg)
    feats = module.apply({"params": params}, frames, method="encode_frames")
"""

from __future__ import annotations

import math
from collections.abc import Callable

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from mineclip_jax.config import MC_IMAGE_MEAN, MC_IMAGE_STD, MineCLIPConfig

Initializer = Callable[..., jax.Array]
LN_EPS = 1e-5  # torch.nn.LayerNorm default (Flax's default is 1e-6).

# ----------------------------------------------------------------------------- initialisers
# Chosen to match the official random init in distribution (only matters for training from
# scratch; converted checkpoints overwrite everything).

# torch.nn.Linear / Conv2d default weight: kaiming_uniform(a=sqrt(5)) == U(+-1/sqrt(fan_in)).
torch_default_kernel = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")


def torch_default_bias(fan_in: int) -> Initializer:
    """torch.nn.Linear default bias: U(+-1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


def normal(std: float) -> Initializer:
    return nn.initializers.normal(stddev=std)


def quick_gelu(x: jax.Array) -> jax.Array:
    """OpenAI CLIP's GELU approximation x * sigmoid(1.702 x), computed as the identical
    0.5 x (1 + tanh(0.851 x)) (sigmoid(z) = (1 + tanh(z / 2)) / 2; float32(0.851) is exactly
    float32(1.702) / 2). XLA's CPU tanh is one polynomial where its logistic is an exp and a
    divide: the ViT's [N, 161, 3072] activation costs less (benchmarks/mineclip_throughput.py).
    Where 1 + tanh cancels (x below about -5) the error is absolute, under 2e-6."""
    return 0.5 * x * (1.0 + jnp.tanh(0.851 * x))


def check_frame_values(frames, unit_range: bool = False):
    """Frames as the model takes them (0..255 values), checked where their values are known.

    uint8 frames pass as they are. Float frames must hold 0..255 values; frames that look like
    floats in [0, 1] (every value in 0..1, some above 0) are refused, since the model would see
    them as near-black images and score every env alike, unless `unit_range=True`, which scales
    [0, 1] frames by 255. Integers outside 0..255, booleans, NaN and values outside the range
    raise. Inside `jit` (a tracer) the values are unknown and only the dtype is checked."""
    dtype = np.dtype(frames.dtype)
    if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):  # bool too
        raise TypeError(f"frames must be uint8 (or 0..255 numbers), got dtype {dtype}")
    if dtype == np.uint8 and not unit_range:
        return frames
    if isinstance(frames, jax.core.Tracer):
        return frames * 255.0 if unit_range else frames
    # XLA's min/max reductions may skip NaN on CPU: finiteness is checked on its own.
    lo, hi, finite = jax.device_get((jnp.min(frames), jnp.max(frames), jnp.isfinite(frames).all()))
    lo, hi = float(lo), float(hi)
    top = 1.0 if unit_range else 255.0
    if not (finite and 0.0 <= lo and hi <= top):
        if not finite:
            lo, hi = float("nan"), float("nan")
        raise ValueError(
            f"frames must hold values in 0..{top:g}{' (unit_range=True)' if unit_range else ''}, "
            f"got {dtype} values in [{lo:g}, {hi:g}]; pass uint8 RGB frames"
        )
    if unit_range:
        return frames * 255.0
    if np.issubdtype(dtype, np.floating) and 0.0 < hi <= 1.0:
        raise ValueError(
            f"float frames in [0, {hi:g}] look like images scaled to [0, 1], which the model "
            f"would see as near-black (it takes 0..255 values, as uint8 frames hold); pass "
            f"(frames * 255).astype(np.uint8) or unit_range=True"
        )
    return frames


def check_token_ids(tokens, vocab_size: int):
    """Integer token ids in 0 .. vocab_size - 1 (an id outside gives a NaN embedding or wraps
    around to another token); the values are checked where they are known (not inside jit)."""
    dtype = np.dtype(tokens.dtype)
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"token ids must be integers, got dtype {dtype}")
    if isinstance(tokens, jax.core.Tracer) or not np.size(tokens):
        return tokens
    lo, hi = (int(v) for v in jax.device_get((jnp.min(tokens), jnp.max(tokens))))
    if lo < 0 or hi >= vocab_size:
        raise ValueError(
            f"token ids must be in 0..{vocab_size - 1} (the CLIP vocabulary), got ids in "
            f"[{lo}, {hi}]; build them with mineclip_jax.tokenize(texts)"
        )
    return tokens


def preprocess_frames(frames: jax.Array) -> jax.Array:
    """uint8 (or any 0..255 numeric) RGB [..., H, W, 3] -> float32 normalised with the MineCLIP
    mean/std, exactly as the official `basic_image_tensor_preprocess` (x / 255, then per-channel
    (x - mean) / std)."""
    x = frames.astype(jnp.float32) / 255.0
    mean = jnp.asarray(MC_IMAGE_MEAN, jnp.float32)
    std = jnp.asarray(MC_IMAGE_STD, jnp.float32)
    return (x - mean) / std


def _layer_norm(dtype, name: str) -> nn.LayerNorm:
    return nn.LayerNorm(epsilon=LN_EPS, dtype=dtype, param_dtype=jnp.float32, name=name)


def _softmax_f32(logits: jax.Array) -> jax.Array:
    # Softmax in float32 even under bfloat16 compute: attention logits lose too much otherwise.
    return jax.nn.softmax(logits.astype(jnp.float32), axis=-1)


def _identity(x):
    return x


def _dot_general_f32(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    # bfloat16 x bfloat16 products accumulate into, and come out as, float32. XLA's CPU backend
    # (jaxlib 0.10, YNNPACK) has fast bf16 x bf16 -> f32 matmuls (AMX where the CPU has it:
    # 2.8x its f32 matmul at [1288, 768] x [768, 3072] on a Sapphire Rapids core), but it turns
    # a dot with a bf16 *result* into an f32 dot between two converts, which made the bf16
    # model slower than the fp32 one. A no-op in float32.
    del preferred_element_type
    return jax.lax.dot_general(
        lhs, rhs, dimension_numbers, precision=precision, preferred_element_type=jnp.float32
    )


class Dense(nn.Dense):
    """nn.Dense with a float32 result of the matmul (see _dot_general_f32), cast to `dtype`
    after the bias add; the same parameters, and the same function in float32."""

    dot_general: Callable | None = _dot_general_f32

    def __call__(self, inputs: jax.Array) -> jax.Array:
        y = super().__call__(inputs)
        return y if self.dtype is None else y.astype(self.dtype)


# ------------------------------------------------------------------------- CLIP tower block
class CLIPAttention(nn.Module):
    """torch.nn.MultiheadAttention(width, heads) with packed q/k/v projection `in_proj`
    (rows q;k;v) and `out_proj`; q is scaled by head_dim^-0.5 before the dot product."""

    width: int
    heads: int
    causal: bool
    dtype: jnp.dtype
    in_proj_init: Initializer
    out_proj_init: Initializer

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        *batch, length, width = x.shape
        chex.assert_equal(width, self.width)
        head_dim = width // self.heads
        qkv = Dense(
            3 * width,
            dtype=self.dtype,
            kernel_init=self.in_proj_init,
            bias_init=nn.initializers.zeros,
            name="in_proj",
        )(x)
        # Head-major q, k, v [..., H, T, D]: rows of in_proj are q;k;v, each heads x head_dim.
        qkv = qkv.reshape(*batch, length, 3, self.heads, head_dim)
        q, k, v = (jnp.moveaxis(qkv[..., i, :, :], -2, -3) for i in range(3))
        logits = jnp.einsum(
            "...hqd,...hkd->...hqk", q * (head_dim**-0.5), k, preferred_element_type=jnp.float32
        )
        if self.causal:
            # Additive -inf strictly above the diagonal, as CLIP's build_attention_mask.
            allowed = jnp.tril(jnp.ones((length, length), dtype=bool))
            logits = jnp.where(allowed, logits, -jnp.inf)
        # The barriers only fix the op boundaries, not the values: without them XLA's CPU
        # backend (jaxlib 0.10, YNNPACK fusions) fuses both attention dots and the softmax into
        # one library call that runs at ~20 GFLOP/s, slower than the same three ops apart
        # (about 5% of a ViT-B/16 block at 160x256; log in benchmarks/mineclip_throughput.py).
        # optimization_barrier is differentiable and batches under vmap.
        # CPU only: on GPUs and TPUs XLA's own attention fusions are what should run.
        barrier = jax.lax.optimization_barrier if jax.default_backend() == "cpu" else _identity
        logits = barrier(logits)
        weights = barrier(_softmax_f32(logits).astype(self.dtype))
        out = jnp.einsum("...hqk,...hkd->...qhd", weights, v, preferred_element_type=jnp.float32)
        out = out.astype(self.dtype).reshape(*batch, length, width)
        return Dense(
            width,
            dtype=self.dtype,
            kernel_init=self.out_proj_init,
            bias_init=nn.initializers.zeros,
            name="out_proj",
        )(out)


class CLIPMLP(nn.Module):
    """c_fc (width -> 4 width) -> QuickGELU -> c_proj (4 width -> width), both with bias."""

    width: int
    dtype: jnp.dtype
    fc_init: Initializer
    proj_init: Initializer

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        hidden = 4 * self.width
        h = Dense(
            hidden,
            dtype=self.dtype,
            kernel_init=self.fc_init,
            bias_init=torch_default_bias(self.width),
            name="c_fc",
        )(x)
        h = quick_gelu(h)
        return Dense(
            self.width,
            dtype=self.dtype,
            kernel_init=self.proj_init,
            bias_init=torch_default_bias(hidden),
            name="c_proj",
        )(h)


class ResidualAttentionBlock(nn.Module):
    """Pre-LN CLIP block: x += attn(ln_1(x)); x += mlp(ln_2(x))."""

    width: int
    heads: int
    causal: bool
    dtype: jnp.dtype
    # Weight inits differ between the towers: the ViT keeps torch defaults, the text GPT uses
    # OpenAI's initialize_parameters (normal with depth-scaled std).
    init_style: str  # "vision" | "text"
    num_layers: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        if self.init_style == "text":
            proj_std = self.width**-0.5 * (2 * self.num_layers) ** -0.5
            in_init, out_init = normal(self.width**-0.5), normal(proj_std)
            fc_init, cproj_init = normal((2 * self.width) ** -0.5), normal(proj_std)
        else:
            in_init, out_init = nn.initializers.xavier_uniform(), torch_default_kernel
            fc_init = cproj_init = torch_default_kernel
        attn = CLIPAttention(
            self.width, self.heads, self.causal, self.dtype, in_init, out_init, name="attn"
        )
        mlp = CLIPMLP(self.width, self.dtype, fc_init, cproj_init, name="mlp")
        x = x + attn(_layer_norm(self.dtype, "ln_1")(x))
        x = x + mlp(_layer_norm(self.dtype, "ln_2")(x))
        return x


# ---------------------------------------------------------------------------------- towers
class VisionTransformer(nn.Module):
    """ViT: patch conv (no bias) -> [cls; patches] + pos_embed -> ln_pre -> blocks ->
    ln_post(cls) @ projection. Input: normalised float [N, H, W, 3]; output [N, embed_dim]."""

    config: MineCLIPConfig

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        cfg = self.config
        dtype = cfg.compute_dtype
        width = cfg.vision_width
        n = images.shape[0]
        chex.assert_shape(images, (n, *cfg.image_size, 3))
        scale = width**-0.5
        x = nn.Conv(
            width,
            kernel_size=(cfg.patch_size, cfg.patch_size),
            strides=(cfg.patch_size, cfg.patch_size),
            padding="VALID",
            use_bias=False,
            dtype=dtype,
            kernel_init=torch_default_kernel,
            name="conv1",
        )(images.astype(dtype))
        # Row-major over the (row, col) patch grid, as torch's reshape of [N, C, gh, gw].
        x = x.reshape(n, cfg.num_patches, width)
        cls_token = self.param("cls_token", normal(scale), (width,))
        pos_embed = self.param("pos_embed", normal(scale), (cfg.num_patches + 1, width))
        cls = jnp.broadcast_to(cls_token.astype(dtype), (n, 1, width))
        x = jnp.concatenate([cls, x], axis=1) + pos_embed.astype(dtype)
        x = _layer_norm(dtype, "ln_pre")(x)
        for i in range(cfg.vision_layers):
            x = ResidualAttentionBlock(
                width,
                cfg.vision_heads,
                False,
                dtype,
                "vision",
                cfg.vision_layers,
                name=f"blocks_{i}",
            )(x)
        x = _layer_norm(dtype, "ln_post")(x[:, 0])
        projection = self.param("projection", normal(scale), (width, cfg.embed_dim))
        return x @ projection.astype(dtype)


class TextTransformer(nn.Module):
    """CLIP's GPT: token + position embedding -> causal blocks -> ln_final -> the feature at
    the largest token id of each row (EOT) @ projection. Input int [N, context_length]."""

    config: MineCLIPConfig

    @nn.compact
    def __call__(self, tokens: jax.Array) -> jax.Array:
        cfg = self.config
        dtype = cfg.compute_dtype
        width = cfg.text_width
        n = tokens.shape[0]
        chex.assert_shape(tokens, (n, cfg.context_length))
        x = nn.Embed(
            cfg.vocab_size,
            width,
            dtype=dtype,
            param_dtype=jnp.float32,
            embedding_init=normal(0.02),
            name="token_embedding",
        )(tokens)
        pos_embed = self.param("pos_embed", normal(0.01), (cfg.context_length, width))
        x = x + pos_embed.astype(dtype)
        for i in range(cfg.text_layers):
            x = ResidualAttentionBlock(
                width, cfg.text_heads, True, dtype, "text", cfg.text_layers, name=f"blocks_{i}"
            )(x)
        x = _layer_norm(dtype, "ln_final")(x)
        # EOT (49407) is the largest id in every official token row; pads are 0.
        eot_index = jnp.argmax(tokens, axis=-1)
        pooled = jnp.take_along_axis(x, eot_index[:, None, None], axis=1)[:, 0]
        projection = self.param("projection", normal(width**-0.5), (width, cfg.embed_dim))
        return pooled @ projection.astype(dtype)


# ------------------------------------------------------------------ temporal aggregator
class XAttention(nn.Module):
    """x-transformers 0.27.1 Attention as used by MineCLIP: bias-free to_q/to_k/to_v/to_out,
    logits scaled by dim_head^-0.5, plain softmax, no mask or relative positions."""

    dim: int
    heads: int
    dim_head: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        *batch, length, _ = x.shape
        inner = self.heads * self.dim_head
        dense = lambda features, name: Dense(  # noqa: E731
            features, use_bias=False, dtype=self.dtype, kernel_init=torch_default_kernel, name=name
        )
        split = lambda t: t.reshape(*batch, length, self.heads, self.dim_head)  # noqa: E731
        q, k, v = (split(dense(inner, n)(x)) for n in ("to_q", "to_k", "to_v"))
        logits = jnp.einsum("...qhd,...khd->...hqk", q, k) * (self.dim_head**-0.5)
        weights = _softmax_f32(logits).astype(self.dtype)
        out = jnp.einsum("...hqk,...khd->...qhd", weights, v).reshape(*batch, length, inner)
        return dense(self.dim, "to_out")(out)


class GLUFeedForward(nn.Module):
    """x-transformers GLU feed-forward with Swish: proj (dim -> 2 inner, bias), split in
    halves, first half = value, second = gate, value * SiLU(gate), out (inner -> dim, bias)."""

    dim: int
    mult: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        inner = self.dim * self.mult
        h = Dense(
            2 * inner,
            dtype=self.dtype,
            kernel_init=torch_default_kernel,
            bias_init=torch_default_bias(self.dim),
            name="proj",
        )(x)
        value, gate = jnp.split(h, 2, axis=-1)
        h = value * jax.nn.silu(gate)
        return Dense(
            self.dim,
            dtype=self.dtype,
            kernel_init=torch_default_kernel,
            bias_init=torch_default_bias(inner),
            name="out",
        )(h)


class TemporalTransformer(nn.Module):
    """x-transformers 0.27.1 ContinuousTransformerWrapper(Encoder(glu, swish)) + mean over
    time: scaled absolute positions, `depth` pre-LN (attention, GLU FF) pairs, final norm.
    Input [B, T, D] with T <= max_seq_len; output [B, D]."""

    config: MineCLIPConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        cfg = self.config
        dtype = cfg.compute_dtype
        dim = cfg.embed_dim
        length = x.shape[-2]
        chex.assert_axis_dimension(x, -1, dim)
        if length > cfg.max_seq_len:
            raise ValueError(
                f"video of {length} frames exceeds max_seq_len={cfg.max_seq_len} of the attn "
                "aggregator; pass at most that many frames (the paper uses 16)"
            )
        pos_emb = self.param("pos_emb", normal(1.0), (cfg.max_seq_len, dim))
        x = x.astype(dtype) + (pos_emb[:length] * dim**-0.5).astype(dtype)
        for i in range(cfg.temporal_depth):
            h = _layer_norm(dtype, f"attn_norm_{i}")(x)
            x = x + XAttention(
                dim, cfg.temporal_heads, cfg.temporal_dim_head, dtype, name=f"attn_{i}"
            )(h)
            h = _layer_norm(dtype, f"ff_norm_{i}")(x)
            x = x + GLUFeedForward(dim, cfg.temporal_ff_mult, dtype, name=f"ff_{i}")(h)
        x = _layer_norm(dtype, "norm")(x)
        return x.mean(axis=-2)


class AdapterMLP(nn.Module):
    """The official build_mlp(dim -> dim, hidden dim, num_layers): Linear, (ReLU, Linear)*;
    orthogonal init with gain sqrt(2), zero biases."""

    dim: int
    num_layers: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i in range(self.num_layers):
            if i > 0:
                x = nn.relu(x)
            x = Dense(
                self.dim,
                dtype=self.dtype,
                kernel_init=nn.initializers.orthogonal(scale=np.sqrt(2.0)),
                bias_init=nn.initializers.zeros,
                name=f"fc_{i}",
            )(x)
        return x


# ------------------------------------------------------------------------------ top level
class MineCLIP(nn.Module):
    """The full MineCLIP model. Methods (all pure; call through `apply(..., method=name)`):

    encode_frames  uint8 [..., H, W, 3]     -> float32 [..., D]  per-frame image features
    aggregate      float [..., T, D]         -> float32 [..., D]  temporal encoder + video adapter
    encode_video   uint8 [..., T, H, W, 3]  -> float32 [..., D]  aggregate(encode_frames(.))
    encode_text    int   [..., L]            -> float32 [..., D]  text features (+ text adapter)
    logits         [B, D], [N, D]            -> float32 [B, N]    exp(logit_scale) * cosine sim

    `encode_video` is the embedding used for scoring (the official code applies the video
    adapter inside its reward head; here it is part of the video path so that logits only
    normalise and scale). `temporal_pool` and `adapt_video` split `aggregate` in two.
    """

    config: MineCLIPConfig

    def setup(self):
        cfg = self.config
        dtype = cfg.compute_dtype
        self.image_encoder = VisionTransformer(cfg)
        self.text_encoder = TextTransformer(cfg)
        self.temporal_encoder = TemporalTransformer(cfg) if cfg.pool == "attn" else None
        if cfg.video_adapter_layers > 0:
            self.video_adapter = AdapterMLP(cfg.embed_dim, cfg.video_adapter_layers, dtype)
            # sigmoid(4.0) ~= 0.982: the adapted feature starts close to the identity.
            self.video_residual_weight = self.param(
                "video_residual_weight", nn.initializers.constant(4.0), ()
            )
        if cfg.text_adapter_layers > 0:
            self.text_adapter = AdapterMLP(cfg.embed_dim, cfg.text_adapter_layers, dtype)
            self.text_residual_weight = self.param(
                "text_residual_weight", nn.initializers.constant(4.0), ()
            )
        self.logit_scale = self.param("logit_scale", nn.initializers.constant(np.log(1 / 0.07)), ())

    def _check_frames(self, frames: jax.Array, min_ndim: int, what: str):
        cfg = self.config
        h, w = cfg.image_size
        if frames.ndim < min_ndim or tuple(frames.shape[-3:]) != (h, w, 3):
            raise ValueError(
                f"{what} expects channels-last RGB frames [..., {h}, {w}, 3] with at least "
                f"{min_ndim} dims, got shape {tuple(frames.shape)}. Resize frames to "
                f"{h}x{w} (H x W) and move channels last (e.g. np.moveaxis(x, -3, -1))."
            )

    def encode_frames(self, frames: jax.Array) -> jax.Array:
        self._check_frames(frames, 3, "encode_frames")
        lead = frames.shape[:-3]
        flat = frames.reshape(-1, *frames.shape[-3:])
        feats = self.image_encoder(preprocess_frames(flat))
        return feats.astype(jnp.float32).reshape(*lead, self.config.embed_dim)

    def temporal_pool(self, frame_features: jax.Array) -> jax.Array:
        """[..., T, D] -> [..., D] before the video adapter (the official encode_video)."""
        cfg = self.config
        if frame_features.ndim < 2 or frame_features.shape[-1] != cfg.embed_dim:
            raise ValueError(
                f"expected frame features [..., T, {cfg.embed_dim}], got {frame_features.shape}"
            )
        lead = frame_features.shape[:-2]
        x = frame_features.reshape(-1, *frame_features.shape[-2:])
        if self.temporal_encoder is None:
            pooled = x.astype(jnp.float32).mean(axis=-2)
        else:
            pooled = self.temporal_encoder(x)
        return pooled.astype(jnp.float32).reshape(*lead, cfg.embed_dim)

    def adapt_video(self, video_features: jax.Array) -> jax.Array:
        """Residual video adapter: r v + (1 - r) MLP(v), r = sigmoid(video_residual_weight)."""
        if self.config.video_adapter_layers == 0:
            return video_features.astype(jnp.float32)
        r = jax.nn.sigmoid(self.video_residual_weight)
        mlp = self.video_adapter(video_features.astype(self.config.compute_dtype))
        return (r * video_features + (1.0 - r) * mlp.astype(jnp.float32)).astype(jnp.float32)

    def aggregate(self, frame_features: jax.Array) -> jax.Array:
        return self.adapt_video(self.temporal_pool(frame_features))

    def encode_video(self, frames: jax.Array) -> jax.Array:
        self._check_frames(frames, 4, "encode_video")
        return self.aggregate(self.encode_frames(frames))

    def encode_text(self, tokens: jax.Array) -> jax.Array:
        cfg = self.config
        if tokens.ndim < 1 or tokens.shape[-1] != cfg.context_length:
            raise ValueError(
                f"encode_text expects token ids [..., {cfg.context_length}], got shape "
                f"{tuple(tokens.shape)}; build them with mineclip_jax.tokenize(texts)"
            )
        if not jnp.issubdtype(tokens.dtype, jnp.integer):
            raise TypeError(f"token ids must be integers, got dtype {tokens.dtype}")
        lead = tokens.shape[:-1]
        flat = tokens.reshape(-1, cfg.context_length)
        feats = self.text_encoder(flat).astype(jnp.float32)
        if cfg.text_adapter_layers > 0:
            r = jax.nn.sigmoid(self.text_residual_weight)
            mlp = self.text_adapter(feats.astype(cfg.compute_dtype)).astype(jnp.float32)
            feats = r * feats + (1.0 - r) * mlp
        return feats.reshape(*lead, cfg.embed_dim)

    def logits(self, video_emb: jax.Array, text_emb: jax.Array) -> jax.Array:
        """exp(logit_scale) * normalised(video) @ normalised(text).T -> [B, N]
        (logits_per_video; logits_per_text is its transpose)."""
        chex.assert_rank([video_emb, text_emb], 2)
        chex.assert_equal_shape_suffix([video_emb, text_emb], 1)
        v = video_emb.astype(jnp.float32)
        t = text_emb.astype(jnp.float32)
        v = v / jnp.linalg.norm(v, axis=-1, keepdims=True)
        t = t / jnp.linalg.norm(t, axis=-1, keepdims=True)
        return jnp.exp(self.logit_scale) * (v @ t.T)

    def __call__(self, frames: jax.Array, tokens: jax.Array) -> jax.Array:
        """Video [B, T, H, W, 3] x prompts [N, L] -> logits [B, N]; touches every parameter
        (used by `init`)."""
        return self.logits(self.encode_video(frames), self.encode_text(tokens))

"""`MineCLIPHandle`: config + module + params with jitted methods, and `create`.

    import jax, mineclip_jax as mcj
    mc = mcj.create(mcj.MineCLIPConfig.tiny(), jax.random.key(0))
    video = mc.encode_video(frames)              # uint8 [B, T, 160, 256, 3] -> [B, D]
    text = mc.encode_text(["shear a sheep"])      # -> [1, D]
    mc.logits(video, text)                        # -> [B, 1]

Each method compiles once per input shape; `mc.module` / `mc.params` are there for pure
functional use inside your own jit (`mc.module.apply({"params": mc.params}, x, method=...)`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mineclip_jax.config import MineCLIPConfig
from mineclip_jax.model import MineCLIP, check_frame_values, check_token_ids
from mineclip_jax.tokenizer import tokenize

Params = Any  # a nested dict of arrays: the "params" collection of MineCLIP


@functools.lru_cache(maxsize=256)
def _jitted_method(config: MineCLIPConfig, name: str):
    # Cached per (config, method) so every handle of one architecture shares compilations.
    module = MineCLIP(config)

    def call(params, *args):
        return module.apply({"params": params}, *args, method=name)

    return jax.jit(call)


@dataclasses.dataclass(frozen=True, eq=False)
class MineCLIPHandle:
    """A MineCLIP model ready to use: `config`, `module`, `params` and jitted methods that
    accept any leading batch dims."""

    config: MineCLIPConfig
    params: Params
    # Checkpoint directory the weights came from (None: random or in-memory); files stored
    # beside the weights, such as a calibrated judge (judge.json), are looked up there.
    source: str | None = None
    module: MineCLIP = dataclasses.field(init=False, repr=False)

    def __post_init__(self):
        # Params live on the device once, not re-transferred from host memory on every call.
        object.__setattr__(self, "params", jax.device_put(self.params))
        object.__setattr__(self, "module", MineCLIP(self.config))
        for name in (
            "encode_frames",
            "temporal_pool",
            "adapt_video",
            "aggregate",
            "encode_video",
            "encode_text",
            "logits",
        ):
            object.__setattr__(self, f"_{name}", _jitted_method(self.config, name))

    def __repr__(self):
        n = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(self.params))
        return f"MineCLIPHandle(config={self.config}, num_params={n:,})"

    # ------------------------------------------------------------------------ the model API
    def encode_frames(self, frames, *, unit_range: bool = False) -> jax.Array:
        """uint8 [..., H, W, 3] -> float32 [..., D], one feature per frame. Float frames must
        hold 0..255 values; `unit_range=True` takes [0, 1] floats (`check_frame_values`)."""
        frames = check_frame_values(jnp.asarray(frames), unit_range)
        return self._encode_frames(self.params, frames)

    def aggregate(self, frame_features) -> jax.Array:
        """float [..., T, D] -> [..., D]: temporal encoder then video adapter."""
        return self._aggregate(self.params, jnp.asarray(frame_features))

    def temporal_pool(self, frame_features) -> jax.Array:
        """float [..., T, D] -> [..., D]: temporal encoder only (no video adapter)."""
        return self._temporal_pool(self.params, jnp.asarray(frame_features))

    def adapt_video(self, video_features) -> jax.Array:
        """float [..., D] -> [..., D]: the residual video adapter."""
        return self._adapt_video(self.params, jnp.asarray(video_features))

    def encode_video(self, frames, *, unit_range: bool = False) -> jax.Array:
        """uint8 [..., T, H, W, 3] -> float32 [..., D], the video embedding used for scoring
        (float frames: see `encode_frames`)."""
        frames = check_frame_values(jnp.asarray(frames), unit_range)
        return self._encode_video(self.params, frames)

    def encode_text(self, texts_or_tokens: str | Sequence[str] | Any) -> jax.Array:
        """A prompt, a list of prompts, or int token ids [..., L] -> float32 [..., D]."""
        if isinstance(texts_or_tokens, str):
            texts_or_tokens = [texts_or_tokens]
        if isinstance(texts_or_tokens, (list, tuple)) and all(
            isinstance(t, str) for t in texts_or_tokens
        ):
            if not texts_or_tokens:
                raise ValueError("encode_text got an empty list of prompts")
            tokens = tokenize(texts_or_tokens, context_length=self.config.context_length)
        else:
            tokens = np.asarray(texts_or_tokens)
            if not np.issubdtype(tokens.dtype, np.integer):
                raise TypeError(
                    f"encode_text takes prompts (str or list of str) or integer token ids, "
                    f"got an array of dtype {tokens.dtype}"
                )
            tokens = check_token_ids(tokens, self.config.vocab_size).astype(np.int32)
        return self._encode_text(self.params, jnp.asarray(tokens))

    def logits(self, video_emb, text_emb) -> jax.Array:
        """[B, D], [N, D] -> [B, N] = exp(logit_scale) * cosine similarity."""
        return self._logits(self.params, jnp.asarray(video_emb), jnp.asarray(text_emb))

    # --------------------------------------------------------------------------- utilities
    def replace(self, *, config: MineCLIPConfig | None = None, params: Params | None = None):
        """A new handle with another config (e.g. `config.replace(dtype="bfloat16")`) or
        params; shapes must still agree."""
        return MineCLIPHandle(
            config=self.config if config is None else config,
            params=self.params if params is None else params,
            # New weights are not the checkpoint's any more; a new config keeps them.
            source=self.source if params is None else None,
        )

    def astype(self, dtype: str) -> MineCLIPHandle:
        """The same weights computing in `dtype` ("float32" or "bfloat16")."""
        return self.replace(config=self.config.replace(dtype=dtype))

    @property
    def num_params(self) -> int:
        return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(self.params))


@functools.partial(jax.jit, static_argnums=0)
def _init_params(config: MineCLIPConfig, key: jax.Array) -> Params:
    # Draw from an RBG key derived from `key`: the ~300 threefry draws of a full init take
    # several times longer to compile on CPU; the distributions are unchanged.
    key = jax.random.wrap_key_data(jax.random.bits(key, (4,), jnp.uint32), impl="rbg")
    h, w = config.image_size
    frames = jnp.zeros((1, 1, h, w, 3), jnp.uint8)
    tokens = jnp.zeros((1, config.context_length), jnp.int32)
    return MineCLIP(config).init(key, frames, tokens)["params"]


def init_params(config: MineCLIPConfig, key: jax.Array) -> Params:
    """Random MineCLIP params (float32) distributed as the official random init."""
    return _init_params(config, key)


def param_shapes(config: MineCLIPConfig) -> Params:
    """The params pytree of `config` as jax.ShapeDtypeStruct leaves (nothing is computed)."""
    return jax.eval_shape(functools.partial(_init_params, config), jax.random.key(0))


def create(config: MineCLIPConfig | None = None, key: jax.Array | None = None) -> MineCLIPHandle:
    """A randomly initialised MineCLIP handle (default: the attn architecture, key 0)."""
    config = MineCLIPConfig.attn() if config is None else config
    key = jax.random.key(0) if key is None else key
    return MineCLIPHandle(config=config, params=init_params(config, key))

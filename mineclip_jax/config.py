"""Static configuration of the MineCLIP model family.

Every field of `MineCLIPConfig` sets a shape or a compute dtype, so the config is a frozen,
hashable dataclass that can be passed as a static argument to `jax.jit`. Traced values (the
weights) live in the params pytree, never here.

    import mineclip_jax as mcj
    cfg = mcj.MineCLIPConfig.attn()            # the released attn.pth architecture
    cfg = mcj.MineCLIPConfig.tiny(pool="avg")  # a CPU-fast test model with the same interfaces
    cfg = mcj.MineCLIPConfig.mini()            # MineCLIP-mini: 48x64 frames, the shipped model
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax.numpy as jnp

# Per-channel statistics of Minecraft YouTube frames (21K clips, 2.8M frames), as in the
# official MineCLIP preprocessing; these are not OpenAI CLIP's ImageNet statistics.
MC_IMAGE_MEAN = (0.3331, 0.3245, 0.3051)
MC_IMAGE_STD = (0.2439, 0.2493, 0.2873)

# CLIP BPE special ids (the official tokenization pads with 0, not with EOT).
SOT_TOKEN = 49406
EOT_TOKEN = 49407
PAD_TOKEN = 0

_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16, "float16": jnp.float16}


@dataclasses.dataclass(frozen=True)
class MineCLIPConfig:
    """Architecture of a MineCLIP model; all fields are static (shape- or dtype-setting)."""

    image_size: tuple[int, int] = (160, 256)  # (H, W) of input frames; multiples of patch_size.
    patch_size: int = 16  # ViT patch side; the patch grid is image_size // patch_size.
    vision_width: int = 768  # ViT residual width.
    vision_layers: int = 12  # number of ViT residual blocks.
    vision_heads: int = 12  # ViT attention heads (official: vision_width // 64).
    text_width: int = 512  # text transformer residual width.
    text_layers: int = 12  # number of text transformer blocks.
    text_heads: int = 8  # text attention heads.
    context_length: int = 77  # tokens per prompt (SOT + 75 BPE ids + EOT, zero padded).
    vocab_size: int = 49408  # CLIP byte-level BPE vocabulary size.
    embed_dim: int = 512  # joint embedding width (image, video and text features).
    pool: Literal["attn", "avg"] = "attn"  # temporal aggregator: transformer or mean over time.
    temporal_depth: int = 2  # attention+feed-forward layer pairs in the attn aggregator.
    temporal_heads: int = 8  # attention heads of the attn aggregator.
    temporal_dim_head: int = 64  # per-head width of the attn aggregator (x-transformers default).
    temporal_ff_mult: int = 4  # GLU hidden width multiplier of the attn aggregator.
    max_seq_len: int = 32  # longest video (frames) the attn aggregator's position table covers.
    video_adapter_layers: int = 2  # Linear layers of the residual video adapter (0 = none).
    text_adapter_layers: int = 0  # Linear layers of the residual text adapter (0 = none).
    dtype: str = "float32"  # compute dtype: "float32" or "bfloat16"; params stay float32.

    def __post_init__(self):
        problems = []
        if len(self.image_size) != 2:
            problems.append(f"image_size must be (H, W), got {self.image_size!r}")
        elif any(s % self.patch_size for s in self.image_size):
            problems.append(
                f"image_size {self.image_size} must be divisible by patch_size {self.patch_size}"
            )
        if self.pool not in ("attn", "avg"):
            problems.append(f"pool must be 'attn' or 'avg', got {self.pool!r}")
        if self.dtype not in _DTYPES:
            problems.append(f"dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")
        for name, width, heads in (
            ("vision", self.vision_width, self.vision_heads),
            ("text", self.text_width, self.text_heads),
        ):
            if width % heads:
                problems.append(f"{name}_width {width} is not divisible by {name}_heads {heads}")
        if self.context_length < 2:
            problems.append("context_length must be at least 2 (room for SOT and EOT)")
        if self.vocab_size <= EOT_TOKEN:
            problems.append(
                f"vocab_size {self.vocab_size} must exceed the EOT id {EOT_TOKEN} (CLIP BPE)"
            )
        if self.video_adapter_layers < 0 or self.text_adapter_layers < 0:
            problems.append("adapter layer counts must be >= 0")
        if problems:
            raise ValueError("invalid MineCLIPConfig: " + "; ".join(problems))
        # Normalise lists (e.g. from YAML/JSON) to a hashable tuple.
        object.__setattr__(self, "image_size", tuple(int(s) for s in self.image_size))

    # ----------------------------------------------------------------- derived quantities
    @property
    def compute_dtype(self):
        """The jnp dtype activations are computed in."""
        return _DTYPES[self.dtype]

    @property
    def grid_size(self) -> tuple[int, int]:
        """Patch grid (rows, cols), e.g. (10, 16) at 160x256 with 16-pixel patches."""
        return (self.image_size[0] // self.patch_size, self.image_size[1] // self.patch_size)

    @property
    def num_patches(self) -> int:
        return self.grid_size[0] * self.grid_size[1]

    def replace(self, **changes) -> MineCLIPConfig:
        """A copy with some fields changed, e.g. `cfg.replace(dtype="bfloat16")`."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["image_size"] = list(self.image_size)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> MineCLIPConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown MineCLIPConfig fields {unknown}; known: {sorted(known)}")
        return cls(**d)

    # ----------------------------------------------------------------------------- presets
    @classmethod
    def attn(cls, **overrides) -> MineCLIPConfig:
        """The released `attn.pth` model: ViT-B/16 at 160x256, 2-layer temporal transformer."""
        return cls(pool="attn", **overrides)

    @classmethod
    def avg(cls, **overrides) -> MineCLIPConfig:
        """The released `avg.pth` model: same towers, mean over time as the aggregator."""
        return cls(pool="avg", **overrides)

    @classmethod
    def tiny(cls, pool: Literal["attn", "avg"] = "attn", **overrides) -> MineCLIPConfig:
        """A CPU-fast model with the real input/token shapes (tests, demos, smoke runs)."""
        fields = dict(
            vision_width=64,
            vision_layers=2,
            vision_heads=2,
            text_width=64,
            text_layers=2,
            text_heads=2,
            embed_dim=64,
            pool=pool,
            temporal_depth=1,
            temporal_heads=2,
            temporal_dim_head=32,
        )
        fields.update(overrides)
        return cls(**fields)

    @classmethod
    def mini(cls, **overrides) -> MineCLIPConfig:
        """MineCLIP-mini, the model the package ships (`load_checkpoint("mini")`): the same
        modules at the embedded world's default render size, 48x64 with 8-pixel patches (a 6x8
        grid), so agents feed it their frames directly. Widths are chosen so that encoding a
        frame costs fewer FLOPs than the agents' small trainable CNN, and the 49,408-token
        embedding (which dominates at this width) keeps the shipped weights a few MB (stored
        int8 with a per-row scale, the rest float16: 3.9 MB). The temporal aggregator is the
        mean over time, as MineCLIP[avg]."""
        fields = dict(
            image_size=(48, 64),
            patch_size=8,
            vision_width=64,
            vision_layers=3,
            vision_heads=2,
            text_width=64,
            text_layers=2,
            text_heads=2,
            embed_dim=64,
            pool="avg",  # MineCLIP[avg]: trains on frame subsets (half the CPU) and any window
        )
        fields.update(overrides)
        return cls(**fields)

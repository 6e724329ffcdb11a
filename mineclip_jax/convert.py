"""Conversion between the official MineCLIP PyTorch state dict and Flax params.

The core works on plain `dict[str, np.ndarray]` (no torch needed):

* `official_key_shapes(cfg)` - every official state-dict key with its shape, in state-dict order,
  alias keys included (788 for attn, 761 for avg at full size);
* `state_dict_to_params(sd, cfg)` - official-key arrays -> Flax params (alias copies collapsed
  after checking they agree; missing / unexpected keys and wrong shapes refused, all listed);
* `params_to_state_dict(params, cfg)` - the inverse, emitting every alias key;
* `infer_config(sd)` - the architecture a state dict holds (attn vs avg, widths, depths);
* `resize_pos_embed` - torch-compatible bicubic resize of a ViT position table (A = -0.75,
  align_corners=False, no antialias), and `openai_clip_to_state_dict` to start from OpenAI
  CLIP ViT-B/16 weights.

The official model registers one module under several names (facts sheet section 8), so one
tensor appears under up to three keys:
  image_encoder.X == reward_head.clip_model.vision_model.X == clip_model.vision_model.X
  clip_model.text_model.X == reward_head.clip_model.text_model.X
  clip_model.logit_scale == reward_head.clip_model.logit_scale
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from mineclip_jax.config import MineCLIPConfig

VISION_PREFIXES = (
    "image_encoder.",
    "reward_head.clip_model.vision_model.",
    "clip_model.vision_model.",
)
TEXT_PREFIXES = ("clip_model.text_model.", "reward_head.clip_model.text_model.")
LOGIT_SCALE_KEYS = ("clip_model.logit_scale", "reward_head.clip_model.logit_scale")
TEMPORAL_PREFIX = "temporal_encoder.attn.model."

# How an official tensor becomes a Flax leaf.
IDENTITY, LINEAR, CONV = "identity", "linear", "conv"


@dataclasses.dataclass(frozen=True)
class ParamEntry:
    """One tensor: its official keys (canonical first, then aliases), Flax path, layout."""

    keys: tuple[str, ...]
    path: tuple[str, ...]
    kind: str
    shape: tuple[int, ...]  # official (torch) shape


def _block_entries(width: int, i: int) -> list[tuple[str, tuple[str, ...], str, tuple]]:
    """Official suffixes of one CLIP residual block -> (flax sub-path, kind, torch shape)."""
    b, fp = f"blocks.{i}.", (f"blocks_{i}",)
    return [
        (b + "attn.in_proj_weight", fp + ("attn", "in_proj", "kernel"), LINEAR, (3 * width, width)),
        (b + "attn.in_proj_bias", fp + ("attn", "in_proj", "bias"), IDENTITY, (3 * width,)),
        (b + "attn.out_proj.weight", fp + ("attn", "out_proj", "kernel"), LINEAR, (width, width)),
        (b + "attn.out_proj.bias", fp + ("attn", "out_proj", "bias"), IDENTITY, (width,)),
        (b + "ln_1.weight", fp + ("ln_1", "scale"), IDENTITY, (width,)),
        (b + "ln_1.bias", fp + ("ln_1", "bias"), IDENTITY, (width,)),
        (b + "mlp.c_fc.weight", fp + ("mlp", "c_fc", "kernel"), LINEAR, (4 * width, width)),
        (b + "mlp.c_fc.bias", fp + ("mlp", "c_fc", "bias"), IDENTITY, (4 * width,)),
        (b + "mlp.c_proj.weight", fp + ("mlp", "c_proj", "kernel"), LINEAR, (width, 4 * width)),
        (b + "mlp.c_proj.bias", fp + ("mlp", "c_proj", "bias"), IDENTITY, (width,)),
        (b + "ln_2.weight", fp + ("ln_2", "scale"), IDENTITY, (width,)),
        (b + "ln_2.bias", fp + ("ln_2", "bias"), IDENTITY, (width,)),
    ]


def _vision_entries(cfg: MineCLIPConfig):
    w, p = cfg.vision_width, cfg.patch_size
    out = [
        ("cls_token", ("cls_token",), IDENTITY, (w,)),
        ("pos_embed", ("pos_embed",), IDENTITY, (cfg.num_patches + 1, w)),
        ("projection", ("projection",), IDENTITY, (w, cfg.embed_dim)),
        ("conv1.weight", ("conv1", "kernel"), CONV, (w, 3, p, p)),
        ("ln_pre.weight", ("ln_pre", "scale"), IDENTITY, (w,)),
        ("ln_pre.bias", ("ln_pre", "bias"), IDENTITY, (w,)),
    ]
    for i in range(cfg.vision_layers):
        out += _block_entries(w, i)
    out += [
        ("ln_post.weight", ("ln_post", "scale"), IDENTITY, (w,)),
        ("ln_post.bias", ("ln_post", "bias"), IDENTITY, (w,)),
    ]
    return out


def _text_entries(cfg: MineCLIPConfig):
    w = cfg.text_width
    out = [
        ("pos_embed", ("pos_embed",), IDENTITY, (cfg.context_length, w)),
        ("projection", ("projection",), IDENTITY, (w, cfg.embed_dim)),
        ("token_embedding.weight", ("token_embedding", "embedding"), IDENTITY, (cfg.vocab_size, w)),
    ]
    for i in range(cfg.text_layers):
        out += _block_entries(w, i)
    out += [
        ("ln_final.weight", ("ln_final", "scale"), IDENTITY, (w,)),
        ("ln_final.bias", ("ln_final", "bias"), IDENTITY, (w,)),
    ]
    return out


def _temporal_entries(cfg: MineCLIPConfig):
    d, inner = cfg.embed_dim, cfg.temporal_heads * cfg.temporal_dim_head
    ff = d * cfg.temporal_ff_mult
    out = [("pos_emb.emb.weight", ("pos_emb",), IDENTITY, (cfg.max_seq_len, d))]
    for i in range(cfg.temporal_depth):
        a, f = f"attn_layers.layers.{2 * i}.", f"attn_layers.layers.{2 * i + 1}."
        out += [
            (a + "0.0.weight", (f"attn_norm_{i}", "scale"), IDENTITY, (d,)),
            (a + "0.0.bias", (f"attn_norm_{i}", "bias"), IDENTITY, (d,)),
            (a + "1.to_q.weight", (f"attn_{i}", "to_q", "kernel"), LINEAR, (inner, d)),
            (a + "1.to_k.weight", (f"attn_{i}", "to_k", "kernel"), LINEAR, (inner, d)),
            (a + "1.to_v.weight", (f"attn_{i}", "to_v", "kernel"), LINEAR, (inner, d)),
            (a + "1.to_out.weight", (f"attn_{i}", "to_out", "kernel"), LINEAR, (d, inner)),
            (f + "0.0.weight", (f"ff_norm_{i}", "scale"), IDENTITY, (d,)),
            (f + "0.0.bias", (f"ff_norm_{i}", "bias"), IDENTITY, (d,)),
            (f + "1.net.0.proj.weight", (f"ff_{i}", "proj", "kernel"), LINEAR, (2 * ff, d)),
            (f + "1.net.0.proj.bias", (f"ff_{i}", "proj", "bias"), IDENTITY, (2 * ff,)),
            (f + "1.net.3.weight", (f"ff_{i}", "out", "kernel"), LINEAR, (d, ff)),
            (f + "1.net.3.bias", (f"ff_{i}", "out", "bias"), IDENTITY, (d,)),
        ]
    out += [
        ("norm.weight", ("norm", "scale"), IDENTITY, (d,)),
        ("norm.bias", ("norm", "bias"), IDENTITY, (d,)),
    ]
    return out


def _adapter_entries(cfg: MineCLIPConfig, num_layers: int, key_prefix: str, flax_name: str):
    # build_mlp: Linear at Sequential indices 0, 3, 6, ... (Identity norm + ReLU between).
    d = cfg.embed_dim
    out = []
    for j in range(num_layers):
        out += [
            (f"{key_prefix}.{3 * j}.weight", (flax_name, f"fc_{j}", "kernel"), LINEAR, (d, d)),
            (f"{key_prefix}.{3 * j}.bias", (flax_name, f"fc_{j}", "bias"), IDENTITY, (d,)),
        ]
    return out


def param_entries(cfg: MineCLIPConfig) -> list[ParamEntry]:
    """Every distinct tensor of the official model for `cfg`, with all its keys."""
    entries = []
    for suffix, path, kind, shape in _vision_entries(cfg):
        keys = tuple(p + suffix for p in VISION_PREFIXES)
        entries.append(ParamEntry(keys, ("image_encoder",) + path, kind, shape))
    for suffix, path, kind, shape in _text_entries(cfg):
        keys = tuple(p + suffix for p in TEXT_PREFIXES)
        entries.append(ParamEntry(keys, ("text_encoder",) + path, kind, shape))
    if cfg.pool == "attn":
        for suffix, path, kind, shape in _temporal_entries(cfg):
            entries.append(
                ParamEntry((TEMPORAL_PREFIX + suffix,), ("temporal_encoder",) + path, kind, shape)
            )
    if cfg.video_adapter_layers:
        entries.append(
            ParamEntry(
                ("reward_head.video_residual_weight",), ("video_residual_weight",), IDENTITY, ()
            )
        )
        for key, path, kind, shape in _adapter_entries(
            cfg, cfg.video_adapter_layers, "reward_head.video_adapter", "video_adapter"
        ):
            entries.append(ParamEntry((key,), path, kind, shape))
    if cfg.text_adapter_layers:
        entries.append(
            ParamEntry(
                ("reward_head.text_residual_weight",), ("text_residual_weight",), IDENTITY, ()
            )
        )
        for key, path, kind, shape in _adapter_entries(
            cfg, cfg.text_adapter_layers, "reward_head.text_adapter", "text_adapter"
        ):
            entries.append(ParamEntry((key,), path, kind, shape))
    entries.append(ParamEntry(LOGIT_SCALE_KEYS, ("logit_scale",), IDENTITY, ()))
    return entries


def official_key_shapes(cfg: MineCLIPConfig) -> list[tuple[str, tuple[int, ...]]]:
    """All official state-dict keys (aliases included) with shapes, in `state_dict()` order."""
    shape_of = {k: e.shape for e in param_entries(cfg) for k in e.keys}

    def section(prefix: str) -> list[str]:
        return [k for k in shape_of if k.startswith(prefix)]

    # Module registration order of the official MineCLIP (own params before children).
    order = section("image_encoder.") + section("temporal_encoder.")
    order += [k for k in ("reward_head.video_residual_weight", "reward_head.text_residual_weight")]
    order += ["reward_head.clip_model.logit_scale"]
    order += section("reward_head.clip_model.vision_model.")
    order += section("reward_head.clip_model.text_model.")
    order += section("reward_head.video_adapter.") + section("reward_head.text_adapter.")
    order += ["clip_model.logit_scale"]
    order += section("clip_model.vision_model.") + section("clip_model.text_model.")
    order = [k for k in order if k in shape_of]
    assert len(order) == len(shape_of) and len(set(order)) == len(order)
    return [(k, shape_of[k]) for k in order]


# ------------------------------------------------------------------------ layout transforms
def _to_flax(kind: str, array: np.ndarray) -> np.ndarray:
    if kind == LINEAR:  # torch Linear [out, in] -> Dense kernel [in, out]
        return np.ascontiguousarray(array.T)
    if kind == CONV:  # OIHW -> HWIO
        return np.ascontiguousarray(array.transpose(2, 3, 1, 0))
    return array


def _to_torch(kind: str, array: np.ndarray) -> np.ndarray:
    if kind == LINEAR:
        return np.ascontiguousarray(array.T)
    if kind == CONV:  # HWIO -> OIHW
        return np.ascontiguousarray(array.transpose(3, 2, 0, 1))
    return array


def _as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor, without importing torch here
        value = value.detach().cpu()
        if str(value.dtype) in ("torch.bfloat16", "torch.float16"):
            value = value.float()
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype.kind == "f" and array.dtype != np.float32:
        array = array.astype(np.float32)
    return array


class CheckpointMismatchError(ValueError):
    """A state dict that does not fit the expected MineCLIP architecture."""


def _format_list(title: str, items: list[str], limit: int = 40) -> str:
    shown = items[:limit]
    more = f"\n    ... and {len(items) - limit} more" if len(items) > limit else ""
    return f"{title} ({len(items)}):\n    " + "\n    ".join(shown) + more


def state_dict_to_params(
    state_dict: Mapping[str, Any], config: MineCLIPConfig, *, alias_atol: float = 0.0
) -> dict:
    """Official-key arrays (any subset of each alias group, at least one key per tensor) ->
    Flax params for `config`. Raises CheckpointMismatchError listing every missing key,
    unexpected key, shape mismatch and disagreeing alias copy."""
    sd = {k: _as_numpy(v) for k, v in state_dict.items()}
    entries = param_entries(config)
    known = {k for e in entries for k in e.keys}
    # Pass 1: keys and shapes only (cheap), so a wrong checkpoint fails before any copying.
    missing, shape_errors, present_by_entry = [], [], []
    for entry in entries:
        present = [k for k in entry.keys if k in sd]
        present_by_entry.append(present)
        if not present:
            missing.append(" | ".join(entry.keys) + f" {list(entry.shape)}")
        shape_errors += [
            f"{k}: got {list(sd[k].shape)}, expected {list(entry.shape)}"
            for k in present
            if tuple(sd[k].shape) != entry.shape
        ]
    unexpected = sorted(set(sd) - known)
    problems = []
    if missing:
        problems.append(_format_list("missing keys (any one of each group)", missing))
    if unexpected:
        problems.append(_format_list("unexpected keys", unexpected))
    if shape_errors:
        problems.append(_format_list("wrong shapes", shape_errors))
    # Pass 2: alias copies must agree (they are one tensor in the official model).
    alias_errors = []
    if not problems:
        for present in present_by_entry:
            reference = sd[present[0]]
            for alias in present[1:]:
                other = sd[alias]
                if other is reference or np.array_equal(other, reference):
                    continue
                if not np.allclose(other, reference, rtol=0.0, atol=alias_atol):
                    diff = float(np.max(np.abs(other - reference)))
                    alias_errors.append(
                        f"{alias} differs from {present[0]} (max abs diff {diff:g})"
                    )
        if alias_errors:
            problems.append(_format_list("alias copies that disagree", alias_errors))
    if problems:
        raise CheckpointMismatchError(
            f"state dict does not match MineCLIP ({config.pool}, vision {config.vision_width}x"
            f"{config.vision_layers}, text {config.text_width}x{config.text_layers}):\n"
            + "\n".join(problems)
            + "\nPass the right MineCLIPConfig (or let load_checkpoint infer it), and strip any "
            "wrapper prefix other than 'model.'."
        )
    params: dict = {}
    for entry, present in zip(entries, present_by_entry):
        node = params
        for name in entry.path[:-1]:
            node = node.setdefault(name, {})
        node[entry.path[-1]] = _to_flax(entry.kind, sd[present[0]]).astype(np.float32)
    return params


def params_to_state_dict(
    params: Mapping, config: MineCLIPConfig, *, aliases: bool = True
) -> dict[str, np.ndarray]:
    """Flax params -> official-key float32 NumPy state dict in `state_dict()` order. With
    `aliases=True` every alias key is emitted (what torch's strict load expects), each alias
    the same array object."""
    by_key = {}
    for entry in param_entries(config):
        node = params
        try:
            for name in entry.path:
                node = node[name]
        except (KeyError, TypeError) as e:
            raise CheckpointMismatchError(
                f"params lack {'/'.join(entry.path)} required by {config}"
            ) from e
        array = _to_torch(entry.kind, np.asarray(node, dtype=np.float32))
        if tuple(array.shape) != entry.shape:
            raise CheckpointMismatchError(
                f"params {'/'.join(entry.path)} has torch-layout shape {list(array.shape)}, "
                f"expected {list(entry.shape)}"
            )
        for key in entry.keys if aliases else entry.keys[:1]:
            by_key[key] = array
    return {k: by_key[k] for k, _ in official_key_shapes(config) if k in by_key}


# ------------------------------------------------------------------------ config inference
def _max_index(sd: Mapping[str, Any], prefix: str) -> int:
    idx = [int(k[len(prefix) :].split(".")[0]) for k in sd if k.startswith(prefix)]
    return max(idx) + 1 if idx else 0


def _first(sd: Mapping[str, Any], keys) -> Any:
    for k in keys:
        if k in sd:
            return sd[k]
    raise CheckpointMismatchError(
        "cannot infer the MineCLIP architecture: none of "
        + ", ".join(keys)
        + " is in the state dict (is it a MineCLIP checkpoint? keys start with e.g. "
        + ", ".join(sorted(sd)[:5])
        + ")"
    )


def infer_config(state_dict: Mapping[str, Any], **overrides) -> MineCLIPConfig:
    """The MineCLIPConfig a state dict with official keys holds. attn vs avg comes from the
    presence of temporal-encoder keys; widths and depths from shapes. Head counts cannot be
    read from shapes: they follow the official rule (vision width // 64, 8 text and temporal
    heads at width 512, else width // 64) unless given in `overrides`."""
    sd = state_dict
    shape = lambda keys: tuple(np.shape(_first(sd, keys)))  # noqa: E731
    (vision_width,) = shape([p + "cls_token" for p in VISION_PREFIXES])
    n_pos, _ = shape([p + "pos_embed" for p in VISION_PREFIXES])
    _, _, patch, _ = shape([p + "conv1.weight" for p in VISION_PREFIXES])
    _, embed_dim = shape([p + "projection" for p in VISION_PREFIXES])
    vocab_size, text_width = shape([p + "token_embedding.weight" for p in TEXT_PREFIXES])
    context_length, _ = shape([p + "pos_embed" for p in TEXT_PREFIXES])
    vision_layers = max(_max_index(sd, p + "blocks.") for p in VISION_PREFIXES)
    text_layers = max(_max_index(sd, p + "blocks.") for p in TEXT_PREFIXES)
    heads = lambda width: 8 if width == 512 else max(1, width // 64)  # noqa: E731
    fields: dict[str, Any] = dict(
        patch_size=patch,
        vision_width=vision_width,
        vision_layers=vision_layers,
        vision_heads=max(1, vision_width // 64),
        text_width=text_width,
        text_layers=text_layers,
        text_heads=heads(text_width),
        context_length=context_length,
        vocab_size=vocab_size,
        embed_dim=embed_dim,
        video_adapter_layers=(_max_index(sd, "reward_head.video_adapter.") + 2) // 3,
        text_adapter_layers=(_max_index(sd, "reward_head.text_adapter.") + 2) // 3,
    )
    if any(k.startswith(TEMPORAL_PREFIX) for k in sd):
        max_seq_len, _ = shape([TEMPORAL_PREFIX + "pos_emb.emb.weight"])
        inner, _ = shape([TEMPORAL_PREFIX + "attn_layers.layers.0.1.to_q.weight"])
        ff2, _ = shape([TEMPORAL_PREFIX + "attn_layers.layers.1.1.net.0.proj.weight"])
        t_heads = heads(embed_dim)
        fields.update(
            pool="attn",
            temporal_depth=_max_index(sd, TEMPORAL_PREFIX + "attn_layers.layers.") // 2,
            temporal_heads=t_heads,
            temporal_dim_head=inner // t_heads,
            temporal_ff_mult=ff2 // (2 * embed_dim),
            max_seq_len=max_seq_len,
        )
    else:
        fields["pool"] = "avg"
    fields.update(overrides)
    # The patch grid fixes H/patch * W/patch = n_pos - 1; MineCLIP's is 160x256 (10 x 16).
    if "image_size" not in overrides:
        default = MineCLIPConfig().image_size
        grid = (default[0] // patch) * (default[1] // patch)
        if grid != n_pos - 1:
            raise CheckpointMismatchError(
                f"the vision pos_embed has {n_pos - 1} patch rows, which does not fit "
                f"{default[0]}x{default[1]} frames with {patch}-pixel patches; pass "
                "image_size=(H, W) explicitly"
            )
    return MineCLIPConfig(**fields)


# ------------------------------------------------------------------- pos-embed resampling
def _cubic_weights(t: np.ndarray, a: float = -0.75) -> np.ndarray:
    """Keys cubic convolution weights for offsets t in [0, 1) at taps -1, 0, 1, 2."""

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def bicubic_matrix(in_size: int, out_size: int) -> np.ndarray:
    """[out_size, in_size] matrix of torch's bicubic resampling along one axis
    (align_corners=False, A = -0.75, border taps clamped, no antialias)."""
    scale = in_size / out_size
    src = (np.arange(out_size, dtype=np.float64) + 0.5) * scale - 0.5  # not clamped for cubic
    base = np.floor(src)
    weights = _cubic_weights(src - base)
    matrix = np.zeros((out_size, in_size), dtype=np.float64)
    for tap in range(4):
        idx = np.clip(base.astype(np.int64) - 1 + tap, 0, in_size - 1)
        np.add.at(matrix, (np.arange(out_size), idx), weights[:, tap])
    return matrix


def resize_pos_embed(
    pos_embed: np.ndarray, old_grid: tuple[int, int] | int, new_grid: tuple[int, int]
) -> np.ndarray:
    """Resize a ViT position table [1 + gh*gw, D] (cls row first) to a new patch grid, as the
    official `resize_pos_embed` (cls row kept, patch rows row-major, bicubic)."""
    if isinstance(old_grid, int):
        old_grid = (old_grid, old_grid)
    pos_embed = np.asarray(pos_embed, dtype=np.float32)
    n, d = pos_embed.shape
    if n != 1 + old_grid[0] * old_grid[1]:
        raise ValueError(
            f"pos_embed has {n} rows; a {old_grid[0]}x{old_grid[1]} grid needs "
            f"{1 + old_grid[0] * old_grid[1]} (cls row + patches)"
        )
    grid = pos_embed[1:].reshape(old_grid[0], old_grid[1], d).astype(np.float64)
    mh = bicubic_matrix(old_grid[0], new_grid[0])
    mw = bicubic_matrix(old_grid[1], new_grid[1])
    resized = np.einsum("ih,hwd,jw->ijd", mh, grid, mw).reshape(-1, d)
    return np.concatenate([pos_embed[:1], resized.astype(np.float32)], axis=0)


def openai_clip_to_state_dict(
    clip_state_dict: Mapping[str, Any], config: MineCLIPConfig | None = None
) -> dict[str, np.ndarray]:
    """OpenAI CLIP ViT-B/16 weights (`clip/model.py` names) -> MineCLIP official-key towers
    (canonical keys only): the vision position table is bicubically resized from 14x14 to the
    config's patch grid. Temporal encoder and adapters are not in CLIP: see
    `mineclip_jax.init_from_openai_clip`, which keeps them randomly initialised."""
    config = MineCLIPConfig.attn() if config is None else config
    sd = {k: _as_numpy(v) for k, v in clip_state_dict.items()}
    out: dict[str, np.ndarray] = {}
    vis, txt = VISION_PREFIXES[0], TEXT_PREFIXES[0]
    rename = {
        "visual.class_embedding": vis + "cls_token",
        "visual.proj": vis + "projection",
        "token_embedding.weight": txt + "token_embedding.weight",
        "positional_embedding": txt + "pos_embed",
        "ln_final.weight": txt + "ln_final.weight",
        "ln_final.bias": txt + "ln_final.bias",
        "text_projection": txt + "projection",
        "logit_scale": LOGIT_SCALE_KEYS[0],
    }
    for key, value in sd.items():
        if key in rename:
            out[rename[key]] = value
        elif key == "visual.positional_embedding":
            old = int(round(math.sqrt(value.shape[0] - 1)))
            out[vis + "pos_embed"] = resize_pos_embed(value, (old, old), config.grid_size)
        elif key.startswith("visual.transformer.resblocks."):
            out[vis + "blocks." + key[len("visual.transformer.resblocks.") :]] = value
        elif key.startswith("visual."):
            out[vis + key[len("visual.") :]] = value  # conv1, ln_pre, ln_post
        elif key.startswith("transformer.resblocks."):
            out[txt + "blocks." + key[len("transformer.resblocks.") :]] = value
        # input_resolution / context_length / vocab_size buffers of old checkpoints: ignored
    return out

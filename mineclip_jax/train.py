"""Contrastive training and fine-tuning of MineCLIP (paper App. E.3).

    python -m mineclip_jax.train --data DIR --out RUN                      # random tiny model
    python -m mineclip_jax.train --data DIR --out RUN --config attn --init attn.pth \
        --finetune-last-layers 2 --bf16                                     # the paper's recipe
    python -m mineclip_jax.train --data MINI --out RUN --config mini --save-dtype int8
                                                       # MineCLIP-mini (see scripts/ in README)

DIR is any TFDS dataset directory with the training-data contract (docs/interfaces.md):
`frames` uint8 [16, 160, 256, 3], `tokens` int32 [77], `text`, `clip_id`, `start_s`, `end_s`,
splits `train` and `test`; it is read through TFDS array_record data sources (no TensorFlow).
It may also be an array clip directory as `data.synthetic` writes (`clips.json`,
`{split}_frames.npy` uint8 [N, 16, H, W, 3] read by memory map, `{split}_tokens.npy`,
`{split}_clips.jsonl`), at any frame size that matches the model's `image_size`; its act labels
make retrieval count clips with equivalent captions as matches.

What a run does: symmetric InfoNCE over the batch's video/text pairs with the learnable
temperature (log scale clamped to +-ln 100 as CLIP/MineCLIP), AdamW with a cosine schedule and
linear warm-up, x`pretrained_lr_mult` learning rate on the pretrained CLIP towers and
layer-wise decay down each tower when starting from weights (`--init`), optionally only the
last layers of each tower trainable, temporally consistent random resized crop, bfloat16
compute, data parallel over every device (the batch is sharded over a 1-D `data` mesh),
orbax checkpoints in RUN/checkpoints (`--resume` continues a run, after checking that its recipe
is the saved one; each step verified against the SHA256SUMS written after it was committed; a
run whose loss or weights go NaN stops before it saves them), TensorBoard scalars in RUN/tb, a tqdm bar, retrieval R@1/R@5 (text->video and video->text) on the test split, and the
final model in RUN/model, which `mineclip_jax.load_checkpoint("RUN/model")` reads.

`--distributed` (mineclip_jax.distributed; docs/cluster.md) runs one process per host: the mesh
spans every process's devices and each step is one global data-parallel program. Every process
draws the same global batch indices (a pure function of step and seed), reads only its own
contiguous share of them and contributes those rows to the global batch, so P processes x D
devices compute what one process with P*D devices computes. Process 0 writes the logs, the
config, the final model and prints, and holds RUN's lock (mineclip_jax.run_lock: a second run on
the same RUN is refused, naming the holder); all processes write the orbax checkpoints (RUN must
be on a file system every host sees). The train state is replicated and the data order global, so a run
may resume under another process count.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import json
import math
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Literal

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mineclip_jax import compile_cache, distributed, run_lock
from mineclip_jax.checkpoint import (
    CHECKSUM_FILE,
    load_checkpoint,
    save_checkpoint,
    verify_checksums,
    write_json,
    write_tree_checksums,
)
from mineclip_jax.config import MineCLIPConfig
from mineclip_jax.handle import MineCLIPHandle, init_params
from mineclip_jax.model import MineCLIP

NUM_FRAMES = 16
CONTRACT = {
    "frames": ((NUM_FRAMES, 160, 256, 3), np.uint8),
    "tokens": ((77,), np.int32),
    "text": ((), None),
    "clip_id": ((), None),
    "start_s": ((), np.float32),
    "end_s": ((), np.float32),
}
LOGIT_SCALE_MAX = math.log(100.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainConfig(distributed.DistributedConfig):
    """MineCLIP contrastive training: `python -m mineclip_jax.train --data DIR --out RUN`."""

    data: Path  # TFDS dataset directory with the clip contract and train/test splits.
    out: Path  # run directory: checkpoints/, tb/, model/ (final), train_config.json.
    init: str | None = None  # start from weights: official .pth, state dict, or our model dir.
    config: Literal["tiny", "mini", "attn", "avg"] = "tiny"  # architecture for random init.
    pool: Literal["attn", "avg"] = "attn"  # temporal aggregator of the tiny config.
    steps: int = 1000  # optimizer steps in total.
    batch_size: int = 32  # global batch (video/text pairs); divisible by the device count
    # (all processes' devices with --distributed).
    lr: float = 3e-4  # peak learning rate (after warm-up).
    warmup_steps: int = 500  # linear warm-up steps (paper: 500), capped at steps // 5.
    final_lr_frac: float = 0.0  # cosine decays to lr * final_lr_frac.
    weight_decay: float = 0.2  # AdamW decay on matrices (not biases, norms, embeddings, scalars).
    b1: float = 0.9  # Adam beta1.
    b2: float = 0.98  # Adam beta2 (CLIP's value for contrastive training).
    grad_clip: float = 1.0  # global-norm gradient clipping (0 = off).
    pretrained_lr_mult: float = 0.5  # LR multiplier on the pretrained CLIP towers (with --init).
    layer_decay: float = 0.65  # layer-wise LR decay down each tower (with --init); 1 = off.
    finetune_last_layers: int = 0  # train only the last N blocks of each tower (paper: 2); 0 = all.
    bf16: bool = False  # compute in bfloat16 (params and optimizer stay float32).
    crop_min_area: float = 0.8  # random resized crop keeps >= this area fraction; 1 = no crop.
    train_frames: int = 0  # encode a random ordered subset of this many frames per clip in a
    # training step (0 = all 16); only for the avg aggregator, whose mean it leaves unbiased.
    eval_batch_size: int = 32  # clips per evaluation batch (with --distributed: divisible by
    # the device count).
    eval_every: int = 0  # evaluate on the test split every N steps (0 = only at the end).
    max_eval_clips: int = 0  # evaluate on at most this many test clips (0 = all).
    ckpt_every: int = 200  # save an orbax checkpoint every N steps (and at the end).
    log_every: int = 10  # TensorBoard scalars every N steps.
    seed: int = 0  # seed of init, data order and augmentation.
    time_limit_min: float = 0.0  # stop (checkpoint, evaluate) after this many minutes; 0 = none.
    progress: bool = True  # show a tqdm progress bar.
    # Storage of RUN/model weights: float32, float16, or int8 (tables of >= 1M elements int8 with
    # a per-row scale, the rest float16; see checkpoint.save_checkpoint). Loads as float32.
    save_dtype: Literal["float32", "float16", "int8"] = "float32"
    resume: bool = False  # continue the run in --out from its newest intact checkpoint; every
    # flag but those of RESUME_OVERRIDES must be the saved run's (train_config.json).


# Flags a --resume may change (where the data lives, evaluation, logging, the time budget, a
# process's address); every other one is the saved recipe, --steps included (it sets the
# learning-rate schedule).
RESUME_OVERRIDES = ("data", "out", "resume", "eval_batch_size", "eval_every", "max_eval_clips",
                    "ckpt_every", "log_every", "progress", "time_limit_min", "save_dtype",
                    *(f.name for f in dataclasses.fields(distributed.DistributedConfig)))  # fmt: skip


# ------------------------------------------------------------------------------ the data
ARRAY_FORMAT = "mineclip-jax-clips/1"  # array clip directories (data.synthetic writes them)


class ArraySplit:
    """One split of an array clip directory: frames by memory map, tokens, texts and labels."""

    def __init__(self, data_dir: Path, split: str):
        meta = json.loads((data_dir / "clips.json").read_text())
        if meta.get("format") != ARRAY_FORMAT:
            raise ValueError(
                f"{data_dir / 'clips.json'} has format {meta.get('format')!r}, expected "
                f"{ARRAY_FORMAT!r}"
            )
        if split not in meta["clips"]:
            raise ValueError(f"{data_dir} has no {split!r} split (it has {list(meta['clips'])})")
        self.frames = np.load(data_dir / f"{split}_frames.npy", mmap_mode="r")
        self.tokens = np.load(data_dir / f"{split}_tokens.npy")
        with open(data_dir / f"{split}_clips.jsonl") as f:
            self.records = [json.loads(line) for line in f]
        n = len(self.records)
        if self.frames.shape[0] != n or self.tokens.shape != (n, 77):
            raise ValueError(
                f"{data_dir} split {split!r} is inconsistent: {self.frames.shape[0]} frame clips, "
                f"tokens {self.tokens.shape}, {n} records"
            )
        self.texts = [r["text"] for r in self.records]
        self.labels = [r.get("label", r["text"]) for r in self.records]

    @property
    def frame_shape(self) -> tuple[int, ...]:
        return tuple(self.frames.shape[1:])

    def __len__(self):
        return len(self.records)

    def batch(self, indices) -> dict:
        indices = np.asarray(indices, np.int64)
        order = np.argsort(indices)  # memory-mapped reads in file order
        frames = np.empty((len(indices), *self.frames.shape[1:]), np.uint8)
        frames[order] = self.frames[indices[order]]
        return {
            "frames": frames,
            "tokens": self.tokens[indices],
            "text": [self.texts[i] for i in indices],
        }


def open_split(data_dir: str | os.PathLike, split: str, image_size: tuple[int, int] = (160, 256)):
    """A random-access data source over one split, after checking the clip contract (frames
    [16, *image_size, 3]): a TFDS dataset directory or an array clip directory."""
    data_dir = Path(data_dir).expanduser()
    if (data_dir / "clips.json").is_file():
        source = ArraySplit(data_dir, split)
        want = (NUM_FRAMES, *image_size, 3)
        if source.frame_shape != want:
            raise ValueError(
                f"{data_dir} holds frames {list(source.frame_shape)} but the model takes "
                f"{list(want)}; build the clips at the model's image size (data.synthetic "
                f"--height/--width) or choose the matching --config"
            )
        return source
    import tensorflow_datasets as tfds

    if not (data_dir / "dataset_info.json").is_file():
        raise FileNotFoundError(
            f"{data_dir} is not a TFDS dataset directory (no dataset_info.json) nor an array "
            f"clip directory (no clips.json); pass the directory a data/ builder wrote, e.g. "
            f"python -m data.synthetic --out DIR"
        )
    if tuple(image_size) != (160, 256):
        raise ValueError(
            f"TFDS clip datasets hold 160x256 frames; a model at {tuple(image_size)} needs an "
            f"array clip directory (python -m data.synthetic --height H --width W)"
        )
    builder = tfds.builder_from_directory(str(data_dir))
    features = builder.info.features
    problems = []
    for name, (shape, dtype) in CONTRACT.items():
        if name not in features:
            problems.append(f"missing feature {name!r}")
            continue
        if dtype is not None:
            got_shape = tuple(features[name].shape)
            got_dtype = np.dtype(features[name].np_dtype)
            if got_shape != shape or got_dtype != dtype:
                problems.append(
                    f"{name} is {got_dtype}{list(got_shape)}, need {dtype}{list(shape)}"
                )
    if problems:
        raise ValueError(
            f"{data_dir} does not follow the MineCLIP clip contract: " + "; ".join(problems)
        )
    if split not in builder.info.splits:
        raise ValueError(f"{data_dir} has no {split!r} split (it has {list(builder.info.splits)})")
    return builder.as_data_source(split=split)


def _as_str(x) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def load_examples(source, indices) -> dict[str, np.ndarray]:
    """Stack examples `indices` of a data source into a host batch."""
    if isinstance(source, ArraySplit):
        return source.batch(indices)
    items = source.__getitems__([int(i) for i in indices])
    return {
        "frames": np.stack([np.asarray(e["frames"], np.uint8) for e in items]),
        "tokens": np.stack([np.asarray(e["tokens"], np.int32) for e in items]),
        "text": [_as_str(e["text"]) for e in items],
    }


def batch_indices(num_examples: int, batch_size: int, step: int, seed: int) -> np.ndarray:
    """Indices of the batch at `step`: epochs of fresh permutations, remainder dropped.
    A pure function of (step, seed), so a resumed run continues the same data order."""
    per_epoch = num_examples // batch_size
    if per_epoch == 0:
        raise ValueError(
            f"batch_size {batch_size} exceeds the {num_examples} training clips; lower --batch-size"
        )
    epoch, pos = divmod(step, per_epoch)
    perm = np.random.default_rng([seed, epoch]).permutation(num_examples)
    return perm[pos * batch_size : (pos + 1) * batch_size]


def random_resized_crop(key: jax.Array, frames: jax.Array, min_area: float) -> jax.Array:
    """Temporally consistent random resized crop: one box per clip (same for all its frames),
    area fraction in [min_area, 1], the clip's aspect ratio, resampled back to full size
    (bilinear). frames uint8 [B, T, H, W, 3] -> float32 in 0..255."""
    b, _, h, w, _ = frames.shape
    k_area, k_y, k_x = jax.random.split(key, 3)
    side = jnp.sqrt(jax.random.uniform(k_area, (b,), minval=min_area, maxval=1.0))
    oy = jax.random.uniform(k_y, (b,)) * (1.0 - side) * h
    ox = jax.random.uniform(k_x, (b,)) * (1.0 - side) * w

    def one(clip, s, y0, x0):
        scale = jnp.stack([1.0 / s, 1.0 / s])
        translation = jnp.stack([-y0 / s, -x0 / s])
        return jax.image.scale_and_translate(
            clip.astype(jnp.float32), clip.shape, (1, 2), scale, translation, "linear"
        )

    return jax.vmap(one)(frames, side, oy, ox)


# ------------------------------------------------------------------------ loss, metrics
def contrastive_loss(logits: jax.Array) -> jax.Array:
    """Symmetric InfoNCE: mean of video->text and text->video cross-entropy, pair i <-> i.
    logits: [B, B] video x text, logit scale applied."""
    chex.assert_rank(logits, 2)
    labels = jnp.arange(logits.shape[0])
    logits = logits.astype(jnp.float32)
    v2t = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    t2v = optax.softmax_cross_entropy_with_integer_labels(logits.T, labels).mean()
    return 0.5 * (v2t + t2v)


def retrieval_metrics(video_emb, text_emb, ks=(1, 5), labels=None) -> dict[str, float]:
    """Recall@k of text->video and video->text retrieval; pair i of each is the match.
    Ties count against the match (a rank is 1 + the number of candidates scoring >= it,
    other than itself). With `labels` [N] (e.g. act labels of synthetic clips), every
    candidate with the query's label counts as a match: the rank is 1 + the number of
    non-matching candidates scoring >= the best-scoring match."""
    v = np.asarray(video_emb, np.float64)
    t = np.asarray(text_emb, np.float64)
    v = v / np.linalg.norm(v, axis=-1, keepdims=True)
    t = t / np.linalg.norm(t, axis=-1, keepdims=True)
    sim = v @ t.T  # [N video, N text]
    n = sim.shape[0]
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (n,):
            raise ValueError(f"labels must be [N]={n}, got shape {labels.shape}")
        same = labels[:, None] == labels[None, :]
        best_t2v = np.where(same, sim, -np.inf).max(axis=0)  # best matching video per text
        best_v2t = np.where(same, sim, -np.inf).max(axis=1)
        t2v_rank = 1 + ((sim >= best_t2v[None, :]) & ~same).sum(axis=0)
        v2t_rank = 1 + ((sim >= best_v2t[:, None]) & ~same).sum(axis=1)
        out = {"num_clips": n, "num_labels": int(len(np.unique(labels)))}
        for k in ks:
            out[f"t2v_R@{k}"] = float(np.mean(t2v_rank <= k))
            out[f"v2t_R@{k}"] = float(np.mean(v2t_rank <= k))
        return out
    diag = np.diag(sim)
    eye = np.eye(n, dtype=bool)
    # rank of video i for text i: videos scoring >= the match in column i.
    t2v_rank = 1 + ((sim >= diag[None, :]) & ~eye).sum(axis=0)
    v2t_rank = 1 + ((sim >= diag[:, None]) & ~eye).sum(axis=1)
    out = {}
    for k in ks:
        out[f"t2v_R@{k}"] = float(np.mean(t2v_rank <= k))
        out[f"v2t_R@{k}"] = float(np.mean(v2t_rank <= k))
    out["num_clips"] = n
    return out


# ------------------------------------------------------------------------- the optimizer
def _path_names(path) -> list[str]:
    return [str(getattr(p, "key", getattr(p, "name", p))) for p in path]


_BLOCK = re.compile(r"blocks_(\d+)$")
_TOWERS = {"image_encoder": "vision_layers", "text_encoder": "text_layers"}
_TOWER_HEADS = {"ln_post", "projection", "ln_final"}


def _tower_depth(names: list[str], config: MineCLIPConfig) -> tuple[str, int] | None:
    """(tower, depth from the top) of a tower parameter: 0 for the final norm/projection,
    L - i for block i, L + 1 for the embeddings; None outside the two CLIP towers."""
    if not names or names[0] not in _TOWERS:
        return None
    num_layers = getattr(config, _TOWERS[names[0]])
    if len(names) > 1:
        m = _BLOCK.match(names[1])
        if m:
            return names[0], num_layers - int(m.group(1))
        if names[1] in _TOWER_HEADS:
            return names[0], 0
    return names[0], num_layers + 1


def trainable_mask(params, config: MineCLIPConfig, last_layers: int):
    """True for parameters that train. With `last_layers` = N > 0 only the last N blocks of
    each tower (+ its final norm and projection) train in the towers; the temporal encoder,
    adapters and logit scale always train."""

    def keep(path, _):
        where = _tower_depth(_path_names(path), config)
        return last_layers <= 0 or where is None or where[1] <= last_layers

    return jax.tree_util.tree_map_with_path(keep, params)


def lr_multipliers(params, config: MineCLIPConfig, pretrained: bool, cfg: TrainConfig):
    """Per-parameter LR multipliers: on pretrained towers, pretrained_lr_mult * layer_decay **
    depth (depth 0 at the projection, growing toward the embeddings); 1 elsewhere."""

    def mult(path, _):
        where = _tower_depth(_path_names(path), config)
        if not pretrained or where is None:
            return 1.0
        return cfg.pretrained_lr_mult * cfg.layer_decay ** where[1]

    return jax.tree_util.tree_map_with_path(mult, params)


def _decay_mask(params):
    def decays(path, x):
        name = _path_names(path)[-1]
        return x.ndim >= 2 and name not in ("pos_embed", "embedding", "cls_token")

    return jax.tree_util.tree_map_with_path(decays, params)


def _scale_by_tree(multipliers) -> optax.GradientTransformation:
    def update(updates, state, params=None):
        del params
        return jax.tree.map(lambda u, m: u * m, updates, multipliers), state

    return optax.GradientTransformation(lambda _: optax.EmptyState(), update)


def learning_rate_schedule(cfg: TrainConfig) -> optax.Schedule:
    warmup = min(cfg.warmup_steps, max(cfg.steps // 5, 0))
    return optax.warmup_cosine_decay_schedule(
        init_value=0.0,
        peak_value=cfg.lr,
        warmup_steps=warmup,
        decay_steps=max(cfg.steps, warmup + 1),
        end_value=cfg.lr * cfg.final_lr_frac,
    )


def make_optimizer(cfg: TrainConfig, params, config: MineCLIPConfig, pretrained: bool):
    """AdamW (+clipping, LR multipliers); frozen parameters get no update and no moments."""
    train_mask = trainable_mask(params, config, cfg.finetune_last_layers)
    mults = lr_multipliers(params, config, pretrained, cfg)
    chain = []
    if cfg.grad_clip > 0:
        chain.append(optax.clip_by_global_norm(cfg.grad_clip))
    chain += [
        optax.scale_by_adam(b1=cfg.b1, b2=cfg.b2, eps=1e-6),
        optax.add_decayed_weights(cfg.weight_decay, mask=_decay_mask(params)),
        _scale_by_tree(mults),
        optax.scale_by_learning_rate(learning_rate_schedule(cfg)),
    ]
    labels = jax.tree.map(lambda t: "train" if t else "frozen", train_mask)
    return optax.multi_transform(
        {"train": optax.chain(*chain), "frozen": optax.set_to_zero()}, labels
    )


# ----------------------------------------------------------------------------- training
@struct.dataclass
class TrainState:
    step: jax.Array
    params: Any
    opt_state: Any


def make_train_step(
    module: MineCLIP, optimizer, crop_min_area: float, seed: int, train_frames: int = 0
):
    """(state, frames [B,16,H,W,3] uint8, tokens [B,77]) -> (state, metrics). Pure.
    With `train_frames` = k > 0 each step encodes the same random ordered k of the T frames
    of every clip (for the avg aggregator: an unbiased estimate of the 16-frame mean)."""

    def loss_fn(params, frames, tokens):
        video = module.apply({"params": params}, frames, method="encode_video")
        text = module.apply({"params": params}, tokens, method="encode_text")
        logits = module.apply({"params": params}, video, text, method="logits")
        loss = contrastive_loss(logits)
        acc = jnp.mean(jnp.argmax(logits, axis=1) == jnp.arange(logits.shape[0]))
        return loss, acc

    def step_fn(state: TrainState, frames, tokens):
        if 0 < train_frames < frames.shape[1]:
            key = jax.random.fold_in(jax.random.key(seed + 1), state.step)
            keep = jax.random.choice(key, frames.shape[1], (train_frames,), replace=False)
            frames = jnp.take(frames, jnp.sort(keep), axis=1)
        if crop_min_area < 1.0:
            key = jax.random.fold_in(jax.random.key(seed), state.step)
            frames = random_resized_crop(key, frames, crop_min_area)
        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, frames, tokens)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        # CLIP's trick: keep the temperature in range (scale <= 100).
        params["logit_scale"] = jnp.clip(params["logit_scale"], -LOGIT_SCALE_MAX, LOGIT_SCALE_MAX)
        metrics = {
            "loss": loss,
            "batch_acc": acc,
            "logit_scale": jnp.exp(params["logit_scale"]),
            "grad_norm": optax.global_norm(grads),
        }
        return TrainState(step=state.step + 1, params=params, opt_state=opt_state), metrics

    return step_fn


@functools.partial(jax.jit, static_argnums=0)
def _embed(module, params, frames, tokens):
    video = module.apply({"params": params}, frames, method="encode_video")
    return video, module.apply({"params": params}, tokens, method="encode_text")


def global_batch(sharding: NamedSharding, source, indices) -> tuple[jax.Array, jax.Array]:
    """(frames, tokens) of examples `indices` as global arrays split along the batch over
    `sharding`'s mesh: this process reads only its share of `indices` (all of them in a single
    process; distributed.process_share's rows, its devices' place in the mesh, otherwise)."""
    local = load_examples(source, indices[distributed.process_share(len(indices), "batch")])
    return tuple(
        jax.make_array_from_process_local_data(sharding, x, (len(indices), *x.shape[1:]))
        for x in (local["frames"], local["tokens"])
    )


def embed_split(module, params, source, batch_size: int, max_clips: int = 0, mesh=None):
    """Video and text embeddings of a whole split: ([N, D], [N, D]). With `mesh` (and
    `batch_size` divisible by its size) each batch is split over the mesh's devices, also
    across processes; every process gets all the embeddings."""
    from jax.experimental import multihost_utils

    n = len(source) if max_clips <= 0 else min(max_clips, len(source))
    sharded = mesh is not None and batch_size % mesh.size == 0
    videos, texts = [], []
    for start in range(0, n, batch_size):
        idx = np.arange(start, min(start + batch_size, n))
        # one compiled shape: the last batch is padded with copies of its last clip
        padded = np.concatenate([idx, np.full(batch_size - len(idx), idx[-1])])
        if sharded:
            frames, tokens = global_batch(NamedSharding(mesh, P("data")), source, padded)
        else:
            batch = load_examples(source, padded)
            frames, tokens = batch["frames"], batch["tokens"]
        v, t = multihost_utils.process_allgather(_embed(module, params, frames, tokens), tiled=True)
        videos.append(np.asarray(v)[: len(idx)])
        texts.append(np.asarray(t)[: len(idx)])
    return np.concatenate(videos), np.concatenate(texts)


def evaluate(module, params, source, cfg: TrainConfig, mesh=None) -> dict[str, float]:
    video, text = embed_split(module, params, source, cfg.eval_batch_size, cfg.max_eval_clips, mesh)
    labels = getattr(source, "labels", None)
    return retrieval_metrics(video, text, labels=None if labels is None else labels[: len(video)])


def _initial_handle(cfg: TrainConfig) -> tuple[MineCLIPHandle, bool]:
    if cfg.init is not None:
        return load_checkpoint(cfg.init), True
    config = {
        "tiny": lambda: MineCLIPConfig.tiny(pool=cfg.pool),
        "mini": MineCLIPConfig.mini,
        "attn": MineCLIPConfig.attn,
        "avg": MineCLIPConfig.avg,
    }[cfg.config]()
    params = init_params(config, jax.random.key(cfg.seed))
    return MineCLIPHandle(config=config, params=params), False


def _check_config(cfg: TrainConfig, num_devices: int):
    problems = []
    if cfg.steps < 1:
        problems.append("--steps must be >= 1")
    if cfg.batch_size < 2:
        problems.append("--batch-size must be >= 2 (contrastive loss needs negatives)")
    elif cfg.batch_size % num_devices:
        problems.append(
            f"--batch-size {cfg.batch_size} is not divisible by the {num_devices} devices"
        )
    if jax.process_count() > 1 and cfg.eval_batch_size % num_devices:
        problems.append(
            f"--eval-batch-size {cfg.eval_batch_size} is not divisible by the {num_devices} "
            f"devices of the {jax.process_count()} processes (--distributed evaluates over all)"
        )
    if not 0.0 < cfg.crop_min_area <= 1.0:
        problems.append("--crop-min-area must be in (0, 1]")
    if not 0 <= cfg.train_frames <= NUM_FRAMES:
        problems.append(f"--train-frames must be in [0, {NUM_FRAMES}]")
    if problems:
        raise ValueError("invalid TrainConfig: " + "; ".join(problems))


_STEP_CACHE: dict = {}
# TrainConfig fields that do not change the compiled train step.
_NOT_IN_STEP = (
    "init",
    "eval_batch_size",
    "eval_every",
    "max_eval_clips",
    "ckpt_every",
    "log_every",
    "progress",
    "time_limit_min",
    *(f.name for f in dataclasses.fields(distributed.DistributedConfig)),
)


class _NoWriter:
    """The TensorBoard writer of a process other than 0 (process 0 logs the global metrics)."""

    def add_scalar(self, *args, **kwargs) -> None:
        pass

    def close(self) -> None:
        pass


# ----------------------------------------------------------------------- the run directory
UNFINALISED = ".orbax-checkpoint-tmp"  # orbax's name for a step not yet committed


class NonFiniteError(RuntimeError):
    """The loss or the weights went NaN or infinite: the run stops before it saves them."""


def check_resume(cfg: TrainConfig, out: Path, has_checkpoints: bool) -> None:
    """A new run refuses an --out that holds committed checkpoints; `--resume` refuses a recipe
    other than the saved one (train_config.json), naming each changed flag."""
    if not cfg.resume:
        if has_checkpoints:
            raise ValueError(
                f"--out {out} already holds checkpoints of a run; pass --resume to continue it "
                f"(with its recipe) or choose a new --out"
            )
        return
    meta_path = out / "train_config.json"
    if not meta_path.is_file():
        raise ValueError(f"--resume: no run in {out} (no train_config.json); drop --resume to "
                         f"start a new run there")  # fmt: skip
    from mineclip_jax.checkpoint import read_json_file

    saved = read_json_file(meta_path, "run's recipe").get("train", {})
    now = {k: str(v) for k, v in dataclasses.asdict(cfg).items()}
    changed = sorted(k for k in now if k not in RESUME_OVERRIDES and k in saved
                     and saved[k] != now[k])  # fmt: skip
    if changed:
        flag = lambda k: "--" + k.replace("_", "-")  # noqa: E731
        listed = ", ".join(f"{flag(k)} {now[k]} (saved {saved[k]})" for k in changed)
        raise ValueError(
            f"--resume: {out} was trained with another recipe: {listed}. Pass the saved values, "
            f"or start a new run with a new --out (only {', '.join(map(flag, RESUME_OVERRIDES))} "
            f"may change)"
        )


def clean_unfinalised(ckpt_dir: Path) -> None:
    """Remove steps orbax began but never committed (a kill during a save; process 0)."""
    for path in sorted(ckpt_dir.glob(f"*{UNFINALISED}*")) if ckpt_dir.is_dir() else []:
        print(f"removing {path}, a checkpoint whose save was interrupted")
        shutil.rmtree(path, ignore_errors=True)


def restore_newest_intact(manager, abstract, out: Path, main_process: bool):
    """The newest checkpoint whose files match its SHA256SUMS and whose weights are finite (a
    damaged one is named and moved to RUN/damaged_checkpoints/ by process 0), or None."""
    import orbax.checkpoint as ocp

    for step in sorted(manager.all_steps(), reverse=True):
        directory = Path(manager.directory) / str(step)
        try:
            if (directory / CHECKSUM_FILE).is_file():
                verify_checksums(directory, hint="the checkpoint is damaged")
            state = manager.restore(step, args=ocp.args.StandardRestore(abstract))
            if not all_finite(state):
                raise NonFiniteError("it holds NaN or inf weights or optimizer states")
            return state
        except Exception as e:  # noqa: BLE001 - any unreadable file means a damaged checkpoint
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            aside = out / "damaged_checkpoints" / str(step)
            if main_process:
                print(f"warning: checkpoint step {step} ({directory}) is damaged: "
                      f"{type(e).__name__}: {first}; moved to {aside}, trying an older one")  # fmt: skip
                aside.parent.mkdir(exist_ok=True)
                shutil.rmtree(aside, ignore_errors=True)
                shutil.move(str(directory), str(aside))
            _sync("moved a damaged checkpoint aside")
            manager.reload()
    return None


def _sync(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


@jax.jit
def _all_finite(tree) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)
              if jnp.issubdtype(x.dtype, jnp.inexact)]  # fmt: skip
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def all_finite(tree) -> bool:
    """True when every float leaf of `tree` is finite."""
    return bool(_all_finite(tree))


def train(cfg: TrainConfig) -> tuple[MineCLIPHandle, dict[str, float]]:
    """Run (or, with `cfg.resume`, continue) training; returns the trained handle and the final
    test metrics. Under --distributed (`distributed.initialize` done by the caller) every process
    calls it. The run holds RUN/run.lock throughout (`run_lock.RunLockedError` for a second)."""
    out = Path(cfg.out).expanduser().resolve()
    with run_lock.hold_distributed(run_lock.run_lock_path(out), what=f"--out {out}"):
        return _train_locked(cfg)


def _train_locked(cfg: TrainConfig) -> tuple[MineCLIPHandle, dict[str, float]]:
    import orbax.checkpoint as ocp
    from tensorboardX import SummaryWriter
    from tqdm import tqdm

    # Process-major device order: process i's devices hold rows process_share(i) of a batch.
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    main_process = distributed.is_main_process()
    _check_config(cfg, len(devices))
    handle, pretrained = _initial_handle(cfg)
    if 0 < cfg.train_frames < NUM_FRAMES and handle.config.pool != "avg":
        raise ValueError(
            f"--train-frames {cfg.train_frames} needs the avg aggregator (the attn aggregator's "
            f"positions would differ between training and use); this model pools with "
            f"{handle.config.pool!r}"
        )
    train_source = open_split(cfg.data, "train", handle.config.image_size)
    test_source = open_split(cfg.data, "test", handle.config.image_size)
    out = Path(cfg.out).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)

    config = handle.config.replace(dtype="bfloat16" if cfg.bf16 else "float32")
    module = MineCLIP(config)
    meta_path = out / "train_config.json"
    meta = {"model": config.replace(dtype="float32").to_dict(), "pretrained": pretrained}
    ckpt_dir = out / "checkpoints"
    committed = ckpt_dir.is_dir() and any(p.name.isdigit() for p in ckpt_dir.iterdir())
    check_resume(cfg, out, committed)
    if cfg.resume:
        old = json.loads(meta_path.read_text())
        if old.get("model") != meta["model"]:
            raise ValueError(
                f"{out} holds a run of another architecture ({old.get('model')}); use a new --out"
            )
    if main_process:
        clean_unfinalised(ckpt_dir)
    meta["train"] = {k: str(v) for k, v in dataclasses.asdict(cfg).items()}
    meta["process_count"] = jax.process_count()
    if main_process:
        write_json(meta_path, meta)  # atomic: another process may be reading it

    mesh = Mesh(np.array(devices), ("data",))
    replicated = NamedSharding(mesh, P())
    batch_sharding = NamedSharding(mesh, P("data"))
    params = jax.tree.map(jnp.asarray, handle.params)
    optimizer = make_optimizer(cfg, params, config, pretrained)
    state = TrainState(
        step=jnp.zeros((), jnp.int32), params=params, opt_state=optimizer.init(params)
    )
    state = jax.device_put(state, replicated)

    manager = ocp.CheckpointManager(
        ckpt_dir,
        options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True),
    )
    if cfg.resume:
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)
        restored = restore_newest_intact(manager, abstract, out, main_process)
        if restored is not None:
            state = jax.device_put(restored, replicated)
            if main_process:
                print(f"resumed {out} at step {int(state.step)}")
        elif main_process:  # a kill during the first save: nothing to lose, start at step 0
            print(f"--resume: {out} has no intact checkpoint yet; training from step 0")

    # One compiled step per (model, recipe, devices): rerunning or resuming in the same
    # process (a notebook) reuses it instead of compiling again.
    recipe = dataclasses.replace(
        cfg,
        **{k: TrainConfig.__dataclass_fields__[k].default for k in _NOT_IN_STEP},
        data=Path("."),
        out=Path("."),
    )
    cache_key = (config, pretrained, repr(recipe), tuple(devices))
    if cache_key not in _STEP_CACHE:
        _STEP_CACHE[cache_key] = jax.jit(
            make_train_step(module, optimizer, cfg.crop_min_area, cfg.seed, cfg.train_frames),
            in_shardings=(replicated, batch_sharding, batch_sharding),
            out_shardings=(replicated, replicated),
            donate_argnums=0,
        )
    step_fn = _STEP_CACHE[cache_key]
    writer = SummaryWriter(str(out / "tb")) if main_process else _NoWriter()
    n_train = len(train_source)
    start = int(state.step)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def fetch(step):  # every process draws the same global batch and reads its share
        indices = batch_indices(n_train, cfg.batch_size, step, cfg.seed)
        return global_batch(batch_sharding, train_source, indices)

    pending = pool.submit(fetch, start) if start < cfg.steps else None
    bar = tqdm(
        range(start, cfg.steps),
        initial=start,
        total=cfg.steps,
        disable=not (cfg.progress and main_process),
    )
    metrics = {}
    deadline = time.monotonic() + 60 * cfg.time_limit_min if cfg.time_limit_min > 0 else None
    for step in bar:
        frames, tokens = pending.result()
        # Prefetch the next batch on a thread while this step runs.
        pending = pool.submit(fetch, step + 1) if step + 1 < cfg.steps else None
        state, metrics = step_fn(state, frames, tokens)
        done = step + 1
        if done % cfg.log_every == 0 or done == cfg.steps:
            scalars = {k: float(v) for k, v in metrics.items()}
            for k, v in scalars.items():
                writer.add_scalar(f"train/{k}", v, done)
            writer.add_scalar("train/lr", float(learning_rate_schedule(cfg)(done - 1)), done)
            bar.set_postfix(loss=f"{scalars['loss']:.3f}", acc=f"{scalars['batch_acc']:.2f}")
        if cfg.eval_every and done % cfg.eval_every == 0 and done != cfg.steps:
            for k, v in evaluate(module, state.params, test_source, cfg, mesh).items():
                writer.add_scalar(f"test/{k}", v, done)
        # Process 0's clock decides for all: every process must save and stop at the same step.
        out_of_time = deadline is not None and distributed.agree(time.monotonic() > deadline)
        if done % cfg.ckpt_every == 0 or done == cfg.steps or out_of_time:
            if not (np.isfinite(float(metrics["loss"])) and all_finite(state)):
                raise NonFiniteError(
                    f"step {done}: the loss ({float(metrics['loss'])}) or the weights are NaN or "
                    f"inf; stopped before saving them (the checkpoints on disk stay intact). "
                    f"Lower --lr or keep --grad-clip on, then continue with --resume"
                )
            manager.save(done, args=ocp.args.StandardSave(state))
            manager.wait_until_finished()  # committed: its checksums can be written
            if main_process:
                write_tree_checksums(Path(manager.directory) / str(done))
        if out_of_time:
            if main_process:
                print(
                    f"\ntime limit of {cfg.time_limit_min:g} min reached at step {done}; rerun "
                    "to resume"
                )
            break
    pool.shutdown(cancel_futures=True)
    manager.wait_until_finished()

    results = evaluate(module, state.params, test_source, cfg, mesh)
    for k, v in results.items():
        writer.add_scalar(f"test/{k}", v, int(state.step))
    writer.close()
    final = MineCLIPHandle(
        config=config.replace(dtype="float32"), params=jax.device_get(state.params)
    )
    if not main_process:
        return final, results
    save_checkpoint(final, out / "model", dtype=cfg.save_dtype)
    n = results["num_clips"]
    print(f"\ntest split: {n} clips, chance R@1 = {1 / n:.4f}, R@5 = {min(5 / n, 1):.4f}")
    for k in ("t2v_R@1", "t2v_R@5", "v2t_R@1", "v2t_R@5"):
        print(f"  {k:8s} {results[k]:.4f}")
    print(f"model saved to {out / 'model'} (mineclip_jax.load_checkpoint reads it)")
    return final, results


def main(argv=None):
    import tyro

    cfg = tyro.cli(TrainConfig, args=argv)
    with distributed.fail_fast():  # --distributed: a failing process leaves at once (no hang)
        try:
            distributed.initialize(cfg)  # --distributed: join the others before JAX computes
            compile_cache.enable()  # a rerun or a --resume loads the compiled step from disk
            train(cfg)
        except (distributed.DistributedError, run_lock.RunLockedError, NonFiniteError) as e:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None


if __name__ == "__main__":
    main()

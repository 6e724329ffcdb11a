"""TFDS data source -> device batches sharded over a mesh, with temporally consistent crops.

    import jax
    from data.loader import LoaderConfig, batches
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    for batch in batches(LoaderConfig(data_dir="~/datasets/mc_synthetic", batch_size=32), mesh):
        batch["frames"]   # uint8 [32, 16, 160, 256, 3], sharded over "data", randomly cropped
        batch["tokens"]   # int32 [32, 77], sharded the same way
        batch["text"], batch["clip_id"]  # host numpy arrays of str (this process's rows)

The order of examples is a pure function of (seed, step): epoch e uses permutation
`default_rng([seed, e])`, so `start_step` resumes a run exactly. Each process reads only its
rows of a global batch (multi-host safe) through TFDS's array_record random-access data source
(no TensorFlow); the next batches are read on a background thread while the device works.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from data import tfds_io
from data.augment import CropConfig, random_resized_crop

DEVICE_FEATURES = ("frames", "tokens", "start_s", "end_s")
HOST_FEATURES = ("text", "clip_id")


@dataclasses.dataclass(frozen=True)
class LoaderConfig:
    """Batches of contract examples from a TFDS dataset directory."""

    data_dir: str  # TFDS dataset directory (the one holding dataset_info.json).
    split: str = "train"  # split to read ("train" or "test").
    batch_size: int = 32  # global batch size, over all processes and devices.
    seed: int = 0  # seed of the shuffling order and of the crops.
    shuffle: bool = True  # new random order every epoch; False reads in stored order.
    num_epochs: int | None = None  # stop after this many epochs; None repeats forever.
    drop_remainder: bool = True  # drop the last partial batch of an epoch (keeps shapes static).
    augment: bool = True  # temporally consistent random resized crop (appendix E.3).
    crop: CropConfig = CropConfig()  # crop parameters when augment is on.
    start_step: int = 0  # first batch to produce (resume a run where it stopped).
    prefetch: int = 2  # batches read ahead on a background thread.
    data_axis: str = "data"  # mesh axis the batch dimension is sharded over.


def num_batches_per_epoch(num_examples: int, batch_size: int, drop_remainder: bool) -> int:
    if drop_remainder:
        return num_examples // batch_size
    return -(-num_examples // batch_size)


def batch_indices(step: int, num_examples: int, config: LoaderConfig) -> np.ndarray:
    """Global example indices of batch `step` (pure function of config and step)."""
    per_epoch = num_batches_per_epoch(num_examples, config.batch_size, config.drop_remainder)
    epoch, position = divmod(step, per_epoch)
    if config.shuffle:
        order = np.random.default_rng([config.seed, epoch]).permutation(num_examples)
    else:
        order = np.arange(num_examples)
    return order[position * config.batch_size : (position + 1) * config.batch_size]


def read_examples(source, indices: np.ndarray) -> dict[str, np.ndarray]:
    """Stack examples `indices` of a data source into host arrays (strings as numpy str)."""
    examples = source.__getitems__([int(i) for i in indices])
    batch = {k: np.stack([np.asarray(e[k]) for e in examples]) for k in DEVICE_FEATURES}
    for k in HOST_FEATURES:
        batch[k] = np.array(
            [e[k].decode("utf-8") if isinstance(e[k], bytes) else str(e[k]) for e in examples]
        )
    return batch


def _crop_fn(crop: CropConfig):
    @jax.jit
    def crop_batch(key_data, frames):
        # key_data and frames are sharded alike, so each device crops its own rows.
        keys = jax.random.wrap_key_data(key_data)
        return jax.vmap(lambda k, v: random_resized_crop(k, v, crop))(keys, frames)

    return crop_batch


def _global_array(sharding: NamedSharding, value: np.ndarray) -> jax.Array:
    """A global array from a value every process knows whole (each keeps its own shards)."""
    return jax.make_array_from_callback(value.shape, sharding, lambda index: value[index])


def batches(config: LoaderConfig, mesh: Mesh | None = None) -> Iterator[dict]:
    """Yield global batches; device features are `jax.Array`s sharded along `config.data_axis`."""
    data_dir = os.path.expanduser(config.data_dir)
    source = tfds_io.load_split(data_dir, config.split)
    num_examples = len(source)
    if mesh is None:
        mesh = jax.make_mesh((jax.device_count(),), (config.data_axis,))
    data_shards = mesh.shape[config.data_axis]
    if config.batch_size % data_shards or config.batch_size % jax.process_count():
        raise ValueError(
            f"batch_size {config.batch_size} must be divisible by the {data_shards} devices on "
            f"mesh axis {config.data_axis!r} and by the {jax.process_count()} processes"
        )
    if num_examples < config.batch_size and config.drop_remainder:
        raise ValueError(
            f"split {config.split!r} of {data_dir} has {num_examples} examples, fewer than one "
            f"batch of {config.batch_size}; lower batch_size or set drop_remainder=False"
        )
    per_epoch = num_batches_per_epoch(num_examples, config.batch_size, config.drop_remainder)
    total = None if config.num_epochs is None else config.num_epochs * per_epoch

    def sharding_for(ndim: int) -> NamedSharding:
        return NamedSharding(mesh, PartitionSpec(config.data_axis, *([None] * (ndim - 1))))

    crop_batch = _crop_fn(config.crop) if config.augment else None
    base_key = jax.random.key(config.seed)

    def host_rows(step: int) -> dict[str, np.ndarray]:
        indices = batch_indices(step, num_examples, config)
        # This process's contiguous share of the global batch.
        rows = np.array_split(indices, jax.process_count())[jax.process_index()]
        return read_examples(source, rows)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = []
        step = config.start_step
        while total is None or step < total:
            while len(pending) <= config.prefetch and (
                total is None or step + len(pending) < total
            ):
                pending.append(pool.submit(host_rows, step + len(pending)))
            host = pending.pop(0).result()
            if len(host["tokens"]) * jax.process_count() % data_shards:
                break  # a final partial batch that cannot be sharded evenly
            batch = {
                k: jax.make_array_from_process_local_data(sharding_for(host[k].ndim), host[k])
                for k in DEVICE_FEATURES
            }
            if crop_batch is not None:
                rows = host["tokens"].shape[0] * jax.process_count()  # < batch_size at a remainder
                keys = jax.random.split(jax.random.fold_in(base_key, step), rows)
                key_data = _global_array(sharding_for(2), np.asarray(jax.random.key_data(keys)))
                batch["frames"] = crop_batch(key_data, batch["frames"])
            batch.update({k: host[k] for k in HOST_FEATURES})
            batch["step"] = step
            yield batch
            step += 1

"""Shared TFDS plumbing: the training-data contract's features and writing a dataset directory.

Builders here write array_record files through TFDS without TensorFlow. A finished dataset is
moved so that the directory the user named *is* the TFDS dataset directory (it holds
`dataset_info.json`, `features.json` and the `*.array_record-*` shards), which is what
`tfds.builder_from_directory(DIR)` and `mineclip_jax.train --data DIR` read.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import tensorflow_datasets as tfds

from mineclip_jax import run_lock

NUM_FRAMES = 16
FRAME_SHAPE = (160, 256, 3)
CONTEXT_LENGTH = 77
SPLITS = ("train", "test")


class LocalBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """A GeneratorBasedBuilder over local files: array_record output, no download checksums.

    TFDS looks for a `checksums.tsv` next to a builder's source file through
    `importlib_resources`, which is not a dependency here and is meaningless for local inputs.
    """

    @tfds.core.utils.classproperty
    @classmethod
    def code_path(cls):
        return None

    def __init__(self, **kwargs):
        super().__init__(file_format="array_record", **kwargs)


def clip_features() -> tfds.features.FeaturesDict:
    """The MineCLIP training-data contract (docs/interfaces.md), exactly these six features."""
    return tfds.features.FeaturesDict(
        {
            # zlib: clips are stored losslessly; flat Minecraft textures compress well.
            "frames": tfds.features.Tensor(
                shape=(NUM_FRAMES, *FRAME_SHAPE),
                dtype=np.uint8,
                encoding=tfds.features.Encoding.ZLIB,
            ),
            "tokens": tfds.features.Tensor(shape=(CONTEXT_LENGTH,), dtype=np.int32),
            "text": tfds.features.Text(),
            "clip_id": tfds.features.Text(),
            "start_s": tfds.features.Scalar(dtype=np.float32),
            "end_s": tfds.features.Scalar(dtype=np.float32),
        }
    )


def check_clip_example(example: dict) -> dict:
    """Validate one contract example (shapes/dtypes), returning it with canonical dtypes."""
    frames = np.asarray(example["frames"])
    if frames.shape != (NUM_FRAMES, *FRAME_SHAPE) or frames.dtype != np.uint8:
        raise ValueError(
            f"frames must be uint8 {(NUM_FRAMES, *FRAME_SHAPE)}, got {frames.dtype} {frames.shape}"
        )
    token_ids = np.asarray(example["tokens"], dtype=np.int32)
    if token_ids.shape != (CONTEXT_LENGTH,):
        raise ValueError(f"tokens must be int32 [{CONTEXT_LENGTH}], got {token_ids.shape}")
    return {
        "frames": frames,
        "tokens": token_ids,
        "text": str(example["text"]),
        "clip_id": str(example["clip_id"]),
        "start_s": np.float32(example["start_s"]),
        "end_s": np.float32(example["end_s"]),
    }


def prepare_output_dir(out_dir: str | os.PathLike, overwrite: bool) -> str:
    """Check the output path before a long build, not after it."""
    out_dir = os.path.abspath(os.fspath(out_dir))
    if os.path.exists(out_dir) and os.listdir(out_dir):
        if not overwrite:
            raise FileExistsError(
                f"{out_dir} exists and is not empty; pass a new --out directory or --overwrite"
            )
        shutil.rmtree(out_dir)
    return out_dir


def build_into(builder_factory, out_dir: str | os.PathLike, overwrite: bool = False) -> str:
    """Run `builder_factory(data_dir=tmp).download_and_prepare()` and move the result to out_dir.

    Returns out_dir, which then is a self-contained TFDS dataset directory.
    """
    lock = run_lock.build_lock_path(out_dir)  # a second build of this --out is refused
    with run_lock.hold(lock, what=f"--out {os.path.abspath(os.fspath(out_dir))}"):
        return _build_into(builder_factory, out_dir, overwrite)


def _build_into(builder_factory, out_dir, overwrite: bool) -> str:
    out_dir = prepare_output_dir(out_dir, overwrite)
    staging = out_dir + ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        builder = builder_factory(data_dir=staging)
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(
                # No checksums, downloads or TF: all inputs are local files.
                download_mode=tfds.download.GenerateMode.REUSE_CACHE_IF_EXISTS,
            )
        )
        if os.path.exists(out_dir):
            os.rmdir(out_dir)  # empty (checked above)
        shutil.move(os.fspath(builder.data_dir), out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def load_split(data_dir: str | os.PathLike, split: str):
    """Random-access data source (`len`, `[i]`, `__getitems__`) of one split; no TensorFlow."""
    builder = tfds.builder_from_directory(os.fspath(data_dir))
    sources = builder.as_data_source()
    if split not in sources:
        raise KeyError(f"{data_dir} has splits {sorted(sources)}, not {split!r}")
    return sources[split]


class ClipDataset(LocalBuilder, skip_registration=True):
    """Contract clips from in-memory or generated examples (tests, custom pipelines)."""

    VERSION = tfds.core.Version("1.0.0")

    def __init__(self, *, split_examples, description: str = "", **kwargs):
        # split name -> zero-argument callable returning an iterator of (key, example)
        self._split_examples = split_examples
        self._description = description
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self, description=self._description, features=clip_features()
        )

    def _split_generators(self, dl_manager):
        return {name: self._generate_examples(make) for name, make in self._split_examples.items()}

    def _generate_examples(self, make):
        for key, example in make():
            yield key, check_clip_example(example)


def write_clip_dataset(
    out_dir: str | os.PathLike,
    split_examples,
    description: str = "",
    overwrite: bool = False,
    builder_class: type[ClipDataset] = ClipDataset,
) -> str:
    """Write contract examples as a TFDS dataset directory.

    `split_examples` maps a split name to a zero-argument callable that yields `(key, example)`
    pairs (keys unique within the split), so examples are produced lazily while writing.
    `builder_class` (a `ClipDataset` subclass) names the dataset in its files.
    """
    return build_into(
        lambda data_dir: builder_class(
            split_examples=split_examples, description=description, data_dir=data_dir
        ),
        out_dir,
        overwrite=overwrite,
    )

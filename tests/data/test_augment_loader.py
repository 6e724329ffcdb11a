import jax
import jax.numpy as jnp
import numpy as np
import pytest

from data.augment import CropConfig, batch_random_resized_crop, crop_and_resize, sample_crop_box
from data.loader import LoaderConfig, batch_indices, batches
from data.tfds_io import write_clip_dataset


def _example(i: int) -> dict:
    frames = np.zeros((16, 160, 256, 3), np.uint8)
    frames[..., 0] = i  # which example
    frames[..., 1] = np.arange(16)[:, None, None] * 10  # which frame
    frames[:, :, :128, 2] = 200  # left half marked, to see crops
    tokens = np.zeros(77, np.int32)
    tokens[:3] = [49406, 100 + i, 49407]
    return {
        "frames": frames,
        "tokens": tokens,
        "text": f"clip {i}",
        "clip_id": f"c{i}",
        "start_s": float(i),
        "end_s": float(i) + 8,
    }


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("ds") / "clips")
    return write_clip_dataset(
        out,
        {
            "train": lambda: ((f"c{i}", _example(i)) for i in range(10)),
            "test": lambda: ((f"c{i}", _example(i)) for i in range(10, 13)),
        },
    )


def test_crop_box_is_inside_the_frame_and_within_scale():
    cfg = CropConfig(scale=(0.3, 0.9))
    boxes = jax.jit(jax.vmap(lambda k: jnp.stack(sample_crop_box(k, 160, 256, cfg))))(
        jax.random.split(jax.random.key(0), 500)
    )
    top, left, h, w = np.asarray(boxes).T
    assert (top >= 0).all() and (left >= 0).all()
    assert (top + h <= 160 + 1e-3).all() and (left + w <= 256 + 1e-3).all()
    area = h * w / (160 * 256)
    assert area.min() >= 0.3 - 1e-4 and area.max() <= 0.9 + 1e-4 and area.std() > 0.05


def _small_video(i: int) -> np.ndarray:
    """[4, 20, 32, 3]: green = frame index, blue marks the left half, red = video id."""
    frames = np.zeros((4, 20, 32, 3), np.uint8)
    frames[..., 0] = i
    frames[..., 1] = np.arange(4)[:, None, None] * 10
    frames[:, :, :16, 2] = 200
    return frames


def test_whole_frame_box_is_identity_and_half_box_zooms():
    frames = jnp.asarray(_small_video(3))
    resize = jax.jit(crop_and_resize, static_argnums=(2, 3))
    same = resize(frames, (0.0, 0.0, 20.0, 32.0), 20, 32)
    np.testing.assert_array_equal(np.asarray(same), np.asarray(frames))
    left_half = np.asarray(resize(frames, (0.0, 0.0, 20.0, 16.0), 20, 32))
    assert left_half[..., :-2, 2].min() == 200  # only the marked half remains (edge blends)
    assert left_half.shape == frames.shape


def test_crop_is_the_same_for_all_frames_and_differs_across_videos():
    videos = np.stack([_small_video(i) for i in range(6)])
    out = np.asarray(jax.jit(batch_random_resized_crop)(jax.random.key(1), videos))
    assert out.shape == videos.shape and out.dtype == np.uint8
    blue = out[..., 2].astype(int)
    for v in range(6):  # same spatial pattern in every frame of a video
        assert (blue[v] == blue[v, :1]).all()
        np.testing.assert_array_equal(out[v, :, 0, 0, 1], np.arange(4) * 10)  # frame order kept
        assert (out[v, ..., 0] == v).all()  # videos are not mixed
    assert len({blue[v, 0].tobytes() for v in range(6)}) > 1


def test_batch_indices_cover_each_epoch_once_and_resume():
    cfg = LoaderConfig(data_dir="unused", batch_size=3, seed=5)
    epoch0 = np.concatenate([batch_indices(s, 10, cfg) for s in range(3)])
    assert len(set(epoch0.tolist())) == 9  # 3 batches of 3, no repeats, remainder dropped
    epoch1 = np.concatenate([batch_indices(s, 10, cfg) for s in range(3, 6)])
    assert epoch0.tolist() != epoch1.tolist()  # reshuffled per epoch
    np.testing.assert_array_equal(batch_indices(4, 10, cfg), batch_indices(4, 10, cfg))


def test_loader_yields_sharded_batches(dataset):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    n = jax.device_count()
    cfg = LoaderConfig(
        data_dir=dataset, batch_size=2 * n if 2 * n <= 10 else n, num_epochs=1, seed=0
    )
    got = list(batches(cfg, mesh))
    assert len(got) == 10 // cfg.batch_size
    seen = []
    for b in got:
        assert b["frames"].shape == (cfg.batch_size, 16, 160, 256, 3)
        assert b["frames"].dtype == jnp.uint8 and b["tokens"].dtype == jnp.int32
        assert b["frames"].sharding.spec[0] == "data" and b["tokens"].sharding.spec[0] == "data"
        tokens = np.asarray(b["tokens"])
        ids = tokens[:, 1] - 100
        assert [f"clip {i}" for i in ids] == list(b["text"])  # rows stay aligned
        np.testing.assert_array_equal(np.asarray(b["start_s"]), ids.astype(np.float32))
        seen += ids.tolist()
    assert len(set(seen)) == len(seen)


def test_loader_without_augment_is_exact_and_resumable(dataset):
    cfg = LoaderConfig(
        data_dir=dataset,
        split="test",
        batch_size=1,
        augment=False,
        shuffle=True,
        num_epochs=2,
        seed=3,
    )
    mesh = jax.make_mesh((1,), ("data",), devices=jax.devices()[:1])
    full = list(batches(cfg, mesh))
    assert len(full) == 6
    for b in full:
        i = int(np.asarray(b["tokens"])[0, 1]) - 100
        np.testing.assert_array_equal(np.asarray(b["frames"])[0], _example(i)["frames"])
    import dataclasses

    resumed = list(batches(dataclasses.replace(cfg, start_step=4), mesh))
    assert [b["clip_id"][0] for b in resumed] == [b["clip_id"][0] for b in full[4:]]


def test_loader_errors_name_the_fix(dataset):
    with pytest.raises(ValueError, match="divisible"):
        next(batches(LoaderConfig(data_dir=dataset, batch_size=jax.device_count() + 1)))
    with pytest.raises(ValueError, match="fewer than one batch"):
        next(
            batches(LoaderConfig(data_dir=dataset, split="test", batch_size=4 * jax.device_count()))
        )
    with pytest.raises(KeyError, match="splits"):
        next(batches(LoaderConfig(data_dir=dataset, split="validation", batch_size=1)))

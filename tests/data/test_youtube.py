import json
import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

from data import tokens
from data.clip_sampler import ClipSamplerConfig
from data.tfds_io import load_split
from data.youtube import YouTubeBuildConfig, assign_splits, build, load_metadata, main
from tests.data.fixtures import FIXTURE_FPS, frame_index_of, write_youtube_inputs


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("yt"))
    inputs = write_youtube_inputs(root)
    config = YouTubeBuildConfig(
        **inputs,
        out=os.path.join(root, "out"),
        seed=0,
        test_fraction=0.3,
        sampler=ClipSamplerConfig(max_clips_per_video=3),
    )
    return config, build(config)


def test_report_counts_missing_and_corrupt_videos(built):
    config, report = built
    assert report.videos_in_metadata == 6 and report.videos_used == 3
    assert report.bad_transcripts == ["bad_transcript"]
    assert report.missing_videos == ["missing"] and report.corrupt_videos == ["corrupt"]
    assert "corrupt video" in report.problems["corrupt"]
    assert report.clips["train"] + report.clips["test"] == 9  # 3 good videos x 3 clips
    assert report.clips["test"] >= 1 and report.clips["train"] >= 1
    on_disk = json.load(open(os.path.join(config.out, "build_report.json")))
    assert on_disk["corrupt_videos"] == ["corrupt"]


def test_dataset_follows_the_training_data_contract(built):
    config, report = built
    builder = tfds.builder_from_directory(config.out)
    assert set(builder.info.splits) == {"train", "test"}
    seen_videos = {}
    for split in ("train", "test"):
        source = load_split(config.out, split)
        assert len(source) == report.clips[split]
        for i in range(len(source)):
            ex = source[i]
            assert ex["frames"].shape == (16, 160, 256, 3) and ex["frames"].dtype == np.uint8
            assert ex["tokens"].shape == (77,) and ex["tokens"].dtype == np.int32
            text = ex["text"].decode()
            np.testing.assert_array_equal(ex["tokens"], tokens.tokenize([text])[0])
            assert 16 <= np.count_nonzero(ex["tokens"]) <= 77
            assert 8.0 <= ex["end_s"] - ex["start_s"] <= 16.0 + 1e-4
            video_id = ex["clip_id"].decode().split("@")[0]
            seen_videos.setdefault(video_id, set()).add(split)
            # Frames really come from [start_s, end_s] of the source video.
            expected = np.floor(
                (ex["start_s"] + (np.arange(16) + 0.5) * (ex["end_s"] - ex["start_s"]) / 16)
                * FIXTURE_FPS
            )
            assert np.abs(frame_index_of(ex["frames"]) - expected).max() <= 1
    assert set(seen_videos) == {"good_a", "good_b", "good_c"}
    assert all(len(s) == 1 for s in seen_videos.values())  # a video never spans splits


def test_build_is_deterministic_and_refuses_to_overwrite(built, tmp_path, capsys):
    config, _ = built
    with pytest.raises(FileExistsError, match="--overwrite"):
        build(config)
    again = YouTubeBuildConfig(
        metadata=config.metadata,
        videos=config.videos,
        transcripts=config.transcripts,
        out=str(tmp_path / "again"),
        test_fraction=config.test_fraction,
        sampler=config.sampler,
    )
    main(again)
    assert "corrupt videos: 1" in capsys.readouterr().out
    a, b = load_split(config.out, "train"), load_split(again.out, "train")
    assert [a[i]["clip_id"] for i in range(len(a))] == [b[i]["clip_id"] for i in range(len(b))]
    np.testing.assert_array_equal(a[0]["frames"], b[0]["frames"])


def test_bad_metadata_is_a_clear_error(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps([{"title": "no id"}]))
    with pytest.raises(ValueError, match="'id'"):
        load_metadata(str(bad))


def test_splits_hold_out_at_least_one_video():
    splits = assign_splits(["a", "b"], seed=0, test_fraction=0.01)
    assert sorted(splits.values()) == ["test", "train"]
    many = assign_splits([f"v{i}" for i in range(1000)], seed=0, test_fraction=0.1)
    assert 60 < list(many.values()).count("test") < 140


def test_unusable_test_videos_do_not_leave_an_empty_split(tmp_path):
    inputs = write_youtube_inputs(str(tmp_path))
    metadata = [{"id": v} for v in ("good_a", "good_b", "corrupt")]
    with open(inputs["metadata"], "w") as f:
        json.dump(metadata, f)
    wanted = {"good_a": "train", "good_b": "train", "corrupt": "test"}
    seed = next(s for s in range(1000) if assign_splits(list(wanted), s, 0.4) == wanted)
    config = YouTubeBuildConfig(
        **inputs, out=str(tmp_path / "out"), seed=seed, test_fraction=0.4,
        sampler=ClipSamplerConfig(max_clips_per_video=2),
    )  # fmt: skip
    report = build(config)
    assert report.corrupt_videos == ["corrupt"]
    assert report.clips["test"] == 2 and report.clips["train"] == 2  # good_b moved to test
    test_ids = {load_split(config.out, "test")[i]["clip_id"].decode() for i in range(2)}
    assert {c.split("@")[0] for c in test_ids} == {"good_b"}
    # With nothing usable at all, the error says why instead of TFDS's empty-split failure.
    with open(inputs["metadata"], "w") as f:
        json.dump([{"id": "corrupt"}, {"id": "missing"}], f)
    with pytest.raises(RuntimeError, match="no usable clip"):
        build(YouTubeBuildConfig(**inputs, out=str(tmp_path / "out2")))

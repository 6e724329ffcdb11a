import numpy as np
import pytest

from data.video import (
    VideoDecodeError,
    decode_frames,
    find_video,
    uniform_timestamps,
    video_duration,
)
from tests.data.fixtures import FIXTURE_FPS, frame_index_of, write_fixture_video


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return write_fixture_video(str(tmp_path_factory.mktemp("v") / "clip.mp4"), seconds=10.0)


def test_uniform_timestamps_are_bin_centres():
    ts = uniform_timestamps(2.0, 10.0, 16)
    np.testing.assert_allclose(ts, 2.0 + 0.5 * (np.arange(16) + 0.5))
    with pytest.raises(ValueError, match="after its start"):
        uniform_timestamps(3.0, 3.0)


def test_duration_from_header(video):
    assert video_duration(video) == pytest.approx(10.0, abs=0.3)


def test_decode_picks_the_frame_shown_at_each_time_and_resizes(video):
    timestamps = uniform_timestamps(2.0, 8.0, 16)
    frames = decode_frames(video, timestamps)
    assert frames.shape == (16, 160, 256, 3) and frames.dtype == np.uint8
    expected = np.floor(timestamps * FIXTURE_FPS).astype(int)
    np.testing.assert_array_equal(frame_index_of(frames), expected)
    # The top-left blue quadrant of the 80x48 source lands in the top-left of the 256x160 frame.
    assert frames[:, 20, 30, 2].min() > 200 and frames[:, 140, 230, 2].max() < 60


def test_decode_unsorted_and_out_of_range_timestamps(video):
    frames = decode_frames(video, [9.99, -1.0, 5.0, 100.0, 4.99], height=32, width=40)
    assert frames.shape == (5, 32, 40, 3)
    np.testing.assert_array_equal(frame_index_of(frames), [39, 0, 20, 39, 19])


def test_corrupt_and_non_video_files_raise_decode_error(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"junk" * 500)
    with pytest.raises(VideoDecodeError):
        decode_frames(bad, [1.0])
    with pytest.raises(VideoDecodeError):
        video_duration(bad)


def test_find_video(tmp_path, video):
    (tmp_path / "abc.webm").write_bytes(b"")
    assert find_video(tmp_path, "abc").endswith("abc.webm")
    assert find_video(tmp_path, "nope") is None

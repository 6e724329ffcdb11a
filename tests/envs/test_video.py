"""envs.video.write_video: round trips through PyAV, odd sizes padded by edge replication, errors."""

import av
import numpy as np
import pytest

from envs.video import padded_size, write_video


def _decode(path):
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def _blocks(t, h, w):
    """Frames of flat 8x8 colour blocks that change over time (survive yuv420 coding)."""
    rng = np.random.default_rng(0)
    colours = rng.integers(30, 226, size=(t, (h + 7) // 8, (w + 7) // 8, 3), dtype=np.uint8)
    return np.repeat(np.repeat(colours, 8, axis=1), 8, axis=2)[:, :h, :w]


def test_round_trip_matches_within_codec_tolerance(tmp_path):
    frames = _blocks(6, 32, 48)
    path = write_video(frames, tmp_path / "sub" / "clip.mp4", fps=20)
    assert path.exists()
    decoded = _decode(path)
    assert decoded.shape == frames.shape
    # Block interiors (away from chroma edges) match the input closely.
    inner = (slice(None), slice(2, 6), slice(2, 6))
    err = np.abs(decoded.astype(int) - frames.astype(int))
    for by in range(0, 32, 8):
        for bx in range(0, 48, 8):
            block = err[:, by + 2 : by + 6, bx + 2 : bx + 6]
            assert block.mean() < 12, (by, bx, block.mean())
    assert err[inner].mean() < 12


def test_odd_size_round_trips_to_the_edge_padded_size(tmp_path):
    frames = np.zeros((3, 15, 21, 3), np.uint8)
    frames[:, -1, :] = [200, 40, 40]  # last row red
    frames[:, :, -1] = [40, 40, 200]  # last column blue
    assert padded_size(15, 21) == (16, 22)
    decoded = _decode(write_video(frames, tmp_path / "odd.mp4", fps=5))
    assert decoded.shape == (3, 16, 22, 3)
    expected = np.pad(frames, ((0, 0), (0, 1), (0, 1), (0, 0)), mode="edge")
    # The padded row repeats the last row (red), the padded column the last column (blue).
    assert abs(int(decoded[1, 15, 8, 0]) - 200) < 30 and decoded[1, 15, 8, 2] < 90
    assert abs(int(decoded[1, 6, 21, 2]) - 200) < 30 and decoded[1, 6, 21, 0] < 90
    assert np.abs(decoded[:, :12, :16].astype(int) - expected[:, :12, :16]).mean() < 6


@pytest.mark.parametrize(
    "frames, error, match",
    [
        (np.zeros((2, 8, 8), np.uint8), ValueError, r"\[T, H, W, 3\].*\(2, 8, 8\)"),
        (np.zeros((2, 3, 8, 8), np.uint8), ValueError, r"channels last"),
        (np.zeros((2, 8, 8, 3), np.float32), TypeError, r"uint8.*float32"),
        (np.zeros((0, 8, 8, 3), np.uint8), ValueError, r"at least one"),
    ],
)
def test_bad_frames_are_refused(tmp_path, frames, error, match):
    with pytest.raises(error, match=match):
        write_video(frames, tmp_path / "bad.mp4")
    assert not (tmp_path / "bad.mp4").exists()


def test_bad_fps_is_refused(tmp_path):
    with pytest.raises(ValueError, match="fps"):
        write_video(np.zeros((1, 8, 8, 3), np.uint8), tmp_path / "x.mp4", fps=0)

"""Video decoding with PyAV: frames at given timestamps, resized to the MineCLIP frame size.

    frames = decode_frames("abc.mp4", uniform_timestamps(12.0, 24.0, 16))  # uint8 [16,160,256,3]

Frames are picked by presentation time: for each requested timestamp the decoded frame whose
interval [pts, next pts) contains it (clamped to the first/last frame), so the result does not
depend on the container's seek granularity. Any failure to open or decode raises
`VideoDecodeError`, which the dataset builders count as a corrupt video instead of crashing.
Writing a video is `envs.video.write_video` (the project's one writer).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import av
import numpy as np

FRAME_HEIGHT = 160
FRAME_WIDTH = 256
VIDEO_EXTENSIONS = (".mp4", ".webm", ".mkv", ".mov", ".avi", ".m4v")


class VideoDecodeError(RuntimeError):
    """A video file could not be opened or decoded (corrupt, truncated or unsupported)."""


def uniform_timestamps(start_s: float, end_s: float, num_frames: int = 16) -> np.ndarray:
    """`num_frames` timestamps uniformly spread over [start_s, end_s] (centres of equal bins)."""
    if not end_s > start_s:
        raise ValueError(f"clip end {end_s} must be after its start {start_s}")
    step = (end_s - start_s) / num_frames
    return (start_s + step * (np.arange(num_frames) + 0.5)).astype(np.float64)


def video_duration(path: str | os.PathLike) -> float:
    """Duration in seconds from the container (or the video stream) header."""
    try:
        with av.open(os.fspath(path)) as container:
            stream = _video_stream(container, path)
            if stream.duration is not None and stream.time_base is not None:
                return float(stream.duration * stream.time_base)
            if container.duration is not None:
                return container.duration / av.time_base
    except (av.error.FFmpegError, OSError, ValueError) as e:
        raise VideoDecodeError(f"cannot read {path}: {e}") from e
    raise VideoDecodeError(f"{path} has no duration in its header")


def _video_stream(container, path):
    if not container.streams.video:
        raise VideoDecodeError(f"{path} has no video stream")
    return container.streams.video[0]


def decode_frames(
    path: str | os.PathLike,
    timestamps_s: Sequence[float],
    height: int = FRAME_HEIGHT,
    width: int = FRAME_WIDTH,
) -> np.ndarray:
    """Decode the frames shown at `timestamps_s` (ascending or not), resized to (height, width).

    Returns uint8 `[len(timestamps_s), height, width, 3]` RGB.
    """
    timestamps = np.asarray(timestamps_s, dtype=np.float64)
    if timestamps.ndim != 1 or timestamps.size == 0:
        raise ValueError(f"timestamps_s must be a non-empty 1-D sequence, got {timestamps.shape}")
    order = np.argsort(timestamps, kind="stable")
    wanted = timestamps[order]
    out = np.zeros((timestamps.size, height, width, 3), np.uint8)
    try:
        with av.open(os.fspath(path)) as container:
            stream = _video_stream(container, path)
            stream.thread_type = "AUTO"
            # Seek to the keyframe before the first timestamp, then decode forward once.
            seek_to = max(0.0, wanted[0] - 1.0)
            container.seek(int(seek_to * av.time_base), any_frame=False, backward=True)
            next_index = 0
            previous = None  # last decoded frame (time, rgb) not yet proven past a timestamp
            for frame in container.decode(stream):
                if frame.time is None:
                    continue
                rgb = None
                # A frame at time t replaces `previous` for every timestamp >= t.
                while next_index < wanted.size and wanted[next_index] < frame.time:
                    if previous is None:  # timestamp before the first frame: use this frame
                        rgb = rgb if rgb is not None else _resize(frame, height, width)
                        out[order[next_index]] = rgb
                    else:
                        out[order[next_index]] = previous
                    next_index += 1
                if next_index == wanted.size:
                    break
                previous = rgb if rgb is not None else _resize(frame, height, width)
            if previous is None and next_index < wanted.size:
                raise VideoDecodeError(f"{path}: no decodable frame at or after {wanted[0]:.2f}s")
            # Timestamps past the last frame show the last frame.
            while next_index < wanted.size:
                out[order[next_index]] = previous
                next_index += 1
    except VideoDecodeError:
        raise
    except (av.error.FFmpegError, OSError, ValueError, EOFError) as e:
        raise VideoDecodeError(f"cannot decode {path}: {e}") from e
    return out


def _resize(frame: av.VideoFrame, height: int, width: int) -> np.ndarray:
    # swscale's area filter: good downscaling quality without another dependency.
    return frame.to_ndarray(format="rgb24", width=width, height=height, interpolation="AREA")


def find_video(videos_dir: str | os.PathLike, video_id: str) -> str | None:
    """Path of `<video_id>.<ext>` in `videos_dir` for a known video extension, else None."""
    for ext in VIDEO_EXTENSIONS:
        candidate = os.path.join(videos_dir, video_id + ext)
        if os.path.isfile(candidate):
            return candidate
    return None
